package main

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/internal/testwait"
	"github.com/consentkit/consentkit/store/sqlitestore"
	"github.com/consentkit/consentkit/wallet"
)

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// serverBinary builds the server once for all tests.
func serverBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ckserver")
		if err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(dir, "server")
		out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binary
}

// running is a started server.
type running struct {
	cmd  *exec.Cmd
	base string
	out  *strings.Builder // everything it printed
	mu   sync.Mutex
}

var (
	listening = regexp.MustCompile(`listening on (http://\S+)`)
	tokenLine = regexp.MustCompile(`export TOKEN=(ck_\S+)`) // the guide's demo token
)

// start runs the server with args on a free port, from the repository root
// so that it finds the replayer as a user's `go run ./examples/server` does.
func start(t *testing.T, args ...string) *running {
	t.Helper()
	return startIn(t, "../..", args...)
}

// startIn runs the server with args on a free port, from dir.
func startIn(t *testing.T, dir string, args ...string) *running {
	t.Helper()
	cmd := exec.Command(serverBinary(t), append([]string{"-addr", "127.0.0.1:0"}, args...)...)
	cmd.Dir = dir
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	r := &running{cmd: cmd, out: &strings.Builder{}}
	cmd.Stderr = writerFunc(func(p []byte) (int, error) { r.mu.Lock(); defer r.mu.Unlock(); return r.out.Write(p) })
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // it may have exited already
		_ = cmd.Wait()         // killed: the status says only that
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			r.mu.Lock()
			r.out.WriteString(sc.Text() + "\n")
			r.mu.Unlock()
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	select {
	case r.base = <-found:
	case <-testwait.Near(t):
		t.Fatalf("the server did not start:\n%s", r.output())
	}
	return r
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// waitFor waits for text to appear in the output, until the test's
// deadline is near.
func (r *running) waitFor(t *testing.T, text string) bool {
	return testwait.Until(t, 50*time.Millisecond, func() bool { return strings.Contains(r.output(), text) })
}

func (r *running) output() string { r.mu.Lock(); defer r.mu.Unlock(); return r.out.String() }

// guideToken waits for the whole guide and returns the demo token it
// printed, failing t when there is none.
func (r *running) guideToken(t *testing.T) string {
	t.Helper()
	// start returns at the "listening on" line; the guide's other lines follow it.
	if !r.waitFor(t, "Health: curl") {
		t.Fatalf("the guide was not printed in full:\n%s", r.output())
	}
	m := tokenLine.FindStringSubmatch(r.output())
	if m == nil {
		t.Fatalf("no token printed:\n%s", r.output())
	}
	return m[1]
}

// needsConversion waits until the server says whether video conversion is
// on; off skips the test, except in CI, which must run it.
func (r *running) needsConversion(t *testing.T) {
	t.Helper()
	r.waitFor(t, "video conversion is o") // on or off
	if strings.Contains(r.output(), "video conversion is off") {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI must run video conversion:\n%s", r.output())
		}
		t.Skipf("video conversion not set up here:\n%s", r.output())
	}
}

// stop sends SIGTERM and checks that the server exits 0.
func (r *running) stop(t *testing.T) {
	t.Helper()
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("server exited with %v:\n%s", err, r.output())
		}
	case <-testwait.Near(t):
		t.Fatalf("server did not stop on SIGTERM:\n%s", r.output())
	}
}

// capturePost sends a capture call as the server's own pages do: from its
// origin, with the upload token (if any) as bearer, and decodes the answer.
func (r *running) capturePost(t *testing.T, path, bearer, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("POST", r.base+path, strings.NewReader(body))
	req.Header.Set("Origin", r.base)
	req.Header.Set("Content-Type", "application/json")
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var v map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil && !errors.Is(err, io.EOF) { // EOF: no body
		t.Fatalf("POST %s: %d, the answer is not JSON: %v", path, resp.StatusCode, err)
	}
	return resp.StatusCode, v
}

// call sends a request and decodes the JSON answer.
func (r *running) call(t *testing.T, method, path, token, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, r.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s %s: not JSON: %s", method, path, b)
	}
	return resp.StatusCode, v
}

const (
	acmeToken = "acme-example-token-0001" // from seed.example.json
	seedFile  = "examples/server/seed.example.json"
	replayer  = "retain/mp4/replayer/node_modules/rrweb/dist"
)

// storeArgs are the flags of each store kind, for a fresh store.
func storeArgs(t *testing.T, kind string) []string {
	switch kind {
	case "memory":
		return []string{"-store", "memory"}
	case "sqlite":
		return []string{"-store", "sqlite", "-dsn", filepath.Join(t.TempDir(), "consent.db")}
	default:
		return []string{"-store", "postgres", "-dsn", teststore.PostgresURL(t)}
	}
}

// Every documented endpoint answers through real HTTP on every store, and
// SIGTERM stops the server with exit status 0.
func TestServerServesEveryEndpoint(t *testing.T) {
	for _, kind := range []string{"memory", "sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			args := append(storeArgs(t, kind), "-seed", seedFile, "-video-dir", t.TempDir(), "-replayer", replayer)
			s := start(t, args...)
			if code, body := s.call(t, "GET", "/healthz", "", ""); code != 200 || body["status"] != "ok" {
				t.Errorf("healthz: %d %v", code, body)
			}
			for _, c := range []struct {
				method, path, token, body string
				want                      map[string]any
			}{
				{"POST", "/verify/match", acmeToken, `{"certificate_id":"cert-1","company_id":"acme","consent":"I agree to the terms"}`,
					map[string]any{"valid": true, "verification_type": "first_party"}},
				{"POST", "/api/verify/partial-match", acmeToken, `{"certificate_id":"cert-1","company_id":"acme","term":"TERMS"}`,
					map[string]any{"valid": true}},
				{"POST", "/verify/certificate-info", acmeToken, `{"certificate_id":"cert-1","company_id":"acme","property_id":"acme-web"}`,
					map[string]any{"valid": true, "consent_count": 1.0, "has_consents": true}},
				{"POST", "/api/integrations/acme/retain/s1", acmeToken, "",
					map[string]any{"status": "queued_for_conversion", "remaining_balance": 25.37}},
				{"POST", "/api/integrations/acme/retain/batch", acmeToken, `{"session_ids":["s2","nope"]}`,
					map[string]any{"retained": 1.0, "failed": 1.0, "remaining_balance": 25.27}},
				{"POST", "/verify/session/acme", acmeToken, `{"session_id":"s3"}`,
					map[string]any{"retention_status": "retained", "remaining_balance": 25.17}},
				{"POST", "/verify/certificate/acme", acmeToken, `{"session_id":"s1"}`,
					map[string]any{"certificate_ids": []any{"cert-1"}, "remaining_balance": 25.07}},
				{"POST", "/opt-out", "", `{"company_id":"acme","email":"JANE@example.com"}`,
					map[string]any{"revoked": 1.0, "certificates": []any{"cert-1"}}},
			} {
				code, body := s.call(t, c.method, c.path, c.token, c.body)
				if code != 200 {
					t.Errorf("%s %s: %d %v", c.method, c.path, code, body)
					continue
				}
				for k, v := range c.want {
					if fmt.Sprint(body[k]) != fmt.Sprint(v) {
						t.Errorf("%s %s: %s = %v, want %v", c.method, c.path, k, body[k], v)
					}
				}
			}
			if code, _ := s.call(t, "POST", "/verify/match", acmeToken, `{"certificate_id":"cert-1","company_id":"acme","consent":"I agree to the terms"}`); code != 403 {
				t.Errorf("match after opt-out: %d, want 403", code)
			}
			// Another consumer's certificate is not touched: the README's
			// signed-certificate example checks it after the banner's opt-out.
			code, body := s.call(t, "POST", "/verify/certificate-info", acmeToken, `{"certificate_id":"cert-2","company_id":"acme","property_id":"acme-web"}`)
			if code != 200 || body["valid"] != true {
				t.Errorf("cert-2 after jane's opt-out: %d %v", code, body)
			}
			s.stop(t)
			out := s.output()
			for _, want := range []string{`msg="seed loaded"`, `msg=request method=POST path=/verify/match status=200`, `msg=stopped`} {
				if !strings.Contains(out, want) {
					t.Errorf("the log lacks %q", want)
				}
			}
		})
	}
}

// Retaining through the Retain API produces an MP4 in -video-dir, and the
// session's rrweb_to_video_status reads converted.
func TestServerConvertsRetainedRecording(t *testing.T) {
	videos := t.TempDir()
	s := start(t, "-store", "sqlite", "-dsn", filepath.Join(t.TempDir(), "c.db"), "-seed", seedFile,
		"-video-dir", videos, "-replayer", replayer)
	s.needsConversion(t)
	start := time.Now()
	if code, body := s.call(t, "POST", "/api/integrations/acme/retain/s1", acmeToken, ""); code != 200 {
		t.Fatalf("retain: %d %v", code, body)
	}
	var body map[string]any
	testwait.Until(t, 200*time.Millisecond, func() bool {
		_, body = s.call(t, "GET", "/api/integrations/acme/sessions/s1", acmeToken, "")
		return body["rrweb_to_video_status"] == "converted"
	})
	took := time.Since(start)
	if body["rrweb_to_video_status"] != "converted" {
		t.Fatalf("not converted after %v: %v\n%s", took, body, s.output())
	}
	t.Logf("a 5.642 s recording was converted %v after the retain call", took.Round(time.Millisecond))
	files, _ := filepath.Glob(filepath.Join(videos, "s1", "*.mp4")) // a file of its own per conversion
	video, _ := body["video"].(map[string]any)
	if len(files) != 1 {
		t.Fatalf("videos of s1: %v, want one", files)
	}
	st, err := os.Stat(files[0])
	if err != nil || video == nil || float64(st.Size()) != video["bytes"] {
		t.Errorf("video file %v, %v; status says %v", st, err, video)
	}
	s.stop(t)
}

// Restarting on the same SQLite file keeps every balance, retention and
// revocation.
func TestServerRestartKeepsState(t *testing.T) {
	db := filepath.Join(t.TempDir(), "consent.db")
	args := []string{"-store", "sqlite", "-dsn", db, "-video-dir", t.TempDir(), "-replayer", "/nonexistent"}
	s := start(t, append(args, "-seed", seedFile)...)
	s.call(t, "POST", "/api/integrations/acme/retain/s1", acmeToken, "")
	s.call(t, "POST", "/verify/session/acme", acmeToken, `{"session_id":"s3"}`)
	s.call(t, "POST", "/verify/match", acmeToken, `{"certificate_id":"cert-1","company_id":"acme","consent":"nope"}`)
	s.call(t, "POST", "/opt-out", "", `{"company_id":"acme","certificate_id":"cert-1"}`)
	s.stop(t)

	s = start(t, args...) // no -seed: the data is there already
	if !s.waitFor(t, "no demo data loaded") {
		t.Errorf("the restart did not notice its data:\n%s", s.output())
	}
	if code, _ := s.call(t, "POST", "/verify/match", acmeToken, `{"certificate_id":"cert-1","company_id":"acme","consent":"I agree to the terms"}`); code != 403 {
		t.Errorf("match of the revoked certificate after restart: %d, want 403", code)
	}
	if code, _ := s.call(t, "POST", "/api/integrations/acme/retain/s1", acmeToken, ""); code != 409 {
		t.Errorf("retain after restart: %d, want 409", code)
	}
	code, body := s.call(t, "POST", "/verify/session/acme", acmeToken, `{"session_id":"s2"}`)
	// 25.50 − 0.10 − 0.10 − 0.015 − 0.10 = 25.185
	if code != 200 || fmt.Sprint(body["remaining_balance"]) != "25.185" {
		t.Errorf("after restart: %d %v; want remaining_balance 25.185", code, body)
	}
	s.stop(t)

	st, err := sqlitestore.Open(db, sqlitestore.Config{})
	if err != nil {
		t.Fatal(err)
	}
	teststore.CloseAtEnd(t, st)
	err = st.View(context.Background(), func(tx consent.Tx) error {
		bal, err := tx.Balance(context.Background(), "acme")
		if err != nil || bal != 25_185_000 {
			t.Errorf("balance in the file: %s, %v", bal, err)
		}
		ledger, err := tx.Ledger(context.Background(), "acme")
		var sum wallet.Amount
		for _, e := range ledger {
			if e.Kind.IsCredit() {
				sum += e.Amount
			} else {
				sum -= e.Amount
			}
		}
		if err != nil || sum != bal {
			t.Errorf("ledger sums to %s, balance %s (%v)", sum, bal, err)
		}
		for id, want := range map[string]consent.VideoStatus{"s1": consent.VideoPending, "s2": consent.VideoNone, "s3": consent.VideoNone} {
			ses, err := tx.Session(context.Background(), id)
			if err != nil || ses.RetentionStatus != consent.RetentionRetained || ses.VideoStatus != want {
				t.Errorf("session %s: %+v, %v", id, ses, err)
			}
		}
		c, err := tx.Certificate(context.Background(), "cert-1")
		if err != nil || !c.Revoked() {
			t.Errorf("cert-1 not revoked in the file: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Without -seed an empty store gets demo data and tokens of acme and buyer
// printed once, with a curl for each main endpoint; the tokens work, buyer's
// for a third-party verification of acme's certificate (D9).
func TestServerDemoData(t *testing.T) {
	s := start(t, "-store", "memory", "-replayer", "/nonexistent")
	token := s.guideToken(t)
	out := s.output()
	for _, path := range []string{"/verify/match", "/verify/partial-match", "/verify/certificate-info", "/verify/session/acme",
		"/verify/certificate/acme", "/opt-out", "/api/integrations/acme/retain/s1", "/api/integrations/acme/retain/batch"} {
		if !strings.Contains(out, s.base+path) {
			t.Errorf("no curl for %s", path)
		}
	}
	if !strings.Contains(out, "The dashboard and the operator API are off: set "+OperatorSecretEnv) {
		t.Errorf("the guide does not say how to serve the dashboard:\n%s", out)
	}
	if !s.waitFor(t, "video conversion is off") || !strings.Contains(s.output(), "missing=") {
		t.Errorf("the log does not say which conversion tool is missing:\n%s", s.output())
	}
	if code, body := s.call(t, "POST", "/verify/match", token, `{"certificate_id":"cert-1","company_id":"acme","consent":"I agree to the terms"}`); code != 200 || body["valid"] != true {
		t.Errorf("match with the demo token: %d %v", code, body)
	}
	if code, _ := s.call(t, "POST", "/verify/match", acmeToken, `{"certificate_id":"cert-1","company_id":"acme","consent":"x"}`); code != 401 {
		t.Errorf("the example file's public token works on the demo: %d", code)
	}
	buyer := regexp.MustCompile(`export BUYER_TOKEN=(ck_\S+)`).FindStringSubmatch(out)
	if buyer == nil || !strings.Contains(out, `Bearer $BUYER_TOKEN`) || !strings.Contains(out, `"originator_company_id":"acme"`) {
		t.Fatalf("no token of buyer, or no third-party curl:\n%s", out)
	}
	thirdParty := `{"certificate_id":"cert-2","company_id":"buyer","originator_company_id":"acme","consent":"I agree that Acme may email me about my quote"}`
	if !strings.Contains(out, thirdParty) {
		t.Errorf("the guide's third-party curl is not %s:\n%s", thirdParty, out)
	}
	if code, body := s.call(t, "POST", "/verify/match", buyer[1], thirdParty); code != 200 || body["valid"] != true || body["verification_type"] != "third_party" {
		t.Errorf("third-party match with the demo's buyer token: %d %v", code, body)
	}
	s.stop(t)
}

// With a short default window, the purge that the server runs every
// -purge-interval removes the demo certificate once its window has ended,
// not before (the demo data is dated as of the start): it then verifies as
// 404 (D43), and the log says what was purged.
func TestServerPurges(t *testing.T) {
	s := start(t, "-store", "memory", "-replayer", "/nonexistent", "-default-retention", "4s", "-purge-interval", "200ms")
	token := s.guideToken(t)
	match := `{"certificate_id":"cert-1","company_id":"acme","consent":"I agree to the terms"}`
	if code, body := s.call(t, "POST", "/verify/match", token, match); code != 200 || body["valid"] != true {
		t.Fatalf("match before the window ended: %d %v", code, body)
	}
	var (
		code int
		body map[string]any
	)
	testwait.Until(t, 250*time.Millisecond, func() bool {
		code, body = s.call(t, "POST", "/verify/match", token, match)
		return code != 200
	})
	if code != 404 {
		t.Fatalf("match while waiting for the purge: %d %v; want 200 until it is purged, then 404", code, body)
	}
	if !strings.Contains(s.output(), "purge: expired data removed") {
		t.Errorf("no purge in the log:\n%s", s.output())
	}
	s.stop(t)
}

// With CONSENTKIT_OPERATOR_SECRET set, the operator API answers on
// /operator/ to that secret only, and the dashboard's login is on
// /dashboard/; without it, neither is served.
func TestServerOperatorAPI(t *testing.T) {
	const secret = "an-operator-secret-of-the-tests-0123456789"
	t.Setenv(OperatorSecretEnv, secret)
	s := start(t, "-store", "memory", "-replayer", "/nonexistent")
	body := `{"url":"https://hooks.acme.example/in","events":["consent.revoked"]}`
	if code, got := s.call(t, "POST", "/operator/companies/acme/webhooks", secret, body); code != 201 || got["secret"] == nil {
		t.Errorf("add a webhook through the operator API: %d %v", code, got)
	}
	if code, _ := s.call(t, "GET", "/operator/companies/acme/webhooks", acmeToken, ""); code != 401 {
		t.Errorf("a company token on the operator API: %d, want 401", code)
	}
	// The metrics, behind the same secret, count that request.
	req, _ := http.NewRequest("GET", s.base+"/operator/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+secret)
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Errorf("metrics: %v", err)
	} else {
		scrape, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		for _, want := range []string{`consentkit_http_requests_total{code="201",route="POST /operator/companies/{company_id}/webhooks"} 1`,
			`consentkit_job_queue_depth{kind="webhook"} `} {
			if resp.StatusCode != 200 || !strings.Contains(string(scrape), want) {
				t.Errorf("metrics: %d, want 200 with %s:\n%.2000s", resp.StatusCode, want, scrape)
			}
		}
	}
	if code, page := get(t, s.base+"/dashboard/companies/acme"); code != 200 || !strings.Contains(page, `name="secret"`) {
		t.Errorf("the dashboard: %d, want its login form: %s", code, page)
	}
	if !strings.Contains(s.output(), "/dashboard/") {
		t.Errorf("the server does not say where the dashboard is:\n%s", s.output())
	}
	if c := dashboardLogin(t, s, secret); c == "" || strings.Contains(c, "Secure") {
		t.Errorf("a login over plain HTTP from an untrusted peer that claims HTTPS: cookie %q, want one, not Secure", c)
	}
	s.stop(t)

	// Behind a trusted proxy that says the client came over HTTPS, the
	// dashboard's cookie is Secure: -trusted-proxies reaches the dashboard.
	s = start(t, "-store", "memory", "-replayer", "/nonexistent", "-trusted-proxies", "127.0.0.1/32")
	if c := dashboardLogin(t, s, secret); !strings.Contains(c, "Secure") {
		t.Errorf("a login through a trusted HTTPS proxy: cookie %q, want Secure", c)
	}
	s.stop(t)

	t.Setenv(OperatorSecretEnv, "")
	s = start(t, "-store", "memory", "-replayer", "/nonexistent")
	if code, _ := s.call(t, "GET", "/operator/companies/acme/webhooks", secret, ""); code != 404 {
		t.Errorf("the operator API without %s: %d, want 404", OperatorSecretEnv, code)
	}
	if code, _ := get(t, s.base+"/dashboard/"); code != 404 {
		t.Errorf("the dashboard without %s: %d, want 404", OperatorSecretEnv, code)
	}
	s.stop(t)
}

// get fetches url and returns its status and body.
// dashboardLogin logs in to the dashboard as a proxy would forward an
// HTTPS request, and returns the login cookie the answer sets ("" when
// none).
func dashboardLogin(t *testing.T, s *running, secret string) string {
	t.Helper()
	req, _ := http.NewRequest("POST", s.base+"/dashboard/login", strings.NewReader("secret="+secret))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Forwarded-Proto", "https")
	req.Header.Set("X-Forwarded-For", "203.0.113.9")
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close() // only the headers are checked
	for _, c := range resp.Header.Values("Set-Cookie") {
		if strings.HasPrefix(c, "consentkit_dashboard=") {
			return c
		}
	}
	t.Logf("login: %d, no cookie", resp.StatusCode)
	return ""
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// The server signs certificates with a key it makes on first start and
// keeps beside its SQLite file, readable by its owner only, and uses again
// after a restart; the key is published (D41).
func TestServerSignsCertificates(t *testing.T) {
	dsn := filepath.Join(t.TempDir(), "consent.db")
	var keyIDs []string
	for range 2 {
		s := start(t, "-store", "sqlite", "-dsn", dsn, "-replayer", "/nonexistent")
		if !s.waitFor(t, "Health: curl") {
			t.Fatalf("no guide:\n%s", s.output())
		}
		code, keys := s.call(t, "GET", "/.well-known/consentkit-keys", "", "")
		list, _ := keys["keys"].([]any)
		if code != 200 || len(list) != 1 {
			t.Fatalf("keys: %d %v", code, keys)
		}
		keyIDs = append(keyIDs, list[0].(map[string]any)["key_id"].(string))
		if m := tokenLine.FindStringSubmatch(s.output()); m != nil { // first start only
			code, info := s.call(t, "POST", "/verify/certificate-info", m[1], `{"certificate_id":"cert-1","company_id":"acme","property_id":"acme-web"}`)
			if code != 200 || info["signature"] == nil || info["key_id"] != keyIDs[0] || info["signed"] == nil {
				t.Errorf("certificate-info: %d %v; want it signed by %s", code, info, keyIDs[0])
			}
		}
		s.stop(t)
	}
	if keyIDs[0] != keyIDs[1] {
		t.Errorf("key %s after a restart, %s before; want the same key", keyIDs[1], keyIDs[0])
	}
	st, err := os.Stat(dsn + ".signing-key")
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("key file: %v, %v; want mode 0600 beside the database", st, err)
	}
}

func TestFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-store", "mysql"}, {"-store", "postgres"}, {"-default-retention", "soon"}, {"extra"},
		{"-video-dir", "v", "-video-s3-bucket", "b"}, {"-conversions", "0"}, {"-conversions", "65"},
		{"-purge-interval", "0s"}, {"-purge-interval", "-1m"},
		// S3 settings without a bucket would keep videos in a directory.
		{"-video-s3-require-lock"}, {"-video-s3-endpoint", "http://127.0.0.1:7070"}, {"-video-s3-prefix", "v/"},
	} {
		if _, err := parseFlags(args, io.Discard); err == nil {
			t.Errorf("parseFlags(%q) accepted", args)
		}
	}
	o, err := parseFlags([]string{"-default-retention", "30d", "-long-term-retention", "4y", "-trusted-proxies", "10.0.0.0/8, 192.168.1.1/32"}, io.Discard)
	if err != nil || time.Duration(o.defaultRet) != 30*24*time.Hour || time.Duration(o.longTermRet) != 4*365*24*time.Hour || !o.longTermSet || o.dsn != "consent.db" {
		t.Errorf("parseFlags = %+v, %v", o, err)
	}
	// Without -long-term-retention the library's five calendar years hold,
	// and -h shows no fixed number of days for them.
	var help strings.Builder
	if o, err := parseFlags([]string{"-h"}, &help); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("parseFlags(-h) = %+v, %v", o, err)
	}
	if o, err := parseFlags(nil, io.Discard); err != nil || o.longTermRet != 0 || o.longTermSet {
		t.Errorf("parseFlags() = %+v, %v; want no long-term retention set", o, err)
	}
	if h := help.String(); !strings.Contains(h, "default five calendar years") || strings.Contains(h, "1825d)") {
		t.Errorf("-h on -long-term-retention:\n%s", h)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "key")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	s3, err := parseFlags([]string{"-video-s3-bucket", "videos", "-video-s3-endpoint", "http://127.0.0.1:7070", "-conversions", "2"}, io.Discard)
	if err != nil || s3.s3.Bucket != "videos" || !s3.s3.PathStyle || s3.s3.AccessKeyID != "key" || s3.s3.SecretAccessKey != "secret" || s3.conversions != 2 {
		t.Errorf("parseFlags with S3 = %+v, %v", s3, err)
	}
	if p, err := parseCIDRs(o.trustedProxies); err != nil || len(p) != 2 {
		t.Errorf("parseCIDRs = %v, %v", p, err)
	}
	if _, err := parseCIDRs("10.0.0.1"); err == nil {
		t.Error("an address without a prefix length was accepted as a CIDR")
	}
}

// A retention too long for a time.Duration is refused with a message that
// says so, never wrapped around to a negative value and the default.
func TestFlagsOutOfRange(t *testing.T) {
	for _, flag := range []string{"-default-retention", "-long-term-retention"} {
		for _, v := range []string{"300y", "106752d", "99999999999999999999d", "2562048h", "9999999999h"} {
			var stderr strings.Builder
			_, err := parseFlags([]string{flag, v}, &stderr)
			if err == nil || !strings.Contains(stderr.String(), "out of range") {
				t.Errorf("%s %s: %v; stderr %q; want an out-of-range error", flag, v, err, stderr.String())
			}
		}
		for _, v := range []string{"0d", "-5d", "0", "-1h", "5x", "d", "y", ""} {
			var stderr strings.Builder
			if _, err := parseFlags([]string{flag, v}, &stderr); err == nil || !strings.Contains(stderr.String(), "positive duration") {
				t.Errorf("%s %q: %v; stderr %q; want a malformed-duration error", flag, v, err, stderr.String())
			}
		}
	}
	o, err := parseFlags([]string{"-long-term-retention", "292y", "-default-retention", "106751d"}, io.Discard)
	if err != nil || time.Duration(o.longTermRet) != 292*365*24*time.Hour || time.Duration(o.defaultRet) != 106751*24*time.Hour {
		t.Errorf("the longest durations: %+v, %v", o, err)
	}
}

// A seed file with an error names it, loads nothing and exits non-zero.
func TestServerBadSeed(t *testing.T) {
	seed := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(seed, []byte(`{"companies":[{"id":"a","name":"A"},{"id":"a","name":"again"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "c.db")
	cmd := exec.Command(serverBinary(t), "-addr", "127.0.0.1:0", "-store", "sqlite", "-dsn", db, "-seed", seed, "-replayer", "/nonexistent")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("server with a bad seed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), `companies[1] \"a\": company already exists`) {
		t.Errorf("the error does not name the item:\n%s", out)
	}
	st, err := sqlitestore.Open(db, sqlitestore.Config{})
	if err != nil {
		t.Fatal(err)
	}
	teststore.CloseAtEnd(t, st)
	err = st.View(context.Background(), func(tx consent.Tx) error {
		ids, err := tx.CompanyIDs(context.Background(), "", 10)
		if len(ids) != 0 {
			t.Errorf("companies %v were loaded", ids)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A server started before rrweb's replayer was installed notices it once
// installed, without a restart, and says so; an attestation asked for
// meanwhile stays pending, and runs once the tools are there (D49).
func TestServerNoticesToolsInstalledLater(t *testing.T) {
	for _, need := range []string{"/usr/lib/chromium/chromium-headless-shell", filepath.Join("../..", replayer, "rrweb.umd.min.cjs")} {
		if _, err := os.Stat(need); err != nil && os.Getenv("CI") != "true" {
			t.Skipf("video tools not set up here (%v); the test copies rrweb's bundle and needs the other tools in place", err)
		}
	}
	dir := t.TempDir()
	s := start(t, "-store", "memory", "-replayer", dir, "-tools-recheck", "100ms", "-video-dir", t.TempDir())
	if !s.waitFor(t, "video conversion is off") || !strings.Contains(s.output(), "missing=rrweb") {
		t.Fatalf("the log does not say rrweb is missing:\n%s", s.output())
	}
	// The guide, with its token, is printed apart from the worker's log.
	token := s.guideToken(t)
	attestation := func(path, body string) string {
		t.Helper()
		code, got := s.call(t, "POST", path, token, body)
		a, _ := got["attestation"].(map[string]any)
		status, _ := a["status"].(string)
		if code != 200 || status == "" {
			t.Fatalf("match: %d %v", code, got)
		}
		return status
	}
	const ask = `{"certificate_id":"cert-1","company_id":"acme","consent":"I agree to the terms","attest":true}`
	if status := attestation("/verify/match", ask); status != "pending" {
		t.Fatalf("an attestation asked for without the tools: %s, want pending", status)
	}
	for _, f := range []string{"rrweb.umd.min.cjs", "style.min.css"} {
		b, err := os.ReadFile(filepath.Join("../..", replayer, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if !s.waitFor(t, "video conversion is on") {
		t.Fatalf("the server did not notice the replayer:\n%s", s.output())
	}
	if n := strings.Count(s.output(), "video conversion is on"); n != 1 {
		t.Errorf("the log says %d times that conversion is on, want once", n)
	}
	const info = `{"certificate_id":"cert-1","company_id":"acme","property_id":"acme-web"}` // free, unlike match
	if !testwait.Until(t, 50*time.Millisecond, func() bool { return attestation("/verify/certificate-info", info) != "pending" }) {
		t.Errorf("the attestation is still pending once the tools are there:\n%s", s.output())
	}
	s.stop(t)
}

// A key given in the environment signs instead of a file, and no file is
// written; a malformed one stops the server with an error naming it.
func TestServerSigningKeyFromEnv(t *testing.T) {
	seed := make([]byte, 32)
	for i := range seed {
		seed[i] = byte(i)
	}
	t.Setenv(SigningKeyEnv, `{"key_id":"env-key-1","private_key":"`+base64.StdEncoding.EncodeToString(seed)+`","created_at":"2026-01-01T00:00:00Z"}`)
	dsn := filepath.Join(t.TempDir(), "consent.db")
	s := start(t, "-store", "sqlite", "-dsn", dsn, "-replayer", "/nonexistent")
	if !s.waitFor(t, "Health: curl") {
		t.Fatalf("no guide:\n%s", s.output())
	}
	code, keys := s.call(t, "GET", "/.well-known/consentkit-keys", "", "")
	list, _ := keys["keys"].([]any)
	want := base64.StdEncoding.EncodeToString(ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey))
	if code != 200 || len(list) != 1 || list[0].(map[string]any)["key_id"] != "env-key-1" || list[0].(map[string]any)["public_key"] != want {
		t.Errorf("keys: %d %v; want env-key-1 with public key %s", code, keys, want)
	}
	s.stop(t)
	if _, err := os.Stat(dsn + ".signing-key"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a key file was written beside the database: %v", err)
	}

	t.Setenv(SigningKeyEnv, `{"key_id":"k","private_key":"c2hvcnQ="}`)
	var stderr strings.Builder
	cmd := exec.Command(serverBinary(t), "-addr", "127.0.0.1:0", "-store", "memory", "-replayer", "/nonexistent")
	cmd.Dir, cmd.Stderr, cmd.Stdout = "../..", &stderr, &stderr
	if err := cmd.Run(); err == nil || !strings.Contains(stderr.String(), SigningKeyEnv) {
		t.Errorf("a malformed key in the environment: %v, %q; want the server to stop naming %s", err, stderr.String(), SigningKeyEnv)
	}
}

// Two instances on one PostgreSQL, each with a key file of its own: the
// second is refused at start, naming the first's key, unless it trusts the
// keys published in the store (-trust-published-keys); then the two sign
// under ids of their own, publish both keys, and each verifies what the
// other signed. A third whose key file reuses an id with another key is
// refused at start, naming the id (D41).
func TestServerInstancesWithoutSharedKey(t *testing.T) {
	dsn := teststore.PostgresURL(t)
	keyFile := func() string { return filepath.Join(t.TempDir(), "signing.key") }
	refused := func(want string, args ...string) {
		t.Helper()
		cmd := exec.Command(serverBinary(t), append([]string{"-addr", "127.0.0.1:0", "-store", "postgres", "-dsn", dsn, "-replayer", "/nonexistent"}, args...)...)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() == 0 || !strings.Contains(string(out), want) {
			t.Errorf("an instance with %v: %v\n%s; want it refused, saying %q", args, err, out, want)
		}
	}
	first := start(t, "-store", "postgres", "-dsn", dsn, "-signing-key", keyFile(), "-replayer", "/nonexistent")
	token := first.guideToken(t)
	ownKey := keyFile()
	refused("-trust-published-keys", "-signing-key", ownKey)
	second := start(t, "-store", "postgres", "-dsn", dsn, "-signing-key", ownKey, "-replayer", "/nonexistent", "-trust-published-keys")
	if !second.waitFor(t, "Health: curl") {
		t.Fatalf("the second instance did not start:\n%s", second.output())
	}
	ids := func(s *running) []string {
		code, keys := s.call(t, "GET", "/.well-known/consentkit-keys", "", "")
		list, _ := keys["keys"].([]any)
		var out []string
		for _, k := range list {
			out = append(out, k.(map[string]any)["key_id"].(string))
		}
		if code != 200 {
			t.Fatalf("keys: %d %v", code, keys)
		}
		return out
	}
	a, b := ids(first), ids(second)
	if len(a) != 1 || len(b) != 2 || a[0] == b[0] || b[1] != a[0] {
		t.Fatalf("published keys: %v on the first, %v on the second; want its own on the first, both on the second, its own first", a, b)
	}
	// The demo certificate the first signed verifies on the second.
	code, info := second.call(t, "POST", "/verify/certificate-info", token, `{"certificate_id":"cert-2","company_id":"acme","property_id":"acme-web"}`)
	if code != 200 || info["key_id"] != a[0] {
		t.Errorf("the second instance on the first's certificate: %d %v; want 200, signed by %s", code, info, a[0])
	}
	// A key file that reuses the first's id with another key: refused.
	impostor := keyFile()
	seed := make([]byte, 32)
	seed[0] = 1
	b2, _ := json.Marshal(map[string]any{"key_id": a[0], "private_key": base64.StdEncoding.EncodeToString(seed), "created_at": "2026-01-01T00:00:00Z"})
	if err := os.WriteFile(impostor, b2, 0o600); err != nil {
		t.Fatal(err)
	}
	refused("key id "+a[0]+" is published already with another key", "-signing-key", impostor, "-trust-published-keys")
	first.stop(t)
	second.stop(t)
}

// With S3 on, the server warns when the directories an earlier run wrote
// to hold recordings or videos, which its database may name and S3
// cannot serve; it stays quiet when they hold none.
func TestWarnDirectoriesLeft(t *testing.T) {
	root := t.TempDir()
	o := &options{recordingsDir: filepath.Join(root, "rec"), videoDir: filepath.Join(root, "videos")}
	warnings := func() int {
		var b strings.Builder
		warnDirectoriesLeft(o, slog.New(slog.NewTextHandler(&b, nil)))
		return strings.Count(b.String(), "level=WARN")
	}
	if n := warnings(); n != 0 {
		t.Errorf("no directories: %d warnings", n)
	}
	for _, dir := range []string{filepath.Join(o.recordingsDir, "recordings", ".tmp"), o.videoDir} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			t.Fatal(err)
		}
	}
	if n := warnings(); n != 0 {
		t.Errorf("empty directories (a temporary one only): %d warnings", n)
	}
	for _, f := range []string{filepath.Join(o.recordingsDir, "recordings", "s1"), filepath.Join(o.videoDir, "s1.mp4")} {
		if err := os.WriteFile(f, []byte("kept"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if n := warnings(); n != 2 {
		t.Errorf("a recording and a video left: %d warnings, want 2", n)
	}
}
