package httpadapter_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/wallet"
)

// endpointsFail is a store whose transactions, once on is set, refuse to
// read webhook endpoints with a coded (refusal) error, as a store may
// answer a read it cannot serve.
type endpointsFail struct {
	consent.Store
	on *atomic.Bool
}

type endpointsFailTx struct {
	consent.Tx
	on *atomic.Bool
}

func (s endpointsFail) Update(ctx context.Context, fn func(consent.Tx) error) error {
	return s.Store.Update(ctx, func(tx consent.Tx) error { return fn(endpointsFailTx{tx, s.on}) })
}

func (t endpointsFailTx) WebhookEndpoints(ctx context.Context, companyID string) ([]*consent.WebhookEndpoint, error) {
	if t.on.Load() {
		return nil, consent.Errorf(consent.Conflict, "endpoints busy")
	}
	return t.Tx.WebhookEndpoints(ctx, companyID)
}

// TestLowBalanceEventFailureAfterDebit: the low-balance event of a charge
// fails after the debit; the verification is refused, so it must not be
// charged (D3).
// A low-balance event that fails after the debit fails the call, charging
// nothing, and a retry with its key is served (D3, D40): the failure
// was a refusal, committed with the charge and replayed for good.
func TestLowBalanceEventFailureChargesNothing(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		on := new(atomic.Bool)
		st := endpointsFail{open(t), on}
		e := setup(t, st)
		svc, err := consentkit.NewService(st, consentkit.Config{Now: e.clock.Now, LowBalanceThreshold: 99 * wallet.Cent})
		must(t, err)
		e.svc = svc
		h := e.handler(t, httpadapter.Config{})
		on.Store(true)
		before := e.balance(t, "acme")
		match := keyed(request{path: "/verify/match", token: acmeToken, body: matchBody("cert-1", "acme", consentText)}, "low-1")
		rec := serve(h, match)
		if rec.Code != http.StatusInternalServerError {
			t.Errorf("a match whose low-balance event failed: %d %s; want 500, a storage failure", rec.Code, rec.Body)
		}
		if got := e.balance(t, "acme"); got != before {
			t.Errorf("refused with %d %s, yet charged: balance %v -> %v; ledger %d exact-match entries",
				rec.Code, rec.Body, before, got, len(e.ledger(t, "acme", wallet.ExactMatch)))
		}
		// The refusal (a 409) was stored with the key: the retry cannot
		// succeed, though the call was paid for.
		on.Store(false)
		if again := serve(h, match); again.Code != http.StatusOK {
			t.Errorf("retry with the key after the failure: %d replayed=%q %s; want a 200",
				again.Code, again.Header().Get(httpadapter.ReplayedHeader), again.Body)
		}
	})
}

// TestBatchLowBalanceEventFailureAfterCharge: in a Retain API batch the
// low-balance event of an entry's charge fails; the entry is answered as
// failed and not retained, so it must not be charged (D23).
// The same in a batch: no entry is answered failed yet charged (D23).
func TestBatchLowBalanceEventFailureChargesNothing(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		on := new(atomic.Bool)
		st := endpointsFail{open(t), on}
		e := setup(t, st)
		svc, err := consentkit.NewService(st, consentkit.Config{Now: e.clock.Now, LowBalanceThreshold: 95 * wallet.Cent})
		must(t, err)
		e.svc = svc
		h := e.handler(t, httpadapter.Config{})
		on.Store(true)
		before := e.balance(t, "acme")
		rec := serve(h, request{path: "/api/integrations/acme/retain/batch", token: acmeToken, body: batchBody("s2")})
		if rec.Code != http.StatusInternalServerError || strings.Contains(rec.Body.String(), `"retained"`) {
			t.Errorf("a batch whose low-balance event failed: %d %s; want 500, a storage failure, no entry answered", rec.Code, rec.Body)
		}
		if got, n := e.balance(t, "acme"), len(e.ledger(t, "acme", wallet.RetainBatch)); got != before || n != 0 {
			t.Errorf("s2 answered as failed (%d %s), yet charged: balance %v -> %v, %d retain_batch entries",
				rec.Code, rec.Body, before, got, n)
		}
	})
}
