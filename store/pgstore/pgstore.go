// Package pgstore is a consent.Store on PostgreSQL (github.com/jackc/pgx/v5),
// for production and for many application instances sharing one database.
//
//	st, err := pgstore.Open(ctx, "postgres://user@db:5432/consent?sslmode=disable")
//	defer st.Close() // or pgstore.New(pool) on a pool of your own, which Close leaves open
//	err = st.Migrate(ctx) // safe on every start; instances take turns
//	svc, err := consentkit.NewService(st, consentkit.Config{})
//
// Tables go into the schema of the connection's search_path.
//
// Transactions run at READ COMMITTED. The wallet debit is one conditional
// UPDATE, which Postgres re-checks against the newest committed row after
// waiting for a concurrent writer, so concurrent charges never overdraw
// (D4). Reads of sessions, certificates and wallets inside Update take row
// locks (FOR UPDATE), so a rule checked in a transaction still holds when it
// commits. A transaction aborted by a deadlock or serialization failure is
// retried a few times. Keep synchronous_commit on: a 2xx promises that its
// charges and revocations are durable (D31).
package pgstore

import (
	"cmp"
	"context"
	"embed"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/store"
	"github.com/consentkit/consentkit/store/internal/group"
	"github.com/consentkit/consentkit/store/internal/sqlrow"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Store is a consent.Store on a pgx connection pool.
type Store struct {
	pool    *pgxpool.Pool
	ownPool bool
	group   *group.Group[*batchTx] // nil when group commit is off
}

var _ consent.Store = (*Store)(nil)

// Config tunes a Store. Zero values mean the defaults.
type Config struct {
	// GroupCommit runs concurrent Update calls together in one transaction
	// (see store.GroupCommit; on by default). Batches take turns on the
	// schema, across instances too (an advisory lock, batchLock): a batch
	// holds the row locks of all its calls until its commit, so two
	// batches at once could each hold a row the other wants — a deadlock
	// that Postgres breaks only after deadlock_timeout (1 s by default).
	// Runners defaults to 1.
	GroupCommit store.GroupCommit
}

// New returns a Store on the caller's pool, which Close leaves open. The
// pool's search_path decides the schema. A Config, when given, tunes it.
func New(pool *pgxpool.Pool, cfg ...Config) *Store {
	s := &Store{pool: pool}
	var c Config
	if len(cfg) > 0 {
		c = cfg[0]
	}
	if gc := c.GroupCommit; !gc.Off {
		runners := cmp.Or(gc.Runners, 1)
		s.group = group.New(groupOps(pool), group.Config{
			MaxBatch: cmp.Or(gc.MaxBatch, store.DefaultMaxBatch), Delay: gc.Delay, Runners: runners,
		})
	}
	return s
}

// Open opens a pool from a connection URL such as
// "postgres://user@host:5432/db?sslmode=disable"; Close closes it. A
// Config, when given, tunes the Store.
func Open(ctx context.Context, url string, cfg ...Config) (*Store, error) {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	s := New(pool, cfg...)
	s.ownPool = true
	return s, nil
}

// GroupStats returns how many group-commit batches have run and how many
// Update functions they ran (zero when group commit is off).
func (s *Store) GroupStats() (batches, calls int64) {
	if s.group == nil {
		return 0, 0
	}
	return s.group.Stats()
}

// Pool returns the store's connection pool.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Close closes the pool if Open made it.
func (s *Store) Close() error {
	if s.ownPool {
		s.pool.Close()
	}
	return nil
}

// migrationLock is the advisory lock key that serializes migrations of
// instances starting together.
const migrationLock = 0x636f6e73656e74 // "consent"

// Migrate applies the embedded schema migrations not applied yet, each in
// its own transaction, in file-name order, in the schema named by the pool's
// search_path. Instances starting at once take turns; it is safe to call on
// every start.
func (s *Store) Migrate(ctx context.Context) error {
	versions, err := sqlrow.Migrations(migrations)
	if err != nil {
		return err
	}
	// With no schema of the search_path in existence, PostgreSQL's own
	// error ("no schema has been selected to create in") names neither
	// the search_path nor the fix.
	var schema *string
	if err := s.pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return fmt.Errorf("pgstore: %w", err)
	}
	if schema == nil {
		var path string
		if err := s.pool.QueryRow(ctx, `SHOW search_path`).Scan(&path); err != nil {
			return fmt.Errorf("pgstore: %w", err)
		}
		return fmt.Errorf("pgstore: no schema of the connection's search_path (%s) exists, so the tables have nowhere to go: create it (CREATE SCHEMA name) or name an existing schema in the URL's search_path", path)
	}
	for _, v := range versions {
		if err := s.migrate(ctx, v); err != nil {
			return fmt.Errorf("pgstore: migration %s: %w", v, err)
		}
	}
	return nil
}

// Pending returns the versions of the embedded schema migrations that the
// schema named by the pool's search_path has not applied, in order: all of
// them when it has none. A program that must not change the schema checks
// it before its first statement, so that a database behind the code is
// named as such rather than failing on a missing column.
func (s *Store) Pending(ctx context.Context) ([]string, error) {
	all, err := sqlrow.Migrations(migrations)
	if err != nil {
		return nil, err
	}
	var exists bool
	if err := s.pool.QueryRow(ctx, `SELECT to_regclass('schema_migrations') IS NOT NULL`).Scan(&exists); err != nil || !exists {
		return all, err
	}
	rows, err := s.pool.Query(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	applied, err := sqlrow.Collect(rows, sqlrow.ScanText)
	if err != nil {
		return nil, err
	}
	return sqlrow.Pending(all, applied), nil
}

func (s *Store) migrate(ctx context.Context, version string) error {
	script, err := migrations.ReadFile("migrations/" + version + ".sql")
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrationLock)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return err
		}
		var done bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1)`, version).Scan(&done); err != nil {
			return err
		}
		if done {
			return nil
		}
		// Exec without arguments uses the simple protocol, which runs a
		// script of several statements.
		if _, err := tx.Exec(ctx, string(script)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version) VALUES ($1)`, version)
		return err
	})
}

// maxAttempts bounds the retries of a transaction that Postgres aborted to
// break a deadlock or a serialization conflict.
const maxAttempts = 5

// Update runs fn in a READ COMMITTED read-write transaction, shared with
// concurrent calls when group commit is on (Config.GroupCommit) unless ctx
// is marked consent.Alone, retrying it when Postgres aborts it for a
// deadlock or serialization failure.
func (s *Store) Update(ctx context.Context, fn func(consent.Tx) error) error {
	var err error
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		switch {
		case s.group != nil && !consent.IsAlone(ctx):
			err = mapErr(s.group.Do(ctx, func(t *batchTx) error {
				return fn(newTx(detached{t}, " FOR UPDATE", t.shared()))
			}))
		case s.group != nil:
			// Beside the batches, as their calls run: a statement that
			// has started runs to its end, and so does the commit (pgx
			// would interrupt it with a cancel request to the server,
			// which took seconds to answer in TestAloneCancelled…).
			err = s.run(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, " FOR UPDATE", true, fn)
		default:
			err = s.run(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, " FOR UPDATE", false, fn)
		}
		if !retryable(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(attempt*attempt) * time.Millisecond):
		}
	}
	return err
}

// View runs fn in a read-only transaction.
func (s *Store) View(ctx context.Context, fn func(consent.Tx) error) error {
	return s.run(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted, AccessMode: pgx.ReadOnly}, "", false, fn)
}

// run runs fn in a transaction of its own. With whole, no statement that
// has started, nor the commit, is interrupted when ctx ends (wholeTx).
func (s *Store) run(ctx context.Context, opts pgx.TxOptions, lock string, whole bool, fn func(consent.Tx) error) error {
	pgTx, err := s.pool.BeginTx(ctx, opts)
	if err != nil {
		return err
	}
	t, end := pgTx, ctx
	if whole {
		t, end = wholeTx{pgTx}, context.WithoutCancel(ctx)
	}
	// Rolled back unless committed, even when ctx is done, so that the
	// connection returns clean: when fn fails, and when it panics (or calls
	// runtime.Goexit), since a transaction left open would keep its
	// connection out of the pool and its row locks, and every later charge
	// of the same wallet would wait for it. After Commit, Rollback does
	// nothing.
	defer pgTx.Rollback(context.WithoutCancel(ctx))
	if err := fn(newTx(t, lock, nil)); err != nil {
		return err
	}
	return mapErr(pgTx.Commit(end))
}

// wholeTx runs each statement to its end whatever its context does, as a
// group-commit batch runs its calls' (detached): a caller whose context
// has ended has its next statement fail at once instead.
type wholeTx struct{ pgx.Tx }

func (w wholeTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if err := ctx.Err(); err != nil {
		return pgconn.CommandTag{}, err
	}
	return w.Tx.Exec(context.WithoutCancel(ctx), sql, args...)
}

func (w wholeTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return w.Tx.Query(context.WithoutCancel(ctx), sql, args...)
}

func (w wholeTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if err := ctx.Err(); err != nil {
		return errRow{err}
	}
	return w.Tx.QueryRow(context.WithoutCancel(ctx), sql, args...)
}

func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
}

// mapErr turns driver errors into consent's error kinds by SQLSTATE code.
func mapErr(err error) error {
	if err == nil {
		return nil // inlined: the common case allocates nothing
	}
	return mapFailure(err)
}

// mapFailure is mapErr of an error. Its errors.As target escapes to the
// heap: kept out of mapErr, it is allocated only when there is an error.
func mapFailure(err error) error {
	var pe *pgconn.PgError
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return consent.Errorf(consent.NotFound, "not found")
	case !errors.As(err, &pe):
		return err
	}
	switch pe.Code {
	case "23505": // unique_violation: the error names the table
		return sqlrow.Conflict(pe.TableName)
	case "23503": // foreign_key_violation: the constraint names the column
		what := "the company, property or session referred to"
		for _, col := range []string{"company", "property", "session", "endpoint"} {
			if strings.Contains(pe.ConstraintName, col+"_id") {
				what = strings.Replace(col, "endpoint", "webhook endpoint", 1)
			}
		}
		return consent.Errorf(consent.NotFound, "%s not found", what)
	}
	return err
}
