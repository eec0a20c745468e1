package retain_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/retain"
	"github.com/consentkit/consentkit/store"
	"github.com/consentkit/consentkit/store/pgstore"
	"github.com/consentkit/consentkit/verify"
	"github.com/consentkit/consentkit/wallet"
)

// Retentions by every route and verifications of the same certificates,
// at once on PostgreSQL without group commit, never deadlock: a
// verification locks its certificate and then the wallet, and so does
// every retention (it reads the session's certificates before its
// charge), never the wallet first.
func TestRetainAndVerifyLockInOneOrder(t *testing.T) {
	var dl teststore.Deadlocks
	st := pgstore.New(dl.Pool(t, teststore.PostgresURL(t)), pgstore.Config{GroupCommit: store.GroupCommit{Off: true}})
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	const n = 45 // sessions, each with a certificate
	svc, err := consentkit.NewService(st, consentkit.Config{})
	check(t)(svc, err)
	check(t)(svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme"}))
	check(t)(svc.AddProperty(ctx, consentkit.PropertyParams{ID: "web", CompanyID: "acme", Name: "Form"}))
	check(t)(svc.TopUp(ctx, "acme", 100*wallet.Dollar, ""))
	for i := range n {
		id := fmt.Sprint("s", i)
		check(t)(svc.StartSession(ctx, consentkit.SessionParams{ID: id, CompanyID: "acme", PropertyID: "web"}))
		check(t)(svc.IssueCertificate(ctx, consentkit.CertificateParams{ID: "c-" + id, CompanyID: "acme", PropertyID: "web", SessionID: id,
			Records: []consent.Record{{Text: consentText, OptInAt: time.Now()}}}))
	}
	r, v := retain.New(svc), verify.New(svc)
	routes := []func(id string) error{
		func(id string) error { _, err := r.Retain(ctx, "acme", "acme", id); return err },
		func(id string) error { _, err := r.RetainSession(ctx, "acme", "acme", id); return err },
		func(id string) error { _, err := r.RetainCertificates(ctx, "acme", "acme", id); return err },
		func(id string) error {
			res, err := r.RetainBatch(ctx, "acme", "acme", []string{id})
			if err == nil && res.Results[0].Err != nil {
				err = res.Results[0].Err
			}
			return err
		},
	}
	var wg sync.WaitGroup
	for i := range n {
		id := fmt.Sprint("s", i)
		wg.Go(func() {
			for range 3 {
				if _, err := v.Match(ctx, "acme", verify.MatchRequest{CertificateID: "c-" + id, CompanyID: "acme", Consent: consentText}); err != nil {
					t.Errorf("Match of c-%s: %v", id, err)
				}
			}
		})
		wg.Go(func() {
			if err := routes[i%len(routes)](id); err != nil {
				t.Errorf("retention %d of %s: %v", i%len(routes), id, err)
			}
		})
	}
	wg.Wait()
	if got := dl.N.Load(); got > 0 {
		t.Errorf("PostgreSQL broke %d deadlocks between %d retentions and %d verifications", got, n, 3*n)
	}
}
