package pgstore

import (
	"context"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/store/internal/sqlrow"
)

// CreateInsights inserts the row only for a certificate of the company:
// none inserted is NotFound, a second is a Conflict (the primary key).
func (t *tx) CreateInsights(ctx context.Context, in *consent.Insights) error {
	tag, err := t.exec(ctx, `INSERT INTO insights (`+sqlrow.InsightsColumns+`)
		SELECT id, company_id, $1, $2, $3, $4, $5, $6 FROM certificates WHERE id = $7 AND company_id = $8`,
		in.Status, string(in.Statement), signatureBytes(in.Signature), in.KeyID, in.CreatedAt, in.UpdatedAt,
		in.CertificateID, in.CompanyID)
	return affected(tag, err, "certificate")
}

func (t *tx) Insights(ctx context.Context, certificateID string) (*consent.Insights, error) {
	in, err := dialect.ScanInsights(t.tx.QueryRow(ctx, `SELECT `+sqlrow.InsightsColumns+` FROM insights WHERE certificate_id = $1`, certificateID))
	return in, one(err, "insights")
}

func (t *tx) UpdateInsights(ctx context.Context, in *consent.Insights) error {
	tag, err := t.exec(ctx, `UPDATE insights SET status = $2, statement = $3, signature = $4, key_id = $5, updated_at = $6
		WHERE certificate_id = $1`, in.CertificateID, in.Status, string(in.Statement), signatureBytes(in.Signature), in.KeyID, in.UpdatedAt)
	return affected(tag, err, "insights")
}
