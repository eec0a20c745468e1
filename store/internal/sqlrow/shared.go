package sqlrow

import (
	"context"
	"strings"
	"time"

	"github.com/consentkit/consentkit/consent"
)

// Conn is what Shared needs of a store's transaction: its statements, with
// the driver's errors mapped to consent's codes (NotFound for no row, or
// for a row referred to that is missing; Conflict for a key taken).
type Conn interface {
	// Exec runs a statement and returns how many rows it changed.
	Exec(ctx context.Context, query string, args ...any) (int64, error)
	// QueryRow runs a query of at most one row.
	QueryRow(ctx context.Context, query string, args ...any) Row
	// Query runs a query; the caller closes the rows.
	Query(ctx context.Context, query string, args ...any) (ClosingRows, error)
}

// ClosingRows are Rows that hold a connection until closed.
type ClosingRows interface {
	Rows
	Close()
}

// Shared implements, once for both SQL stores, the consent.Tx methods
// whose SQL is the same in both but for how a parameter is written (its
// queries write each as ?, bound by the Dialect in order). A store's
// transaction embeds it.
type Shared struct {
	Conn Conn
	D    Dialect
}

// bind writes the nth ? of query as the Dialect's nth parameter.
func (d Dialect) bind(query string) string {
	var b strings.Builder
	n := 0
	for {
		i := strings.IndexByte(query, '?')
		if i < 0 {
			b.WriteString(query)
			return b.String()
		}
		n++
		b.WriteString(query[:i])
		b.WriteString(d.Param(n))
		query = query[i+1:]
	}
}

// exec runs a statement that must change a row: none changed is what's
// NotFound error.
func (s Shared) exec(ctx context.Context, what, query string, args ...any) error {
	n, err := s.Conn.Exec(ctx, s.D.bind(query), args...)
	if err == nil && n == 0 {
		err = consent.Errorf(consent.NotFound, "%s not found", what)
	}
	return err
}

// one reads the one row of query with scan: no row is what's NotFound
// error.
func one[T any](ctx context.Context, s Shared, scan func(Row) (*T, error), what, query string, args ...any) (*T, error) {
	v, err := scan(s.Conn.QueryRow(ctx, s.D.bind(query), args...))
	if consent.ErrorCode(err) == consent.NotFound {
		return nil, consent.Errorf(consent.NotFound, "%s not found", what)
	}
	return v, err
}

// all reads every row of query with scan; none is an empty slice.
func all[T any](ctx context.Context, s Shared, scan func(Row) (T, error), query string, args ...any) ([]T, error) {
	rows, err := s.Conn.Query(ctx, s.D.bind(query), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return Collect(rows, scan)
}

// Signature keeps a missing signature as an empty one.
func Signature(sig []byte) []byte {
	if sig == nil {
		return []byte{}
	}
	return sig
}

// createEvidence inserts e into table, with the values of the columns
// after its own, only for a certificate of its company: none inserted is
// NotFound, a second a Conflict (the primary key).
func (s Shared) createEvidence(ctx context.Context, table, columns string, e *consent.Evidence, more ...any) error {
	args := []any{e.Status, string(e.Statement), Signature(e.Signature), e.KeyID}
	args = append(append(args, more...), s.D.Arg(e.CreatedAt), s.D.Arg(e.UpdatedAt), e.CertificateID, e.CompanyID)
	marks := strings.Repeat(", ?", len(args)-2)
	return s.exec(ctx, "certificate", `INSERT INTO `+table+` (`+columns+`)
		SELECT id, company_id`+marks+` FROM certificates WHERE id = ? AND company_id = ?`, args...)
}

// updateEvidence writes e's status, statement, signature and time, and
// the values of the columns set names, to its row of table.
func (s Shared) updateEvidence(ctx context.Context, table, what, set string, e *consent.Evidence, more ...any) error {
	args := append([]any{e.Status, string(e.Statement), Signature(e.Signature), e.KeyID}, more...)
	args = append(args, s.D.Arg(e.UpdatedAt), e.CertificateID)
	return s.exec(ctx, what, `UPDATE `+table+` SET status = ?, statement = ?, signature = ?, key_id = ?`+set+`,
		updated_at = ? WHERE certificate_id = ?`, args...)
}

func (s Shared) CreateAttestation(ctx context.Context, a *consent.Attestation) error {
	return s.createEvidence(ctx, "attestations", AttestationColumns, &a.Evidence, a.Screenshot)
}

func (s Shared) Attestation(ctx context.Context, certificateID string) (*consent.Attestation, error) {
	return one(ctx, s, s.D.ScanAttestation, "attestation",
		`SELECT `+AttestationColumns+` FROM attestations WHERE certificate_id = ?`, certificateID)
}

func (s Shared) UpdateAttestation(ctx context.Context, a *consent.Attestation) error {
	return s.updateEvidence(ctx, "attestations", "attestation", ", screenshot = ?", &a.Evidence, a.Screenshot)
}

func (s Shared) CreateInsights(ctx context.Context, in *consent.Insights) error {
	return s.createEvidence(ctx, "insights", InsightsColumns, &in.Evidence)
}

func (s Shared) Insights(ctx context.Context, certificateID string) (*consent.Insights, error) {
	return one(ctx, s, s.D.ScanInsights, "insights",
		`SELECT `+InsightsColumns+` FROM insights WHERE certificate_id = ?`, certificateID)
}

func (s Shared) UpdateInsights(ctx context.Context, in *consent.Insights) error {
	return s.updateEvidence(ctx, "insights", "insights", "", &in.Evidence)
}

func (s Shared) PutProfile(ctx context.Context, p *consent.Profile) error {
	_, err := s.Conn.Exec(ctx, s.D.bind(`INSERT INTO profiles (`+ProfileColumns+`) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (company_id, name) DO UPDATE SET rules = excluded.rules,
		created_at = excluded.created_at, updated_at = excluded.updated_at`),
		p.CompanyID, p.Name, string(p.Rules), s.D.Arg(p.CreatedAt), s.D.Arg(p.UpdatedAt))
	return err
}

func (s Shared) Profile(ctx context.Context, companyID, name string) (*consent.Profile, error) {
	return one(ctx, s, s.D.ScanProfile, "profile",
		`SELECT `+ProfileColumns+` FROM profiles WHERE company_id = ? AND name = ?`, companyID, name)
}

func (s Shared) Profiles(ctx context.Context, companyID string) ([]*consent.Profile, error) {
	return all(ctx, s, s.D.ScanProfile, `SELECT `+ProfileColumns+` FROM profiles
		WHERE company_id = ? ORDER BY name`+s.D.Collate, companyID)
}

func (s Shared) DeleteProfile(ctx context.Context, companyID, name string) error {
	return s.exec(ctx, "profile", `DELETE FROM profiles WHERE company_id = ? AND name = ?`, companyID, name)
}

// SetRecording writes r, and drops the session's chunks once r is moved
// (D52).
func (s Shared) SetRecording(ctx context.Context, sessionID string, r consent.Recording) error {
	err := s.exec(ctx, "session", `UPDATE sessions SET recording_key = ?, recording_bytes = ?, recording_sha256 = ?,
		recording_at = ? WHERE id = ?`, r.Key, r.Bytes, Digest(r.SHA256), s.nullTime(r.At), sessionID)
	if err != nil || !r.Moved() {
		return err
	}
	_, err = s.Conn.Exec(ctx, s.D.bind(`DELETE FROM session_events WHERE session_id = ?`), sessionID)
	return err
}

// SessionsToMove reads the partial index sessions_to_move.
func (s Shared) SessionsToMove(ctx context.Context, idleBefore time.Time, limit int) ([]string, error) {
	return all(ctx, s, ScanText, `SELECT id FROM sessions WHERE event_chunks > 0 AND recording_at IS NULL
		AND retention_status <> 'expired' AND (closed_at IS NOT NULL OR recording_key <> '' OR last_event_at <= ?)
		ORDER BY last_event_at, id`+s.D.Collate+` LIMIT ?`, s.D.Arg(idleBefore), max(limit, 0))
}

// CountJobs and CountCompanyJobs read the index jobs_waiting alone
// (migration 0024: the jobs not failed, by kind and company), not every
// job of the kind.
func (s Shared) CountJobs(ctx context.Context, kind string) (int, error) {
	return s.count(ctx, `SELECT count(*) FROM jobs WHERE kind = ? AND failed_at IS NULL`, kind)
}

func (s Shared) CountCompanyJobs(ctx context.Context, kind, companyID string) (int, error) {
	return s.count(ctx, `SELECT count(*) FROM jobs WHERE kind = ? AND company_id = ? AND failed_at IS NULL`, kind, companyID)
}

// count reads the one number query answers.
func (s Shared) count(ctx context.Context, query string, args ...any) (int, error) {
	var n int
	err := s.Conn.QueryRow(ctx, s.D.bind(query), args...).Scan(&n)
	return n, err
}

// nullTime is the parameter of a time that may be zero: NULL.
func (s Shared) nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return s.D.Arg(t)
}

// rowNames names the row of each table for a Conflict, as the memory
// store names what exists ("company already exists"), so that an error
// reads the same on every store.
var rowNames = map[string]string{
	"companies": "company", "wallets": "wallet", "ledger": "ledger entry",
	"properties": "property", "tokens": "token", "sessions": "session",
	"session_events": "event chunk", "session_events_rows": "event chunk",
	"certificates": "certificate", "revocations": "revocation",
	"conversion_jobs": "job", "jobs": "job",
	"audit_log": "audit entry", "audit_heads": "audit head",
	"webhook_endpoints": "webhook endpoint", "webhook_deliveries": "webhook delivery",
	"idempotency_keys": "idempotency key", "operator_sessions": "operator session",
	"public_keys": "published key", "attestations": "attestation",
	"insights": "insights", "profiles": "profile",
}

// Conflict is the Conflict of a key taken in table: "company already
// exists" for companies, "already exists" for a table not named.
func Conflict(table string) error {
	if what, ok := rowNames[table]; ok {
		return consent.Errorf(consent.Conflict, "%s already exists", what)
	}
	return consent.Errorf(consent.Conflict, "already exists")
}
