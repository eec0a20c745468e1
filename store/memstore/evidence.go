package memstore

import (
	"context"

	"github.com/consentkit/consentkit/consent"
)

// The attestations and insights of certificates: an Evidence each, with
// an attestation's screenshot besides. One implementation, evidenceRows,
// serves both kinds; their Tx methods, by operation, only say which rows.

// evidenceRows are the rows of one kind of evidence, V, by certificate id.
type evidenceRows[V any] struct {
	t    *tx
	m    map[string]*V
	what string
	// of returns v's Evidence; clone a copy of v that shares nothing with
	// it, its Evidence as cloneEvidence has it.
	of    func(v *V) *consent.Evidence
	clone func(v *V) *V
}

// cloneEvidence returns a copy of e that shares nothing with it.
func cloneEvidence(e consent.Evidence) consent.Evidence {
	e.Statement, e.Signature = list(e.Statement), list(e.Signature)
	e.CreatedAt, e.UpdatedAt = utc(e.CreatedAt), utc(e.UpdatedAt)
	return e
}

// create stores v under its certificate's id: only for a certificate of
// its company, checked first, as the SQL stores' INSERT … SELECT has it.
func (r evidenceRows[V]) create(v *V) error {
	if err := r.t.write(); err != nil {
		return err
	}
	e := r.of(v)
	if c := r.t.s.certs[e.CertificateID]; c == nil || c.CompanyID != e.CompanyID {
		return notFound("certificate")
	}
	return create(r.t, r.m, e.CertificateID, r.clone(v), r.what)
}

func (r evidenceRows[V]) get(certificateID string) (*V, error) {
	return get(r.m, certificateID, r.what, r.clone)
}

// update replaces the row of v's certificate by a copy of v that keeps
// the row's company and creation time: an update writes the rest, which
// is the status, the statement, its signature and key, the time, and
// what V holds besides its Evidence (an attestation's screenshot).
func (r evidenceRows[V]) update(v *V) error {
	return change(r.t, r.m, r.of(v).CertificateID, r.what, func(old *V) *V {
		n := r.clone(v)
		e, was := r.of(n), r.of(old)
		e.CompanyID, e.CreatedAt = was.CompanyID, was.CreatedAt
		return n
	})
}

func (t *tx) attestations() evidenceRows[consent.Attestation] {
	return evidenceRows[consent.Attestation]{t, t.s.attestations, "attestation",
		func(a *consent.Attestation) *consent.Evidence { return &a.Evidence },
		func(a *consent.Attestation) *consent.Attestation {
			return &consent.Attestation{Evidence: cloneEvidence(a.Evidence), Screenshot: a.Screenshot}
		}}
}

func (t *tx) insightRows() evidenceRows[consent.Insights] {
	return evidenceRows[consent.Insights]{t, t.s.insights, "insights",
		func(in *consent.Insights) *consent.Evidence { return &in.Evidence },
		func(in *consent.Insights) *consent.Insights {
			return &consent.Insights{Evidence: cloneEvidence(in.Evidence)}
		}}
}

func (t *tx) CreateAttestation(_ context.Context, a *consent.Attestation) error {
	return t.attestations().create(a)
}

func (t *tx) CreateInsights(_ context.Context, in *consent.Insights) error {
	return t.insightRows().create(in)
}

func (t *tx) Attestation(_ context.Context, certificateID string) (*consent.Attestation, error) {
	return t.attestations().get(certificateID)
}

func (t *tx) Insights(_ context.Context, certificateID string) (*consent.Insights, error) {
	return t.insightRows().get(certificateID)
}

func (t *tx) UpdateAttestation(_ context.Context, a *consent.Attestation) error {
	return t.attestations().update(a)
}

func (t *tx) UpdateInsights(_ context.Context, in *consent.Insights) error {
	return t.insightRows().update(in)
}
