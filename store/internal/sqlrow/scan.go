package sqlrow

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/wallet"
)

// The rows that both SQL stores keep in the same columns, scanned once.
// Each XxxColumns names the columns that Dialect.ScanXxx reads, in its
// order; the stores select them by name.

// done returns v, or nil and err when there is one.
func done[T any](v *T, err error) (*T, error) {
	if err != nil {
		return nil, err
	}
	return v, nil
}

// scanDigests reads bs[i], a digest column's bytes, into to[i].
func scanDigests(to []*consent.Digest, bs ...[]byte) error {
	for i, b := range bs {
		d, err := ScanDigest(b)
		if err != nil {
			return err
		}
		*to[i] = d
	}
	return nil
}

// SessionColumns are the columns ScanSession reads.
const SessionColumns = `id, company_id, property_id, retention_status, video_status,
	event_chunks, event_bytes, created_at, expires_at, video_path, video_bytes, video_sha256, video_duration_ms,
	upload_digest, certificate_id, url, closed_at, last_event_at,
	recording_key, recording_bytes, recording_sha256, recording_at`

func (d Dialect) ScanSession(row Row) (*consent.Session, error) {
	var (
		s                        consent.Session
		videoSHA, upload, recSHA []byte
		videoMS                  int64
	)
	err := row.Scan(&s.ID, &s.CompanyID, &s.PropertyID, &s.RetentionStatus, &s.VideoStatus, &s.EventChunks, &s.EventBytes,
		d.Time(&s.CreatedAt), d.Time(&s.ExpiresAt), &s.Video.Path, &s.Video.Bytes, &videoSHA, &videoMS,
		&upload, &s.CertificateID, &s.URL, d.Time(&s.ClosedAt), d.Time(&s.LastEventAt),
		&s.Recording.Key, &s.Recording.Bytes, &recSHA, d.Time(&s.Recording.At))
	if err == nil {
		err = scanDigests([]*consent.Digest{&s.Video.SHA256, &s.UploadDigest, &s.Recording.SHA256}, videoSHA, upload, recSHA)
	}
	s.Video.Duration = time.Duration(videoMS) * time.Millisecond
	return done(&s, err)
}

// CertificateColumns are the columns ScanCertificate reads, records and
// events_combined as text (a store that keeps them in another type casts
// them in a list of its own).
const CertificateColumns = `id, company_id, property_id, session_id, origin, records, events_combined,
	email_digest, mobile_digest, retention_status, created_at, expires_at, revoked_at,
	client_ip, user_agent, recording_sha256, visibility, key_id, signature, revoked_before, signature_version`

func (d Dialect) ScanCertificate(row Row) (*consent.Certificate, error) {
	var (
		c                           consent.Certificate
		records, events, visibility string
		email, mobile, recording    []byte
	)
	err := row.Scan(&c.ID, &c.CompanyID, &c.PropertyID, &c.SessionID, &c.Origin,
		&records, &events, &email, &mobile, &c.RetentionStatus, d.Time(&c.CreatedAt), d.Time(&c.ExpiresAt),
		d.Time(&c.RevokedAt), &c.ClientIP, &c.UserAgent, &recording, &visibility, &c.KeyID, &c.Signature,
		d.Time(&c.RevokedBefore), &c.SignatureVersion)
	if err != nil {
		return nil, err
	}
	if c.Records, err = DecodeRecords([]byte(records)); err != nil {
		return nil, err
	}
	if c.Visibility, err = DecodeVisibility(visibility); err != nil {
		return nil, err
	}
	c.EventsCombined = []byte(events)
	return done(&c, scanDigests([]*consent.Digest{&c.EmailDigest, &c.MobileDigest, &c.RecordingSHA256}, email, mobile, recording))
}

// RevocationColumns are the columns ScanRevocation reads.
const RevocationColumns = `id, company_id, certificate_id, email_digest, mobile_digest, reason, client_ip,
	certificate_ids, created_at`

func (d Dialect) ScanRevocation(row Row) (*consent.Revocation, error) {
	var (
		r             consent.Revocation
		email, mobile []byte
	)
	err := row.Scan(&r.ID, &r.CompanyID, &r.CertificateID, &email, &mobile, &r.Reason, &r.ClientIP,
		d.Strings(&r.CertificateIDs), d.Time(&r.CreatedAt))
	if err == nil {
		err = scanDigests([]*consent.Digest{&r.EmailDigest, &r.MobileDigest}, email, mobile)
	}
	return done(&r, err)
}

// PropertyColumns are the columns ScanProperty reads.
const PropertyColumns = `id, company_id, name, allowed_origins, created_at`

func (d Dialect) ScanProperty(row Row) (*consent.Property, error) {
	var p consent.Property
	return done(&p, row.Scan(&p.ID, &p.CompanyID, &p.Name, d.Strings(&p.AllowedOrigins), d.Time(&p.CreatedAt)))
}

// TokenColumns are the columns ScanToken reads.
const TokenColumns = `id, company_id, digest, permissions, expires_at, revoked_at, created_at`

func (d Dialect) ScanToken(row Row) (*consent.Token, error) {
	var (
		tok    consent.Token
		digest []byte
		perms  []string
	)
	err := row.Scan(&tok.ID, &tok.CompanyID, &digest, d.Strings(&perms),
		d.Time(&tok.ExpiresAt), d.Time(&tok.RevokedAt), d.Time(&tok.CreatedAt))
	if err != nil {
		return nil, err
	}
	tok.Permissions = make([]consent.Permission, len(perms))
	for i, p := range perms {
		tok.Permissions[i] = consent.Permission(p)
	}
	tok.Digest, err = ScanDigest(digest)
	return done(&tok, err)
}

// JobColumns are the columns ScanJob reads.
const JobColumns = `kind, key, payload, attempts, run_after, last_error, lease_owner, lease_until, failed_at, created_at,
	company_id, lane`

func (d Dialect) ScanJob(row Row) (*consent.Job, error) {
	var j consent.Job
	return done(&j, row.Scan(&j.Kind, &j.Key, &j.Payload, &j.Attempts, d.Time(&j.RunAfter), &j.LastError, &j.LeaseOwner,
		d.Time(&j.LeaseUntil), d.Time(&j.FailedAt), d.Time(&j.CreatedAt), &j.CompanyID, &j.Lane))
}

// EntryColumns are the columns ScanEntry reads.
const EntryColumns = `id, company_id, kind, amount, reference, created_at`

func (d Dialect) ScanEntry(row Row) (*wallet.Entry, error) {
	var (
		e      wallet.Entry
		amount int64
	)
	err := row.Scan(&e.ID, &e.CompanyID, &e.Kind, &amount, &e.Reference, d.Time(&e.CreatedAt))
	e.Amount = wallet.Amount(amount)
	return done(&e, err)
}

// AuditColumns are the columns ScanAudit reads: an entry but its company.
const AuditColumns = `seq, at, actor, action, target, outcome, request_id, detail, prev_hash, hash`

func (d Dialect) ScanAudit(row Row) (*consent.AuditEntry, error) {
	var (
		e          consent.AuditEntry
		prev, hash []byte
	)
	err := row.Scan(&e.Seq, d.Time(&e.At), &e.Actor, &e.Action, &e.Target, &e.Outcome, &e.RequestID, &e.Detail,
		&prev, &hash)
	if err == nil {
		err = scanDigests([]*consent.Digest{&e.PrevHash, &e.Hash}, prev, hash)
	}
	return done(&e, err)
}

// EndpointColumns are the columns ScanEndpoint reads.
const EndpointColumns = `id, company_id, url, secret, events, created_at, disabled_at`

func (d Dialect) ScanEndpoint(row Row) (*consent.WebhookEndpoint, error) {
	var e consent.WebhookEndpoint
	return done(&e, row.Scan(&e.ID, &e.CompanyID, &e.URL, &e.Secret, d.Strings(&e.Events), d.Time(&e.CreatedAt), d.Time(&e.DisabledAt)))
}

// DeliveryColumns are the columns ScanDelivery reads: a delivery but its
// endpoint.
const DeliveryColumns = `seq, message_id, event_type, attempt, at, status, error, duration_us`

func (d Dialect) ScanDelivery(row Row) (*consent.WebhookDelivery, error) {
	var (
		w  consent.WebhookDelivery
		us int64
	)
	err := row.Scan(&w.Seq, &w.MessageID, &w.EventType, &w.Attempt, d.Time(&w.At), &w.Status, &w.Error, &us)
	w.Duration = time.Duration(us) * time.Microsecond
	return done(&w, err)
}

// KeyColumns are the columns ScanKey reads.
const KeyColumns = `scope, key, fingerprint, status, body, created_at, expires_at`

func (d Dialect) ScanKey(row Row) (*consent.IdempotencyRecord, error) {
	var (
		r  consent.IdempotencyRecord
		fp []byte
	)
	if err := row.Scan(&r.Scope, &r.Key, &fp, &r.Status, &r.Body, d.Time(&r.CreatedAt), d.Time(&r.ExpiresAt)); err != nil {
		return nil, err
	}
	if len(fp) != len(r.Fingerprint) {
		return nil, fmt.Errorf("idempotency key %q: fingerprint of %d bytes", r.Key, len(fp))
	}
	copy(r.Fingerprint[:], fp)
	return &r, nil
}

// CompanyColumns are the columns ScanCompany reads.
const CompanyColumns = `id, name, third_party_enabled, authorized_third_parties, attest_certificates, insights_rules, created_at`

func (d Dialect) ScanCompany(row Row) (*consent.Company, error) {
	var c consent.Company
	var rules string
	if err := row.Scan(&c.ID, &c.Name, &c.ThirdPartyVerificationEnabled, d.Strings(&c.AuthorizedThirdParties),
		&c.AttestCertificates, &rules, d.Time(&c.CreatedAt)); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(rules), &c.InsightsRules); err != nil {
		return nil, fmt.Errorf("company %s: insights_rules: %w", c.ID, err)
	}
	return &c, nil
}

// PublishedKeyColumns are the columns ScanPublishedKey reads.
const PublishedKeyColumns = `id, public_key, created_at`

func (d Dialect) ScanPublishedKey(row Row) (*consent.PublishedKey, error) {
	var k consent.PublishedKey
	return done(&k, row.Scan(&k.ID, &k.Key, d.Time(&k.CreatedAt)))
}

// AttestationColumns are the columns ScanAttestation reads, in its order.
const AttestationColumns = `certificate_id, company_id, status, statement, signature, key_id, screenshot, created_at, updated_at`

func (d Dialect) ScanAttestation(row Row) (*consent.Attestation, error) {
	var (
		a         consent.Attestation
		statement string
	)
	err := row.Scan(&a.CertificateID, &a.CompanyID, &a.Status, &statement, &a.Signature, &a.KeyID, &a.Screenshot,
		d.Time(&a.CreatedAt), d.Time(&a.UpdatedAt))
	a.Statement = []byte(statement)
	return done(&a, err)
}

// InsightsColumns are the columns ScanInsights reads, in its order.
const InsightsColumns = `certificate_id, company_id, status, statement, signature, key_id, created_at, updated_at`

func (d Dialect) ScanInsights(row Row) (*consent.Insights, error) {
	var (
		in        consent.Insights
		statement string
	)
	err := row.Scan(&in.CertificateID, &in.CompanyID, &in.Status, &statement, &in.Signature, &in.KeyID,
		d.Time(&in.CreatedAt), d.Time(&in.UpdatedAt))
	in.Statement = []byte(statement)
	return done(&in, err)
}

// ProfileColumns are the columns ScanProfile reads, rules as JSON text.
const ProfileColumns = `company_id, name, rules, created_at, updated_at`

func (d Dialect) ScanProfile(row Row) (*consent.Profile, error) {
	var (
		p     consent.Profile
		rules string
	)
	err := row.Scan(&p.CompanyID, &p.Name, &rules, d.Time(&p.CreatedAt), d.Time(&p.UpdatedAt))
	p.Rules = []byte(rules)
	return done(&p, err)
}
