package consentkit_test

import (
	"errors"
	"testing"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/signed"
)

// D50: insights hold only as their statement says — "pending" and "failed"
// with no statement, "done" with one. A status edited in the store to any
// other word, with no statement, must be refused as a changed certificate.
func TestInsightsStatusWithoutStatement(t *testing.T) {
	key, _ := signed.NewSigningKey("k1")
	svc, err := consentkit.NewService(teststore.Memory(t), consentkit.Config{SigningKeys: []signed.SigningKey{key}})
	if err != nil {
		t.Fatal(err)
	}
	mustDo(t, svc)
	if _, err := svc.IssueCertificate(ctx, consentkit.CertificateParams{ID: "cert-1", CompanyID: "acme", PropertyID: "web", SessionID: "s1",
		Records: []consent.Record{{Text: "I agree"}}}); err != nil {
		t.Fatal(err)
	}
	for _, status := range []string{"human", "verified", ""} {
		var check error
		err := svc.Store().Update(ctx, func(tx consent.Tx) error {
			in, err := tx.Insights(ctx, "cert-1")
			if err != nil {
				return err
			}
			in.Status = status // edited in the store; no statement
			if err := tx.UpdateInsights(ctx, in); err != nil {
				return err
			}
			c, err := tx.Certificate(ctx, "cert-1")
			if err != nil {
				return err
			}
			check = svc.CheckInsights(ctx, tx, c, in)
			return nil
		})
		if err != nil {
			t.Fatalf("status %q: %v", status, err)
		}
		if !errors.Is(check, consent.ErrIntegrity) {
			t.Errorf("insights with status %q and no statement: CheckInsights = %v; want an integrity refusal (only pending and failed hold without a statement)", status, check)
		}
	}
}
