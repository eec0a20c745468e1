package consentkit_test

import (
	"fmt"
	"testing"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
)

// A company that attests every certificate gets each one it issues asked
// for at issue (D49): pending, its job queued; another company's are not.
// A full queue does not refuse the certificate.
func TestAttestEveryCertificate(t *testing.T) {
	svc, _ := newService(t, consentkit.Config{AttestationQueue: 2})
	if _, err := svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "globex", Name: "Globex"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.AddProperty(ctx, consentkit.PropertyParams{ID: "globex-web", CompanyID: "globex", Name: "Form"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.SetAttestCertificates(ctx, "acme", true); err != nil {
		t.Fatal(err)
	}
	issue := func(company, id string) {
		t.Helper()
		if _, err := svc.StartSession(ctx, consentkit.SessionParams{ID: "s-" + id, CompanyID: company, PropertyID: company + "-web"}); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.IssueCertificate(ctx, consentkit.CertificateParams{ID: id, CompanyID: company, PropertyID: company + "-web",
			SessionID: "s-" + id, Records: []consent.Record{{Text: "I agree."}}}); err != nil {
			t.Fatalf("issue %s: %v", id, err)
		}
	}
	issue("acme", "c1")
	issue("globex", "g1")
	issue("acme", "c2")
	issue("acme", "c3") // the queue holds two
	for id, want := range map[string]string{"c1": consent.AttestationPending, "c2": consent.AttestationPending, "g1": "", "c3": ""} {
		company := "acme"
		if id == "g1" {
			company = "globex"
		}
		a, err := svc.Attestation(ctx, company, id)
		switch {
		case want == "" && consent.ErrorCode(err) != consent.NotFound:
			t.Errorf("%s: %+v %v, want no attestation", id, a, err)
		case want != "" && (err != nil || a.Status != want):
			t.Errorf("%s: %+v %v, want %s", id, a, err, want)
		}
	}
	err := svc.Store().View(ctx, func(tx consent.Tx) error {
		n, err := tx.CountJobs(ctx, consent.JobAttest)
		if err == nil && n != 2 {
			err = fmt.Errorf("%d attestation jobs queued, want 2", n)
		}
		return err
	})
	if err != nil {
		t.Error(err)
	}
}
