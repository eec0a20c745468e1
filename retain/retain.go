package retain

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/wallet"
)

// Service runs every retention: the Retain API and the Verification API's
// /verify/session and /verify/certificate, with the store, clock, prices
// and long-term period of a consentkit.Service. It is safe for concurrent use.
type Service struct {
	svc *consentkit.Service
}

// New returns a Service built from svc.
func New(svc *consentkit.Service) *Service { return &Service{svc: svc} }

// StatusQueued is the status of a successful retention by the Retain API
// (D22).
const StatusQueued = "queued_for_conversion"

// MaxBatch is the most sessions one batch may name (D23).
const MaxBatch = 100

// Retention is the outcome of one retention.
type Retention struct {
	SessionID string
	// RetentionStatus is the session's: RetentionRetained, but
	// RetentionExpired when RetainCertificates retained the live
	// certificates of a session already purged, which stays purged.
	RetentionStatus consent.RetentionStatus
	// Status is StatusQueued when the recording was queued for
	// conversion (the Retain API), "" otherwise.
	Status string
	// RetainedUntil is the session's retention date; for a purged
	// session, the latest of the certificates retained now.
	RetainedUntil time.Time
	// CertificateIDs are the company's certificates of the session, sorted,
	// when they were retained with it (/verify/certificate).
	CertificateIDs []string
	Charged        wallet.Amount
	Balance        wallet.Amount // after the charge
}

// rule says what one retention covers and how it is paid for.
type rule struct {
	kind         wallet.EntryKind // the price and ledger entry
	action       string           // of the audit entry
	certificates bool             // the session's certificates too (D25)
	// video: queue the recording for conversion (D22). Only the Retain
	// API does, so it also selects the Retain API's names and messages.
	video bool
}

// keep is the one retention rule, inside tx: the session must be the
// company's (NotFound); with certificates, it must have some of the
// company's (NotFound); it must not be purged, but with certificates, whose
// windows run from their own creation and may outlive their session's, and
// something must be left to retain (Conflict);
// then one charge, and every item not yet retained is marked retained until
// the long-term period ends (D26), or later if its window ends later:
// retaining never shortens. An item retained earlier keeps its own
// term, but a session whose certificates are retained now, whose
// term is then at least theirs. A purged session stays purged: only its
// live certificates are retained. With video, the session's recording is
// queued for conversion (D21, D22). It emits session.retained (D44).
//
// It reads, and so locks, the session's certificates before the charge
// locks the wallet, by every route, though only /verify/certificate
// retains them (the others ask for their attestations): a verification
// locks its certificate, then the wallet, and a retention that took them
// in the opposite order would deadlock with it on PostgreSQL.
func (s *Service) keep(ctx context.Context, tx consent.Tx, companyID, sessionID string, r rule) (*Retention, error) {
	ses, err := consent.SessionOf(ctx, tx, sessionID, companyID)
	var all []*consent.Certificate
	if err == nil {
		if all, err = certificatesOf(ctx, tx, ses); consent.ErrorCode(err) == consent.NotFound && !r.certificates {
			err = nil // nothing to attest
		}
	}
	if consent.ErrorCode(err) == consent.NotFound && r.certificates {
		return nil, consent.Errorf(consent.NotFound, "no certificate of the company for this session")
	}
	if err != nil {
		return nil, err
	}
	var certs []*consent.Certificate // retained with the session
	if r.certificates {
		certs = all
	}
	if err := admit(ses, certs, r); err != nil {
		return nil, err
	}
	charged, bal, err := s.svc.Charge(ctx, tx, companyID, r.kind, sessionID)
	if err != nil {
		return nil, err
	}
	// Past the charge every error is a storage failure (consent.StorageFailure).
	out, changed := s.mark(ses, certs, r, charged, bal)
	for _, c := range changed {
		if err := tx.UpdateCertificate(ctx, c); err != nil {
			return nil, consent.StorageFailure("retain certificate "+c.ID, err)
		}
		if err := s.lockScreenshot(ctx, tx, c.ID); err != nil {
			return nil, consent.StorageFailure("retain certificate "+c.ID+": lock its screenshot", err)
		}
	}
	if ses.RetentionStatus != consent.RetentionExpired { // a purged session stays as it is
		if err := tx.UpdateSession(ctx, ses); err != nil {
			return nil, consent.StorageFailure("retain "+sessionID, err)
		}
		if err := s.lockRetained(ctx, tx, ses); err != nil {
			return nil, err
		}
	}
	if r.video {
		if err := tx.EnqueueJob(ctx, s.conversion(ses)); err != nil {
			return nil, consent.StorageFailure("retain "+sessionID+": enqueue conversion", err)
		}
	}
	if err := s.attest(ctx, tx, all); err != nil {
		return nil, consent.StorageFailure("retain "+sessionID+": ask for attestation", err)
	}
	if err := s.svc.EmitEvent(ctx, tx, companyID, consent.EventSessionRetained, retainedEvent(ses, out)); err != nil {
		return nil, consent.StorageFailure("retain "+sessionID+": webhook", err)
	}
	return out, nil
}

// lockRetained asks, in tx, for the locks of what a retention just kept
// of ses until its retention date: its moved recording (D52) and its
// video (D45), each lock following the date a later retention moves.
func (s *Service) lockRetained(ctx context.Context, tx consent.Tx, ses *consent.Session) error {
	if ses.Recording.Moved() && ses.RetentionStatus == consent.RetentionRetained {
		if err := consentkit.EnqueueRecordingLock(ctx, tx, ses.ID, s.svc.Now()); err != nil {
			return consent.StorageFailure("retain "+ses.ID+": lock its recording", err)
		}
	}
	if ses.Video.Path != "" {
		if err := enqueueLock(ctx, tx, JobLockVideo, ses.ID, s.svc.Now()); err != nil {
			return consent.StorageFailure("retain "+ses.ID+": lock its video", err)
		}
	}
	return nil
}

// attest asks for the attestation of each of the company's certificates
// of the retained session (D49), by whichever route: certs, read (and
// locked) with the session before the charge. A full attestation queue
// does not stop the retention: the certificate is then not attested
// unless asked again (consentkit.ErrAttestationQueueFull).
func (s *Service) attest(ctx context.Context, tx consent.Tx, certs []*consent.Certificate) error {
	for _, c := range certs {
		if _, err := s.svc.AskAttestation(ctx, tx, c); err != nil && !errors.Is(err, consentkit.ErrAttestationQueueFull) {
			return err
		}
	}
	return nil
}

// lockScreenshot asks, in tx, for the lock of the certificate's
// attestation screenshot, if it has one, until its retention date, which
// a retention just moved (D49).
func (s *Service) lockScreenshot(ctx context.Context, tx consent.Tx, certificateID string) error {
	att, err := tx.Attestation(ctx, certificateID)
	if consent.ErrorCode(err) == consent.NotFound || err == nil && att.Screenshot == "" {
		return nil
	}
	if err != nil {
		return err
	}
	return enqueueLock(ctx, tx, JobLockScreenshot, certificateID, s.svc.Now())
}

// admit checks that the session, read with its certificates, can be
// retained: something left to retain (Conflict). A purged session cannot
// be (Conflict), but its certificates, each kept for a window of its own
// that may outlive the session's, can while they live (D25, D26):
// /verify/certificate retains them, and the session stays purged.
func admit(ses *consent.Session, certs []*consent.Certificate, r rule) error {
	expired := ses.RetentionStatus == consent.RetentionExpired
	if expired && !r.certificates {
		return consent.Errorf(consent.Conflict, "session expired: its retention window ended and its recording was purged")
	}
	pending := ses.RetentionStatus != consent.RetentionRetained && !expired
	for _, c := range certs {
		pending = pending || c.RetentionStatus != consent.RetentionRetained
	}
	switch {
	case !pending && expired:
		return consent.Errorf(consent.Conflict, "certificates already retained; the session expired and its recording was purged")
	case !pending && r.certificates:
		return consent.Errorf(consent.Conflict, "certificates already retained")
	case !pending:
		return consent.Errorf(consent.Conflict, "session already retained")
	}
	return nil
}

// mark marks the session and the certificates not yet retained as retained
// until the long-term period ends, counted from now (D26), or until their
// own window ends if that is later: retaining never shortens. With video
// it marks the session's recording pending conversion (D21). A purged
// session is left as it is: its certificates alone are retained. It
// returns the outcome and the certificates it changed.
func (s *Service) mark(ses *consent.Session, certs []*consent.Certificate, r rule, charged, bal wallet.Amount) (*Retention, []*consent.Certificate) {
	until := s.svc.RetainUntil(s.svc.Now())
	out := &Retention{
		SessionID: ses.ID, RetentionStatus: consent.RetentionRetained, RetainedUntil: until,
		CertificateIDs: []string{}, Charged: charged, Balance: bal,
	}
	var changed []*consent.Certificate
	term := until // the latest term of the certificates retained now
	for _, c := range certs {
		out.CertificateIDs = append(out.CertificateIDs, c.ID)
		if c.RetentionStatus != consent.RetentionRetained {
			c.RetentionStatus, c.ExpiresAt = consent.RetentionRetained, later(c.ExpiresAt, until)
			term = later(term, c.ExpiresAt)
			changed = append(changed, c)
		}
	}
	if ses.RetentionStatus == consent.RetentionExpired {
		// Its recording is gone and it stays expired; what was retained
		// now is its certificates, until term.
		out.RetentionStatus, out.RetainedUntil = consent.RetentionExpired, term
		return out, changed
	}
	// Certificates retained with a session retained earlier take it to
	// their term: they are kept together (D25), and a retained certificate
	// never outlives the recording it vouches for.
	if ses.RetentionStatus != consent.RetentionRetained {
		ses.RetentionStatus, ses.ExpiresAt = consent.RetentionRetained, later(ses.ExpiresAt, term)
	} else if len(changed) > 0 {
		ses.ExpiresAt = later(ses.ExpiresAt, term)
	}
	out.RetainedUntil = ses.ExpiresAt
	if r.video {
		ses.VideoStatus = consent.VideoPending
		out.Status = StatusQueued
	}
	return out, changed
}

// conversion is the job that converts the session's recording (D22),
// due now.
func (s *Service) conversion(ses *consent.Session) *consent.Job {
	now := s.svc.Now()
	return &consent.Job{Kind: consent.JobConvert, Key: ses.ID, RunAfter: now, CreatedAt: now, CompanyID: ses.CompanyID}
}

// retainedEvent is the data of the session.retained event (D44).
func retainedEvent(ses *consent.Session, out *Retention) map[string]any {
	return map[string]any{
		"session_id": ses.ID, "company_id": ses.CompanyID, "retention_status": ses.RetentionStatus,
		"retained_until": ses.ExpiresAt, "certificate_ids": out.CertificateIDs,
		"rrweb_to_video_status": ses.VideoStatus, "cost_charged": out.Charged,
	}
}

// certificatesOf returns the session company's certificates of the
// session; NotFound when there is none.
func certificatesOf(ctx context.Context, tx consent.Tx, ses *consent.Session) ([]*consent.Certificate, error) {
	ids, err := tx.CertificatesBySession(ctx, ses.ID)
	if err != nil {
		return nil, err
	}
	var certs []*consent.Certificate
	for _, id := range ids {
		c, err := tx.Certificate(ctx, id)
		if consent.ErrorCode(err) == consent.NotFound {
			continue // purged since it was listed (PostgreSQL's READ COMMITTED)
		}
		if err != nil {
			return nil, err
		}
		if c.CompanyID == ses.CompanyID {
			certs = append(certs, c)
		}
	}
	if len(certs) == 0 {
		return nil, consent.ErrNotFound
	}
	return certs, nil
}

// one runs a single retention in its own transaction.
func (s *Service) one(ctx context.Context, caller, companyID, sessionID string, r rule) (*Retention, error) {
	if err := checkCaller(caller, companyID, r.video); err != nil {
		return nil, err
	}
	if err := consent.CheckID(fields[r.video].session, sessionID); err != nil {
		return nil, err
	}
	audit := &consentkit.AuditParams{CompanyID: companyID, Action: r.action, Target: sessionID}
	return consentkit.Paid(ctx, s.svc, audit, func(tx consent.Tx) (*Retention, error) {
		// A store may run this more than once (consent.Store): a run
		// refused after one that retained and was rolled back has no
		// detail, not the earlier run's charge and date.
		audit.Detail = nil
		out, err := s.keep(ctx, tx, companyID, sessionID, r)
		if err == nil {
			audit.Detail = retentionDetail(out, r)
		}
		return out, err
	})
}

// retentionDetail is what the audit log keeps of a retention.
func retentionDetail(out *Retention, r rule) map[string]any {
	d := map[string]any{"charged": out.Charged, "retained_until": out.RetainedUntil.Format(time.RFC3339Nano)}
	if r.certificates {
		d["certificate_ids"] = out.CertificateIDs
	}
	return d
}

// fields names the company and session as each API spells them: the Retain
// API (true) as path parameters companyId and sessionId, the Verification
// API as company_id and session_id.
var fields = map[bool]struct{ company, session string }{
	true:  {"companyId", "sessionId"},
	false: {"company_id", "session_id"},
}

// checkCaller validates the company id and checks that the caller is that
// company (D7).
func checkCaller(caller, companyID string, retainAPI bool) error {
	if err := consent.CheckID(fields[retainAPI].company, companyID); err != nil {
		return err
	}
	switch {
	case caller == companyID:
		return nil
	case retainAPI:
		return consent.Errorf(consent.Forbidden, "the token is not one of company %s", companyID)
	}
	return consent.Errorf(consent.Forbidden, "the credentials are not those of company_id")
}

// Retain retains one session of the caller's company and queues its
// recording for conversion (Retain API single, D22). Forbidden when caller
// is not companyID; NotFound when the session is unknown or not the
// company's; Conflict when it is retained already (by any of the retention
// calls) or purged (D43); a *wallet.InsufficientFundsError when the wallet cannot
// cover Prices.RetainSingle.
func (s *Service) Retain(ctx context.Context, caller, companyID, sessionID string) (*Retention, error) {
	return s.one(ctx, caller, companyID, sessionID, rule{kind: wallet.RetainSingle, action: consent.AuditRetainSingle, video: true})
}

// RetainSession keeps a session's recording for the long-term period
// without converting it (/verify/session, D24), for Prices.SessionRetention.
// Errors as for Retain.
func (s *Service) RetainSession(ctx context.Context, caller, companyID, sessionID string) (*Retention, error) {
	return s.one(ctx, caller, companyID, sessionID, rule{kind: wallet.SessionRetention, action: consent.AuditRetainSession})
}

// RetainCertificates keeps the company's certificates of a session, and
// the session, for the long-term period (/verify/certificate, D25), for one
// fee of Prices.CertificateRetention. Revoked certificates are retained
// too: they are evidence of past consent (D27). A certificate's window
// runs from its own creation, so it may outlive its session's: the live
// certificates of a purged session are retained all the same, and the
// session stays purged (its Retention has RetentionStatus
// RetentionExpired). NotFound when the session has no certificate of the
// company; Conflict when all of them, and the session unless purged, are
// retained already.
func (s *Service) RetainCertificates(ctx context.Context, caller, companyID, sessionID string) (*Retention, error) {
	return s.one(ctx, caller, companyID, sessionID, rule{kind: wallet.CertificateRetention, action: consent.AuditRetainCertificate, certificates: true})
}

// BatchEntry is the outcome for one session of a batch.
type BatchEntry struct {
	SessionID string
	Status    string // StatusQueued on success
	Err       error  // nil on success; coded like Retain's errors
}

// BatchResult is the answer to a batch, POST
// /api/integrations/{companyId}/retain/batch (D23).
type BatchResult struct {
	Retained, Failed int
	TotalCost        wallet.Amount
	Balance          wallet.Amount // after all charges
	Results          []BatchEntry  // one per requested session, in order
}

// RetainBatch retains up to MaxBatch sessions in order, each charged
// Prices.RetainBatch only when it succeeds (D23). A repeated id fails as
// already retained; once the balance cannot cover an entry it fails with
// insufficient balance. All successes commit together. Invalid when the list
// is empty or longer than MaxBatch; an entry that is not an identifier
// fails by itself.
//
// The batch does its work set-wise: one read of all its
// sessions, one of the wallet, the rules applied to each entry in order in
// memory, then one write of each kind — the charges, the sessions, the
// conversion jobs and webhook messages, the audit entries — so that its
// checks and charges cost a few statements, not a single retention's for
// each entry. What is asked of each retained session's own things is
// asked session by session: the locks of its moved recording and video,
// and the attestations of its certificates (D49), which it reads before
// the first charge (keep's lock order). What it answers and
// stores is what retaining its entries one after another in one
// transaction would.
func (s *Service) RetainBatch(ctx context.Context, caller, companyID string, sessionIDs []string) (*BatchResult, error) {
	if err := checkCaller(caller, companyID, true); err != nil {
		return nil, err
	}
	if len(sessionIDs) == 0 || len(sessionIDs) > MaxBatch {
		return nil, consent.Errorf(consent.Invalid, "session_ids must list 1 to %d sessions", MaxBatch)
	}
	r := rule{kind: wallet.RetainBatch, action: consent.AuditRetainBatch, video: true}
	return consentkit.Paid(ctx, s.svc, nil, func(tx consent.Tx) (*BatchResult, error) {
		return s.batch(ctx, tx, companyID, sessionIDs, r)
	})
}

// batch is RetainBatch inside tx: keep's rules for each entry, on the
// sessions read at once and kept up to date in memory, so that an entry
// sees the ones before it as a run of keep would (a repeated id finds its
// session retained).
func (s *Service) batch(ctx context.Context, tx consent.Tx, companyID string, ids []string, r rule) (*BatchResult, error) {
	read := make([]string, 0, len(ids))
	listed := make(map[string]bool, len(ids))
	for _, id := range ids {
		if consent.ValidID(id) && !listed[id] {
			listed[id] = true
			read = append(read, id)
		}
	}
	found, err := tx.Sessions(ctx, read)
	if err != nil {
		return nil, err
	}
	sessions := make(map[string]*consent.Session, len(read))
	for i, ses := range found {
		if ses != nil && ses.CompanyID == companyID { // another company's is not found (D9)
			sessions[read[i]] = ses
		}
	}
	// The certificates of each session that may be retained are read, and
	// so locked, before the batch's first charge locks the wallet, as keep
	// reads them: in the order a verification locks its certificate and
	// then the wallet.
	certs := make(map[string][]*consent.Certificate, len(sessions))
	for _, id := range read {
		ses := sessions[id]
		if ses == nil || admit(ses, nil, r) != nil {
			continue
		}
		cs, err := certificatesOf(ctx, tx, ses)
		if consent.ErrorCode(err) == consent.NotFound {
			continue // nothing to attest
		}
		if err != nil {
			return nil, consent.StorageFailure("retain "+id+": read its certificates", err)
		}
		certs[id] = cs
	}
	b, err := s.svc.NewBatch(ctx, tx, companyID)
	if err != nil {
		return nil, err
	}
	res := &BatchResult{Results: make([]BatchEntry, len(ids))}
	var retained []*consent.Session
	for i, id := range ids {
		e := BatchEntry{SessionID: id}
		var kept *Retention
		if e.Err = consent.CheckID("session_id", id); e.Err == nil {
			kept, e.Err = s.keepIn(ctx, b, sessions[id], r)
		}
		// The details are retentionDetail's and the index's, as structs:
		// the same JSON, made faster than from maps.
		audit := consentkit.AuditParams{CompanyID: companyID, Action: r.action, Target: id, Err: e.Err,
			Detail: indexDetail{i}}
		switch code := consent.ErrorCode(e.Err); code {
		case "":
			e.Status = StatusQueued
			res.Retained++
			res.TotalCost += kept.Charged
			audit.Detail = batchDetail{kept.Charged, kept.RetainedUntil.Format(time.RFC3339Nano)}
			retained = append(retained, sessions[id])
		case consent.Internal:
			return nil, e.Err // a storage failure fails the whole batch
		default:
			res.Failed++
		}
		if !consent.ValidID(id) {
			audit.Target = "" // not an id: the index says which it was
		}
		if err := b.Audit(ctx, audit); err != nil {
			return nil, err
		}
		res.Results[i] = e
	}
	if err := tx.UpdateSessions(ctx, retained); err != nil {
		return nil, consent.StorageFailure("retain batch", err)
	}
	for _, ses := range retained {
		if err := s.lockRetained(ctx, tx, ses); err != nil {
			return nil, err
		}
		if err := s.attest(ctx, tx, certs[ses.ID]); err != nil {
			return nil, consent.StorageFailure("retain "+ses.ID+": ask for attestation", err)
		}
	}
	if err := b.Flush(ctx); err != nil {
		return nil, err
	}
	res.Balance = b.Balance()
	return res, nil
}

// batchDetail is retentionDetail of a batch's entry, which has no
// certificates; indexDetail is a refused entry's detail. Their fields are in
// the order json.Marshal gives a map's keys.
type (
	batchDetail struct {
		Charged       wallet.Amount `json:"charged"`
		RetainedUntil string        `json:"retained_until"`
	}
	indexDetail struct {
		Index int `json:"index"`
	}
)

// keepIn is keep for one entry of a batch, on its session as read (nil
// when it is not the company's) and in b: the same checks, charge, marks,
// conversion job and event, gathered in b and the session instead of
// written.
func (s *Service) keepIn(ctx context.Context, b *consentkit.Batch, ses *consent.Session, r rule) (*Retention, error) {
	if ses == nil {
		return nil, consent.Errorf(consent.NotFound, "session not found")
	}
	if err := admit(ses, nil, r); err != nil {
		return nil, err
	}
	charged, bal, err := b.Charge(ctx, r.kind, ses.ID)
	if err != nil {
		return nil, err
	}
	out, _ := s.mark(ses, nil, r, charged, bal)
	if r.video {
		b.Enqueue(s.conversion(ses))
	}
	if err := b.Emit(ctx, consent.EventSessionRetained, func() any { return retainedEvent(ses, out) }); err != nil {
		return nil, consent.StorageFailure("retain "+ses.ID+": webhook", err)
	}
	return out, nil
}

// Video returns the session's converted video (D45) for the caller: the
// Retain API's authorization, then NotFound when the session is not the
// company's or has no video yet.
func (s *Service) Video(ctx context.Context, caller, companyID, sessionID string) (*consent.Session, error) {
	ses, err := s.Status(ctx, caller, companyID, sessionID)
	if err != nil {
		return nil, err
	}
	if ses.VideoStatus != consent.VideoConverted {
		return nil, consent.Errorf(consent.NotFound, "the session has no video yet (rrweb_to_video_status %s)", ses.VideoStatus)
	}
	return ses, nil
}

// Status returns a session of the caller's company, with its retention and
// conversion status and, once converted, its video. NotFound when the
// session is unknown or not the company's.
func (s *Service) Status(ctx context.Context, caller, companyID, sessionID string) (*consent.Session, error) {
	if err := checkCaller(caller, companyID, true); err != nil {
		return nil, err
	}
	if err := consent.CheckID("sessionId", sessionID); err != nil {
		return nil, err
	}
	var ses *consent.Session
	err := s.svc.Store().View(ctx, func(tx consent.Tx) error {
		var err error
		ses, err = consent.SessionOf(ctx, tx, sessionID, companyID)
		return err
	})
	return ses, err
}

// Screenshot returns the attestation of a certificate of the caller's
// company that holds a screenshot of the consent moment (D49), for the
// Retain API's screenshot route, checked as every reader of an
// attestation's status checks it (consentkit.Service.CheckAttestation):
// the screenshot served is the one a signed statement of the certificate
// states. Forbidden when caller is not companyID; NotFound when the
// certificate is unknown or not the company's (alike, D9), or has no
// screenshot (not attested yet, or its replay took none); a
// *consentkit.StatementIntegrityError (consent.ErrIntegrity, a 409) when
// the attestation does not hold or its row names a screenshot that no
// signed statement states: a changed row is never served as evidence.
// A revoked certificate's screenshot is served to its company all the
// same: evidence of consent later withdrawn is still evidence, its
// owner's (D27).
func (s *Service) Screenshot(ctx context.Context, caller, companyID, certificateID string) (*consent.Attestation, error) {
	if err := checkCaller(caller, companyID, true); err != nil {
		return nil, err
	}
	if err := consent.CheckID("certificateId", certificateID); err != nil {
		return nil, err
	}
	var a *consent.Attestation
	err := s.svc.Store().View(ctx, func(tx consent.Tx) error {
		c, err := consentkit.CertificateOf(ctx, tx, certificateID, companyID)
		if err != nil {
			return err
		}
		a, err = tx.Attestation(ctx, c.ID)
		if consent.ErrorCode(err) == consent.NotFound {
			return consent.Errorf(consent.NotFound, "the certificate has no screenshot (no attestation was asked for)")
		}
		if err != nil {
			return err
		}
		if err := s.checkScreenshot(ctx, tx, c, a); err != nil {
			slog.ErrorContext(ctx, "consentkit: an attestation failed its integrity check; its screenshot is not served", "certificate", c.ID,
				"company", c.CompanyID, "err", err, "request_id", consentkit.RequestIDFrom(ctx))
			return err
		}
		if a.Screenshot == "" {
			return consent.Errorf(consent.NotFound, "the certificate has no screenshot (attestation %s)", a.Status)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return a, nil
}

// checkScreenshot checks a, c's attestation read through tx, as
// CheckAttestation does, and that a screenshot its row names is one that
// its signed statement states: CheckAttestation holds a pending row,
// which has no statement, and a statement of a replay that took no
// screenshot, and neither names a file.
func (s *Service) checkScreenshot(ctx context.Context, tx consent.Tx, c *consent.Certificate, a *consent.Attestation) error {
	if err := s.svc.CheckAttestation(ctx, tx, c, a); err != nil || a.Screenshot == "" {
		return err
	}
	if p, err := a.Proof(); err != nil || p == nil || p.Statement.ScreenshotSHA256 == "" {
		return &consentkit.StatementIntegrityError{CertificateID: c.ID, Of: "attestation",
			Reason: "the row names a screenshot that no signed statement states"}
	}
	return nil
}
