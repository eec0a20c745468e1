package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/store/internal/behind"
	"github.com/consentkit/consentkit/store/internal/group"
	"github.com/consentkit/consentkit/wallet"
)

// batchTx is a group-commit batch's transaction on the writer.
//
// The batch's charges and audit entries are written behind (package
// behind): each wallet's balance and each audit chain head is read once
// per batch, the calls' debits, credits and entries are applied in memory,
// and all of it is written in a few statements before COMMIT, or before
// anything in the batch reads the ledger or the audit log. A charge and an
// append cost no statement of their own, where they cost five.
//
// A call's SAVEPOINT is made only before the call's first statement that
// writes: a SELECT writes nothing, so a call that only reads and writes
// behind — a verification — has nothing on the database to undo, and
// needs no savepoint, no RELEASE and no ROLLBACK TO. Its work behind is
// undone by putting back the buffer as the call began.
type batchTx struct {
	*sql.Tx
	inCall bool // a call runs inside a savepoint of its own (a batch of one has none)
	open   bool // that savepoint is on the database
	// wb holds what the batch's calls wrote behind.
	wb behind.Batch
	// broken is set when the batch cannot be kept: a ledger id found taken
	// when the buffer was written, or a savepoint that could not be made.
	broken error
}

// groupOps are the statements of a group-commit batch on the writer.
func groupOps(write *sql.DB) group.Ops[*batchTx] {
	return group.Ops[*batchTx]{
		Begin: func(ctx context.Context) (*batchTx, error) {
			t, err := write.BeginTx(ctx, nil)
			if err != nil {
				return nil, err
			}
			return &batchTx{Tx: t}, nil
		},
		Commit: func(ctx context.Context, t *batchTx) error {
			if t.broken == nil {
				if err := t.writeBehind(ctx); err != nil && t.broken == nil {
					t.broken = err
				}
			}
			if t.broken != nil {
				t.Tx.Rollback()
				return t.broken
			}
			return t.Tx.Commit()
		},
		Rollback: func(_ context.Context, t *batchTx) error { return t.Tx.Rollback() },
		Savepoint: func(ctx context.Context, t *batchTx) error {
			t.inCall, t.open = true, false
			t.wb.BeginCall()
			return nil
		},
		Release: func(ctx context.Context, t *batchTx) error {
			t.inCall = false
			if !t.open {
				return nil
			}
			t.open = false
			_, err := t.Tx.ExecContext(ctx, "RELEASE call")
			return err
		},
		RollbackTo: func(ctx context.Context, t *batchTx) error {
			t.wb.UndoCall()
			t.inCall = false
			if t.broken != nil {
				return t.broken
			}
			if !t.open {
				return nil // nothing of the call's is on the database
			}
			t.open = false
			if _, err := t.Tx.ExecContext(ctx, "ROLLBACK TO call"); err != nil {
				return err
			}
			_, err := t.Tx.ExecContext(ctx, "RELEASE call")
			return err
		},
	}
}

// savepoint makes the running call's savepoint, if it has none yet.
func (t *batchTx) savepoint(ctx context.Context) error {
	if !t.inCall || t.open {
		return t.broken
	}
	if _, err := t.Tx.ExecContext(context.WithoutCancel(ctx), "SAVEPOINT call"); err != nil {
		t.broken = fmt.Errorf("sqlitestore: SAVEPOINT: %w", err)
		return t.broken
	}
	t.open = true
	return nil
}

// writes reports whether a statement may write: all but a SELECT.
func writes(q string) bool {
	return !strings.HasPrefix(strings.TrimLeft(q, " \t\r\n"), "SELECT")
}

// detached runs a group-commit batch's statements so that a cancelled
// caller's context never interrupts one (on SQLite an interrupted write
// rolls back the whole transaction, the other callers' work with it): a
// statement that starts runs to its end, and one that a cancelled caller
// would start fails at once with the context's error (database/sql checks
// the context before it reaches the driver), so the caller's function
// fails and only its work is undone. A statement that writes makes the
// call's savepoint first.
type detached struct{ *batchTx }

func uncancelled(ctx context.Context) context.Context {
	if ctx.Err() != nil {
		return ctx
	}
	return context.WithoutCancel(ctx)
}

func (d detached) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	if err := d.savepoint(ctx); err != nil {
		return nil, err
	}
	return d.Tx.ExecContext(uncancelled(ctx), q, args...)
}

func (d detached) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if writes(q) {
		if err := d.savepoint(ctx); err != nil {
			return nil, err
		}
	}
	return d.Tx.QueryContext(uncancelled(ctx), q, args...)
}

func (d detached) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	if writes(q) && d.savepoint(ctx) != nil {
		// A *sql.Row carries only database/sql's own errors: the
		// statement is given an ended context, and the call fails; undoing
		// it reports the broken batch.
		ended, cancel := context.WithCancel(ctx)
		cancel()
		return d.Tx.QueryRowContext(ended, q, args...)
	}
	return d.Tx.QueryRowContext(uncancelled(ctx), q, args...)
}

// shared returns t when its calls write behind (behind.Batch.Shared),
// nil when its one call writes directly.
func (t *batchTx) shared() *batchTx {
	if !t.wb.Shared() {
		return nil
	}
	return t
}

// LoadBalance reads the company's balance (behind.Source). SQLite has one
// writer: the row needs no lock.
func (t *batchTx) LoadBalance(ctx context.Context, company string) (wallet.Amount, error) {
	return balance(ctx, detached{t}, company)
}

// LoadHead reads the company's audit chain head (behind.Source).
func (t *batchTx) LoadHead(ctx context.Context, company string) (consent.AuditHead, error) {
	return auditHead(ctx, detached{t}, company)
}

// writeBehind writes what the batch's calls wrote behind: the ledger
// entries, the balances, the audit entries and their heads, in that order
// (a head moves onto an entry in the log, migration 0012). Inside a call
// the writes go into its savepoint.
func (t *batchTx) writeBehind(ctx context.Context) error {
	if t.broken != nil {
		return t.broken
	}
	if !t.wb.Pending() {
		return nil
	}
	w := newTx(detached{t}, nil)
	if ledger := t.wb.Ledger(); len(ledger) > 0 {
		taken, err := w.insertLedger(ctx, ledger)
		if err != nil {
			return err
		}
		if len(taken) > 0 {
			// Which call's entry it was is known only here: the batch is
			// rolled back, that call fails, the others run again.
			t.broken = behind.Taken(ledger, func(id string) bool { return !taken[id] })
			return t.broken
		}
		cos, bals := t.wb.Balances()
		for i, c := range cos {
			if _, err := w.exec(ctx, `UPDATE wallets SET balance = ?1 WHERE company_id = ?2 AND balance <> ?1`,
				bals[i], c); err != nil {
				return err
			}
		}
	}
	if audit := t.wb.Audit(); len(audit) > 0 {
		if err := w.insertAudits(ctx, audit); err != nil {
			return err
		}
		for _, h := range t.wb.Heads() {
			if err := w.moveHead(ctx, h); err != nil {
				return err
			}
		}
	}
	t.wb.Written()
	return nil
}

// readBehind writes what the batch wrote behind before a read of the
// ledger or the audit log.
func (t *tx) readBehind(ctx context.Context) error {
	if t.batch == nil {
		return nil
	}
	return t.batch.writeBehind(ctx)
}
