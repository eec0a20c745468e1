package consentkit

import (
	"context"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/signed"
)

// insightsIssued enqueues, inside tx, the insights of c, just issued
// (D50): a pending row and the consent.JobInsights job that computes and
// signs them (insights.Handler). Every certificate gets one; the job is
// cheap and bounded (a streaming pass over the recording), so the queue is
// not bounded. A failure fails the issue: the two are one transaction.
func (s *Service) insightsIssued(ctx context.Context, tx consent.Tx, c *consent.Certificate) error {
	now := s.Now()
	in := &consent.Insights{Evidence: consent.Evidence{CertificateID: c.ID, CompanyID: c.CompanyID, Status: consent.InsightsPending, CreatedAt: now, UpdatedAt: now}}
	if err := tx.CreateInsights(ctx, in); err != nil {
		return err
	}
	return tx.EnqueueJob(ctx, &consent.Job{Kind: consent.JobInsights, Key: c.ID, RunAfter: now, CreatedAt: now, CompanyID: c.CompanyID})
}

// SignInsights signs st with the key that signs new certificates, naming
// it in st.KeyID, and returns the signature; without signing keys st is
// left unsigned (nil, and KeyID ""), as certificates are.
func (s *Service) SignInsights(st *signed.InsightsStatement) ([]byte, error) {
	if len(s.cfg.SigningKeys) == 0 {
		st.KeyID = ""
		_, err := st.Encoding() // still refuse what no signature could cover
		return nil, err
	}
	return s.cfg.SigningKeys[0].SignInsights(st)
}

// Insights returns the insights of one of the company's certificates:
// NotFound when it has none (it was issued before insights were
// computed), and NotFound "certificate not found" when the certificate
// does not exist or is another company's, alike (D9).
func (s *Service) Insights(ctx context.Context, companyID, certificateID string) (*consent.Insights, error) {
	var in *consent.Insights
	err := s.store.View(ctx, func(tx consent.Tx) error {
		if _, err := CertificateOf(ctx, tx, certificateID, companyID); err != nil {
			return err
		}
		var err error
		in, err = tx.Insights(ctx, certificateID)
		if err == nil && in.CompanyID != companyID {
			return consent.Errorf(consent.NotFound, "certificate not found")
		}
		return err
	})
	return in, err
}
