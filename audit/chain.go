// Package audit holds the audit log's hash chains (D42): the canonical
// encoding of an entry and its hash (Encoding, Hash), which a store gives
// each entry it appends, and the checks that no entry of a company's log
// was edited, inserted, deleted or moved since the store appended it. The checks read through the consent.Store they are given,
// and write nothing: a Service's Store, or, for a store opened by an
// operator's tool, consentkit.Checked of it, so that its reads are checked
// as the Service's are before the store sees them. (audit does not wrap
// the store itself: the stores' conformance suite uses it, and depends on
// no Service.)
//
//	n, err := audit.VerifyChain(ctx, svc.Store(), "acme")
//	if ce, ok := errors.AsType[*audit.ChainError](err); ok {
//		log.Printf("entry %d of %s: %s", ce.Seq, ce.CompanyID, ce.Reason)
//	}
//
// A long chain is checked in bounded runs (CheckChain), each of a few read
// transactions, so that a check never holds the database for long.
package audit

import (
	"context"
	"errors"
	"fmt"

	"github.com/consentkit/consentkit/consent"
)

// ChainError reports where a company's audit chain is broken: the
// first entry that is missing, out of place, edited or not linked to the one
// before it, or a head that does not match the last entry.
type ChainError struct {
	CompanyID string
	Seq       int64 // the first entry found wrong
	Reason    string
}

func (e *ChainError) Error() string {
	return fmt.Sprintf("audit log of %s is broken at entry %d: %s", e.CompanyID, e.Seq, e.Reason)
}

// MaxCheck is the most entries one CheckChain call checks.
const MaxCheck = 100_000

// Run is what CheckChain found in one bounded run over a company's audit
// chain.
type Run struct {
	CompanyID string
	// From is the first entry the run was asked to check.
	From int64
	// Checked is how many entries it checked: From to Last.
	Checked int64
	// Last is the last entry checked; From-1 when none was.
	Last int64
	// Head is the number of entries the chain's head recorded when the run
	// began.
	Head int64
	// Next is the entry to resume from (CheckChain's from) when the
	// run stopped at its limit before the end of the chain; 0 when it
	// reached the end, or found the chain broken.
	Next int64
}

// CheckChain checks at most limit entries (1 to MaxCheck) of the
// company's audit chain, starting at entry from (1, or 0, for the start of
// the chain): each entry's Seq follows the one before, its PrevHash is the
// Hash before it, and its Hash is Hash of its fields; once the walk
// reaches the end of the chain, the last entry is checked against the head
// the store keeps apart. A run that stops at its limit says in Next where
// the following run resumes, so a long chain is checked in bounded steps,
// each of a few transactions (one per consent.MaxAuditPage entries).
//
// A run that resumes re-checks entry from-1 against its own hash and links
// entry from to it. It returns a *ChainError naming the first broken
// entry when the chain is broken, with what it checked before it; NotFound
// when the company does not exist; Invalid for a limit out of range, or a
// from past the end of the chain.
//
// Appends made meanwhile are fine: the head is read before the walk, and
// entries past it are checked too, up to the head read after the walk.
// st is read as given: a checked store (see the package doc).
func CheckChain(ctx context.Context, st consent.Store, companyID string, from int64, limit int) (Run, error) {
	from = max(from, 1)
	res := Run{CompanyID: companyID, From: from, Last: from - 1}
	if limit < 1 || limit > MaxCheck {
		return res, consent.Errorf(consent.Invalid, "limit must be 1 to %d", MaxCheck)
	}
	head1, err := head(ctx, st, companyID)
	if err != nil {
		return res, err
	}
	res.Head = head1.Seq
	broken := func(seq int64, format string, args ...any) error {
		return &ChainError{CompanyID: companyID, Seq: seq, Reason: fmt.Sprintf(format, args...)}
	}
	var prev *consent.AuditEntry
	if from > 1 {
		page, err := entries(ctx, st, consent.AuditQuery{CompanyID: companyID, AfterSeq: from - 2, Limit: 1})
		switch {
		case err != nil:
			return res, err
		case (len(page) == 0 || page[0].Seq != from-1) && from-1 > head1.Seq:
			return res, consent.Errorf(consent.Invalid, "from %d is past the end of the audit log of %s (%d entries)", from, companyID, head1.Seq)
		case len(page) == 0 || page[0].Seq != from-1:
			return res, broken(from-1, "entry %d is missing", from-1)
		case page[0].Hash != Hash(page[0]):
			return res, broken(from-1, "its content does not match its hash")
		case page[0].Seq == head1.Seq && page[0].Hash != head1.Hash:
			return res, broken(from-1, "it is not the entry the chain's head recorded")
		}
		prev = page[0]
	}
	var (
		sawH1 = head1.Seq < from // the head is behind this run's entries
		more  bool               // an entry follows the last one checked
	)
	for !more {
		// Ask for one entry past the limit, to know whether the chain ends.
		want := min(int64(limit)-res.Checked+1, consent.MaxAuditPage)
		page, err := entries(ctx, st, consent.AuditQuery{CompanyID: companyID, AfterSeq: res.Last, Limit: int(want)})
		if err != nil {
			return res, err
		}
		for _, e := range page {
			if res.Checked == int64(limit) {
				more = true
				break
			}
			wantSeq := int64(1)
			var wantPrev consent.Digest
			if prev != nil {
				wantSeq, wantPrev = prev.Seq+1, prev.Hash
			}
			switch {
			case e.Seq != wantSeq:
				return res, broken(wantSeq, "entry %d is missing (the next is %d)", wantSeq, e.Seq)
			case e.CompanyID != companyID:
				return res, broken(e.Seq, "the entry names company %q", e.CompanyID)
			case e.PrevHash != wantPrev:
				return res, broken(e.Seq, "its previous hash is not the hash of entry %d", e.Seq-1)
			case e.Hash != Hash(e):
				return res, broken(e.Seq, "its content does not match its hash")
			case e.Seq == head1.Seq && e.Hash != head1.Hash:
				return res, broken(e.Seq, "it is not the entry the chain's head recorded")
			}
			sawH1 = sawH1 || e.Seq == head1.Seq
			prev, res.Last = e, e.Seq
			res.Checked++
		}
		if int64(len(page)) < want {
			break // the end of the chain
		}
	}
	if more {
		res.Next = res.Last + 1
		return res, nil
	}
	if !sawH1 {
		return res, broken(res.Last+1, "the chain ends at entry %d but its head records %d entries", res.Last, head1.Seq)
	}
	if res.Last > head1.Seq {
		// Entries past the first head: appended during the walk, or added
		// behind the store's back. The head read now tells.
		head2, err := head(ctx, st, companyID)
		if err != nil {
			return res, err
		}
		switch {
		case res.Last > head2.Seq:
			return res, broken(head2.Seq+1, "entries follow the chain's head (entry %d)", head2.Seq)
		case res.Last == head2.Seq && prev.Hash != head2.Hash:
			return res, broken(res.Last, "it is not the entry the chain's head recorded")
		}
	}
	return res, nil
}

// VerifyChain checks the company's whole audit chain, as
// CheckChain does a part of it, run after run until the end. It
// returns the number of entries checked, and a *ChainError naming the
// first broken entry when the chain is broken.
func VerifyChain(ctx context.Context, st consent.Store, companyID string) (int64, error) {
	var n int64
	for from := int64(1); ; {
		c, err := CheckChain(ctx, st, companyID, from, MaxCheck)
		n += c.Checked
		if err != nil || c.Next == 0 {
			return n, err
		}
		from = c.Next
	}
}

// VerifyChains runs VerifyChain on every company's chain. It
// returns the number of entries checked and, when chains are broken, one
// *ChainError per broken chain, joined (errors.As finds the first).
func VerifyChains(ctx context.Context, st consent.Store) (int64, error) {
	var (
		total int64
		errs  []error
		after string
	)
	for {
		var ids []string
		err := st.View(ctx, func(tx consent.Tx) error {
			var err error
			ids, err = tx.CompanyIDs(ctx, after, 500)
			return err
		})
		if err != nil {
			return total, err
		}
		for _, id := range ids {
			n, err := VerifyChain(ctx, st, id)
			total += n
			var ce *ChainError
			if errors.As(err, &ce) {
				errs = append(errs, err)
			} else if err != nil {
				return total, err
			}
		}
		if len(ids) < 500 {
			return total, errors.Join(errs...)
		}
		after = ids[len(ids)-1]
	}
}

// head reads the head of the company's chain.
func head(ctx context.Context, st consent.Store, companyID string) (*consent.AuditHead, error) {
	var h *consent.AuditHead
	err := st.View(ctx, func(tx consent.Tx) error {
		var err error
		h, err = tx.AuditHead(ctx, companyID)
		return err
	})
	return h, err
}

// entries reads a page of the company's log.
func entries(ctx context.Context, st consent.Store, q consent.AuditQuery) ([]*consent.AuditEntry, error) {
	var out []*consent.AuditEntry
	err := st.View(ctx, func(tx consent.Tx) error {
		var err error
		out, err = tx.AuditEntries(ctx, q)
		return err
	})
	return out, err
}
