package verify_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/signed"
	"github.com/consentkit/consentkit/verify"
)

// Insights count only as a statement of the certificate, signed with the
// service's keys, says them (D50), as an attestation does (D49), on every
// store: a verdict edited after signing, a row done with no statement, an
// unsigned statement of a signed certificate, one signed with another key
// are each refused by match asking for the verdict and by
// certificate-info, with 409 certificate integrity check failed, and
// nothing is charged; a sound statement's verdict is answered.
func TestInsightsHold(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(tb testing.TB) consent.Store) {
		e := newAttestationEnv(t, open(t), 0)
		other, err := signed.NewSigningKey("k2")
		if err != nil {
			t.Fatal(err)
		}
		// statement returns c's insights statement, judged bot, and its
		// signature by sign (none when nil).
		statement := func(c *consent.Certificate, sign func(*signed.InsightsStatement) ([]byte, error)) (*signed.InsightsStatement, []byte) {
			t.Helper()
			content := consent.Signed(c)
			st, err := signed.NewInsightsStatement(&content, c.CreatedAt)
			if err != nil {
				t.Fatal(err)
			}
			st.Bot = signed.InsightsBot{Verdict: "bot", Reasons: []string{"webdriver"}}
			st.Signals = signed.InsightsSignals{Inputs: []signed.InsightsInput{}, KeysPerMinute: "0", SecondsOnPage: "1", SecondsToSubmit: "0",
				Reported: &signed.InsightsReported{Webdriver: true}}
			var sig []byte
			if sign != nil {
				if sig, err = sign(&st); err != nil {
					t.Fatal(err)
				}
			}
			return &st, sig
		}
		write := func(c *consent.Certificate, status string, st *signed.InsightsStatement, sig []byte) {
			t.Helper()
			err := e.svc.Store().Update(ctx, func(tx consent.Tx) error {
				in, err := tx.Insights(ctx, c.ID)
				if err != nil {
					return err
				}
				in.Status, in.Statement, in.Signature, in.KeyID = status, nil, sig, ""
				if st != nil {
					if in.Statement, err = json.Marshal(st); err != nil {
						return err
					}
					in.KeyID = st.KeyID
				}
				return tx.UpdateInsights(ctx, in)
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		for i, tc := range []struct {
			name string
			row  func(c *consent.Certificate)
		}{
			{"verdict edited", func(c *consent.Certificate) {
				st, sig := statement(c, e.svc.SignInsights)
				st.Bot = signed.InsightsBot{Verdict: "human", Reasons: []string{}}
				write(c, consent.InsightsDone, st, sig)
			}},
			{"done with no statement", func(c *consent.Certificate) { write(c, consent.InsightsDone, nil, nil) }},
			{"unsigned statement", func(c *consent.Certificate) {
				st, _ := statement(c, nil)
				write(c, consent.InsightsDone, st, nil)
			}},
			{"another key", func(c *consent.Certificate) {
				st, sig := statement(c, other.SignInsights)
				write(c, consent.InsightsDone, st, sig)
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				c := e.issue(t, "cert-insights-"+string(rune('a'+i)))
				tc.row(c)
				before, err := e.svc.Balance(ctx, "acme")
				if err != nil {
					t.Fatal(err)
				}
				_, matchErr := e.v.Match(ctx, "acme", verify.MatchRequest{CertificateID: c.ID, CompanyID: "acme", Consent: attestedText, Insights: true})
				_, infoErr := e.v.CertificateInfo(ctx, "acme", verify.InfoRequest{CertificateID: c.ID, CompanyID: "acme", PropertyID: "web"})
				for name, err := range map[string]error{"match": matchErr, "certificate-info": infoErr} {
					if !errors.Is(err, consent.ErrIntegrity) || consent.ErrorCode(err) != consent.Conflict {
						t.Errorf("%s: %v; want 409 certificate integrity check failed", name, err)
					}
				}
				if after, err := e.svc.Balance(ctx, "acme"); err != nil || after != before {
					t.Errorf("balance %s → %s %v; want nothing charged", before, after, err)
				}
			})
		}
		t.Run("sound", func(t *testing.T) {
			c := e.issue(t, "cert-insights-sound")
			st, sig := statement(c, e.svc.SignInsights)
			write(c, consent.InsightsDone, st, sig)
			res, err := e.v.Match(ctx, "acme", verify.MatchRequest{CertificateID: c.ID, CompanyID: "acme", Consent: attestedText, Insights: true})
			if err != nil || res.Insights == nil || res.Insights.Verdict != "bot" {
				t.Fatalf("a sound statement: %+v %v", res, err)
			}
		})
	})
}
