package verify_test

import (
	"context"
	"testing"
	"time"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/store/memstore"
	"github.com/consentkit/consentkit/verify"
	"github.com/consentkit/consentkit/wallet"
)

var ctx = context.Background()

func setup(t *testing.T, records ...consent.Record) *verify.Service {
	t.Helper()
	st := memstore.New()
	svc, err := consent.NewService(st, consent.Config{})
	steps := []error{err}
	_, err = svc.CreateCompany(ctx, consent.CompanyParams{ID: "acme", Name: "Acme"})
	steps = append(steps, err)
	_, err = svc.AddProperty(ctx, consent.PropertyParams{ID: "web", CompanyID: "acme", Name: "Form"})
	steps = append(steps, err)
	_, err = svc.TopUp(ctx, "acme", wallet.Dollar, "")
	steps = append(steps, err)
	_, err = svc.StartSession(ctx, consent.SessionParams{ID: "s1", CompanyID: "acme", PropertyID: "web"})
	steps = append(steps, err)
	_, err = svc.IssueCertificate(ctx, consent.CertificateParams{ID: "c1", CompanyID: "acme", PropertyID: "web", SessionID: "s1", Records: records})
	steps = append(steps, err)
	for _, err := range steps {
		if err != nil {
			t.Fatal(err)
		}
	}
	return verify.New(svc)
}

// Partial match compares by Unicode simple case folding (D11).
func TestPartialMatchFolding(t *testing.T) {
	s := setup(t, consent.Record{Text: "Ο ΣΊΣΥΦΟΣ agrees to 10 KELVIN of Straße-level consent", OptInAt: time.Now()})
	for _, tc := range []struct {
		term string
		want bool
	}{
		{"σίσυφος", true},        // final sigma folds with Σ
		{"10 kelvin", true},      // plain k
		{"10 \u212aelvin", true}, // KELVIN SIGN folds with k
		{"STRASSE", false},       // ß is not ss under simple folding
		{"straße-LEVEL", true},
		{"agreed", false},
	} {
		res, err := s.PartialMatch(ctx, "acme", verify.PartialMatchRequest{CertificateID: "c1", CompanyID: "acme", Term: tc.term})
		if err != nil || res.Valid != tc.want {
			t.Errorf("PartialMatch(%q) = %+v, %v; want valid %v", tc.term, res, err, tc.want)
		}
	}
}

// Exact match trims white space on both sides and nothing else (D10).
func TestMatchExactness(t *testing.T) {
	s := setup(t, consent.Record{Text: "  I agree.\n", OptInAt: time.Now()})
	for _, tc := range []struct {
		consent string
		want    bool
	}{
		{"I agree.", true},
		{"\tI agree. ", true},
		{"I  agree.", false},
		{"I agree", false},
		{"i agree.", false},
		{"I agree.\u00a0x", false},
	} {
		res, err := s.Match(ctx, "acme", verify.MatchRequest{CertificateID: "c1", CompanyID: "acme", Consent: tc.consent})
		if err != nil || res.Valid != tc.want {
			t.Errorf("Match(%q) = %+v, %v; want valid %v", tc.consent, res, err, tc.want)
		}
	}
	if res, _ := s.Match(ctx, "acme", verify.MatchRequest{CertificateID: "c1", CompanyID: "acme", Consent: "I agree."}); res.Charged != 15000 || res.Balance != wallet.Dollar-7*15000 {
		t.Errorf("charged %s, balance %s after 7 checks", res.Charged, res.Balance)
	}
}
