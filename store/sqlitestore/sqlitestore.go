// Package sqlitestore is a consent.Store on SQLite (github.com/mattn/go-sqlite3),
// the embedded default for a real deployment on one machine.
//
//	st, err := sqlitestore.Open("consent.db", sqlitestore.Config{})
//	defer st.Close()
//	err = st.Migrate(ctx) // explicit: you decide when
//	svc, err := consentkit.NewService(st, consentkit.Config{})
//
// The database runs in WAL mode with synchronous=FULL, so a committed charge
// or revocation survives a power cut (D31), and with foreign keys on. Writes
// go through one connection whose transactions begin with BEGIN IMMEDIATE:
// writers queue in the pool instead of failing with "database is locked",
// and a transaction that reads before it writes can never be refused its
// upgrade to a writer. Reads go through a separate read-only pool and run
// alongside the writer.
package sqlitestore

import (
	"cmp"
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/store"
	"github.com/consentkit/consentkit/store/internal/group"
	"github.com/consentkit/consentkit/store/internal/sqlrow"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Config tunes a Store. Zero values mean the defaults.
type Config struct {
	// ReadConns is the size of the read pool: default 4.
	ReadConns int
	// BusyTimeout is how long a connection waits for a lock held by another
	// process before failing: default 10 s.
	BusyTimeout time.Duration
	// CheckpointInterval is how often a connection of its own copies the
	// write-ahead log into the database: default 1 s. Commits never
	// checkpoint themselves, so no writer waits for the database file's
	// fsync. A negative value leaves checkpoints to SQLite's automatic ones,
	// run by the committing writer every 1,000 pages.
	CheckpointInterval time.Duration
	// GroupCommit runs concurrent Update calls together in one transaction
	// (see store.GroupCommit; on by default). SQLite has one writer, so the
	// batches take turns and Runners is ignored.
	GroupCommit store.GroupCommit
}

// Store is a consent.Store on one SQLite database file.
type Store struct {
	write *sql.DB // one connection: SQLite has one writer at a time
	read  *sql.DB
	group *group.Group[*batchTx] // nil when group commit is off
	// checkpoints runs until stop is closed; done is closed when it ends.
	stop, done chan struct{}
}

// writerDriver opens the writer's connections with automatic checkpoints
// off: the Store's own checkpoint loop does them (Config.CheckpointInterval).
// writerDriverAuto leaves them on. Both keep temporary data in memory (see
// writerPragmas).
const (
	writerDriver     = "sqlite3_consentkit_writer"
	writerDriverAuto = "sqlite3_consentkit_writer_auto"
)

// writerPragmas: temp_store = MEMORY keeps statement journals in memory.
// Group commit gives every call in a batch a savepoint, and SQLite keeps
// the pages a savepoint changes in a statement journal that, by default,
// starts in memory, spills to a temporary file past 64 KiB and is freed at
// each RELEASE; the allocator then hands that memory back to the system
// at every call (madvise), which cost more processor time than the calls'
// own work (examples/load: about 1.1 ms of server time per verification on
// the machines of BENCHMARKS.md, 0.45 ms without). The writer's temporary
// tables and sorts are bounded by its statements' limits.
const writerPragmas = "PRAGMA temp_store = MEMORY"

func init() {
	sql.Register(writerDriver, &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		_, err := c.Exec("PRAGMA wal_autocheckpoint = 0; "+writerPragmas, nil)
		return err
	}})
	sql.Register(writerDriverAuto, &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		_, err := c.Exec(writerPragmas, nil)
		return err
	}})
}

var _ consent.Store = (*Store)(nil)

// Open opens (creating if needed) the database at path. Call Migrate before
// first use.
func Open(path string, opts Config) (*Store, error) {
	if path == "" || strings.ContainsAny(path, "?#") || path == ":memory:" {
		return nil, fmt.Errorf("sqlitestore: %q is not a usable database file path", path)
	}
	if opts.ReadConns <= 0 {
		opts.ReadConns = 4
	}
	if opts.BusyTimeout <= 0 {
		opts.BusyTimeout = 10 * time.Second
	}
	common := url.Values{
		"_busy_timeout": {fmt.Sprint(opts.BusyTimeout.Milliseconds())},
		"_foreign_keys": {"on"},
		// Each connection keeps its prepared statements: the store's
		// statements are a fixed set, and preparing one costs more than
		// running it.
		"_stmt_cache_size": {"256"},
	}
	wq := url.Values{"_txlock": {"immediate"}, "_journal_mode": {"WAL"}, "_synchronous": {"FULL"}}
	rq := url.Values{"mode": {"ro"}}
	for k, v := range common {
		wq[k], rq[k] = v, v
	}
	driver := writerDriver
	if opts.CheckpointInterval < 0 {
		driver = writerDriverAuto
	}
	write, err := sql.Open(driver, "file:"+path+"?"+wq.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: %w", err)
	}
	write.SetMaxOpenConns(1)
	write.SetConnMaxIdleTime(0)
	// The first connection creates the file and turns on WAL, which the
	// read-only pool needs to exist.
	var mode string
	if err := write.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil {
		_ = write.Close() // err says why Open failed
		return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
	}
	if mode != "wal" {
		_ = write.Close()
		return nil, fmt.Errorf("sqlitestore: journal mode is %q, want wal", mode)
	}
	read, err := sql.Open("sqlite3", "file:"+path+"?"+rq.Encode())
	if err != nil {
		_ = write.Close()
		return nil, fmt.Errorf("sqlitestore: %w", err)
	}
	read.SetMaxOpenConns(opts.ReadConns)
	read.SetMaxIdleConns(opts.ReadConns)
	s := &Store{write: write, read: read, stop: make(chan struct{}), done: make(chan struct{})}
	if !opts.GroupCommit.Off {
		s.group = group.New(groupOps(write), group.Config{
			MaxBatch: cmp.Or(opts.GroupCommit.MaxBatch, store.DefaultMaxBatch), Delay: opts.GroupCommit.Delay, Runners: 1,
		})
	}
	if opts.CheckpointInterval < 0 {
		close(s.done)
		return s, nil
	}
	if opts.CheckpointInterval == 0 {
		opts.CheckpointInterval = time.Second
	}
	cp, err := sql.Open("sqlite3", "file:"+path+"?"+common.Encode())
	if err != nil {
		close(s.done) // no checkpoints run, which Close would wait for
		_ = s.Close()
		return nil, fmt.Errorf("sqlitestore: %w", err)
	}
	cp.SetMaxOpenConns(1)
	go s.checkpoints(cp, opts.CheckpointInterval)
	return s, nil
}

// checkpoints copies the write-ahead log into the database every interval,
// on a connection of its own, beside the writer: PASSIVE never waits for
// the writer or readers, and does what it can.
func (s *Store) checkpoints(cp *sql.DB, interval time.Duration) {
	defer close(s.done)
	defer func() { _ = cp.Close() }() // it only ever checkpoints: nothing is lost
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			_, _ = cp.Exec("PRAGMA wal_checkpoint(PASSIVE)") // a failure is retried at the next tick
		}
	}
}

// Close stops the checkpoints and closes both pools.
func (s *Store) Close() error {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	<-s.done
	return errors.Join(s.read.Close(), s.write.Close())
}

// Migrate applies the embedded schema migrations that have not been applied
// yet, each in its own transaction, in file-name order. It is safe to call
// on every start.
func (s *Store) Migrate(ctx context.Context) error {
	if _, err := s.write.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version TEXT PRIMARY KEY, applied_at INTEGER NOT NULL) STRICT`); err != nil {
		return fmt.Errorf("sqlitestore: migrate: %w", err)
	}
	versions, err := sqlrow.Migrations(migrations)
	if err != nil {
		return err
	}
	for _, v := range versions {
		if err := s.migrate(ctx, v); err != nil {
			return fmt.Errorf("sqlitestore: migration %s: %w", v, err)
		}
	}
	return nil
}

// Pending returns the versions of the embedded schema migrations that the
// database has not applied, in order: all of them when it has none. A
// program that must not change the schema checks it before its first
// statement, so that a database behind the code is named as such rather
// than failing on a missing column.
func (s *Store) Pending(ctx context.Context) ([]string, error) {
	all, err := sqlrow.Migrations(migrations)
	if err != nil {
		return nil, err
	}
	var n int
	if err := s.read.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'`).Scan(&n); err != nil || n == 0 {
		return all, err
	}
	rows, err := s.read.QueryContext(ctx, `SELECT version FROM schema_migrations`) //nolint:rowserrcheck // sqlrow.Collect checks Err after its loop
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }() // read only; Collect reports its errors
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
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, version).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, string(script)); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`,
		version, time.Now().UnixMicro()); err != nil {
		return err
	}
	return tx.Commit()
}

// Update runs fn in a write transaction (BEGIN IMMEDIATE), shared with
// concurrent calls when group commit is on (Config.GroupCommit).
func (s *Store) Update(ctx context.Context, fn func(consent.Tx) error) error {
	if s.group == nil {
		return s.run(ctx, s.write, nil, fn)
	}
	return mapErr(s.group.Do(ctx, func(b *batchTx) error { return fn(newTx(detached{b}, b.shared())) }))
}

// GroupStats returns how many group-commit batches have run and how many
// Update functions they ran (zero when group commit is off).
func (s *Store) GroupStats() (batches, calls int64) {
	if s.group == nil {
		return 0, 0
	}
	return s.group.Stats()
}

// View runs fn in a read transaction on the read pool.
func (s *Store) View(ctx context.Context, fn func(consent.Tx) error) error {
	return s.run(ctx, s.read, &sql.TxOptions{ReadOnly: true}, fn)
}

func (s *Store) run(ctx context.Context, db *sql.DB, o *sql.TxOptions, fn func(consent.Tx) error) error {
	sqlTx, err := db.BeginTx(ctx, o)
	if err != nil {
		return mapErr(err)
	}
	// Rolled back unless committed: when fn fails, and when it panics (or
	// calls runtime.Goexit), since a transaction left open would hold its
	// connection, the one writer of an Update, and every later Update
	// would wait for it. After Commit, Rollback does nothing.
	defer sqlTx.Rollback()
	if err := fn(newTx(sqlTx, nil)); err != nil {
		return err
	}
	err = sqlTx.Commit()
	if errors.Is(err, sql.ErrTxDone) && ctx.Err() != nil {
		// database/sql rolls a transaction back as soon as its context
		// ends; Commit then reports ErrTxDone, which would hide why.
		return ctx.Err()
	}
	return mapErr(err)
}

// mapErr turns constraint violations into consent's error kinds, by code.
func mapErr(err error) error {
	if err == nil {
		return nil // inlined: the common case allocates nothing
	}
	return mapFailure(err)
}

// mapFailure is mapErr of an error. Its errors.As target escapes to the
// heap: kept out of mapErr, it is allocated only when there is an error.
func mapFailure(err error) error {
	var se sqlite3.Error
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return consent.Errorf(consent.NotFound, "not found")
	case !errors.As(err, &se):
		return err
	}
	switch se.ExtendedCode {
	case sqlite3.ErrConstraintPrimaryKey, sqlite3.ErrConstraintUnique:
		return sqlrow.Conflict(constraintTable(se.Error()))
	case sqlite3.ErrConstraintForeignKey:
		return consent.Errorf(consent.NotFound, "the company, property or session referred to does not exist")
	}
	return err
}

// constraintTable is the table of SQLite's message of a unique
// violation, "UNIQUE constraint failed: companies.id" (or "…: jobs.kind,
// jobs.key"): "companies"; "" when the message is not of that form.
func constraintTable(msg string) string {
	_, cols, ok := strings.Cut(msg, "constraint failed: ")
	if !ok {
		return ""
	}
	table, _, ok := strings.Cut(cols, ".")
	if !ok {
		return ""
	}
	return table
}
