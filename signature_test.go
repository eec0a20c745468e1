package consentkit_test

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/signed"
	"github.com/consentkit/consentkit/store/memstore"
)

// escape writes a string as the package documentation says the canonical
// encoding does (RFC 8785), written here from that text and not from the
// package's code.
func escape(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// A certificate's signature, checked with the published public key over
// bytes this test builds from the documented encoding alone.
func TestSignatureOverDocumentedEncoding(t *testing.T) {
	key, err := signed.NewSigningKey("key-2026-11")
	if err != nil {
		t.Fatal(err)
	}
	created := time.Date(2026, 11, 22, 10, 30, 0, 123456000, time.UTC)
	svc, err := consentkit.NewService(teststore.Memory(t), consentkit.Config{SigningKeys: []signed.SigningKey{key}, Now: func() time.Time { return created }})
	if err != nil {
		t.Fatal(err)
	}
	mustDo(t, svc)
	text := "I agree — \"Acme\" may call me.\tC:\\path\nsecond line \u2028 ✓ 𝄞"
	optIn := created.Add(-5 * time.Second)
	c, err := svc.IssueCertificate(ctx, consentkit.CertificateParams{ID: "cert-1", CompanyID: "acme", PropertyID: "web", SessionID: "s1",
		Origin: "https://acme.example/quote?a=1&b=<2>", Email: "Jane@Example.com",
		Records: []consent.Record{{Text: text, Types: []string{"tcpa", "marketing"}, OptInAt: optIn}, {Text: "second"}}}) // its opt-in is the creation
	if err != nil {
		t.Fatal(err)
	}
	if c.KeyID != "key-2026-11" || len(c.Signature) != ed25519.SignatureSize {
		t.Fatalf("issued certificate: key %q, %d-byte signature", c.KeyID, len(c.Signature))
	}
	email := sha256.Sum256([]byte("jane@example.com"))
	want := fmt.Sprintf(`{"company_id":"acme","consents":[{"opt_in_at":"2026-11-22T10:29:55.123456Z","text":%s,"types":["tcpa","marketing"]},`+
		`{"opt_in_at":"2026-11-22T10:30:00.123456Z","text":"second","types":[]}],"created_at":"2026-11-22T10:30:00.123456Z","email_sha256":"%s","id":"cert-1",`+
		`"key_id":"key-2026-11","mobile_sha256":"","origin":%s,"property_id":"web","recording_sha256":"","session_id":"s1",`+
		`"v":"consentkit-certificate-2"}`, escape(text), hex.EncodeToString(email[:]), escape("https://acme.example/quote?a=1&b=<2>"))
	var published signed.PublicKey
	for _, k := range svc.PublicKeys() {
		if k.ID == c.KeyID {
			published = k
		}
	}
	if !ed25519.Verify(published.Key, []byte(want), c.Signature) {
		sc := consent.Signed(c)
		ours, _ := sc.Encoding()
		t.Errorf("the signature does not verify over the documented encoding\nbuilt: %s\nours:  %s", want, ours)
	}
	// The certificate as stored verifies; so does it offline.
	stored := certificate(t, svc, "cert-1")
	if err := checkIntegrity(svc, stored, nil); err != nil {
		t.Errorf("CheckIntegrity of the stored certificate: %v", err)
	}
	sc := consent.Signed(stored)
	if err := signed.Verify(&sc, published, stored.Signature); err != nil {
		t.Errorf("signed.Verify: %v", err)
	}
}

// Any change to the signed content fails the integrity check; what is not
// signed (retention, revocation) does not; the recording is checked against
// its SHA-256; keys rotate.
// checkIntegrity is CheckIntegrity in a read transaction of svc's store.
func checkIntegrity(svc *consentkit.Service, c *consent.Certificate, recording *consent.Digest) error {
	var check error
	err := svc.Store().View(ctx, func(tx consent.Tx) error {
		check = svc.CheckIntegrity(ctx, tx, c, recording)
		return nil
	})
	if err != nil {
		return err
	}
	return check
}

func TestCheckIntegrity(t *testing.T) {
	old, _ := signed.NewSigningKey("k1")
	svc, err := consentkit.NewService(teststore.Memory(t), consentkit.Config{SigningKeys: []signed.SigningKey{old}})
	if err != nil {
		t.Fatal(err)
	}
	mustDo(t, svc)
	recording := []byte(`[{"type":4,"timestamp":1}]`)
	if _, err := svc.IssueCertificate(ctx, consentkit.CertificateParams{ID: "cert-1", CompanyID: "acme", PropertyID: "web", SessionID: "s1",
		Origin: "https://acme.example/", Records: []consent.Record{{Text: "I agree", Types: []string{"tcpa"}}},
		RecordingSHA256: sha256.Sum256(recording)}); err != nil {
		t.Fatal(err)
	}
	good := certificate(t, svc, "cert-1")
	digest := consent.Digest(sha256.Sum256(recording))
	if err := checkIntegrity(svc, good, &digest); err != nil {
		t.Fatalf("untouched: %v", err)
	}
	for name, edit := range map[string]func(c *consent.Certificate){
		"text":       func(c *consent.Certificate) { c.Records[0].Text = "I agree!" },
		"type":       func(c *consent.Certificate) { c.Records[0].Types = []string{"marketing"} },
		"opt-in":     func(c *consent.Certificate) { c.Records[0].OptInAt = c.Records[0].OptInAt.Add(-time.Second) },
		"created":    func(c *consent.Certificate) { c.CreatedAt = c.CreatedAt.Add(time.Microsecond) },
		"origin":     func(c *consent.Certificate) { c.Origin = "https://evil.example/" },
		"email":      func(c *consent.Certificate) { c.EmailDigest = consent.Digest{1} },
		"company":    func(c *consent.Certificate) { c.CompanyID = "other" },
		"recording":  func(c *consent.Certificate) { c.RecordingSHA256[0] ^= 1 },
		"signature":  func(c *consent.Certificate) { c.Signature[0] ^= 1 },
		"unsigned":   func(c *consent.Certificate) { c.Signature, c.KeyID = nil, "" },
		"other key":  func(c *consent.Certificate) { c.KeyID = "k9" },
		"extra text": func(c *consent.Certificate) { c.Records = append(c.Records, consent.Record{Text: "more"}) },
	} {
		c := certificate(t, svc, "cert-1")
		edit(c)
		if err := checkIntegrity(svc, c, nil); !errors.Is(err, consent.ErrIntegrity) || consent.ErrorCode(err) != consent.Conflict {
			t.Errorf("%s changed: %v; want ErrIntegrity (409)", name, err)
		}
	}
	c := certificate(t, svc, "cert-1")
	c.RetentionStatus, c.ExpiresAt, c.RevokedAt = consent.RetentionRetained, c.ExpiresAt.AddDate(5, 0, 0), time.Now()
	if err := checkIntegrity(svc, c, nil); err != nil {
		t.Errorf("retention and revocation are not signed, yet: %v", err)
	}
	tampered := append([]byte{}, recording...)
	tampered[3] = 'X'
	tamperedDigest := consent.Digest(sha256.Sum256(tampered))
	if err := checkIntegrity(svc, good, &tamperedDigest); !errors.Is(err, consent.ErrIntegrity) {
		t.Errorf("a changed recording: %v; want ErrIntegrity", err)
	}

	// Rotation: a new key signs, the old one still verifies, as a signing
	// key or as a public key only.
	next, _ := signed.NewSigningKey("k2")
	for name, cfg := range map[string]consentkit.Config{
		"both signing": {SigningKeys: []signed.SigningKey{next, old}},
		"old public":   {SigningKeys: []signed.SigningKey{next}, PublicKeys: []signed.PublicKey{old.Public()}},
	} {
		rotated, err := consentkit.NewService(teststore.Memory(t), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkIntegrity(rotated, good, &digest); err != nil {
			t.Errorf("%s: a certificate of the old key: %v", name, err)
		}
	}
	unsigned := certificate(t, svc, "cert-1")
	unsigned.Signature, unsigned.KeyID = nil, ""
	legacy, _ := consentkit.NewService(teststore.Memory(t), consentkit.Config{SigningKeys: []signed.SigningKey{next}, UnsignedBefore: unsigned.CreatedAt.Add(time.Microsecond)})
	if err := checkIntegrity(legacy, unsigned, &digest); err != nil {
		t.Errorf("an unsigned certificate from before UnsignedBefore: %v", err)
	}
	legacy, _ = consentkit.NewService(teststore.Memory(t), consentkit.Config{SigningKeys: []signed.SigningKey{next}, UnsignedBefore: unsigned.CreatedAt})
	if err := checkIntegrity(legacy, unsigned, &digest); !errors.Is(err, consent.ErrIntegrity) {
		t.Errorf("an unsigned certificate created at UnsignedBefore: %v; want ErrIntegrity", err)
	}
	without, _ := consentkit.NewService(teststore.Memory(t), consentkit.Config{SigningKeys: []signed.SigningKey{next}})
	if err := checkIntegrity(without, good, nil); !errors.Is(err, consent.ErrIntegrity) {
		t.Errorf("a certificate of a key no longer configured: %v; want ErrIntegrity", err)
	}
	for name, cfg := range map[string]consentkit.Config{
		"short key": {SigningKeys: []signed.SigningKey{{ID: "k", Private: old.Private[:10]}}},
		"two k1":    {SigningKeys: []signed.SigningKey{old}, PublicKeys: []signed.PublicKey{old.Public()}},
		"bad id":    {SigningKeys: []signed.SigningKey{{ID: "a b", Private: old.Private}}},
	} {
		if _, err := consentkit.NewService(teststore.Memory(t), cfg); err == nil {
			t.Errorf("%s: NewService accepted it", name)
		}
	}
}

func mustDo(t testing.TB, svc *consentkit.Service) {
	t.Helper()
	if _, err := svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.AddProperty(ctx, consentkit.PropertyParams{ID: "web", CompanyID: "acme", Name: "Form"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.StartSession(ctx, consentkit.SessionParams{ID: "s1", CompanyID: "acme", PropertyID: "web"}); err != nil {
		t.Fatal(err)
	}
}

func certificate(t *testing.T, svc *consentkit.Service, id string) *consent.Certificate {
	t.Helper()
	var c *consent.Certificate
	if err := svc.Store().View(ctx, func(tx consent.Tx) error {
		var err error
		c, err = tx.Certificate(ctx, id)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return c
}

// BenchmarkCheckIntegrity is what checking a signed certificate costs,
// with the signature cache (a certificate verified before) and without.
//
//	go test -run '^$' -bench CheckIntegrity .
func BenchmarkCheckIntegrity(b *testing.B) {
	key, err := signed.NewSigningKey("k1")
	if err != nil {
		b.Fatal(err)
	}
	// digests: a certificate with every digest set, as browser capture
	// issues them (the encoding then holds three 64-digit hex strings).
	for _, bc := range []struct {
		name    string
		size    int
		digests bool
	}{{"cached", 0, false}, {"cached/digests", 0, true}, {"uncached", -1, false}} {
		b.Run(bc.name, func(b *testing.B) {
			st := memstore.New()
			svc, err := consentkit.NewService(st, consentkit.Config{SigningKeys: []signed.SigningKey{key}, SignatureCacheSize: bc.size})
			if err != nil {
				b.Fatal(err)
			}
			mustDo(b, svc)
			p := consentkit.CertificateParams{ID: "cert-1", CompanyID: "acme", PropertyID: "web", SessionID: "s1",
				Origin: "https://acme.example/quote", Records: []consent.Record{{Text: "I agree to be contacted by Acme.", Types: []string{"tcpa"}}}}
			if bc.digests {
				p.Email, p.Mobile, p.RecordingSHA256 = "ann@example.com", "+15555550100", consent.Digest{1, 2, 3}
			}
			c, err := svc.IssueCertificate(ctx, p)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			err = svc.Store().View(ctx, func(tx consent.Tx) error {
				for b.Loop() {
					if err := svc.CheckIntegrity(ctx, tx, c, nil); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		})
	}
}

// TestNegativeZeroVisibility: a consent's visibility may arrive with
// font_size_px -0 (a capture body's JSON; encoding/json keeps the sign, and
// -0 is within the bounds). The certificate keeps and signs +0, so that it
// verifies on every store: PostgreSQL's jsonb, which holds the consents,
// has no negative zero and reads any back as +0.
func TestNegativeZeroVisibility(t *testing.T) {
	key, err := signed.NewSigningKey("k1")
	if err != nil {
		t.Fatal(err)
	}
	var body struct{ Visibility consent.Visibility }
	if err := json.Unmarshal([]byte(`{"visibility":{"visible":true,"in_viewport":true,"font_size_px":-0,"contrast_ratio":4.5}}`), &body); err != nil {
		t.Fatal(err)
	}
	if !math.Signbit(body.Visibility.FontSizePx) {
		t.Fatal("the decoded font_size_px is not negative zero")
	}
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		svc, err := consentkit.NewService(open(t), consentkit.Config{SigningKeys: []signed.SigningKey{key}})
		if err != nil {
			t.Fatal(err)
		}
		mustDo(t, svc)
		v1, v2 := body.Visibility, body.Visibility
		if _, err := svc.IssueCertificate(ctx, consentkit.CertificateParams{ID: "cert-1", CompanyID: "acme", PropertyID: "web", SessionID: "s1",
			Records: []consent.Record{{Text: "I agree", Visibility: &v1}}, Visibility: &v2}); err != nil {
			t.Fatal(err)
		}
		c := certificate(t, svc, "cert-1")
		for _, v := range []*consent.Visibility{c.Records[0].Visibility, c.Visibility} {
			if v.FontSizePx != 0 || math.Signbit(v.FontSizePx) {
				t.Errorf("font_size_px read back %v (sign bit %v), want +0", v.FontSizePx, math.Signbit(v.FontSizePx))
			}
		}
		if err := checkIntegrity(svc, c, nil); err != nil {
			t.Errorf("CheckIntegrity: %v", err)
		}
	})
}

// A visibility that says visible and lists hidden text contradicts itself
// (D47: one hidden fragment makes a consent not visible): refused, as the
// snippet never sends it, for each consent and the certificate's own.
func TestContradictoryVisibilityRefused(t *testing.T) {
	svc, _ := newService(t, consentkit.Config{})
	bad := &consent.Visibility{Visible: true, InViewport: true, FontSizePx: 16, ContrastRatio: 4.5, HiddenText: []string{"and 500 partners"}}
	for name, p := range map[string]consentkit.CertificateParams{
		"a consent's":         {Records: []consent.Record{{Text: "I agree", Visibility: bad}}},
		"the certificate's":   {Records: []consent.Record{{Text: "I agree"}}, Visibility: bad},
		"hidden and not said": {Records: []consent.Record{{Text: "I agree", Visibility: &consent.Visibility{Visible: false, FontSizePx: 16, ContrastRatio: 4.5, HiddenText: []string{"x"}}}}},
	} {
		ses, err := svc.StartSession(ctx, consentkit.SessionParams{CompanyID: "acme", PropertyID: "acme-web"})
		if err != nil {
			t.Fatal(err)
		}
		p.CompanyID, p.PropertyID, p.SessionID = "acme", "acme-web", ses.ID
		_, err = svc.IssueCertificate(ctx, p)
		if want := name != "hidden and not said"; (consent.ErrorCode(err) == consent.Invalid) != want {
			t.Errorf("%s visibility: %v; want refused %v", name, err, want)
		}
	}
}
