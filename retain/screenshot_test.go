package retain_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/retain"
)

// The Retain API's screenshot route serves the screenshot that a signed
// statement of the certificate states, checked as every reader of an
// attestation checks it (D49): to the certificate's company alone, which
// another company cannot tell from an unknown certificate (D9); still
// once the consumer has opted out (D27); never from a row that was
// changed — a statement that no longer verifies, or a pending row naming
// a file.
func TestScreenshotChecked(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e := attestSetup(t, open(t), 0)
		r := retain.New(e.svc)
		shot := func(company, id string) (*consent.Attestation, error) { return r.Screenshot(ctx, company, company, id) }
		edit := func(id string, change func(a *consent.Attestation)) {
			t.Helper()
			if err := e.svc.Store().Update(ctx, func(tx consent.Tx) error {
				a, err := tx.Attestation(ctx, id)
				if err != nil {
					return err
				}
				change(a)
				return tx.UpdateAttestation(ctx, a)
			}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := shot("acme", e.cert.ID); consent.ErrorCode(err) != consent.NotFound {
			t.Errorf("the screenshot of a certificate never attested: %v; want not found", err)
		}
		if _, err := e.ask(t, e.cert); err != nil {
			t.Fatal(err)
		}
		if _, err := shot("acme", e.cert.ID); consent.ErrorCode(err) != consent.NotFound {
			t.Errorf("the screenshot of a pending attestation: %v; want not found", err)
		}
		att, _ := e.attest(t, &fakeAttester{measure: honest()}, e.cert)
		if a, err := shot("acme", e.cert.ID); err != nil || a.Screenshot != att.Screenshot || a.Screenshot == "" {
			t.Fatalf("the screenshot of an attested certificate: %v; want %s", err, att.Screenshot)
		}

		_, unknown := shot("globex", "cert-none")
		_, others := shot("globex", e.cert.ID)
		if consent.ErrorCode(others) != consent.NotFound || consent.ErrorMessage(others) != consent.ErrorMessage(unknown) {
			t.Errorf("another company's certificate: %v; an unknown one: %v; want both alike, not found", others, unknown)
		}

		if err := e.svc.Store().Update(ctx, func(tx consent.Tx) error {
			return tx.RevokeCertificate(ctx, e.cert.ID, e.clock.Now())
		}); err != nil {
			t.Fatal(err)
		}
		if a, err := shot("acme", e.cert.ID); err != nil || a.Screenshot != att.Screenshot {
			t.Errorf("the screenshot of a revoked certificate, to its company: %v; want it served (D27)", err)
		}

		// The statement edited to say mismatch, and the status with it:
		// the signature no longer verifies.
		edit(e.cert.ID, func(a *consent.Attestation) {
			a.Statement = bytes.Replace(a.Statement, []byte(`"`+consent.AttestationAttested+`"`), []byte(`"`+consent.AttestationMismatch+`"`), 1)
			a.Status = consent.AttestationMismatch
		})
		var bad *consentkit.StatementIntegrityError
		if _, err := shot("acme", e.cert.ID); !errors.Is(err, consent.ErrIntegrity) || !errors.As(err, &bad) {
			t.Errorf("the screenshot of an attestation whose statement does not verify: %v; want an integrity refusal", err)
		}

		// A pending row naming the attested certificate's file.
		e.clock.Add(time.Minute)
		pending := e.issue(t, "s2", 7)
		if _, err := e.ask(t, pending); err != nil {
			t.Fatal(err)
		}
		edit(pending.ID, func(a *consent.Attestation) { a.Screenshot = att.Screenshot })
		if _, err := shot("acme", pending.ID); !errors.Is(err, consent.ErrIntegrity) {
			t.Errorf("the screenshot named by a pending row, which no statement states: %v; want an integrity refusal", err)
		}
	})
}
