package pgstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/consentkit/consentkit/audit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/store/internal/sqlrow"
	"github.com/consentkit/consentkit/wallet"
)

type tx struct {
	sqlrow.Shared // the methods both SQL stores share
	tx            pgx.Tx
	lock          string // " FOR UPDATE" inside Update, "" inside View
	// batch is the group-commit batch the transaction is a call of, when
	// the batch runs more than one call (nil otherwise): its charges and
	// audit entries are written behind (behind.go).
	batch *batchTx
}

// readBehind writes what the batch wrote behind before a read of the
// ledger or the audit log.
func (t *tx) readBehind(ctx context.Context) error {
	if t.batch == nil {
		return nil
	}
	return t.batch.writeBehind(ctx)
}

func (t *tx) exec(ctx context.Context, query string, args ...any) (pgconn.CommandTag, error) {
	tag, err := t.tx.Exec(ctx, query, args...)
	return tag, mapErr(err)
}

// one maps "no rows" to a not-found error that names what was missing.
func one(err error, what string) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return notFound(what)
	}
	return mapErr(err)
}

func notFound(what string) error { return consent.Errorf(consent.NotFound, "%s not found", what) }

func affected(tag pgconn.CommandTag, err error, what string) error {
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return notFound(what)
	}
	return nil
}

// nullTime returns nil for the zero time, stored as NULL.
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

func strs(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (t *tx) CreateCompany(ctx context.Context, c *consent.Company) error {
	_, err := t.exec(ctx, `WITH c AS (
			INSERT INTO companies (id, name, third_party_enabled, authorized_third_parties, attest_certificates,
				insights_rules, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id)
		INSERT INTO wallets (company_id) SELECT id FROM c`,
		c.ID, c.Name, c.ThirdPartyVerificationEnabled, strs(c.AuthorizedThirdParties), c.AttestCertificates,
		sqlrow.JSON(c.InsightsRules), c.CreatedAt)
	return err
}

func (t *tx) Company(ctx context.Context, id string) (*consent.Company, error) {
	c, err := dialect.ScanCompany(t.tx.QueryRow(ctx, `SELECT `+sqlrow.CompanyColumns+` FROM companies WHERE id = $1`, id))
	return c, one(err, "company")
}

// LockCompany takes the company's row FOR NO KEY UPDATE inside Update:
// it makes other lockers and changes of the company wait, but not the
// inserts of rows that refer to it (FOR KEY SHARE), so a transaction that
// added such a row before it locks still takes its turn without deadlock.
func (t *tx) LockCompany(ctx context.Context, id string) error {
	lock := ""
	if t.lock != "" {
		lock = " FOR NO KEY UPDATE"
	}
	var n int
	return one(t.tx.QueryRow(ctx, `SELECT 1 FROM companies WHERE id = $1`+lock, id).Scan(&n), "company")
}

func (t *tx) CompanyIDs(ctx context.Context, after string, limit int) ([]string, error) {
	if !consent.ValidText(after) {
		// No id is such text, but the list still starts where it would
		// sort: compared as bytes, as the other stores compare ids.
		return t.ids(ctx, `SELECT id FROM companies WHERE convert_to(id, 'UTF8') > $1 ORDER BY id COLLATE "C" LIMIT $2`,
			[]byte(after), max(limit, 0))
	}
	return t.ids(ctx, `SELECT id FROM companies WHERE id COLLATE "C" > $1 ORDER BY id COLLATE "C" LIMIT $2`, after, max(limit, 0))
}

func (t *tx) UpdateCompany(ctx context.Context, c *consent.Company) error {
	tag, err := t.exec(ctx, `UPDATE companies SET name = $2, third_party_enabled = $3, authorized_third_parties = $4,
		attest_certificates = $5, insights_rules = $6 WHERE id = $1`, c.ID, c.Name, c.ThirdPartyVerificationEnabled,
		strs(c.AuthorizedThirdParties), c.AttestCertificates, sqlrow.JSON(c.InsightsRules))
	return affected(tag, err, "company")
}

func (t *tx) CreateProperty(ctx context.Context, p *consent.Property) error {
	_, err := t.exec(ctx, `INSERT INTO properties (id, company_id, name, allowed_origins, created_at) VALUES ($1, $2, $3, $4, $5)`,
		p.ID, p.CompanyID, p.Name, strs(p.AllowedOrigins), p.CreatedAt)
	return err
}

func (t *tx) Property(ctx context.Context, id string) (*consent.Property, error) {
	p, err := dialect.ScanProperty(t.tx.QueryRow(ctx, `SELECT `+sqlrow.PropertyColumns+` FROM properties WHERE id = $1`, id))
	return p, one(err, "property")
}

func (t *tx) UpdateProperty(ctx context.Context, p *consent.Property) error {
	tag, err := t.exec(ctx, `UPDATE properties SET name = $2, allowed_origins = $3 WHERE id = $1`,
		p.ID, p.Name, strs(p.AllowedOrigins))
	return affected(tag, err, "property")
}

func (t *tx) CreateToken(ctx context.Context, tok *consent.Token) error {
	perms := make([]string, len(tok.Permissions))
	for i, p := range tok.Permissions {
		perms[i] = string(p)
	}
	_, err := t.exec(ctx, `INSERT INTO tokens (id, company_id, digest, permissions, expires_at, revoked_at, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, tok.ID, tok.CompanyID, tok.Digest[:], perms,
		nullTime(tok.ExpiresAt), nullTime(tok.RevokedAt), tok.CreatedAt)
	return err
}

func (t *tx) TokenByDigest(ctx context.Context, d consent.Digest) (*consent.Token, error) {
	tok, err := dialect.ScanToken(t.tx.QueryRow(ctx, `SELECT `+sqlrow.TokenColumns+` FROM tokens WHERE digest = $1`, d[:]))
	return tok, one(err, "token")
}

func (t *tx) RevokeToken(ctx context.Context, companyID, id string, at time.Time) error {
	tag, err := t.exec(ctx, `UPDATE tokens SET revoked_at = coalesce(revoked_at, $3) WHERE id = $1 AND company_id = $2`,
		id, companyID, at)
	return affected(tag, err, "token")
}

func (t *tx) CreateSession(ctx context.Context, s *consent.Session) error {
	_, err := t.exec(ctx, `INSERT INTO sessions (id, company_id, property_id, retention_status, video_status,
		created_at, expires_at, upload_digest, certificate_id, url, closed_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`, s.ID, s.CompanyID, s.PropertyID,
		string(s.RetentionStatus), string(s.VideoStatus), s.CreatedAt, s.ExpiresAt,
		sqlrow.Digest(s.UploadDigest), s.CertificateID, s.URL, nullTime(s.ClosedAt))
	return err
}

func (t *tx) Session(ctx context.Context, id string) (*consent.Session, error) {
	s, err := dialect.ScanSession(t.tx.QueryRow(ctx, `SELECT `+sqlrow.SessionColumns+` FROM sessions WHERE id = $1`+t.lock, id))
	return s, one(err, "session")
}

func (t *tx) AppendEvents(ctx context.Context, sessionID string, chunk []byte, at time.Time) error {
	tag, err := t.exec(ctx, `WITH s AS (
			UPDATE sessions SET event_chunks = event_chunks + 1, event_bytes = event_bytes + length($2::bytea),
			last_event_at = $3 WHERE id = $1 RETURNING event_chunks - 1 AS seq)
		INSERT INTO session_events (session_id, seq, data) SELECT $1, seq, $2 FROM s`, sessionID, payload(chunk), at)
	return affected(tag, err, "session")
}

// EventChunk compares seq as a bigint: a number beyond the 32-bit column
// is no chunk, not a parameter that PostgreSQL refuses.
func (t *tx) EventChunk(ctx context.Context, sessionID string, seq int) ([]byte, error) {
	var b []byte
	err := t.tx.QueryRow(ctx, `SELECT data FROM session_events WHERE session_id = $1 AND seq = $2::bigint`, sessionID, seq).Scan(&b)
	if errors.Is(err, pgx.ErrNoRows) {
		if _, err := t.Session(ctx, sessionID); err != nil {
			return nil, err
		}
		return nil, consent.Errorf(consent.NotFound, "event chunk not found")
	}
	return b, mapErr(err)
}

func (t *tx) UpdateSession(ctx context.Context, s *consent.Session) error {
	tag, err := t.exec(ctx, `UPDATE sessions SET retention_status = $2, video_status = $3, expires_at = $4,
		video_path = $5, video_bytes = $6, video_sha256 = $7, video_duration_ms = $8, closed_at = $9 WHERE id = $1`,
		s.ID, string(s.RetentionStatus), string(s.VideoStatus), s.ExpiresAt, s.Video.Path, s.Video.Bytes,
		sqlrow.Digest(s.Video.SHA256), s.Video.Duration.Milliseconds(), nullTime(s.ClosedAt))
	return affected(tag, err, "session")
}

func (t *tx) Events(ctx context.Context, sessionID string) ([][]byte, error) {
	var exists bool
	if err := t.tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM sessions WHERE id = $1)`, sessionID).Scan(&exists); err != nil {
		return nil, err
	}
	if !exists {
		return nil, notFound("session")
	}
	rows, err := t.tx.Query(ctx, `SELECT data FROM session_events WHERE session_id = $1 ORDER BY seq`, sessionID)
	return collect(rows, err, sqlrow.ScanBytes)
}

func (t *tx) EachEventChunk(ctx context.Context, sessionID string, fn func([]byte) error) error {
	var exists bool
	if err := t.tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM sessions WHERE id = $1)`, sessionID).Scan(&exists); err != nil {
		return err
	}
	if !exists {
		return notFound("session")
	}
	rows, err := t.tx.Query(ctx, `SELECT data FROM session_events WHERE session_id = $1 ORDER BY seq`, sessionID)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		// bytea comes in binary: the raw values are the chunk's bytes, read
		// once, valid until Next.
		if err := fn(rows.RawValues()[0]); err != nil {
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
		VALUES ($1, $2, $3, $4, $5, $6, $7::text::json, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21)`,
		c.ID, c.CompanyID, c.PropertyID, c.SessionID, c.Origin, string(records), string(c.EventsCombined),
		sqlrow.Digest(c.EmailDigest), sqlrow.Digest(c.MobileDigest), string(c.RetentionStatus),
		c.CreatedAt, c.ExpiresAt, nullTime(c.RevokedAt),
		c.ClientIP, c.UserAgent, sqlrow.Digest(c.RecordingSHA256), visibility, c.KeyID, sqlrow.Signature(c.Signature),
		nullTime(c.RevokedBefore), c.SignatureVersion)
	return err
}

// certificateColumns are the columns dialect.ScanCertificate reads, in its order.
const certificateColumns = `id, company_id, property_id, session_id, origin, records::text,
	events_combined::text, email_digest, mobile_digest, retention_status, created_at, expires_at, revoked_at,
	client_ip, user_agent, recording_sha256, visibility, key_id, signature, revoked_before, signature_version`

func (t *tx) Certificate(ctx context.Context, id string) (*consent.Certificate, error) {
	c, err := dialect.ScanCertificate(t.tx.QueryRow(ctx, `SELECT `+certificateColumns+` FROM certificates WHERE id = $1`+t.lock, id))
	return c, one(err, "certificate")
}

func (t *tx) ids(ctx context.Context, query string, args ...any) ([]string, error) {
	rows, err := t.tx.Query(ctx, query, args...)
	return collect(rows, err, sqlrow.ScanText)
}

func (t *tx) CertificatesByEmail(ctx context.Context, companyID string, d consent.Digest) ([]string, error) {
	return t.ids(ctx, `SELECT id FROM certificates WHERE company_id = $1 AND email_digest = $2 ORDER BY id COLLATE "C"`, companyID, d[:])
}

func (t *tx) CertificatesByMobile(ctx context.Context, companyID string, d consent.Digest) ([]string, error) {
	return t.ids(ctx, `SELECT id FROM certificates WHERE company_id = $1 AND mobile_digest = $2 ORDER BY id COLLATE "C"`, companyID, d[:])
}

func (t *tx) CertificatesBySession(ctx context.Context, sessionID string) ([]string, error) {
	return t.ids(ctx, `SELECT id FROM certificates WHERE session_id = $1 ORDER BY id COLLATE "C"`, sessionID)
}

func (t *tx) UpdateCertificate(ctx context.Context, c *consent.Certificate) error {
	tag, err := t.exec(ctx, `UPDATE certificates SET retention_status = $2, expires_at = $3 WHERE id = $1`,
		c.ID, string(c.RetentionStatus), c.ExpiresAt)
	return affected(tag, err, "certificate")
}

func (t *tx) RevokeCertificate(ctx context.Context, id string, at time.Time) error {
	tag, err := t.exec(ctx, `UPDATE certificates SET revoked_at = coalesce(revoked_at, $2) WHERE id = $1`, id, at)
	return affected(tag, err, "certificate")
}

func (t *tx) Velocity(ctx context.Context, c *consent.Certificate) (consent.Velocity, error) {
	q, args := dialect.VelocityQuery(c)
	return sqlrow.ScanVelocity(t.tx.QueryRow(ctx, q, args...))
}

func (t *tx) RevokedBefore(ctx context.Context, companyID string, email, mobile consent.Digest) (time.Time, error) {
	var at time.Time
	err := t.tx.QueryRow(ctx, `SELECT max(t) FROM (
		SELECT max(created_at) AS t FROM revocations WHERE company_id = $1 AND email_digest = $2
		UNION ALL SELECT max(created_at) FROM revocations WHERE company_id = $1 AND mobile_digest = $3
		UNION ALL SELECT max(revoked_at) FROM certificates WHERE company_id = $1 AND email_digest = $2
		UNION ALL SELECT max(revoked_at) FROM certificates WHERE company_id = $1 AND mobile_digest = $3) AS latest`,
		companyID, sqlrow.Digest(email), sqlrow.Digest(mobile)).Scan(dialect.Time(&at))
	return at, err
}

func (t *tx) CreateRevocation(ctx context.Context, r *consent.Revocation) error {
	_, err := t.exec(ctx, `INSERT INTO revocations (id, company_id, certificate_id, email_digest, mobile_digest,
		reason, client_ip, certificate_ids, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		r.ID, r.CompanyID, r.CertificateID, sqlrow.Digest(r.EmailDigest), sqlrow.Digest(r.MobileDigest),
		r.Reason, r.ClientIP, strs(r.CertificateIDs), r.CreatedAt)
	return err
}

func (t *tx) Revocations(ctx context.Context, companyID string) ([]*consent.Revocation, error) {
	rows, err := t.tx.Query(ctx, `SELECT `+sqlrow.RevocationColumns+` FROM revocations WHERE company_id = $1 ORDER BY seq`, companyID)
	return collect(rows, err, dialect.ScanRevocation)
}

// purgedSession is what PurgeSessions leaves of a session.
const purgedSession = `retention_status = 'expired', video_status = 'none', event_chunks = 0, event_bytes = 0,
	url = '', upload_digest = NULL, video_path = '', video_bytes = 0, video_sha256 = NULL, video_duration_ms = 0,
	recording_key = '', recording_bytes = 0, recording_sha256 = NULL, recording_at = NULL`

// PurgeSessions locks its batch with FOR UPDATE SKIP LOCKED: a session
// that a writer holds (a retention under way, say) is passed over, never
// waited for, and the expiry is checked again on the locked row.
func (t *tx) PurgeSessions(ctx context.Context, before time.Time, limit int) ([]*consent.Session, error) {
	ids, err := t.ids(ctx, `SELECT id FROM sessions WHERE retention_status <> 'expired' AND expires_at <= $1
		ORDER BY expires_at, id COLLATE "C" LIMIT $2 FOR UPDATE SKIP LOCKED`, before, max(limit, 0))
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
	if _, err := t.exec(ctx, `DELETE FROM session_events WHERE session_id = ANY($1)`, ids); err != nil {
		return nil, err
	}
	if _, err := t.exec(ctx, `UPDATE sessions SET `+purgedSession+` WHERE id = ANY($1)`, ids); err != nil {
		return nil, err
	}
	return out, nil
}

// PurgeCertificates deletes in one statement; the subquery's SKIP LOCKED
// passes over certificates that a writer holds, and the outer condition is
// checked again on the latest version of each row.
func (t *tx) PurgeCertificates(ctx context.Context, before time.Time, limit int) ([]string, error) {
	ids, err := t.ids(ctx, `DELETE FROM certificates WHERE id IN (SELECT id FROM certificates WHERE expires_at <= $1
		ORDER BY expires_at, id COLLATE "C" LIMIT $2 FOR UPDATE SKIP LOCKED) AND expires_at <= $1 RETURNING id`,
		before, max(limit, 0))
	sort.Strings(ids)
	if ids == nil {
		ids = []string{}
	}
	return ids, mapErr(err)
}

func (t *tx) EnqueueJob(ctx context.Context, j *consent.Job) error {
	_, err := t.exec(ctx, `INSERT INTO jobs (kind, key, payload, attempts, run_after, last_error, created_at, company_id, lane)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		j.Kind, j.Key, payload(j.Payload), j.Attempts, j.RunAfter, j.LastError, j.CreatedAt, j.CompanyID, j.Lane)
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
	j, err := dialect.ScanJob(t.tx.QueryRow(ctx, `SELECT `+sqlrow.JobColumns+` FROM jobs WHERE kind = $1 AND key = $2`, kind, key))
	return j, one(err, "job")
}

// DeleteLaneJobs finds the jobs through the index jobs_waiting (kind,
// company, not failed), so it reads the company's waiting jobs of the kind
// only. A job that a lease is being taken on meanwhile is deleted once that
// transaction ends; its holder finds it gone.
func (t *tx) DeleteLaneJobs(ctx context.Context, kind, companyID, lane string) (int, error) {
	tag, err := t.exec(ctx, `DELETE FROM jobs WHERE kind = $1 AND company_id = $2 AND failed_at IS NULL AND lane = $3`,
		kind, companyID, lane)
	return int(tag.RowsAffected()), err
}

func (t *tx) DeleteFailedJobs(ctx context.Context, kind string, before time.Time, limit int) (int, error) {
	tag, err := t.exec(ctx, `DELETE FROM jobs WHERE kind = $1 AND key IN (SELECT key FROM jobs
		WHERE kind = $1 AND failed_at < $2 ORDER BY failed_at, key LIMIT $3)`, kind, before, limit)
	return int(tag.RowsAffected()), err
}

func (t *tx) DeleteWebhookDeliveries(ctx context.Context, before time.Time, limit int) (int, error) {
	tag, err := t.exec(ctx, `DELETE FROM webhook_deliveries WHERE seq IN (SELECT seq FROM webhook_deliveries
		WHERE at < $1 ORDER BY at, seq LIMIT $2)`, before, limit)
	return int(tag.RowsAffected()), err
}

// LeaseJob takes the lease lock first (D53): leases are taken one at a
// time across every instance, so the leases it counts per company and lane
// are all committed ones and a lane never holds two. It locks no row
// before it chooses (the lock keeps other leases off), so that the choice
// is a top-N sort rather than a sort of every due job; the update checks
// the chosen job again, and a job ended or failed meanwhile is not taken
// (NotFound: the runner asks again).
func (t *tx) LeaseJob(ctx context.Context, kinds []string, owner string, now, until time.Time) (*consent.Job, error) {
	if _, err := t.exec(ctx, leaseLock); err != nil {
		return nil, err
	}
	// The job is the first in (leases its company holds, run_after, kind,
	// key) order. A company holding none comes first, and its jobs are
	// found by walking jobs_due_order until the first one free to lease:
	// a lease reads few jobs however many are due. Only when every due job
	// is of a busy company does the second query sort them all; the outer
	// LIMIT never runs it otherwise.
	j, err := dialect.ScanJob(t.tx.QueryRow(ctx, `WITH leased AS MATERIALIZED (
			SELECT company_id, lane, kind = ANY($4) AS asked FROM jobs WHERE lease_until > $3),
		busy AS (SELECT company_id, count(*) AS n FROM leased WHERE asked GROUP BY company_id)
		UPDATE jobs
		SET lease_owner = $1, lease_until = $2, attempts = least(attempts + 1, $5)
		WHERE (kind, key) = (
			(SELECT j.kind, j.key FROM jobs j WHERE `+leasable+` AND j.company_id NOT IN (SELECT company_id FROM busy)
				ORDER BY j.run_after, j.kind COLLATE "C", j.key COLLATE "C" LIMIT 1)
			UNION ALL
			(SELECT j.kind, j.key FROM jobs j LEFT JOIN busy b ON b.company_id = j.company_id WHERE `+leasable+`
				ORDER BY coalesce(b.n, 0), j.run_after, j.kind COLLATE "C", j.key COLLATE "C" LIMIT 1)
			LIMIT 1)
			AND failed_at IS NULL AND run_after <= $3 AND (lease_until IS NULL OR lease_until <= $3)
		RETURNING `+sqlrow.JobColumns, owner, until, now, kinds, consent.MaxJobAttempts))
	return j, one(err, "due job")
}

// leasable is the condition on a job j that LeaseJob may take: of a kind
// asked for ($4), not failed, due at $3, its lease run out, its lane held
// by no lease (leased is LeaseJob's list of the leases held).
const leasable = `j.kind = ANY($4) AND j.failed_at IS NULL AND j.run_after <= $3 AND (j.lease_until IS NULL OR j.lease_until <= $3)
	AND (j.lane = '' OR j.lane NOT IN (SELECT lane FROM leased))`

// leaseLock takes the advisory lock LeaseJob holds until its transaction
// ends. As batchLock's, its keys are two integers, "ckjb" and the schema's
// hash: stores in other schemas of the database lease on their own.
const leaseLock = `SELECT pg_advisory_xact_lock(1667983970, hashtext(current_schema()))`

// leaseErr tells a lost lease (Conflict) from a missing job (NotFound).
func (t *tx) leaseErr(ctx context.Context, tag pgconn.CommandTag, err error, kind, key string) error {
	if err != nil || tag.RowsAffected() > 0 {
		return err
	}
	if _, err := t.Job(ctx, kind, key); err != nil {
		return err
	}
	return consent.Errorf(consent.Conflict, "the lease of the job is held by another runner")
}

func (t *tx) RenewJob(ctx context.Context, kind, key, owner string, until time.Time) error {
	tag, err := t.exec(ctx, `UPDATE jobs SET lease_until = $4 WHERE kind = $1 AND key = $2 AND lease_owner = $3`,
		kind, key, owner, until)
	return t.leaseErr(ctx, tag, err, kind, key)
}

func (t *tx) EndJob(ctx context.Context, kind, key, owner string, next *consent.Job) error {
	if next == nil {
		tag, err := t.exec(ctx, `DELETE FROM jobs WHERE kind = $1 AND key = $2 AND lease_owner = $3`, kind, key, owner)
		return t.leaseErr(ctx, tag, err, kind, key)
	}
	tag, err := t.exec(ctx, `UPDATE jobs SET payload = $4, attempts = $5, run_after = $6, last_error = $7, failed_at = $8,
		lease_owner = '', lease_until = NULL WHERE kind = $1 AND key = $2 AND lease_owner = $3`,
		kind, key, owner, payload(next.Payload), next.Attempts, next.RunAfter, next.LastError, nullTime(next.FailedAt))
	return t.leaseErr(ctx, tag, err, kind, key)
}

func (t *tx) Balance(ctx context.Context, companyID string) (wallet.Amount, error) {
	if t.batch != nil {
		return t.batch.wb.Balance(ctx, t.batch, companyID)
	}
	var bal int64
	err := t.tx.QueryRow(ctx, `SELECT balance FROM wallets WHERE company_id = $1`+t.lock, companyID).Scan(&bal)
	return wallet.Amount(bal), one(err, "company")
}

func (t *tx) Credit(ctx context.Context, e *wallet.Entry) (wallet.Amount, error) {
	if t.batch != nil {
		return t.batch.wb.Post(ctx, t.batch, []*wallet.Entry{e}, 1) // which checks e
	}
	bal, err := t.post(ctx, e, creditUpdate)
	if consent.ErrorCode(err) == consent.NotFound {
		if _, err := t.Balance(ctx, e.CompanyID); err != nil {
			return 0, err
		}
		return 0, wallet.ErrBalanceLimit
	}
	return bal, err
}

// creditUpdate is Credit's update of the wallet. The balance must stay
// within wallet.MaxBalance: a company whose wallet is not updated either
// does not exist or is too near it.
var creditUpdate = `UPDATE wallets SET balance = balance + $2
	WHERE company_id = $1 AND balance <= ` + strconv.FormatInt(int64(wallet.MaxBalance), 10) + ` - $2 RETURNING balance`

// Debit is conditional in one statement: after waiting for a concurrent
// writer, Postgres re-checks the WHERE clause against the newly committed
// row, so the balance never goes below zero (D4).
func (t *tx) Debit(ctx context.Context, e *wallet.Entry) (wallet.Amount, error) {
	if t.batch != nil {
		return t.batch.wb.Post(ctx, t.batch, []*wallet.Entry{e}, -1) // which checks e
	}
	bal, err := t.post(ctx, e, `UPDATE wallets SET balance = balance - $2
		WHERE company_id = $1 AND balance >= $2 RETURNING balance`)
	if consent.ErrorCode(err) == consent.NotFound {
		cur, err := t.Balance(ctx, e.CompanyID)
		if err != nil {
			return 0, err
		}
		return 0, &wallet.InsufficientFundsError{Required: e.Amount, Balance: cur}
	}
	return bal, err
}

// post runs the wallet update and appends the ledger entry in one round trip.
func (t *tx) post(ctx context.Context, e *wallet.Entry, update string) (wallet.Amount, error) {
	var bal int64
	err := t.tx.QueryRow(ctx, `WITH w AS (`+update+`),
		l AS (INSERT INTO ledger (id, company_id, kind, amount, reference, created_at)
			SELECT $3, $1, $4, $2, $5, $6 FROM w)
		SELECT balance FROM w`, e.CompanyID, int64(e.Amount), e.ID, string(e.Kind), e.Reference, e.CreatedAt).Scan(&bal)
	if err != nil {
		return 0, one(err, "company")
	}
	return wallet.Amount(bal), nil
}

func (t *tx) Ledger(ctx context.Context, companyID string) ([]*wallet.Entry, error) {
	if err := t.readBehind(ctx); err != nil {
		return nil, err
	}
	rows, err := t.tx.Query(ctx, `SELECT `+sqlrow.EntryColumns+` FROM ledger WHERE company_id = $1 ORDER BY seq`, companyID)
	return collect(rows, err, dialect.ScanEntry)
}

// zeroHash is the PrevHash of a chain's first entry.
var zeroHash = make([]byte, 32)

// AppendAudit takes the company's head row first: the upsert locks it (or
// inserts it, Postgres making a concurrent first insert wait and then
// update), so appends of one company take turns across connections and
// instances, and each reads the head its predecessor committed.
func (t *tx) AppendAudit(ctx context.Context, e *consent.AuditEntry) error {
	if t.batch != nil {
		return t.batch.wb.Append(ctx, t.batch, e)
	}
	var prev []byte
	err := t.tx.QueryRow(ctx, `INSERT INTO audit_heads (company_id, seq, hash) VALUES ($1, 1, $2)
		ON CONFLICT (company_id) DO UPDATE SET seq = audit_heads.seq + 1 RETURNING seq, hash`,
		e.CompanyID, zeroHash).Scan(&e.Seq, &prev)
	if err != nil {
		return one(err, "company")
	}
	if e.PrevHash, err = sqlrow.ScanDigest(prev); err != nil {
		return err
	}
	e.At = consent.UTC(e.At)
	e.Hash = audit.Hash(e)
	_, err = t.exec(ctx, `WITH h AS (UPDATE audit_heads SET hash = $11 WHERE company_id = $1)
		INSERT INTO audit_log (company_id, seq, at, actor, action, target, outcome, request_id, detail, prev_hash, hash)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`, e.CompanyID, e.Seq, e.At,
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
	// No bound is the greatest one: "$3 = 0" would type $3 as int4, and a
	// bound past 2^31-1 would fail.
	before := q.BeforeSeq
	if before <= 0 {
		before = math.MaxInt64
	}
	rows, err := t.tx.Query(ctx, `SELECT `+sqlrow.AuditColumns+` FROM audit_log
		WHERE company_id = $1 AND seq > $2 AND seq < $3
		AND left(action, length($4::text)) = $4::text AND ($5 = '' OR target = $5) AND ($6 = '' OR actor = $6)
		AND ($7::timestamptz IS NULL OR at >= $7) AND ($8::timestamptz IS NULL OR at < $8)
		ORDER BY seq `+order+` LIMIT $9`,
		q.CompanyID, q.AfterSeq, before, q.ActionPrefix, q.Target, q.Actor,
		nullTime(q.Since), nullTime(q.Until), q.Limit)
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
	h := consent.AuditHead{CompanyID: companyID}
	var (
		seq  *int64
		hash []byte
	)
	err := t.tx.QueryRow(ctx, `SELECT h.seq, h.hash FROM companies c
		LEFT JOIN audit_heads h ON h.company_id = c.id WHERE c.id = $1`, companyID).Scan(&seq, &hash)
	if err != nil {
		return nil, one(err, "company")
	}
	if seq != nil {
		h.Seq = *seq
	}
	if h.Hash, err = sqlrow.ScanDigest(hash); err != nil {
		return nil, err
	}
	return &h, nil
}

func (t *tx) CreateWebhookEndpoint(ctx context.Context, e *consent.WebhookEndpoint) error {
	_, err := t.exec(ctx, `INSERT INTO webhook_endpoints (id, company_id, url, secret, events, created_at, disabled_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, e.ID, e.CompanyID, e.URL, e.Secret, strs(e.Events), e.CreatedAt, nullTime(e.DisabledAt))
	return err
}

func (t *tx) WebhookEndpoint(ctx context.Context, id string) (*consent.WebhookEndpoint, error) {
	e, err := dialect.ScanEndpoint(t.tx.QueryRow(ctx, `SELECT `+sqlrow.EndpointColumns+` FROM webhook_endpoints WHERE id = $1`, id))
	return e, one(err, "webhook endpoint")
}

func (t *tx) WebhookEndpoints(ctx context.Context, companyID string) ([]*consent.WebhookEndpoint, error) {
	share := "" // inside Update, held against a change until the end (consent.Tx)
	if t.lock != "" {
		share = " FOR SHARE"
	}
	rows, err := t.tx.Query(ctx, `SELECT `+sqlrow.EndpointColumns+` FROM webhook_endpoints
		WHERE company_id = $1 ORDER BY seq`+share, companyID)
	return collect(rows, err, dialect.ScanEndpoint)
}

func (t *tx) DisableWebhookEndpoint(ctx context.Context, companyID, id string, at time.Time) error {
	tag, err := t.exec(ctx, `UPDATE webhook_endpoints SET disabled_at = $1 WHERE id = $2 AND company_id = $3`,
		nullTime(at), id, companyID)
	return affected(tag, err, "webhook endpoint")
}

func (t *tx) DeleteWebhookEndpoint(ctx context.Context, companyID, id string) error {
	tag, err := t.exec(ctx, `DELETE FROM webhook_endpoints WHERE id = $1 AND company_id = $2`, id, companyID)
	return affected(tag, err, "webhook endpoint")
}

func (t *tx) AppendWebhookDelivery(ctx context.Context, d *consent.WebhookDelivery) error {
	_, err := t.exec(ctx, `INSERT INTO webhook_deliveries (endpoint_id, message_id, event_type, attempt, at, status, error, duration_us)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, d.EndpointID, d.MessageID, d.EventType, d.Attempt, d.At, d.Status,
		d.Error, d.Duration.Microseconds())
	return err
}

func (t *tx) WebhookDeliveries(ctx context.Context, endpointID string, before int64, limit int) ([]*consent.WebhookDelivery, error) {
	if before <= 0 {
		before = math.MaxInt64
	}
	rows, err := t.tx.Query(ctx, `SELECT `+sqlrow.DeliveryColumns+` FROM webhook_deliveries
		WHERE endpoint_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3`, endpointID, before, max(limit, 0))
	out, err := collect(rows, err, dialect.ScanDelivery)
	for _, d := range out {
		d.EndpointID = endpointID
	}
	return out, err
}

// ClaimIdempotencyKey inserts the claim with ON CONFLICT DO NOTHING: an
// insert of a key that another running transaction inserted waits for that
// transaction to end, then either finds its committed record or, when it
// rolled back, inserts. An expired record found is deleted and the insert
// tried again, as is a key released by another transaction between the
// insert and the read.
func (t *tx) ClaimIdempotencyKey(ctx context.Context, r *consent.IdempotencyRecord, now time.Time) (*consent.IdempotencyRecord, error) {
	for range 3 {
		tag, err := t.exec(ctx, `INSERT INTO idempotency_keys (scope, key, fingerprint, created_at, expires_at)
			VALUES ($1, $2, $3, $4, $5) ON CONFLICT (scope, key) DO NOTHING`, r.Scope, r.Key, r.Fingerprint[:], r.CreatedAt, r.ExpiresAt)
		if err != nil {
			return nil, err
		}
		if tag.RowsAffected() == 1 {
			return nil, nil
		}
		old, err := dialect.ScanKey(t.tx.QueryRow(ctx, `SELECT `+sqlrow.KeyColumns+` FROM idempotency_keys WHERE scope = $1 AND key = $2`, r.Scope, r.Key))
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			continue
		case err != nil:
			return nil, mapErr(err)
		case old.ExpiresAt.After(now):
			return old, nil
		}
		if _, err := t.exec(ctx, `DELETE FROM idempotency_keys WHERE scope = $1 AND key = $2 AND expires_at <= $3`, r.Scope, r.Key, now); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("idempotency key %q: claimed and released by others three times running", r.Key)
}

func (t *tx) AnswerIdempotencyKey(ctx context.Context, scope, key string, status int, body []byte) error {
	tag, err := t.exec(ctx, `UPDATE idempotency_keys SET status = $1, body = $2 WHERE scope = $3 AND key = $4`, status, payload(body), scope, key)
	return affected(tag, err, "idempotency key")
}

func (t *tx) ReleaseIdempotencyKey(ctx context.Context, scope, key string) error {
	_, err := t.exec(ctx, `DELETE FROM idempotency_keys WHERE scope = $1 AND key = $2`, scope, key)
	return err
}

func (t *tx) PruneIdempotencyKeys(ctx context.Context, now time.Time, limit int) (int, error) {
	tag, err := t.exec(ctx, `DELETE FROM idempotency_keys WHERE ctid IN (SELECT ctid FROM idempotency_keys
		WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)`, now, max(limit, 0))
	if err != nil {
		return 0, err
	}
	return int(tag.RowsAffected()), nil
}

// newTx returns the transaction over pgTx: lock follows the rows read to
// change (" FOR UPDATE" inside Update, "" inside View), batch is the
// group-commit batch it is a call of, if any.
func newTx(pgTx pgx.Tx, lock string, batch *batchTx) *tx {
	return &tx{Shared: sqlrow.Shared{Conn: conn{pgTx}, D: dialect}, tx: pgTx, lock: lock, batch: batch}
}

// conn is a transaction as sqlrow.Shared uses it, its errors mapped.
type conn struct{ tx pgx.Tx }

func (c conn) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := c.tx.Exec(ctx, query, args...)
	return tag.RowsAffected(), mapErr(err)
}

func (c conn) QueryRow(ctx context.Context, query string, args ...any) sqlrow.Row {
	return mapped{c.tx.QueryRow(ctx, query, args...)}
}

func (c conn) Query(ctx context.Context, query string, args ...any) (sqlrow.ClosingRows, error) {
	rows, err := c.tx.Query(ctx, query, args...)
	if err != nil {
		return nil, mapErr(err)
	}
	return mappedRows{rows}, nil
}

// mapped and mappedRows map the errors of a row and of rows.
type mapped struct{ pgx.Row }

func (r mapped) Scan(dest ...any) error { return mapErr(r.Row.Scan(dest...)) }

type mappedRows struct{ pgx.Rows }

func (r mappedRows) Scan(dest ...any) error { return mapErr(r.Rows.Scan(dest...)) }
func (r mappedRows) Err() error             { return mapErr(r.Rows.Err()) }
