package memstore_test

import (
	"testing"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/store/memstore"
	"github.com/consentkit/consentkit/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) consent.Store {
		s := memstore.New()
		t.Cleanup(func() { s.Close() })
		return s
	})
}
