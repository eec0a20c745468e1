package storetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/wallet"
)

func testWallet(t *testing.T, s consent.Store) {
	fixture(t, s)
	view(t, s, func(tx consent.Tx) error {
		bal, err := tx.Balance(ctx, "acme")
		if err != nil || bal != 0 {
			t.Errorf("Balance(new company) = %v, %v; want 0", bal, err)
		}
		_, err = tx.Balance(ctx, "nobody")
		wantCode(t, "Balance(unknown)", err, consent.NotFound)
		return nil
	})
	credit := entry("e1", "acme", wallet.TopUp, 50*wallet.Cent, t0)
	debit := entry("e2", "acme", wallet.ExactMatch, 15*wallet.Cent/10, t0.Add(time.Second))
	all := entry("e3", "acme", wallet.RetainSingle, 50*wallet.Cent-15*wallet.Cent/10, t0.Add(2*time.Second))
	update(t, s, func(tx consent.Tx) error {
		if bal, err := tx.Credit(ctx, credit); err != nil || bal != 50*wallet.Cent {
			t.Errorf("Credit = %v, %v; want 0.5", bal, err)
		}
		if bal, err := tx.Debit(ctx, debit); err != nil || bal != 50*wallet.Cent-15*wallet.Cent/10 {
			t.Errorf("Debit = %v, %v; want 0.485", bal, err)
		}
		// A debit of the whole balance is allowed and leaves exactly zero.
		if bal, err := tx.Debit(ctx, all); err != nil || bal != 0 {
			t.Errorf("Debit(all) = %v, %v; want 0", bal, err)
		}
		return nil
	})

	err := s.Update(ctx, func(tx consent.Tx) error {
		_, err := tx.Debit(ctx, entry("e4", "acme", wallet.ExactMatch, 1, t0))
		return err
	})
	var ife *wallet.InsufficientFundsError
	if !errors.As(err, &ife) || ife.Required != 1 || ife.Balance != 0 {
		t.Errorf("Debit on an empty wallet: %v, want InsufficientFundsError{1, 0}", err)
	}
	wantCode(t, "Debit(empty wallet)", err, consent.Payment)
	for _, fn := range []func(consent.Tx) error{
		func(tx consent.Tx) error {
			_, err := tx.Credit(ctx, entry("e5", "nobody", wallet.TopUp, 1, t0))
			return err
		},
		func(tx consent.Tx) error {
			_, err := tx.Debit(ctx, entry("e6", "nobody", wallet.ExactMatch, 1, t0))
			return err
		},
	} {
		wantCode(t, "Credit or Debit of unknown company", s.Update(ctx, fn), consent.NotFound)
	}

	wantRead(t, s, consent.Tx.Ledger, "acme", []*wallet.Entry{credit, debit, all}, "Ledger")
	view(t, s, func(tx consent.Tx) error {
		other, err := tx.Ledger(ctx, "other")
		if err != nil || len(other) != 0 {
			t.Errorf("Ledger(other) = %v, %v; want none", other, err)
		}
		return nil
	})

	// A taken entry id is refused (Conflict) and changes nothing, the
	// balance with the rest: a caller may treat the refusal as one and
	// commit, and the ledger must still explain the balance (D5). (Whether
	// the commit is made is the store's: Postgres refuses to commit a
	// transaction in which a statement failed.)
	topup := entry("e7", "acme", wallet.TopUp, wallet.Dollar, t0.Add(3*time.Second))
	update(t, s, func(tx consent.Tx) error {
		_, err := tx.Credit(ctx, topup)
		return err
	})
	ledger := ledgerOf(t, s, "acme")
	for _, c := range []struct {
		name  string
		write func(tx consent.Tx) (wallet.Amount, error)
	}{
		{"Debit", func(tx consent.Tx) (wallet.Amount, error) {
			return tx.Debit(ctx, entry(credit.ID, "acme", wallet.ExactMatch, wallet.Cent, t0))
		}},
		{"Credit", func(tx consent.Tx) (wallet.Amount, error) {
			return tx.Credit(ctx, entry(debit.ID, "acme", wallet.TopUp, 5*wallet.Dollar, t0))
		}},
	} {
		_ = s.Update(ctx, func(tx consent.Tx) error {
			_, err := c.write(tx)
			wantCode(t, c.name+" with a taken id", err, consent.Conflict)
			return nil // commit: the refusal changed nothing
		})
		if bal := balanceOf(t, s, "acme"); bal != wallet.Dollar {
			t.Errorf("%s with a taken id: balance %v, want 1", c.name, bal)
		}
		wantSame(t, ledger, ledgerOf(t, s, "acme"), opts, "%s with a taken id changed the ledger", c.name)
	}
}

// testDebitAll: the entries are debited together, in the ledger in the
// order given, only when the balance covers their sum; otherwise, and on
// every other refusal, nothing changes.
func testDebitAll(t *testing.T, s consent.Store) {
	fixture(t, s)
	topup := entry("top", "acme", wallet.TopUp, 50*wallet.Cent, t0)
	update(t, s, func(tx consent.Tx) error {
		_, err := tx.Credit(ctx, topup)
		return err
	})
	var list []*wallet.Entry
	for i := range 4 {
		e := entry(fmt.Sprintf("b%d", 3-i), "acme", wallet.RetainBatch, 10*wallet.Cent, t0.Add(time.Duration(i)*time.Second))
		e.Reference = fmt.Sprintf("ses-%d", i)
		list = append(list, e)
	}
	update(t, s, func(tx consent.Tx) error {
		bal, err := tx.DebitAll(ctx, list)
		if err != nil || bal != 10*wallet.Cent {
			t.Errorf("DebitAll(4 × 0.1 of 0.5) = %v, %v; want 0.1", bal, err)
		}
		return err
	})
	wantSame(t, append([]*wallet.Entry{topup}, list...), ledgerOf(t, s, "acme"), opts, "Ledger after DebitAll")
	update(t, s, func(tx consent.Tx) error {
		if bal, err := tx.DebitAll(ctx, nil); bal != 0 || err != nil {
			t.Errorf("DebitAll(none) = %v, %v; want 0, nil", bal, err)
		}
		return nil
	})

	ledger := ledgerOf(t, s, "acme")
	two := func(a, b wallet.Amount) []*wallet.Entry {
		return []*wallet.Entry{entry("n1", "acme", wallet.RetainBatch, a, t0), entry("n2", "acme", wallet.RetainBatch, b, t0)}
	}
	unknown := two(1, 1)
	unknown[0].CompanyID, unknown[1].CompanyID = "nobody", "nobody"
	// A taken id is found last, as the SQL stores find it on insert: after
	// the company and the balance.
	takenShort := two(6*wallet.Cent, 5*wallet.Cent)
	takenShort[0].ID = "b0"
	takenUnknown := two(1, 1)
	takenUnknown[0].ID, takenUnknown[0].CompanyID, takenUnknown[1].CompanyID = "b0", "nobody", "nobody"
	for _, c := range []struct {
		name string
		list []*wallet.Entry
		code consent.Code
	}{
		// 0.06 + 0.05 of 0.1: each would pass alone, not both.
		{"a sum over the balance", two(6*wallet.Cent, 5*wallet.Cent), consent.Payment},
		{"an unknown company", unknown, consent.NotFound},
		{"a taken id and a sum over the balance", takenShort, consent.Payment},
		{"a taken id of an unknown company", takenUnknown, consent.NotFound},
	} {
		update(t, s, func(tx consent.Tx) error {
			_, err := tx.DebitAll(ctx, c.list)
			wantCode(t, "DebitAll with "+c.name, err, c.code)
			var ife *wallet.InsufficientFundsError
			if c.code == consent.Payment && (!errors.As(err, &ife) || ife.Required != 11*wallet.Cent || ife.Balance != 10*wallet.Cent) {
				t.Errorf("DebitAll with %s: %v, want InsufficientFundsError{0.11, 0.1}", c.name, err)
			}
			return nil // commit: the refusal changed nothing
		})
		if bal := balanceOf(t, s, "acme"); bal != 10*wallet.Cent {
			t.Errorf("DebitAll with %s: balance %v, want 0.1", c.name, bal)
		}
		wantSame(t, ledger, ledgerOf(t, s, "acme"), opts, "DebitAll with %s changed the ledger", c.name)
	}
	for _, c := range []struct {
		name string
		list []*wallet.Entry
	}{
		{"a taken id", []*wallet.Entry{entry("n1", "acme", wallet.RetainBatch, 1, t0), entry("b0", "acme", wallet.RetainBatch, 1, t0)}},
		{"an id twice", []*wallet.Entry{entry("n1", "acme", wallet.RetainBatch, 1, t0), entry("n1", "acme", wallet.RetainBatch, 1, t0)}},
	} {
		err := s.Update(ctx, func(tx consent.Tx) error {
			_, err := tx.DebitAll(ctx, c.list)
			return err
		})
		wantCode(t, "DebitAll with "+c.name, err, consent.Conflict)
		if bal := balanceOf(t, s, "acme"); bal != 10*wallet.Cent {
			t.Errorf("DebitAll with %s: balance %v, want 0.1", c.name, bal)
		}
	}
	// The whole balance may go, leaving exactly zero.
	update(t, s, func(tx consent.Tx) error {
		bal, err := tx.DebitAll(ctx, two(4*wallet.Cent, 6*wallet.Cent))
		if err != nil || bal != 0 {
			t.Errorf("DebitAll of the whole balance = %v, %v; want 0", bal, err)
		}
		return err
	})
}

// testBalanceLimit: a wallet holds at most wallet.MaxBalance, on every
// store: a credit that would take it over is refused as Invalid
// (wallet.ErrBalanceLimit) and changes nothing, so no balance ever
// overflows. Concurrent credits that would together pass it (sharing a
// group-commit batch, on the SQL stores) are refused alone. (An entry of
// more, or a debit whose entries sum to more, is refused by the checked
// Tx before a store sees it: consent's tests.)
func testBalanceLimit(t *testing.T, s consent.Store) {
	funded(t, s) // $10
	ledger := ledgerOf(t, s, "acme")
	refused := func(name string, write func(tx consent.Tx) error) {
		t.Helper()
		err := s.Update(ctx, write)
		if !errors.Is(err, wallet.ErrBalanceLimit) || consent.ErrorCode(err) != consent.Invalid {
			t.Errorf("%s: %v, want ErrBalanceLimit (Invalid)", name, err)
		}
		wantSame(t, ledger, ledgerOf(t, s, "acme"), opts, "%s changed the ledger", name)
	}
	refused("a credit over the limit", func(tx consent.Tx) error {
		_, err := tx.Credit(ctx, entry("over", "acme", wallet.TopUp, wallet.MaxBalance-10*wallet.Dollar+1, t0))
		return err
	})
	if bal := balanceOf(t, s, "acme"); bal != 10*wallet.Dollar {
		t.Fatalf("balance after the refusals: %v, want 10", bal)
	}
	// Up to the limit exactly is fine, and spends back down.
	update(t, s, func(tx consent.Tx) error {
		bal, err := tx.Credit(ctx, entry("to-limit", "acme", wallet.TopUp, wallet.MaxBalance-10*wallet.Dollar, t0))
		if err == nil && bal != wallet.MaxBalance {
			t.Errorf("credit to the limit: balance %v, want %v", bal, wallet.MaxBalance)
		}
		return err
	})
	ledger = ledgerOf(t, s, "acme")
	refused("a credit of one micro-dollar at the limit", func(tx consent.Tx) error {
		_, err := tx.Credit(ctx, entry("one", "acme", wallet.TopUp, 1, t0))
		return err
	})
	update(t, s, func(tx consent.Tx) error {
		bal, err := tx.Debit(ctx, entry("all", "acme", wallet.ExactMatch, wallet.MaxBalance, t0))
		if err == nil && bal != 0 {
			t.Errorf("debit of the whole limit: balance %v, want 0", bal)
		}
		return err
	})

	// Eight credits of just over half the limit at once: exactly one can
	// be made.
	half := wallet.MaxBalance/2 + 1
	errs := make([]error, 8)
	concurrently(len(errs), func(i int, _ func(func())) {
		errs[i] = s.Update(ctx, func(tx consent.Tx) error {
			_, err := tx.Credit(ctx, entry(fmt.Sprintf("half-%d", i), "acme", wallet.TopUp, half, t0))
			return err
		})
	})
	made := 0
	for i, err := range errs {
		switch {
		case err == nil:
			made++
		case !errors.Is(err, wallet.ErrBalanceLimit):
			t.Errorf("concurrent credit %d: %v, want nil or ErrBalanceLimit", i, err)
		}
	}
	if bal := balanceOf(t, s, "acme"); made != 1 || bal != half {
		t.Errorf("concurrent credits of half the limit: %d made, balance %v; want 1 and %v", made, bal, half)
	}
}

// testConcurrentDebits: a wallet of 1.00 and 100 concurrent debits of 0.015
// end with exactly 66 successes, 34 insufficient-funds errors and a balance
// of exactly 0.010, and the ledger adds up to the balance (D4, D5).
func testConcurrentDebits(t *testing.T, s consent.Store) {
	fixture(t, s)
	update(t, s, func(tx consent.Tx) error {
		_, err := tx.Credit(ctx, entry("topup", "acme", wallet.TopUp, wallet.Dollar, t0))
		return err
	})
	price := 15 * wallet.Cent / 10
	const n = 100
	var (
		ok, short     int
		others        []error
		lowestBalance = wallet.Dollar
	)
	concurrently(n, func(i int, locked func(func())) {
		var bal wallet.Amount
		err := s.Update(ctx, func(tx consent.Tx) error {
			var err error
			bal, err = tx.Debit(ctx, entry(fmt.Sprintf("d%03d", i), "acme", wallet.ExactMatch, price, t0))
			return err
		})
		locked(func() {
			switch {
			case err == nil:
				ok++
				lowestBalance = min(lowestBalance, bal)
			case errors.Is(err, wallet.ErrInsufficientFunds):
				short++
			default:
				others = append(others, err)
			}
		})
	})
	for _, err := range others {
		t.Errorf("unexpected error: %v", err)
		if strings.Contains(err.Error(), "locked") {
			t.Errorf("a store must serialize writers, not fail them: %v", err)
		}
	}
	if ok != 66 || short != 34 {
		t.Errorf("%d debits succeeded and %d were refused; want 66 and 34", ok, short)
	}
	view(t, s, func(tx consent.Tx) error {
		bal, err := tx.Balance(ctx, "acme")
		if err != nil {
			return err
		}
		if bal != wallet.Cent {
			t.Errorf("balance = %s, want exactly 0.01", bal)
		}
		if lowestBalance != bal {
			t.Errorf("lowest balance returned by a debit = %s, want the final %s", lowestBalance, bal)
		}
		ledger, err := tx.Ledger(ctx, "acme")
		if err != nil {
			return err
		}
		var sum wallet.Amount
		debits := 0
		for _, e := range ledger {
			if e.Kind.IsCredit() {
				sum += e.Amount
			} else {
				sum -= e.Amount
				debits++
			}
		}
		if sum != bal || debits != 66 {
			t.Errorf("ledger: credits − debits = %s over %d debits; want %s over 66", sum, debits, bal)
		}
		return nil
	})
}

// testConcurrentTakenEntryIDs: among concurrent calls that each debit and
// append an audit entry, the ones whose ledger entry id is taken fail with
// a conflict and the others commit, each exactly once — also where a store
// finds the taken id only when it writes a shared transaction's entries
// (write-behind), after the call's function returned.
func testConcurrentTakenEntryIDs(t *testing.T, s consent.Store) {
	fixture(t, s)
	update(t, s, func(tx consent.Tx) error {
		if _, err := tx.Credit(ctx, entry("topup", "acme", wallet.TopUp, 100*wallet.Dollar, t0)); err != nil {
			return err
		}
		_, err := tx.Debit(ctx, entry("taken", "acme", wallet.ExactMatch, wallet.Cent, t0))
		return err
	})
	const rounds, workers = 4, 16
	ok := 0
	for r := range rounds {
		errs := make([]error, workers)
		concurrently(workers, func(w int, _ func(func())) {
			id := fmt.Sprintf("e-%d-%d", r, w)
			if w%5 == 2 {
				id = "taken"
			}
			errs[w] = s.Update(ctx, func(tx consent.Tx) error {
				if _, err := tx.Debit(ctx, entry(id, "acme", wallet.ExactMatch, wallet.Cent, t0)); err != nil {
					return err
				}
				return tx.AppendAudit(ctx, &consent.AuditEntry{CompanyID: "acme", At: t0, Actor: "t",
					Action: consent.AuditVerifyMatch, Target: id, Outcome: "ok"})
			})
		})
		for w, err := range errs {
			if w%5 == 2 {
				wantCode(t, fmt.Sprintf("round %d, call %d with a taken id", r, w), err, consent.Conflict)
				continue
			}
			if err != nil {
				t.Errorf("round %d, call %d: %v", r, w, err)
				continue
			}
			ok++
		}
	}
	ledger := ledgerOf(t, s, "acme")
	if len(ledger) != 2+ok {
		t.Errorf("%d ledger entries, want %d", len(ledger), 2+ok)
	}
	if bal := balanceOf(t, s, "acme"); bal != 100*wallet.Dollar-wallet.Amount(1+ok)*wallet.Cent {
		t.Errorf("balance %v after %d debits of 0.01 from 100", bal, 1+ok)
	}
	checkChain(t, s, "acme", ok)
}

// testConcurrentChargesReadBack: concurrent calls each credit, read the
// balance, debit and read the ledger back in one transaction — on a store
// that writes charges behind, the read writes them first — and every third
// fails at the end. Each call sees its own work, and what stays is exactly
// the kept calls' work.
func testConcurrentChargesReadBack(t *testing.T, s consent.Store) {
	fixture(t, s)
	const workers, each = 12, 5
	kept := 0
	concurrently(workers, func(w int, locked func(func())) {
		for i := range each {
			fail := (w+i)%3 == 0
			err := s.Update(ctx, func(tx consent.Tx) error {
				in := entry(fmt.Sprintf("in-%d-%d", w, i), "acme", wallet.TopUp, 3*wallet.Cent, t0)
				after, err := tx.Credit(ctx, in)
				if err != nil {
					return err
				}
				if bal, err := tx.Balance(ctx, "acme"); err != nil {
					return fmt.Errorf("the balance after a credit to %v: %w", after, err)
				} else if bal != after {
					return fmt.Errorf("the balance after a credit to %v is %v", after, bal)
				}
				out := entry(fmt.Sprintf("out-%d-%d", w, i), "acme", wallet.ExactMatch, wallet.Cent, t0)
				if bal, err := tx.Debit(ctx, out); err != nil {
					return fmt.Errorf("a debit after a credit to %v: %w", after, err)
				} else if bal != after-wallet.Cent {
					return fmt.Errorf("a debit of a cent after a credit to %v leaves %v", after, bal)
				}
				ledger, err := tx.Ledger(ctx, "acme")
				if err != nil {
					return err
				}
				if n := len(ledger); n < 2 || ledger[n-2].ID != in.ID || ledger[n-1].ID != out.ID {
					return fmt.Errorf("the ledger read back does not end with the call's two entries: %d entries", n)
				}
				if fail {
					return errBoom
				}
				return nil
			})
			if keptCall(t, fmt.Sprintf("call %d-%d", w, i), fail, err, errBoom) {
				locked(func() { kept++ })
			}
		}
	})
	if n := len(ledgerOf(t, s, "acme")); n != 2*kept {
		t.Errorf("%d ledger entries after %d kept calls, want %d", n, kept, 2*kept)
	}
	if bal := balanceOf(t, s, "acme"); bal != wallet.Amount(kept)*2*wallet.Cent {
		t.Errorf("balance %v after %d kept calls of +0.03 −0.01", bal, kept)
	}
}
