package httpadapter_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

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

		r, err := jobs.New(jobs.Config{Store: e.svc.Store(), Handlers: []jobs.Handler{insights.Handler(e.svc, insights.Limits{})}, Now: e.svc.Now})
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

// What insights say when asked (D50), unsigned: the lead's age, the
// velocity of the company's certificates from one address, and the
// verdict with the reasons found then — here high_velocity, once the
// company's rules say three in the hour is too many. On every store.
func TestInsightsAskedThroughHTTP(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		ctx := context.Background()
		e, _ := capturing(t, open(t), httpadapter.Config{})
		h, err := httpadapter.New(httpadapter.Config{Service: e.svc, OperatorSecret: operatorSecret,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		must(t, err)
		var certs []string
		for range 4 { // four consents from one address, a minute apart
			s := startSession(t, h)
			if rec := call(h, "POST", "/capture/sessions/"+s.SessionID+"/events", formOrigin, s.UploadToken, `{"seq":0,"events":`+rrwebChunk+`}`); rec.Code != 200 {
				t.Fatalf("chunk: %d %s", rec.Code, rec.Body)
			}
			if rec := call(h, "POST", "/capture/sessions/"+s.SessionID+"/consent", formOrigin, s.UploadToken,
				`{"consents":[{"text":"I agree to be called by Acme.","types":["tcpa"]}],"url":"`+formPage+`"}`); rec.Code != 201 {
				t.Fatalf("consent: %d %s", rec.Code, rec.Body)
			}
			certs = append(certs, s.CertificateID)
			e.clock.t = e.clock.t.Add(time.Minute)
		}
		r, err := jobs.New(jobs.Config{Store: e.svc.Store(), Handlers: []jobs.Handler{insights.Handler(e.svc, insights.Limits{})}, Now: e.svc.Now})
		must(t, err)
		for {
			ok, err := r.RunOnce(ctx, consent.JobInsights)
			must(t, err)
			if !ok {
				break
			}
		}
		e.clock.t = e.clock.t.Add(30 * time.Second) // the last consent is 90 s old

		type answer struct {
			Status         string           `json:"status"`
			AskedAt        string           `json:"asked_at"`
			LeadAgeSeconds int64            `json:"lead_age_seconds"`
			Velocity       consent.Velocity `json:"velocity"`
			Bot            struct {
				Verdict      string   `json:"verdict"`
				Reasons      []string `json:"reasons"`
				AskedReasons []string `json:"asked_reasons"`
			} `json:"bot"`
			Statement *signed.InsightsStatement `json:"statement"`
		}
		info := func(id string) answer {
			t.Helper()
			rec := call(h, "POST", "/verify/certificate-info", "", acmeToken, `{"certificate_id":"`+id+`","company_id":"acme","property_id":"acme-form"}`)
			var got struct {
				Insights answer `json:"insights"`
			}
			if rec.Code != 200 {
				t.Fatalf("certificate-info %s: %d %s", id, rec.Code, rec.Body)
			}
			must(t, json.Unmarshal(rec.Body.Bytes(), &got))
			return got.Insights
		}
		last, first := info(certs[3]), info(certs[0])
		if want := (consent.VelocityCounts{ClientIP: 3}); last.Velocity.Hour != want || last.Velocity.Day != want {
			t.Errorf("velocity of the fourth: %+v, want three from its address in the hour and the day", last.Velocity)
		}
		if first.Velocity != (consent.Velocity{}) {
			t.Errorf("velocity of the first: %+v, want none before it", first.Velocity)
		}
		if last.LeadAgeSeconds != 90 || first.LeadAgeSeconds != 270 || last.AskedAt != e.clock.t.UTC().Format(time.RFC3339Nano) {
			t.Errorf("lead ages %d and %d at %s, want 90 and 270 at %s", last.LeadAgeSeconds, first.LeadAgeSeconds, last.AskedAt, e.clock.t)
		}
		if last.Status != "done" || len(last.Bot.AskedReasons) != 0 || !slices.Equal(last.Bot.Reasons, last.Statement.Bot.Reasons) {
			t.Errorf("under the default rules: %+v, want the statement's verdict and no asked reasons", last.Bot)
		}

		code, c, _ := opDo(t, h.Operator(), "PUT", "/operator/companies/acme/insights-rules", operatorSecret, `{"max_per_hour":2}`, nil)
		if code != 200 {
			t.Fatalf("PUT rules: %d %v", code, c)
		}
		last = info(certs[3])
		if !slices.Equal(last.Bot.AskedReasons, []string{"high_velocity"}) || !slices.Contains(last.Bot.Reasons, "high_velocity") ||
			last.Bot.Verdict != "bot" || slices.Contains(last.Statement.Bot.Reasons, "high_velocity") {
			t.Errorf("three in the hour over a limit of two: %+v, statement %+v", last.Bot, last.Statement.Bot)
		}
		if first = info(certs[0]); len(first.Bot.AskedReasons) != 0 {
			t.Errorf("the first, with none before it: %+v", first.Bot)
		}
		rec := call(h, "POST", "/verify/match", "", acmeToken,
			`{"certificate_id":"`+certs[3]+`","company_id":"acme","consent":"I agree to be called by Acme.","insights":true}`)
		in := insightsOf(t, rec.Body.Bytes())
		if rec.Code != 200 || fmt.Sprint(in["asked_reasons"]) != "[high_velocity]" || in["verdict"] != "bot" {
			t.Errorf("match asking for insights: %d %v", rec.Code, in)
		}
	})
}
