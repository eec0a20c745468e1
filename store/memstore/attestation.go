package memstore

import (
	"context"

	"github.com/consentkit/consentkit/consent"
)

func cloneAttestation(a *consent.Attestation) *consent.Attestation {
	n := *a
	n.Statement, n.Signature = list(a.Statement), list(a.Signature)
	n.CreatedAt, n.UpdatedAt = utc(n.CreatedAt), utc(n.UpdatedAt)
	return &n
}

func (t *tx) CreateAttestation(_ context.Context, a *consent.Attestation) error {
	if err := t.write(); err != nil {
		return err
	}
	// The certificate first, as the SQL stores' INSERT … SELECT has it.
	if c := t.s.certs[a.CertificateID]; c == nil || c.CompanyID != a.CompanyID {
		return notFound("certificate")
	}
	return create(t, t.s.attestations, a.CertificateID, cloneAttestation(a), "attestation")
}

func (t *tx) Attestation(_ context.Context, certificateID string) (*consent.Attestation, error) {
	return get(t.s.attestations, certificateID, "attestation", cloneAttestation)
}

func (t *tx) UpdateAttestation(_ context.Context, a *consent.Attestation) error {
	return change(t, t.s.attestations, a.CertificateID, "attestation", func(old *consent.Attestation) *consent.Attestation {
		n := cloneAttestation(old)
		n.Status, n.Statement, n.Signature, n.KeyID, n.Screenshot = a.Status, list(a.Statement), list(a.Signature), a.KeyID, a.Screenshot
		n.UpdatedAt = utc(a.UpdatedAt)
		return n
	})
}
