package consentkit

import (
	"context"
	"errors"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/signed"
)

// DefaultAttestationQueue is how many attestations may wait to be run by
// default (Config.AttestationQueue).
const DefaultAttestationQueue = 1000

// ErrAttestationQueueFull is AskAttestation's answer when
// Config.AttestationQueue attestations wait already: nothing was recorded,
// and asking again later may succeed (D49).
var ErrAttestationQueueFull = errors.New("consentkit: the attestation queue is full; ask again later")

// AskAttestation asks, inside tx, for the attestation of c (D49): a
// replay of its recording to the consent moment, run later by the
// attestation job (retain.AttestationHandler) and recorded as a signed
// statement. It returns c's attestation: the one asked for earlier, in
// whatever state it is, or a new pending one with its job enqueued. When
// Config.AttestationQueue jobs wait already it records nothing and returns
// ErrAttestationQueueFull: the queue is bounded, since a company that
// attests every certificate lets anonymous visitors of its forms fill it.
// It charges nothing: the call that asks is paid for, or free.
func (s *Service) AskAttestation(ctx context.Context, tx consent.Tx, c *consent.Certificate) (*consent.Attestation, error) {
	a, err := tx.Attestation(ctx, c.ID)
	if consent.ErrorCode(err) != consent.NotFound {
		return a, err
	}
	n, err := tx.CountJobs(ctx, consent.JobAttest)
	if err != nil {
		return nil, err
	}
	if n >= s.cfg.AttestationQueue {
		return nil, ErrAttestationQueueFull
	}
	now := s.Now()
	a = &consent.Attestation{Evidence: consent.Evidence{CertificateID: c.ID, CompanyID: c.CompanyID, Status: consent.AttestationPending, CreatedAt: now, UpdatedAt: now}}
	if err := tx.CreateAttestation(ctx, a); err != nil {
		return nil, err
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
// certificates: NotFound when the certificate is not the company's or
// none was asked for.
func (s *Service) Attestation(ctx context.Context, companyID, certificateID string) (*consent.Attestation, error) {
	var a *consent.Attestation
	err := s.store.View(ctx, func(tx consent.Tx) error {
		var err error
		a, err = tx.Attestation(ctx, certificateID)
		if err == nil && a.CompanyID != companyID {
			return consent.Errorf(consent.NotFound, "no attestation of certificate %s", certificateID)
		}
		return err
	})
	return a, err
}
