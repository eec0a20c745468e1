package consentkit_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/store/memstore"
	"github.com/consentkit/consentkit/wallet"
	"github.com/consentkit/consentkit/webhook"
)

var ctx = context.Background()

// clock is a settable clock for tests.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newService(t *testing.T, cfg consentkit.Config) (*consentkit.Service, *clock) {
	t.Helper()
	c := &clock{t: time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)}
	if cfg.Now == nil {
		cfg.Now = c.now
	}
	s := memstore.New()
	teststore.CloseAtEnd(t, s)
	svc, err := consentkit.NewService(s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.AddProperty(ctx, consentkit.PropertyParams{ID: "acme-web", CompanyID: "acme", Name: "Quote form"}); err != nil {
		t.Fatal(err)
	}
	return svc, c
}

func wantCode(t *testing.T, what string, err error, code consent.Code) {
	t.Helper()
	if got := consent.ErrorCode(err); got != code {
		t.Errorf("%s: %v (code %q), want code %q", what, err, got, code)
	}
}

func TestCreateCompany(t *testing.T) {
	svc, _ := newService(t, consentkit.Config{})
	_, err := svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Again"})
	wantCode(t, "duplicate", err, consent.Conflict)
	_, err = svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "bad id", Name: "X"})
	wantCode(t, "bad id", err, consent.Invalid)
	_, err = svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "x", Name: " "})
	wantCode(t, "blank name", err, consent.Invalid)
	_, err = svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "x", Name: "X", AuthorizedThirdParties: []string{"ok", "not ok"}})
	wantCode(t, "bad third party", err, consent.Invalid)

	c, err := svc.SetThirdParty(ctx, "acme", true, []string{"buyer", "buyer", "broker"})
	if err != nil || !c.Authorizes("buyer") || !c.Authorizes("broker") || c.Authorizes("acme") || len(c.AuthorizedThirdParties) != 2 {
		t.Errorf("SetThirdParty = %+v, %v", c, err)
	}
	c, err = svc.SetThirdParty(ctx, "acme", false, []string{"buyer"})
	if err != nil || c.Authorizes("buyer") {
		t.Errorf("a disabled company authorizes: %+v, %v", c, err)
	}
	_, err = svc.SetThirdParty(ctx, "nobody", true, nil)
	wantCode(t, "SetThirdParty(nobody)", err, consent.NotFound)
}

// Nothing is made under an id that no route could name: "." and ".."
// are steps of a URL path (/operator/companies/{company_id}/…), and a
// session named "batch" is the Retain API's batch route (D29).
func TestIDsRoutesCanName(t *testing.T) {
	svc, _ := newService(t, consentkit.Config{})
	for _, id := range []string{".", ".."} {
		_, err := svc.CreateCompany(ctx, consentkit.CompanyParams{ID: id, Name: "Dots"})
		wantCode(t, "company "+id, err, consent.Invalid)
		_, err = svc.AddProperty(ctx, consentkit.PropertyParams{ID: id, CompanyID: "acme", Name: "Dots"})
		wantCode(t, "property "+id, err, consent.Invalid)
		_, err = svc.IssueCertificate(ctx, consentkit.CertificateParams{ID: id, CompanyID: "acme", PropertyID: "acme-web",
			SessionID: "s1", Origin: "https://acme.example/quote", Records: []consent.Record{{Text: "I agree."}}})
		wantCode(t, "certificate "+id, err, consent.Invalid)
		_, err = svc.StartSession(ctx, consentkit.SessionParams{ID: id, CompanyID: "acme", PropertyID: "acme-web"})
		wantCode(t, "session "+id, err, consent.Invalid)
	}
	_, err := svc.StartSession(ctx, consentkit.SessionParams{ID: "batch", CompanyID: "acme", PropertyID: "acme-web"})
	wantCode(t, "session batch", err, consent.Invalid)
	for _, id := range []string{".", ".."} {
		_, err := webhook.Endpoints{Service: svc}.Add(ctx, webhook.Params{ID: id, CompanyID: "acme", URL: "https://hooks.example/",
			Events: []string{consent.EventConsentRevoked}})
		wantCode(t, "webhook endpoint "+id, err, consent.Invalid)
	}
	// Dots elsewhere are ids like any other.
	if _, err := svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "...", Name: "Three dots"}); err != nil {
		t.Errorf("company ...: %v", err)
	}
	if _, err := svc.StartSession(ctx, consentkit.SessionParams{ID: "batch-2", CompanyID: "acme", PropertyID: "acme-web"}); err != nil {
		t.Errorf("session batch-2: %v", err)
	}
}

// A company is created attesting its certificates or not (D49), and
// SetAttestCertificates changes that alone, in the store.
func TestSetAttestCertificates(t *testing.T) {
	svc, _ := newService(t, consentkit.Config{})
	stored := func(id string) *consent.Company {
		t.Helper()
		var c *consent.Company
		err := svc.Store().View(ctx, func(tx consent.Tx) error {
			var err error
			c, err = tx.Company(ctx, id)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if c := stored("acme"); c.AttestCertificates {
		t.Errorf("a company created without the setting attests: %+v", c)
	}
	c, err := svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "beta", Name: "Beta", ThirdPartyVerificationEnabled: true,
		AuthorizedThirdParties: []string{"acme"}, AttestCertificates: true})
	if err != nil || !c.AttestCertificates || !stored("beta").AttestCertificates {
		t.Fatalf("CreateCompany(AttestCertificates) = %+v, %v; stored %+v", c, err, stored("beta"))
	}
	c, err = svc.SetAttestCertificates(ctx, "beta", false)
	if err != nil || c.AttestCertificates {
		t.Errorf("SetAttestCertificates(off) = %+v, %v", c, err)
	}
	if got := stored("beta"); got.AttestCertificates || got.Name != "Beta" || !got.Authorizes("acme") {
		t.Errorf("after SetAttestCertificates(off), stored %+v; want it off and the rest as it was", got)
	}
	if c, err := svc.SetAttestCertificates(ctx, "acme", true); err != nil || !c.AttestCertificates || !stored("acme").AttestCertificates {
		t.Errorf("SetAttestCertificates(on) = %+v, %v; stored %+v", c, err, stored("acme"))
	}
	_, err = svc.SetAttestCertificates(ctx, "nobody", true)
	wantCode(t, "SetAttestCertificates(nobody)", err, consent.NotFound)
	_, err = svc.SetAttestCertificates(ctx, "bad id", true)
	wantCode(t, "SetAttestCertificates(bad id)", err, consent.NotFound)
}

func TestTokens(t *testing.T) {
	svc, clk := newService(t, consentkit.Config{})
	tok, secret, err := svc.IssueToken(ctx, consentkit.TokenParams{
		CompanyID: "acme", Permissions: []consent.Permission{consent.PermissionRetention},
		ExpiresAt: clk.t.Add(time.Hour),
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, consentkit.TokenPrefix) || len(secret) < len(consentkit.TokenPrefix)+43 {
		t.Errorf("secret %q lacks the prefix or 32 random bytes", secret)
	}
	if tok.Digest != consent.DigestOf(secret) {
		t.Error("the token does not keep the secret's SHA-256 digest")
	}
	got, err := svc.Authenticate(ctx, secret)
	if err != nil || got.ID != tok.ID || !got.Has(consent.PermissionRetention) {
		t.Fatalf("Authenticate = %+v, %v", got, err)
	}
	// A permission given twice is held once.
	twice, _, err := svc.IssueToken(ctx, consentkit.TokenParams{CompanyID: "acme",
		Permissions: []consent.Permission{consent.PermissionRetention, consent.PermissionRetention}})
	if err != nil || len(twice.Permissions) != 1 {
		t.Errorf("a token issued with retention twice: %+v, %v; want it held once", twice, err)
	}
	for _, bad := range []string{"", "ck_wrong", secret + "x", strings.ToUpper(secret)} {
		_, err := svc.Authenticate(ctx, bad)
		wantCode(t, "Authenticate(bad secret)", err, consent.Unauthorized)
	}
	clk.t = clk.t.Add(time.Hour)
	_, err = svc.Authenticate(ctx, secret)
	wantCode(t, "Authenticate(expired)", err, consent.Unauthorized)

	_, secret2, err := svc.IssueToken(ctx, consentkit.TokenParams{CompanyID: "acme", Secret: "any-secret-string"})
	if err != nil || secret2 != "any-secret-string" {
		t.Fatalf("IssueToken(given secret) = %q, %v", secret2, err)
	}
	tok2, err := svc.Authenticate(ctx, "any-secret-string")
	if err != nil || tok2.Has(consent.PermissionRetention) {
		t.Fatalf("Authenticate(given secret) = %+v, %v", tok2, err)
	}
	wantCode(t, "RevokeToken(other company)", svc.RevokeToken(ctx, "other", tok2.ID), consent.NotFound)
	if err := svc.RevokeToken(ctx, "acme", tok2.ID); err != nil {
		t.Fatal(err)
	}
	_, err = svc.Authenticate(ctx, "any-secret-string")
	wantCode(t, "Authenticate(revoked)", err, consent.Unauthorized)

	for name, p := range map[string]consentkit.TokenParams{
		"short secret": {CompanyID: "acme", Secret: "short"},
		// No Authorization header can carry these: a token so issued
		// (from a seed file, say) could never be used.
		"NUL in secret":       {CompanyID: "acme", Secret: "any-secret\x00string"},
		"control in secret":   {CompanyID: "acme", Secret: "any-secret\x7fstring"},
		"non-ASCII in secret": {CompanyID: "acme", Secret: "any-secret-stríng"},
		"unknown perm":        {CompanyID: "acme", Permissions: []consent.Permission{"admin"}},
		"past expiry":         {CompanyID: "acme", ExpiresAt: clk.t.Add(-time.Second)},
		"bad company id":      {CompanyID: "a b"},
	} {
		_, _, err := svc.IssueToken(ctx, p)
		wantCode(t, "IssueToken("+name+")", err, consent.Invalid)
	}
	_, _, err = svc.IssueToken(ctx, consentkit.TokenParams{CompanyID: "nobody"})
	wantCode(t, "IssueToken(unknown company)", err, consent.NotFound)
}

func TestTopUp(t *testing.T) {
	svc, _ := newService(t, consentkit.Config{})
	bal, err := svc.TopUp(ctx, "acme", 25*wallet.Dollar+wallet.Dollar/2, "inv-1")
	if err != nil || bal.String() != "25.5" {
		t.Fatalf("TopUp = %s, %v", bal, err)
	}
	bal, err = svc.TopUp(ctx, "acme", 15*wallet.Cent/10, "inv-2")
	if err != nil || bal.String() != "25.515" {
		t.Fatalf("TopUp = %s, %v", bal, err)
	}
	for _, amount := range []wallet.Amount{0, -1} {
		_, err := svc.TopUp(ctx, "acme", amount, "")
		wantCode(t, "TopUp(non-positive)", err, consent.Invalid)
	}
	_, err = svc.TopUp(ctx, "nobody", wallet.Dollar, "")
	wantCode(t, "TopUp(unknown company)", err, consent.NotFound)
	if bal, err := svc.Balance(ctx, "acme"); err != nil || bal != 25_515_000 {
		t.Errorf("Balance = %d, %v", bal, err)
	}
}

func TestRecording(t *testing.T) {
	svc, clk := newService(t, consentkit.Config{MaxChunkBytes: 64, MaxRecordingBytes: 100, DefaultRetention: 24 * time.Hour})
	ses, err := svc.StartSession(ctx, consentkit.SessionParams{ID: "s1", CompanyID: "acme", PropertyID: "acme-web"})
	if err != nil {
		t.Fatal(err)
	}
	if ses.RetentionStatus != consent.RetentionNone || ses.VideoStatus != consent.VideoNone ||
		!ses.ExpiresAt.Equal(clk.t.Add(24*time.Hour)) {
		t.Errorf("new session = %+v", ses)
	}
	if _, err := svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "other", Name: "Other"}); err != nil {
		t.Fatal(err)
	}
	_, err = svc.StartSession(ctx, consentkit.SessionParams{CompanyID: "other", PropertyID: "acme-web"})
	wantCode(t, "StartSession(another company's property)", err, consent.NotFound)
	// An id that could name no recording object or video file (D52).
	_, err = svc.StartSession(ctx, consentkit.SessionParams{ID: ".s1", CompanyID: "acme", PropertyID: "acme-web"})
	wantCode(t, "StartSession(.s1)", err, consent.Invalid)
	// Nor a certificate id that could name no screenshot (D49).
	_, err = svc.IssueCertificate(ctx, consentkit.CertificateParams{ID: ".c1", CompanyID: "acme", PropertyID: "acme-web", SessionID: "s1"})
	wantCode(t, "IssueCertificate(.c1)", err, consent.Invalid)

	chunks := []string{`[{"type":4,"timestamp":1}]`, ` [ {"type":2,"timestamp":2} , {"type":3,"timestamp":3} ] `}
	for _, c := range chunks {
		if _, err := svc.AppendEvents(ctx, "s1", json.RawMessage(c)); err != nil {
			t.Fatal(err)
		}
	}
	rec, err := svc.Recording(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	var events []map[string]int
	if err := json.Unmarshal(rec, &events); err != nil || len(events) != 3 || events[2]["timestamp"] != 3 {
		t.Errorf("Recording = %s (%v)", rec, err)
	}
	_, err = svc.AppendEvents(ctx, "s1", json.RawMessage(`[{"type":3,"data":"`+strings.Repeat("x", 64)+`"}]`))
	wantCode(t, "AppendEvents(chunk over MaxChunkBytes)", err, consent.TooLarge)
	_, err = svc.AppendEvents(ctx, "s1", json.RawMessage(`[{"type":3,"data":"`+strings.Repeat("x", 30)+`"}]`))
	wantCode(t, "AppendEvents(recording over MaxRecordingBytes)", err, consent.TooLarge)
	for _, bad := range []string{`{}`, `[]`, `[1]`, `[{}`, `"x"`, ``} {
		_, err := svc.AppendEvents(ctx, "s1", json.RawMessage(bad))
		wantCode(t, "AppendEvents("+bad+")", err, consent.Invalid)
	}
	_, err = svc.AppendEvents(ctx, "s9", json.RawMessage(`[{}]`))
	wantCode(t, "AppendEvents(unknown session)", err, consent.NotFound)
}

func TestIssueCertificate(t *testing.T) {
	svc, clk := newService(t, consentkit.Config{})
	if _, err := svc.StartSession(ctx, consentkit.SessionParams{ID: "s1", CompanyID: "acme", PropertyID: "acme-web"}); err != nil {
		t.Fatal(err)
	}
	optIn := clk.t.Add(5 * time.Second)
	c, err := svc.IssueCertificate(ctx, consentkit.CertificateParams{
		ID: "cert-1", CompanyID: "acme", PropertyID: "acme-web", SessionID: "s1",
		Origin: "https://acme.example/quote", Email: " Jane@Example.com", Mobile: "(555) 010-2000",
		Records: []consent.Record{
			{Text: "I agree to be contacted.", Types: []string{"tcpa"}, OptInAt: optIn},
			{Text: "And to the terms."},
		},
		EventsCombined: json.RawMessage(`{"clicks":2}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.EmailDigest != consent.DigestOf("jane@example.com") || c.MobileDigest != consent.DigestOf("+15550102000") {
		t.Error("digests are not of the normalized email and mobile")
	}
	if !c.Records[0].OptInAt.Equal(optIn) || !c.Records[1].OptInAt.Equal(clk.t) {
		t.Errorf("opt-in times %v, %v", c.Records[0].OptInAt, c.Records[1].OptInAt)
	}
	if string(c.EventsCombined) != `{"clicks":2}` || c.Revoked() {
		t.Errorf("certificate = %+v", c)
	}
	bare, err := svc.IssueCertificate(ctx, consentkit.CertificateParams{CompanyID: "acme", PropertyID: "acme-web", SessionID: "s1"})
	if err != nil || string(bare.EventsCombined) != "{}" || len(bare.Records) != 0 || !bare.EmailDigest.IsZero() {
		t.Errorf("certificate without consents = %+v, %v", bare, err)
	}

	base := consentkit.CertificateParams{CompanyID: "acme", PropertyID: "acme-web", SessionID: "s1"}
	for name, mod := range map[string]func(*consentkit.CertificateParams){
		"events_combined not an object": func(p *consentkit.CertificateParams) { p.EventsCombined = json.RawMessage(`[1]`) },
		"blank consent text":            func(p *consentkit.CertificateParams) { p.Records = []consent.Record{{Text: " "}} },
		"bad email":                     func(p *consentkit.CertificateParams) { p.Email = "jane" },
		"bad mobile":                    func(p *consentkit.CertificateParams) { p.Mobile = "12" },
		"bad id":                        func(p *consentkit.CertificateParams) { p.ID = "a b" },
	} {
		p := base
		mod(&p)
		_, err := svc.IssueCertificate(ctx, p)
		wantCode(t, "IssueCertificate("+name+")", err, consent.Invalid)
	}
	_, err = svc.IssueCertificate(ctx, consentkit.CertificateParams{CompanyID: "acme", PropertyID: "acme-web", SessionID: "s9"})
	wantCode(t, "IssueCertificate(unknown session)", err, consent.NotFound)
	_, err = svc.IssueCertificate(ctx, consentkit.CertificateParams{ID: "cert-1", CompanyID: "acme", PropertyID: "acme-web", SessionID: "s1"})
	wantCode(t, "IssueCertificate(duplicate)", err, consent.Conflict)

	// A session the purge emptied (D26): a certificate would vouch for a
	// recording that is gone.
	if err := svc.Store().Update(ctx, func(tx consent.Tx) error {
		ses, err := tx.Session(ctx, "s1")
		if err != nil {
			return err
		}
		ses.RetentionStatus = consent.RetentionExpired
		return tx.UpdateSession(ctx, ses)
	}); err != nil {
		t.Fatal(err)
	}
	_, err = svc.IssueCertificate(ctx, consentkit.CertificateParams{CompanyID: "acme", PropertyID: "acme-web", SessionID: "s1"})
	wantCode(t, "IssueCertificate(purged session)", err, consent.Conflict)
}

func TestErrorCode(t *testing.T) {
	err := consent.Errorf(consent.NotFound, "certificate not found")
	if !strings.Contains(consent.ErrorMessage(err), "certificate") || consent.ErrorCode(nil) != "" {
		t.Error("ErrorMessage or ErrorCode(nil) wrong")
	}
	if consent.ErrorCode(context.Canceled) != consent.Internal || consent.ErrorMessage(context.Canceled) != "internal error" {
		t.Error("an uncoded error must be internal and say nothing more")
	}
	ife := &wallet.InsufficientFundsError{Required: 1, Balance: 0}
	if consent.ErrorCode(ife) != consent.Payment || consent.ErrorMessage(ife) != "insufficient balance" {
		t.Error("insufficient funds must map to Payment")
	}
}

// A negative setting is refused when the service is built, but the two
// where negative turns a cache off.
func TestNewServiceRefusesNegativeSettings(t *testing.T) {
	s := memstore.New()
	teststore.CloseAtEnd(t, s)
	for name, cfg := range map[string]consentkit.Config{
		"DefaultRetention":           {DefaultRetention: -1},
		"LongTermRetention":          {LongTermRetention: -1},
		"MaxChunkBytes":              {MaxChunkBytes: -1},
		"MaxRecordingBytes":          {MaxRecordingBytes: -1},
		"LowBalanceThreshold":        {LowBalanceThreshold: -1},
		"RecordingIdle":              {RecordingIdle: -1},
		"IdempotencyWait":            {IdempotencyWait: -1},
		"TokenCacheSize":             {TokenCacheSize: -1},
		"AttestationQueue":           {AttestationQueue: -1},
		"AttestationQueuePerCompany": {AttestationQueuePerCompany: -1},
	} {
		if _, err := consentkit.NewService(s, cfg); err == nil {
			t.Errorf("a negative %s was taken", name)
		}
	}
	for name, cfg := range map[string]consentkit.Config{
		"TokenCacheTTL":      {TokenCacheTTL: -1},
		"SignatureCacheSize": {SignatureCacheSize: -1},
	} {
		if _, err := consentkit.NewService(s, cfg); err != nil {
			t.Errorf("a negative %s, which turns its cache off: %v", name, err)
		}
	}
}
