package seed_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/seed"
	"github.com/consentkit/consentkit/store/memstore"
)

// Load a scenario into an empty store in one transaction: everything or,
// on an error that names the item at fault, nothing.
func ExampleLoad() {
	ctx := context.Background()
	svc, err := consentkit.NewService(memstore.New(), consentkit.Config{})
	if err != nil {
		panic(err)
	}
	f, err := seed.Parse(strings.NewReader(`{
	  "companies": [{"id": "acme", "name": "Acme Insurance", "balance": 25.5,
	    "properties": [{"id": "acme-web", "name": "Quote form"}],
	    "tokens": [{"token": "a-token-of-16-bytes-at-least"}]}],
	  "sessions": [{"id": "s1", "company_id": "acme", "property_id": "acme-web",
	    "created_at": "2026-11-20T10:00:00Z", "events": [{"type": 4, "data": {}, "timestamp": 1}]}],
	  "certificates": [{"id": "cert-1", "company_id": "acme", "property_id": "acme-web", "session_id": "s1",
	    "created_at": "2026-11-20T10:00:00Z", "email": "jane@example.com",
	    "consents": [{"text": "I agree to be contacted.", "types": ["tcpa"]}]}]
	}`))
	if err != nil {
		panic(err)
	}
	sum, err := seed.Load(ctx, svc, f)
	fmt.Printf("%+v %v\n", *sum, err)

	balance, _ := svc.Balance(ctx, "acme")
	fmt.Println("balance", balance)

	_, err = seed.Parse(strings.NewReader(`{"companies": [{"id": "acme", "nmae": "typo"}]}`))
	fmt.Println(err)
	// Output:
	// {Companies:1 Properties:1 Tokens:1 Sessions:1 Certificates:1 Webhooks:0 Profiles:0} <nil>
	// balance 25.5
	// seed: json: unknown field "nmae"
}
