package sqlitestore_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/store/sqlitestore"
	"github.com/consentkit/consentkit/store/storetest"
)

func open(t testing.TB) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(filepath.Join(t.TempDir(), "consent.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(tb testing.TB) consent.Store { return open(tb) })
}

func BenchmarkDebit(b *testing.B) {
	storetest.BenchmarkDebit(b, func(tb testing.TB) consent.Store { return open(tb) })
}
