package consentkit_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
)

// A company that attests every certificate gets each one it issues asked
// for at issue (D49): pending, its job queued; another company's are not.
// A full queue does not refuse the certificate.
func TestAttestEveryCertificate(t *testing.T) {
	svc, _ := newService(t, consentkit.Config{AttestationQueue: 2, AttestationQueuePerCompany: 2})
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

// attestEnv is a service whose companies issue certificates and ask for
// their attestations.
type attestEnv struct {
	t   *testing.T
	svc *consentkit.Service
}

// company creates the company with a property, attesting every
// certificate or not.
func (e attestEnv) company(id string, attestAll bool) {
	e.t.Helper()
	if _, err := e.svc.CreateCompany(ctx, consentkit.CompanyParams{ID: id, Name: id}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.svc.AddProperty(ctx, consentkit.PropertyParams{ID: id + "-web", CompanyID: id, Name: "Form"}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.svc.SetAttestCertificates(ctx, id, attestAll); err != nil {
		e.t.Fatal(err)
	}
}

// issue issues the certificate id of the company.
func (e attestEnv) issue(company, id string) {
	e.t.Helper()
	if _, err := e.svc.StartSession(ctx, consentkit.SessionParams{ID: "s-" + id, CompanyID: company, PropertyID: company + "-web"}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.svc.IssueCertificate(ctx, consentkit.CertificateParams{ID: id, CompanyID: company, PropertyID: company + "-web",
		SessionID: "s-" + id, Records: []consent.Record{{Text: "I agree."}}}); err != nil {
		e.t.Fatalf("issue %s: %v", id, err)
	}
}

// ask asks for the attestation of the certificate id, as a verification
// that says "attest": true does.
func (e attestEnv) ask(id string) error {
	return e.svc.Store().Update(ctx, func(tx consent.Tx) error {
		c, err := tx.Certificate(ctx, id)
		if err != nil {
			return err
		}
		_, err = e.svc.AskAttestation(ctx, tx, c)
		return err
	})
}

// pending fails the test unless exactly the certificates of want have an
// attestation (pending), of those of the company.
func (e attestEnv) pending(company string, want map[string]bool) {
	e.t.Helper()
	for id, asked := range want {
		a, err := e.svc.Attestation(ctx, company, id)
		switch {
		case !asked && consent.ErrorCode(err) != consent.NotFound:
			e.t.Errorf("%s: %+v %v, want no attestation", id, a, err)
		case asked && (err != nil || a.Status != consent.AttestationPending):
			e.t.Errorf("%s: %+v %v, want pending", id, a, err)
		}
	}
}

// A company holds at most Config.AttestationQueuePerCompany waiting
// attestations (D49): one whose forms bots fill, attesting every
// certificate, is refused beyond its own bound while another company's ask
// is taken; the queue's bound over all companies still holds.
func TestAttestationQueuePerCompany(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		svc, err := consentkit.NewService(open(t), consentkit.Config{AttestationQueue: 5, AttestationQueuePerCompany: 2})
		if err != nil {
			t.Fatal(err)
		}
		e := attestEnv{t, svc}
		e.company("acme", true)
		e.company("globex", false)
		e.company("initech", false)
		for _, id := range []string{"a1", "a2", "a3"} {
			e.issue("acme", id) // asked at issue; a3 beyond acme's bound
		}
		e.pending("acme", map[string]bool{"a1": true, "a2": true, "a3": false})
		if err := e.ask("a3"); !errors.Is(err, consentkit.ErrAttestationQueueFull) {
			t.Errorf("acme's ask beyond its bound: %v, want ErrAttestationQueueFull", err)
		}
		for _, id := range []string{"g1", "g2", "g3"} {
			e.issue("globex", id)
		}
		for _, id := range []string{"g1", "g2"} {
			if err := e.ask(id); err != nil {
				t.Errorf("globex's ask %s with acme at its bound: %v", id, err)
			}
		}
		if err := e.ask("g3"); !errors.Is(err, consentkit.ErrAttestationQueueFull) {
			t.Errorf("globex's ask beyond its bound: %v, want ErrAttestationQueueFull", err)
		}
		e.issue("initech", "i1")
		e.issue("initech", "i2")
		if err := e.ask("i1"); err != nil {
			t.Errorf("initech's first ask: %v", err)
		}
		// Five wait: the queue is full for initech too, below its own bound.
		if err := e.ask("i2"); !errors.Is(err, consentkit.ErrAttestationQueueFull) {
			t.Errorf("an ask with the whole queue full: %v, want ErrAttestationQueueFull", err)
		}
		e.pending("globex", map[string]bool{"g1": true, "g2": true, "g3": false})
		e.pending("initech", map[string]bool{"i1": true, "i2": false})
		mustView(t, svc.Store(), func(tx consent.Tx) error {
			for company, want := range map[string]int{"acme": 2, "globex": 2, "initech": 1} {
				if n, err := tx.CountCompanyJobs(ctx, consent.JobAttest, company); err != nil || n != want {
					t.Errorf("%s's attestation jobs: %d %v, want %d", company, n, err, want)
				}
			}
			if n, err := tx.CountJobs(ctx, consent.JobAttest); err != nil || n != 5 {
				t.Errorf("attestation jobs: %d %v, want 5", n, err)
			}
			return nil
		})
	})
}

// By default a company holds a tenth of the queue: 100 of 1,000.
func TestAttestationQueuePerCompanyDefault(t *testing.T) {
	svc, _ := newService(t, consentkit.Config{})
	e := attestEnv{t, svc}
	e.company("globex", true)
	want := map[string]bool{}
	for i := range 101 {
		id := fmt.Sprint("g", i)
		e.issue("globex", id)
		want[id] = i < 100
	}
	e.pending("globex", want)
}

// Service.Attestation and Service.Insights answer another company's
// certificate as they answer an unknown one (D9), its attestation asked
// for and its insights pending or not; the company's own certificate is
// answered.
func TestEvidenceOfAnotherCompany(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		svc, err := consentkit.NewService(open(t), consentkit.Config{})
		if err != nil {
			t.Fatal(err)
		}
		mustDo(t, svc)
		if _, err := svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "other", Name: "Other"}); err != nil {
			t.Fatal(err)
		}
		c, err := svc.IssueCertificate(ctx, consentkit.CertificateParams{ID: "cert-1", CompanyID: "acme", PropertyID: "web", SessionID: "s1",
			Records: []consent.Record{{Text: "I agree"}}})
		if err != nil {
			t.Fatal(err)
		}
		must(t, svc.Store().Update(ctx, func(tx consent.Tx) error { _, err := svc.AskAttestation(ctx, tx, c); return err }))
		if _, err := svc.Attestation(ctx, "acme", "cert-1"); err != nil {
			t.Errorf("acme's attestation: %v", err)
		}
		for name, read := range map[string]func(companyID, id string) error{
			"Attestation": func(companyID, id string) error { _, err := svc.Attestation(ctx, companyID, id); return err },
			"Insights":    func(companyID, id string) error { _, err := svc.Insights(ctx, companyID, id); return err },
		} {
			unknown, acmes := read("other", "cert-none"), read("other", "cert-1")
			if consent.ErrorCode(acmes) != consent.NotFound || consent.ErrorMessage(acmes) != consent.ErrorMessage(unknown) {
				t.Errorf("%s: of acme's certificate %v, of an unknown one %v; want one NotFound", name, acmes, unknown)
			}
		}
	})
}
