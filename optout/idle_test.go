package optout_test

import (
	"context"
	"testing"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/optout"
	"github.com/consentkit/consentkit/store/memstore"
)

// Opt-outs that revoke nothing new are recorded at most so many a minute
// per company, answered alike beyond that; every opt-out that revokes a
// certificate is recorded (D52).
func TestIdleRecordsBounded(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 22, 10, 30, 0, 0, time.UTC)
	svc, err := consentkit.NewService(memstore.New(), consentkit.Config{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"acme", "other"} {
		if _, err := svc.CreateCompany(ctx, consentkit.CompanyParams{ID: c, Name: c}); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.AddProperty(ctx, consentkit.PropertyParams{ID: c + "-web", CompanyID: c, Name: "Form"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.StartSession(ctx, consentkit.SessionParams{ID: "s1", CompanyID: "acme", PropertyID: "acme-web"}); err != nil {
		t.Fatal(err)
	}
	_, err = svc.IssueCertificate(ctx, consentkit.CertificateParams{ID: "cert-1", CompanyID: "acme", PropertyID: "acme-web",
		SessionID: "s1", Email: "jane@example.com", Records: []consent.Record{{Text: "I agree."}}})
	if err != nil {
		t.Fatal(err)
	}
	o := optout.New(svc).LimitIdleRecords(3)
	records := func(company string) int {
		t.Helper()
		var n int
		err := svc.Store().View(ctx, func(tx consent.Tx) error {
			list, err := tx.Revocations(ctx, company)
			n = len(list)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	optOut := func(company, email string) []string {
		t.Helper()
		res, err := o.OptOut(ctx, optout.Request{CompanyID: company, Email: email, ClientIP: "203.0.113.9"})
		if err != nil {
			t.Fatal(err)
		}
		return res.CertificateIDs
	}

	for range 5 {
		if ids := optOut("acme", "nobody@example.com"); len(ids) != 0 {
			t.Fatalf("an opt-out matching nothing revoked %v", ids)
		}
	}
	if n := records("acme"); n != 3 {
		t.Errorf("5 opt-outs matching nothing left %d records, want the budget of 3", n)
	}
	if ids := optOut("acme", "jane@example.com"); len(ids) != 1 || records("acme") != 4 {
		t.Errorf("an opt-out revoking a certificate over the budget: %v, %d records; want it revoked and recorded", ids, records("acme"))
	}
	if ids := optOut("acme", "jane@example.com"); len(ids) != 1 || records("acme") != 4 {
		t.Errorf("the same opt-out again: %v, %d records; want the same answer, nothing recorded", ids, records("acme"))
	}
	optOut("other", "nobody@example.com")
	if n := records("other"); n != 1 {
		t.Errorf("another company: %d records, want 1 (a budget of its own)", n)
	}
	now = now.Add(time.Minute)
	optOut("acme", "nobody@example.com")
	if n := records("acme"); n != 5 {
		t.Errorf("a minute later: %d records, want 5", n)
	}
	entries, err := svc.AuditLog(ctx, consent.AuditQuery{CompanyID: "acme", ActionPrefix: consent.AuditOptOut})
	if err != nil || len(entries) != 5 {
		t.Errorf("audit entries of opt-outs: %d, %v; want one a record, 5", len(entries), err)
	}
}

// A store that runs an opt-out's transaction again does not spend its
// idle budget twice: with a budget of one, the first opt-out that matches
// nothing is recorded, the second is not.
func TestIdleBudgetSpentOnceACall(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 22, 10, 30, 0, 0, time.UTC)
	st := &teststore.Rerun{Store: memstore.New()}
	svc, err := consentkit.NewService(st, consentkit.Config{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	o := optout.New(svc).LimitIdleRecords(1)
	for range 2 {
		st.Between = func() {} // its transaction run twice
		if _, err := o.OptOut(ctx, optout.Request{CompanyID: "acme", Email: "nobody@example.com", ClientIP: "203.0.113.9"}); err != nil {
			t.Fatal(err)
		}
	}
	var n int
	if err := svc.Store().View(ctx, func(tx consent.Tx) error {
		list, err := tx.Revocations(ctx, "acme")
		n = len(list)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("two idle opt-outs, each run twice, with a budget of one: %d records, want 1", n)
	}
}
