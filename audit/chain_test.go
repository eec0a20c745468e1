package audit_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/audit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/store/memstore"
	"github.com/consentkit/consentkit/wallet"
)

var ctx = context.Background()

// newService is a Service over memory with the company acme.
func newService(t *testing.T) *consentkit.Service {
	t.Helper()
	st := memstore.New()
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Error(err)
		}
	})
	svc, err := consentkit.NewService(st, consentkit.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme"}); err != nil {
		t.Fatal(err)
	}
	return svc
}

func entriesOf(t *testing.T, svc *consentkit.Service, company string) []*consent.AuditEntry {
	t.Helper()
	out, err := svc.AuditLog(ctx, consent.AuditQuery{CompanyID: company, Limit: consent.MaxAuditPage})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func wantCode(t *testing.T, what string, err error, code consent.Code) {
	t.Helper()
	if got := consent.ErrorCode(err); got != code {
		t.Errorf("%s: %v (code %q), want code %q", what, err, got, code)
	}
}

// CheckChain checks a chain in bounded runs that resume where the last
// one stopped, and says where the chain ends.
func TestCheckChain(t *testing.T) {
	svc := newService(t)
	for i := range 6 {
		if _, err := svc.TopUp(ctx, "acme", wallet.Amount(1000+i), fmt.Sprintf("inv-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	n := int64(len(entriesOf(t, svc, "acme")))
	if n < 7 {
		t.Fatalf("acme has %d entries, want at least 7", n)
	}
	for _, limit := range []int{1, 2, 3, int(n), int(n) + 1, audit.MaxCheck} {
		var runs []audit.Run
		for from := int64(1); ; {
			c, err := audit.CheckChain(ctx, svc.Store(), "acme", from, limit)
			if err != nil {
				t.Fatalf("limit %d, from %d: %v", limit, from, err)
			}
			runs = append(runs, c)
			if c.Checked > int64(limit) || c.From != from || c.Last != from+c.Checked-1 || c.Head != n {
				t.Fatalf("limit %d: run %+v", limit, c)
			}
			if c.Next == 0 {
				break
			}
			if c.Next != c.Last+1 || len(runs) > int(n) {
				t.Fatalf("limit %d: run %+v resumes wrongly", limit, c)
			}
			from = c.Next
		}
		last := runs[len(runs)-1]
		if last.Last != n {
			t.Errorf("limit %d: the runs end at entry %d, want %d", limit, last.Last, n)
		}
		// A limit that divides the chain ends with a full run that says
		// the chain ends, never with an empty run after it.
		if want := (n + int64(limit) - 1) / int64(limit); int64(len(runs)) != want {
			t.Errorf("limit %d: %d runs, want %d", limit, len(runs), want)
		}
	}
	c, err := audit.CheckChain(ctx, svc.Store(), "acme", n+1, 10)
	if err != nil || c.Checked != 0 || c.Next != 0 || c.Last != n {
		t.Errorf("CheckChain from the end = %+v, %v; want nothing checked, the end reached", c, err)
	}
	_, err = audit.CheckChain(ctx, svc.Store(), "acme", n+2, 10)
	wantCode(t, "from past the end", err, consent.Invalid)
	for _, limit := range []int{0, -1, audit.MaxCheck + 1} {
		_, err = audit.CheckChain(ctx, svc.Store(), "acme", 1, limit)
		wantCode(t, fmt.Sprintf("limit %d", limit), err, consent.Invalid)
	}
	_, err = audit.CheckChain(ctx, svc.Store(), "nobody", 1, 10)
	wantCode(t, "unknown company", err, consent.NotFound)
}

// A chain whose entry was edited behind the store's back is broken at that
// entry, and VerifyChains names each broken chain.
func TestVerifyChainFindsAnEdit(t *testing.T) {
	st := &editing{Store: memstore.New()}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Error(err)
		}
	})
	svc, err := consentkit.NewService(st, consentkit.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"acme", "beta"} {
		if _, err := svc.CreateCompany(ctx, consentkit.CompanyParams{ID: id, Name: id}); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.TopUp(ctx, id, wallet.Dollar, "inv-1"); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := audit.VerifyChains(ctx, svc.Store()); err != nil || n != 4 {
		t.Fatalf("VerifyChains = %d, %v; want 4 entries, intact", n, err)
	}
	st.edit = "beta"
	n, err := audit.VerifyChain(ctx, svc.Store(), "beta")
	var ce *audit.ChainError
	if !errors.As(err, &ce) || ce.CompanyID != "beta" || ce.Seq != 2 || n != 1 {
		t.Errorf("VerifyChain of an edited chain = %d, %v; want entry 2 of beta broken after 1 checked", n, err)
	}
	if _, err := audit.VerifyChains(ctx, svc.Store()); !errors.As(err, &ce) || ce.CompanyID != "beta" {
		t.Errorf("VerifyChains = %v; want beta's chain broken", err)
	}
}

// editing is a store whose reads of the audit log show the action of the
// company's second entry changed, as an edit made in the database would.
type editing struct {
	consent.Store
	edit string
}

func (s *editing) View(ctx context.Context, fn func(consent.Tx) error) error {
	return s.Store.View(ctx, func(tx consent.Tx) error { return fn(editingTx{tx, s.edit}) })
}

type editingTx struct {
	consent.Tx
	edit string
}

func (tx editingTx) AuditEntries(ctx context.Context, q consent.AuditQuery) ([]*consent.AuditEntry, error) {
	out, err := tx.Tx.AuditEntries(ctx, q)
	for _, e := range out {
		if e.CompanyID == tx.edit && e.Seq == 2 {
			e.Action = "wallet.debit"
		}
	}
	return out, err
}
