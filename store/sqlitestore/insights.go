package sqlitestore

import (
	"context"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/store/internal/sqlrow"
)

// CreateInsights inserts the row only for a certificate of the company:
// none inserted is NotFound, a second is a Conflict (the primary key).
func (t *tx) CreateInsights(ctx context.Context, in *consent.Insights) error {
	r, err := t.exec(ctx, `INSERT INTO insights (`+sqlrow.InsightsColumns+`)
		SELECT id, company_id, ?, ?, ?, ?, ?, ? FROM certificates WHERE id = ? AND company_id = ?`,
		in.Status, string(in.Statement), signatureBytes(in.Signature), in.KeyID, in.CreatedAt.UnixMicro(), in.UpdatedAt.UnixMicro(),
		in.CertificateID, in.CompanyID)
	return affected(r, err, "certificate")
}

func (t *tx) Insights(ctx context.Context, certificateID string) (*consent.Insights, error) {
	in, err := dialect.ScanInsights(t.tx.QueryRowContext(ctx, `SELECT `+sqlrow.InsightsColumns+` FROM insights WHERE certificate_id = ?`, certificateID))
	return in, one(err, "insights")
}

func (t *tx) UpdateInsights(ctx context.Context, in *consent.Insights) error {
	r, err := t.exec(ctx, `UPDATE insights SET status = ?, statement = ?, signature = ?, key_id = ?, updated_at = ?
		WHERE certificate_id = ?`, in.Status, string(in.Statement), signatureBytes(in.Signature), in.KeyID, in.UpdatedAt.UnixMicro(), in.CertificateID)
	return affected(r, err, "insights")
}
