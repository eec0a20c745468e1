package verify_test

import (
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/profile"
	"github.com/consentkit/consentkit/signed"
	"github.com/consentkit/consentkit/verify"
	"github.com/consentkit/consentkit/wallet"
)

// attestationEnv is a signing service with one company, a profile that
// requires an attestation and a certificate per case.
type attestationEnv struct {
	svc *consentkit.Service
	v   *verify.Service
}

const attestedText = "I agree to be called by Acme."

func newAttestationEnv(t *testing.T, st consent.Store, queue int) *attestationEnv {
	t.Helper()
	key, err := signed.NewSigningKey("k1")
	if err != nil {
		t.Fatal(err)
	}
	svc, err := consentkit.NewService(st, consentkit.Config{SigningKeys: []signed.SigningKey{key}, AttestationQueue: queue})
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []func() error{
		func() error {
			_, err := svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme"})
			return err
		},
		func() error {
			_, err := svc.AddProperty(ctx, consentkit.PropertyParams{ID: "web", CompanyID: "acme", Name: "Form"})
			return err
		},
		func() error { _, err := svc.TopUp(ctx, "acme", wallet.Dollar, ""); return err },
		func() error {
			_, err := svc.StartSession(ctx, consentkit.SessionParams{ID: "s1", CompanyID: "acme", PropertyID: "web"})
			return err
		},
		func() error {
			_, err := profile.Profiles{Service: svc}.Put(ctx, "acme", "attested", profile.Rules{Attestation: &profile.AttestationRule{}})
			return err
		},
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	return &attestationEnv{svc: svc, v: verify.New(svc)}
}

func (e *attestationEnv) issue(t *testing.T, id string) *consent.Certificate {
	t.Helper()
	c, err := e.svc.IssueCertificate(ctx, consentkit.CertificateParams{ID: id, CompanyID: "acme", PropertyID: "web", SessionID: "s1",
		Origin: "https://acme.example/", Records: []consent.Record{{Text: attestedText, Types: []string{"tcpa"}}}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// statement returns a statement of of's content with status, signed by
// sign (unsigned when nil), as the attestation job writes it.
func statement(t *testing.T, of *consent.Certificate, status string, sign func(*signed.Statement) ([]byte, error)) (body, sig []byte, keyID string) {
	t.Helper()
	content := consent.Signed(of)
	st, err := signed.NewStatement(&content, of.CreatedAt)
	if err != nil {
		t.Fatal(err)
	}
	st.Status = status
	for _, r := range of.Records {
		st.Consents = append(st.Consents, signed.StatedConsent{Found: true, Text: r.Text})
	}
	if status == signed.Mismatch {
		st.Differences = []signed.Difference{{Consent: 0, Field: "visibility.visible", Claimed: "true", Measured: "false"}}
	}
	if sign != nil {
		if sig, err = sign(&st); err != nil {
			t.Fatal(err)
		}
	}
	if body, err = json.Marshal(&st); err != nil {
		t.Fatal(err)
	}
	return body, sig, st.KeyID
}

// record writes a as the certificate's attestation, through the store's
// own transaction, as anyone with access to its tables could.
func (e *attestationEnv) record(t *testing.T, a *consent.Attestation) {
	t.Helper()
	now := e.svc.Now()
	a.CompanyID, a.CreatedAt, a.UpdatedAt = "acme", now, now
	if err := e.svc.Store().Update(ctx, func(tx consent.Tx) error { return tx.CreateAttestation(ctx, a) }); err != nil {
		t.Fatal(err)
	}
}

// An attestation's status counts only as a statement of the certificate,
// signed with the service's keys, says it (D49), on every store: a status
// edited to attested over a signed mismatch, a row saying attested with
// no statement or an unsigned one, a statement signed with another key or
// of another certificate, and a pending row that hides a statement are
// each refused, by match, partial match (asking or grading) and
// certificate-info, with 409 certificate integrity check failed, as a
// changed certificate is, and nothing is charged. A sound statement is
// answered and graded as it says.
func TestAttestationStatusHolds(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(tb testing.TB) consent.Store) {
		e := newAttestationEnv(t, open(t), 0)
		other, err := signed.NewSigningKey("k2")
		if err != nil {
			t.Fatal(err)
		}
		elsewhere := e.issue(t, "cert-elsewhere")
		for i, tc := range []struct {
			name string
			row  func(c *consent.Certificate) *consent.Attestation
		}{
			{"status edited", func(c *consent.Certificate) *consent.Attestation {
				body, sig, key := statement(t, c, signed.Mismatch, e.svc.SignStatement)
				return &consent.Attestation{Evidence: consent.Evidence{CertificateID: c.ID, Status: consent.AttestationAttested,
					Statement: body, Signature: sig, KeyID: key}}
			}},
			{"no statement", func(c *consent.Certificate) *consent.Attestation {
				return &consent.Attestation{Evidence: consent.Evidence{CertificateID: c.ID, Status: consent.AttestationAttested}}
			}},
			{"unsigned statement", func(c *consent.Certificate) *consent.Attestation {
				body, _, _ := statement(t, c, signed.Attested, nil)
				return &consent.Attestation{Evidence: consent.Evidence{CertificateID: c.ID, Status: consent.AttestationAttested, Statement: body}}
			}},
			{"another key", func(c *consent.Certificate) *consent.Attestation {
				body, sig, key := statement(t, c, signed.Attested, other.SignStatement)
				return &consent.Attestation{Evidence: consent.Evidence{CertificateID: c.ID, Status: consent.AttestationAttested,
					Statement: body, Signature: sig, KeyID: key}}
			}},
			{"another certificate", func(c *consent.Certificate) *consent.Attestation {
				body, sig, key := statement(t, elsewhere, signed.Attested, e.svc.SignStatement)
				return &consent.Attestation{Evidence: consent.Evidence{CertificateID: c.ID, Status: consent.AttestationAttested,
					Statement: body, Signature: sig, KeyID: key}}
			}},
			{"pending over a mismatch", func(c *consent.Certificate) *consent.Attestation {
				body, sig, key := statement(t, c, signed.Mismatch, e.svc.SignStatement)
				return &consent.Attestation{Evidence: consent.Evidence{CertificateID: c.ID, Status: consent.AttestationPending,
					Statement: body, Signature: sig, KeyID: key}}
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				c := e.issue(t, "cert-case-"+strconv.Itoa(i))
				e.record(t, tc.row(c))
				before, err := e.svc.Balance(ctx, "acme")
				if err != nil {
					t.Fatal(err)
				}
				calls := map[string]func() error{
					"match asking": func() error {
						_, err := e.v.Match(ctx, "acme", verify.MatchRequest{CertificateID: c.ID, CompanyID: "acme", Consent: attestedText, Attest: true})
						return err
					},
					"match grading": func() error {
						_, err := e.v.Match(ctx, "acme", verify.MatchRequest{CertificateID: c.ID, CompanyID: "acme", Consent: attestedText, Profile: "attested"})
						return err
					},
					"partial match": func() error {
						_, err := e.v.PartialMatch(ctx, "acme", verify.PartialMatchRequest{CertificateID: c.ID, CompanyID: "acme", Term: "Acme"})
						return err
					},
					"certificate-info": func() error {
						_, err := e.v.CertificateInfo(ctx, "acme", verify.InfoRequest{CertificateID: c.ID, CompanyID: "acme", PropertyID: "web"})
						return err
					},
				}
				for name, call := range calls {
					if err := call(); !errors.Is(err, consent.ErrIntegrity) || consent.ErrorCode(err) != consent.Conflict {
						t.Errorf("%s: %v; want 409 certificate integrity check failed", name, err)
					}
				}
				if after, err := e.svc.Balance(ctx, "acme"); err != nil || after != before {
					t.Errorf("balance %s → %s %v; want nothing charged", before, after, err)
				}
			})
		}
		t.Run("unsigned before UnsignedBefore", func(t *testing.T) {
			// A certificate issued before signing began, and its statement
			// measured then: both unsigned, both pass. A signed
			// certificate's statement must be signed, whatever time the
			// statement's own row gives (backdated, empty).
			unsignedSvc, err := consentkit.NewService(e.svc.Store(), consentkit.Config{})
			if err != nil {
				t.Fatal(err)
			}
			early, err := unsignedSvc.IssueCertificate(ctx, consentkit.CertificateParams{ID: "cert-unsigned-early", CompanyID: "acme", PropertyID: "web",
				SessionID: "s1", Origin: "https://acme.example/", Records: []consent.Record{{Text: attestedText, Types: []string{"tcpa"}}}})
			if err != nil || len(early.Signature) != 0 {
				t.Fatalf("an unsigned certificate: %+v %v", early, err)
			}
			body, _, _ := statement(t, early, signed.Attested, nil)
			e.record(t, &consent.Attestation{Evidence: consent.Evidence{CertificateID: early.ID, Status: consent.AttestationAttested, Statement: body}})
			signedCert := e.issue(t, "cert-signed-unsigned-statement")
			backdated := func(measuredAt string) []byte {
				var st signed.Statement
				b, _, _ := statement(t, signedCert, signed.Attested, nil)
				if err := json.Unmarshal(b, &st); err != nil {
					t.Fatal(err)
				}
				st.MeasuredAt = measuredAt
				out, err := json.Marshal(&st)
				if err != nil {
					t.Fatal(err)
				}
				return out
			}
			key, err := signed.NewSigningKey("k9")
			if err != nil {
				t.Fatal(err)
			}
			lenient, err := consentkit.NewService(e.svc.Store(), consentkit.Config{SigningKeys: []signed.SigningKey{key},
				PublicKeys: e.svc.PublicKeys(), UnsignedBefore: early.CreatedAt.Add(time.Second)})
			if err != nil {
				t.Fatal(err)
			}
			err = e.svc.Store().View(ctx, func(tx consent.Tx) error {
				a, err := tx.Attestation(ctx, early.ID)
				if err != nil {
					return err
				}
				if err := lenient.CheckAttestation(ctx, tx, early, a); err != nil {
					t.Errorf("an unsigned certificate's unsigned statement, both before UnsignedBefore: %v", err)
				}
				if err := e.svc.CheckAttestation(ctx, tx, early, a); !errors.Is(err, consent.ErrIntegrity) {
					t.Errorf("an unsigned statement, no UnsignedBefore: %v", err)
				}
				for _, at := range []string{"2000-01-01T00:00:00Z", ""} {
					forged := &consent.Attestation{Evidence: consent.Evidence{CertificateID: signedCert.ID, Status: consent.AttestationAttested,
						Statement: backdated(at)}}
					if err := lenient.CheckAttestation(ctx, tx, signedCert, forged); !errors.Is(err, consent.ErrIntegrity) {
						t.Errorf("a signed certificate's unsigned statement measured at %q: %v; want refused", at, err)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
		t.Run("sound", func(t *testing.T) {
			for _, status := range []string{signed.Attested, signed.Mismatch} {
				c := e.issue(t, "cert-sound-"+status)
				body, sig, key := statement(t, c, status, e.svc.SignStatement)
				e.record(t, &consent.Attestation{Evidence: consent.Evidence{CertificateID: c.ID, Status: status, Statement: body, Signature: sig, KeyID: key}})
				res, err := e.v.Match(ctx, "acme", verify.MatchRequest{CertificateID: c.ID, CompanyID: "acme", Consent: attestedText, Profile: "attested"})
				if err != nil || res.Attestation == nil || res.Attestation.Status != status {
					t.Fatalf("a sound %s statement: %+v %v", status, res, err)
				}
				if want := map[string]string{signed.Attested: profile.Pass, signed.Mismatch: profile.Fail}[status]; res.Audit.Result != want {
					t.Errorf("a sound %s statement graded %+v, want %s", status, res.Audit, want)
				}
				info, err := e.v.CertificateInfo(ctx, "acme", verify.InfoRequest{CertificateID: c.ID, CompanyID: "acme", PropertyID: "web"})
				if err != nil || info.Attestation == nil || info.Attestation.Status != status {
					t.Errorf("certificate-info of a sound %s statement: %+v %v", status, info, err)
				}
			}
		})
	})
}

// With the attestation queue full, a verification that asks and grades by
// a profile requiring an attestation is answered unavailable with the
// reason, and the rule is pending, not failed: nothing was recorded and
// asking again may succeed (D49, D51).
func TestAttestationQueueFullGraded(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(tb testing.TB) consent.Store) {
		e := newAttestationEnv(t, open(t), 1)
		v := e.v
		first, second := e.issue(t, "cert-first"), e.issue(t, "cert-second")
		if _, err := v.Match(ctx, "acme", verify.MatchRequest{CertificateID: first.ID, CompanyID: "acme", Consent: attestedText, Attest: true}); err != nil {
			t.Fatal(err)
		}
		res, err := v.Match(ctx, "acme", verify.MatchRequest{CertificateID: second.ID, CompanyID: "acme", Consent: attestedText,
			Attest: true, Profile: "attested"})
		if err != nil || res.Attestation == nil || res.Attestation.Status != consent.AttestationUnavailable || res.Audit == nil {
			t.Fatalf("match with the queue full: %+v %v", res, err)
		}
		rule := res.Audit.Rules[0]
		if res.Audit.Result != profile.Warn || rule.Result != profile.Pending || rule.Found.Status != consent.AttestationUnavailable ||
			rule.Found.Reason != res.Attestation.Reason || res.Attestation.Reason == "" {
			t.Errorf("graded with the queue full: %+v; want the rule pending with the reason %q", res.Audit, res.Attestation.Reason)
		}
	})
}

// D49: a pending attestation that lost its job does not stay so: asking
// for it again, by any route, queues its job again. A verification with
// "attest": true is such a route (it asked only when there was no row).
func TestMatchAttestRequeuesLostJob(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e := newAttestationEnv(t, open(t), 0)
		c := e.issue(t, "c1")
		// A pending row whose job is gone.
		e.record(t, &consent.Attestation{Evidence: consent.Evidence{CertificateID: c.ID, Status: consent.AttestationPending}})
		res, err := e.v.Match(ctx, "acme", verify.MatchRequest{CertificateID: c.ID, CompanyID: "acme", Consent: attestedText, Attest: true})
		if err != nil || res.Attestation == nil || res.Attestation.Status != consent.AttestationPending {
			t.Fatalf("match asking: %+v %v", res, err)
		}
		err = e.svc.Store().View(ctx, func(tx consent.Tx) error {
			_, err := tx.Job(ctx, consent.JobAttest, c.ID)
			return err
		})
		if consent.ErrorCode(err) == consent.NotFound {
			t.Fatal("a verification asking for the attestation left a pending row without its job: it stays pending for good")
		}
		if err != nil {
			t.Fatal(err)
		}
	})
}
