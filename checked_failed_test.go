package consentkit_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/store"
	"github.com/consentkit/consentkit/store/pgstore"
	"github.com/consentkit/consentkit/store/sqlitestore"
	"github.com/consentkit/consentkit/wallet"
)

// A write that a store refused ends the transaction on every store (see
// consent.Tx): PostgreSQL aborts a transaction at its failed statement,
// so a function that swallowed the error and wrote on would commit its
// later writes on the memory store and SQLite only. The checked Tx
// remembers the failed write, and Update commits nothing when the
// function returns nil after it. A refusal that changes nothing — no row
// to change, a short balance — aborts nothing on any store, and leaves the
// transaction as it was.

// refusedWrite is a write that the store refuses, with the error it gives.
type refusedWrite struct {
	name  string
	write func(tx consent.Tx) error
	want  error
}

// checkedFixture is the checked store of a Service over a new store of
// open, holding fixture's rows.
func checkedFixture(t *testing.T, open func(tb testing.TB) consent.Store) consent.Store {
	t.Helper()
	svc, err := consentkit.NewService(open(t), consentkit.Config{})
	must(t, err)
	s := svc.Store()
	fixture(t, s)
	return s
}

// failedWrites are writes that the store refuses once fixture has run:
// a taken id (Conflict) and a missing parent (NotFound).
var failedWrites = []refusedWrite{
	{"taken id", func(tx consent.Tx) error {
		return tx.CreateCompany(ctx, &consent.Company{ID: "acme", Name: "Acme again", CreatedAt: t0})
	}, consent.ErrConflict},
	{"missing parent", func(tx consent.Tx) error {
		return tx.CreateProperty(ctx, &consent.Property{ID: "p9", CompanyID: "nobody", Name: "P", CreatedAt: t0})
	}, consent.ErrNotFound},
}

func companyExists(t *testing.T, s consent.Store, id string) bool {
	t.Helper()
	var found bool
	mustView(t, s, func(tx consent.Tx) error {
		_, err := tx.Company(ctx, id)
		if err != nil && !errors.Is(err, consent.ErrNotFound) {
			return err
		}
		found = err == nil
		return nil
	})
	return found
}

func TestFailedWriteEndsTransaction(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(tb testing.TB) consent.Store) {
		for _, c := range failedWrites {
			t.Run(c.name, func(t *testing.T) {
				s := checkedFixture(t, open)
				var first, later, read error
				err := s.Update(ctx, func(tx consent.Tx) error {
					first = c.write(tx) // swallowed
					later = tx.CreateCompany(ctx, &consent.Company{ID: "later", Name: "Later", CreatedAt: t0})
					_, read = tx.Company(ctx, "acme")
					return nil
				})
				t.Logf("failed write: %v; later write: %v; read: %v; Update: %v", first, later, read, err)
				if !errors.Is(first, c.want) {
					t.Fatalf("failed write: %v, want %v", first, c.want)
				}
				if !errors.Is(err, c.want) || !strings.Contains(err.Error(), "transaction failed") {
					t.Errorf("Update: %v, want the transaction failed with the write's error (%v)", err, c.want)
				}
				if companyExists(t, s, "later") {
					t.Error("the write after the failed one was committed")
				}
			})
		}
	})
}

// Refusals that change nothing leave the transaction as it was, on every
// store: a function that goes on after one commits what it wrote after.
func TestRefusalThatChangesNothingGoesOn(t *testing.T) {
	refusals := []refusedWrite{
		{"no row to change", func(tx consent.Tx) error {
			return tx.UpdateProperty(ctx, &consent.Property{ID: "nowhere", CompanyID: "acme", Name: "P", CreatedAt: t0})
		}, consent.ErrNotFound},
		{"short balance", func(tx consent.Tx) error {
			_, err := tx.Debit(ctx, newEntry("too-much", "acme", wallet.ExactMatch, wallet.Dollar, t0))
			return err
		}, wallet.ErrInsufficientFunds},
	}
	teststore.Each(t, func(t *testing.T, open func(tb testing.TB) consent.Store) {
		for _, c := range refusals {
			t.Run(c.name, func(t *testing.T) {
				s := checkedFixture(t, open)
				var first error
				err := s.Update(ctx, func(tx consent.Tx) error {
					first = c.write(tx)
					return tx.CreateCompany(ctx, &consent.Company{ID: "later", Name: "Later", CreatedAt: t0})
				})
				if !errors.Is(first, c.want) {
					t.Fatalf("the refusal: %v, want %v", first, c.want)
				}
				if err != nil || !companyExists(t, s, "later") {
					t.Errorf("Update: %v; the write after a refusal that changes nothing was not committed", err)
				}
			})
		}
	})
}

// TestFailedWriteEndsTransactionOnError: a function that returns the
// failed write's error rolls back as ever, with that error unchanged.
func TestFailedWriteEndsTransactionOnError(t *testing.T) {
	overStores(t, func(t *testing.T, s consent.Store) {
		fixture(t, s)
		var first error
		err := s.Update(ctx, func(tx consent.Tx) error {
			first = failedWrites[0].write(tx)
			return first
		})
		if !errors.Is(err, first) || err.Error() != first.Error() || !errors.Is(err, consent.ErrConflict) {
			t.Errorf("Update: %v, want the write's error %v as it was", err, first)
		}
		// The store's next transaction is a new one.
		mustUpdate(t, s, func(tx consent.Tx) error {
			return tx.CreateCompany(ctx, &consent.Company{ID: "next", Name: "Next", CreatedAt: t0})
		})
	})
}

// TestFailedWriteSparesBatch: in a group-commit batch, a function that
// swallows a failed write and returns nil must neither commit its later
// writes nor break the batch for the caller that runs after it.
func TestFailedWriteSparesBatch(t *testing.T) {
	gc := store.GroupCommit{MaxBatch: 2, Delay: 2 * time.Second} // a batch runs when both have joined
	for _, k := range []struct {
		name  string
		open  func(tb testing.TB) consent.Store
		stats func(consent.Store) (int64, int64)
	}{
		{"sqlite", func(tb testing.TB) consent.Store {
			return teststore.SQLiteConfig(tb, sqlitestore.Config{GroupCommit: gc})
		}, func(s consent.Store) (int64, int64) { return s.(*sqlitestore.Store).GroupStats() }},
		{"postgres", func(tb testing.TB) consent.Store {
			return teststore.PostgresConfig(tb, pgstore.Config{GroupCommit: gc})
		}, func(s consent.Store) (int64, int64) { return s.(*pgstore.Store).GroupStats() }},
	} {
		t.Run(k.name, func(t *testing.T) {
			for _, c := range failedWrites {
				t.Run(c.name, func(t *testing.T) {
					raw := k.open(t)
					svc, err := consentkit.NewService(raw, consentkit.Config{})
					must(t, err)
					s := svc.Store()
					fixture(t, s)
					b0, m0 := k.stats(raw)
					var (
						wg                         sync.WaitGroup
						swallower, later, innocent error
					)
					wg.Add(1)
					go func() { // first in the batch: swallows its failed write
						defer wg.Done()
						swallower = s.Update(ctx, func(tx consent.Tx) error {
							_ = c.write(tx)
							later = tx.CreateCompany(ctx, &consent.Company{ID: "swallower", Name: "S", CreatedAt: t0})
							return nil
						})
					}()
					time.Sleep(200 * time.Millisecond) // the first has opened the batch
					innocent = s.Update(ctx, func(tx consent.Tx) error {
						return tx.CreateCompany(ctx, &consent.Company{ID: "innocent", Name: "I", CreatedAt: t0})
					})
					wg.Wait()
					b1, m1 := k.stats(raw)
					t.Logf("swallower: %v (its later write: %v); innocent caller: %v; batches %d, calls %d",
						swallower, later, innocent, b1-b0, m1-m0)
					if innocent != nil {
						t.Errorf("the innocent caller failed: %v", innocent)
					}
					if !companyExists(t, s, "innocent") {
						t.Error("the innocent caller's write is lost")
					}
					if !errors.Is(swallower, c.want) {
						t.Errorf("swallower's Update: %v, want the failed write's error (%v)", swallower, c.want)
					}
					if companyExists(t, s, "swallower") {
						t.Error("the swallower's write after its failed one was committed")
					}
				})
			}
		})
	}
}
