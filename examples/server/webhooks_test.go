package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/consentkit/consentkit/internal/testwait"
)

const webhookSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwWdPS0Ci+mjE="

// webhookSeed is a seed file whose company has a webhook endpoint at url.
func webhookSeed(t *testing.T, url string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "seed.json")
	seed := fmt.Sprintf(`{"companies":[{"id":"acme","name":"Acme","properties":[{"id":"web","name":"Form"}],
		"webhooks":[{"url":%q,"secret":%q,"events":["consent.revoked"]}]}],
		"sessions":[{"id":"s1","company_id":"acme","property_id":"web"}],
		"certificates":[{"id":"cert-1","company_id":"acme","property_id":"web","session_id":"s1",
			"email":"jane@example.com","consents":[{"text":"I agree."}]}]}`, url, webhookSecret)
	if err := os.WriteFile(f, []byte(seed), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// An opt-out through the running server reaches the seed file's webhook
// endpoint, signed as Standard Webhooks says, when -webhook-allow-private
// lets the server reach the test's receiver on 127.0.0.1.
func TestServerWebhook(t *testing.T) {
	var (
		mu  sync.Mutex
		got []*http.Request
		bod [][]byte
	)
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got, bod = append(got, r), append(bod, b)
		mu.Unlock()
	}))
	defer rc.Close()
	s := start(t, "-store", "sqlite", "-dsn", filepath.Join(t.TempDir(), "c.db"), "-seed", webhookSeed(t, rc.URL),
		"-webhook-allow-private", "-replayer", "/nonexistent")
	if code, v := s.call(t, "POST", "/opt-out", "", `{"company_id":"acme","email":"Jane@Example.com"}`); code != 200 {
		t.Fatalf("opt-out: %d %v", code, v)
	}
	delivered := testwait.Until(t, 50*time.Millisecond, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) > 0
	})
	if !delivered {
		t.Fatalf("no webhook:\n%s", s.output())
	}
	mu.Lock()
	r, body := got[0], bod[0]
	mu.Unlock()
	// Standard Webhooks: HMAC-SHA256 keyed with the decoded secret over
	// "id.timestamp.body", "v1," and its base64.
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(webhookSecret, "whsec_"))
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(r.Header.Get("webhook-id") + "." + r.Header.Get("webhook-timestamp") + "." + string(body)))
	if want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)); r.Header.Get("webhook-signature") != want {
		t.Errorf("webhook-signature %q; want %q", r.Header.Get("webhook-signature"), want)
	}
	var ev struct {
		Type string
		Data struct {
			CertificateIDs []string `json:"certificate_ids"`
		}
	}
	if err := json.Unmarshal(body, &ev); err != nil || ev.Type != "consent.revoked" || fmt.Sprint(ev.Data.CertificateIDs) != "[cert-1]" {
		t.Errorf("webhook body %s (%v); want consent.revoked of cert-1", body, err)
	}
	if strings.Contains(strings.ToLower(string(body)), "jane") {
		t.Errorf("the webhook holds the email: %s", body)
	}
	s.stop(t)
}

// Without -webhook-allow-private, a seed file's webhook to a loopback
// address is refused, naming it, and the server does not start.
func TestServerWebhookPrivateRefused(t *testing.T) {
	cmd := exec.Command(serverBinary(t), "-addr", "127.0.0.1:0", "-store", "memory",
		"-seed", webhookSeed(t, "http://127.0.0.1:9/hook"), "-replayer", "/nonexistent")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("server with a private webhook URL: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), `webhooks[0]: url: 127.0.0.1 is a loopback`) {
		t.Errorf("the error does not name the webhook:\n%s", out)
	}
}
