package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/blob"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/internal/testwait"
	"github.com/consentkit/consentkit/retain"
)

// inProcess is a server that run runs in this process.
type inProcess struct {
	out, log logBuffer
	cancel   context.CancelFunc
	done     chan int
	once     sync.Once
}

// runServer runs the server in-process with args, after flags of its own
// directories and no recorder nor video conversion; it waits for the whole
// guide, and stops the server at the end of the test.
func runServer(t *testing.T, args ...string) *inProcess {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	s := &inProcess{cancel: cancel, done: make(chan int, 1)}
	args = append([]string{"-install-recorder=false", "-replayer", "/nonexistent",
		"-video-dir", filepath.Join(dir, "v"), "-recordings-dir", filepath.Join(dir, "r")}, args...)
	exited := make(chan struct{})
	go func() { s.done <- run(ctx, args, &s.out, &s.log); close(exited) }()
	t.Cleanup(s.stop)
	guide := testwait.Until(t, 20*time.Millisecond, func() bool {
		select {
		case <-exited:
			return true
		default:
			return strings.Contains(s.out.String(), "Health: curl")
		}
	})
	if !guide || !strings.Contains(s.out.String(), "Health: curl") {
		t.Fatalf("no guide:\n%s\n%s", s.out.String(), s.log.String())
	}
	return s
}

// stop stops the server; it may be called again.
func (s *inProcess) stop() { s.once.Do(func() { s.cancel(); <-s.done }) }

// base is the origin that the guide says the server listens on.
func (s *inProcess) base(t *testing.T) string {
	t.Helper()
	m := listening.FindStringSubmatch(s.out.String())
	if m == nil {
		t.Fatalf("no address in the guide:\n%s", s.out.String())
	}
	return m[1]
}

// A start that fails because its address is taken loads nothing, so that
// the next start loads the demo data and shows its tokens ("shown once"),
// and a seed file loads on the next start rather than find the store
// filled by the failed one.
func TestServerFailedStartLoadsNothing(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = busy.Close() }()
	for _, seeded := range []bool{false, true} {
		args := []string{"-dsn", filepath.Join(t.TempDir(), "consent.db"), "-video-dir", t.TempDir(), "-recordings-dir", t.TempDir(),
			"-install-recorder=false", "-replayer", "/nonexistent"}
		if seeded {
			args = append(args, "-seed", "seed.example.json")
		}
		var out, log logBuffer
		if code := run(context.Background(), append(args, "-addr", busy.Addr().String()), &out, &log); code != 1 {
			t.Fatalf("seeded %v: a start on an address in use exits %d, want 1:\n%s", seeded, code, log.String())
		}
		if strings.Contains(out.String(), "export TOKEN=") {
			continue // shown at least: not lost
		}
		s := runServer(t, append(args, "-addr", "127.0.0.1:0")...)
		switch got := s.out.String(); {
		case !seeded && !strings.Contains(got, "export TOKEN="):
			t.Errorf("after a start that failed, no start shows the demo token; the next one says:\n%s", got)
		case seeded && !strings.Contains(s.log.String(), "seed loaded"):
			t.Errorf("after a start that failed, the seed file does not load:\n%s", s.log.String())
		}
		s.stop()
	}
}

// With -addr on every interface (0.0.0.0:PORT, or :PORT as in a
// container), the address the guide tells to open is an origin of the
// demo property, and the demo page loads its snippet from it: a capture
// session from that page is created, not refused.
func TestServerDemoOnEveryInterface(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0"} {
		s := runServer(t, "-store", "memory", "-addr", addr)
		m := regexp.MustCompile(`Open (\S+)/demo in a browser`).FindStringSubmatch(s.out.String())
		if m == nil {
			t.Fatalf("-addr %s: the guide has no demo:\n%s", addr, s.out.String())
		}
		base := m[1]
		if base != s.base(t) {
			t.Errorf("-addr %s: the guide listens on %s and opens the demo at %s", addr, s.base(t), base)
		}
		code, page := get(t, base+"/demo")
		src := regexp.MustCompile(`<script src="([^"]+)/capture/capture.js"`).FindStringSubmatch(page)
		if code != 200 || src == nil || src[1] != base {
			t.Errorf("-addr %s: the demo page at %s: %d, snippet %v; want it from %s", addr, base, code, src, base)
		}
		req, _ := http.NewRequest("POST", base+"/capture/sessions", strings.NewReader(`{"property_id":"acme-demo","url":"`+base+`/demo"}`))
		req.Header.Set("Origin", base)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Errorf("-addr %s: a capture session from the page the guide opens (%s): %d %s, want 201", addr, base, resp.StatusCode, body)
		}
		s.stop()
	}
}

// consent.Store may run an Update's function again. When another server
// sharing the store loads the demo data in between, the rerun finds the
// store filled and loads nothing: prepare then returns no tokens, not
// those of the run rolled back, which do not exist.
func TestPrepareRunAgainReturnsNoRolledBackTokens(t *testing.T) {
	ctx := t.Context()
	inner := teststore.Memory(t)
	rs := &teststore.Rerun{Store: inner}
	svc, err := consentkit.NewService(rs, consentkit.Config{})
	if err != nil {
		t.Fatal(err)
	}
	other, err := consentkit.NewService(inner, consentkit.Config{})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	var theirs demoTokens
	rs.Between = func() {
		if theirs, err = prepare(ctx, other, "", log); err != nil || theirs.acme == "" {
			t.Errorf("the other server's prepare: %+v, %v", theirs, err)
		}
	}
	tokens, err := prepare(ctx, svc, "", log)
	if err != nil {
		t.Fatal(err)
	}
	if tokens != (demoTokens{}) {
		_, err := svc.Authenticate(ctx, tokens.acme)
		t.Errorf("prepare, run again after another server loaded the demo, returned tokens %+v (acme's: %v), want none", tokens, err)
	}
}

// The guide's commands name the example data's ids (acme, cert-1, s1…):
// after a seed file of other data, at its start and on a restart, the
// guide prints none of them, nor names a token that was never printed.
// After the demo data, a restart still prints them.
func TestServerGuideFollowsTheData(t *testing.T) {
	seedFile := filepath.Join(t.TempDir(), "zeta.json")
	if err := os.WriteFile(seedFile, []byte(`{"companies":[{"id":"zeta","name":"Z","tokens":[{"token":"zeta-token-0123456789"}]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	custom := []string{"-addr", "127.0.0.1:0", "-dsn", filepath.Join(t.TempDir(), "c.db")}
	for _, args := range [][]string{append(custom, "-seed", seedFile), custom} {
		s := runServer(t, args...)
		if out := s.out.String(); strings.Contains(out, "acme") || strings.Contains(out, "cert-1") || strings.Contains(out, "printed") ||
			!strings.Contains(out, "a token of one of its companies") {
			t.Errorf("%v: the guide names data the store does not hold:\n%s", args, out)
		}
		s.stop()
	}
	demo := []string{"-addr", "127.0.0.1:0", "-dsn", filepath.Join(t.TempDir(), "d.db")}
	s := runServer(t, demo...)
	s.stop()
	s = runServer(t, demo...)
	if out := s.out.String(); !strings.Contains(out, "a token of company acme") || !strings.Contains(out, `"certificate_id":"cert-1"`) {
		t.Errorf("a restart after the demo data leaves out the commands on it:\n%s", out)
	}
}

// The metrics report the queue depth of every kind of job that queues,
// among them the screenshots' removal (screenshot.delete).
func TestServerWatchesEveryQueue(t *testing.T) {
	const secret = "an-operator-secret-of-the-tests-0123456789"
	t.Setenv(OperatorSecretEnv, secret)
	s := runServer(t, "-store", "memory", "-addr", "127.0.0.1:0")
	req, _ := http.NewRequest("GET", s.base(t)+"/operator/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	scrape, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()

	// The kinds that the library's handlers run, but the periodic ones,
	// so that a kind added to them is watched too.
	svc, err := consentkit.NewService(teststore.Memory(t), consentkit.Config{Recordings: blob.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	purger, err := retain.NewPurger(retain.PurgeConfig{Service: svc, Videos: retain.Dir{Root: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	moves, err := retain.MoveHandlers(retain.MoveConfig{Service: svc})
	if err != nil {
		t.Fatal(err)
	}
	kinds := []string{"convert", "attest", "webhook", "insights", "screenshot.delete"}
	for _, h := range append(purger.Handlers(), moves...) {
		if h.Every == 0 && !slices.Contains(kinds, h.Kind) {
			kinds = append(kinds, h.Kind)
		}
	}
	for _, k := range kinds {
		if want := `consentkit_job_queue_depth{kind="` + k + `"} `; resp.StatusCode != 200 || !strings.Contains(string(scrape), want) {
			t.Errorf("metrics: %d, no %s", resp.StatusCode, want)
		}
	}
}
