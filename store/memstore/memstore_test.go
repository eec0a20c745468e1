package memstore_test

import (
	"testing"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(tb testing.TB) consent.Store { return teststore.Memory(tb) })
}

func BenchmarkDebit(b *testing.B) {
	storetest.BenchmarkDebit(b, func(tb testing.TB) consent.Store { return teststore.Memory(tb) })
}
