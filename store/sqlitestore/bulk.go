package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/consentkit/consentkit/audit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/store/internal/behind"
	"github.com/consentkit/consentkit/store/internal/sqlrow"
	"github.com/consentkit/consentkit/wallet"
)

// The Tx methods that read or write many rows at once bind
// every value of every row: a multi-row VALUES list, one statement for up
// to rowsPerStatement rows. (Passing the rows as one JSON parameter for
// json_each, as these methods once did, takes every column of every row
// from the row's text again: on 100 audit entries, twice the time.) A write of more rows than one
// statement takes runs in a savepoint, so that it still writes all of them
// or none.

// maxBound is SQLite's limit on the values bound to one statement
// (SQLITE_MAX_VARIABLE_NUMBER, 32766 since SQLite 3.32).
const maxBound = 32766

// rowsPerStatement is how many rows of cols values one statement binds.
func rowsPerStatement(cols int) int { return min(maxBound/cols, 1000) }

// valueRows is "(?,…),(?,…)…": n rows of cols bound values each.
func valueRows(n, cols int) string {
	var b strings.Builder
	b.Grow(n * (2*cols + 2))
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('(')
		for c := range cols {
			if c > 0 {
				b.WriteByte(',')
			}
			b.WriteByte('?')
		}
		b.WriteByte(')')
	}
	return b.String()
}

// execRows runs statement(list) for each run of at most rowsPerStatement
// of the rows whose cols values each are args (list is the run's VALUES
// list), then check, when given, on the number of rows changed in all. More than one statement runs in a
// savepoint, so that a failure or a refusal of check writes nothing.
func (t *tx) execRows(ctx context.Context, cols int, args []any, statement func(list string) string, check func(int64) error) error {
	per := rowsPerStatement(cols)
	if len(args) <= per*cols {
		n, err := t.execChunk(ctx, statement(valueRows(len(args)/cols, cols)), args)
		if err == nil && check != nil {
			err = check(n)
		}
		return err
	}
	if _, err := t.exec(ctx, "SAVEPOINT bulk"); err != nil {
		return err
	}
	var total int64
	err := func() error {
		for rest := args; len(rest) > 0; {
			chunk := rest[:min(len(rest), per*cols)]
			rest = rest[len(chunk):]
			n, err := t.execChunk(ctx, statement(valueRows(len(chunk)/cols, cols)), chunk)
			if err != nil {
				return err
			}
			total += n
		}
		if check != nil {
			return check(total)
		}
		return nil
	}()
	if err != nil {
		if _, rerr := t.exec(ctx, "ROLLBACK TO bulk; RELEASE bulk"); rerr != nil {
			return fmt.Errorf("%w (and undoing it: %v)", err, rerr) //nolint:errorlint // err is the cause; mapErr must not match the undo's error
		}
		return err
	}
	_, err = t.exec(ctx, "RELEASE bulk")
	return err
}

func (t *tx) execChunk(ctx context.Context, query string, args []any) (int64, error) {
	res, err := t.exec(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// Sessions reads them by key, rowsPerStatement at a time; SQLite's single
// writer makes a lock needless.
func (t *tx) Sessions(ctx context.Context, ids []string) ([]*consent.Session, error) {
	out := make([]*consent.Session, len(ids))
	byID := make(map[string]*consent.Session, len(ids))
	for rest := ids; len(rest) > 0; {
		chunk := rest[:min(len(rest), rowsPerStatement(1))]
		rest = rest[len(chunk):]
		rows, err := t.tx.QueryContext(ctx, `SELECT `+sqlrow.SessionColumns+` FROM sessions WHERE id IN (`+
			strings.Repeat("?,", len(chunk)-1)+`?)`, anys(chunk)...)
		list, err := collect(rows, err, dialect.ScanSession)
		if err != nil {
			return nil, err
		}
		for _, s := range list {
			byID[s.ID] = s
		}
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
	const cols = 9
	args := make([]any, 0, cols*len(list))
	for _, s := range list {
		args = append(args, s.ID, string(s.RetentionStatus), string(s.VideoStatus), s.ExpiresAt.UnixMicro(),
			s.Video.Path, s.Video.Bytes, sqlrow.Digest(s.Video.SHA256), s.Video.Duration.Milliseconds(),
			sqlrow.Micros(s.ClosedAt))
	}
	return t.execRows(ctx, cols, args, func(list string) string {
		return `WITH v (id, rs, vs, expires, path, size, sha, ms, closed) AS (VALUES ` + list + `)
			UPDATE sessions SET retention_status = v.rs, video_status = v.vs, expires_at = v.expires,
				video_path = v.path, video_bytes = v.size, video_sha256 = v.sha, video_duration_ms = v.ms,
				closed_at = v.closed
			FROM v WHERE sessions.id = v.id
			AND (SELECT count(*) FROM sessions WHERE id IN (SELECT id FROM v)) = (SELECT count(*) FROM v)`
	}, func(n int64) error {
		if n != int64(len(list)) {
			return consent.Errorf(consent.NotFound, "session not found")
		}
		return nil
	})
}

// EnqueueJobs adds them in one statement, which a conflict undoes whole.
func (t *tx) EnqueueJobs(ctx context.Context, jobs []*consent.Job) error {
	if len(jobs) == 0 {
		return nil
	}
	const cols = 9
	args := make([]any, 0, cols*len(jobs))
	for _, j := range jobs {
		args = append(args, j.Kind, j.Key, payload(j.Payload), int64(j.Attempts), j.RunAfter.UnixMicro(), j.LastError,
			j.CreatedAt.UnixMicro(), j.CompanyID, j.Lane)
	}
	return t.execRows(ctx, cols, args, func(list string) string {
		return `INSERT INTO jobs (kind, key, payload, attempts, run_after, last_error, created_at, company_id, lane) VALUES ` + list
	}, nil)
}

// DebitAll reads the balance, appends the entries in order (a conflict
// undoes them whole) and debits their sum, which cannot fail then: SQLite
// has one writer.
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
	const cols = 6
	company := entries[0].CompanyID
	args := make([]any, 0, cols*len(entries))
	for _, e := range entries {
		args = append(args, e.ID, company, string(e.Kind), int64(e.Amount), e.Reference, e.CreatedAt.UnixMicro())
	}
	cur, err := t.Balance(ctx, company)
	if err != nil {
		return 0, err
	}
	if cur < sum {
		return 0, &wallet.InsufficientFundsError{Required: sum, Balance: cur}
	}
	if err := t.execRows(ctx, cols, args, func(list string) string {
		return `INSERT INTO ledger (id, company_id, kind, amount, reference, created_at) VALUES ` + list
	}, nil); err != nil {
		return 0, err
	}
	var bal wallet.Amount
	err = t.tx.QueryRowContext(ctx, `UPDATE wallets SET balance = balance - ?1
		WHERE company_id = ?2 AND balance >= ?1 RETURNING balance`, sum, company).Scan(&bal)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("sqlitestore: the wallet of %s changed under its writer", company)
	}
	return bal, mapErr(err)
}

// AppendAudits reads the head, appends the entries (execRows) and moves
// the head once, onto the last of them (which the head's trigger checks is
// in the log: migration 0012).
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
	head, err := auditHead(ctx, t.tx, company)
	if err != nil {
		return err
	}
	for _, e := range entries {
		head.Seq++
		e.Seq, e.PrevHash, e.At = head.Seq, head.Hash, consent.UTC(e.At)
		e.Hash = audit.Hash(e)
		head.Hash = e.Hash
	}
	if err := t.insertAudits(ctx, entries); err != nil {
		return err
	}
	return t.moveHead(ctx, head)
}

// insertAudits inserts chained entries, in order.
func (t *tx) insertAudits(ctx context.Context, entries []*consent.AuditEntry) error {
	const cols = 11
	args := make([]any, 0, cols*len(entries))
	for _, e := range entries {
		args = append(args, e.CompanyID, e.Seq, e.At.UnixMicro(), e.Actor, e.Action, e.Target, e.Outcome, e.RequestID,
			e.Detail, e.PrevHash[:], e.Hash[:])
	}
	return t.execRows(ctx, cols, args, func(list string) string {
		return `INSERT INTO audit_log (company_id, seq, at, actor, action, target, outcome, request_id, detail,
			prev_hash, hash) VALUES ` + list
	}, nil)
}

// moveHead moves a chain's head onto h, an entry of the log.
func (t *tx) moveHead(ctx context.Context, h consent.AuditHead) error {
	_, err := t.exec(ctx, `INSERT INTO audit_heads (company_id, seq, hash) VALUES (?, ?, ?)
		ON CONFLICT (company_id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash`, h.CompanyID, h.Seq, h.Hash[:])
	return err
}

// insertLedger inserts entries in order and returns nil, or the ids among
// them that were found taken when the insert failed on one (the insert is
// then undone; SQLite undoes a failed statement whole).
func (t *tx) insertLedger(ctx context.Context, entries []behind.Entry) (taken map[string]bool, err error) {
	const cols = 6
	args := make([]any, 0, cols*len(entries))
	for _, e := range entries {
		args = append(args, e.ID, e.CompanyID, string(e.Kind), int64(e.Amount), e.Reference, e.CreatedAt.UnixMicro())
	}
	err = t.execRows(ctx, cols, args, func(list string) string {
		return `INSERT INTO ledger (id, company_id, kind, amount, reference, created_at) VALUES ` + list
	}, nil)
	if consent.ErrorCode(err) != consent.Conflict {
		return nil, err
	}
	ids := make([]string, len(entries))
	for i, e := range entries {
		ids[i] = e.ID
	}
	taken = map[string]bool{}
	for rest := ids; len(rest) > 0; {
		chunk := rest[:min(len(rest), rowsPerStatement(1))]
		rest = rest[len(chunk):]
		found, qerr := t.ids(ctx, `SELECT id FROM ledger WHERE id IN (`+strings.Repeat("?,", len(chunk)-1)+`?)`, anys(chunk)...)
		if qerr != nil {
			return nil, qerr
		}
		for _, id := range found {
			taken[id] = true
		}
	}
	if len(taken) == 0 {
		return nil, err // not an id of these: the conflict stands as it is
	}
	return taken, nil
}

// anys returns ss as a list of arguments.
func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
