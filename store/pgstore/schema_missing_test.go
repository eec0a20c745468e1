package pgstore

import (
	"context"
	"net/url"
	"os"
	"strings"
	"testing"
)

// TestMigrateWithoutSchemaSaysWhatToDo: "Tables go into the schema of the
// connection's search_path" (docs/operating.md). When no schema of that
// search_path exists, Migrate — which `consentkit migrate` and
// examples/server run, and which the CLI tells the operator to run — fails
// with an error that says so and what to do, not PostgreSQL's bare
// "no schema has been selected to create in (SQLSTATE 3F000)".
func TestMigrateWithoutSchemaSaysWhatToDo(t *testing.T) {
	dsn := os.Getenv("CONSENT_TEST_POSTGRES_URL")
	if dsn == "" {
		t.Skip("PostgreSQL tests skipped: set CONSENT_TEST_POSTGRES_URL")
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", "consent_test_no_such_schema")
	u.RawQuery = q.Encode()
	ctx := context.Background()
	s, err := Open(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	err = s.Migrate(ctx)
	if err == nil {
		t.Fatal("Migrate succeeded in a schema that does not exist")
	}
	for _, want := range []string{"consent_test_no_such_schema", "CREATE SCHEMA"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Migrate: %v; want it to say %q", err, want)
		}
	}
}
