package sqlitestore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/store"
	"github.com/consentkit/consentkit/store/sqlitestore"
	"github.com/consentkit/consentkit/wallet"
)

// Open a SQLite file, migrate it and give it to a Service: the embedded
// default for a real deployment on one machine.
func ExampleOpen() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "consent")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	st, err := sqlitestore.Open(filepath.Join(dir, "consent.db"), sqlitestore.Config{})
	if err != nil {
		panic(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil { // explicit: you decide when
		panic(err)
	}

	svc, err := consentkit.NewService(st, consentkit.Config{}) // prices, clock, retention: defaults
	if err != nil {
		panic(err)
	}
	svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme Insurance"})
	balance, err := svc.TopUp(ctx, "acme", 25*wallet.Dollar, "invoice-1")
	fmt.Println(balance, err)
	// Output: 25 <nil>
}

// Group commit is on by default: concurrent writes share one transaction
// and one fsync. MaxBatch bounds a batch; Off gives every call its own
// transaction.
func ExampleOpen_groupCommit() {
	st, err := sqlitestore.Open("consent.db", sqlitestore.Config{
		GroupCommit: store.GroupCommit{MaxBatch: 32}, // or Off: true: a transaction per call
	})
	if err != nil {
		panic(err)
	}
	defer st.Close()
}
