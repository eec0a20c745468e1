package main

import (
	"bytes"
	"context"
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
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/signed"
	"github.com/consentkit/consentkit/wallet"
)

// refusals returns what certificate-info answered, body and status, when
// asked with a wrong token, for a certificate that does not exist, and for
// one whose consumer opted out: what curl -s saves to cert.json as readily
// as a certificate.
func refusals(t *testing.T) map[string][]byte {
	t.Helper()
	ctx := context.Background()
	key, err := signed.NewSigningKey("key-1")
	if err != nil {
		t.Fatal(err)
	}
	svc, err := consentkit.NewService(teststore.Memory(t), consentkit.Config{SigningKeys: []signed.SigningKey{key}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.AddProperty(ctx, consentkit.PropertyParams{ID: "web", CompanyID: "acme", Name: "Form"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.TopUp(ctx, "acme", wallet.Dollar, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.StartSession(ctx, consentkit.SessionParams{ID: "s1", CompanyID: "acme", PropertyID: "web"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.IssueCertificate(ctx, consentkit.CertificateParams{ID: "cert-1", CompanyID: "acme", PropertyID: "web", SessionID: "s1",
		Origin: "https://acme.example/quote", Email: "jane@example.com", Records: []consent.Record{{Text: "I agree.", Types: []string{"tcpa"}}}}); err != nil {
		t.Fatal(err)
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
	post := func(path, token, body string, want int) []byte {
		t.Helper()
		req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want {
			t.Fatalf("POST %s %s: %d %s, want %d", path, body, resp.StatusCode, b, want)
		}
		return b
	}
	info := func(cert string) string {
		return `{"certificate_id":"` + cert + `","company_id":"acme","property_id":"web"}`
	}
	out := map[string][]byte{
		"401": post("/verify/certificate-info", "ck_wrong_"+strings.Repeat("x", 32), info("cert-1"), 401),
		"404": post("/verify/certificate-info", secret, info("cert-9"), 404),
	}
	post("/opt-out", "", `{"company_id":"acme","certificate_id":"cert-1"}`, 200)
	out["403"] = post("/verify/certificate-info", secret, info("cert-1"), 403)
	return out
}

// A file that holds an error answer of the API, or JSON that is no
// certificate-info answer, cannot be read as a certificate (exit 2), and
// the command says what it holds instead; a certificate-info answer
// without a signature is one that is not valid (exit 1).
func TestVerifyNotACertificate(t *testing.T) {
	answers := refusals(t)
	dir := t.TempDir()
	keysPath := filepath.Join(dir, "keys.json")
	if err := os.WriteFile(keysPath, []byte(`{"keys":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	certPath := filepath.Join(dir, "cert.json")
	for _, c := range []struct {
		name, input string
		code        int
		want        string // on standard error, or standard output for exit 1
	}{
		{"opted out", string(answers["403"]), 2,
			"consentkit-verify: " + certPath + " holds an error answer of the API, not a certificate: 403 This session has opted out\n"},
		{"wrong token", string(answers["401"]), 2, "holds an error answer of the API, not a certificate: 401 "},
		{"no such certificate", string(answers["404"]), 2, "holds an error answer of the API, not a certificate: 404 certificate not found\n"},
		{"the Retain API's shape", `{"success":false,"error":"session not found"}`, 2,
			"holds an error answer of the API, not a certificate: session not found\n"},
		{"an empty object", `{}`, 2, "holds JSON but no certificate-info answer: it has no signed content, no certificate_id and no error\n"},
		{"the keys", `{"keys":[]}`, 2, "holds JSON but no certificate-info answer"},
		{"null", `null`, 2, "holds JSON but no certificate-info answer"},
		{"an array", `[{"signed":{}}]`, 2, "holds JSON but no certificate-info answer"},
		{"a signed of another type", `{"signed":"yes"}`, 2, "holds JSON but no certificate-info answer"},
		{"HTML", `<html>502 Bad Gateway</html>`, 2, "the certificate is not JSON"},
		{"unsigned", `{"valid":true,"certificate_id":"cert-1","consent_count":1}`, 1, "NOT VALID: the certificate carries no signature"},
	} {
		if err := os.WriteFile(certPath, []byte(c.input), 0o644); err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		code := run([]string{"-keys", keysPath, certPath}, nil, &out, &errOut)
		got, other := errOut.String(), out.String()
		if c.code == 1 {
			got, other = other, got
		}
		if code != c.code || !strings.Contains(got, c.want) || other != "" || strings.Count(got, "\n") != 1 {
			t.Errorf("%s: exit %d\nstdout %q\nstderr %q\nwant exit %d and one line with %q", c.name, code, out.String(), errOut.String(), c.code, c.want)
		}
		if c.code == 2 && strings.Contains(got, "signature") {
			t.Errorf("%s: %q speaks of a signature", c.name, got)
		}
	}
	// From the standard input, it is named so.
	var out, errOut bytes.Buffer
	if code := run([]string{"-keys", keysPath}, bytes.NewReader(answers["403"]), &out, &errOut); code != 2 ||
		!strings.HasPrefix(errOut.String(), "consentkit-verify: the standard input holds an error answer of the API") {
		t.Errorf("a 403 on the standard input: exit %d %q %q", code, out.String(), errOut.String())
	}
}
