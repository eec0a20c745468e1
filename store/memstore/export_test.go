package memstore

import "github.com/consentkit/consentkit/consent"

// TamperAudit edits, behind the store's back, the entry of the company's
// audit log that has that Seq, as someone with access to the store's memory
// could: edit changes it in place; a nil edit deletes it. The head is left
// alone. It reports whether the entry was there.
func TamperAudit(s *Store, companyID string, seq int64, edit func(e *consent.AuditEntry)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	chain := s.audit[companyID]
	for i, e := range chain {
		if e.Seq != seq {
			continue
		}
		if edit == nil {
			s.audit[companyID] = append(chain[:i:i], chain[i+1:]...)
			return true
		}
		n := *e
		edit(&n)
		chain[i] = &n
		return true
	}
	return false
}
