package storetest

import (
	"testing"
	"time"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/wallet"
)

// A Create of a taken key is a Conflict that names what exists, as
// "company already exists", the same on every store: an error a caller
// shows (a seed file's `companies[1] "a": company already exists`) reads
// the same whichever store is underneath.
func testConflictNamesWhat(t *testing.T, s consent.Store) {
	withTokenAndCertificate(t, s)
	pending := consent.Evidence{CertificateID: "cert-1", CompanyID: "acme", CreatedAt: t0, UpdatedAt: t0}
	attestation := &consent.Attestation{Evidence: pending}
	attestation.Status = consent.AttestationPending
	insights := &consent.Insights{Evidence: pending}
	insights.Status = consent.InsightsPending
	revocation := &consent.Revocation{ID: "rev-1", CompanyID: "acme", CreatedAt: t0}
	ep := endpoint("ep-1", "acme")
	key := &consent.PublishedKey{ID: "key-1", Key: make([]byte, 32), CreatedAt: t0}
	op := opSession("secret-1", t0.Add(48*time.Hour))
	topUp := entry("topup", "acme", wallet.TopUp, wallet.Dollar, t0)
	update(t, s, func(tx consent.Tx) error {
		for _, create := range []func() error{
			func() error { return tx.CreateAttestation(ctx, attestation) },
			func() error { return tx.CreateInsights(ctx, insights) },
			func() error { return tx.CreateRevocation(ctx, revocation) },
			func() error { return tx.EnqueueJob(ctx, job(consent.JobConvert, "s1", t0)) },
			func() error { return tx.CreateWebhookEndpoint(ctx, ep) },
			func() error { return tx.PublishKey(ctx, key) },
			func() error { return tx.CreateOperatorSession(ctx, op) },
			func() error { _, err := tx.Credit(ctx, topUp); return err },
		} {
			if err := create(); err != nil {
				return err
			}
		}
		return nil
	})
	for _, c := range []struct {
		what, want string
		create     func(tx consent.Tx) error
	}{
		{"CreateCompany", "company already exists", func(tx consent.Tx) error {
			return tx.CreateCompany(ctx, &consent.Company{ID: "acme", Name: "again", CreatedAt: t0})
		}},
		{"CreateProperty", "property already exists", func(tx consent.Tx) error {
			return tx.CreateProperty(ctx, &consent.Property{ID: "acme-web", CompanyID: "acme", Name: "again", CreatedAt: t0})
		}},
		{"CreateToken(taken id)", "token already exists", func(tx consent.Tx) error {
			return tx.CreateToken(ctx, &consent.Token{ID: "tok-1", CompanyID: "acme", Digest: consent.DigestOf("secret-9"), CreatedAt: t0})
		}},
		{"CreateToken(taken digest)", "token already exists", func(tx consent.Tx) error {
			return tx.CreateToken(ctx, &consent.Token{ID: "tok-9", CompanyID: "acme", Digest: consent.DigestOf("secret-1"), CreatedAt: t0})
		}},
		{"CreateSession", "session already exists", func(tx consent.Tx) error {
			return tx.CreateSession(ctx, session("s1", "acme", "acme-web"))
		}},
		{"CreateCertificate", "certificate already exists", func(tx consent.Tx) error {
			return tx.CreateCertificate(ctx, certificate("cert-1", "acme", "acme-web", "s1"))
		}},
		{"CreateRevocation", "revocation already exists", func(tx consent.Tx) error { return tx.CreateRevocation(ctx, revocation) }},
		{"EnqueueJob", "job already exists", func(tx consent.Tx) error { return tx.EnqueueJob(ctx, job(consent.JobConvert, "s1", t0)) }},
		{"CreateWebhookEndpoint", "webhook endpoint already exists", func(tx consent.Tx) error { return tx.CreateWebhookEndpoint(ctx, ep) }},
		{"PublishKey", "published key already exists", func(tx consent.Tx) error { return tx.PublishKey(ctx, key) }},
		{"CreateOperatorSession", "operator session already exists", func(tx consent.Tx) error { return tx.CreateOperatorSession(ctx, op) }},
		{"CreateAttestation", "attestation already exists", func(tx consent.Tx) error { return tx.CreateAttestation(ctx, attestation) }},
		{"CreateInsights", "insights already exists", func(tx consent.Tx) error { return tx.CreateInsights(ctx, insights) }},
		{"Credit(taken id)", "ledger entry already exists", func(tx consent.Tx) error { _, err := tx.Credit(ctx, topUp); return err }},
	} {
		err := s.Update(ctx, c.create)
		wantCode(t, c.what, err, consent.Conflict)
		if err != nil && err.Error() != c.want {
			t.Errorf("%s of a taken key: %q, want %q", c.what, err, c.want)
		}
	}
}
