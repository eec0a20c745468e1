package pgstore_test

import (
	"context"
	"log"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/store"
	"github.com/consentkit/consentkit/store/pgstore"
)

// Open a PostgreSQL database by URL, migrate it and give it to a Service.
// It needs a server, so this example is compiled but not run.
func ExampleOpen() {
	ctx := context.Background()
	st, err := pgstore.Open(ctx, "postgres://user@db:5432/consent?sslmode=disable", pgstore.Config{
		GroupCommit: store.GroupCommit{MaxBatch: 32}, // on by default; Off: true for a transaction per call
	})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil { // safe on every start; instances take turns
		log.Fatal(err)
	}
	svc, err := consentkit.NewService(st, consentkit.Config{})
	if err != nil {
		log.Fatal(err)
	}
	_ = svc
}

// A store on a pool the application has already; its Close leaves the pool
// open. Tables go into the schema of the pool's search_path.
func ExampleNew() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://user@db:5432/app?sslmode=disable&search_path=consent")
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	st := pgstore.New(pool)
	if err := st.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
}
