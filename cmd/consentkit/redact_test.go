package main

import (
	"os"
	"strings"
	"testing"

	"github.com/consentkit/consentkit/internal/teststore"
)

// TestRedactQueryPassword: a PostgreSQL URL may carry its password as a
// query parameter (?password=…, which pgx and libpq read) as well as in
// its user information; messages never show it either way.
func TestRedactQueryPassword(t *testing.T) {
	for _, dsn := range []string{
		"postgres://app@db.example:5432/consent?sslmode=require&password=hunter2-secret",
		"postgresql://app@db.example/consent?password=hunter2-secret",
		"postgres://app:hunter2-secret@db.example/consent",
	} {
		if got := redact(dsn); strings.Contains(got, "hunter2-secret") {
			t.Errorf("redact(%q) = %q: it shows the password", dsn, got)
		}
	}
}

// TestDSNPasswordNotPrinted: a command refused on a database that is not
// migrated names the database without the password of $CONSENTKIT_DSN.
func TestDSNPasswordNotPrinted(t *testing.T) {
	dsn := teststore.PostgresURL(t) + "&password=hunter2-secret" // trust authentication ignores it
	b := &backend{name: "direct", env: map[string]string{DSNEnv: dsn}, clock: &clock{t: start}, openStore: openStore}
	code, out, errs := b.run(t, "companies", "list")
	if code != 1 || !strings.Contains(errs, "consentkit migrate") {
		t.Fatalf("exit %d, %q %q; want 1 and a word about migrate", code, out, errs)
	}
	if strings.Contains(out+errs, "hunter2-secret") {
		t.Errorf("the password of $%s was printed: %s", DSNEnv, errs)
	}
}

// TestKeywordDSNRefused: a libpq keyword=value connection string is not
// read: it is refused as a usage error, without echoing it (it may hold a
// password), and without being taken for the name of a SQLite file that
// migrate would create.
func TestKeywordDSNRefused(t *testing.T) {
	t.Chdir(t.TempDir())
	const dsn = "host=db.example user=app password=hunter2-secret dbname=consent"
	for _, args := range [][]string{{"migrate", "-dsn", dsn}, {"companies", "list", "-dsn", dsn}} {
		b := &backend{name: "direct", env: map[string]string{}, clock: &clock{t: start}, openStore: openStore}
		code, out, errs := b.run(t, args...)
		if code != 2 || !strings.Contains(errs, "postgres://") {
			t.Errorf("%s: exit %d, %q; want 2 and a word on postgres:// URLs", args[0], code, errs)
		}
		if strings.Contains(out+errs, "hunter2-secret") {
			t.Errorf("%s: the password was printed: %s", args[0], errs)
		}
	}
	if entries, _ := os.ReadDir("."); len(entries) != 0 {
		t.Errorf("files were created: %v", entries)
	}
}
