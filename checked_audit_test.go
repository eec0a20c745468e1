package consentkit_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/consentkit/consentkit/consent"
)

// The audit rules of the checked Tx: an entry's text is ValidText and of
// its field's length, it names its company, actor, action and outcome, the
// entries of one AppendAudits are of one company, and a query is one that
// AuditQuery.Check passes.

// auditEntries makes n entries of the company's log.
func auditEntries(company string, n int) []*consent.AuditEntry {
	var out []*consent.AuditEntry
	for i := range n {
		out = append(out, &consent.AuditEntry{CompanyID: company, At: t0, Actor: "tok_1", Action: consent.AuditRetainBatch,
			Target: fmt.Sprint("cert-", i), Outcome: consent.AuditOK})
	}
	return out
}

// TestCheckedAuditAppend: an entry with invalid text, a field over its
// length, or without its action or company, is Invalid and appends
// nothing.
func TestCheckedAuditAppend(t *testing.T) {
	t.Parallel()
	overStores(t, func(t *testing.T, s consent.Store) {
		fixture(t, s)
		mustUpdate(t, s, func(tx consent.Tx) error { return tx.AppendAudits(ctx, auditEntries("acme", 3)) })
		for name, e := range map[string]consent.AuditEntry{
			"NUL in detail":     {CompanyID: "acme", Actor: "a", Action: "x.y", Outcome: "ok", Detail: "a\x00b"},
			"invalid UTF-8":     {CompanyID: "acme", Actor: "a\xff", Action: "x.y", Outcome: "ok"},
			"long target":       {CompanyID: "acme", Actor: "a", Action: "x.y", Outcome: "ok", Target: strings.Repeat("t", consent.MaxAuditField+1)},
			"long detail":       {CompanyID: "acme", Actor: "a", Action: "x.y", Outcome: "ok", Detail: strings.Repeat("d", consent.MaxAuditDetail+1)},
			"no action":         {CompanyID: "acme", Actor: "a", Outcome: "ok"},
			"no company":        {Actor: "a", Action: "x.y", Outcome: "ok"},
			"control in target": {CompanyID: "acme", Actor: "a", Action: "x.y", Outcome: "ok", Target: "\x1b[31m"},
		} {
			err := s.Update(ctx, func(tx consent.Tx) error { return tx.AppendAudit(ctx, &e) })
			wantCode(t, "AppendAudit("+name+")", err, consent.Invalid)
		}
		if n := chainLength(t, s, "acme"); n != 3 {
			t.Errorf("acme has %d audit entries after the refusals, want 3", n)
		}
	})
}

// TestCheckedAppendAudits: entries with invalid text, or of two companies,
// are Invalid and none is appended, the transaction going on to commit.
func TestCheckedAppendAudits(t *testing.T) {
	t.Parallel()
	overStores(t, func(t *testing.T, s consent.Store) {
		fixture(t, s)
		mustUpdate(t, s, func(tx consent.Tx) error { return tx.AppendAudits(ctx, auditEntries("acme", 3)) })
		badText := auditEntries("acme", 2)
		badText[1].Detail = "\x00"
		mixed := auditEntries("acme", 2)
		mixed[1].CompanyID = "other"
		for name, list := range map[string][]*consent.AuditEntry{"invalid text": badText, "two companies": mixed} {
			mustUpdate(t, s, func(tx consent.Tx) error {
				wantCode(t, "AppendAudits with "+name, tx.AppendAudits(ctx, list), consent.Invalid)
				return nil // commit: the refusal appended nothing
			})
		}
		for company, want := range map[string]int64{"acme": 3, "other": 0} {
			if n := chainLength(t, s, company); n != want {
				t.Errorf("%s has %d audit entries after the refusals, want %d", company, n, want)
			}
		}
	})
}

// TestCheckedAuditQuery: a query without a company, with a limit of 0 or
// over consent.MaxAuditPage, a negative AfterSeq or an action prefix that
// is not ValidText is Invalid.
func TestCheckedAuditQuery(t *testing.T) {
	t.Parallel()
	overStores(t, func(t *testing.T, s consent.Store) {
		fixture(t, s)
		for name, q := range map[string]consent.AuditQuery{
			"no company":     {Limit: 10},
			"zero limit":     {CompanyID: "acme"},
			"limit too big":  {CompanyID: "acme", Limit: consent.MaxAuditPage + 1},
			"negative after": {CompanyID: "acme", Limit: 10, AfterSeq: -1},
			"NUL in action":  {CompanyID: "acme", Limit: 10, ActionPrefix: "verify\x00"},
		} {
			err := s.View(ctx, func(tx consent.Tx) error { _, err := tx.AuditEntries(ctx, q); return err })
			wantCode(t, "AuditEntries("+name+")", err, consent.Invalid)
		}
	})
}
