package storetest

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"testing"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/signed"
	"github.com/consentkit/consentkit/verify"
	"github.com/consentkit/consentkit/wallet"
)

// IntegrityTamperer changes a store's tables behind its back, as someone
// with access to the database could.
type IntegrityTamperer interface {
	// ReplaceConsentText replaces old by new in the certificate's stored
	// consents.
	ReplaceConsentText(t testing.TB, certificateID, old, new string)
	// ShiftCreatedAt moves the certificate's creation time by one second.
	ShiftCreatedAt(t testing.TB, certificateID string)
	// ReplaceInRecording replaces old by new in the session's first chunk
	// of events.
	ReplaceInRecording(t testing.TB, sessionID, old, new string)
}

// RunIntegrityTamper checks D41 on a store: a certificate signed at issue
// verifies while untouched; once its consent text, its time or a byte of
// its session's recording is changed in the store's tables, every
// verification refuses it with 409 "certificate integrity check failed"
// and charges nothing.
func RunIntegrityTamper(t *testing.T, open func(tb testing.TB) (consent.Store, IntegrityTamperer)) {
	const text = "I agree to be contacted by Acme."
	recording := `[{"type":4,"data":{"href":"https://acme.example/"},"timestamp":1},{"type":3,"timestamp":2}]`
	for _, tc := range []struct {
		name   string
		tamper func(t testing.TB, tm IntegrityTamperer)
	}{
		{"intact", func(testing.TB, IntegrityTamperer) {}},
		{"consent text", func(t testing.TB, tm IntegrityTamperer) { tm.ReplaceConsentText(t, "cert-1", "contacted", "called") }},
		{"time", func(t testing.TB, tm IntegrityTamperer) { tm.ShiftCreatedAt(t, "cert-1") }},
		{"recording byte", func(t testing.TB, tm IntegrityTamperer) { tm.ReplaceInRecording(t, "s1", `"type":4`, `"type":5`) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, tm := open(t)
			key, err := signed.NewSigningKey("k1")
			if err != nil {
				t.Fatal(err)
			}
			svc, err := consent.NewService(st, consent.Config{SigningKeys: []signed.SigningKey{key}})
			if err != nil {
				t.Fatal(err)
			}
			must := func(_ any, err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			must(svc.CreateCompany(ctx, consent.CompanyParams{ID: "acme", Name: "Acme"}))
			must(svc.AddProperty(ctx, consent.PropertyParams{ID: "web", CompanyID: "acme", Name: "Form"}))
			must(svc.TopUp(ctx, "acme", wallet.Dollar, ""))
			must(svc.StartSession(ctx, consent.SessionParams{ID: "s1", CompanyID: "acme", PropertyID: "web"}))
			must(svc.AppendEvents(ctx, "s1", json.RawMessage(recording)))
			joined, err := svc.Recording(ctx, "s1")
			must(joined, err)
			must(svc.IssueCertificate(ctx, consent.CertificateParams{ID: "cert-1", CompanyID: "acme", PropertyID: "web",
				SessionID: "s1", Origin: "https://acme.example/", Records: []consent.Record{{Text: text, Types: []string{"tcpa"}}},
				RecordingSHA256: sha256.Sum256(joined)}))
			tc.tamper(t, tm)
			v := verify.New(svc)
			_, matchErr := v.Match(ctx, "acme", verify.MatchRequest{CertificateID: "cert-1", CompanyID: "acme", Consent: text})
			_, infoErr := v.CertificateInfo(ctx, "acme", verify.InfoRequest{CertificateID: "cert-1", CompanyID: "acme", PropertyID: "web"})
			bal, err := svc.Balance(ctx, "acme")
			must(bal, err)
			if tc.name == "intact" {
				if matchErr != nil || infoErr != nil {
					t.Fatalf("untouched certificate: match %v, info %v", matchErr, infoErr)
				}
				return
			}
			for name, err := range map[string]error{"match": matchErr, "certificate-info": infoErr} {
				if !errors.Is(err, consent.ErrIntegrity) || consent.ErrorCode(err) != consent.Conflict {
					t.Errorf("%s after the %s changed: %v; want 409 certificate integrity check failed", name, tc.name, err)
				}
			}
			if bal != wallet.Dollar {
				t.Errorf("balance %s; want nothing charged for a refused certificate", bal)
			}
		})
	}
}
