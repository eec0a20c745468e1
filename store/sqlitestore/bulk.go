package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/store/internal/sqlrow"
	"github.com/consentkit/consentkit/wallet"
)

// The Tx methods that read or write many rows at once (issue 13) pass
// their rows as one parameter, a JSON array of arrays that json_each
// unpacks: the statement's text is the same for any number of rows, so the
// connection prepares it once and keeps it in its cache, and SQLite's
// limit on bound parameters never applies. Blobs travel as hex (unhex in
// the statement), NULL as null.

// jsonRows builds that parameter, one row after another.
type jsonRows struct {
	b     []byte
	start bool // the next value begins a row
}

func newJSONRows(size int) *jsonRows {
	return &jsonRows{b: append(make([]byte, 0, size), '['), start: true}
}

func (r *jsonRows) next() {
	if !r.start {
		r.b = append(r.b, ',')
		return
	}
	if len(r.b) > 1 {
		r.b = append(r.b, ',')
	}
	r.b = append(r.b, '[')
	r.start = false
}

// end ends the row.
func (r *jsonRows) end() { r.b, r.start = append(r.b, ']'), true }

// str adds a JSON string. The values written are ValidText (UTF-8), so
// only quotes, backslashes and control characters need escapes.
func (r *jsonRows) str(s string) {
	r.next()
	r.b = append(r.b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			r.b = append(r.b, '\\', c)
		case c < 0x20:
			r.b = append(r.b, `\u00`...)
			r.b = append(r.b, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&15])
		default:
			r.b = append(r.b, c)
		}
	}
	r.b = append(r.b, '"')
}

func (r *jsonRows) num(n int64) {
	r.next()
	r.b = strconv.AppendInt(r.b, n, 10)
}

// null adds a JSON null (SQL NULL).
func (r *jsonRows) null() {
	r.next()
	r.b = append(r.b, "null"...)
}

// blob adds b as hex, for unhex; nil is NULL.
func (r *jsonRows) blob(b []byte) {
	if b == nil {
		r.null()
		return
	}
	r.next()
	r.b = append(r.b, '"')
	r.b = hex.AppendEncode(r.b, b)
	r.b = append(r.b, '"')
}

// value adds a value of sqlrow's: nil, int64 or []byte.
func (r *jsonRows) value(v any) {
	switch v := v.(type) {
	case nil:
		r.null()
	case int64:
		r.num(v)
	case []byte:
		r.blob(v)
	default:
		panic(fmt.Sprintf("sqlitestore: jsonRows.value of %T", v))
	}
}

func (r *jsonRows) String() string { return string(append(r.b, ']')) }

// Sessions reads all of them in one statement; SQLite's single writer
// makes a lock needless.
func (t *tx) Sessions(ctx context.Context, ids []string) ([]*consent.Session, error) {
	out := make([]*consent.Session, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := t.tx.QueryContext(ctx, `SELECT `+sessionColumns+` FROM sessions
		WHERE id IN (SELECT value FROM json_each(?))`, jsonText(ids))
	list, err := collect(rows, err, scanSession)
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
	seen := make(map[string]bool, len(list))
	r := newJSONRows(160 * len(list))
	for _, s := range list {
		if err := s.CheckText(); err != nil {
			return err
		}
		if seen[s.ID] {
			return consent.Errorf(consent.Invalid, "session %s is listed twice", s.ID)
		}
		seen[s.ID] = true
		r.str(s.ID)
		r.str(string(s.RetentionStatus))
		r.str(string(s.VideoStatus))
		r.num(s.ExpiresAt.UnixMicro())
		r.str(s.Video.Path)
		r.num(s.Video.Bytes)
		r.value(sqlrow.Digest(s.Video.SHA256))
		r.num(s.Video.Duration.Milliseconds())
		r.value(sqlrow.Micros(s.ClosedAt))
		r.end()
	}
	res, err := t.exec(ctx, `UPDATE sessions SET retention_status = j.value ->> 1, video_status = j.value ->> 2,
		expires_at = j.value ->> 3, video_path = j.value ->> 4, video_bytes = j.value ->> 5,
		video_sha256 = unhex(j.value ->> 6), video_duration_ms = j.value ->> 7, closed_at = j.value ->> 8
		FROM json_each(?1) AS j WHERE sessions.id = j.value ->> 0
		AND (SELECT count(*) FROM sessions WHERE id IN (SELECT value ->> 0 FROM json_each(?1))) = ?2`,
		r.String(), len(list))
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n != int64(len(list)) {
		return consent.Errorf(consent.NotFound, "session not found")
	}
	return nil
}

// EnqueueJobs adds them in one statement, which a conflict undoes whole.
func (t *tx) EnqueueJobs(ctx context.Context, jobs []*consent.Job) error {
	if len(jobs) == 0 {
		return nil
	}
	size := 0
	for _, j := range jobs {
		if err := j.CheckText(); err != nil {
			return err
		}
		size += 96 + 2*len(j.Payload) + len(j.Key) + len(j.LastError)
	}
	r := newJSONRows(size)
	for _, j := range jobs {
		r.str(j.Kind)
		r.str(j.Key)
		r.blob(payload(j.Payload))
		r.num(int64(j.Attempts))
		r.num(j.RunAfter.UnixMicro())
		r.str(j.LastError)
		r.num(j.CreatedAt.UnixMicro())
		r.end()
	}
	_, err := t.exec(ctx, `INSERT INTO jobs (kind, key, payload, attempts, run_after, last_error, created_at)
		SELECT j.value ->> 0, j.value ->> 1, unhex(j.value ->> 2), j.value ->> 3, j.value ->> 4, j.value ->> 5, j.value ->> 6
		FROM json_each(?) AS j ORDER BY j.key`, r.String())
	return err
}

// DebitAll appends the entries first, in one statement that inserts them
// only when the balance covers their sum and that a conflict undoes whole;
// the debit that follows cannot fail, SQLite having one writer.
func (t *tx) DebitAll(ctx context.Context, entries []*wallet.Entry) (wallet.Amount, error) {
	if len(entries) == 0 {
		return 0, nil
	}
	company := entries[0].CompanyID
	var sum wallet.Amount
	r := newJSONRows(96 * len(entries))
	for _, e := range entries {
		if err := consent.CheckEntryText(e); err != nil {
			return 0, err
		}
		if e.CompanyID != company {
			return 0, consent.Errorf(consent.Invalid, "the entries of one debit must be of one company")
		}
		sum += e.Amount
		r.str(e.ID)
		r.str(string(e.Kind))
		r.num(int64(e.Amount))
		r.str(e.Reference)
		r.num(e.CreatedAt.UnixMicro())
		r.end()
	}
	res, err := t.exec(ctx, `INSERT INTO ledger (id, company_id, kind, amount, reference, created_at)
		SELECT j.value ->> 0, ?2, j.value ->> 1, j.value ->> 2, j.value ->> 3, j.value ->> 4
		FROM json_each(?1) AS j WHERE (SELECT balance FROM wallets WHERE company_id = ?2) >= ?3
		ORDER BY j.key`, r.String(), company, sum)
	if err != nil {
		return 0, err
	}
	if n, err := res.RowsAffected(); err != nil {
		return 0, err
	} else if n == 0 {
		cur, err := t.Balance(ctx, company)
		if err != nil {
			return 0, err
		}
		return 0, &wallet.InsufficientFundsError{Required: sum, Balance: cur}
	}
	var bal wallet.Amount
	err = t.tx.QueryRowContext(ctx, `UPDATE wallets SET balance = balance - ?1
		WHERE company_id = ?2 AND balance >= ?1 RETURNING balance`, sum, company).Scan(&bal)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("sqlitestore: the wallet of %s changed under its writer", company)
	}
	return bal, mapErr(err)
}

// AppendAudits reads the head, appends the entries in a statement per
// auditRowsPerInsert of them and moves the head once, onto the last of them
// (which the head's trigger checks is in the log: migration 0012).
func (t *tx) AppendAudits(ctx context.Context, entries []*consent.AuditEntry) error {
	if len(entries) == 0 {
		return nil
	}
	company := entries[0].CompanyID
	for _, e := range entries {
		if err := e.CheckText(); err != nil {
			return err
		}
		if e.CompanyID != company {
			return consent.Errorf(consent.Invalid, "the entries of one append must be of one company")
		}
	}
	var (
		seq  int64
		prev []byte
	)
	err := t.tx.QueryRowContext(ctx, `SELECT seq, hash FROM audit_heads WHERE company_id = ?`, company).Scan(&seq, &prev)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		prev = nil // the chain's first entry
	case err != nil:
		return mapErr(err)
	}
	last, err := sqlrow.ScanDigest(prev)
	if err != nil {
		return err
	}
	for _, e := range entries {
		seq++
		e.Seq, e.PrevHash, e.At = seq, last, consent.UTC(e.At)
		e.Hash = consent.AuditHash(e)
		last = e.Hash
	}
	// The rows go as bound values of a multi-row VALUES, at most
	// auditRowsPerInsert at a time: half the time of passing them as JSON
	// for json_each, where every column of every row is taken from the
	// row's text again.
	for rest := entries; len(rest) > 0; {
		chunk := rest[:min(len(rest), auditRowsPerInsert)]
		rest = rest[len(chunk):]
		args := make([]any, 0, 11*len(chunk))
		for _, e := range chunk {
			args = append(args, company, e.Seq, e.At.UnixMicro(), e.Actor, e.Action, e.Target, e.Outcome, e.RequestID,
				e.Detail, e.PrevHash[:], e.Hash[:])
		}
		if _, err := t.exec(ctx, auditInsert(len(chunk)), args...); err != nil {
			return err
		}
	}
	_, err = t.exec(ctx, `INSERT INTO audit_heads (company_id, seq, hash) VALUES (?, ?, ?)
		ON CONFLICT (company_id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash`, company, seq, last[:])
	return err
}

// auditRowsPerInsert bounds the rows of one INSERT of AppendAudits: 11
// bound values each, far below SQLite's limit on a statement's.
const auditRowsPerInsert = 250

// auditInsert is the INSERT of n audit entries.
func auditInsert(n int) string {
	const row = "(?,?,?,?,?,?,?,?,?,?,?)"
	var b strings.Builder
	b.Grow(160 + n*(len(row)+1))
	b.WriteString("INSERT INTO audit_log (company_id, seq, at, actor, action, target, outcome, request_id, detail, prev_hash, hash) VALUES ")
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(row)
	}
	return b.String()
}
