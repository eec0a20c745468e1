package httpadapter_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/retain"
	"github.com/consentkit/consentkit/signed"
	"github.com/consentkit/consentkit/wallet"
)

// attestationOf decodes the "attestation" member of an answer.
func attestationOf(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var b map[string]any
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatalf("answer %s: %v", body, err)
	}
	a, _ := b["attestation"].(map[string]any)
	return a
}

// A verification that asks for an attestation ("attest": true) is answered
// pending, at the verification's price and no more, and later answers
// carry the status; once the statement is recorded, certificate-info
// answers it in full, and the screenshot is served to the certificate's
// company only (D49). On every store.
func TestAttestationThroughHTTP(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e := setup(t, open(t))
		videos := retain.Dir{Root: t.TempDir()}
		h := e.handler(t, httpadapter.Config{Videos: videos})
		match := func(body string) []byte {
			t.Helper()
			rec := call(h, "POST", "/verify/match", "", acmeToken, body)
			if rec.Code != 200 {
				t.Fatalf("match %s: %d %s", body, rec.Code, rec.Body)
			}
			return rec.Body.Bytes()
		}
		before := e.balance(t, "acme")
		if a := attestationOf(t, match(`{"certificate_id":"cert-1","company_id":"acme","consent":"`+consentText+`"}`)); a != nil {
			t.Errorf("an attestation nobody asked for: %v", a)
		}
		a := attestationOf(t, match(`{"certificate_id":"cert-1","company_id":"acme","consent":"`+consentText+`","attest":true}`))
		if a["status"] != "pending" {
			t.Errorf("asked: %v, want pending", a)
		}
		if spent := before - e.balance(t, "acme"); spent != 2*e.svc.Prices().ExactMatch {
			t.Errorf("two matches cost %v, want two matches' price and nothing for the attestation", spent)
		}
		rec := call(h, "POST", "/verify/partial-match", "", acmeToken, `{"certificate_id":"cert-1","company_id":"acme","term":"acme"}`)
		if a := attestationOf(t, rec.Body.Bytes()); rec.Code != 200 || a["status"] != "pending" {
			t.Errorf("partial match after the ask: %d %v", rec.Code, a)
		}
		screenshot := "/api/integrations/acme/certificates/cert-1/screenshot"
		if rec := call(h, "GET", screenshot, "", acmeToken, ""); rec.Code != 404 {
			t.Errorf("the screenshot of a pending attestation: %d %s", rec.Code, rec.Body)
		}

		// The job's outcome, recorded as the attestation job records it.
		png := []byte("\x89PNG\r\n\x1a\n a picture of the consent")
		shot, err := videos.PutScreenshot(ctx, "cert-1", png)
		must(t, err)
		sum := sha256.Sum256(png)
		must(t, e.store.Update(ctx, func(tx consent.Tx) error {
			cert, err := tx.Certificate(ctx, "cert-1")
			if err != nil {
				return err
			}
			content := consent.Signed(cert)
			st, err := signed.NewStatement(&content, now)
			if err != nil {
				return err
			}
			st.Status, st.ScreenshotSHA256 = signed.Mismatch, hex.EncodeToString(sum[:])
			st.Differences = []signed.Difference{{Consent: 0, Field: "visibility.visible", Claimed: "true", Measured: "false"}}
			if _, err := e.svc.SignStatement(&st); err != nil {
				return err
			}
			body, err := json.Marshal(st)
			if err != nil {
				return err
			}
			att, err := tx.Attestation(ctx, "cert-1")
			if err != nil {
				return err
			}
			att.Status, att.Statement, att.Screenshot, att.UpdatedAt = consent.AttestationMismatch, body, shot.Path, now
			return tx.UpdateAttestation(ctx, att)
		}))
		if a := attestationOf(t, match(`{"certificate_id":"cert-1","company_id":"acme","consent":"x"}`)); a["status"] != "mismatch" {
			t.Errorf("match after the statement: %v", a)
		}
		rec = call(h, "POST", "/verify/certificate-info", "", acmeToken, `{"certificate_id":"cert-1","company_id":"acme","property_id":"acme-web"}`)
		info := attestationOf(t, rec.Body.Bytes())
		diffs, _ := info["differences"].([]any)
		statement, _ := info["statement"].(map[string]any)
		if rec.Code != 200 || info["status"] != "mismatch" || info["screenshot_sha256"] != hex.EncodeToString(sum[:]) || len(diffs) != 1 ||
			statement["certificate_id"] != "cert-1" || statement["v"] != signed.StatementVersion {
			t.Errorf("certificate-info: %d %v", rec.Code, info)
		}

		rec = call(h, "GET", screenshot, "", acmeToken, "")
		if rec.Code != 200 || !bytes.Equal(rec.Body.Bytes(), png) || rec.Header().Get("Content-Type") != "image/png" ||
			rec.Header().Get("X-Content-SHA256") != hex.EncodeToString(sum[:]) {
			t.Errorf("the screenshot: %d %q %q", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
		}
		for _, tc := range []struct {
			name, path, token string
			status            int
		}{
			{"no token", screenshot, "", 401},
			{"another company's token", screenshot, otherToken, 403},
			{"another company's path", "/api/integrations/other/certificates/cert-1/screenshot", otherToken, 404},
			{"the buyer it authorized", "/api/integrations/buyer/certificates/cert-1/screenshot", buyerToken, 404},
			{"no attestation", "/api/integrations/acme/certificates/cert-2/screenshot", acmeToken, 404},
		} {
			rec := call(h, "GET", tc.path, "", tc.token, "")
			if rec.Code != tc.status || bytes.Contains(rec.Body.Bytes(), png) {
				t.Errorf("%s: %d %s, want %d", tc.name, rec.Code, rec.Body, tc.status)
			}
		}
		// Another company learns nothing of acme's certificate: it is
		// answered as an unknown one (D9).
		for _, c := range []struct{ company, token string }{{"other", otherToken}, {"buyer", buyerToken}} {
			path := "/api/integrations/" + c.company + "/certificates/"
			unknown := call(h, "GET", path+"cert-none/screenshot", "", c.token, "")
			acmes := call(h, "GET", path+"cert-1/screenshot", "", c.token, "")
			if acmes.Code != unknown.Code || acmes.Body.String() != unknown.Body.String() {
				t.Errorf("%s asks for acme's screenshot: %d %s; for an unknown certificate's: %d %s; want one answer",
					c.company, acmes.Code, acmes.Body, unknown.Code, unknown.Body)
			}
		}
		if rec := call(e.handler(t, httpadapter.Config{}), "GET", screenshot, "", acmeToken, ""); rec.Code != 503 {
			t.Errorf("without Config.Videos: %d %s, want 503", rec.Code, rec.Body)
		}
	})
}

// With the attestation queue full, a verification that asks is still
// answered, and charged as usual, its attestation unavailable with the
// reason; nothing is recorded.
func TestAttestationQueueFullThroughHTTP(t *testing.T) {
	e := setup(t, teststore.Memory(t))
	svc, err := consentkit.NewService(e.store, consentkit.Config{Now: e.clock.Now, AttestationQueue: 1})
	must(t, err)
	h, err := httpadapter.New(httpadapter.Config{Service: svc})
	must(t, err)
	for i, id := range []string{"cert-1", "cert-2"} {
		before := e.balance(t, "acme")
		rec := call(h, "POST", "/verify/match", "", acmeToken, `{"certificate_id":"`+id+`","company_id":"acme","consent":"`+consentText+`","attest":true}`)
		a := attestationOf(t, rec.Body.Bytes())
		want := "pending"
		if i == 1 {
			want = "unavailable"
		}
		reason, _ := a["reason"].(string)
		if rec.Code != 200 || a["status"] != want || (i == 1) != strings.Contains(reason, "queue is full") {
			t.Errorf("%s: %d %v, want %s", id, rec.Code, a, want)
		}
		if spent := before - e.balance(t, "acme"); spent != svc.Prices().ExactMatch {
			t.Errorf("%s cost %v", id, spent)
		}
	}
	if _, err := svc.Attestation(ctx, "acme", "cert-2"); consent.ErrorCode(err) != consent.NotFound {
		t.Errorf("a refused ask left an attestation: %v", err)
	}
}

// A verification refused for want of money asks for no attestation: a
// refusal commits its audit entry alone (D3), so "attest": true cannot
// queue a replay for free, of the caller's certificate or, as a third
// party, of the originator's, whose share of the queue it would fill
// (D49). On every store.
func TestRefusedVerificationAsksNoAttestation(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e := setup(t, open(t))
		h := e.handler(t, httpadapter.Config{})
		if _, err := e.svc.SetThirdParty(ctx, "acme", true, []string{"buyer", "poor"}); err != nil {
			t.Fatal(err)
		}
		for _, body := range []string{
			`{"certificate_id":"cert-poor","company_id":"poor","consent":"` + consentText + `","attest":true}`,
			`{"certificate_id":"cert-1","company_id":"poor","originator_company_id":"acme","consent":"` + consentText + `","attest":true}`,
		} {
			if rec := call(h, "POST", "/verify/match", "", poorToken, body); rec.Code != 402 {
				t.Errorf("%s: %d %s, want 402", body, rec.Code, rec.Body)
			}
		}
		if rec := call(h, "POST", "/verify/partial-match", "", poorToken,
			`{"certificate_id":"cert-2","company_id":"poor","originator_company_id":"acme","term":"acme","attest":true}`); rec.Code != 402 {
			t.Errorf("partial match: %d %s, want 402", rec.Code, rec.Body)
		}
		if bal := e.balance(t, "poor"); bal != wallet.Cent {
			t.Errorf("poor's balance %v after refusals, want %v", bal, wallet.Cent)
		}
		for _, c := range []struct{ company, id string }{{"poor", "cert-poor"}, {"acme", "cert-1"}, {"acme", "cert-2"}} {
			if a, err := e.svc.Attestation(ctx, c.company, c.id); consent.ErrorCode(err) != consent.NotFound {
				t.Errorf("%s: a refused verification asked for an attestation: %+v %v", c.id, a, err)
			}
		}
		must(t, e.store.View(ctx, func(tx consent.Tx) error {
			if n, err := tx.CountJobs(ctx, consent.JobAttest); err != nil || n != 0 {
				t.Errorf("%d attestation jobs queued by refusals (%v)", n, err)
			}
			return nil
		}))
		// Paid, the same ask is recorded.
		rec := call(h, "POST", "/verify/match", "", buyerToken,
			`{"certificate_id":"cert-1","company_id":"buyer","originator_company_id":"acme","consent":"`+consentText+`","attest":true}`)
		if a := attestationOf(t, rec.Body.Bytes()); rec.Code != 200 || a["status"] != "pending" {
			t.Errorf("a paid ask: %d %v", rec.Code, a)
		}
	})
}
