package storetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"testing"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/wallet"
)

// testConcurrentUpdatesFailAlone: concurrent Update calls, some of which
// fail after writing (by returning an error, by a refused statement, by a
// cancelled context) and some of which make no statement at all (and
// succeed or fail), leave exactly the work of the others, each visible as
// soon as its Update returns. On the SQL stores these calls share
// group-commit transactions: one call's failure must roll back only its own
// work.
func testConcurrentUpdatesFailAlone(t *testing.T, s consent.Store) {
	funded(t, s)
	const kinds, n = 6, 60
	kept := map[string]bool{}
	concurrently(n, func(i int, locked func(func())) {
		id := fmt.Sprint("d", i)
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		err := s.Update(cctx, func(tx consent.Tx) error {
			switch i % kinds {
			case 4: // no statement, and succeeds
				return nil
			case 5: // no statement, and fails
				return errBoom
			}
			if _, err := tx.Debit(cctx, entry(id, "acme", wallet.ExactMatch, wallet.Cent, t0)); err != nil {
				return err
			}
			switch i % kinds {
			case 1: // fails by its own choice
				return errBoom
			case 2: // a refused statement: the company exists
				return tx.CreateCompany(cctx, &consent.Company{ID: "acme", Name: "again", CreatedAt: t0})
			case 3: // its caller gives up before it ends
				cancel()
			}
			return nil
		})
		switch i % kinds {
		case 0:
			if err != nil {
				t.Errorf("%s: %v", id, err)
				return
			}
			// Visible to a new transaction as soon as Update returns.
			view(t, s, func(tx consent.Tx) error {
				entries, err := tx.Ledger(ctx, "acme")
				for _, e := range entries {
					if e.ID == id {
						return err
					}
				}
				t.Errorf("%s: not in the ledger when its Update returned", id)
				return err
			})
			locked(func() {
				kept[id] = true
			})
		case 1, 5:
			if !errors.Is(err, errBoom) {
				t.Errorf("%s: %v, want its own error", id, err)
			}
		case 2:
			wantCode(t, id, err, consent.Conflict)
		case 3:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("%s: %v, want context.Canceled", id, err)
			}
		case 4:
			if err != nil {
				t.Errorf("%s: %v", id, err)
			}
		}
	})
	view(t, s, func(tx consent.Tx) error {
		entries, err := tx.Ledger(ctx, "acme")
		if err != nil {
			return err
		}
		debits := 0
		for _, e := range entries {
			if e.Kind == wallet.TopUp {
				continue
			}
			debits++
			if !kept[e.ID] {
				t.Errorf("ledger entry %s belongs to a failed Update", e.ID)
			}
		}
		if debits != len(kept) || len(kept) != n/kinds {
			t.Errorf("%d debits in the ledger, %d kept, want %d", debits, len(kept), n/kinds)
		}
		bal, err := tx.Balance(ctx, "acme")
		if want := 10*wallet.Dollar - wallet.Amount(n/kinds)*wallet.Cent; bal != want {
			t.Errorf("balance %v, want %v", bal, want)
		}
		c, err2 := tx.Company(ctx, "acme")
		if err2 == nil && c.Name != "acme" {
			t.Errorf("company renamed to %q by a failed Update", c.Name)
		}
		return errors.Join(err, err2)
	})
}

// testConcurrentDirectAndBehind: concurrent calls each make a row of their
// own (a session) and charge and audit themselves, in one order or the
// other, and every third fails after both. On the SQL stores the charge and
// the audit entry are written behind and the session is written at once
// (the call's savepoint is made before it): exactly the kept calls' sessions,
// ledger entries and audit entries stay.
func testConcurrentDirectAndBehind(t *testing.T, s consent.Store) {
	funded(t, s)
	const workers, each = 12, 6
	kept := map[string]bool{}
	concurrently(workers, func(w int, locked func(func())) {
		for i := range each {
			id := fmt.Sprintf("c-%d-%d", w, i)
			fail := (w+i)%3 == 0
			err := s.Update(ctx, func(tx consent.Tx) error {
				direct := func() error { return tx.CreateSession(ctx, session(id, "acme", "acme-web")) }
				behind := func() error {
					if _, err := tx.Debit(ctx, entry(id, "acme", wallet.SessionRetention, wallet.Cent, t0)); err != nil {
						return err
					}
					return tx.AppendAudit(ctx, &consent.AuditEntry{CompanyID: "acme", At: t0, Actor: "t",
						Action: consent.AuditRetainSession, Target: id, Outcome: "ok"})
				}
				first, second := direct, behind
				if i%2 == 1 {
					first, second = behind, direct
				}
				if err := first(); err != nil {
					return err
				}
				if err := second(); err != nil {
					return err
				}
				if fail {
					return errBoom
				}
				return nil
			})
			if keptCall(t, "call "+id, fail, err, errBoom) {
				locked(func() {
					kept[id] = true
				})
			}
		}
	})
	var ids []string
	for w := range workers {
		for i := range each {
			ids = append(ids, fmt.Sprintf("c-%d-%d", w, i))
		}
	}
	for i, got := range sessions(t, s, ids...) {
		if (got != nil) != kept[ids[i]] {
			t.Errorf("session %s stored: %v, its call kept: %v", ids[i], got != nil, kept[ids[i]])
		}
	}
	charged := map[string]bool{}
	for _, e := range ledgerOf(t, s, "acme") {
		if e.ID != "topup" {
			charged[e.ID] = true
		}
	}
	audited := map[string]bool{}
	view(t, s, func(tx consent.Tx) error {
		entries, err := tx.AuditEntries(ctx, consent.AuditQuery{CompanyID: "acme", Limit: 1000})
		for _, e := range entries {
			audited[e.Target] = true
		}
		return err
	})
	if !maps.Equal(charged, kept) || !maps.Equal(audited, kept) {
		t.Errorf("%d calls kept; %d charged and %d audited, not the same calls", len(kept), len(charged), len(audited))
	}
	if bal := balanceOf(t, s, "acme"); bal != 10*wallet.Dollar-wallet.Amount(len(kept))*wallet.Cent {
		t.Errorf("balance %v after %d kept calls of −0.01", bal, len(kept))
	}
}

// CheckGrouping runs 200 concurrent debits on s, each Update its own, every
// fourth failing after its debit, and checks from stats (a SQL store's
// GroupStats) that they shared transactions when group commit is on —
// fewer batches than calls, and each call run once: undoing a failed call
// must not break its batch and make the others run again — and that none
// ran when it is off; the balance must be exact either way.
func CheckGrouping(t *testing.T, s consent.Store, stats func() (batches, calls int64)) {
	t.Helper()
	funded(t, s)
	b0, c0 := stats()
	const n, failing = 200, 50
	concurrently(n, func(i int, _ func(func())) {
		fail := i%(n/failing) == 0
		err := s.Update(ctx, func(tx consent.Tx) error {
			_, err := tx.Debit(ctx, entry(fmt.Sprint("d", i), "acme", wallet.ExactMatch, wallet.Cent, t0))
			if err == nil && fail {
				err = errBoom
			}
			return err
		})
		if fail && !errors.Is(err, errBoom) || !fail && err != nil {
			t.Errorf("call %d (failing: %v): %v", i, fail, err)
		}
	})
	b1, c1 := stats()
	batches, calls := b1-b0, c1-c0
	switch {
	case calls == 0 && batches == 0:
		t.Logf("group commit off: no batches")
	case calls != n || batches >= n:
		t.Errorf("%d calls ran in %d batches, want %d calls in fewer batches", calls, batches, n)
	default:
		t.Logf("%d calls ran in %d batches", calls, batches)
	}
	view(t, s, func(tx consent.Tx) error {
		bal, err := tx.Balance(ctx, "acme")
		if want := 10*wallet.Dollar - (n-failing)*wallet.Cent; bal != want {
			t.Errorf("balance %v, want %v", bal, want)
		}
		return err
	})
}
