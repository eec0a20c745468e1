package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/internal/testjcs"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/signed"
	"github.com/consentkit/consentkit/wallet"
)

// serve issues a signed certificate and returns the certificate-info
// answer and the published keys, as the API gives them.
func serve(t *testing.T) (certJSON, keysJSON []byte) {
	t.Helper()
	ctx := context.Background()
	key, err := signed.NewSigningKey("key-1")
	if err != nil {
		t.Fatal(err)
	}
	old, _ := signed.NewSigningKey("key-0")
	svc, err := consentkit.NewService(teststore.Memory(t), consentkit.Config{SigningKeys: []signed.SigningKey{key}, PublicKeys: []signed.PublicKey{old.Public()}})
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
			_, err := svc.IssueCertificate(ctx, consentkit.CertificateParams{ID: "cert-1", CompanyID: "acme", PropertyID: "web", SessionID: "s1",
				Origin: "https://acme.example/quote?x=<1>&y=2", Mobile: "(555) 010-2000",
				ClientIP: "203.0.113.7", UserAgent: "Mozilla/5.0 Firefox/140.0",
				Visibility: &consent.Visibility{InViewport: true, Visible: true, FontSizePx: 16, ContrastRatio: 18.88},
				Records: []consent.Record{{Text: "I agree to \"calls\"\tand texts\n— Acme ✓", Types: []string{"tcpa", "sms"},
					OptInMethod: consent.OptInManual, Visibility: &consent.Visibility{InViewport: true, FontSizePx: 16, ContrastRatio: 21,
						HiddenText: []string{"and 500 partners"}}}}})
			return err
		},
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	_, secret, err := svc.IssueToken(ctx, consentkit.TokenParams{CompanyID: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	h, err := httpadapter.New(httpadapter.Config{Service: svc, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	req, _ := http.NewRequest("POST", srv.URL+"/verify/certificate-info",
		strings.NewReader(`{"certificate_id":"cert-1","company_id":"acme","property_id":"web"}`))
	req.Header.Set("Authorization", "Bearer "+secret)
	certJSON = body(t, req)
	req, _ = http.NewRequest("GET", srv.URL+"/.well-known/consentkit-keys", nil)
	return certJSON, body(t, req)
}

func body(t *testing.T, req *http.Request) []byte {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("%s %s: %d %s", req.Method, req.URL, resp.StatusCode, b)
	}
	return b
}

// The published key verifies the signature over the canonical form of
// "signed", rebuilt here by the documented rules; the command agrees, and
// refuses any change.
func TestVerifyOffline(t *testing.T) {
	certJSON, keysJSON := serve(t)
	var answer struct {
		Sig    string         `json:"signature"`
		Key    string         `json:"key_id"`
		Signed map[string]any `json:"signed"`
	}
	if err := json.Unmarshal(certJSON, &answer); err != nil {
		t.Fatal(err)
	}
	var ks signed.KeySet
	if err := json.Unmarshal(keysJSON, &ks); err != nil || len(ks.Keys) != 2 || ks.Keys[0].KeyID != "key-1" {
		t.Fatalf("published keys %s, %v; want key-1 (signing) and key-0 (retired)", keysJSON, err)
	}
	pub, _ := base64.StdEncoding.DecodeString(ks.Keys[0].PublicKey)
	sig, _ := base64.StdEncoding.DecodeString(answer.Sig)
	var enc bytes.Buffer
	testjcs.Write(&enc, answer.Signed)
	if answer.Key != "key-1" || !ed25519.Verify(pub, enc.Bytes(), sig) {
		t.Fatalf("the published key does not verify the signature over %s", enc.Bytes())
	}

	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	keysPath := write("keys.json", keysJSON)
	var out, errOut bytes.Buffer
	if code := run([]string{"-keys", keysPath, write("cert.json", certJSON)}, nil, &out, &errOut); code != 0 ||
		!strings.HasPrefix(out.String(), "VALID: certificate cert-1 of company acme") {
		t.Fatalf("exit %d: %s%s", code, out.String(), errOut.String())
	}
	for name, edit := range map[string][2]string{
		"consent text": {`and texts`, `and emails`},
		"origin":       {`quote?x=`, `quote?z=`},
		"type":         {`"sms"`, `"fax"`},
		"key":          {`"key_id":"key-1"`, `"key_id":"key-0"`},
	} {
		changed := bytes.ReplaceAll(certJSON, []byte(edit[0]), []byte(edit[1]))
		if bytes.Equal(changed, certJSON) {
			t.Fatalf("%s: the edit changed nothing", name)
		}
		out.Reset()
		if code := run([]string{"-keys", keysPath}, bytes.NewReader(changed), &out, &errOut); code != 1 || !strings.HasPrefix(out.String(), "NOT VALID") {
			t.Errorf("%s changed: exit %d, %s; want 1, NOT VALID", name, code, out.String())
		}
	}
	if code := run([]string{"-keys", keysPath}, strings.NewReader("{"), &out, &errOut); code != 2 {
		t.Errorf("not JSON: exit %d, want 2", code)
	}
	if code := run([]string{}, nil, &out, &errOut); code != 2 {
		t.Errorf("no -keys: exit %d, want 2", code)
	}
	errOut.Reset()
	if code := run([]string{"-h"}, nil, &out, &errOut); code != 0 || !strings.Contains(errOut.String(), "Usage: consentkit-verify") {
		t.Errorf("-h: exit %d, %q; want 0 and the usage", code, errOut.String())
	}
}

// Every fact the answer shows beside the signature is held to the signed
// content: one edited outside "signed" is named; the facts no signature
// covers are listed.
func TestShownFactsChecked(t *testing.T) {
	certJSON, keysJSON := serve(t)
	keys := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(keys, keysJSON, 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"-keys", keys}, bytes.NewReader(certJSON), &out, &errOut); code != 0 ||
		!strings.Contains(out.String(), "not signed, shown by the answer: events_combined, insights, valid\n") ||
		!strings.Contains(out.String(), "opt-in: manual") || !strings.Contains(out.String(), `hidden text ["and 500 partners"]`) {
		t.Fatalf("untouched answer: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	for name, edit := range map[string]func(a map[string]any){
		"certificate_id":     func(a map[string]any) { a["certificate_id"] = "cert-2" },
		"session_id":         func(a map[string]any) { a["session_id"] = "s2" },
		"origin":             func(a map[string]any) { a["origin"] = "https://evil.example/" },
		"created_timestamp":  func(a map[string]any) { a["created_timestamp"] = "2020-01-01T00:00:00Z" },
		"consent_opt_in":     func(a map[string]any) { a["consent_opt_in"] = "2020-01-01T00:00:00Z" },
		"consent_types":      func(a map[string]any) { a["consent_types"] = []string{"tcpa"} },
		"consent_count":      func(a map[string]any) { a["consent_count"] = 2 },
		"client_ip":          func(a map[string]any) { a["client_ip"] = "198.51.100.1" },
		"user_agent":         func(a map[string]any) { a["user_agent"] = "curl/8" },
		"revoked_before":     func(a map[string]any) { a["revoked_before"] = "2020-01-01T00:00:00Z" },
		"consent_visibility": func(a map[string]any) { a["consent_visibility"].(map[string]any)["contrast_ratio"] = 4.5 },
		"consents":           func(a map[string]any) { a["consents"].([]any)[0].(map[string]any)["text"] = "I agree." },
		"consents, method": func(a map[string]any) {
			a["consents"].([]any)[0].(map[string]any)["opt_in_method"] = "pre_selected"
		},
		"consents, hidden text": func(a map[string]any) {
			a["consents"].([]any)[0].(map[string]any)["visibility"].(map[string]any)["hidden_text"] = []string{}
		},
	} {
		var a map[string]any
		if err := json.Unmarshal(certJSON, &a); err != nil {
			t.Fatal(err)
		}
		edit(a)
		changed, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		member, _, _ := strings.Cut(name, ",")
		out.Reset()
		if code := run([]string{"-keys", keys}, bytes.NewReader(changed), &out, &errOut); code != 1 ||
			!strings.Contains(out.String(), "the answer's "+member+" is not what it covers") {
			t.Errorf("%s edited: exit %d, %s; want 1 naming %s", name, code, out.String(), member)
		}
	}
}
