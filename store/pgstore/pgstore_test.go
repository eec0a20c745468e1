package pgstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/store/pgstore"
	"github.com/consentkit/consentkit/store/storetest"
)

// DSNVar names the environment variable that holds the test database URL.
const dsnVar = "CONSENT_TEST_POSTGRES_URL"

// open returns a migrated store in a schema of its own, dropped when t ends,
// so that test runs never see each other's rows.
func open(t testing.TB) *pgstore.Store {
	t.Helper()
	dsn := os.Getenv(dsnVar)
	if dsn == "" {
		t.Skip("PostgreSQL tests skipped: set " + dsnVar + " (for example postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run them")
	}
	ctx := context.Background()
	var b [6]byte
	rand.Read(b[:])
	schema := "consent_test_" + hex.EncodeToString(b[:])

	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect to %s: %v", dsnVar, err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})

	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s := pgstore.New(pool)
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(tb testing.TB) consent.Store { return open(tb) })
}

// Migrate is safe to call again: a restarted instance finds nothing to do.
func TestMigrateTwice(t *testing.T) {
	s := open(t)
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatalf("second Migrate: %v", err)
	}
}

func BenchmarkDebit(b *testing.B) {
	storetest.BenchmarkDebit(b, func(tb testing.TB) consent.Store { return open(tb) })
}
