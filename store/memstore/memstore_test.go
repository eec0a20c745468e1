package memstore_test

import (
	"testing"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/store/memstore"
	"github.com/consentkit/consentkit/store/storetest"
)

// tamperer edits the store's memory through the test hook TamperAudit.
type tamperer struct{ s *memstore.Store }

func (m tamperer) ReplaceAudit(t testing.TB, companyID string, seq int64, e *consent.AuditEntry) {
	if !memstore.TamperAudit(m.s, companyID, seq, func(x *consent.AuditEntry) { *x = *e }) {
		t.Fatalf("no audit entry %s %d to replace", companyID, seq)
	}
}

func (m tamperer) DeleteAudit(t testing.TB, companyID string, seq int64) {
	if !memstore.TamperAudit(m.s, companyID, seq, nil) {
		t.Fatalf("no audit entry %s %d to delete", companyID, seq)
	}
}

func TestAuditTamper(t *testing.T) {
	storetest.RunAuditTamper(t, func(tb testing.TB) (consent.Store, storetest.AuditTamperer) {
		s := teststore.Memory(tb)
		return s, tamperer{s}
	})
}
