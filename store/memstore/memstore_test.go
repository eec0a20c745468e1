package memstore_test

import (
	"testing"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/store/memstore"
	"github.com/consentkit/consentkit/store/storetest"
)

func open(tb testing.TB) consent.Store {
	s := memstore.New()
	tb.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(tb testing.TB) consent.Store { return open(tb) })
}

func BenchmarkDebit(b *testing.B) {
	storetest.BenchmarkDebit(b, func(tb testing.TB) consent.Store { return open(tb) })
}
