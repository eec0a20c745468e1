package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/consentkit/consentkit/audit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/store/internal/sqlrow"
	"github.com/consentkit/consentkit/wallet"
)

type tx struct {
	sqlrow.Shared // the methods both SQL stores share
	tx            querier
	// batch is the group-commit batch the transaction is a call of, when
	// the batch runs more than one call (nil otherwise): its charges and
	// audit entries are written behind (batch.go).
	batch *batchTx
}

// querier is a *sql.Tx, or a detached one in a group-commit batch.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func (t *tx) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	r, err := t.tx.ExecContext(ctx, query, args...)
	return r, mapErr(err)
}

// one maps "no rows" to a not-found error that names what was missing.
func one(err error, what string) error {
	if errors.Is(err, sql.ErrNoRows) {
		return consent.Errorf(consent.NotFound, "%s not found", what)
	}
	return mapErr(err)
}

// affected returns a not-found error when the statement changed no row.
func affected(r sql.Result, err error, what string) error {
	if err != nil {
		return err
	}
	n, err := r.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return consent.Errorf(consent.NotFound, "%s not found", what)
	}
	return nil
}

func jsonText(v any) string {
	b, _ := json.Marshal(v) // slices of strings always marshal
	return string(b)
}

func (t *tx) CreateCompany(ctx context.Context, c *consent.Company) error {
	parties := c.AuthorizedThirdParties
	if parties == nil {
		parties = []string{}
	}
	if _, err := t.exec(ctx, `INSERT INTO companies (id, name, third_party_enabled, authorized_third_parties, attest_certificates,
		insights_rules, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`, c.ID, c.Name, c.ThirdPartyVerificationEnabled, jsonText(parties),
		c.AttestCertificates, sqlrow.JSON(c.InsightsRules), c.CreatedAt.UnixMicro()); err != nil {
		return err
	}
	_, err := t.exec(ctx, `INSERT INTO wallets (company_id) VALUES (?)`, c.ID)
	return err
}

func (t *tx) Company(ctx context.Context, id string) (*consent.Company, error) {
	c, err := dialect.ScanCompany(t.tx.QueryRowContext(ctx, `SELECT `+sqlrow.CompanyColumns+` FROM companies WHERE id = ?`, id))
	return c, one(err, "company")
}

// LockCompany has nothing to lock: write transactions take turns (BEGIN
// IMMEDIATE).
func (t *tx) LockCompany(ctx context.Context, id string) error {
	var n int
	return one(t.tx.QueryRowContext(ctx, `SELECT 1 FROM companies WHERE id = ?`, id).Scan(&n), "company")
}

func (t *tx) CompanyIDs(ctx context.Context, after string, limit int) ([]string, error) {
	return t.ids(ctx, `SELECT id FROM companies WHERE id > ? ORDER BY id LIMIT ?`, after, max(limit, 0))
}

func (t *tx) UpdateCompany(ctx context.Context, c *consent.Company) error {
	parties := c.AuthorizedThirdParties
	if parties == nil {
		parties = []string{}
	}
	r, err := t.exec(ctx, `UPDATE companies SET name = ?, third_party_enabled = ?, authorized_third_parties = ?,
		attest_certificates = ?, insights_rules = ? WHERE id = ?`, c.Name, c.ThirdPartyVerificationEnabled, jsonText(parties),
		c.AttestCertificates, sqlrow.JSON(c.InsightsRules), c.ID)
	return affected(r, err, "company")
}

func (t *tx) CreateProperty(ctx context.Context, p *consent.Property) error {
	_, err := t.exec(ctx, `INSERT INTO properties (id, company_id, name, allowed_origins, created_at) VALUES (?, ?, ?, ?, ?)`,
		p.ID, p.CompanyID, p.Name, jsonText(orEmpty(p.AllowedOrigins)), p.CreatedAt.UnixMicro())
	return err
}

func (t *tx) Property(ctx context.Context, id string) (*consent.Property, error) {
	p, err := dialect.ScanProperty(t.tx.QueryRowContext(ctx, `SELECT `+sqlrow.PropertyColumns+` FROM properties WHERE id = ?`, id))
	return p, one(err, "property")
}

func (t *tx) UpdateProperty(ctx context.Context, p *consent.Property) error {
	r, err := t.exec(ctx, `UPDATE properties SET name = ?, allowed_origins = ? WHERE id = ?`,
		p.Name, jsonText(orEmpty(p.AllowedOrigins)), p.ID)
	return affected(r, err, "property")
}

// orEmpty returns list, or an empty list for nil, so that it is kept as [].
func orEmpty(list []string) []string {
	if list == nil {
		return []string{}
	}
	return list
}

func (t *tx) CreateToken(ctx context.Context, tok *consent.Token) error {
	perms := tok.Permissions
	if perms == nil {
		perms = []consent.Permission{}
	}
	_, err := t.exec(ctx, `INSERT INTO tokens (id, company_id, digest, permissions, expires_at, revoked_at, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, tok.ID, tok.CompanyID, tok.Digest[:], jsonText(perms),
		sqlrow.Micros(tok.ExpiresAt), sqlrow.Micros(tok.RevokedAt), tok.CreatedAt.UnixMicro())
	return err
}

func (t *tx) TokenByDigest(ctx context.Context, d consent.Digest) (*consent.Token, error) {
	tok, err := dialect.ScanToken(t.tx.QueryRowContext(ctx, `SELECT `+sqlrow.TokenColumns+` FROM tokens WHERE digest = ?`, d[:]))
	return tok, one(err, "token")
}

func (t *tx) RevokeToken(ctx context.Context, companyID, id string, at time.Time) error {
	r, err := t.exec(ctx, `UPDATE tokens SET revoked_at = coalesce(revoked_at, ?) WHERE id = ? AND company_id = ?`,
		at.UnixMicro(), id, companyID)
	return affected(r, err, "token")
}

func (t *tx) CreateSession(ctx context.Context, s *consent.Session) error {
	_, err := t.exec(ctx, `INSERT INTO sessions (id, company_id, property_id, retention_status, video_status,
		created_at, expires_at, upload_digest, certificate_id, url, closed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		s.ID, s.CompanyID, s.PropertyID, s.RetentionStatus, s.VideoStatus, s.CreatedAt.UnixMicro(), s.ExpiresAt.UnixMicro(),
		sqlrow.Digest(s.UploadDigest), s.CertificateID, s.URL, sqlrow.Micros(s.ClosedAt))
	return err
}

func (t *tx) Session(ctx context.Context, id string) (*consent.Session, error) {
	s, err := dialect.ScanSession(t.tx.QueryRowContext(ctx, `SELECT `+sqlrow.SessionColumns+` FROM sessions WHERE id = ?`, id))
	return s, one(err, "session")
}

func (t *tx) AppendEvents(ctx context.Context, sessionID string, chunk []byte, at time.Time) error {
	var seq int
	err := t.tx.QueryRowContext(ctx, `UPDATE sessions SET event_chunks = event_chunks + 1,
		event_bytes = event_bytes + ?, last_event_at = ? WHERE id = ? RETURNING event_chunks - 1`,
		len(chunk), at.UnixMicro(), sessionID).Scan(&seq)
	if err != nil {
		return one(err, "session")
	}
	_, err = t.exec(ctx, `INSERT INTO session_events (session_id, seq, data) VALUES (?, ?, ?)`, sessionID, seq, payload(chunk))
	return err
}

func (t *tx) EventChunk(ctx context.Context, sessionID string, seq int) ([]byte, error) {
	var b []byte
	err := t.tx.QueryRowContext(ctx, `SELECT data FROM session_events WHERE session_id = ? AND seq = ?`, sessionID, seq).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		if _, err := t.Session(ctx, sessionID); err != nil {
			return nil, err
		}
		return nil, consent.Errorf(consent.NotFound, "event chunk not found")
	}
	return b, err
}

func (t *tx) UpdateSession(ctx context.Context, s *consent.Session) error {
	r, err := t.exec(ctx, `UPDATE sessions SET retention_status = ?, video_status = ?, expires_at = ?,
		video_path = ?, video_bytes = ?, video_sha256 = ?, video_duration_ms = ?, closed_at = ? WHERE id = ?`,
		s.RetentionStatus, s.VideoStatus, s.ExpiresAt.UnixMicro(), s.Video.Path, s.Video.Bytes,
		sqlrow.Digest(s.Video.SHA256), s.Video.Duration.Milliseconds(), sqlrow.Micros(s.ClosedAt), s.ID)
	return affected(r, err, "session")
}

func (t *tx) Events(ctx context.Context, sessionID string) ([][]byte, error) {
	if _, err := t.Session(ctx, sessionID); err != nil {
		return nil, err
	}
	rows, err := t.tx.QueryContext(ctx, `SELECT data FROM session_events WHERE session_id = ? ORDER BY seq`, sessionID)
	return collect(rows, err, sqlrow.ScanBytes)
}

func (t *tx) EachEventChunk(ctx context.Context, sessionID string, fn func([]byte) error) error {
	if _, err := t.Session(ctx, sessionID); err != nil {
		return err
	}
	rows, err := t.tx.QueryContext(ctx, `SELECT data FROM session_events WHERE session_id = ? ORDER BY seq`, sessionID)
	if err != nil {
		return err
	}
	defer rows.Close()
	var chunk sql.RawBytes // the driver's bytes, not copied again: valid until Next
	for rows.Next() {
		if err := rows.Scan(&chunk); err != nil {
			return err
		}
		if err := fn(chunk); err != nil {
			return err
		}
	}
	return rows.Err()
}

func (t *tx) CreateCertificate(ctx context.Context, c *consent.Certificate) error {
	records, err := sqlrow.EncodeRecords(c.Records)
	if err != nil {
		return err
	}
	visibility, err := sqlrow.EncodeVisibility(c.Visibility)
	if err != nil {
		return err
	}
	_, err = t.exec(ctx, `INSERT INTO certificates (id, company_id, property_id, session_id, origin, records,
		events_combined, email_digest, mobile_digest, retention_status, created_at, expires_at, revoked_at,
		client_ip, user_agent, recording_sha256, visibility, key_id, signature, revoked_before, signature_version)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, c.ID, c.CompanyID, c.PropertyID, c.SessionID, c.Origin,
		records, []byte(c.EventsCombined), sqlrow.Digest(c.EmailDigest), sqlrow.Digest(c.MobileDigest),
		c.RetentionStatus, c.CreatedAt.UnixMicro(), c.ExpiresAt.UnixMicro(), sqlrow.Micros(c.RevokedAt),
		c.ClientIP, c.UserAgent, sqlrow.Digest(c.RecordingSHA256), visibility, c.KeyID, sqlrow.Signature(c.Signature),
		sqlrow.Micros(c.RevokedBefore), c.SignatureVersion)
	return err
}

func (t *tx) Certificate(ctx context.Context, id string) (*consent.Certificate, error) {
	c, err := dialect.ScanCertificate(t.tx.QueryRowContext(ctx, `SELECT `+sqlrow.CertificateColumns+` FROM certificates WHERE id = ?`, id))
	return c, one(err, "certificate")
}

func (t *tx) ids(ctx context.Context, query string, args ...any) ([]string, error) {
	rows, err := t.tx.QueryContext(ctx, query, args...)
	return collect(rows, err, sqlrow.ScanText)
}

func (t *tx) CertificatesByEmail(ctx context.Context, companyID string, d consent.Digest) ([]string, error) {
	if d.IsZero() {
		return []string{}, nil
	}
	return t.ids(ctx, `SELECT id FROM certificates WHERE company_id = ? AND email_digest = ? ORDER BY id`, companyID, d[:])
}

func (t *tx) CertificatesByMobile(ctx context.Context, companyID string, d consent.Digest) ([]string, error) {
	if d.IsZero() {
		return []string{}, nil
	}
	return t.ids(ctx, `SELECT id FROM certificates WHERE company_id = ? AND mobile_digest = ? ORDER BY id`, companyID, d[:])
}

func (t *tx) CertificatesBySession(ctx context.Context, sessionID string) ([]string, error) {
	return t.ids(ctx, `SELECT id FROM certificates WHERE session_id = ? ORDER BY id`, sessionID)
}

func (t *tx) UpdateCertificate(ctx context.Context, c *consent.Certificate) error {
	r, err := t.exec(ctx, `UPDATE certificates SET retention_status = ?, expires_at = ? WHERE id = ?`,
		c.RetentionStatus, c.ExpiresAt.UnixMicro(), c.ID)
	return affected(r, err, "certificate")
}

func (t *tx) RevokeCertificate(ctx context.Context, id string, at time.Time) error {
	r, err := t.exec(ctx, `UPDATE certificates SET revoked_at = coalesce(revoked_at, ?) WHERE id = ?`, at.UnixMicro(), id)
	return affected(r, err, "certificate")
}

func (t *tx) Velocity(ctx context.Context, c *consent.Certificate) (consent.Velocity, error) {
	q, args := dialect.VelocityQuery(c)
	return sqlrow.ScanVelocity(t.tx.QueryRowContext(ctx, q, args...))
}

func (t *tx) RevokedBefore(ctx context.Context, companyID string, email, mobile consent.Digest) (time.Time, error) {
	var at time.Time
	err := t.tx.QueryRowContext(ctx, `SELECT max(t) FROM (
		SELECT max(created_at) AS t FROM revocations WHERE company_id = ?1 AND email_digest = ?2
		UNION ALL SELECT max(created_at) FROM revocations WHERE company_id = ?1 AND mobile_digest = ?3
		UNION ALL SELECT max(revoked_at) FROM certificates WHERE company_id = ?1 AND email_digest = ?2
		UNION ALL SELECT max(revoked_at) FROM certificates WHERE company_id = ?1 AND mobile_digest = ?3)`,
		companyID, sqlrow.Digest(email), sqlrow.Digest(mobile)).Scan(dialect.Time(&at))
	return at, err
}

func (t *tx) CreateRevocation(ctx context.Context, r *consent.Revocation) error {
	ids := r.CertificateIDs
	if ids == nil {
		ids = []string{}
	}
	_, err := t.exec(ctx, `INSERT INTO revocations (id, company_id, certificate_id, email_digest, mobile_digest,
		reason, client_ip, certificate_ids, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.CompanyID, r.CertificateID, sqlrow.Digest(r.EmailDigest), sqlrow.Digest(r.MobileDigest),
		r.Reason, r.ClientIP, jsonText(ids), r.CreatedAt.UnixMicro())
	return err
}

func (t *tx) Revocations(ctx context.Context, companyID string) ([]*consent.Revocation, error) {
	rows, err := t.tx.QueryContext(ctx, `SELECT `+sqlrow.RevocationColumns+` FROM revocations
		WHERE company_id = ? ORDER BY seq`, companyID)
	return collect(rows, err, dialect.ScanRevocation)
}

// purgedSession is what PurgeSessions leaves of a session.
const purgedSession = `retention_status = 'expired', video_status = 'none', event_chunks = 0, event_bytes = 0,
	url = '', upload_digest = NULL, video_path = '', video_bytes = 0, video_sha256 = NULL, video_duration_ms = 0,
	recording_key = '', recording_bytes = 0, recording_sha256 = NULL, recording_at = NULL`

func (t *tx) PurgeSessions(ctx context.Context, before time.Time, limit int) ([]*consent.Session, error) {
	ids, err := t.ids(ctx, `SELECT id FROM sessions WHERE retention_status <> 'expired' AND expires_at <= ?
		ORDER BY expires_at, id LIMIT ?`, before.UnixMicro(), max(limit, 0))
	if err != nil {
		return nil, err
	}
	out := []*consent.Session{}
	for _, id := range ids {
		s, err := t.Session(ctx, id)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	list, _ := json.Marshal(ids)
	if _, err := t.exec(ctx, `DELETE FROM session_events WHERE session_id IN (SELECT value FROM json_each(?))`, string(list)); err != nil {
		return nil, err
	}
	if _, err := t.exec(ctx, `UPDATE sessions SET `+purgedSession+` WHERE id IN (SELECT value FROM json_each(?))`, string(list)); err != nil {
		return nil, err
	}
	return out, nil
}

func (t *tx) PurgeCertificates(ctx context.Context, before time.Time, limit int) ([]string, error) {
	ids, err := t.ids(ctx, `DELETE FROM certificates WHERE id IN (SELECT id FROM certificates WHERE expires_at <= ?
		ORDER BY expires_at, id LIMIT ?) RETURNING id`, before.UnixMicro(), max(limit, 0))
	sort.Strings(ids)
	return ids, err
}

func (t *tx) EnqueueJob(ctx context.Context, j *consent.Job) error {
	_, err := t.exec(ctx, `INSERT INTO jobs (kind, key, payload, attempts, run_after, last_error, created_at, company_id, lane)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, j.Kind, j.Key, payload(j.Payload), j.Attempts, j.RunAfter.UnixMicro(), j.LastError,
		j.CreatedAt.UnixMicro(), j.CompanyID, j.Lane)
	return err
}

// payload stores a nil payload as an empty one.
func payload(p []byte) []byte {
	if p == nil {
		return []byte{}
	}
	return p
}

func (t *tx) Job(ctx context.Context, kind, key string) (*consent.Job, error) {
	j, err := dialect.ScanJob(t.tx.QueryRowContext(ctx, `SELECT `+sqlrow.JobColumns+` FROM jobs WHERE kind = ? AND key = ?`, kind, key))
	return j, one(err, "job")
}

// DeleteLaneJobs finds the jobs through the index jobs_waiting (kind,
// company, not failed), so it reads the company's waiting jobs of the kind
// only.
func (t *tx) DeleteLaneJobs(ctx context.Context, kind, companyID, lane string) (int, error) {
	r, err := t.exec(ctx, `DELETE FROM jobs WHERE kind = ? AND company_id = ? AND failed_at IS NULL AND lane = ?`,
		kind, companyID, lane)
	if err != nil {
		return 0, err
	}
	n, err := r.RowsAffected()
	return int(n), err
}

func (t *tx) DeleteFailedJobs(ctx context.Context, kind string, before time.Time, limit int) (int, error) {
	r, err := t.exec(ctx, `DELETE FROM jobs WHERE kind = ?1 AND key IN (SELECT key FROM jobs
		WHERE kind = ?1 AND failed_at < ?2 ORDER BY failed_at, key LIMIT ?3)`, kind, before.UnixMicro(), limit)
	if err != nil {
		return 0, err
	}
	n, err := r.RowsAffected()
	return int(n), err
}

func (t *tx) DeleteWebhookDeliveries(ctx context.Context, before time.Time, limit int) (int, error) {
	r, err := t.exec(ctx, `DELETE FROM webhook_deliveries WHERE seq IN (SELECT seq FROM webhook_deliveries
		WHERE at < ? ORDER BY at, seq LIMIT ?)`, before.UnixMicro(), limit)
	if err != nil {
		return 0, err
	}
	n, err := r.RowsAffected()
	return int(n), err
}

// LeaseJob claims a job in one statement; SQLite's single writer makes it
// atomic, and the leases it counts per company and lane (D53) exact.
func (t *tx) LeaseJob(ctx context.Context, kinds []string, owner string, now, until time.Time) (*consent.Job, error) {
	if len(kinds) == 0 {
		return nil, consent.Errorf(consent.NotFound, "due job not found")
	}
	args := []any{owner, until.UnixMicro(), now.UnixMicro(), consent.MaxJobAttempts}
	marks := make([]string, len(kinds))
	for i, k := range kinds {
		marks[i] = "?" + strconv.Itoa(len(args)+1) // numbered, as the others are
		args = append(args, k)
	}
	in := `(` + strings.Join(marks, ",") + `)`
	// A job LeaseJob may take: of a kind asked for, not failed, due, its
	// lease run out, its lane held by no lease.
	leasable := `j.kind IN ` + in + ` AND j.failed_at IS NULL AND j.run_after <= ?3 AND (j.lease_until IS NULL OR j.lease_until <= ?3)
		AND (j.lane = '' OR j.lane NOT IN (SELECT lane FROM leased))`
	// The job is the first in (leases its company holds, run_after, kind,
	// key) order; the first query finds the first of a company holding
	// none by walking jobs_due_order (named: without statistics SQLite
	// would pick the primary key for kind and sort every due job), and
	// only when there is none does the second sort them all.
	j, err := dialect.ScanJob(t.tx.QueryRowContext(ctx, `WITH leased AS MATERIALIZED (
			SELECT company_id, lane, kind IN `+in+` AS asked FROM jobs WHERE lease_until > ?3),
		busy AS MATERIALIZED (SELECT company_id, count(*) AS n FROM leased WHERE asked GROUP BY company_id)
		UPDATE jobs
		SET lease_owner = ?1, lease_until = ?2, attempts = min(attempts + 1, ?4)
		WHERE (kind, key) = (SELECT kind, key FROM (
			SELECT * FROM (SELECT j.kind, j.key FROM jobs j INDEXED BY jobs_due_order
				WHERE `+leasable+` AND j.company_id NOT IN (SELECT company_id FROM busy)
				ORDER BY j.run_after, j.kind, j.key LIMIT 1)
			UNION ALL
			SELECT * FROM (SELECT j.kind, j.key FROM jobs j LEFT JOIN busy b ON b.company_id = j.company_id WHERE `+leasable+`
				ORDER BY coalesce(b.n, 0), j.run_after, j.kind, j.key LIMIT 1))
			LIMIT 1)
		RETURNING `+sqlrow.JobColumns, args...))
	return j, one(err, "due job")
}

// leaseErr tells a lost lease (Conflict) from a missing job (NotFound).
func (t *tx) leaseErr(ctx context.Context, r sql.Result, err error, kind, key string) error {
	if err != nil {
		return err
	}
	if n, err := r.RowsAffected(); err != nil || n > 0 {
		return err
	}
	if _, err := t.Job(ctx, kind, key); err != nil {
		return err
	}
	return consent.Errorf(consent.Conflict, "the lease of the job is held by another runner")
}

func (t *tx) RenewJob(ctx context.Context, kind, key, owner string, until time.Time) error {
	r, err := t.exec(ctx, `UPDATE jobs SET lease_until = ? WHERE kind = ? AND key = ? AND lease_owner = ?`,
		until.UnixMicro(), kind, key, owner)
	return t.leaseErr(ctx, r, err, kind, key)
}

func (t *tx) EndJob(ctx context.Context, kind, key, owner string, next *consent.Job) error {
	if next == nil {
		r, err := t.exec(ctx, `DELETE FROM jobs WHERE kind = ? AND key = ? AND lease_owner = ?`, kind, key, owner)
		return t.leaseErr(ctx, r, err, kind, key)
	}
	r, err := t.exec(ctx, `UPDATE jobs SET payload = ?, attempts = ?, run_after = ?, last_error = ?, failed_at = ?,
		lease_owner = '', lease_until = NULL WHERE kind = ? AND key = ? AND lease_owner = ?`,
		payload(next.Payload), next.Attempts, next.RunAfter.UnixMicro(), next.LastError, sqlrow.Micros(next.FailedAt), kind, key, owner)
	return t.leaseErr(ctx, r, err, kind, key)
}

func (t *tx) Balance(ctx context.Context, companyID string) (wallet.Amount, error) {
	if t.batch != nil {
		return t.batch.wb.Balance(ctx, t.batch, companyID)
	}
	return balance(ctx, t.tx, companyID)
}

func balance(ctx context.Context, q querier, companyID string) (wallet.Amount, error) {
	var bal wallet.Amount
	err := q.QueryRowContext(ctx, `SELECT balance FROM wallets WHERE company_id = ?`, companyID).Scan(&bal)
	return bal, one(err, "company")
}

// Credit and Debit append the entry first, only when the wallet takes it
// (the INSERT's WHERE clause), and then move the balance, which cannot
// fail then: SQLite has one writer. So a refusal — the company, the
// balance, then a taken entry id, as the other stores find them — comes
// before anything is written, and a caller that treats it as a refusal and
// commits keeps a balance its ledger explains (D5).
func (t *tx) Credit(ctx context.Context, e *wallet.Entry) (wallet.Amount, error) {
	if t.batch != nil {
		return t.batch.wb.Post(ctx, t.batch, []*wallet.Entry{e}, 1) // which checks e
	}
	// The balance must stay within wallet.MaxBalance: a company whose
	// wallet does not take the entry either does not exist or is too near it.
	if ok, err := t.appendEntry(ctx, e, `balance <= ?7 - ?4`, wallet.MaxBalance); err != nil {
		return 0, err
	} else if !ok {
		if _, err := t.Balance(ctx, e.CompanyID); err != nil {
			return 0, err
		}
		return 0, wallet.ErrBalanceLimit
	}
	return t.move(ctx, e, `balance + ?1`)
}

// Debit is conditional: the INSERT's WHERE clause refuses a debit the
// balance cannot cover (D4), and SQLite's one writer keeps it covered
// until the UPDATE.
func (t *tx) Debit(ctx context.Context, e *wallet.Entry) (wallet.Amount, error) {
	if t.batch != nil {
		return t.batch.wb.Post(ctx, t.batch, []*wallet.Entry{e}, -1) // which checks e
	}
	if ok, err := t.appendEntry(ctx, e, `balance >= ?4`); err != nil {
		return 0, err
	} else if !ok {
		cur, err := t.Balance(ctx, e.CompanyID)
		if err != nil {
			return 0, err
		}
		return 0, &wallet.InsufficientFundsError{Required: e.Amount, Balance: cur}
	}
	return t.move(ctx, e, `balance - ?1`)
}

// appendEntry appends e to the ledger when e's company has a wallet whose
// balance meets cond (on ?4, e.Amount, and ?7, the extra argument), and
// reports whether it did: false, with nothing written, when there is no
// such wallet; Conflict, with nothing written, when e.ID is taken.
func (t *tx) appendEntry(ctx context.Context, e *wallet.Entry, cond string, extra ...any) (bool, error) {
	r, err := t.exec(ctx, `INSERT INTO ledger (id, company_id, kind, amount, reference, created_at)
		SELECT ?1, ?2, ?3, ?4, ?5, ?6 FROM wallets WHERE company_id = ?2 AND `+cond,
		append([]any{e.ID, e.CompanyID, e.Kind, e.Amount, e.Reference, e.CreatedAt.UnixMicro()}, extra...)...)
	if err != nil {
		return false, err
	}
	n, err := r.RowsAffected()
	return n > 0, err
}

// move sets e's company's balance to to (of ?1, e.Amount), after
// appendEntry took e.
func (t *tx) move(ctx context.Context, e *wallet.Entry, to string) (wallet.Amount, error) {
	var bal wallet.Amount
	err := t.tx.QueryRowContext(ctx, `UPDATE wallets SET balance = `+to+` WHERE company_id = ?2 RETURNING balance`,
		e.Amount, e.CompanyID).Scan(&bal)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("sqlitestore: the wallet of %s changed under its writer", e.CompanyID)
	}
	return bal, mapErr(err)
}

func (t *tx) Ledger(ctx context.Context, companyID string) ([]*wallet.Entry, error) {
	if err := t.readBehind(ctx); err != nil {
		return nil, err
	}
	rows, err := t.tx.QueryContext(ctx, `SELECT `+sqlrow.EntryColumns+` FROM ledger WHERE company_id = ? ORDER BY seq`, companyID)
	return collect(rows, err, dialect.ScanEntry)
}

// AppendAudit moves the company's head first: SQLite's one writer already
// serializes appends, and the head row is where the chain's order lives.
func (t *tx) AppendAudit(ctx context.Context, e *consent.AuditEntry) error {
	if t.batch != nil {
		return t.batch.wb.Append(ctx, t.batch, e)
	}
	var prev []byte
	err := t.tx.QueryRowContext(ctx, `INSERT INTO audit_heads (company_id, seq, hash) VALUES (?, 1, zeroblob(32))
		ON CONFLICT (company_id) DO UPDATE SET seq = seq + 1 RETURNING seq, hash`, e.CompanyID).Scan(&e.Seq, &prev)
	if err != nil {
		return one(err, "company")
	}
	if e.PrevHash, err = sqlrow.ScanDigest(prev); err != nil {
		return err
	}
	e.At = consent.UTC(e.At)
	e.Hash = audit.Hash(e)
	if _, err := t.exec(ctx, `UPDATE audit_heads SET hash = ? WHERE company_id = ?`, e.Hash[:], e.CompanyID); err != nil {
		return err
	}
	_, err = t.exec(ctx, `INSERT INTO audit_log (company_id, seq, at, actor, action, target, outcome, request_id,
		detail, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, e.CompanyID, e.Seq, e.At.UnixMicro(),
		e.Actor, e.Action, e.Target, e.Outcome, e.RequestID, e.Detail, e.PrevHash[:], e.Hash[:])
	return err
}

func (t *tx) AuditEntries(ctx context.Context, q consent.AuditQuery) ([]*consent.AuditEntry, error) {
	if err := t.readBehind(ctx); err != nil {
		return nil, err
	}
	order := "ASC"
	if q.Newest {
		order = "DESC"
	}
	rows, err := t.tx.QueryContext(ctx, `SELECT `+sqlrow.AuditColumns+` FROM audit_log
		WHERE company_id = ?1 AND seq > ?2 AND (?3 = 0 OR seq < ?3)
		AND substr(action, 1, length(?4)) = ?4 AND (?5 = '' OR target = ?5) AND (?6 = '' OR actor = ?6)
		AND (?7 IS NULL OR at >= ?7) AND (?8 IS NULL OR at < ?8)
		ORDER BY seq `+order+` LIMIT ?9`,
		q.CompanyID, q.AfterSeq, q.BeforeSeq, q.ActionPrefix, q.Target, q.Actor,
		sqlrow.Micros(q.Since), sqlrow.Micros(q.Until), q.Limit)
	out, err := collect(rows, err, dialect.ScanAudit)
	for _, e := range out {
		e.CompanyID = q.CompanyID
	}
	return out, err
}

func (t *tx) AuditHead(ctx context.Context, companyID string) (*consent.AuditHead, error) {
	if err := t.readBehind(ctx); err != nil {
		return nil, err
	}
	h, err := auditHead(ctx, t.tx, companyID)
	if err != nil {
		return nil, err
	}
	return &h, nil
}

// auditHead reads the head of the company's chain: seq 0 and the zero
// hash when the chain has no entry yet.
func auditHead(ctx context.Context, q querier, companyID string) (consent.AuditHead, error) {
	h := consent.AuditHead{CompanyID: companyID}
	var (
		seq  *int64
		hash []byte
	)
	err := q.QueryRowContext(ctx, `SELECT h.seq, h.hash FROM companies c
		LEFT JOIN audit_heads h ON h.company_id = c.id WHERE c.id = ?`, companyID).Scan(&seq, &hash)
	if err != nil {
		return h, one(err, "company")
	}
	if seq != nil {
		h.Seq = *seq
	}
	h.Hash, err = sqlrow.ScanDigest(hash)
	return h, err
}

func (t *tx) CreateWebhookEndpoint(ctx context.Context, e *consent.WebhookEndpoint) error {
	_, err := t.exec(ctx, `INSERT INTO webhook_endpoints (id, company_id, url, secret, events, created_at, disabled_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, e.ID, e.CompanyID, e.URL, e.Secret, jsonText(orEmpty(e.Events)),
		e.CreatedAt.UnixMicro(), sqlrow.Micros(e.DisabledAt))
	return err
}

func (t *tx) WebhookEndpoint(ctx context.Context, id string) (*consent.WebhookEndpoint, error) {
	e, err := dialect.ScanEndpoint(t.tx.QueryRowContext(ctx, `SELECT `+sqlrow.EndpointColumns+` FROM webhook_endpoints WHERE id = ?`, id))
	return e, one(err, "webhook endpoint")
}

func (t *tx) WebhookEndpoints(ctx context.Context, companyID string) ([]*consent.WebhookEndpoint, error) {
	rows, err := t.tx.QueryContext(ctx, `SELECT `+sqlrow.EndpointColumns+` FROM webhook_endpoints
		WHERE company_id = ? ORDER BY seq`, companyID)
	return collect(rows, err, dialect.ScanEndpoint)
}

func (t *tx) DisableWebhookEndpoint(ctx context.Context, companyID, id string, at time.Time) error {
	r, err := t.exec(ctx, `UPDATE webhook_endpoints SET disabled_at = ? WHERE id = ? AND company_id = ?`,
		sqlrow.Micros(at), id, companyID)
	return affected(r, err, "webhook endpoint")
}

func (t *tx) DeleteWebhookEndpoint(ctx context.Context, companyID, id string) error {
	r, err := t.exec(ctx, `DELETE FROM webhook_endpoints WHERE id = ? AND company_id = ?`, id, companyID)
	return affected(r, err, "webhook endpoint")
}

func (t *tx) AppendWebhookDelivery(ctx context.Context, d *consent.WebhookDelivery) error {
	_, err := t.exec(ctx, `INSERT INTO webhook_deliveries (endpoint_id, message_id, event_type, attempt, at, status, error, duration_us)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, d.EndpointID, d.MessageID, d.EventType, d.Attempt, d.At.UnixMicro(), d.Status,
		d.Error, d.Duration.Microseconds())
	if consent.ErrorCode(err) == consent.NotFound {
		return consent.Errorf(consent.NotFound, "webhook endpoint not found")
	}
	return err
}

func (t *tx) WebhookDeliveries(ctx context.Context, endpointID string, before int64, limit int) ([]*consent.WebhookDelivery, error) {
	if before <= 0 {
		before = math.MaxInt64
	}
	rows, err := t.tx.QueryContext(ctx, `SELECT `+sqlrow.DeliveryColumns+` FROM webhook_deliveries
		WHERE endpoint_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?`, endpointID, before, max(limit, 0))
	out, err := collect(rows, err, dialect.ScanDelivery)
	for _, d := range out {
		d.EndpointID = endpointID
	}
	return out, err
}

// ClaimIdempotencyKey needs no waiting: SQLite's single writer runs one
// claim at a time.
func (t *tx) ClaimIdempotencyKey(ctx context.Context, r *consent.IdempotencyRecord, now time.Time) (*consent.IdempotencyRecord, error) {
	old, err := dialect.ScanKey(t.tx.QueryRowContext(ctx, `SELECT `+sqlrow.KeyColumns+` FROM idempotency_keys WHERE scope = ? AND key = ?`, r.Scope, r.Key))
	switch {
	case err == nil && old.ExpiresAt.After(now):
		return old, nil
	case err != nil && !errors.Is(err, sql.ErrNoRows):
		return nil, mapErr(err)
	}
	_, err = t.exec(ctx, `INSERT OR REPLACE INTO idempotency_keys (scope, key, fingerprint, status, body, created_at, expires_at)
		VALUES (?, ?, ?, 0, x'', ?, ?)`, r.Scope, r.Key, r.Fingerprint[:], r.CreatedAt.UnixMicro(), r.ExpiresAt.UnixMicro())
	return nil, err
}

func (t *tx) AnswerIdempotencyKey(ctx context.Context, scope, key string, status int, body []byte) error {
	r, err := t.exec(ctx, `UPDATE idempotency_keys SET status = ?, body = ? WHERE scope = ? AND key = ?`, status, payload(body), scope, key)
	return affected(r, err, "idempotency key")
}

func (t *tx) ReleaseIdempotencyKey(ctx context.Context, scope, key string) error {
	_, err := t.exec(ctx, `DELETE FROM idempotency_keys WHERE scope = ? AND key = ?`, scope, key)
	return err
}

func (t *tx) PruneIdempotencyKeys(ctx context.Context, now time.Time, limit int) (int, error) {
	res, err := t.exec(ctx, `DELETE FROM idempotency_keys WHERE rowid IN
		(SELECT rowid FROM idempotency_keys WHERE expires_at <= ? ORDER BY expires_at LIMIT ?)`, now.UnixMicro(), max(limit, 0))
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// newTx returns the transaction over q; batch is the group-commit batch
// it is a call of, if any.
func newTx(q querier, batch *batchTx) *tx {
	return &tx{Shared: sqlrow.Shared{Conn: conn{q}, D: dialect}, tx: q, batch: batch}
}

// conn is a transaction as sqlrow.Shared uses it, its errors mapped.
type conn struct{ q querier }

func (c conn) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	r, err := c.q.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, mapErr(err)
	}
	n, err := r.RowsAffected()
	return n, mapErr(err)
}

func (c conn) QueryRow(ctx context.Context, query string, args ...any) sqlrow.Row {
	return mapped{c.q.QueryRowContext(ctx, query, args...)}
}

func (c conn) Query(ctx context.Context, query string, args ...any) (sqlrow.ClosingRows, error) {
	rows, err := c.q.QueryContext(ctx, query, args...) //nolint:rowserrcheck // returned: sqlrow.Collect checks Err after its loop
	if err != nil {
		return nil, mapErr(err)
	}
	return mappedRows{rows}, nil
}

// mapped and mappedRows map the errors of a row and of rows.
type mapped struct{ *sql.Row }

func (r mapped) Scan(dest ...any) error { return mapErr(r.Row.Scan(dest...)) }

type mappedRows struct{ *sql.Rows }

func (r mappedRows) Scan(dest ...any) error { return mapErr(r.Rows.Scan(dest...)) }
func (r mappedRows) Err() error             { return mapErr(r.Rows.Err()) }
func (r mappedRows) Close()                 { r.Rows.Close() }
