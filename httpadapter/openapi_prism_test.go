package httpadapter_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/store/memstore"
)

// prism runs Stoplight Prism's validating proxy (npm, installed by
// npm ci --prefix httpadapter/openapi) in front of upstream with the
// document doc, and returns its base URL. In CI a missing Prism fails the
// test; elsewhere it skips, saying how to install it.
func prism(t *testing.T, doc []byte, upstream string) string {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join("openapi", "node_modules", ".bin", "prism"))
	if err == nil {
		_, err = os.Stat(bin)
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Prism is not installed (run npm ci --prefix httpadapter/openapi): %v", err)
		}
		t.Skipf("Prism is not installed; run npm ci --prefix httpadapter/openapi: %v", err)
	}
	file := filepath.Join(t.TempDir(), "openapi.json")
	if err := os.WriteFile(file, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	if err := ln.Close(); err != nil { // only its port was wanted, for Prism
		t.Fatal(err)
	}
	var logs bytes.Buffer
	cmd := exec.Command(bin, "proxy", file, upstream, "--host", "127.0.0.1", "--port", port)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // it may have exited already
		<-exited               //nolint:errcheck // waits for the exit; killed, its status says only that
	})
	base := "http://127.0.0.1:" + port
	deadline := time.Now().Add(90 * time.Second)
	for {
		resp, err := http.Get(base + "/openapi.json")
		if err == nil {
			_ = resp.Body.Close() // it answers: it is up
			return base
		}
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("prism proxy exited: %v\n%s", err, logs.String())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("prism proxy did not answer within 90 s:\n%s", logs.String())
		}
	}
}

// violation is an entry of Prism's sl-violations header.
type violation struct {
	Location []string `json:"location"`
	Severity string   `json:"severity"`
	Message  string   `json:"message"`
}

// responseViolations returns what Prism found wrong with the answer; what
// it says of the request is ignored (the tests send malformed requests on
// purpose).
func responseViolations(t *testing.T, resp *http.Response) []violation {
	t.Helper()
	h := resp.Header.Get("sl-violations")
	if h == "" {
		return nil
	}
	var all, out []violation
	if err := json.Unmarshal([]byte(h), &all); err != nil {
		t.Fatalf("sl-violations %q: %v", h, err)
	}
	for _, v := range all {
		if len(v.Location) > 0 && v.Location[0] == "response" {
			out = append(out, v)
		}
	}
	return out
}

// swap is an upstream whose handler each case replaces.
type swap struct {
	mu sync.Mutex
	h  http.Handler
}

func (s *swap) set(h http.Handler) { s.mu.Lock(); s.h = h; s.mu.Unlock() }

func (s *swap) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	h := s.h
	s.mu.Unlock()
	h.ServeHTTP(w, r)
}

// TestPrismValidatesAnswers runs the HTTP suite's requests through
// Prism's proxy, a validator this project did not write: every answer —
// each endpoint case of TestEndpoints on a fresh fixture, and the GET,
// capture, operator, keyed and rate-limited requests below — must be what
// the served document declares (status, headers, body schema), and Prism
// must pass it through unchanged.
func TestPrismValidatesAnswers(t *testing.T) {
	const operator = "operator-secret-operator-secret-0001"
	up := &swap{}
	upstream := httptest.NewServer(up)
	defer upstream.Close()
	mount := func(e *env) *httpadapter.Handler {
		h := e.handler(t, httpadapter.Config{OperatorSecret: operator}).(*httpadapter.Handler)
		mux := http.NewServeMux()
		mux.Handle("/operator/", h.Operator())
		mux.Handle("/", h)
		up.set(mux)
		return h
	}
	h := mount(setup(t, memstore.New()))
	doc, err := json.Marshal(h.OpenAPI())
	if err != nil {
		t.Fatal(err)
	}
	base := prism(t, doc, upstream.URL)
	client := &http.Client{Timeout: time.Minute}

	send := func(t *testing.T, method string, r request) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, base+r.path, strings.NewReader(r.body))
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case json.Valid([]byte(r.body)):
			req.Header.Set("Content-Type", "application/json")
		case r.body != "":
			// Prism never forwards a body it cannot parse as its
			// content type says; the handler reads any body as JSON.
			req.Header.Set("Content-Type", "text/plain")
		}
		r.setHeaders(req)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range responseViolations(t, resp) {
			t.Errorf("%s %s → %d: Prism: %s at %s: %s", method, r.path, resp.StatusCode, v.Severity, strings.Join(v.Location, "."), v.Message)
		}
		return resp, body
	}

	cases := append(append([]httpCase{}, verificationCases...), retainCases...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mount(setup(t, memstore.New()))
			resp, body := send(t, http.MethodPost, tc.req)
			if resp.StatusCode != tc.status {
				t.Errorf("through Prism: %d, want %d: %s", resp.StatusCode, tc.status, body)
			}
			checkBody(t, body, tc.want)
		})
	}

	mount(setup(t, memstore.New()))
	for _, r := range []struct {
		path, token string
		status      int
	}{
		{"/openapi.json", "", 200},
		{"/.well-known/consentkit-keys", "", 200},
		{"/api/integrations/acme/sessions/s1", acmeToken, 200},
		{"/api/integrations/acme/sessions/s9", acmeToken, 404},
		{"/api/integrations/acme/sessions/s1/video", acmeToken, 404},
		{"/capture/capture.js", "", 200},
		{"/operator/companies/acme/audit?limit=2", operator, 200},
		{"/operator/companies/acme/webhooks", operator, 200},
		{"/operator/companies/nobody/audit", operator, 404},
		{"/operator/companies/acme/audit", acmeToken, 401},
	} {
		if resp, body := send(t, http.MethodGet, request{path: r.path, token: r.token}); resp.StatusCode != r.status {
			t.Errorf("GET %s: %d, want %d: %s", r.path, resp.StatusCode, r.status, body)
		}
	}
	// Every operator route but the webhooks' (operatorRequests).
	for _, r := range operatorRequests {
		req := request{path: r.path, token: operator, body: r.body}
		if r.key != "" {
			req = keyed(req, r.key)
		}
		if resp, body := send(t, r.method, req); resp.StatusCode != r.status {
			t.Errorf("%s %s: %d, want %d: %s", r.method, r.path, resp.StatusCode, r.status, body)
		}
	}
	if resp, body := send(t, http.MethodPost, request{path: "/capture/sessions", body: `{"property_id":"acme-web","url":"https://acme.example/quote"}`,
		header: http.Header{"Origin": {"https://evil.example"}}}); resp.StatusCode != 403 {
		t.Errorf("capture start from an origin not allowed: %d: %s", resp.StatusCode, body)
	}

	// A keyed match, its replay, and the key with another body (D40).
	match := keyed(request{path: "/verify/match", token: acmeToken, body: matchBody("cert-1", "acme", consentText)}, "prism-key")
	first, firstBody := send(t, http.MethodPost, match)
	again, againBody := send(t, http.MethodPost, match)
	if first.StatusCode != 200 || again.Header.Get(httpadapter.ReplayedHeader) != "true" || !bytes.Equal(firstBody, againBody) {
		t.Errorf("keyed match through Prism: %d %s, then %d replayed=%q %s", first.StatusCode, firstBody,
			again.StatusCode, again.Header.Get(httpadapter.ReplayedHeader), againBody)
	}
	other := keyed(request{path: "/verify/match", token: acmeToken, body: matchBody("cert-2", "acme", consentText)}, "prism-key")
	if resp, body := send(t, http.MethodPost, other); resp.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("the key with another body: %d %s; want 422", resp.StatusCode, body)
	}

	// Opt-out until its rate limit answers 429 with Retry-After.
	var last *http.Response
	for range 11 {
		last, _ = send(t, http.MethodPost, request{path: "/opt-out", body: `{"company_id":"acme","email":"nobody@example.com"}`})
	}
	if last.StatusCode != http.StatusTooManyRequests {
		t.Errorf("the 11th opt-out: %d, want 429", last.StatusCode)
	}
	if t.Failed() {
		return
	}
	// The check can fail: a document that demands what no answer has
	// makes Prism report it.
	var strict map[string]any
	if err := json.Unmarshal(doc, &strict); err != nil {
		t.Fatal(err)
	}
	schema := strict["components"].(map[string]any)["schemas"].(map[string]any)["VerifyError"].(map[string]any)
	schema["required"] = append(schema["required"].([]any), "no_such_member")
	bad, _ := json.Marshal(strict)
	badBase := prism(t, bad, upstream.URL)
	resp, err := http.Post(badBase+"/verify/match", "application/json", strings.NewReader(matchBody("cert-1", "acme", consentText)))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close() // Prism's verdict is in the headers
	if v := responseViolations(t, resp); len(v) == 0 || !strings.Contains(v[0].Message, "no_such_member") {
		t.Errorf("a 401 against a schema that requires no_such_member: violations %v; want it reported", v)
	}
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("through the strict document: %d, want 401 passed through", resp.StatusCode)
	}
}
