package memstore

import (
	"context"

	"github.com/consentkit/consentkit/consent"
)

// The attestations and insights of certificates: an Evidence each, with
// an attestation's screenshot besides.

// cloneEvidence returns a copy of e that shares nothing with it.
func cloneEvidence(e consent.Evidence) consent.Evidence {
	e.Statement, e.Signature = list(e.Statement), list(e.Signature)
	e.CreatedAt, e.UpdatedAt = utc(e.CreatedAt), utc(e.UpdatedAt)
	return e
}

// setEvidence replaces what an update writes of old with e's: the status,
// the statement and its signature, and the time.
func setEvidence(old *consent.Evidence, e *consent.Evidence) {
	old.Status, old.Statement, old.Signature, old.KeyID = e.Status, list(e.Statement), list(e.Signature), e.KeyID
	old.UpdatedAt = utc(e.UpdatedAt)
}

// createEvidence stores v, whose Evidence is e, under its certificate's
// id in m: only for a certificate of its company, checked first, as the
// SQL stores' INSERT … SELECT has it.
func createEvidence[V any](t *tx, m map[string]V, e *consent.Evidence, v V, what string) error {
	if err := t.write(); err != nil {
		return err
	}
	if c := t.s.certs[e.CertificateID]; c == nil || c.CompanyID != e.CompanyID {
		return notFound("certificate")
	}
	return create(t, m, e.CertificateID, v, what)
}

func cloneAttestation(a *consent.Attestation) *consent.Attestation {
	return &consent.Attestation{Evidence: cloneEvidence(a.Evidence), Screenshot: a.Screenshot}
}

func (t *tx) CreateAttestation(_ context.Context, a *consent.Attestation) error {
	return createEvidence(t, t.s.attestations, &a.Evidence, cloneAttestation(a), "attestation")
}

func (t *tx) Attestation(_ context.Context, certificateID string) (*consent.Attestation, error) {
	return get(t.s.attestations, certificateID, "attestation", cloneAttestation)
}

func (t *tx) UpdateAttestation(_ context.Context, a *consent.Attestation) error {
	return change(t, t.s.attestations, a.CertificateID, "attestation", func(old *consent.Attestation) *consent.Attestation {
		n := cloneAttestation(old)
		setEvidence(&n.Evidence, &a.Evidence)
		n.Screenshot = a.Screenshot
		return n
	})
}

func cloneInsights(in *consent.Insights) *consent.Insights {
	return &consent.Insights{Evidence: cloneEvidence(in.Evidence)}
}

func (t *tx) CreateInsights(_ context.Context, in *consent.Insights) error {
	return createEvidence(t, t.s.insights, &in.Evidence, cloneInsights(in), "insights")
}

func (t *tx) Insights(_ context.Context, certificateID string) (*consent.Insights, error) {
	return get(t.s.insights, certificateID, "insights", cloneInsights)
}

func (t *tx) UpdateInsights(_ context.Context, in *consent.Insights) error {
	return change(t, t.s.insights, in.CertificateID, "insights", func(old *consent.Insights) *consent.Insights {
		n := cloneInsights(old)
		setEvidence(&n.Evidence, &in.Evidence)
		return n
	})
}
