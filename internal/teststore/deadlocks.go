package teststore

import (
	"context"
	"errors"
	"sync/atomic"

	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Deadlocks is a pgx query tracer that counts the statements PostgreSQL
// aborted to break a deadlock (SQLSTATE 40P01) on the connections of the
// pool it traces: pgstore runs such a transaction again, so the calls
// succeed all the same, and the count shows what they cost. Set it as a
// pool config's ConnConfig.Tracer.
type Deadlocks struct{ N atomic.Int64 }

// TraceQueryStart implements pgx.QueryTracer.
func (d *Deadlocks) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}

// TraceQueryEnd implements pgx.QueryTracer.
func (d *Deadlocks) TraceQueryEnd(_ context.Context, _ *pgx.Conn, data pgx.TraceQueryEndData) {
	var pe *pgconn.PgError
	if errors.As(data.Err, &pe) && pe.Code == "40P01" {
		d.N.Add(1)
	}
}

// Pool opens a pool of the database at url whose statements d counts,
// closed when t ends.
func (d *Deadlocks) Pool(t testing.TB, url string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.Tracer = d
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}
