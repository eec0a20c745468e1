package verify_test

import (
	"errors"
	"testing"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/store/memstore"
	"github.com/consentkit/consentkit/verify"
	"github.com/consentkit/consentkit/wallet"
)

// A paid verification that a store runs again, refused on its second run,
// is audited as the refusal it is: no charge, no validity, nothing of the
// first, rolled-back run. Between the runs another call takes the wallet's
// last funds (the refusal is the charge's) or the consumer opts out (the
// refusal comes before the charge).
func TestRerunRefusedAuditsNoCharge(t *testing.T) {
	price := 15 * wallet.Cent / 10
	match := func(v *verify.Service, cert string) error {
		_, err := v.Match(ctx, "acme", verify.MatchRequest{CertificateID: cert, CompanyID: "acme", Consent: "I agree."})
		return err
	}
	partial := func(v *verify.Service, cert string) error {
		_, err := v.PartialMatch(ctx, "acme", verify.PartialMatchRequest{CertificateID: cert, CompanyID: "acme", Term: "agree"})
		return err
	}
	info := func(v *verify.Service, cert string) error {
		_, err := v.CertificateInfo(ctx, "acme", verify.InfoRequest{CertificateID: cert, CompanyID: "acme", PropertyID: "web"})
		return err
	}
	const first, info1 = `{"verification_type":"first_party"}`, `{"property_id":"web"}`
	for _, tc := range []struct {
		name, action string
		call         func(v *verify.Service, cert string) error
		optOut       bool // between the runs c1 is revoked, else c2 verified
		want         error
		detail       string // the refusal's
	}{
		{"Match/Emptied", consent.AuditVerifyMatch, match, false, wallet.ErrInsufficientFunds, first},
		{"Match/OptedOut", consent.AuditVerifyMatch, match, true, consent.ErrOptedOut, first},
		{"PartialMatch/Emptied", consent.AuditVerifyPartialMatch, partial, false, wallet.ErrInsufficientFunds, first},
		{"CertificateInfo/Emptied", consent.AuditVerifyCertificateInfo, info, false, wallet.ErrInsufficientFunds, info1},
		{"CertificateInfo/OptedOut", consent.AuditVerifyCertificateInfo, info, true, consent.ErrOptedOut, info1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &teststore.Rerun{Store: memstore.New()}
			prices := wallet.DefaultPrices()
			prices.CertificateInfo = price
			svc, err := consentkit.NewService(st, consentkit.Config{Prices: &prices})
			steps := []error{err}
			_, err = svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme"})
			steps = append(steps, err)
			_, err = svc.AddProperty(ctx, consentkit.PropertyParams{ID: "web", CompanyID: "acme", Name: "Form"})
			steps = append(steps, err)
			_, err = svc.TopUp(ctx, "acme", price, "") // one call's worth
			steps = append(steps, err)
			for _, id := range []string{"c1", "c2"} {
				_, err = svc.StartSession(ctx, consentkit.SessionParams{ID: "s-" + id, CompanyID: "acme", PropertyID: "web"})
				steps = append(steps, err)
				_, err = svc.IssueCertificate(ctx, consentkit.CertificateParams{ID: id, CompanyID: "acme", PropertyID: "web", SessionID: "s-" + id,
					Records: []consent.Record{{Text: "I agree.", OptInAt: time.Now()}}})
				steps = append(steps, err)
			}
			for _, err := range steps {
				if err != nil {
					t.Fatal(err)
				}
			}
			v := verify.New(svc)
			st.Between = func() {
				err := tc.call(v, "c2")
				if tc.optOut {
					err = svc.Store().Update(ctx, func(tx consent.Tx) error { return tx.RevokeCertificate(ctx, "c1", time.Now()) })
				}
				if err != nil {
					t.Errorf("between the runs: %v", err)
				}
			}
			if err := tc.call(v, "c1"); !errors.Is(err, tc.want) {
				t.Fatalf("the call run twice: %v; want %v on its second run", err, tc.want)
			}
			es, err := svc.AuditLog(ctx, consent.AuditQuery{CompanyID: "acme", ActionPrefix: tc.action, Target: "c1"})
			if err != nil {
				t.Fatal(err)
			}
			if len(es) != 1 {
				t.Fatalf("%d audit entries of c1, want the refusal's alone", len(es))
			}
			if e := es[0]; e.Outcome != string(consent.ErrorCode(tc.want)) || e.Detail != tc.detail {
				t.Errorf("the refusal's audit entry: outcome %s, detail %s; want %s, %s", e.Outcome, e.Detail, consent.ErrorCode(tc.want), tc.detail)
			}
		})
	}
}
