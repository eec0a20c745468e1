package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/consentkit/consentkit/store/internal/behind"
	"github.com/consentkit/consentkit/store/internal/group"
)

// batchLock makes group-commit batches on one schema take turns, those of
// other instances and other runners included, before any of their calls
// locks a row: a batch keeps every call's row locks until its commit, and
// batches running at once, each holding a row that the other wants next,
// deadlock (calls that each lock one wallet, in any order, did). Its keys
// are two integers — "cons" and the schema's hash — a key space apart from
// migrationLock's single one.
const batchLock = `SELECT pg_advisory_xact_lock(1668246131, hashtext(current_schema()))`

// batchTx is a group-commit batch's transaction. Inside a batch every
// round trip to the server is time during which the whole batch — every
// call in it, and the batches waiting for batchLock — stands still, so the
// statements that only frame the calls are held back and travel with the
// next statement of a call, in one pipelined round trip (a pgx.Batch):
// batchLock with the batch's first statement, each call's SAVEPOINT with
// its first statement, the RELEASE of a call that succeeded with the next
// call's first statement. A call that made no statement has no savepoint
// on the server; COMMIT releases the last one. The order of statements on
// the server is unchanged: batchLock before any row lock, a call's
// statements inside its savepoint.
type batchTx struct {
	pgx.Tx
	held []string // framing statements not sent yet, in order
	// spHeld says the current call's SAVEPOINT is still in held: there is
	// nothing to release or roll back on the server.
	spHeld bool
	// broken is set when a held statement failed: the transaction can no
	// longer be trusted, and undoing the call reports it.
	broken error
	// wb holds what the batch's calls wrote behind (behind.go).
	wb behind.Batch
}

const (
	savepoint  = "SAVEPOINT call"
	release    = "RELEASE SAVEPOINT call"
	rollbackTo = "ROLLBACK TO SAVEPOINT call"
)

// groupOps are the statements of a group-commit batch.
func groupOps(pool *pgxpool.Pool) group.Ops[*batchTx] {
	return group.Ops[*batchTx]{
		Begin: func(ctx context.Context) (*batchTx, error) {
			t, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
			if err != nil {
				return nil, err
			}
			return &batchTx{Tx: t, held: []string{batchLock}}, nil
		},
		Commit: func(ctx context.Context, t *batchTx) error {
			if t.broken == nil {
				if err := t.writeBehind(ctx); err != nil {
					t.broken = err
				}
			}
			if t.broken != nil {
				t.Tx.Rollback(ctx)
				return t.broken
			}
			// What is held is a RELEASE, which COMMIT does, or framing
			// around calls that made no statement.
			t.held = nil
			return t.Tx.Commit(ctx)
		},
		Rollback: func(ctx context.Context, t *batchTx) error {
			t.held = nil
			return t.Tx.Rollback(ctx)
		},
		Savepoint: func(ctx context.Context, t *batchTx) error {
			t.held, t.spHeld = append(t.held, savepoint), true
			t.wb.BeginCall()
			return nil
		},
		Release: func(ctx context.Context, t *batchTx) error {
			if t.spHeld { // the call made no statement
				t.held, t.spHeld = t.held[:len(t.held)-1], false
				return nil
			}
			t.held = append(t.held, release)
			return nil
		},
		RollbackTo: func(ctx context.Context, t *batchTx) error {
			t.wb.UndoCall()
			if t.broken != nil {
				return t.broken
			}
			if t.spHeld { // the call made no statement: nothing to undo
				t.held, t.spHeld = t.held[:len(t.held)-1], false
				return nil
			}
			// Also the way out of a transaction that a failed statement
			// of this call aborted. held is empty: the call's first
			// statement took it. Without arguments pgx sends both
			// statements as one query string, in one round trip.
			_, err := t.Tx.Exec(ctx, rollbackTo+"; "+release)
			return err
		},
	}
}

// send sends the held statements and sql in one round trip and reads the
// held statements' results; nil when nothing is held (sql is then the
// caller's to send). The caller reads sql's result and closes the batch.
func (t *batchTx) send(ctx context.Context, sql string, args []any) (pgx.BatchResults, error) {
	if len(t.held) == 0 {
		return nil, nil
	}
	return t.sendBatch(ctx, func(b *pgx.Batch) { b.Queue(sql, args...) })
}

// sendBatch sends the held statements and the ones queue adds in one round
// trip and reads the held statements' results; a held statement that fails
// breaks the batch. The caller reads its statements' results and closes
// the batch.
func (t *batchTx) sendBatch(ctx context.Context, queue func(*pgx.Batch)) (pgx.BatchResults, error) {
	held := t.held
	t.held, t.spHeld = nil, false
	b := &pgx.Batch{}
	for _, h := range held {
		b.Queue(h)
	}
	queue(b)
	br := t.Tx.SendBatch(ctx, b)
	for _, h := range held {
		if _, err := br.Exec(); err != nil {
			_ = br.Close() // err says why; Close would say it again
			t.broken = fmt.Errorf("pgstore: %s: %w", h, err)
			return nil, t.broken
		}
	}
	return br, nil
}

// detached runs a group-commit batch's statements so that a cancelled
// caller's context never interrupts one (pgx would cancel the statement,
// or close the connection, and with it the other callers' work): a
// statement that starts runs to its end, and one that a cancelled caller
// would start fails at once with the context's error, so the caller's
// function fails and only its work is undone. Each statement carries the
// batch's held framing statements (batchTx). Only Exec, Query and QueryRow
// do: tx uses no other pgx.Tx method, and one that did (SendBatch,
// CopyFrom) would run before the held statements, outside its call's
// savepoint.
type detached struct{ *batchTx }

func (d detached) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if err := ctx.Err(); err != nil {
		return pgconn.CommandTag{}, err
	}
	ctx = context.WithoutCancel(ctx)
	br, err := d.send(ctx, sql, args)
	switch {
	case err != nil:
		return pgconn.CommandTag{}, err
	case br == nil: // nothing held
		return d.Tx.Exec(ctx, sql, args...)
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

func (d detached) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ctx = context.WithoutCancel(ctx)
	br, err := d.send(ctx, sql, args)
	switch {
	case err != nil:
		return nil, err
	case br == nil: // nothing held
		return d.Tx.Query(ctx, sql, args...)
	}
	rows, err := br.Query()
	if err != nil {
		_ = br.Close() // err says why; Close would say it again
		return nil, err
	}
	return &batchRows{Rows: rows, br: br}, nil
}

func (d detached) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if err := ctx.Err(); err != nil {
		return errRow{err}
	}
	ctx = context.WithoutCancel(ctx)
	br, err := d.send(ctx, sql, args)
	switch {
	case err != nil:
		return errRow{err}
	case br == nil: // nothing held
		return d.Tx.QueryRow(ctx, sql, args...)
	}
	return batchRow{br.QueryRow(), br}
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// batchRow is the row of a statement sent with held ones: scanning it
// ends the batch.
type batchRow struct {
	row pgx.Row
	br  pgx.BatchResults
}

func (r batchRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	return err
}

// batchRows are the rows of a statement sent with held ones: closing them
// ends the batch.
type batchRows struct {
	pgx.Rows
	br  pgx.BatchResults
	err error
}

func (r *batchRows) Close() {
	r.Rows.Close()
	if r.br != nil {
		r.err, r.br = r.br.Close(), nil
	}
}

func (r *batchRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}
