package pgstore

import (
	"context"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/store/internal/sqlrow"
)

// CreateAttestation inserts the row only for a certificate of the company:
// none inserted is NotFound, a second is a Conflict (the primary key).
func (t *tx) CreateAttestation(ctx context.Context, a *consent.Attestation) error {
	tag, err := t.exec(ctx, `INSERT INTO attestations (`+sqlrow.AttestationColumns+`)
		SELECT id, company_id, $1, $2, $3, $4, $5, $6, $7 FROM certificates WHERE id = $8 AND company_id = $9`,
		a.Status, string(a.Statement), signatureBytes(a.Signature), a.KeyID, a.Screenshot, a.CreatedAt, a.UpdatedAt,
		a.CertificateID, a.CompanyID)
	return affected(tag, err, "certificate")
}

func (t *tx) Attestation(ctx context.Context, certificateID string) (*consent.Attestation, error) {
	a, err := dialect.ScanAttestation(t.tx.QueryRow(ctx, `SELECT `+sqlrow.AttestationColumns+` FROM attestations WHERE certificate_id = $1`, certificateID))
	return a, one(err, "attestation")
}

func (t *tx) UpdateAttestation(ctx context.Context, a *consent.Attestation) error {
	tag, err := t.exec(ctx, `UPDATE attestations SET status = $2, statement = $3, signature = $4, key_id = $5, screenshot = $6, updated_at = $7
		WHERE certificate_id = $1`, a.CertificateID, a.Status, string(a.Statement), signatureBytes(a.Signature), a.KeyID, a.Screenshot, a.UpdatedAt)
	return affected(tag, err, "attestation")
}
