package signed_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/consentkit/consentkit/internal/testjcs"
	"github.com/consentkit/consentkit/signed"
)

// A statement is signed over its documented encoding, which RFC 8785 over
// its JSON gives; it verifies offline against the certificate it states
// of, and an edit of it, or another certificate, is refused.
func TestStatement(t *testing.T) {
	key, _ := signed.NewSigningKey("key-1")
	cert := documentV2()
	key.Sign(&cert)
	content := cert.Content()
	st, err := signed.NewStatement(&content, time.Date(2026, 11, 27, 2, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	st.Status = signed.Mismatch
	st.ScreenshotSHA256 = strings.Repeat("ab", 32)
	st.Consents = []signed.StatedConsent{
		{Found: true, NodeID: 42, Text: "I agree.", Visibility: signed.StatedVisibility(&signed.Visibility{InViewport: true, FontSizePx: 16,
			ContrastRatio: 1.2, HiddenText: []string{"and 500 partners"}})},
		{NodeID: 7},
	}
	st.Differences = []signed.Difference{{Consent: 0, Field: "visibility.visible", Claimed: "true", Measured: "false"}}
	st.Unreproducible = []string{"https://cdn.example/style.css"}
	sig, err := key.SignStatement(&st)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := st.Encoding()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"certificate_id":"cert-1","certificate_sha256":"` + st.CertificateSHA256 + `","consents":[` +
		`{"found":true,"node_id":42,"text":"I agree.","visibility":{"background_color":"","contrast_ratio":"1.2","font_size_px":"16","hidden_text":["and 500 partners"],"in_viewport":true,"text_color":"","visible":false}},` +
		`{"found":false,"node_id":7,"text":""}],"differences":[{"claimed":"true","consent":0,"field":"visibility.visible","measured":"false"}],` +
		`"key_id":"key-1","measured_at":"2026-11-27T02:00:00.000000Z","screenshot_sha256":"` + strings.Repeat("ab", 32) + `","status":"mismatch",` +
		`"unreproducible":["https://cdn.example/style.css"],"v":"consentkit-attestation-1"}`
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
	var back signed.Statement
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if err := signed.VerifyStatement(&back, &content, key.Public(), sig); err != nil {
		t.Fatalf("VerifyStatement of the statement read back: %v", err)
	}
	for name, edit := range map[string]func(s *signed.Statement){
		"status":         func(s *signed.Statement) { s.Status = signed.Attested },
		"differences":    func(s *signed.Statement) { s.Differences = []signed.Difference{} },
		"text":           func(s *signed.Statement) { s.Consents[0].Text = "I agree!" },
		"hidden":         func(s *signed.Statement) { s.Consents[0].Visibility.HiddenText = []string{} },
		"screenshot":     func(s *signed.Statement) { s.ScreenshotSHA256 = strings.Repeat("cd", 32) },
		"time":           func(s *signed.Statement) { s.MeasuredAt = "2026-11-27T02:00:01.000000Z" },
		"unknown status": func(s *signed.Statement) { s.Status = "fine" },
		"no lists":       func(s *signed.Statement) { s.Unreproducible = nil },
	} {
		var s signed.Statement
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		edit(&s)
		if err := signed.VerifyStatement(&s, &content, key.Public(), sig); err == nil {
			t.Errorf("%s edited: VerifyStatement accepted it", name)
		}
	}
	other := documentV2()
	other.Consents[0].Text = "another text"
	key.Sign(&other)
	oc := other.Content()
	if err := signed.VerifyStatement(&back, &oc, key.Public(), sig); err == nil {
		t.Error("the statement against another certificate's content: accepted")
	}
}

// A statement has one zero: Number and StatedVisibility write negative zero
// as "0", as they write positive zero.
func TestStatementNegativeZero(t *testing.T) {
	negZero := math.Copysign(0, -1)
	if got := signed.Number(negZero); got != "0" {
		t.Errorf("Number(-0) = %q, want \"0\"", got)
	}
	v := signed.StatedVisibility(&signed.Visibility{FontSizePx: negZero, ContrastRatio: negZero})
	if v.FontSizePx != "0" || v.ContrastRatio != "0" {
		t.Errorf("StatedVisibility of -0: font_size_px %q, contrast_ratio %q; want \"0\" each", v.FontSizePx, v.ContrastRatio)
	}
	if signed.StatedVisibility(nil) != nil {
		t.Error("StatedVisibility(nil) is not nil")
	}
}
