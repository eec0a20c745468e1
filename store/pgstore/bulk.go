package pgstore

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/consentkit/consentkit/audit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/store/internal/sqlrow"
	"github.com/consentkit/consentkit/wallet"
)

// The Tx methods that read or write many rows at once pass
// each column as one array parameter, which unnest turns back into rows:
// one statement, and one round trip, whatever the number of rows.

// nullBytes returns sqlrow's digest value as a bytea array element.
func nullBytes(v any) []byte {
	b, _ := v.([]byte)
	return b
}

// nullTimePtr returns nil for the zero time, an array's NULL element.
func nullTimePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// Sessions looks each session up by its key — a lateral subquery per id,
// so that no plan, whatever the table's size or statistics, scans the
// table — and locks them in the order of their ids (sorted and without
// repeats here), so that transactions locking overlapping sets take them
// in one order and never deadlock.
func (t *tx) Sessions(ctx context.Context, ids []string) ([]*consent.Session, error) {
	out := make([]*consent.Session, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	sorted := slices.Clone(ids)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	rows, err := t.tx.Query(ctx, `SELECT s.* FROM unnest($1::text[]) AS u (id)
		CROSS JOIN LATERAL (SELECT `+sqlrow.SessionColumns+` FROM sessions WHERE id = u.id LIMIT 1`+t.lock+`) AS s`, sorted)
	list, err := collect(rows, err, dialect.ScanSession)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]*consent.Session, len(list))
	for _, s := range list {
		byID[s.ID] = s
	}
	for i, id := range ids {
		if s, ok := byID[id]; ok {
			c := *s // a repeated id gets a copy of its own
			out[i] = &c
		}
	}
	return out, nil
}

// UpdateSessions writes only when every session exists: the statement
// counts them first.
func (t *tx) UpdateSessions(ctx context.Context, list []*consent.Session) error {
	if len(list) == 0 {
		return nil
	}
	n := len(list)
	var (
		ids, rs, vs, paths = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		expires            = make([]time.Time, n)
		closed             = make([]*time.Time, n)
		sizes, ms          = make([]int64, n), make([]int64, n)
		shas               = make([][]byte, n)
	)
	for i, s := range list {
		ids[i], rs[i], vs[i], paths[i] = s.ID, string(s.RetentionStatus), string(s.VideoStatus), s.Video.Path
		expires[i], closed[i] = s.ExpiresAt, nullTimePtr(s.ClosedAt)
		sizes[i], ms[i], shas[i] = s.Video.Bytes, s.Video.Duration.Milliseconds(), nullBytes(sqlrow.Digest(s.Video.SHA256))
	}
	// The sessions are found by their key, in the count (a lateral lookup
	// per id) and in the update (id = ANY), so that no plan scans the table.
	tag, err := t.exec(ctx, `WITH u AS (
			SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::text[], $6::bigint[],
				$7::bytea[], $8::bigint[], $9::timestamptz[]) AS u (id, rs, vs, expires, path, size, sha, ms, closed)),
		n AS (SELECT count(*) AS found FROM u CROSS JOIN LATERAL (SELECT 1 FROM sessions WHERE id = u.id LIMIT 1) AS x)
		UPDATE sessions s SET retention_status = u.rs, video_status = u.vs, expires_at = u.expires,
			video_path = u.path, video_bytes = u.size, video_sha256 = u.sha, video_duration_ms = u.ms, closed_at = u.closed
		FROM u WHERE s.id = u.id AND s.id = ANY($1) AND (SELECT found FROM n) = $10`,
		ids, rs, vs, expires, paths, sizes, shas, ms, closed, n)
	if err != nil {
		return err
	}
	if tag.RowsAffected() != int64(n) {
		return consent.Errorf(consent.NotFound, "session not found")
	}
	return nil
}

// EnqueueJobs adds them in one statement, which a conflict undoes whole.
func (t *tx) EnqueueJobs(ctx context.Context, jobs []*consent.Job) error {
	if len(jobs) == 0 {
		return nil
	}
	n := len(jobs)
	var (
		kinds, keys, lastErrs = make([]string, n), make([]string, n), make([]string, n)
		companies, lanes      = make([]string, n), make([]string, n)
		payloads              = make([][]byte, n)
		attempts              = make([]int64, n)
		runAfter, created     = make([]time.Time, n), make([]time.Time, n)
	)
	for i, j := range jobs {
		kinds[i], keys[i], lastErrs[i], payloads[i] = j.Kind, j.Key, j.LastError, payload(j.Payload)
		attempts[i], runAfter[i], created[i] = int64(j.Attempts), j.RunAfter, j.CreatedAt
		companies[i], lanes[i] = j.CompanyID, j.Lane
	}
	_, err := t.exec(ctx, `INSERT INTO jobs (kind, key, payload, attempts, run_after, last_error, created_at, company_id, lane)
		SELECT * FROM unnest($1::text[], $2::text[], $3::bytea[], $4::int[], $5::timestamptz[], $6::text[], $7::timestamptz[],
			$8::text[], $9::text[])`,
		kinds, keys, payloads, attempts, runAfter, lastErrs, created, companies, lanes)
	return err
}

// DebitAll is conditional in one statement, as Debit is: the wallet's
// update covers the sum or changes nothing, and the ledger's rows are
// inserted, in the order given, only with it.
func (t *tx) DebitAll(ctx context.Context, entries []*wallet.Entry) (wallet.Amount, error) {
	if len(entries) == 0 {
		return 0, nil
	}
	if t.batch != nil {
		return t.batch.wb.Post(ctx, t.batch, entries, -1)
	}
	sum, err := wallet.Sum(entries)
	if err != nil {
		return 0, err
	}
	company := entries[0].CompanyID
	n := len(entries)
	var (
		ids, kinds, refs = make([]string, n), make([]string, n), make([]string, n)
		amounts          = make([]int64, n)
		created          = make([]time.Time, n)
		bal              int64
	)
	for i, e := range entries {
		ids[i], kinds[i], refs[i], amounts[i], created[i] = e.ID, string(e.Kind), e.Reference, int64(e.Amount), e.CreatedAt
	}
	err = t.tx.QueryRow(ctx, `WITH w AS (
			UPDATE wallets SET balance = balance - $2 WHERE company_id = $1 AND balance >= $2 RETURNING balance),
		l AS (INSERT INTO ledger (id, company_id, kind, amount, reference, created_at)
			SELECT u.id, $1, u.kind, u.amount, u.reference, u.created_at
			FROM unnest($3::text[], $4::text[], $5::bigint[], $6::text[], $7::timestamptz[]) WITH ORDINALITY
				AS u (id, kind, amount, reference, created_at, n), w
			ORDER BY u.n)
		SELECT balance FROM w`, company, int64(sum), ids, kinds, amounts, refs, created).Scan(&bal)
	if errors.Is(err, pgx.ErrNoRows) {
		cur, err := t.Balance(ctx, company)
		if err != nil {
			return 0, err
		}
		return 0, &wallet.InsufficientFundsError{Required: sum, Balance: cur}
	}
	if err != nil {
		return 0, mapErr(err)
	}
	return wallet.Amount(bal), nil
}

// AppendAudits locks the company's head as AppendAudit does (the upsert
// also makes a concurrent first append wait), appends the entries in one
// statement, then moves the head once, onto the last of them: the head's
// trigger lets it move by more than one entry only onto an entry that is
// in the log (migration 0012), so the entries go in first, in a statement
// of their own.
func (t *tx) AppendAudits(ctx context.Context, entries []*consent.AuditEntry) error {
	if len(entries) == 0 {
		return nil
	}
	company := entries[0].CompanyID
	if t.batch != nil {
		for _, e := range entries {
			if err := t.batch.wb.Append(ctx, t.batch, e); err != nil {
				return err
			}
		}
		return nil
	}
	head, err := lockHead(ctx, t.tx, company)
	if err != nil {
		return err
	}
	seq, last := head.Seq, head.Hash
	n := len(entries)
	var (
		seqs                                                 = make([]int64, n)
		ats                                                  = make([]time.Time, n)
		actors, actions, targets, outcomes, requests, detail = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		prevs, hashes                                        = make([][]byte, n), make([][]byte, n)
	)
	for i, e := range entries {
		seq++
		e.Seq, e.PrevHash, e.At = seq, last, consent.UTC(e.At)
		e.Hash = audit.Hash(e)
		last = e.Hash
		seqs[i], ats[i], prevs[i], hashes[i] = e.Seq, e.At, e.PrevHash[:], e.Hash[:]
		actors[i], actions[i], targets[i], outcomes[i], requests[i], detail[i] = e.Actor, e.Action, e.Target, e.Outcome, e.RequestID, e.Detail
	}
	_, err = t.exec(ctx, `INSERT INTO audit_log (company_id, seq, at, actor, action, target, outcome, request_id,
			detail, prev_hash, hash)
		SELECT $1, * FROM unnest($2::bigint[], $3::timestamptz[], $4::text[], $5::text[], $6::text[], $7::text[],
			$8::text[], $9::text[], $10::bytea[], $11::bytea[])`,
		company, seqs, ats, actors, actions, targets, outcomes, requests, detail, prevs, hashes)
	if err != nil {
		return err
	}
	_, err = t.exec(ctx, `UPDATE audit_heads SET seq = $2, hash = $3 WHERE company_id = $1`, company, seq, last[:])
	return err
}
