package verify_test

import (
	"strings"
	"testing"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/verify"
	"github.com/consentkit/consentkit/wallet"
)

// Consent text and terms are trimmed before they are compared (D10, D11),
// and before the 64 KiB limit applies: a record of exactly 64 KiB matches
// when sent with white space around it; what is left over 64 KiB after
// trimming is refused.
func TestLongestTextMatchesUntrimmed(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(tb testing.TB) consent.Store) {
		svc, err := consentkit.NewService(open(t), consentkit.Config{})
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Repeat("a", 64<<10)
		must := func(_ any, err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		must(svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme"}))
		must(svc.AddProperty(ctx, consentkit.PropertyParams{ID: "web", CompanyID: "acme", Name: "Form"}))
		must(svc.TopUp(ctx, "acme", wallet.Dollar, ""))
		must(svc.StartSession(ctx, consentkit.SessionParams{ID: "s1", CompanyID: "acme", PropertyID: "web"}))
		must(svc.IssueCertificate(ctx, consentkit.CertificateParams{ID: "c1", CompanyID: "acme", PropertyID: "web", SessionID: "s1",
			Records: []consent.Record{{Text: text, OptInAt: time.Now()}}}))
		s := verify.New(svc)
		for _, c := range []string{text + "\n", " " + text + "\t"} {
			if res, err := s.Match(ctx, "acme", verify.MatchRequest{CertificateID: "c1", CompanyID: "acme", Consent: c}); err != nil || !res.Valid {
				t.Errorf("Match of the 64 KiB record with white space around it = %+v, %v; want valid", res, err)
			}
		}
		if res, err := s.PartialMatch(ctx, "acme", verify.PartialMatchRequest{CertificateID: "c1", CompanyID: "acme", Term: " " + text}); err != nil || !res.Valid {
			t.Errorf("PartialMatch of the whole 64 KiB record after a space = %+v, %v; want valid", res, err)
		}
		if _, err := s.Match(ctx, "acme", verify.MatchRequest{CertificateID: "c1", CompanyID: "acme", Consent: text + "a\n"}); consent.ErrorCode(err) != consent.Invalid {
			t.Errorf("Match of 64 KiB and a byte: %v; want Invalid", err)
		}
		if _, err := s.PartialMatch(ctx, "acme", verify.PartialMatchRequest{CertificateID: "c1", CompanyID: "acme", Term: "a" + text}); consent.ErrorCode(err) != consent.Invalid {
			t.Errorf("PartialMatch of 64 KiB and a byte: %v; want Invalid", err)
		}
	})
}
