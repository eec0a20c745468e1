package insights_test

import (
	"context"
	"testing"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/insights"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/jobs"
	"github.com/consentkit/consentkit/signed"
)

// An id is published once (D46), with one key; a second key under a
// published id is refused at start and at signing. An instance holding
// another key under the published id "k1" must not sign statements under it.
func TestStatementNotSignedUnderAnotherInstancesKeyID(t *testing.T) {
	ctx := context.Background()
	st := teststore.Memory(t)
	a := jobSetup(t, st, insights.Limits{}) // signs with "k1", a key of its own
	if err := a.svc.PublishKeys(ctx); err != nil {
		t.Fatal(err)
	}
	cert := a.issue(t, "s1", []string{`[{"type":4,"timestamp":1000,"data":{"href":"https://acme.example/"}}]`}, "Mozilla/5.0 Firefox/140.0")

	other, _ := signed.NewSigningKey("k1") // another key under the published id
	b, err := consentkit.NewService(st, consentkit.Config{SigningKeys: []signed.SigningKey{other}})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.PublishKeys(ctx); consent.ErrorCode(err) != consent.Conflict {
		t.Fatalf("PublishKeys of another k1: %v; want Conflict", err)
	}
	r, err := jobs.New(jobs.Config{Store: b.Store(), Handlers: []jobs.Handler{insights.Handler(b, insights.Limits{})}, Now: b.Now})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = r.RunOnce(ctx, consent.JobInsights)

	var in *consent.Insights
	var c *consent.Certificate
	if err := st.View(ctx, func(tx consent.Tx) error {
		var err error
		if in, err = tx.Insights(ctx, cert.ID); err != nil {
			return err
		}
		c, err = tx.Certificate(ctx, cert.ID)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var check error
	_ = st.View(ctx, func(tx consent.Tx) error { check = a.svc.CheckInsights(ctx, tx, c, in); return nil })
	if in.Status != consent.InsightsPending || check != nil {
		t.Errorf("an instance whose k1 is not the published k1 ran the insights of %s: status %q (want still pending, "+
			"left to an instance with the published key); CheckInsights = %v", cert.ID, in.Status, check)
	}
}
