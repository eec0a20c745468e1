package retain_test

import (
	"errors"
	"testing"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/retain"
	"github.com/consentkit/consentkit/store/memstore"
	"github.com/consentkit/consentkit/wallet"
)

// A retention that a store runs again, refused on its second run, is
// audited as the refusal it is: no charge, no retention date, nothing of
// the first, rolled-back run. Between the runs another call takes the
// wallet's last funds (the refusal is the charge's) or retains the same
// session (the refusal comes before the charge).
func TestRerunRefusedAuditsNoRetention(t *testing.T) {
	price := 10 * wallet.Cent
	retainOne := func(r *retain.Service, id string) error { _, err := r.Retain(ctx, "acme", "acme", id); return err }
	certificates := func(r *retain.Service, id string) error {
		_, err := r.RetainCertificates(ctx, "acme", "acme", id)
		return err
	}
	for _, tc := range []struct {
		name, action string
		call         func(r *retain.Service, session string) error
		same         bool // between the runs s1 is retained, else s2
		want         error
	}{
		{"Retain/Emptied", consent.AuditRetainSingle, retainOne, false, wallet.ErrInsufficientFunds},
		{"Retain/RetainedMeanwhile", consent.AuditRetainSingle, retainOne, true, consent.ErrConflict},
		{"RetainCertificates/Emptied", consent.AuditRetainCertificate, certificates, false, wallet.ErrInsufficientFunds},
		{"RetainCertificates/RetainedMeanwhile", consent.AuditRetainCertificate, certificates, true, consent.ErrConflict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &teststore.Rerun{Store: memstore.New()}
			svc, err := consentkit.NewService(st, consentkit.Config{})
			check(t)(svc, err)
			check(t)(svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme"}))
			check(t)(svc.AddProperty(ctx, consentkit.PropertyParams{ID: "web", CompanyID: "acme", Name: "Form"}))
			fund := price // one retention's worth
			if tc.same {
				fund = 2 * price
			}
			check(t)(svc.TopUp(ctx, "acme", fund, ""))
			for _, id := range []string{"s1", "s2"} {
				check(t)(svc.StartSession(ctx, consentkit.SessionParams{ID: id, CompanyID: "acme", PropertyID: "web"}))
				check(t)(svc.IssueCertificate(ctx, consentkit.CertificateParams{ID: "c-" + id, CompanyID: "acme", PropertyID: "web", SessionID: id,
					Records: []consent.Record{{Text: "I agree.", OptInAt: time.Now()}}}))
			}
			r := retain.New(svc)
			st.Between = func() {
				other := "s2"
				if tc.same {
					other = "s1"
				}
				if err := tc.call(r, other); err != nil {
					t.Errorf("between the runs: %v", err)
				}
			}
			if err := tc.call(r, "s1"); !errors.Is(err, tc.want) {
				t.Fatalf("the call run twice: %v; want %v on its second run", err, tc.want)
			}
			es, err := svc.AuditLog(ctx, consent.AuditQuery{CompanyID: "acme", ActionPrefix: tc.action, Target: "s1"})
			check(t)(es, err)
			if tc.same {
				if len(es) != 2 || es[0].Outcome != consent.AuditOK {
					t.Fatalf("audit entries of s1: %+v; want the retention between the runs, then the refusal", es)
				}
				es = es[1:]
			}
			if len(es) != 1 {
				t.Fatalf("%d audit entries of s1's refusal, want one", len(es))
			}
			if e := es[0]; e.Outcome != string(consent.ErrorCode(tc.want)) || e.Detail != "" {
				t.Errorf("the refusal's audit entry: outcome %s, detail %s; want %s and no detail", e.Outcome, e.Detail, consent.ErrorCode(tc.want))
			}
		})
	}
}
