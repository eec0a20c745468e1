package signed_test

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"

	"github.com/consentkit/consentkit/internal/testjcs"
	"github.com/consentkit/consentkit/signed"
)

func documentV2() signed.Document {
	d := document()
	d.V = signed.Version2
	d.ClientIP = "203.0.113.7"
	d.UserAgent = "Mozilla/5.0 (X11; Linux x86_64)"
	d.RevokedBefore = time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC)
	d.Visibility = &signed.Visibility{InViewport: true, Visible: true, FontSizePx: 16, TextColor: "rgb(17, 17, 17)",
		BackgroundColor: "rgb(255, 255, 255)", ContrastRatio: 18.88}
	d.Consents[0].OptInMethod = "manual"
	d.Consents[0].Visibility = &signed.Visibility{InViewport: true, FontSizePx: 15.5, TextColor: "rgb(0, 0, 0)",
		BackgroundColor: "rgb(255, 255, 255)", ContrastRatio: 21, HiddenText: []string{"and 500 partners"}}
	return d
}

// Version 2 covers every fact the certificate asserts at issue, written
// by the documented rules: members in sorted order at every level, numbers
// as their shortest decimal strings, no visibility as null.
func TestSignAndVerifyV2(t *testing.T) {
	key, err := signed.NewSigningKey("key-2026-11")
	if err != nil {
		t.Fatal(err)
	}
	d := documentV2()
	sig := key.Sign(&d)
	email := sha256.Sum256([]byte("jane@example.com"))
	want := `{"client_ip":"203.0.113.7","company_id":"acme","consents":[` +
		`{"opt_in_at":"2026-11-22T10:29:55.123456Z","opt_in_method":"manual","text":"I agree — \"Acme\" may call me.\tC:\\path\n\u0001","types":["tcpa","marketing"],` +
		`"visibility":{"background_color":"rgb(255, 255, 255)","contrast_ratio":"21","font_size_px":"15.5","hidden_text":["and 500 partners"],"in_viewport":true,"text_color":"rgb(0, 0, 0)","visible":false}},` +
		`{"opt_in_at":"2026-11-22T10:30:00.123456Z","text":"second","types":[]}],` +
		`"created_at":"2026-11-22T10:30:00.123456Z","email_sha256":"` + hex.EncodeToString(email[:]) + `","id":"cert-1",` +
		`"key_id":"key-2026-11","mobile_sha256":"","origin":"https://acme.example/quote?a=1&b=<2>","property_id":"web","recording_sha256":"",` +
		`"revoked_before":"2026-11-20T08:00:00.000000Z","session_id":"s1","user_agent":"Mozilla/5.0 (X11; Linux x86_64)","v":"consentkit-certificate-2",` +
		`"visibility":{"background_color":"rgb(255, 255, 255)","contrast_ratio":"18.88","font_size_px":"16","hidden_text":[],"in_viewport":true,"text_color":"rgb(17, 17, 17)","visible":true}}`
	if !ed25519.Verify(key.Public().Key, []byte(want), sig) {
		t.Fatalf("the signature does not verify over the documented encoding\nbuilt: %s\nours:  %s", want, d.Encoding())
	}
	// RFC 8785 over the content's JSON, as any JCS library writes it, is
	// the signed bytes: the JSON holds the members the encoding holds.
	shown, err := json.Marshal(d.Content())
	if err != nil {
		t.Fatal(err)
	}
	var tree any
	if err := json.Unmarshal(shown, &tree); err != nil {
		t.Fatal(err)
	}
	if generic := testjcs.String(tree); generic != want {
		t.Errorf("RFC 8785 over the content's JSON:\n%s\nthe encoding:\n%s", generic, want)
	}
	// The content as the API shows it round-trips through JSON and verifies.
	c := d.Content()
	raw, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var back signed.Content
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if err := signed.Verify(&back, key.Public(), sig); err != nil {
		t.Fatalf("Verify of the content read back: %v\n%s", err, raw)
	}
	for name, edit := range map[string]func(c *signed.Content){
		"client ip":             func(c *signed.Content) { c.ClientIP = "198.51.100.1" },
		"user agent":            func(c *signed.Content) { c.UserAgent = "curl/8" },
		"revoked before":        func(c *signed.Content) { c.RevokedBefore = "" },
		"visibility":            func(c *signed.Content) { c.Visibility = nil },
		"visible":               func(c *signed.Content) { c.Visibility.Visible = false },
		"contrast":              func(c *signed.Content) { c.Visibility.ContrastRatio = "4.5" },
		"contrast, not written": func(c *signed.Content) { c.Visibility.ContrastRatio = "18.880" },
		"font size":             func(c *signed.Content) { c.Visibility.FontSizePx = "16.0" },
		"consent visibility":    func(c *signed.Content) { c.Consents[0].Visibility.InViewport = false },
		"hidden text":           func(c *signed.Content) { c.Consents[0].Visibility.HiddenText = nil },
		"opt-in method":         func(c *signed.Content) { c.Consents[0].OptInMethod = "pre_selected" },
		"version 1":             func(c *signed.Content) { c.V = signed.Version1 },
		"unknown version":       func(c *signed.Content) { c.V = "consentkit-certificate-3" },
	} {
		c := d.Content()
		edit(&c)
		if err := signed.Verify(&c, key.Public(), sig); err == nil {
			t.Errorf("%s changed: Verify accepted it", name)
		}
	}
}

// A version 1 certificate keeps verifying for what version 1 covered, and
// its content neither shows nor may be given the members of version 2.
func TestVersion1StillVerifies(t *testing.T) {
	key, _ := signed.NewSigningKey("key-1")
	d := documentV2()
	d.V = "" // what an issuer of version 1 built
	sig := key.Sign(&d)
	c := d.Content()
	if c.V != signed.Version1 || c.ClientIP != "" || c.Visibility != nil || c.Consents[0].Visibility != nil || c.Consents[0].OptInMethod != "" {
		t.Fatalf("version 1 content shows members of version 2: %+v", c)
	}
	if err := signed.Verify(&c, key.Public(), sig); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	c.ClientIP = "203.0.113.7"
	if err := signed.Verify(&c, key.Public(), sig); err == nil {
		t.Error("version 1 content with a client_ip: Verify accepted it")
	}
}
