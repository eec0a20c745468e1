package pgstore

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/store/internal/group"
	"github.com/consentkit/consentkit/store/internal/sqlrow"
	"github.com/consentkit/consentkit/wallet"
)

// behind is write-behind inside a group-commit batch (issue 13), for the
// rows nearly every paid call writes: its ledger entry, its wallet's
// balance and its audit entry. Each wallet and each audit chain head is
// read and locked on the server once per batch, by the first call that
// touches it (SELECT … FOR UPDATE, or the head's upsert); the calls'
// debits and credits are applied to the balances in memory, their entries
// chained from the heads in memory, and all of it is written in one round
// trip before COMMIT — or before anything in the batch reads the ledger or
// the audit log. A call's charge and append then cost no round trip of
// their own, where they cost three.
//
// A call that fails has what it wrote behind dropped with its savepoint:
// the buffer as the call began is put back (saved), which is also right
// when the call wrote the buffer out first, ROLLBACK TO having undone that
// write on the server. A ledger entry id that turns out to be taken is
// found only when the buffer is written: the batch is rolled back, the call
// that wrote the entry gets the conflict and the others run again
// (group.MemberError).
type behind struct {
	balances map[string]wallet.Amount     // each wallet's balance as the batch has it, locked on the server
	ledger   []pendingEntry               // ledger entries not yet written, in order
	heads    map[string]consent.AuditHead // each chain's head as the batch has it, locked on the server
	audit    []*consent.AuditEntry        // audit entries not yet written, in order
}

// pendingEntry is a ledger entry and the call that wrote it.
type pendingEntry struct {
	wallet.Entry
	call int
}

// snapshot is the buffer as it is, to put back when the call fails: what
// is appended is never changed, and a write of the buffer starts new
// slices, so sharing them is safe.
func (b behind) snapshot() behind {
	return behind{balances: maps.Clone(b.balances), ledger: b.ledger, heads: maps.Clone(b.heads), audit: b.audit}
}

// call is the index of the running call among those the batch ran.
func (t *batchTx) call() int { return max(t.calls-1, 0) }

// balance returns the company's balance as the batch has it, reading and
// locking its wallet first when the batch has not yet.
func (t *batchTx) balance(ctx context.Context, company string) (wallet.Amount, error) {
	if bal, ok := t.behind.balances[company]; ok {
		return bal, nil
	}
	var bal int64
	err := detached{t}.QueryRow(ctx, `SELECT balance FROM wallets WHERE company_id = $1 FOR UPDATE`, company).Scan(&bal)
	if err != nil {
		return 0, one(err, "company")
	}
	if t.behind.balances == nil {
		t.behind.balances = map[string]wallet.Amount{}
	}
	t.behind.balances[company] = wallet.Amount(bal)
	return wallet.Amount(bal), nil
}

// post applies entries, all of one company, to its balance and keeps them
// for the write: a debit (sign -1) only when the balance covers their sum
// (D4). A repeated id, among them or among the batch's, is a conflict at
// once; one taken by an entry already stored is found at the write.
func (t *batchTx) post(ctx context.Context, entries []*wallet.Entry, sign wallet.Amount) (wallet.Amount, error) {
	company := entries[0].CompanyID
	var sum wallet.Amount
	for _, e := range entries {
		if err := consent.CheckEntryText(e); err != nil {
			return 0, err
		}
		if e.CompanyID != company {
			return 0, consent.Errorf(consent.Invalid, "the entries of one debit must be of one company")
		}
		if e.Amount <= 0 {
			return 0, consent.Errorf(consent.Invalid, "a ledger entry's amount must be positive")
		}
		sum += e.Amount
	}
	bal, err := t.balance(ctx, company)
	if err != nil {
		return 0, err
	}
	if sign < 0 && bal < sum {
		return 0, &wallet.InsufficientFundsError{Required: sum, Balance: bal}
	}
	ids := make(map[string]bool, len(t.behind.ledger)+len(entries))
	for _, p := range t.behind.ledger {
		ids[p.ID] = true
	}
	for _, e := range entries {
		if ids[e.ID] {
			return 0, consent.Errorf(consent.Conflict, "ledger entry already exists")
		}
		ids[e.ID] = true
	}
	for _, e := range entries {
		t.behind.ledger = append(t.behind.ledger, pendingEntry{Entry: *e, call: t.call()})
	}
	bal += sign * sum
	t.behind.balances[company] = bal
	return bal, nil
}

// appendAudit chains e onto its company's head, locking and reading the
// head first when the batch has not yet; e gets its Seq, PrevHash and Hash,
// and a copy of it is kept for the write.
func (t *batchTx) appendAudit(ctx context.Context, e *consent.AuditEntry) error {
	head, ok := t.behind.heads[e.CompanyID]
	if !ok {
		var err error
		if head, err = lockHead(ctx, detached{t}, e.CompanyID); err != nil {
			return err
		}
		if t.behind.heads == nil {
			t.behind.heads = map[string]consent.AuditHead{}
		}
	}
	e.Seq, e.PrevHash, e.At = head.Seq+1, head.Hash, consent.UTC(e.At)
	e.Hash = consent.AuditHash(e)
	kept := *e
	t.behind.audit = append(t.behind.audit, &kept)
	t.behind.heads[e.CompanyID] = consent.AuditHead{CompanyID: e.CompanyID, Seq: e.Seq, Hash: e.Hash}
	return nil
}

// lockHead locks the company's audit chain head and returns it: the upsert
// also makes a concurrent first append wait, and leaves the head where it
// is (a new chain's head is seq 0 and the zero hash).
func lockHead(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, company string) (consent.AuditHead, error) {
	h := consent.AuditHead{CompanyID: company}
	var prev []byte
	err := q.QueryRow(ctx, `INSERT INTO audit_heads (company_id, seq, hash) VALUES ($1, 0, $2)
		ON CONFLICT (company_id) DO UPDATE SET seq = audit_heads.seq RETURNING seq, hash`,
		company, zeroHash).Scan(&h.Seq, &prev)
	if err != nil {
		return h, one(err, "company")
	}
	h.Hash, err = sqlrow.ScanDigest(prev)
	return h, err
}

// writeBehind writes what is kept — the ledger entries, the balances, the
// audit entries and their heads, in that order (a head moves onto an entry
// in the log, migration 0012) — in one round trip with the held framing
// statements.
func (t *batchTx) writeBehind(ctx context.Context) error {
	if len(t.behind.ledger) == 0 && len(t.behind.audit) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	ctx = context.WithoutCancel(ctx)
	ledger := len(t.behind.ledger) > 0
	br, err := t.sendBatch(ctx, func(b *pgx.Batch) {
		if ledger {
			queueLedger(b, t.behind.ledger, t.behind.balances)
		}
		if len(t.behind.audit) > 0 {
			queueAudit(b, t.behind.audit, t.behind.heads)
		}
	})
	if err != nil {
		return err
	}
	var taken error
	if ledger {
		inserted := make(map[string]bool, len(t.behind.ledger))
		rows, err := br.Query()
		if err == nil {
			var id string
			_, err = pgx.ForEachRow(rows, []any{&id}, func() error { inserted[id] = true; return nil })
		}
		if err != nil {
			br.Close()
			return mapErr(err)
		}
		for _, p := range t.behind.ledger {
			if !inserted[p.ID] {
				// Which call's it was is known only here: the batch is
				// rolled back, that call fails, the others run again.
				taken = &group.MemberError{Index: p.call, Err: consent.Errorf(consent.Conflict, "ledger entry already exists")}
				break
			}
		}
	}
	err = br.Close()
	switch {
	case taken != nil:
		t.broken = taken
		return taken
	case err != nil:
		return mapErr(err)
	}
	t.behind.ledger, t.behind.audit = nil, nil
	return nil
}

// queueLedger queues the insert of the entries, in order, and the update
// of the balances that changed. The insert returns the ids it inserted: a
// taken one is skipped, not an error, so that the write can say whose it
// was.
func queueLedger(b *pgx.Batch, entries []pendingEntry, balances map[string]wallet.Amount) {
	n := len(entries)
	var (
		ids, companies, kinds, refs = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		amounts                     = make([]int64, n)
		created                     = make([]time.Time, n)
	)
	for i, e := range entries {
		ids[i], companies[i], kinds[i], refs[i] = e.ID, e.CompanyID, string(e.Kind), e.Reference
		amounts[i], created[i] = int64(e.Amount), e.CreatedAt
	}
	b.Queue(`INSERT INTO ledger (id, company_id, kind, amount, reference, created_at)
		SELECT u.id, u.company_id, u.kind, u.amount, u.reference, u.created_at
		FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::timestamptz[]) WITH ORDINALITY
			AS u (id, company_id, kind, amount, reference, created_at, n)
		ORDER BY u.n
		ON CONFLICT (id) DO NOTHING RETURNING id`, ids, companies, kinds, amounts, refs, created)
	var cos []string
	var bals []int64
	for _, c := range slices.Sorted(maps.Keys(balances)) {
		cos, bals = append(cos, c), append(bals, int64(balances[c]))
	}
	b.Queue(`UPDATE wallets w SET balance = u.balance FROM unnest($1::text[], $2::bigint[]) AS u (company_id, balance)
		WHERE w.company_id = u.company_id AND w.balance <> u.balance`, cos, bals)
}

// queueAudit queues the insert of the entries and the move of the heads.
func queueAudit(b *pgx.Batch, entries []*consent.AuditEntry, heads map[string]consent.AuditHead) {
	n := len(entries)
	var (
		companies, actors, actions, targets, outcomes, requests, details = make([]string, n), make([]string, n),
			make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		seqs          = make([]int64, n)
		ats           = make([]time.Time, n)
		prevs, hashes = make([][]byte, n), make([][]byte, n)
	)
	for i, e := range entries {
		companies[i], seqs[i], ats[i], actors[i], actions[i], targets[i] = e.CompanyID, e.Seq, e.At, e.Actor, e.Action, e.Target
		outcomes[i], requests[i], details[i], prevs[i], hashes[i] = e.Outcome, e.RequestID, e.Detail, e.PrevHash[:], e.Hash[:]
	}
	b.Queue(`INSERT INTO audit_log (company_id, seq, at, actor, action, target, outcome, request_id, detail, prev_hash, hash)
		SELECT * FROM unnest($1::text[], $2::bigint[], $3::timestamptz[], $4::text[], $5::text[], $6::text[], $7::text[],
			$8::text[], $9::text[], $10::bytea[], $11::bytea[])`,
		companies, seqs, ats, actors, actions, targets, outcomes, requests, details, prevs, hashes)
	var (
		cos        []string
		hseqs      []int64
		headHashes [][]byte
	)
	for _, c := range slices.Sorted(maps.Keys(heads)) {
		h := heads[c]
		cos, hseqs, headHashes = append(cos, c), append(hseqs, h.Seq), append(headHashes, h.Hash[:])
	}
	b.Queue(`UPDATE audit_heads h SET seq = u.seq, hash = u.hash
		FROM unnest($1::text[], $2::bigint[], $3::bytea[]) AS u (company_id, seq, hash)
		WHERE h.company_id = u.company_id AND h.seq <> u.seq`, cos, hseqs, headHashes)
}
