package storetest

import (
	"testing"
	"time"

	"github.com/consentkit/consentkit/consent"
)

// An attestation is created once for a certificate of its company, read
// back, updated with its statement, and goes with its certificate when
// the purge takes it.
func testAttestation(t *testing.T, s consent.Store) {
	fixture(t, s)
	cert := certificate("cert-1", "acme", "acme-web", "s1")
	cert.ExpiresAt = t0.Add(time.Hour)
	update(t, s, func(tx consent.Tx) error { return tx.CreateCertificate(ctx, cert) })
	pending := &consent.Attestation{CertificateID: "cert-1", CompanyID: "acme", Status: consent.AttestationPending, CreatedAt: t0, UpdatedAt: t0}
	update(t, s, func(tx consent.Tx) error { return tx.CreateAttestation(ctx, pending) })
	wantRead(t, s, consent.Tx.Attestation, "cert-1", pending, "Attestation(pending)")
	for name, c := range map[string]struct {
		a    *consent.Attestation
		code consent.Code
	}{
		"twice":               {pending, consent.Conflict},
		"unknown certificate": {&consent.Attestation{CertificateID: "cert-9", CompanyID: "acme", Status: "pending", CreatedAt: t0, UpdatedAt: t0}, consent.NotFound},
		"another company's":   {&consent.Attestation{CertificateID: "cert-1", CompanyID: "other", Status: "pending", CreatedAt: t0, UpdatedAt: t0}, consent.NotFound},
	} {
		err := s.Update(ctx, func(tx consent.Tx) error { return tx.CreateAttestation(ctx, c.a) })
		wantCode(t, "CreateAttestation("+name+")", err, c.code)
	}
	done := *pending
	done.Status, done.Statement, done.Signature = consent.AttestationMismatch, []byte(`{"status":"mismatch","v":"ü"}`), []byte{0, 0xff, 7}
	done.KeyID, done.Screenshot, done.UpdatedAt = "key-1", "attest/cert-1.png", t0.Add(time.Minute+time.Microsecond)
	update(t, s, func(tx consent.Tx) error { return tx.UpdateAttestation(ctx, &done) })
	wantRead(t, s, consent.Tx.Attestation, "cert-1", &done, "Attestation(done)")
	err := s.Update(ctx, func(tx consent.Tx) error {
		return tx.UpdateAttestation(ctx, &consent.Attestation{CertificateID: "cert-9", CompanyID: "acme", Status: "attested", CreatedAt: t0, UpdatedAt: t0})
	})
	wantCode(t, "UpdateAttestation(unknown)", err, consent.NotFound)
	update(t, s, func(tx consent.Tx) error {
		_, err := tx.PurgeCertificates(ctx, t0.Add(2*time.Hour), 10)
		return err
	})
	view(t, s, func(tx consent.Tx) error {
		_, err := tx.Attestation(ctx, "cert-1")
		wantCode(t, "Attestation(of a purged certificate)", err, consent.NotFound)
		return nil
	})
}
