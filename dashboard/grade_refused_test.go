package dashboard_test

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/dashboard"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/retain"
	"github.com/consentkit/consentkit/verify"
)

// An attestation whose status no signed statement holds makes every
// verification of its certificate answer 409 (verify's
// checkedAttestation), whatever the profile: the certificate page grades
// it for no one and says so, as it does for a certificate that fails its
// integrity check or whose insights do not hold (D51).
func TestTamperedAttestationIsNotGraded(t *testing.T) {
	svc, _ := fixture(t, teststore.Memory(t))
	videos := retain.Dir{Root: t.TempDir()}
	attest(t, svc, videos, "cert-acme", nil, mismatch)
	must(t, svc.Store().Update(ctx, func(tx consent.Tx) error {
		a, err := tx.Attestation(ctx, "cert-acme")
		if err != nil {
			return err
		}
		a.Status = consent.AttestationAttested // the statement says mismatch
		return tx.UpdateAttestation(ctx, a)
	}))
	h, err := dashboard.New(svc, dashboard.Config{OperatorSecret: secret, Videos: videos})
	must(t, err)
	b := newBrowser(t, h)
	b.login()
	const profiles = "/dashboard/companies/acme/profiles"
	b.get(profiles)
	if code, body := b.post(profiles, url.Values{"name": {"legible"}, "rules": {`{"legibility":{"min_font_size_px":12}}`}}); code != http.StatusOK {
		t.Fatalf("add the profile: %d %s", code, body)
	}
	// What a verification by acme with that profile answers.
	_, verr := verify.New(svc).Match(ctx, "acme", verify.MatchRequest{CertificateID: "cert-acme", CompanyID: "acme", Consent: consentText, Profile: "legible"})
	if !errors.Is(verr, consent.ErrIntegrity) {
		t.Fatalf("the verification: %v, want it refused with %v", verr, consent.ErrIntegrity)
	}
	_, body := b.get("/dashboard/companies/acme/certificates/cert-acme?profile=legible")
	if strings.Contains(body, `id="grade-result"`) {
		i := strings.Index(body, `id="grade-result"`)
		t.Errorf("the page grades a certificate every verification refuses (409): %s", body[i:i+40])
	}
	contains(t, "the grade", body, `id="grade-refused">409 `)
}
