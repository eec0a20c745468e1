package signed_test

import (
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"github.com/consentkit/consentkit/internal/testjcs"
	"github.com/consentkit/consentkit/signed"
)

// An insights statement is signed over its documented encoding, which RFC
// 8785 over its JSON gives; it verifies offline against the certificate it
// states of, and an edit of it, or another certificate, is refused.
func TestInsightsStatement(t *testing.T) {
	key, _ := signed.NewSigningKey("key-1")
	cert := documentV2()
	key.Sign(&cert)
	content := cert.Content()
	st, err := signed.NewInsightsStatement(&content, time.Date(2026, 11, 28, 2, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	st.Bot = signed.InsightsBot{Verdict: "suspect", Reasons: []string{"no_pointer_or_touch"}}
	st.Signals = signed.InsightsSignals{
		Client: signed.InsightsClient{Browser: "Chrome", BrowserVersion: "131.0", Device: "desktop", OS: "Linux"},
		Events: 120,
		Inputs: []signed.InsightsInput{
			{Name: "email", Method: "typed", Keystrokes: 17},
			{Name: "phone", Method: "pasted", Pastes: 1},
		},
		KeysPerMinute: signed.Number(312.5),
		Keystrokes:    17,
		Pointer:       signed.InsightsPointer{Clicks: 2, Scrolls: 1},
		Reported: &signed.InsightsReported{IsFramed: true, Language: "en-US", ParentOrigin: "https://parent.example",
			TimeZone: "Europe/Paris", Viewport: signed.InsightsViewport{Width: 1280, Height: 720}},
		SecondsOnPage:   signed.Number(41.25),
		SecondsToSubmit: signed.Number(30),
		Snapshot:        true,
	}
	sig, err := key.SignInsights(&st)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := st.Encoding()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"bot":{"reasons":["no_pointer_or_touch"],"verdict":"suspect"},"certificate_id":"cert-1","certificate_sha256":"` + st.CertificateSHA256 +
		`","key_id":"key-1","measured_at":"2026-11-28T02:00:00.000000Z","signals":{` +
		`"client":{"browser":"Chrome","browser_version":"131.0","device":"desktop","headless":false,"not_a_browser":false,"os":"Linux","os_version":""},` +
		`"events":120,"inputs":[{"keystrokes":17,"method":"typed","name":"email","pastes":0},{"keystrokes":0,"method":"pasted","name":"phone","pastes":1}],` +
		`"keys_per_minute":"312.5","keystrokes":17,"pointer":{"clicks":2,"moves":0,"scrolls":1,"touches":0},` +
		`"reported":{"is_framed":true,"language":"en-US","parent_origin":"https://parent.example","time_zone":"Europe/Paris","viewport":{"height":720,"width":1280},"webdriver":false},` +
		`"seconds_on_page":"41.25","seconds_to_submit":"30","snapshot":true},"v":"consentkit-insights-1"}`
	if string(enc) != want {
		t.Fatalf("encoding:\n%s\nwant the documented:\n%s", enc, want)
	}
	raw, _ := json.Marshal(st)
	var tree any
	if err := json.Unmarshal(raw, &tree); err != nil {
		t.Fatal(err)
	}
	if got := testjcs.String(tree); got != want {
		t.Errorf("RFC 8785 over the statement's JSON:\n%s\nwant:\n%s", got, want)
	}
	var back signed.InsightsStatement
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if err := signed.VerifyInsights(&back, &content, key.Public(), sig); err != nil {
		t.Fatalf("VerifyInsights of the statement read back: %v", err)
	}
	published, _ := json.Marshal(signed.Publish([]signed.PublicKey{key.Public()}))
	var keys signed.KeySet
	if err := json.Unmarshal(published, &keys); err != nil {
		t.Fatal(err)
	}
	proof := signed.InsightsProof{Statement: &back, KeyID: "key-1", Signature: base64.StdEncoding.EncodeToString(sig)}
	if err := proof.Verify(&keys, &content); err != nil {
		t.Fatalf("InsightsProof.Verify: %v", err)
	}
	for name, edit := range map[string]func(s *signed.InsightsStatement){
		"verdict":        func(s *signed.InsightsStatement) { s.Bot.Verdict = "human" },
		"reasons":        func(s *signed.InsightsStatement) { s.Bot.Reasons = []string{} },
		"method":         func(s *signed.InsightsStatement) { s.Signals.Inputs[1].Method = "typed" },
		"keystrokes":     func(s *signed.InsightsStatement) { s.Signals.Keystrokes = 18 },
		"pointer":        func(s *signed.InsightsStatement) { s.Signals.Pointer.Moves = 50 },
		"webdriver":      func(s *signed.InsightsStatement) { s.Signals.Reported.Webdriver = true },
		"no report":      func(s *signed.InsightsStatement) { s.Signals.Reported = nil },
		"seconds":        func(s *signed.InsightsStatement) { s.Signals.SecondsOnPage = "41.26" },
		"a number's way": func(s *signed.InsightsStatement) { s.Signals.SecondsToSubmit = "30.0" },
		"not a number":   func(s *signed.InsightsStatement) { s.Signals.KeysPerMinute = "NaN" },
		"time":           func(s *signed.InsightsStatement) { s.MeasuredAt = "2026-11-28T02:00:01.000000Z" },
		"version":        func(s *signed.InsightsStatement) { s.V = signed.StatementVersion },
		"no lists":       func(s *signed.InsightsStatement) { s.Signals.Inputs = nil },
	} {
		var s signed.InsightsStatement
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		edit(&s)
		if err := signed.VerifyInsights(&s, &content, key.Public(), sig); err == nil {
			t.Errorf("%s edited: VerifyInsights accepted it", name)
		}
	}
	other := documentV2()
	other.Consents[0].Text = "another text"
	key.Sign(&other)
	oc := other.Content()
	if err := signed.VerifyInsights(&back, &oc, key.Public(), sig); err == nil {
		t.Error("the statement against another certificate's content: accepted")
	}
}
