// Package teststore opens fresh stores of every kind for tests: in memory,
// SQLite in a temporary directory, and PostgreSQL in a schema of its own
// when CONSENT_TEST_POSTGRES_URL names a database.
//
//	teststore.Each(t, func(t *testing.T, open func(tb testing.TB) consent.Store) {
//		svc, err := consentkit.NewService(open(t), consentkit.Config{})
//		…
//	})
package teststore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/store"
	"github.com/consentkit/consentkit/store/memstore"
	"github.com/consentkit/consentkit/store/pgstore"
	"github.com/consentkit/consentkit/store/sqlitestore"
)

// DSNVar names the environment variable holding the PostgreSQL test URL.
const DSNVar = "CONSENT_TEST_POSTGRES_URL"

// Kind is a named way to open a fresh store.
type Kind struct {
	Name string
	Open func(tb testing.TB) consent.Store
}

// Kinds lists every store. Postgres skips the test that opens it, saying
// how to run it, when DSNVar is unset.
var Kinds = []Kind{
	{"memory", Open(Memory)},
	{"sqlite", Open(SQLite)},
	{"postgres", Open(Postgres)},
}

// Open turns Memory, SQLite or Postgres (or any function that opens one
// kind of store) into a function that opens a consent.Store, the form
// storetest.Run and storetest.BenchmarkDebit take.
func Open[S consent.Store](open func(tb testing.TB) S) func(tb testing.TB) consent.Store {
	return func(tb testing.TB) consent.Store { return open(tb) }
}

// CheckAppendOnly gives s company "acme" with two audit entries, then
// fails t unless the database refuses each of stmts as append-only and
// both entries are left unchanged. exec runs a statement, and count reads
// the number a query selects, on a connection that goes around the store.
func CheckAppendOnly(t *testing.T, s consent.Store, stmts []string, exec func(stmt string) error, count func(query string) (int, error)) {
	t.Helper()
	ctx := context.Background()
	err := s.Update(ctx, func(tx consent.Tx) error {
		if err := tx.CreateCompany(ctx, &consent.Company{ID: "acme", Name: "Acme", CreatedAt: time.Now()}); err != nil {
			return err
		}
		for range 2 {
			if err := tx.AppendAudit(ctx, &consent.AuditEntry{CompanyID: "acme", Actor: "a", Action: "x.y", Outcome: "ok"}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range stmts {
		if err := exec(stmt); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: %v, want refused as append-only", stmt, err)
		}
	}
	if n, err := count(`SELECT count(*) FROM audit_log WHERE outcome = 'ok'`); err != nil || n != 2 {
		t.Errorf("entries left: %d, %v; want both, unchanged", n, err)
	}
}

// CloseAtEnd closes c when tb ends, and fails tb when Close fails: a
// store that cannot close cleanly is a fault the test should report.
func CloseAtEnd(tb testing.TB, c io.Closer) {
	tb.Cleanup(func() {
		if err := c.Close(); err != nil {
			tb.Errorf("close %T: %v", c, err)
		}
	})
}

// Each runs fn as a subtest per store kind.
func Each(t *testing.T, fn func(t *testing.T, open func(tb testing.TB) consent.Store)) {
	for _, k := range Kinds {
		t.Run(k.Name, func(t *testing.T) { fn(t, k.Open) })
	}
}

// Memory returns a new memory store, closed when tb ends.
func Memory(tb testing.TB) *memstore.Store {
	s := memstore.New()
	CloseAtEnd(tb, s)
	return s
}

// SQLite returns a migrated store in a new file, closed when tb ends.
func SQLite(tb testing.TB) *sqlitestore.Store {
	tb.Helper()
	return SQLiteConfig(tb, sqlitestore.Config{})
}

// SQLiteWithoutGroupCommit is SQLite with group commit off: every Update
// in a transaction of its own.
func SQLiteWithoutGroupCommit(tb testing.TB) *sqlitestore.Store {
	tb.Helper()
	return SQLiteConfig(tb, sqlitestore.Config{GroupCommit: store.GroupCommit{Off: true}})
}

// SQLiteConfig is SQLite with a Config.
func SQLiteConfig(tb testing.TB, cfg sqlitestore.Config) *sqlitestore.Store {
	tb.Helper()
	s, _ := sqliteAt(tb, cfg)
	return s
}

// SQLiteWithDB is SQLite with a connection of its own to the store's file,
// for tests that change rows behind the store's back.
func SQLiteWithDB(tb testing.TB) (*sqlitestore.Store, *sql.DB) {
	tb.Helper()
	s, path := sqliteAt(tb, sqlitestore.Config{})
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=10000")
	if err != nil {
		tb.Fatal(err)
	}
	CloseAtEnd(tb, db)
	return s, db
}

// sqliteAt opens and migrates a store in a new file, and returns the
// file's path.
func sqliteAt(tb testing.TB, cfg sqlitestore.Config) (*sqlitestore.Store, string) {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "consent.db")
	s, err := sqlitestore.Open(path, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	CloseAtEnd(tb, s)
	if err := s.Migrate(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return s, path
}

// PostgresURL returns a connection URL whose search_path is a new schema of
// its own, dropped when tb ends, so that runs never see each other's rows.
// It skips tb when DSNVar is unset.
func PostgresURL(tb testing.TB) string {
	tb.Helper()
	dsn := os.Getenv(DSNVar)
	if dsn == "" {
		tb.Skip("PostgreSQL tests skipped: set " + DSNVar +
			" (for example postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run them")
	}
	ctx := context.Background()
	var b [6]byte
	rand.Read(b[:])
	schema := "consent_test_" + hex.EncodeToString(b[:])
	exec := func(sql string) error {
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return err
		}
		_, err = c.Exec(ctx, sql)
		return errors.Join(err, c.Close(ctx))
	}
	if err := exec("CREATE SCHEMA " + schema); err != nil {
		tb.Fatalf("%s: %v", DSNVar, err)
	}
	tb.Cleanup(func() {
		if err := exec("DROP SCHEMA " + schema + " CASCADE"); err != nil {
			tb.Errorf("drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(dsn)
	if err != nil {
		tb.Fatalf("%s: %v", DSNVar, err)
	}
	q := u.Query()
	q.Set("search_path", schema) // pgx passes unknown parameters on as run-time settings
	u.RawQuery = q.Encode()
	return u.String()
}

// Postgres returns a migrated store in a schema of its own (see
// PostgresURL). It skips tb when DSNVar is unset.
func Postgres(tb testing.TB) *pgstore.Store {
	tb.Helper()
	return PostgresConfig(tb, pgstore.Config{})
}

// PostgresWithoutGroupCommit is Postgres with group commit off: every
// Update in a transaction of its own.
func PostgresWithoutGroupCommit(tb testing.TB) *pgstore.Store {
	tb.Helper()
	return PostgresConfig(tb, pgstore.Config{GroupCommit: store.GroupCommit{Off: true}})
}

// PostgresConfig is Postgres with a Config.
func PostgresConfig(tb testing.TB, cfg pgstore.Config) *pgstore.Store {
	tb.Helper()
	dsn := PostgresURL(tb)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(pool.Close)
	s := pgstore.New(pool, cfg)
	if err := s.Migrate(ctx); err != nil {
		tb.Fatal(err)
	}
	return s
}
