package consentkit

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/consentkit/consentkit/blob"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/wallet"
)

// checkedStore is the Store that a Service works on and hands out
// (Service.Store): every Tx it gives checks each value and argument of a
// call before the store underneath sees it. So the rules of what may be
// stored live here, once, and a store — one of store/'s or one written for
// another database — does storage only: it is given only values that every
// store can keep exactly (see Tx).
//
// A call with a fault is refused before the store is asked: Invalid for a
// value or an argument that no store may keep; for a key that only finds
// rows and is not ValidText, what the store answers for a key of no row
// (NotFound, or an empty list). A call with two faults is refused for the
// first one met in the order the fields are listed here.
//
// It also reads the recordings that have left the database (D52): the
// chunks of a session whose Recording is moved come from its object in the
// recordings blob store (Config.Recordings), so that every reader of
// EachEventChunk, Events and EventChunk gets a recording wherever it lives.
type checkedStore struct {
	store      consent.Store
	recordings *recordings // nil: none was configured
}

// Checked returns store with every transaction checked as the Service's
// own are (it returns a checked store as it is). The Service's Store is
// one already; a program that works on a store without a Service, such as
// a job runner given a Store, wraps it with Checked. Such a store does not
// know the recordings blob store: it refuses to read a moved recording
// (use the Service's Store).
func Checked(store consent.Store) consent.Store {
	if c, ok := store.(checkedStore); ok {
		return c
	}
	return checkedStore{store: store}
}

func (s checkedStore) Update(ctx context.Context, fn func(tx consent.Tx) error) error {
	return s.store.Update(ctx, func(tx consent.Tx) error { return s.run(tx, fn) })
}

func (s checkedStore) View(ctx context.Context, fn func(tx consent.Tx) error) error {
	return s.store.View(ctx, func(tx consent.Tx) error { return s.run(tx, fn) })
}

// run runs fn, one run of a transaction's function, with a checked Tx of
// its own. A function that returns nil after a write failed gets the
// failure, so that the store rolls back: nothing after a failed write
// commits, on any store (consent.Tx).
func (s checkedStore) run(tx consent.Tx, fn func(tx consent.Tx) error) error {
	t := checkedTx{tx: tx, recordings: s.recordings, failed: new(error)}
	if err := fn(t); err != nil {
		return err
	}
	return t.failure()
}

func (s checkedStore) Close() error { return s.store.Close() }

// checkedTx checks each call, then passes it to the store's Tx.
type checkedTx struct {
	tx         consent.Tx
	recordings *recordings
	// failed holds the first error of a write, shared by the copies of
	// the transaction's Tx; nil while none failed.
	failed *error
}

// wrote notes err, a write's error: the first one fails the transaction
// (failure). PostgreSQL aborts a transaction at a failed statement while
// the other stores would go on, so none commits after one.
func (t checkedTx) wrote(err error) error {
	if err != nil && *t.failed == nil {
		*t.failed = err
	}
	return err
}

// changed is wrote for a change of a row found by its key: NotFound (no
// such row) and Conflict (a lease not held) change nothing, on every store,
// and leave the transaction as it was.
func (t checkedTx) changed(err error) error {
	if c := consent.ErrorCode(err); c == consent.NotFound || c == consent.Conflict {
		return err
	}
	return t.wrote(err)
}

// charged is wrote for a debit: a short balance changes nothing (D4).
func (t checkedTx) charged(err error) error {
	if consent.ErrorCode(err) == consent.Payment {
		return err
	}
	return t.wrote(err)
}

// failure is Update's error when fn returns nil after a write failed: it
// wraps the write's error, so that its code still holds (errors.Is, and an
// uncoded error of the database, a deadlock, that a store retries).
func (t checkedTx) failure() error {
	if *t.failed == nil {
		return nil
	}
	return fmt.Errorf("consent: the transaction failed at a write: %w", *t.failed)
}

// findable reports whether each key may be some row's: a key that is not
// ValidText is no row's (the stores never hold one), and PostgreSQL refuses
// it as a parameter where the other stores find nothing.
func findable(keys ...string) bool {
	for _, k := range keys {
		if !consent.ValidText(k) {
			return false
		}
	}
	return true
}

func notFound(what string) error { return consent.Errorf(consent.NotFound, "%s not found", what) }

func (t checkedTx) CreateCompany(ctx context.Context, c *consent.Company) error {
	if err := c.Check(); err != nil {
		return err
	}
	return t.wrote(t.tx.CreateCompany(ctx, c))
}

func (t checkedTx) Company(ctx context.Context, id string) (*consent.Company, error) {
	if !findable(id) {
		return nil, notFound("company")
	}
	return t.tx.Company(ctx, id)
}

func (t checkedTx) LockCompany(ctx context.Context, id string) error {
	if !findable(id) {
		return notFound("company")
	}
	return t.tx.LockCompany(ctx, id)
}

// CompanyIDs passes an after that is not ValidText on: the list starts where
// it sorts, byte by byte, which the store must work out.
func (t checkedTx) CompanyIDs(ctx context.Context, after string, limit int) ([]string, error) {
	if limit <= 0 {
		return []string{}, nil
	}
	return t.tx.CompanyIDs(ctx, after, limit)
}

func (t checkedTx) UpdateCompany(ctx context.Context, c *consent.Company) error {
	if err := c.Check(); err != nil {
		return err
	}
	return t.changed(t.tx.UpdateCompany(ctx, c))
}

func (t checkedTx) CreateProperty(ctx context.Context, p *consent.Property) error {
	if err := p.Check(); err != nil {
		return err
	}
	return t.wrote(t.tx.CreateProperty(ctx, p))
}

func (t checkedTx) Property(ctx context.Context, id string) (*consent.Property, error) {
	if !findable(id) {
		return nil, notFound("property")
	}
	return t.tx.Property(ctx, id)
}

func (t checkedTx) UpdateProperty(ctx context.Context, p *consent.Property) error {
	if err := p.Check(); err != nil {
		return err
	}
	return t.changed(t.tx.UpdateProperty(ctx, p))
}

func (t checkedTx) Properties(ctx context.Context, companyID string) ([]*consent.Property, error) {
	if !findable(companyID) {
		return []*consent.Property{}, nil
	}
	return t.tx.Properties(ctx, companyID)
}

func (t checkedTx) CreateToken(ctx context.Context, tok *consent.Token) error {
	if err := tok.Check(); err != nil {
		return err
	}
	return t.wrote(t.tx.CreateToken(ctx, tok))
}

func (t checkedTx) TokenByDigest(ctx context.Context, d consent.Digest) (*consent.Token, error) {
	return t.tx.TokenByDigest(ctx, d)
}

func (t checkedTx) RevokeToken(ctx context.Context, companyID, id string, at time.Time) error {
	if err := checkRevokedAt(at); err != nil {
		return err
	}
	if !findable(companyID, id) {
		return notFound("token")
	}
	return t.changed(t.tx.RevokeToken(ctx, companyID, id, at))
}

func (t checkedTx) Tokens(ctx context.Context, companyID string) ([]*consent.Token, error) {
	if !findable(companyID) {
		return []*consent.Token{}, nil
	}
	return t.tx.Tokens(ctx, companyID)
}

func (t checkedTx) CreateSession(ctx context.Context, s *consent.Session) error {
	if err := s.Check(); err != nil {
		return err
	}
	return t.wrote(t.tx.CreateSession(ctx, s))
}

func (t checkedTx) Session(ctx context.Context, id string) (*consent.Session, error) {
	if !findable(id) {
		return nil, notFound("session")
	}
	return t.tx.Session(ctx, id)
}

// Sessions asks the store for the ids that may be a session's only; the
// others get nil at their places.
func (t checkedTx) Sessions(ctx context.Context, ids []string) ([]*consent.Session, error) {
	if findable(ids...) {
		return t.tx.Sessions(ctx, ids)
	}
	var asked []string
	for _, id := range ids {
		if findable(id) {
			asked = append(asked, id)
		}
	}
	found, err := t.tx.Sessions(ctx, asked)
	if err != nil {
		return nil, err
	}
	out := make([]*consent.Session, len(ids))
	for i, id := range ids {
		if findable(id) {
			out[i], found = found[0], found[1:]
		}
	}
	return out, nil
}

func (t checkedTx) AppendEvents(ctx context.Context, sessionID string, chunk []byte, at time.Time) error {
	if !findable(sessionID) {
		return t.wrote(notFound("session"))
	}
	if err := consent.CheckTime("at", at); err != nil {
		return err
	}
	return t.wrote(t.tx.AppendEvents(ctx, sessionID, chunk, at))
}

// EventChunk reads a moved recording's chunk from its object (D52).
func (t checkedTx) EventChunk(ctx context.Context, sessionID string, seq int) ([]byte, error) {
	if !findable(sessionID) {
		return nil, notFound("session")
	}
	var chunk []byte
	err := t.chunks(ctx, sessionID, func() (bool, error) {
		var err error
		chunk, err = t.tx.EventChunk(ctx, sessionID, seq)
		return err == nil, err
	}, func(ses *consent.Session) error {
		var err error
		chunk, err = t.recordings.chunk(ctx, ses, seq)
		return err
	})
	return chunk, err
}

func (t checkedTx) SessionPage(ctx context.Context, p consent.Page) ([]*consent.Session, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	return t.tx.SessionPage(ctx, p)
}

func (t checkedTx) UpdateSession(ctx context.Context, s *consent.Session) error {
	if err := s.Check(); err != nil {
		return err
	}
	return t.changed(t.tx.UpdateSession(ctx, s))
}

// UpdateSessions checks the whole list before the store sees any of it.
func (t checkedTx) UpdateSessions(ctx context.Context, list []*consent.Session) error {
	seen := make(map[string]bool, len(list))
	for _, s := range list {
		if err := s.Check(); err != nil {
			return err
		}
		if seen[s.ID] {
			return consent.Errorf(consent.Invalid, "session %s is listed twice", s.ID)
		}
		seen[s.ID] = true
	}
	if len(list) == 0 {
		return nil
	}
	return t.changed(t.tx.UpdateSessions(ctx, list))
}

// SetRecording checks r (Recording.Check: a moved recording names its
// object, its size and its digest) and that its key is one the blob store
// keeps (blob.ValidKey); either fault is Invalid (D52).
func (t checkedTx) SetRecording(ctx context.Context, sessionID string, r consent.Recording) error {
	if err := r.Check(); err != nil {
		return err
	}
	if r.Key != "" {
		if err := blob.ValidKey(r.Key); err != nil {
			return consent.Errorf(consent.Invalid, "recording.key: %v", err)
		}
	}
	if !findable(sessionID) {
		return notFound("session")
	}
	return t.changed(t.tx.SetRecording(ctx, sessionID, r))
}

func (t checkedTx) SessionsToMove(ctx context.Context, idleBefore time.Time, limit int) ([]string, error) {
	if err := consent.CheckTime("idle_before", idleBefore); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return []string{}, nil
	}
	return t.tx.SessionsToMove(ctx, idleBefore, limit)
}

// Events collects EachEventChunk.
func (t checkedTx) Events(ctx context.Context, sessionID string) ([][]byte, error) {
	out := [][]byte{}
	err := t.EachEventChunk(ctx, sessionID, func(c []byte) error {
		out = append(out, bytes.Clone(c))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// EachEventChunk reads a moved recording from its object (D52).
func (t checkedTx) EachEventChunk(ctx context.Context, sessionID string, fn func([]byte) error) error {
	if !findable(sessionID) {
		return notFound("session")
	}
	return t.chunks(ctx, sessionID, func() (bool, error) {
		n := 0
		err := t.tx.EachEventChunk(ctx, sessionID, func(c []byte) error {
			n++
			return fn(c)
		})
		return n > 0, err
	}, func(ses *consent.Session) error {
		return t.recordings.each(ctx, ses, fn)
	})
}

// chunks reads the session's chunks from the database (inDB, which says
// whether it found any) or, when its recording is moved, from its object
// (moved). A View reads committed rows statement by statement, so the
// move may commit between the read of the session and that of its
// chunks: then the database has none of them, the session is read again,
// and the object is read.
func (t checkedTx) chunks(ctx context.Context, sessionID string, inDB func() (bool, error), moved func(*consent.Session) error) error {
	ses, err := t.tx.Session(ctx, sessionID)
	if err != nil {
		return err
	}
	if !ses.Recording.Moved() {
		found, err := inDB()
		if found || ses.EventChunks == 0 || err != nil && consent.ErrorCode(err) != consent.NotFound {
			return err
		}
		again, err2 := t.tx.Session(ctx, sessionID)
		if err2 != nil || !again.Recording.Moved() {
			return err // as the database said
		}
		ses = again
	}
	return moved(ses)
}

func (t checkedTx) CreateCertificate(ctx context.Context, c *consent.Certificate) error {
	if err := c.Check(); err != nil {
		return err
	}
	return t.wrote(t.tx.CreateCertificate(ctx, c))
}

func (t checkedTx) Certificate(ctx context.Context, id string) (*consent.Certificate, error) {
	if !findable(id) {
		return nil, notFound("certificate")
	}
	return t.tx.Certificate(ctx, id)
}

func (t checkedTx) CertificatesByEmail(ctx context.Context, companyID string, d consent.Digest) ([]string, error) {
	if d.IsZero() || !findable(companyID) {
		return []string{}, nil
	}
	return t.tx.CertificatesByEmail(ctx, companyID, d)
}

// Velocity counts nothing for a certificate whose keys no row holds; its
// CreatedAt must be a time (Invalid), so that both windows are.
func (t checkedTx) Velocity(ctx context.Context, c *consent.Certificate) (consent.Velocity, error) {
	if c.CreatedAt.IsZero() {
		return consent.Velocity{}, consent.Errorf(consent.Invalid, "created_at is required")
	}
	if err := consent.CheckTime("created_at", c.CreatedAt.Add(-24*time.Hour)); err != nil {
		return consent.Velocity{}, err
	}
	if err := consent.CheckTime("created_at", c.CreatedAt); err != nil {
		return consent.Velocity{}, err
	}
	if !findable(c.CompanyID, c.ID) {
		return consent.Velocity{}, nil
	}
	q := *c
	if !findable(q.ClientIP) {
		q.ClientIP = ""
	}
	return t.tx.Velocity(ctx, &q)
}

func (t checkedTx) CertificatesByMobile(ctx context.Context, companyID string, d consent.Digest) ([]string, error) {
	if d.IsZero() || !findable(companyID) {
		return []string{}, nil
	}
	return t.tx.CertificatesByMobile(ctx, companyID, d)
}

func (t checkedTx) CertificatesBySession(ctx context.Context, sessionID string) ([]string, error) {
	if !findable(sessionID) {
		return []string{}, nil
	}
	return t.tx.CertificatesBySession(ctx, sessionID)
}

func (t checkedTx) CertificatePage(ctx context.Context, p consent.Page) ([]*consent.Certificate, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	return t.tx.CertificatePage(ctx, p)
}

// UpdateCertificate checks what the store writes of c, its retention
// status and date (consent.Tx), found by its id: a certificate kept before
// a bound was added to the rest (a client address of more than
// consent.MaxClientIP bytes, a visibility of -0) can still be retained.
func (t checkedTx) UpdateCertificate(ctx context.Context, c *consent.Certificate) error {
	if !findable(c.ID) {
		return notFound("certificate")
	}
	if err := consent.CheckText("retention_status", string(c.RetentionStatus)); err != nil {
		return err
	}
	if err := consent.CheckTime("expires_at", c.ExpiresAt); err != nil {
		return err
	}
	return t.changed(t.tx.UpdateCertificate(ctx, c))
}

func (t checkedTx) RevokeCertificate(ctx context.Context, id string, at time.Time) error {
	if err := checkRevokedAt(at); err != nil {
		return err
	}
	if !findable(id) {
		return notFound("certificate")
	}
	return t.changed(t.tx.RevokeCertificate(ctx, id, at))
}

func (t checkedTx) CreateRevocation(ctx context.Context, r *consent.Revocation) error {
	if err := r.Check(); err != nil {
		return err
	}
	return t.wrote(t.tx.CreateRevocation(ctx, r))
}

func (t checkedTx) Revocations(ctx context.Context, companyID string) ([]*consent.Revocation, error) {
	if !findable(companyID) {
		return []*consent.Revocation{}, nil
	}
	return t.tx.Revocations(ctx, companyID)
}

func (t checkedTx) RevokedBefore(ctx context.Context, companyID string, email, mobile consent.Digest) (time.Time, error) {
	if !findable(companyID) || email.IsZero() && mobile.IsZero() {
		return time.Time{}, nil
	}
	return t.tx.RevokedBefore(ctx, companyID, email, mobile)
}

func (t checkedTx) RevocationPage(ctx context.Context, p consent.Page) ([]*consent.Revocation, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	return t.tx.RevocationPage(ctx, p)
}

func (t checkedTx) PurgeSessions(ctx context.Context, before time.Time, limit int) ([]*consent.Session, error) {
	if err := consent.CheckTime("before", before); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return []*consent.Session{}, nil
	}
	v, err := t.tx.PurgeSessions(ctx, before, limit)
	return v, t.wrote(err)
}

func (t checkedTx) PurgeCertificates(ctx context.Context, before time.Time, limit int) ([]string, error) {
	if err := consent.CheckTime("before", before); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return []string{}, nil
	}
	v, err := t.tx.PurgeCertificates(ctx, before, limit)
	return v, t.wrote(err)
}

func (t checkedTx) EnqueueJob(ctx context.Context, j *consent.Job) error {
	if err := checkEnqueued(j); err != nil {
		return err
	}
	return t.wrote(t.tx.EnqueueJob(ctx, j))
}

// EnqueueJobs checks the whole list before the store sees any of it; two
// jobs of one kind and key are for the store to refuse (Conflict), as a
// job already queued is.
func (t checkedTx) EnqueueJobs(ctx context.Context, jobs []*consent.Job) error {
	for _, j := range jobs {
		if err := checkEnqueued(j); err != nil {
			return err
		}
	}
	if len(jobs) == 0 {
		return nil
	}
	return t.wrote(t.tx.EnqueueJobs(ctx, jobs))
}

func (t checkedTx) Job(ctx context.Context, kind, key string) (*consent.Job, error) {
	if !findable(kind, key) {
		return nil, notFound("job")
	}
	return t.tx.Job(ctx, kind, key)
}

func (t checkedTx) CountJobs(ctx context.Context, kind string) (int, error) {
	if !findable(kind) {
		return 0, nil
	}
	return t.tx.CountJobs(ctx, kind)
}

// CountCompanyJobs: a kind or company no job can have counts none.
func (t checkedTx) CountCompanyJobs(ctx context.Context, kind, companyID string) (int, error) {
	if !findable(kind, companyID) {
		return 0, nil
	}
	return t.tx.CountCompanyJobs(ctx, kind, companyID)
}

// DeleteLaneJobs: a kind, company or lane no job can have deletes none.
func (t checkedTx) DeleteLaneJobs(ctx context.Context, kind, companyID, lane string) (int, error) {
	if !findable(kind, companyID, lane) {
		return 0, nil
	}
	v, err := t.tx.DeleteLaneJobs(ctx, kind, companyID, lane)
	return v, t.wrote(err)
}

func (t checkedTx) DeleteFailedJobs(ctx context.Context, kind string, before time.Time, limit int) (int, error) {
	if err := consent.CheckTime("before", before); err != nil {
		return 0, err
	}
	if limit <= 0 || !findable(kind) {
		return 0, nil
	}
	v, err := t.tx.DeleteFailedJobs(ctx, kind, before, limit)
	return v, t.wrote(err)
}

func (t checkedTx) DeleteWebhookDeliveries(ctx context.Context, before time.Time, limit int) (int, error) {
	if err := consent.CheckTime("before", before); err != nil {
		return 0, err
	}
	if limit <= 0 {
		return 0, nil
	}
	v, err := t.tx.DeleteWebhookDeliveries(ctx, before, limit)
	return v, t.wrote(err)
}

// LeaseJob asks the store for the kinds that may be a job's only.
func (t checkedTx) LeaseJob(ctx context.Context, kinds []string, owner string, now, until time.Time) (*consent.Job, error) {
	if err := checkLease(owner, now, until); err != nil {
		return nil, err
	}
	if !findable(kinds...) {
		var asked []string
		for _, k := range kinds {
			if findable(k) {
				asked = append(asked, k)
			}
		}
		kinds = asked
	}
	if len(kinds) == 0 {
		return nil, notFound("due job")
	}
	v, err := t.tx.LeaseJob(ctx, kinds, owner, now, until)
	return v, t.changed(err)
}

func (t checkedTx) RenewJob(ctx context.Context, kind, key, owner string, until time.Time) error {
	if err := checkLease(owner, time.Time{}, until); err != nil {
		return err
	}
	if !findable(kind, key) {
		return notFound("job")
	}
	return t.changed(t.tx.RenewJob(ctx, kind, key, owner, until))
}

func (t checkedTx) EndJob(ctx context.Context, kind, key, owner string, next *consent.Job) error {
	if err := consent.CheckText("lease_owner", owner); err != nil {
		return err
	}
	if next != nil {
		if err := next.Check(); err != nil {
			return err
		}
	}
	if !findable(kind, key) {
		return notFound("job")
	}
	return t.changed(t.tx.EndJob(ctx, kind, key, owner, next))
}

func (t checkedTx) ClaimIdempotencyKey(ctx context.Context, r *consent.IdempotencyRecord, now time.Time) (*consent.IdempotencyRecord, error) {
	if err := r.Check(); err != nil {
		return nil, err
	}
	if err := consent.CheckTime("now", now); err != nil {
		return nil, err
	}
	v, err := t.tx.ClaimIdempotencyKey(ctx, r, now)
	return v, t.wrote(err)
}

func (t checkedTx) AnswerIdempotencyKey(ctx context.Context, scope, key string, status int, body []byte) error {
	r := consent.IdempotencyRecord{Scope: scope, Key: key, Status: status}
	if err := r.Check(); err != nil {
		return err
	}
	return t.changed(t.tx.AnswerIdempotencyKey(ctx, scope, key, status, body))
}

func (t checkedTx) ReleaseIdempotencyKey(ctx context.Context, scope, key string) error {
	r := consent.IdempotencyRecord{Scope: scope, Key: key}
	if err := r.Check(); err != nil {
		return err
	}
	return t.wrote(t.tx.ReleaseIdempotencyKey(ctx, scope, key))
}

func (t checkedTx) PruneIdempotencyKeys(ctx context.Context, now time.Time, limit int) (int, error) {
	if err := consent.CheckTime("now", now); err != nil {
		return 0, err
	}
	if limit <= 0 {
		return 0, nil
	}
	v, err := t.tx.PruneIdempotencyKeys(ctx, now, limit)
	return v, t.wrote(err)
}

func (t checkedTx) CreateAttestation(ctx context.Context, a *consent.Attestation) error {
	if err := a.Check(); err != nil {
		return err
	}
	return t.wrote(t.tx.CreateAttestation(ctx, a))
}

func (t checkedTx) Attestation(ctx context.Context, certificateID string) (*consent.Attestation, error) {
	if !findable(certificateID) {
		return nil, notFound("attestation")
	}
	return t.tx.Attestation(ctx, certificateID)
}

func (t checkedTx) UpdateAttestation(ctx context.Context, a *consent.Attestation) error {
	if err := a.Check(); err != nil {
		return err
	}
	return t.changed(t.tx.UpdateAttestation(ctx, a))
}

func (t checkedTx) CreateInsights(ctx context.Context, in *consent.Insights) error {
	if err := in.Check(); err != nil {
		return err
	}
	return t.wrote(t.tx.CreateInsights(ctx, in))
}

func (t checkedTx) Insights(ctx context.Context, certificateID string) (*consent.Insights, error) {
	if !findable(certificateID) {
		return nil, notFound("insights")
	}
	return t.tx.Insights(ctx, certificateID)
}

func (t checkedTx) UpdateInsights(ctx context.Context, in *consent.Insights) error {
	if err := in.Check(); err != nil {
		return err
	}
	return t.changed(t.tx.UpdateInsights(ctx, in))
}

func (t checkedTx) PublishKey(ctx context.Context, k *consent.PublishedKey) error {
	if err := k.Check(); err != nil {
		return err
	}
	return t.wrote(t.tx.PublishKey(ctx, k))
}

func (t checkedTx) PublishedKey(ctx context.Context, id string) (*consent.PublishedKey, error) {
	if !findable(id) {
		return nil, notFound("published key")
	}
	return t.tx.PublishedKey(ctx, id)
}

func (t checkedTx) PublishedKeys(ctx context.Context) ([]*consent.PublishedKey, error) {
	return t.tx.PublishedKeys(ctx)
}

func (t checkedTx) CreateOperatorSession(ctx context.Context, s *consent.OperatorSession) error {
	if err := s.Check(); err != nil {
		return err
	}
	return t.wrote(t.tx.CreateOperatorSession(ctx, s))
}

func (t checkedTx) OperatorSession(ctx context.Context, d consent.Digest) (*consent.OperatorSession, error) {
	if d.IsZero() {
		return nil, notFound("operator session")
	}
	return t.tx.OperatorSession(ctx, d)
}

func (t checkedTx) DeleteOperatorSession(ctx context.Context, d consent.Digest) error {
	if d.IsZero() {
		return nil
	}
	return t.wrote(t.tx.DeleteOperatorSession(ctx, d))
}

func (t checkedTx) PruneOperatorSessions(ctx context.Context, now time.Time, limit int) (int, error) {
	if err := consent.CheckTime("now", now); err != nil {
		return 0, err
	}
	if limit <= 0 {
		return 0, nil
	}
	v, err := t.tx.PruneOperatorSessions(ctx, now, limit)
	return v, t.wrote(err)
}

func (t checkedTx) PutProfile(ctx context.Context, p *consent.Profile) error {
	if err := p.Check(); err != nil {
		return err
	}
	return t.wrote(t.tx.PutProfile(ctx, p))
}

func (t checkedTx) Profile(ctx context.Context, companyID, name string) (*consent.Profile, error) {
	if !findable(companyID, name) {
		return nil, notFound("profile")
	}
	return t.tx.Profile(ctx, companyID, name)
}

func (t checkedTx) Profiles(ctx context.Context, companyID string) ([]*consent.Profile, error) {
	if !findable(companyID) {
		return []*consent.Profile{}, nil
	}
	return t.tx.Profiles(ctx, companyID)
}

func (t checkedTx) DeleteProfile(ctx context.Context, companyID, name string) error {
	if !findable(companyID, name) {
		return notFound("profile")
	}
	return t.changed(t.tx.DeleteProfile(ctx, companyID, name))
}

func (t checkedTx) CreateWebhookEndpoint(ctx context.Context, e *consent.WebhookEndpoint) error {
	if err := e.Check(); err != nil {
		return err
	}
	return t.wrote(t.tx.CreateWebhookEndpoint(ctx, e))
}

func (t checkedTx) WebhookEndpoint(ctx context.Context, id string) (*consent.WebhookEndpoint, error) {
	if !findable(id) {
		return nil, notFound("webhook endpoint")
	}
	return t.tx.WebhookEndpoint(ctx, id)
}

func (t checkedTx) WebhookEndpoints(ctx context.Context, companyID string) ([]*consent.WebhookEndpoint, error) {
	if !findable(companyID) {
		return []*consent.WebhookEndpoint{}, nil
	}
	return t.tx.WebhookEndpoints(ctx, companyID)
}

func (t checkedTx) DisableWebhookEndpoint(ctx context.Context, companyID, id string, at time.Time) error {
	if err := consent.CheckTime("disabled_at", at); err != nil {
		return err
	}
	if !findable(companyID, id) {
		return notFound("webhook endpoint")
	}
	return t.changed(t.tx.DisableWebhookEndpoint(ctx, companyID, id, at))
}

func (t checkedTx) DeleteWebhookEndpoint(ctx context.Context, companyID, id string) error {
	if !findable(companyID, id) {
		return notFound("webhook endpoint")
	}
	return t.changed(t.tx.DeleteWebhookEndpoint(ctx, companyID, id))
}

func (t checkedTx) AppendWebhookDelivery(ctx context.Context, d *consent.WebhookDelivery) error {
	if err := d.Check(); err != nil {
		return err
	}
	return t.wrote(t.tx.AppendWebhookDelivery(ctx, d))
}

func (t checkedTx) WebhookDeliveries(ctx context.Context, endpointID string, before int64, limit int) ([]*consent.WebhookDelivery, error) {
	if !findable(endpointID) || limit <= 0 {
		return []*consent.WebhookDelivery{}, nil
	}
	return t.tx.WebhookDeliveries(ctx, endpointID, before, limit)
}

func (t checkedTx) Balance(ctx context.Context, companyID string) (wallet.Amount, error) {
	if !findable(companyID) {
		return 0, notFound("company")
	}
	return t.tx.Balance(ctx, companyID)
}

func (t checkedTx) Credit(ctx context.Context, e *wallet.Entry) (wallet.Amount, error) {
	if err := checkEntry(e); err != nil {
		return 0, err
	}
	v, err := t.tx.Credit(ctx, e)
	return v, t.wrote(err)
}

func (t checkedTx) Debit(ctx context.Context, e *wallet.Entry) (wallet.Amount, error) {
	if err := checkEntry(e); err != nil {
		return 0, err
	}
	v, err := t.tx.Debit(ctx, e)
	return v, t.charged(err)
}

// DebitAll checks every entry, that they are of one company, and that their
// sum is one a wallet can hold, before the store sees any of them.
func (t checkedTx) DebitAll(ctx context.Context, entries []*wallet.Entry) (wallet.Amount, error) {
	if len(entries) == 0 {
		return 0, nil
	}
	for _, e := range entries {
		if err := checkEntry(e); err != nil {
			return 0, err
		}
		if e.CompanyID != entries[0].CompanyID {
			return 0, consent.Errorf(consent.Invalid, "the entries of one debit must be of one company")
		}
	}
	if _, err := wallet.Sum(entries); err != nil {
		return 0, err
	}
	v, err := t.tx.DebitAll(ctx, entries)
	return v, t.charged(err)
}

func (t checkedTx) Ledger(ctx context.Context, companyID string) ([]*wallet.Entry, error) {
	if !findable(companyID) {
		return []*wallet.Entry{}, nil
	}
	return t.tx.Ledger(ctx, companyID)
}

func (t checkedTx) LedgerPage(ctx context.Context, p consent.Page) ([]*wallet.Entry, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	return t.tx.LedgerPage(ctx, p)
}

func (t checkedTx) AppendAudit(ctx context.Context, e *consent.AuditEntry) error {
	if err := e.Check(); err != nil {
		return err
	}
	return t.wrote(t.tx.AppendAudit(ctx, e))
}

func (t checkedTx) AppendAudits(ctx context.Context, entries []*consent.AuditEntry) error {
	for _, e := range entries {
		if err := e.Check(); err != nil {
			return err
		}
		if e.CompanyID != entries[0].CompanyID {
			return consent.Errorf(consent.Invalid, "the entries of one append must be of one company")
		}
	}
	if len(entries) == 0 {
		return nil
	}
	return t.wrote(t.tx.AppendAudits(ctx, entries))
}

func (t checkedTx) AuditEntries(ctx context.Context, q consent.AuditQuery) ([]*consent.AuditEntry, error) {
	if err := q.Check(); err != nil {
		return nil, err
	}
	return t.tx.AuditEntries(ctx, q)
}

func (t checkedTx) AuditHead(ctx context.Context, companyID string) (*consent.AuditHead, error) {
	if !findable(companyID) {
		return nil, notFound("company")
	}
	return t.tx.AuditHead(ctx, companyID)
}

// checkLease checks a lease before a store takes or extends it (LeaseJob,
// RenewJob): the owner's text, then now and the lease's end (CheckTime;
// RenewJob, which has no now, passes the zero time).
func checkLease(owner string, now, until time.Time) error {
	if owner == "" {
		return consent.Errorf(consent.Invalid, "lease_owner is required: a lease nobody holds would hold on some stores only")
	}
	if err := consent.CheckText("lease_owner", owner); err != nil {
		return err
	}
	if err := consent.CheckTime("now", now); err != nil {
		return err
	}
	return consent.CheckTime("lease_until", until)
}

// checkEnqueued checks a job to enqueue: a new job has no lease and has
// not failed, which the SQL stores would drop and the memory store keep.
func checkEnqueued(j *consent.Job) error {
	if j.LeaseOwner != "" || !j.LeaseUntil.IsZero() || !j.FailedAt.IsZero() {
		return consent.Errorf(consent.Invalid, "a job is enqueued without a lease or a failure: lease_owner, lease_until and failed_at must be empty")
	}
	return j.Check()
}

// checkRevokedAt refuses, as Invalid, a revocation without its time: a
// zero time would read as "not revoked" and, kept by a store, stop a later
// revocation from taking (RevokeToken, RevokeCertificate). A time outside
// the years 1 to 9999 is Invalid too (CheckTime).
func checkRevokedAt(at time.Time) error {
	if at.IsZero() {
		return consent.Errorf(consent.Invalid, "a revocation needs its time")
	}
	return consent.CheckTime("revoked_at", at)
}

// checkEntry checks a ledger entry before a store writes it: its text
// fields, its time (CheckTime), and its amount, which is positive (a
// credit or a debit of zero or less is Invalid, as the SQL stores' CHECK
// has it) and at most wallet.MaxBalance (wallet.ErrBalanceLimit).
func checkEntry(e *wallet.Entry) error {
	if e.Amount <= 0 {
		return consent.Errorf(consent.Invalid, "a ledger entry's amount must be positive, not %s", e.Amount)
	}
	if e.Amount > wallet.MaxBalance {
		return wallet.ErrBalanceLimit
	}
	if err := consent.CheckKeys("id", e.ID, "company_id", e.CompanyID); err != nil {
		return err
	}
	if err := consent.CheckText("kind", string(e.Kind)); err != nil {
		return err
	}
	if err := consent.CheckText("reference", e.Reference); err != nil {
		return err
	}
	return consent.CheckTime("created_at", e.CreatedAt)
}
