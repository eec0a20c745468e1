package retain_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
)

// goneStore lists, besides a session's certificates, one that a purge
// deleted between the listing and the reading, as PostgreSQL's READ
// COMMITTED lets another instance's purge do.
type goneStore struct{ consent.Store }

func (s goneStore) Update(ctx context.Context, fn func(consent.Tx) error) error {
	return s.Store.Update(ctx, func(tx consent.Tx) error { return fn(goneTx{tx}) })
}

type goneTx struct{ consent.Tx }

func (t goneTx) CertificatesBySession(ctx context.Context, sessionID string) ([]string, error) {
	ids, err := t.Tx.CertificatesBySession(ctx, sessionID)
	return append(ids, "cert-purged"), err
}

// A certificate purged after its session's were listed is left out of a
// retention of the others, not a 404 for the whole of it.
func TestRetainCertificatesSkipsOnePurgedMeanwhile(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e := setup(t, goneStore{open(t)}, 0)
		if _, err := e.svc.StartSession(ctx, consentkit.SessionParams{ID: "s1", CompanyID: "acme", PropertyID: "web"}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.AppendEvents(ctx, "s1", json.RawMessage(`[{"type":4,"data":{},"timestamp":1}]`)); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.IssueCertificate(ctx, consentkit.CertificateParams{ID: "c1", CompanyID: "acme", PropertyID: "web", SessionID: "s1",
			Origin: "https://acme.example/quote", Records: []consent.Record{{Text: consentText}}}); err != nil {
			t.Fatal(err)
		}
		r, err := e.retain.RetainCertificates(ctx, "acme", "acme", "s1")
		if err != nil || len(r.CertificateIDs) != 1 || r.CertificateIDs[0] != "c1" {
			t.Errorf("RetainCertificates with a listed certificate purged meanwhile = %+v, %v; want c1 retained", r, err)
		}
	})
}
