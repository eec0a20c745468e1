package signed_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/consentkit/consentkit/signed"
)

func document() signed.Document {
	created := time.Date(2026, 11, 22, 10, 30, 0, 123456000, time.UTC)
	return signed.Document{ID: "cert-1", CompanyID: "acme", PropertyID: "web", SessionID: "s1",
		Origin: "https://acme.example/quote?a=1&b=<2>", CreatedAt: created, EmailSHA256: sha256.Sum256([]byte("jane@example.com")),
		Consents: []signed.DocumentConsent{{Text: "I agree — \"Acme\" may call me.\tC:\\path\n\x01", Types: []string{"tcpa", "marketing"}, OptInAt: created.Add(-5 * time.Second)},
			{Text: "second", OptInAt: created}}}
}

// A signature checks over bytes written here from the documented encoding
// alone; Verify takes the content as the API shows it and refuses any
// change to it, and content not written as the encoding writes it.
func TestSignAndVerify(t *testing.T) {
	key, err := signed.NewSigningKey("key-2026-11")
	if err != nil {
		t.Fatal(err)
	}
	d := document()
	sig := key.Sign(&d)
	email := sha256.Sum256([]byte("jane@example.com"))
	want := `{"company_id":"acme","consents":[{"opt_in_at":"2026-11-22T10:29:55.123456Z","text":"I agree — \"Acme\" may call me.\tC:\\path\n\u0001","types":["tcpa","marketing"]},` +
		`{"opt_in_at":"2026-11-22T10:30:00.123456Z","text":"second","types":[]}],"created_at":"2026-11-22T10:30:00.123456Z",` +
		`"email_sha256":"` + hex.EncodeToString(email[:]) + `","id":"cert-1",` +
		`"key_id":"key-2026-11","mobile_sha256":"","origin":"https://acme.example/quote?a=1&b=<2>","property_id":"web","recording_sha256":"","session_id":"s1",` +
		`"v":"consentkit-certificate-1"}`
	if d.KeyID != key.ID || !ed25519.Verify(key.Public().Key, []byte(want), sig) {
		t.Fatalf("the signature does not verify over the documented encoding\nbuilt: %s\nours:  %s", want, d.Encoding())
	}
	c := d.Content()
	if err := signed.Verify(&c, key.Public(), sig); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	other, _ := signed.NewSigningKey("key-2026-11")
	for name, edit := range map[string]func(c *signed.Content){
		"text":          func(c *signed.Content) { c.Consents[0].Text += "!" },
		"type":          func(c *signed.Content) { c.Consents[0].Types = []string{"tcpa"} },
		"no consents":   func(c *signed.Content) { c.Consents = nil },
		"created":       func(c *signed.Content) { c.CreatedAt = "2026-11-22T10:30:00.123457Z" },
		"created, long": func(c *signed.Content) { c.CreatedAt = "2026-11-22T10:30:00.1234560Z" },
		"created, zone": func(c *signed.Content) { c.CreatedAt = "2026-11-22T10:30:00.123456+00:00" },
		"email, upper":  func(c *signed.Content) { c.EmailSHA256 = strings.ToUpper(c.EmailSHA256) },
		"email, short":  func(c *signed.Content) { c.EmailSHA256 = c.EmailSHA256[:62] },
		"email, long":   func(c *signed.Content) { c.EmailSHA256 += "00" },
		"mobile, zero":  func(c *signed.Content) { c.MobileSHA256 = strings.Repeat("0", 64) },
		"origin":        func(c *signed.Content) { c.Origin = "https://evil.example/" },
		"version":       func(c *signed.Content) { c.V = "consentkit-certificate-2" },
		"key":           func(c *signed.Content) { c.KeyID = "key-0" },
	} {
		c := d.Content()
		edit(&c)
		if err := signed.Verify(&c, key.Public(), sig); err == nil {
			t.Errorf("%s changed: Verify accepted it", name)
		}
	}
	if err := signed.Verify(&c, other.Public(), sig); err == nil {
		t.Error("another key of the same id: Verify accepted it")
	}
	if _, err := signed.NewSigningKey("a b"); err == nil {
		t.Error("NewSigningKey accepted the id \"a b\"")
	}
}

// The answer's JSON, as the server writes it and an offline check reads
// it: a Proof and a KeySet round-trip, verify, and say what is wrong when
// they do not.
func TestProofVerify(t *testing.T) {
	key, _ := signed.NewSigningKey("key-1")
	old, _ := signed.NewSigningKey("key-0")
	d := document()
	sig := key.Sign(&d)
	c := d.Content()
	keysJSON, err := json.Marshal(signed.Publish([]signed.PublicKey{key.Public(), old.Public()}))
	if err != nil {
		t.Fatal(err)
	}
	proofJSON, err := json.Marshal(signed.Proof{Signature: signed.EncodeSignature(sig), KeyID: key.ID, Signed: &c})
	if err != nil {
		t.Fatal(err)
	}
	var keys signed.KeySet
	var proof signed.Proof
	if err := json.Unmarshal(keysJSON, &keys); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(proofJSON, &proof); err != nil {
		t.Fatal(err)
	}
	if err := proof.Verify(&keys); err != nil {
		t.Fatalf("Verify of %s with %s: %v", proofJSON, keysJSON, err)
	}
	if empty, _ := json.Marshal(signed.Publish(nil)); string(empty) != `{"keys":[]}` {
		t.Errorf("no keys published as %s, want {\"keys\":[]}", empty)
	}
	for name, tc := range map[string]struct {
		edit func(p *signed.Proof, ks *signed.KeySet)
		want string
	}{
		"unsigned":      {func(p *signed.Proof, _ *signed.KeySet) { *p = signed.Proof{} }, "carries no signature"},
		"not base64":    {func(p *signed.Proof, _ *signed.KeySet) { p.Signature = "%%" }, "not base64"},
		"key differs":   {func(p *signed.Proof, _ *signed.KeySet) { p.KeyID = "key-0" }, `differs from the signed content's "key-1"`},
		"unknown key":   {func(_ *signed.Proof, ks *signed.KeySet) { ks.Keys = ks.Keys[1:] }, `no published key has the id "key-1"`},
		"algorithm":     {func(_ *signed.Proof, ks *signed.KeySet) { ks.Keys[0].Algorithm = "RSA" }, "is RSA, not Ed25519"},
		"short key":     {func(_ *signed.Proof, ks *signed.KeySet) { ks.Keys[0].PublicKey = "AAAA" }, "not a base64 Ed25519 public key"},
		"another key":   {func(_ *signed.Proof, ks *signed.KeySet) { ks.Keys[0].PublicKey = ks.Keys[1].PublicKey }, "does not match"},
		"changed text":  {func(p *signed.Proof, _ *signed.KeySet) { p.Signed.Consents[1].Text = "third" }, "does not match"},
		"bad signature": {func(p *signed.Proof, _ *signed.KeySet) { p.Signature = signed.EncodeSignature(sig[1:]) }, "does not match"},
	} {
		var p signed.Proof
		var ks signed.KeySet
		if err := json.Unmarshal(proofJSON, &p); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(keysJSON, &ks); err != nil {
			t.Fatal(err)
		}
		tc.edit(&p, &ks)
		if err := p.Verify(&ks); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want an error saying %q", name, err, tc.want)
		}
	}
}

// What the Service pays to sign a certificate and to check one offline.
//
//	go test -run '^$' -bench . ./signed
func BenchmarkEncoding(b *testing.B) {
	d := document()
	d.MobileSHA256, d.RecordingSHA256 = sha256.Sum256([]byte("+15555550100")), sha256.Sum256(nil)
	b.Run("append", func(b *testing.B) {
		var buf [1024]byte
		b.ReportAllocs()
		for b.Loop() {
			d.AppendEncoding(buf[:0])
		}
	})
	b.Run("content", func(b *testing.B) {
		c := d.Content()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Encoding(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkVerify(b *testing.B) {
	key, _ := signed.NewSigningKey("k1")
	d := document()
	sig := key.Sign(&d)
	c := d.Content()
	b.ReportAllocs()
	for b.Loop() {
		if err := signed.Verify(&c, key.Public(), sig); err != nil {
			b.Fatal(err)
		}
	}
}

// A statement is stored without encoding/json's HTML escaping: a field
// named with "<" takes one byte a "<", not six, and reads back the same.
func TestMarshalKeepsMarkup(t *testing.T) {
	st := signed.InsightsStatement{Signals: signed.InsightsSignals{Inputs: []signed.InsightsInput{{Name: strings.Repeat("<&>", 40)}}}}
	b, err := signed.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	escaped, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var back signed.InsightsStatement
	if err := json.Unmarshal(b, &back); err != nil || back.Signals.Inputs[0].Name != st.Signals.Inputs[0].Name {
		t.Fatalf("read back: %+v, %v", back.Signals.Inputs, err)
	}
	if !strings.Contains(string(b), strings.Repeat("<&>", 40)) || len(escaped)-len(b) != 120*5 || bytes.HasSuffix(b, []byte("\n")) {
		t.Errorf("stored as %d bytes (escaped: %d): %.120s", len(b), len(escaped), b)
	}
}
