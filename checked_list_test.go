package consentkit_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/wallet"
)

// The rules of the checked Tx for calls of many rows and for pages: the
// whole list is checked before the store sees any of it, so a refusal
// writes nothing and wins over what only the store would find (an unknown
// row, a taken key).

// TestCheckedUpdateSessions: a session listed twice, or one with invalid
// text, is Invalid and writes none — also after an unknown session, which
// the store alone would find (NotFound): the whole list is checked before
// a session is looked up.
func TestCheckedUpdateSessions(t *testing.T) {
	t.Parallel()
	overStores(t, func(t *testing.T, s consent.Store) {
		fixture(t, s)
		ids := []string{"b0", "b1", "b2", "b3", "s1"}
		mustUpdate(t, s, func(tx consent.Tx) error {
			for _, id := range ids[:4] {
				if err := tx.CreateSession(ctx, newSession(id, "acme", "acme-web")); err != nil {
					return err
				}
			}
			return nil
		})
		read := func() (out []*consent.Session) {
			mustView(t, s, func(tx consent.Tx) (err error) { out, err = tx.Sessions(ctx, ids); return err })
			return out
		}
		before := read()
		retained := func(ses *consent.Session) *consent.Session {
			n := *ses
			n.RetentionStatus, n.VideoStatus = consent.RetentionRetained, consent.VideoPending
			return &n
		}
		bad := *retained(before[3])
		bad.Video.Path = "bad\x00path"
		unknown := retained(newSession("b9", "acme", "acme-web"))
		for _, c := range []struct {
			name string
			list []*consent.Session
		}{
			{"a session twice", []*consent.Session{retained(before[0]), retained(before[1]), retained(before[0])}},
			{"invalid text", []*consent.Session{retained(before[0]), &bad}},
			{"an unknown session, then invalid text", []*consent.Session{unknown, &bad}},
			{"an unknown session, then one twice", []*consent.Session{unknown, retained(before[0]), retained(before[0])}},
		} {
			mustUpdate(t, s, func(tx consent.Tx) error {
				wantCode(t, "UpdateSessions with "+c.name, tx.UpdateSessions(ctx, c.list), consent.Invalid)
				return nil // commit: the refusal wrote nothing
			})
			if d := cmp.Diff(before, read()); d != "" {
				t.Errorf("UpdateSessions with %s changed sessions (-want +got):\n%s", c.name, d)
			}
		}
	})
}

// TestCheckedEnqueueJobs: a job with invalid text is Invalid and adds none
// of the list — also after a taken key, which the store alone would find
// (Conflict): every job's text is checked before a key is looked up. The
// refusal comes before anything is written, so the transaction can go on
// and commit.
func TestCheckedEnqueueJobs(t *testing.T) {
	t.Parallel()
	overStores(t, func(t *testing.T, s consent.Store) {
		mustUpdate(t, s, func(tx consent.Tx) error { return tx.EnqueueJob(ctx, newJob(consent.JobConvert, "s1", t0)) })
		// added counts the jobs new-1 and new-2 of kind webhook.
		added := func() (n int) {
			mustView(t, s, func(tx consent.Tx) error {
				for _, key := range []string{"new-1", "new-2"} {
					if _, err := tx.Job(ctx, "webhook", key); consent.ErrorCode(err) != consent.NotFound {
						n++
					}
				}
				return nil
			})
			return n
		}
		for _, c := range []struct {
			name string
			list []*consent.Job
		}{
			{"invalid text", []*consent.Job{newJob("webhook", "new-1", t0), newJob("webhook", "new\x00", t0)}},
			{"a taken key, then invalid text", []*consent.Job{newJob(consent.JobConvert, "s1", t0), newJob("webhook", "new\x00", t0)}},
		} {
			err := s.Update(ctx, func(tx consent.Tx) error { return tx.EnqueueJobs(ctx, c.list) })
			wantCode(t, "EnqueueJobs with "+c.name, err, consent.Invalid)
			if n := added(); n != 0 {
				t.Errorf("EnqueueJobs with %s added %d jobs", c.name, n)
			}
		}
		mustUpdate(t, s, func(tx consent.Tx) error {
			err := tx.EnqueueJobs(ctx, []*consent.Job{newJob("webhook", "new-1", t0), {Kind: "webhook", Key: "new-2", LastError: "\x01", RunAfter: t0, CreatedAt: t0}})
			wantCode(t, "EnqueueJobs with invalid text", err, consent.Invalid)
			return nil
		})
		if n := added(); n != 0 {
			t.Errorf("EnqueueJobs with invalid text added %d jobs", n)
		}
	})
}

// TestCheckedDebitAll: entries with invalid text, or of two companies, are
// Invalid and change nothing.
func TestCheckedDebitAll(t *testing.T) {
	t.Parallel()
	overStores(t, func(t *testing.T, s consent.Store) {
		fixture(t, s)
		mustUpdate(t, s, func(tx consent.Tx) error {
			_, err := tx.Credit(ctx, newEntry("top", "acme", wallet.TopUp, 10*wallet.Cent, t0))
			return err
		})
		ledger, bal := walletOf(t, s, "acme")
		two := func(a, b wallet.Amount) []*wallet.Entry {
			return []*wallet.Entry{newEntry("n1", "acme", wallet.RetainBatch, a, t0), newEntry("n2", "acme", wallet.RetainBatch, b, t0)}
		}
		badText := two(1, 1)
		badText[1].Reference = "bad\x00"
		mixed := two(1, 1)
		mixed[1].CompanyID = "other"
		for _, c := range []struct {
			name string
			list []*wallet.Entry
		}{
			{"invalid text", badText},
			{"two companies", mixed},
		} {
			mustUpdate(t, s, func(tx consent.Tx) error {
				_, err := tx.DebitAll(ctx, c.list)
				wantCode(t, "DebitAll with "+c.name, err, consent.Invalid)
				return nil // commit: the refusal changed nothing
			})
			unchangedWallet(t, s, "DebitAll with "+c.name, ledger, bal)
		}
	})
}

// TestCheckedPages: a page without a company, or with a limit of 0 or over
// consent.MaxPage, is Invalid on every list of pages (Page.Check).
func TestCheckedPages(t *testing.T) {
	t.Parallel()
	reads := map[string]func(tx consent.Tx, p consent.Page) error{
		"LedgerPage":      func(tx consent.Tx, p consent.Page) error { _, err := tx.LedgerPage(ctx, p); return err },
		"CertificatePage": func(tx consent.Tx, p consent.Page) error { _, err := tx.CertificatePage(ctx, p); return err },
		"SessionPage":     func(tx consent.Tx, p consent.Page) error { _, err := tx.SessionPage(ctx, p); return err },
		"RevocationPage":  func(tx consent.Tx, p consent.Page) error { _, err := tx.RevocationPage(ctx, p); return err },
	}
	overStores(t, func(t *testing.T, s consent.Store) {
		fixture(t, s)
		for name, read := range reads {
			for _, bad := range []consent.Page{
				{CompanyID: "acme"},
				{CompanyID: "acme", Limit: consent.MaxPage + 1},
				{Limit: 10},
			} {
				err := s.View(ctx, func(tx consent.Tx) error { return read(tx, bad) })
				wantCode(t, fmt.Sprintf("%s: page %+v", name, bad), err, consent.Invalid)
			}
		}
	})
}
