package pgstore_test

import (
	"context"
	"testing"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(tb testing.TB) consent.Store { return teststore.Postgres(tb) })
}

// Migrate is safe to call again: a restarted instance finds nothing to do.
func TestMigrateTwice(t *testing.T) {
	s := teststore.Postgres(t)
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatalf("second Migrate: %v", err)
	}
}

func BenchmarkDebit(b *testing.B) {
	storetest.BenchmarkDebit(b, func(tb testing.TB) consent.Store { return teststore.Postgres(tb) })
}
