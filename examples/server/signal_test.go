package main

import (
	"bufio"
	"errors"
	"net"
	"net/url"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/consentkit/consentkit/internal/testwait"
)

// A second SIGTERM ends the server at once, as a second Ctrl-C does,
// while the first one's shutdown waits for a request in flight (here one
// whose body stalls, which the shutdown would wait for until the read
// timeout). The signal handler let go only when run returned, so every
// later signal was swallowed.
func TestServerSecondSignalEndsIt(t *testing.T) {
	s := start(t, "-store", "memory", "-replayer", "/nonexistent")
	u, err := url.Parse(s.base)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	// Headers, then, once the handler reads the body (its "100 Continue":
	// the request is in flight, not a connection the shutdown may close
	// unread), a piece of a body that declares more: the handler waits for
	// the rest.
	if _, err := conn.Write([]byte("POST /opt-out HTTP/1.1\r\nHost: " + u.Host +
		"\r\nContent-Type: application/json\r\nContent-Length: 1000\r\nExpect: 100-continue\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	status, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || !strings.HasPrefix(status, "HTTP/1.1 100 ") {
		t.Fatalf("the handler did not ask for the body: %q, %v", status, err)
	}
	if _, err := conn.Write([]byte(`{"company_id":"ac`)); err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if !s.waitFor(t, "shutting down") {
		t.Fatalf("no shutdown began:\n%s", s.output())
	}
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			var exit *exec.ExitError
			if !errors.As(err, &exit) || !exit.Sys().(syscall.WaitStatus).Signaled() {
				t.Fatalf("the server ended with %v, not by the second signal:\n%s", err, s.output())
			}
			return
		case <-tick.C:
			// Again until it ends: the handler lets go just after the
			// first signal, and one sent before is swallowed.
			_ = s.cmd.Process.Signal(syscall.SIGTERM)
		case <-testwait.Near(t):
			t.Fatalf("the server did not end:\n%s", s.output())
		}
	}
}
