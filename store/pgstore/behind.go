package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/store/internal/behind"
	"github.com/consentkit/consentkit/store/internal/sqlrow"
	"github.com/consentkit/consentkit/wallet"
)

// A batch's charges and audit entries are written behind (package behind):
// each wallet is read and locked with SELECT … FOR UPDATE, and each audit
// chain head with its upsert (lockHead), once per batch; what the calls
// wrote is written, with the balances and heads, in one round trip before
// COMMIT — or before anything in the batch reads the ledger or the audit
// log. A call's charge and append then cost no round trip of their own,
// where they cost three.

// shared returns t when its calls write behind (behind.Batch.Shared),
// nil when its one call writes directly.
func (t *batchTx) shared() *batchTx {
	if !t.wb.Shared() {
		return nil
	}
	return t
}

// LoadBalance reads and locks the company's wallet (behind.Source).
func (t *batchTx) LoadBalance(ctx context.Context, company string) (wallet.Amount, error) {
	var bal int64
	err := detached{t}.QueryRow(ctx, `SELECT balance FROM wallets WHERE company_id = $1 FOR UPDATE`, company).Scan(&bal)
	if err != nil {
		return 0, one(err, "company")
	}
	return wallet.Amount(bal), nil
}

// LoadHead locks and reads the company's audit chain head (behind.Source).
func (t *batchTx) LoadHead(ctx context.Context, company string) (consent.AuditHead, error) {
	return lockHead(ctx, detached{t}, company)
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
	if !t.wb.Pending() {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	ctx = context.WithoutCancel(ctx)
	ledger, audit := t.wb.Ledger(), t.wb.Audit()
	br, err := t.sendBatch(ctx, func(b *pgx.Batch) {
		if len(ledger) > 0 {
			cos, bals := t.wb.Balances()
			queueLedger(b, ledger, cos, bals)
		}
		if len(audit) > 0 {
			queueAudit(b, audit, t.wb.Heads())
		}
	})
	if err != nil {
		return err
	}
	var taken error
	if len(ledger) > 0 {
		inserted := make(map[string]bool, len(ledger))
		rows, err := br.Query()
		if err == nil {
			var id string
			_, err = pgx.ForEachRow(rows, []any{&id}, func() error { inserted[id] = true; return nil })
		}
		if err != nil {
			_ = br.Close() // err says why; Close would say it again
			return mapErr(err)
		}
		// Which call's it was is known only here: the batch is rolled
		// back, that call fails, the others run again.
		taken = behind.Taken(ledger, func(id string) bool { return inserted[id] })
	}
	err = br.Close()
	switch {
	case taken != nil:
		t.broken = taken
		return taken
	case err != nil:
		return mapErr(err)
	}
	t.wb.Written()
	return nil
}

// queueLedger queues the insert of the entries, in order, and the update
// of the balances that changed. The insert returns the ids it inserted: a
// taken one is skipped, not an error, so that the write can say whose it
// was.
func queueLedger(b *pgx.Batch, entries []behind.Entry, cos []string, balances []wallet.Amount) {
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
	bals := make([]int64, len(balances))
	for i, bal := range balances {
		bals[i] = int64(bal)
	}
	b.Queue(`UPDATE wallets w SET balance = u.balance FROM unnest($1::text[], $2::bigint[]) AS u (company_id, balance)
		WHERE w.company_id = u.company_id AND w.balance <> u.balance`, cos, bals)
}

// queueAudit queues the insert of the entries and the move of the heads.
func queueAudit(b *pgx.Batch, entries []*consent.AuditEntry, heads []consent.AuditHead) {
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
	for _, h := range heads {
		cos, hseqs, headHashes = append(cos, h.CompanyID), append(hseqs, h.Seq), append(headHashes, h.Hash[:])
	}
	b.Queue(`UPDATE audit_heads h SET seq = u.seq, hash = u.hash
		FROM unnest($1::text[], $2::bigint[], $3::bytea[]) AS u (company_id, seq, hash)
		WHERE h.company_id = u.company_id AND h.seq <> u.seq`, cos, hseqs, headHashes)
}
