package sqlitestore

import (
	"context"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/store/internal/sqlrow"
)

// CreateAttestation inserts the row only for a certificate of the company:
// none inserted is NotFound, a second is a Conflict (the primary key).
func (t *tx) CreateAttestation(ctx context.Context, a *consent.Attestation) error {
	r, err := t.exec(ctx, `INSERT INTO attestations (`+sqlrow.AttestationColumns+`)
		SELECT id, company_id, ?, ?, ?, ?, ?, ?, ? FROM certificates WHERE id = ? AND company_id = ?`,
		a.Status, string(a.Statement), signatureBytes(a.Signature), a.KeyID, a.Screenshot, a.CreatedAt.UnixMicro(), a.UpdatedAt.UnixMicro(),
		a.CertificateID, a.CompanyID)
	return affected(r, err, "certificate")
}

func (t *tx) Attestation(ctx context.Context, certificateID string) (*consent.Attestation, error) {
	a, err := dialect.ScanAttestation(t.tx.QueryRowContext(ctx, `SELECT `+sqlrow.AttestationColumns+` FROM attestations WHERE certificate_id = ?`, certificateID))
	return a, one(err, "attestation")
}

func (t *tx) UpdateAttestation(ctx context.Context, a *consent.Attestation) error {
	r, err := t.exec(ctx, `UPDATE attestations SET status = ?, statement = ?, signature = ?, key_id = ?, screenshot = ?, updated_at = ?
		WHERE certificate_id = ?`, a.Status, string(a.Statement), signatureBytes(a.Signature), a.KeyID, a.Screenshot, a.UpdatedAt.UnixMicro(), a.CertificateID)
	return affected(r, err, "attestation")
}
