package verify

import (
	"context"
	"time"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/wallet"
)

// SessionRetention is the answer of /verify/session (D24).
type SessionRetention struct {
	SessionID       string
	RetentionStatus consent.RetentionStatus
	RetainedUntil   time.Time
	Charged         wallet.Amount
	Balance         wallet.Amount
}

// RetainSession keeps a session's recording for the long-term period,
// without converting it to video (D24). NotFound when the session is
// unknown, not the company's, or already purged; Conflict when it is
// retained already; Payment when the wallet cannot cover
// Prices.SessionRetention. Check, charge and retention are one transaction.
func (s *Service) RetainSession(ctx context.Context, caller, companyID, sessionID string) (*SessionRetention, error) {
	if err := checkOwner(caller, companyID, sessionID); err != nil {
		return nil, err
	}
	var out *SessionRetention
	err := s.store.Update(ctx, func(tx consent.Tx) error {
		ses, err := consent.SessionOf(ctx, tx, sessionID, companyID)
		if err != nil {
			return err
		}
		if ses.RetentionStatus == consent.RetentionRetained {
			return consent.Errorf(consent.Conflict, "session already retained")
		}
		now := consent.UTC(s.policy.Now())
		bal, err := consent.Charge(ctx, tx, &wallet.Entry{
			CompanyID: companyID, Kind: wallet.SessionRetention, Amount: s.policy.Prices.SessionRetention,
			Reference: ses.ID, CreatedAt: now,
		})
		if err != nil {
			return err
		}
		ses.RetentionStatus, ses.ExpiresAt = consent.RetentionRetained, consent.RetainUntil(now, s.policy.LongTermRetention)
		if err := tx.UpdateSession(ctx, ses); err != nil {
			return err
		}
		out = &SessionRetention{
			SessionID: ses.ID, RetentionStatus: ses.RetentionStatus, RetainedUntil: ses.ExpiresAt,
			Charged: s.policy.Prices.SessionRetention, Balance: bal,
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// CertificateRetention is the answer of /verify/certificate (D25).
type CertificateRetention struct {
	SessionRetention
	CertificateIDs []string // every certificate of the session, sorted
}

// RetainCertificate keeps the company's certificates of a session, and the
// session, for the long-term period (D25), for one fee of
// Prices.CertificateRetention. Revoked certificates are retained too: they
// are evidence of past consent (D27). NotFound when the session has no
// certificate of the company; Conflict when all of them and the session are
// retained already.
func (s *Service) RetainCertificate(ctx context.Context, caller, companyID, sessionID string) (*CertificateRetention, error) {
	if err := checkOwner(caller, companyID, sessionID); err != nil {
		return nil, err
	}
	var out *CertificateRetention
	err := s.store.Update(ctx, func(tx consent.Tx) error {
		ses, err := consent.SessionOf(ctx, tx, sessionID, companyID)
		if consent.ErrorCode(err) == consent.NotFound {
			return consent.Errorf(consent.NotFound, "no certificate of the company for this session")
		} else if err != nil {
			return err
		}
		ids, err := tx.CertificatesBySession(ctx, sessionID)
		if err != nil {
			return err
		}
		var certs []*consent.Certificate
		for _, id := range ids {
			c, err := tx.Certificate(ctx, id)
			if err != nil {
				return err
			}
			if c.CompanyID == companyID {
				certs = append(certs, c)
			}
		}
		if len(certs) == 0 {
			return consent.Errorf(consent.NotFound, "no certificate of the company for this session")
		}
		pending := ses.RetentionStatus != consent.RetentionRetained
		for _, c := range certs {
			pending = pending || c.RetentionStatus != consent.RetentionRetained
		}
		if !pending {
			return consent.Errorf(consent.Conflict, "certificates already retained")
		}
		now := consent.UTC(s.policy.Now())
		bal, err := consent.Charge(ctx, tx, &wallet.Entry{
			CompanyID: companyID, Kind: wallet.CertificateRetention, Amount: s.policy.Prices.CertificateRetention,
			Reference: ses.ID, CreatedAt: now,
		})
		if err != nil {
			return err
		}
		until := consent.RetainUntil(now, s.policy.LongTermRetention)
		out = &CertificateRetention{SessionRetention: SessionRetention{
			SessionID: ses.ID, RetentionStatus: consent.RetentionRetained, RetainedUntil: until,
			Charged: s.policy.Prices.CertificateRetention, Balance: bal,
		}}
		for _, c := range certs {
			out.CertificateIDs = append(out.CertificateIDs, c.ID)
			if c.RetentionStatus == consent.RetentionRetained {
				continue // keeps its own, earlier term
			}
			c.RetentionStatus, c.ExpiresAt = consent.RetentionRetained, until
			if err := tx.UpdateCertificate(ctx, c); err != nil {
				return err
			}
		}
		if ses.RetentionStatus != consent.RetentionRetained {
			ses.RetentionStatus, ses.ExpiresAt = consent.RetentionRetained, until
			return tx.UpdateSession(ctx, ses)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func checkOwner(caller, companyID, sessionID string) error {
	if err := consent.CheckID("company_id", companyID); err != nil {
		return err
	}
	if err := consent.CheckID("session_id", sessionID); err != nil {
		return err
	}
	if caller != companyID {
		return consent.Errorf(consent.Forbidden, "the credentials are not those of company_id")
	}
	return nil
}
