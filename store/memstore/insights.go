package memstore

import (
	"context"

	"github.com/consentkit/consentkit/consent"
)

func cloneInsights(in *consent.Insights) *consent.Insights {
	n := *in
	n.Statement, n.Signature = list(in.Statement), list(in.Signature)
	n.CreatedAt, n.UpdatedAt = utc(n.CreatedAt), utc(n.UpdatedAt)
	return &n
}

func (t *tx) CreateInsights(_ context.Context, in *consent.Insights) error {
	if err := t.write(); err != nil {
		return err
	}
	// The certificate first, as the SQL stores' INSERT … SELECT has it.
	if c := t.s.certs[in.CertificateID]; c == nil || c.CompanyID != in.CompanyID {
		return notFound("certificate")
	}
	return create(t, t.s.insights, in.CertificateID, cloneInsights(in), "insights")
}

func (t *tx) Insights(_ context.Context, certificateID string) (*consent.Insights, error) {
	return get(t.s.insights, certificateID, "insights", cloneInsights)
}

func (t *tx) UpdateInsights(_ context.Context, in *consent.Insights) error {
	return change(t, t.s.insights, in.CertificateID, "insights", func(old *consent.Insights) *consent.Insights {
		n := cloneInsights(old)
		n.Status, n.Statement, n.Signature, n.KeyID = in.Status, list(in.Statement), list(in.Signature), in.KeyID
		n.UpdatedAt = utc(in.UpdatedAt)
		return n
	})
}
