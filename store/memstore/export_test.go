package memstore

import (
	"slices"

	"github.com/consentkit/consentkit/consent"
)

// TamperAudit changes, behind the store's back, the entry of the company's
// audit log that has that Seq, as someone with access to the store's memory
// could: edit changes a copy that replaces it (moved to the chain of its new
// CompanyID, in Seq order); a nil edit deletes it. The head is left alone.
// It reports whether the entry was there.
func TamperAudit(s *Store, companyID string, seq int64, edit func(e *consent.AuditEntry)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	chain := s.audit[companyID]
	i := slices.IndexFunc(chain, func(e *consent.AuditEntry) bool { return e.Seq == seq })
	if i < 0 {
		return false
	}
	n := *chain[i]
	s.audit[companyID] = slices.Delete(slices.Clone(chain), i, i+1)
	if edit == nil {
		return true
	}
	edit(&n)
	to := s.audit[n.CompanyID]
	j, _ := slices.BinarySearchFunc(to, n.Seq, func(e *consent.AuditEntry, seq int64) int { return int(e.Seq - seq) })
	s.audit[n.CompanyID] = slices.Insert(slices.Clone(to), j, &n)
	return true
}
