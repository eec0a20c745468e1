package main

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/internal/testwait"
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
	_ = resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"valid":true`) || !strings.HasPrefix(resp.Header.Get("X-Request-Id"), "req-") {
		t.Errorf("verify under /consent/: %d %s (request id %q, want the host's req-…)", resp.StatusCode, body, resp.Header.Get("X-Request-Id"))
	}
	// A client's own id is kept by the host and by consentkit alike.
	req, _ = http.NewRequest("POST", srv.URL+"/consent/verify/match", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("X-Request-Id", "client-7")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close() // only the header is checked
	if got := resp.Header.Get("X-Request-Id"); got != "client-7" {
		t.Errorf("the client's request id came back as %q", got)
	}
	for path, want := range map[string]string{"/": "home page", "/status": "ok"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if !strings.Contains(string(b), want) {
			t.Errorf("GET %s = %q", path, b)
		}
	}
	// Unprefixed paths are the host's, not consentkit's.
	resp, err = http.Post(srv.URL+"/verify/match", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close() // only the status is checked
	if resp.StatusCode != 404 {
		t.Errorf("POST /verify/match outside the prefix: %d, want 404", resp.StatusCode)
	}
}

// started runs the command with args until the test ends and returns the
// address it listens on.
func started(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	exit := make(chan int, 1)
	go func() {
		exit <- run(ctx, args, pw, io.Discard)
		_ = pw.Close() // a pipe's writer closes without error
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-exit; code != 0 {
			t.Errorf("exit status %d after shutdown, want 0", code)
		}
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if m := regexp.MustCompile(`listening on http://(\S+)`).FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	select {
	case a := <-addr:
		return a
	case code := <-exit:
		t.Fatalf("exited with %d before listening", code)
	case <-testwait.Near(t):
		t.Fatal("not listening by the test's deadline")
	}
	return ""
}

// -addr chooses the address; the service answers there and stops cleanly.
func TestAddrFlag(t *testing.T) {
	addr := started(t, "-addr", "127.0.0.1:0")
	resp, err := http.Get("http://" + addr + "/status")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close() // only the status is checked
	if resp.StatusCode != 200 {
		t.Errorf("GET /status: %d", resp.StatusCode)
	}
}

// A client that sends the headers of an opt-out and then trickles its body
// is cut off after the server's 30 s read timeout, instead of holding the
// connection as long as it likes.
func TestSlowBodyIsCutOff(t *testing.T) {
	if testing.Short() {
		t.Skip("takes 30 s: the server's read timeout")
	}
	t.Parallel()
	// run serves with httpadapter.NewServer; its read timeout is what cuts
	// the client off. The test waits for the cut as long as it may run,
	// so that a busy machine cannot fail it: the timeout's length is
	// checked here instead of by the clock.
	if rt := httpadapter.NewServer(nil, nil).ReadTimeout; rt != 30*time.Second {
		t.Errorf("the server's read timeout is %v, want 30s", rt)
	}
	addr := started(t, "-addr", "127.0.0.1:0")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	if _, err := io.WriteString(conn, "POST /consent/opt-out HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"company_id\":"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if at, ok := testwait.Deadline(t); ok {
		if err := conn.SetReadDeadline(at); err != nil {
			t.Fatal(err)
		}
	}
	_, err = io.Copy(io.Discard, conn) // until the server closes the connection
	if err != nil {
		t.Fatalf("the connection was still open after %v: %v", time.Since(start).Round(time.Second), err)
	}
	t.Logf("connection closed after %v", time.Since(start).Round(time.Second))
}
