package retain

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/audit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/wallet"
	"github.com/consentkit/consentkit/webhook"
)

// oneByOne is RetainBatch as it was before it was made set-wise: keep
// and an audit entry for each entry in turn, each a statement or more of
// its own. The set-wise batch must answer and store exactly what it does.
func (s *Service) oneByOne(ctx context.Context, companyID string, sessionIDs []string) (*BatchResult, error) {
	r := rule{kind: wallet.RetainBatch, action: consent.AuditRetainBatch, video: true}
	return consentkit.Paid(ctx, s.svc, nil, func(tx consent.Tx) (*BatchResult, error) {
		res := &BatchResult{Results: make([]BatchEntry, len(sessionIDs))}
		for i, id := range sessionIDs {
			e := BatchEntry{SessionID: id}
			var kept *Retention
			if e.Err = consent.CheckID("session_id", id); e.Err == nil {
				kept, e.Err = s.keep(ctx, tx, companyID, id, r)
			}
			audit := consentkit.AuditParams{CompanyID: companyID, Action: r.action, Target: id, Err: e.Err,
				Detail: map[string]any{"index": i}}
			switch code := consent.ErrorCode(e.Err); code {
			case "":
				e.Status = StatusQueued
				res.Retained++
				res.TotalCost += kept.Charged
				audit.Detail = retentionDetail(kept, r)
			case consent.Internal:
				return nil, e.Err
			default:
				res.Failed++
			}
			if !consent.ValidID(id) {
				audit.Target = ""
			}
			if err := s.svc.Audit(ctx, tx, audit); err != nil {
				return nil, err
			}
			res.Results[i] = e
		}
		var err error
		res.Balance, err = tx.Balance(ctx, companyID)
		return res, err
	})
}

// ticker is a clock that moves a microsecond at each reading, so that two
// runs read the same times only when they read the clock at the same
// points, as often.
type ticker struct {
	mu sync.Mutex
	t  time.Time
}

func (c *ticker) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Microsecond)
	return c.t
}

// batchWorld is one store with the fixture of TestBatchSetWise.
type batchWorld struct {
	st    consent.Store
	svc   *consentkit.Service
	r     *Service
	clock *ticker
	head  int64 // acme's audit head before the batches
}

func newBatchWorld(t *testing.T, st consent.Store, prices *wallet.Prices) *batchWorld {
	t.Helper()
	clk := &ticker{t: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)}
	svc, err := consentkit.NewService(st, consentkit.Config{Now: clk.Now, Prices: prices, LowBalanceThreshold: 30 * wallet.Cent})
	if err != nil {
		t.Fatal(err)
	}
	w := &batchWorld{st: st, svc: svc, r: New(svc), clock: clk}
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []string{"acme", "other"} {
		must(svc.CreateCompany(ctx, consentkit.CompanyParams{ID: c, Name: c}))
		must(svc.AddProperty(ctx, consentkit.PropertyParams{ID: c + "-web", CompanyID: c, Name: "Form"}))
	}
	endpoints := webhook.Endpoints{Service: svc}
	for _, ep := range []webhook.Params{
		{ID: "ep-all", CompanyID: "acme", URL: "https://hooks.example.com/all", Events: []string{consent.EventSessionRetained, consent.EventWalletLowBalance}},
		{ID: "ep-off", CompanyID: "acme", URL: "https://hooks.example.com/off", Events: []string{consent.EventSessionRetained}},
		{ID: "ep-low", CompanyID: "acme", URL: "https://hooks.example.com/low", Events: []string{consent.EventWalletLowBalance}},
		{ID: "ep-other", CompanyID: "other", URL: "https://hooks.example.com/other", Events: consent.EventTypes},
	} {
		ep.Secret = "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" // fixed: the two worlds must match
		must(endpoints.Add(ctx, ep))
	}
	must(nil, endpoints.SetDisabled(ctx, "acme", "ep-off", true))
	for i := range 10 {
		must(svc.StartSession(ctx, consentkit.SessionParams{ID: fmt.Sprintf("a%d", i), CompanyID: "acme", PropertyID: "acme-web"}))
	}
	must(svc.StartSession(ctx, consentkit.SessionParams{ID: "o1", CompanyID: "other", PropertyID: "other-web"}))
	must(svc.TopUp(ctx, "acme", wallet.Dollar, "fixture"))
	must(w.r.Retain(ctx, "acme", "acme", "a3"))          // retained before the batch
	must(nil, st.Update(ctx, func(tx consent.Tx) error { // purged before the batch
		ses, err := tx.Session(ctx, "a4")
		if err != nil {
			return err
		}
		ses.RetentionStatus = consent.RetentionExpired
		return tx.UpdateSession(ctx, ses)
	}))
	// 0.55 left: five retentions at 0.1, the third taking the wallet below
	// the threshold of 0.3.
	must(nil, st.Update(ctx, func(tx consent.Tx) error {
		bal, err := tx.Balance(ctx, "acme")
		if err != nil {
			return err
		}
		_, err = tx.Debit(ctx, &wallet.Entry{ID: "le-fixture", CompanyID: "acme", Kind: wallet.ExactMatch,
			Amount: bal - 55*wallet.Cent, CreatedAt: clk.Now()})
		return err
	}))
	w.head = w.auditHead(t)
	return w
}

func (w *batchWorld) auditHead(t *testing.T) int64 {
	t.Helper()
	var h *consent.AuditHead
	if err := w.st.View(ctx, func(tx consent.Tx) error {
		var err error
		h, err = tx.AuditHead(ctx, "acme")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return h.Seq
}

// entryOutcome is what a batch entry says, its error told by code and
// message (and, for insufficient funds, the amounts).
type entryOutcome struct {
	SessionID, Status, Code, Message string
	Required, Balance                wallet.Amount
}

type jobView struct {
	Kind, Key         string
	Payload           string
	RunAfter, Created time.Time
	Attempts          int
	Endpoint, Event   string
}

// state is everything a batch answers and stores, its random ids (ledger
// entries, webhook messages) left out.
type state struct {
	Retained, Failed int
	TotalCost        wallet.Amount
	Balance          wallet.Amount
	Entries          []entryOutcome
	Ledger           []*wallet.Entry
	Sessions         []*consent.Session
	Jobs             []jobView
	Audit            []*consent.AuditEntry
	ClockReads       time.Time
}

func (w *batchWorld) state(t *testing.T, res *BatchResult) *state {
	t.Helper()
	st := &state{Retained: res.Retained, Failed: res.Failed, TotalCost: res.TotalCost, Balance: res.Balance}
	for _, e := range res.Results {
		o := entryOutcome{SessionID: e.SessionID, Status: e.Status}
		if e.Err != nil {
			o.Code, o.Message = string(consent.ErrorCode(e.Err)), e.Err.Error()
			if ife := (*wallet.InsufficientFundsError)(nil); errors.As(e.Err, &ife) {
				o.Required, o.Balance = ife.Required, ife.Balance
			}
		}
		st.Entries = append(st.Entries, o)
	}
	err := w.st.Update(ctx, func(tx consent.Tx) error {
		var err error
		if st.Ledger, err = tx.Ledger(ctx, "acme"); err != nil {
			return err
		}
		for _, e := range st.Ledger {
			e.ID = ""
		}
		for _, id := range []string{"a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9", "o1"} {
			ses, err := tx.Session(ctx, id)
			if err != nil {
				return err
			}
			st.Sessions = append(st.Sessions, ses)
		}
		if st.Audit, err = tx.AuditEntries(ctx, consent.AuditQuery{CompanyID: "acme", AfterSeq: w.head, Limit: 1000}); err != nil {
			return err
		}
		for _, e := range st.Audit {
			e.PrevHash, e.Hash = consent.Digest{}, consent.Digest{} // the fixture's chains differ by its random ids
		}
		far := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
		for {
			j, err := tx.LeaseJob(ctx, []string{consent.JobConvert, consent.JobWebhook}, "t", far, far.Add(time.Hour))
			if consent.ErrorCode(err) == consent.NotFound {
				break
			}
			if err != nil {
				return err
			}
			v := jobView{Kind: j.Kind, Key: j.Key, Payload: string(j.Payload), RunAfter: j.RunAfter, Created: j.CreatedAt, Attempts: j.Attempts}
			if j.Kind == consent.JobWebhook {
				var m consent.WebhookMessage
				if err := json.Unmarshal(j.Payload, &m); err != nil {
					return err
				}
				v.Key, v.Payload, v.Endpoint, v.Event = "", m.Body, m.EndpointID, m.Type
			}
			st.Jobs = append(st.Jobs, v)
		}
		slices.SortFunc(st.Jobs, func(a, b jobView) int {
			return cmp.Or(a.RunAfter.Compare(b.RunAfter), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Key, b.Key),
				cmp.Compare(a.Endpoint, b.Endpoint))
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	st.ClockReads = w.clock.Now()
	if _, err := audit.VerifyChain(ctx, w.svc.Store(), "acme"); err != nil {
		t.Errorf("audit chain after the batch: %v", err)
	}
	return st
}

// TestBatchSetWise: on every store, the set-wise batch answers and stores
// what the batch did one entry at a time — results and messages, charges,
// ledger, sessions, conversion jobs, webhook messages (low-balance ones
// included), audit entries — reading the clock at the same points.
func TestBatchSetWise(t *testing.T) {
	ids := []string{"a0", "not an id!", "a1", "nope", "o1", "a3", "a4", "a1", "a2", "a5",
		"a6", "a7", "a0", "a8", "", "a9"}
	zero := wallet.DefaultPrices()
	zero.RetainBatch = 0
	prices := []struct {
		name   string
		prices *wallet.Prices
	}{{"priced", nil}, {"free", &zero}}
	teststore.Each(t, func(t *testing.T, open func(tb testing.TB) consent.Store) {
		for _, p := range prices {
			t.Run(p.name, func(t *testing.T) {
				ref, set := newBatchWorld(t, open(t), p.prices), newBatchWorld(t, open(t), p.prices)
				rctx := consentkit.WithRequestID(consentkit.WithActor(ctx, "tok_batch"), "req-batch")
				for round := range 2 { // the second finds everything retained or unpaid
					want, err := ref.r.oneByOne(rctx, "acme", ids)
					if err != nil {
						t.Fatal(err)
					}
					got, err := set.r.RetainBatch(rctx, "acme", "acme", ids)
					if err != nil {
						t.Fatal(err)
					}
					if d := gocmp.Diff(ref.state(t, want), set.state(t, got)); d != "" {
						t.Errorf("round %d: set-wise batch differs from one by one (-one by one +set-wise):\n%s", round, d)
					}
					if round == 0 && p.prices == nil && (got.Retained != 5 || got.Failed != 11) {
						t.Errorf("round 0 retained %d and failed %d, want 5 and 11: the fixture no longer tests what it says", got.Retained, got.Failed)
					}
				}
			})
		}
	})
}

var ctx = context.Background()
