package optout_test

import (
	"context"
	"testing"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/optout"
)

// hookStore runs hook once, inside an Update, right after
// CertificatesByEmail answered: the moment PostgreSQL's READ COMMITTED
// lets another transaction (the hourly purge) commit in between.
type hookStore struct {
	consent.Store
	hook func()
}

type hookTx struct {
	consent.Tx
	s *hookStore
}

func (t hookTx) CertificatesByEmail(ctx context.Context, c string, d consent.Digest) ([]string, error) {
	ids, err := t.Tx.CertificatesByEmail(ctx, c, d)
	if h := t.s.hook; h != nil {
		t.s.hook = nil
		h()
	}
	return ids, err
}

func (s *hookStore) Update(ctx context.Context, fn func(consent.Tx) error) error {
	return s.Store.Update(ctx, func(tx consent.Tx) error { return fn(hookTx{tx, s}) })
}

// An opt-out by email that runs while the purge deletes an expired
// certificate of that email revokes the live ones: on PostgreSQL the purge
// can commit between the list of the email's certificates and their
// reading (READ COMMITTED), and the opt-out failed whole, NotFound,
// revoking nothing. Only PostgreSQL lets the purge in between; the other
// stores run one writer at a time.
func TestOptOutRacingPurge(t *testing.T) {
	ctx := context.Background()
	pg := teststore.PostgresWithoutGroupCommit(t)
	hs := &hookStore{Store: pg}
	now := time.Date(2026, 11, 22, 10, 30, 0, 0, time.UTC)
	svc, err := consentkit.NewService(hs, consentkit.Config{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.AddProperty(ctx, consentkit.PropertyParams{ID: "acme-web", CompanyID: "acme", Name: "Form"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id      string
		created time.Time
	}{{"cert-old", now.AddDate(0, 0, -100)}, {"cert-new", now}} {
		if _, err := svc.StartSession(ctx, consentkit.SessionParams{ID: "s-" + c.id, CompanyID: "acme", PropertyID: "acme-web", CreatedAt: c.created}); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.IssueCertificate(ctx, consentkit.CertificateParams{ID: c.id, CompanyID: "acme", PropertyID: "acme-web",
			SessionID: "s-" + c.id, Email: "jane@example.com", CreatedAt: c.created, Records: []consent.Record{{Text: "I agree."}}}); err != nil {
			t.Fatal(err)
		}
	}
	hs.hook = func() { // the purge's certificate batch commits now
		err := pg.Update(ctx, func(tx consent.Tx) error {
			ids, err := tx.PurgeCertificates(ctx, now, 10)
			if err == nil && len(ids) != 1 {
				t.Errorf("purged %v, want cert-old", ids)
			}
			return err
		})
		if err != nil {
			t.Errorf("purge: %v", err)
		}
	}
	res, err := optout.New(svc).OptOut(ctx, optout.Request{CompanyID: "acme", Email: "jane@example.com", ClientIP: "192.0.2.1"})
	if err != nil {
		t.Fatalf("OptOut while the purge removed an expired certificate of the email: %v (code %s); want cert-new revoked", err, consent.ErrorCode(err))
	}
	if len(res.CertificateIDs) != 1 || res.CertificateIDs[0] != "cert-new" {
		t.Errorf("OptOut revoked %v; want [cert-new]", res.CertificateIDs)
	}
	err = pg.View(ctx, func(tx consent.Tx) error {
		c, err := tx.Certificate(ctx, "cert-new")
		if err == nil && !c.Revoked() {
			t.Error("cert-new is not revoked in the store")
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
