package optout

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/contact"
	"github.com/consentkit/consentkit/internal/ratelimit"
)

// Service revokes consent with the store and clock of a consentkit.Service.
// It is safe for concurrent use.
type Service struct {
	svc *consentkit.Service
	// idle is each company's budget of recorded requests that revoke
	// nothing new; nil: every request is recorded.
	idle *ratelimit.Limiter
}

// DefaultIdleRecordsPerMinute is how many requests that revoke nothing new
// a Service records a minute per company, unless told otherwise
// (LimitIdleRecords).
const DefaultIdleRecordsPerMinute = 600

// New returns a Service built from svc, recording at most
// DefaultIdleRecordsPerMinute requests a minute per company that revoke
// nothing new.
func New(svc *consentkit.Service) *Service {
	return (&Service{svc: svc}).LimitIdleRecords(DefaultIdleRecordsPerMinute)
}

// LimitIdleRecords sets how many requests that revoke nothing new — that
// match no certificate, or only certificates revoked already — are
// recorded a minute per company (D52): beyond that they are answered as
// they would be (D18) and leave no revocation record, audit entry or event.
// Every request that revokes a certificate is recorded, whatever the
// count. perMinute ≤ 0 records every request. Call it before the Service
// serves; it returns s.
//
// So an anonymous caller, who can neither be charged nor purged (D19 and
// D42 keep what an opt-out records), adds to a company's store at most
// perMinute revocation records and audit entries a minute (each under 2
// KiB: digests, a reason of at most 1,000 bytes, an address), besides one
// for each certificate it revokes; the per-address rate limit (D20) bounds
// each address within that.
func (s *Service) LimitIdleRecords(perMinute int) *Service {
	s.idle = nil
	if perMinute > 0 {
		s.idle = ratelimit.New(perMinute, 10_000, s.svc.Now)
	}
	return s
}

// Request is an opt-out. ClientIP is recorded with it (D19).
type Request struct {
	CompanyID string // required
	// At least one of CertificateID, Email and Mobile is required (D16).
	CertificateID string
	Email         string
	Mobile        string
	Reason        string // optional
	ClientIP      string // optional: the caller's address
}

// Result is the answer to an opt-out, POST /opt-out (D18).
type Result struct {
	CertificateIDs []string // every matched certificate, sorted; never nil
	Timestamp      time.Time
}

// maxReason bounds the recorded reason.
const maxReason = 1000

// errNoIdentifier is the message of D16.
const errNoIdentifier = "one of certificate_id, email or mobile is required"

// OptOut revokes every certificate of the company that the request
// identifies and, when it matched any, emits consent.revoked (D44) in the
// same transaction. Invalid when company_id is missing or malformed, when no
// identifier is given, or when one is malformed.
func (s *Service) OptOut(ctx context.Context, req Request) (*Result, error) {
	if err := consent.CheckID("company_id", req.CompanyID); err != nil {
		return nil, err
	}
	email, mobile := strings.TrimSpace(req.Email), strings.TrimSpace(req.Mobile)
	if req.CertificateID == "" && email == "" && mobile == "" {
		return nil, consent.Errorf(consent.Invalid, errNoIdentifier)
	}
	rev := &consent.Revocation{
		ID: consent.NewID("rev"), CompanyID: req.CompanyID, CertificateID: req.CertificateID,
		Reason: req.Reason, ClientIP: req.ClientIP, CreatedAt: s.svc.Now(),
	}
	if req.CertificateID != "" {
		if err := consent.CheckID("certificate_id", req.CertificateID); err != nil {
			return nil, err
		}
	}
	var err error
	if email != "" {
		if rev.EmailDigest, err = contact.EmailDigest(email); err != nil {
			return nil, err
		}
	}
	if mobile != "" {
		if rev.MobileDigest, err = contact.MobileDigest(mobile); err != nil {
			return nil, err
		}
	}
	if len(req.Reason) > maxReason {
		return nil, consent.Errorf(consent.Invalid, "reason must be at most %d bytes", maxReason)
	}
	if err := consent.CheckText("reason", req.Reason); err != nil {
		return nil, err
	}

	// The idle budget is asked once a call: the store may run the
	// function again (a group commit's retry), which must not spend twice.
	var idle error
	asked := false
	return consentkit.Paid(ctx, s.svc, nil, func(tx consent.Tx) (*Result, error) {
		certs, err := s.match(ctx, tx, rev)
		if consent.ErrorCode(err) == consent.NotFound {
			// An unknown company: nothing to revoke and nothing to record
			// against, answered like any request that matched nothing.
			return &Result{CertificateIDs: []string{}, Timestamp: rev.CreatedAt}, nil
		}
		if err != nil {
			return nil, err
		}
		ids := make([]string, len(certs))
		for i, c := range certs {
			ids[i] = c.ID
		}
		fresh := slices.ContainsFunc(certs, func(c *consent.Certificate) bool { return !c.Revoked() })
		if !fresh && s.idle != nil {
			if !asked {
				_, idle = s.idle.Allow(rev.CompanyID)
				asked = true
			}
			if idle != nil {
				// Over the company's budget of idle records: the same
				// answer, nothing recorded.
				return &Result{CertificateIDs: ids, Timestamp: rev.CreatedAt}, nil
			}
		}
		for _, id := range ids {
			if err := tx.RevokeCertificate(ctx, id, rev.CreatedAt); err != nil {
				return nil, err
			}
		}
		rev.CertificateIDs = ids
		if err := tx.CreateRevocation(ctx, rev); err != nil {
			return nil, err
		}
		if len(ids) > 0 {
			// The event names the certificates, never the email or mobile
			// the consumer gave: a receiver learns what it already holds.
			err := s.svc.EmitEvent(ctx, tx, rev.CompanyID, consent.EventConsentRevoked, map[string]any{
				"revocation_id": rev.ID, "company_id": rev.CompanyID, "certificate_ids": ids, "revoked_at": rev.CreatedAt,
			})
			if err != nil {
				return nil, err
			}
		}
		// The identifiers given are named, never their values (D42).
		var by []string
		for _, f := range [...]struct {
			name  string
			given bool
		}{{"certificate_id", rev.CertificateID != ""}, {"email", !rev.EmailDigest.IsZero()}, {"mobile", !rev.MobileDigest.IsZero()}} {
			if f.given {
				by = append(by, f.name)
			}
		}
		err = s.svc.Audit(ctx, tx, consentkit.AuditParams{CompanyID: rev.CompanyID, Action: consent.AuditOptOut,
			Target: rev.ID, Actor: consent.ActorConsumer, Detail: map[string]any{"revoked": len(ids), "by": by}})
		return &Result{CertificateIDs: ids, Timestamp: rev.CreatedAt}, err
	})
}

// match returns the company's certificates that the revocation's
// identifiers find, sorted by id, each read as the transaction holds it
// (locked, on PostgreSQL). NotFound when the company does not exist.
func (s *Service) match(ctx context.Context, tx consent.Tx, rev *consent.Revocation) ([]*consent.Certificate, error) {
	// Locked, so that a certificate being issued to the company commits
	// before its identifiers are looked up (and is revoked), or waits and
	// sees this revocation (RevokedBefore): under PostgreSQL's READ
	// COMMITTED each would otherwise miss the other.
	if err := tx.LockCompany(ctx, rev.CompanyID); err != nil {
		return nil, err
	}
	var ids []string
	if rev.CertificateID != "" {
		ids = append(ids, rev.CertificateID)
	}
	if !rev.EmailDigest.IsZero() {
		found, err := tx.CertificatesByEmail(ctx, rev.CompanyID, rev.EmailDigest)
		if err != nil {
			return nil, err
		}
		ids = append(ids, found...)
	}
	if !rev.MobileDigest.IsZero() {
		found, err := tx.CertificatesByMobile(ctx, rev.CompanyID, rev.MobileDigest)
		if err != nil {
			return nil, err
		}
		ids = append(ids, found...)
	}
	slices.Sort(ids)
	certs := []*consent.Certificate{}
	for _, id := range slices.Compact(ids) {
		c, err := tx.Certificate(ctx, id)
		switch {
		case consent.ErrorCode(err) == consent.NotFound:
			// None of that id, or purged since it was listed: PostgreSQL
			// reads each statement at its own start (READ COMMITTED), and
			// the purge may commit between the list and the read.
		case err != nil:
			return nil, err
		case c.CompanyID == rev.CompanyID:
			certs = append(certs, c)
		}
	}
	return certs, nil
}
