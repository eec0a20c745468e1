package httpadapter_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/insights"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/jobs"
	"github.com/consentkit/consentkit/signed"
)

// insightsOf decodes the "insights" member of an answer.
func insightsOf(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var b map[string]any
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatalf("answer %s: %v", body, err)
	}
	in, _ := b["insights"].(map[string]any)
	return in
}

// A consent captured from a plain HTTP client with a made-up event gets
// insights, pending until the job has run: match answers carry the
// status, then the verdict — bot, with its reasons — when asked
// ("insights": true) and only then; certificate-info answers the signals,
// the verdict and the signed statement, which verifies offline against
// the certificate's signed content (D50). On every store.
func TestInsightsThroughHTTP(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		ctx := context.Background()
		e, _ := capturing(t, open(t), httpadapter.Config{})
		key, err := signed.NewSigningKey("key-1")
		must(t, err)
		e.svc, err = consentkit.NewService(e.store, consentkit.Config{Now: e.clock.Now, SigningKeys: []signed.SigningKey{key}})
		must(t, err)
		h := e.handler(t, httpadapter.Config{})
		s := startSession(t, h)
		if rec := call(h, "POST", "/capture/sessions/"+s.SessionID+"/events", formOrigin, s.UploadToken, `{"seq":0,"events":`+rrwebChunk+`}`); rec.Code != 200 {
			t.Fatalf("chunk: %d %s", rec.Code, rec.Body)
		}
		if rec := call(h, "POST", "/capture/sessions/"+s.SessionID+"/consent", formOrigin, s.UploadToken,
			`{"consents":[{"text":"I agree to be called by Acme.","types":["tcpa"]}],"url":"`+formPage+`"}`,
			"User-Agent", "curl/8.5.0"); rec.Code != 201 {
			t.Fatalf("consent: %d %s", rec.Code, rec.Body)
		}
		match := func(path, body string) map[string]any {
			t.Helper()
			rec := call(h, "POST", path, "", acmeToken, body)
			if rec.Code != 200 {
				t.Fatalf("%s %s: %d %s", path, body, rec.Code, rec.Body)
			}
			return insightsOf(t, rec.Body.Bytes())
		}
		exact := `{"certificate_id":"` + s.CertificateID + `","company_id":"acme","consent":"I agree to be called by Acme."`
		partial := `{"certificate_id":"` + s.CertificateID + `","company_id":"acme","term":"acme"`
		if in := match("/verify/match", exact+`}`); in != nil {
			t.Errorf("insights nobody asked for: %v", in)
		}
		if in := match("/verify/match", exact+`,"insights":true}`); in["status"] != "pending" || in["verdict"] != nil {
			t.Errorf("asked before the job: %v, want pending", in)
		}

		r, err := jobs.New(jobs.Config{Store: e.svc.Store(), Handlers: []jobs.Handler{insights.Handler(e.svc, insights.Rules{}, insights.Limits{})}, Now: e.svc.Now})
		must(t, err)
		for { // the fixture's certificates have theirs too
			ok, err := r.RunOnce(ctx, consent.JobInsights)
			must(t, err)
			if !ok {
				break
			}
		}

		for _, in := range []map[string]any{match("/verify/match", exact+`,"insights":true}`), match("/verify/partial-match", partial+`,"insights":true}`)} {
			reasons, _ := in["reasons"].([]any)
			if in["status"] != "done" || in["verdict"] != "bot" || !slices.Contains(reasons, any("not_a_browser")) || !slices.Contains(reasons, any("no_snapshot")) {
				t.Errorf("asked after the job: %v, want done, bot for not_a_browser and no_snapshot", in)
			}
		}
		if in := match("/verify/partial-match", partial+`}`); in != nil {
			t.Errorf("partial match not asking: %v", in)
		}

		rec := call(h, "POST", "/verify/certificate-info", "", acmeToken, `{"certificate_id":"`+s.CertificateID+`","company_id":"acme","property_id":"acme-form"}`)
		var got struct {
			Insights struct {
				Status string             `json:"status"`
				Bot    signed.InsightsBot `json:"bot"`
				signed.InsightsSignals
				signed.InsightsProof
			} `json:"insights"`
			signed.Proof
		}
		must(t, json.Unmarshal(rec.Body.Bytes(), &got))
		in := got.Insights
		if rec.Code != 200 || in.Status != "done" || in.Bot.Verdict != "bot" || in.Events != 1 || !in.Client.NotABrowser ||
			in.SecondsOnPage != "0" || in.Statement == nil || in.Statement.Bot.Verdict != "bot" {
			t.Fatalf("certificate-info: %d %s", rec.Code, rec.Body)
		}
		published, _ := json.Marshal(signed.Publish([]signed.PublicKey{key.Public()}))
		var keys signed.KeySet
		must(t, json.Unmarshal(published, &keys))
		if err := in.InsightsProof.Verify(&keys, got.Signed); err != nil {
			t.Errorf("the insights statement does not verify offline: %v", err)
		}
		in.Statement.Bot.Verdict = "human"
		if err := in.InsightsProof.Verify(&keys, got.Signed); err == nil {
			t.Error("an edited insights statement verified")
		}
	})
}
