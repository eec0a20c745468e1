//go:build linux

package webhook_test

import (
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/webhook"
)

// TestDialTimeout: an endpoint that never accepts the connection costs an
// attempt its dial timeout (Config.DialTimeout), not the attempt's whole
// timeout (D53). The endpoint is a socket listening with a backlog of
// none whose one queued connection is never accepted: Linux then drops
// every further SYN, so a dial waits until the dialer gives up.
func TestDialTimeout(t *testing.T) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
	held, err := net.Dial("tcp", addr) // fills the queue
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = held.Close() })

	// The attempt's timeout is the tests' patient one: only the dial
	// timeout can end this attempt with a dial error.
	e := newEnv(t, teststore.Memory(t), envOpts{webhook: webhook.Config{DialTimeout: 200 * time.Millisecond}})
	ep := e.endpoint(t, "http://"+addr+"/", consent.EventCertificateIssued)
	e.issue(t, "cert-1")
	if n := e.drain(t); n != 1 {
		t.Fatalf("%d jobs ran; want 1", n)
	}
	log := e.log(t, ep.ID)
	if len(log) != 1 || log[0].Status != 0 || !strings.Contains(log[0].Error, "dial tcp") || !strings.Contains(log[0].Error, "i/o timeout") {
		t.Errorf("log %+v; want one attempt ended by the dial timeout", log)
	}
}
