package memstore_test

import (
	"context"
	"fmt"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/store/memstore"
)

// A Service on a store in memory, for tests and examples: nothing survives
// the process, and it needs no migration.
func ExampleNew() {
	ctx := context.Background()
	svc, err := consentkit.NewService(memstore.New(), consentkit.Config{})
	if err != nil {
		panic(err)
	}
	c, err := svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme Insurance"})
	fmt.Println(c.ID, c.Name, err)
	// Output: acme Acme Insurance <nil>
}
