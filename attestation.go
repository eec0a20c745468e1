package consentkit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/signed"
)

// DefaultAttestationQueue is how many attestations may wait to be run by
// default (Config.AttestationQueue).
const DefaultAttestationQueue = 1000

// ErrAttestationQueueFull is AskAttestation's answer when
// Config.AttestationQueue attestations wait already, or
// Config.AttestationQueuePerCompany of the certificate's company: nothing
// was recorded, and asking again later may succeed (D49).
var ErrAttestationQueueFull = errors.New("consentkit: the attestation queue is full; ask again later")

// AskAttestation asks, inside tx, for the attestation of c (D49): a
// replay of its recording to the consent moment, run later by the
// attestation job (retain.AttestationHandler) and recorded as a signed
// statement. It returns c's attestation: the one asked for earlier, in
// whatever state it is (unchecked: a caller that reads its status checks
// it, CheckAttestation), or a new pending one with its job enqueued; a
// pending one whose job is gone gets its job again, and a job waiting
// without its row gets a pending row. When
// Config.AttestationQueue jobs wait already, or
// Config.AttestationQueuePerCompany of c's company, it records nothing and
// returns ErrAttestationQueueFull: the queue is bounded, since a company
// that attests every certificate lets anonymous visitors of its forms fill
// it, and so is each company's share of it, so that one company's visitors
// do not fill it for every other. Both are counted in tx, which enqueues.
// It charges nothing: the call that asks is paid for, or free.
func (s *Service) AskAttestation(ctx context.Context, tx consent.Tx, c *consent.Certificate) (*consent.Attestation, error) {
	a, err := tx.Attestation(ctx, c.ID)
	switch {
	case consent.ErrorCode(err) == consent.NotFound:
		a = nil
	case err != nil || a.Status != consent.AttestationPending:
		return a, err
	}
	// Pending, or none: its job runs, or waits, unless it was lost — a row
	// turned back to pending in the store, its statement removed — and
	// then it is queued again, so that a pending row never stands for good
	// in place of a statement. A job whose row was lost gets its row.
	_, err = tx.Job(ctx, consent.JobAttest, c.ID)
	queued := err == nil
	switch {
	case err != nil && consent.ErrorCode(err) != consent.NotFound:
		return nil, err
	case queued && a != nil:
		return a, nil
	case !queued:
		mine, err := tx.CountCompanyJobs(ctx, consent.JobAttest, c.CompanyID)
		if err != nil {
			return nil, err
		}
		if mine >= s.cfg.AttestationQueuePerCompany {
			return nil, ErrAttestationQueueFull
		}
		all, err := tx.CountJobs(ctx, consent.JobAttest)
		if err != nil {
			return nil, err
		}
		if all >= s.cfg.AttestationQueue {
			return nil, ErrAttestationQueueFull
		}
	}
	now := s.Now()
	if a == nil {
		a = &consent.Attestation{Evidence: consent.Evidence{CertificateID: c.ID, CompanyID: c.CompanyID, Status: consent.AttestationPending, CreatedAt: now, UpdatedAt: now}}
		if err := tx.CreateAttestation(ctx, a); err != nil {
			return nil, err
		}
	}
	if queued {
		return a, nil
	}
	if err := tx.EnqueueJob(ctx, &consent.Job{Kind: consent.JobAttest, Key: c.ID, RunAfter: now, CreatedAt: now, CompanyID: c.CompanyID}); err != nil {
		return nil, err
	}
	return a, nil
}

// attestIssued asks for the attestation of c, just issued, when its
// company attests every certificate (consent.Company.AttestCertificates).
// A full queue does not refuse the certificate: it is then attested only
// if asked again, by a retention or a verification.
func (s *Service) attestIssued(ctx context.Context, tx consent.Tx, c *consent.Certificate) error {
	co, err := tx.Company(ctx, c.CompanyID)
	if err != nil || !co.AttestCertificates {
		return err
	}
	if _, err := s.AskAttestation(ctx, tx, c); err != nil && !errors.Is(err, ErrAttestationQueueFull) {
		return err
	}
	return nil
}

// SignStatement signs st with the key that signs new certificates, naming
// it in st.KeyID, and returns the signature; without signing keys st is
// left unsigned (nil, and KeyID ""), as certificates are.
func (s *Service) SignStatement(st *signed.Statement) ([]byte, error) {
	if len(s.cfg.SigningKeys) == 0 {
		st.KeyID = ""
		_, err := st.Encoding() // still refuse what no signature could cover
		return nil, err
	}
	return s.cfg.SigningKeys[0].SignStatement(st)
}

// Attestation returns the attestation of one of the company's
// certificates: NotFound when none was asked for, and NotFound "certificate
// not found" when the certificate does not exist or is another company's,
// alike (D9).
func (s *Service) Attestation(ctx context.Context, companyID, certificateID string) (*consent.Attestation, error) {
	var a *consent.Attestation
	err := s.store.View(ctx, func(tx consent.Tx) error {
		if _, err := CertificateOf(ctx, tx, certificateID, companyID); err != nil {
			return err
		}
		var err error
		a, err = tx.Attestation(ctx, certificateID)
		if err == nil && a.CompanyID != companyID {
			return consent.Errorf(consent.NotFound, "certificate not found")
		}
		return err
	})
	return a, err
}

// StatementIntegrityError is the refusal of a statement signed apart
// from its certificate — an attestation (CheckAttestation) or insights
// (CheckInsights) — whose status no statement of the certificate, signed
// by the service, says: a row changed in the store. It wraps
// consent.ErrIntegrity, so a verification answers it as it answers a
// changed certificate (409 certificate integrity check failed).
type StatementIntegrityError struct {
	CertificateID string
	Of            string // "attestation" or "insights"
	Reason        string // why the stored statement does not hold
}

func (e *StatementIntegrityError) Error() string {
	return fmt.Sprintf("%v: the %s of certificate %s: %s", consent.ErrIntegrity, e.Of, e.CertificateID, e.Reason)
}

// Unwrap returns consent.ErrIntegrity.
func (e *StatementIntegrityError) Unwrap() error { return consent.ErrIntegrity }

// CheckAttestation reports whether a, the attestation of c as read through
// tx, says what the attestation job recorded (D49). Pending holds only with
// no statement; any other status only as its statement's status, when the
// statement holds (checkStatement). Every caller that reads a status goes
// through here: verifications, their grades, certificate-info and the
// dashboard. The refusal is a *StatementIntegrityError.
func (s *Service) CheckAttestation(ctx context.Context, tx consent.Tx, c *consent.Certificate, a *consent.Attestation) error {
	refuse := refuser(c, "attestation")
	if a.CertificateID != c.ID {
		return refuse("the attestation is of certificate %s", a.CertificateID)
	}
	proof, err := a.Proof()
	switch {
	case err != nil:
		return refuse("the stored statement cannot be read")
	case proof == nil && a.Status == consent.AttestationPending:
		return nil
	case proof == nil:
		return refuse("the status is %q, and no signed statement says so", a.Status)
	}
	st := proof.Statement
	if st.Status != a.Status {
		return refuse("the signed statement says %q, not %q", st.Status, a.Status)
	}
	return s.checkStatement(ctx, tx, c, statementOf{
		certificateID: st.CertificateID, certificateSHA256: st.CertificateSHA256, keyID: st.KeyID, measuredAt: st.MeasuredAt,
		encoding: st.Encoding,
		verify: func(key signed.PublicKey, content *signed.Content) error {
			return signed.VerifyStatement(st, content, key, a.Signature)
		},
	}, a.Signature, a.KeyID, refuse)
}

// CheckInsights reports whether in, the insights of c as read through tx,
// are what the insights job recorded (D50), as CheckAttestation does for
// an attestation: pending and failed hold only with no statement, done
// only with a statement that holds (checkStatement). insights.Ask goes
// through here before it reads a verdict or a signal. The refusal is a
// *StatementIntegrityError.
func (s *Service) CheckInsights(ctx context.Context, tx consent.Tx, c *consent.Certificate, in *consent.Insights) error {
	refuse := refuser(c, "insights")
	if in.CertificateID != c.ID {
		return refuse("the insights are of certificate %s", in.CertificateID)
	}
	proof, err := in.Proof()
	switch {
	case err != nil:
		return refuse("the stored statement cannot be read")
	case proof == nil && (in.Status == consent.InsightsPending || in.Status == consent.InsightsFailed):
		return nil // D50: the two statuses no statement says
	case proof == nil:
		return refuse("the status is %q, and no signed statement says so", in.Status)
	case in.Status != consent.InsightsDone:
		return refuse("the status is %q beside a statement", in.Status)
	}
	st := proof.Statement
	return s.checkStatement(ctx, tx, c, statementOf{
		certificateID: st.CertificateID, certificateSHA256: st.CertificateSHA256, keyID: st.KeyID, measuredAt: st.MeasuredAt,
		encoding: st.Encoding,
		verify: func(key signed.PublicKey, content *signed.Content) error {
			return signed.VerifyInsights(st, content, key, in.Signature)
		},
	}, in.Signature, in.KeyID, refuse)
}

// refuser returns what makes the refusals of c's statement of kind of.
func refuser(c *consent.Certificate, of string) func(format string, args ...any) error {
	return func(format string, args ...any) error {
		return &StatementIntegrityError{CertificateID: c.ID, Of: of, Reason: fmt.Sprintf(format, args...)}
	}
}

// statementOf is what checkStatement reads of a statement signed apart.
type statementOf struct {
	certificateID, certificateSHA256, keyID, measuredAt string
	encoding                                            func() ([]byte, error)
	verify                                              func(key signed.PublicKey, c *signed.Content) error
}

// checkStatement holds st, a statement of c stored with signature and
// keyID, to D49's rule: it is of c as signed (its id and the SHA-256 of
// c's canonical encoding) and its signature holds under the key it names,
// found as a certificate's is (CheckIntegrity). A Service with keys
// refuses an unsigned statement unless its certificate passes unsigned too
// (it carries no signature and was created before Config.UnsignedBefore)
// and it was measured before then; one without keys takes it unsigned, as
// it takes certificates.
func (s *Service) checkStatement(ctx context.Context, tx consent.Tx, c *consent.Certificate, st statementOf, signature []byte, keyID string,
	refuse func(format string, args ...any) error) error {
	content := consent.Signed(c)
	if len(signature) == 0 {
		// Unsigned only where the certificate itself passes unsigned: its
		// signature and creation time are what no row can change, not the
		// statement's own time.
		measured, err := time.Parse(time.RFC3339Nano, st.measuredAt)
		if len(s.keys) > 0 && (err != nil || len(c.Signature) > 0 || !c.CreatedAt.Before(s.cfg.UnsignedBefore) ||
			!measured.Before(s.cfg.UnsignedBefore)) {
			return refuse("the statement is not signed")
		}
		if _, err := st.encoding(); err != nil {
			return refuse("%v", err)
		}
		enc, err := content.Encoding()
		if err != nil {
			return refuse("%v", err)
		}
		if sum := sha256.Sum256(enc); st.certificateID != c.ID || st.certificateSHA256 != hex.EncodeToString(sum[:]) {
			return refuse("the statement is of another certificate than %s as signed", c.ID)
		}
		return nil
	}
	if keyID != st.keyID {
		return refuse("key_id %q differs from the statement's %q", keyID, st.keyID)
	}
	key, ok, err := s.key(ctx, tx, st.keyID)
	if err != nil {
		return err
	}
	if !ok {
		return refuse("the statement is signed with key %q, which this service was not given", st.keyID)
	}
	if err := st.verify(key, &content); err != nil {
		return refuse("%v", err)
	}
	return nil
}
