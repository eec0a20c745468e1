package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// consentkit answers under /consent/, the host's routes still work, and the
// host's middleware wraps both.
func TestMounted(t *testing.T) {
	h, secret, err := newApp(context.Background(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, _ := http.NewRequest("POST", srv.URL+"/consent/verify/match",
		strings.NewReader(`{"certificate_id":"cert-1","company_id":"acme","consent":"I agree to be contacted."}`))
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"valid":true`) || resp.Header.Get("X-Request-Id") == "" {
		t.Errorf("verify under /consent/: %d %s (request id %q)", resp.StatusCode, body, resp.Header.Get("X-Request-Id"))
	}
	for path, want := range map[string]string{"/": "home page", "/status": "ok"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), want) {
			t.Errorf("GET %s = %q", path, b)
		}
	}
	// Unprefixed paths are the host's, not consentkit's.
	resp, err = http.Post(srv.URL+"/verify/match", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("POST /verify/match outside the prefix: %d, want 404", resp.StatusCode)
	}
}
