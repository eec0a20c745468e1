package memstore_test

import (
	"strings"
	"testing"
	"time"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/store/memstore"
	"github.com/consentkit/consentkit/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(tb testing.TB) consent.Store { return teststore.Memory(tb) })
}

func BenchmarkDebit(b *testing.B) {
	storetest.BenchmarkDebit(b, func(tb testing.TB) consent.Store { return teststore.Memory(tb) })
}

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

// integrityTamperer edits the store's memory through its test hooks.
type integrityTamperer struct{ s *memstore.Store }

func (m integrityTamperer) ReplaceConsentText(t testing.TB, id, old, new string) {
	if !memstore.TamperCertificate(m.s, id, func(c *consent.Certificate) {
		c.Records[0].Text = strings.Replace(c.Records[0].Text, old, new, 1)
	}) {
		t.Fatalf("no certificate %s", id)
	}
}

func (m integrityTamperer) ShiftCreatedAt(t testing.TB, id string) {
	if !memstore.TamperCertificate(m.s, id, func(c *consent.Certificate) { c.CreatedAt = c.CreatedAt.Add(time.Second) }) {
		t.Fatalf("no certificate %s", id)
	}
}

func (m integrityTamperer) ReplaceInRecording(t testing.TB, sessionID, old, new string) {
	if !memstore.TamperEvents(m.s, sessionID, func(chunks [][]byte) {
		chunks[0] = []byte(strings.Replace(string(chunks[0]), old, new, 1))
	}) {
		t.Fatalf("no events of %s", sessionID)
	}
}

func TestIntegrityTamper(t *testing.T) {
	storetest.RunIntegrityTamper(t, func(tb testing.TB) (consent.Store, storetest.IntegrityTamperer) {
		s := teststore.Memory(tb)
		return s, integrityTamperer{s}
	})
}
