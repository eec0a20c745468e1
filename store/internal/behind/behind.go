// Package behind is write-behind inside a group-commit batch,
// for the rows nearly every paid call writes: its ledger entry, its
// wallet's balance and its audit entry. The SQL stores keep them in a
// Buffer while the batch's calls run and write them in one go before the
// commit, or before anything in the batch reads the ledger or the audit
// log. Each wallet and each audit chain head is read (and, where other
// writers exist, locked) once per batch, by the first call that touches
// it; the calls' debits and credits are applied to the balances in memory
// and their audit entries chained from the heads in memory.
//
//	var b behind.Batch                            // one per batch transaction
//	balance, err := b.Post(ctx, src, entries, -1) // a debit, applied in memory
//	err = b.Append(ctx, src, entry)               // chained from the head in memory
//	// before the commit: write b.Ledger(), b.Balances(), b.Audit() and
//	// b.Heads(), then b.Written()
//
// A call that fails has what it wrote behind dropped with its savepoint:
// the store's Batch puts back the buffer as the call began (UndoCall).
// That is also right when the call wrote the buffer out first, since
// rolling back to the savepoint undid that write. A ledger entry id that
// turns out to be taken is found only when the buffer is written: Taken
// names the call whose entry it was (group.MemberError), so that the batch
// is rolled back, that call fails and the others run again.
package behind

import (
	"context"
	"maps"
	"slices"

	"github.com/consentkit/consentkit/audit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/store/internal/group"
	"github.com/consentkit/consentkit/wallet"
)

// Source reads the rows a batch holds in its Buffer, the first time the
// batch needs them, and locks them where other writers exist.
type Source interface {
	// LoadBalance returns the company's balance; a NotFound error when
	// there is no such company.
	LoadBalance(ctx context.Context, company string) (wallet.Amount, error)
	// LoadHead returns the head of the company's audit chain (seq 0 and
	// the zero hash for a chain without entries); a NotFound error when
	// there is no such company.
	LoadHead(ctx context.Context, company string) (consent.AuditHead, error)
}

// Entry is a ledger entry not yet written, and the call that wrote it:
// its index among the calls of the batch, counted as group.MemberError
// counts them.
type Entry struct {
	wallet.Entry
	Call int
}

// Batch is the write-behind of one group-commit batch: its Buffer, the
// buffer as the running call began, and how many calls began inside a
// savepoint of their own. A store's batch transaction keeps one and calls
// BeginCall from its Savepoint and UndoCall from its RollbackTo.
type Batch struct {
	Buffer
	saved Buffer
	calls int
}

// BeginCall notes that a call begins inside a savepoint of its own: what
// it writes behind is its own, and UndoCall drops it.
func (b *Batch) BeginCall() {
	b.call = b.calls
	b.calls++
	b.saved = b.Snapshot()
}

// UndoCall puts back the buffer as the running call began.
func (b *Batch) UndoCall() { b.Buffer = b.saved }

// Shared reports whether the batch runs its calls inside savepoints, as a
// batch of more than one call does. A call that runs alone gains nothing
// from the buffer (it would still read its wallet and head, then write
// them) and writes directly, as without group commit.
func (b *Batch) Shared() bool { return b.calls > 0 }

// Buffer is what a batch's calls wrote behind. The zero value is empty.
type Buffer struct {
	balances map[string]wallet.Amount     // each wallet's balance as the batch has it
	ledger   []Entry                      // ledger entries not yet written, in order
	heads    map[string]consent.AuditHead // each chain's head as the batch has it
	audit    []*consent.AuditEntry        // audit entries not yet written, in order
	call     int                          // the running call, for the entries it posts
}

// Snapshot is the buffer as it is, to put back when a call fails: what is
// appended is never changed, and Written starts new slices, so sharing
// them is safe.
func (b *Buffer) Snapshot() Buffer {
	return Buffer{balances: maps.Clone(b.balances), ledger: b.ledger, heads: maps.Clone(b.heads), audit: b.audit, call: b.call}
}

// Pending reports whether there are entries to write.
func (b *Buffer) Pending() bool { return len(b.ledger) > 0 || len(b.audit) > 0 }

// Balance returns the company's balance as the batch has it, loading it
// from src the first time.
func (b *Buffer) Balance(ctx context.Context, src Source, company string) (wallet.Amount, error) {
	if bal, ok := b.balances[company]; ok {
		return bal, nil
	}
	bal, err := src.LoadBalance(ctx, company)
	if err != nil {
		return 0, err
	}
	if b.balances == nil {
		b.balances = map[string]wallet.Amount{}
	}
	b.balances[company] = bal
	return bal, nil
}

// Post applies entries, all of one company, to its balance and keeps them
// for the write, as the running call's: a debit (sign -1) only when the
// balance covers their sum (D4), a credit (sign 1) always. A repeated id,
// among them or among the batch's, is a conflict at once; one taken by an
// entry already stored is found at the write (Taken). It returns the new
// balance.
func (b *Buffer) Post(ctx context.Context, src Source, entries []*wallet.Entry, sign wallet.Amount) (wallet.Amount, error) {
	if len(entries) == 0 {
		return 0, consent.Errorf(consent.Invalid, "no ledger entries")
	}
	company := entries[0].CompanyID
	sum, err := wallet.Sum(entries)
	if err != nil {
		return 0, err
	}
	bal, err := b.Balance(ctx, src, company)
	if err != nil {
		return 0, err
	}
	if sign < 0 && bal < sum {
		return 0, &wallet.InsufficientFundsError{Required: sum, Balance: bal}
	}
	if sign > 0 {
		if _, err := wallet.Add(bal, sum); err != nil {
			return 0, err
		}
	}
	ids := make(map[string]bool, len(b.ledger)+len(entries))
	for _, p := range b.ledger {
		ids[p.ID] = true
	}
	for _, e := range entries {
		if ids[e.ID] {
			return 0, consent.Errorf(consent.Conflict, "ledger entry already exists")
		}
		ids[e.ID] = true
	}
	for _, e := range entries {
		b.ledger = append(b.ledger, Entry{Entry: *e, Call: b.call})
	}
	bal += sign * sum
	b.balances[company] = bal
	return bal, nil
}

// Append chains e onto its company's head, loading the head from src the
// first time: e gets its Seq, PrevHash and Hash, and a copy of it is kept
// for the write. e's text must have been checked.
func (b *Buffer) Append(ctx context.Context, src Source, e *consent.AuditEntry) error {
	head, ok := b.heads[e.CompanyID]
	if !ok {
		var err error
		if head, err = src.LoadHead(ctx, e.CompanyID); err != nil {
			return err
		}
		if b.heads == nil {
			b.heads = map[string]consent.AuditHead{}
		}
	}
	e.Seq, e.PrevHash, e.At = head.Seq+1, head.Hash, consent.UTC(e.At)
	e.Hash = audit.Hash(e)
	kept := *e
	b.audit = append(b.audit, &kept)
	b.heads[e.CompanyID] = consent.AuditHead{CompanyID: e.CompanyID, Seq: e.Seq, Hash: e.Hash}
	return nil
}

// Ledger returns the ledger entries to write, in order.
func (b *Buffer) Ledger() []Entry { return b.ledger }

// Audit returns the audit entries to write, in order.
func (b *Buffer) Audit() []*consent.AuditEntry { return b.audit }

// Balances returns the companies whose balances the batch holds, sorted,
// and their balances.
func (b *Buffer) Balances() ([]string, []wallet.Amount) {
	cos := slices.Sorted(maps.Keys(b.balances))
	bals := make([]wallet.Amount, len(cos))
	for i, c := range cos {
		bals[i] = b.balances[c]
	}
	return cos, bals
}

// Heads returns the heads the batch holds, by company.
func (b *Buffer) Heads() []consent.AuditHead {
	heads := make([]consent.AuditHead, 0, len(b.heads))
	for _, c := range slices.Sorted(maps.Keys(b.heads)) {
		heads = append(heads, b.heads[c])
	}
	return heads
}

// Written empties the entries once they are written. The balances and the
// heads stay: they are what the store now holds.
func (b *Buffer) Written() { b.ledger, b.audit = nil, nil }

// Taken returns the error of the first of the entries whose id the write
// found taken (inserted reports the ones it wrote): a group.MemberError
// for the call that wrote it. Nil when every entry was written.
func Taken(entries []Entry, inserted func(id string) bool) error {
	for _, p := range entries {
		if !inserted(p.ID) {
			return &group.MemberError{Index: p.Call, Err: consent.Errorf(consent.Conflict, "ledger entry already exists")}
		}
	}
	return nil
}
