package httpadapter_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/consentkit/consentkit/httpadapter"
)

// readCounted counts the bytes the server reads from its connections.
type readCounted struct {
	net.Listener
	n *atomic.Int64
}

func (l readCounted) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countedConn{Conn: c, n: l.n}, nil
}

type countedConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countedConn) Read(p []byte) (int, error) {
	k, err := c.Conn.Read(p)
	c.n.Add(int64(k))
	return k, err
}

// A capture body that the handler does not read to its end — refused
// before it is read (no upload token: 401; the request limit spent: 429;
// the byte budget spent: 429) or over the route's limit (413) — must not
// be read by net/http after the handler returns. net/http drains up to
// 256 KiB of an unread body to keep the connection, even after an answer
// with Connection: close, and those bytes are charged to no budget (D52:
// "a client whose budget is spent has none of its bodies read"). Here one
// client address, whose byte budget is 320 KiB a minute (40 KiB at once),
// sends 20 bodies of 200 KiB, one a connection.
func TestCaptureRefusedBodiesNotDrained(t *testing.T) {
	for _, token := range []string{"", "bogus", "unrouted"} {
		_, h := budgetEnv(t, httpadapter.Config{CaptureBytesPerMinute: 320 << 10, CapturePropertyBytesPerMinute: -1,
			CapturePerMinute: 10})
		var read atomic.Int64
		srv := httptest.NewUnstartedServer(h)
		srv.Listener = readCounted{Listener: srv.Listener, n: &read}
		srv.Start()

		auth, path := "", "/capture/sessions/ses_nosuch/events"
		if token == "unrouted" {
			// A path no route serves (404): no limit, no budget.
			path = "/capture/sessions/ses_nosuch/nothing"
		} else if token != "" {
			// A token for no session: the body is charged (12 KiB of it,
			// the route's limit), read, and answered 413 while the budget
			// lasts, then 429 once it is spent. Sent in 10 requests: the
			// request limit is 10 a minute.
			auth = "Authorization: Bearer " + token + "\r\n"
		}
		body := strings.Repeat(" ", 200<<10)
		var codes []int
		for i := range 20 {
			if token == "bogus" && i == 10 {
				break
			}
			conn, err := net.Dial("tcp", srv.Listener.Addr().String())
			must(t, err)
			// Written beside the reading of the answer: a server that does
			// not read the body answers before it has all been sent.
			go func() { // its error is the server's closing: what is read is counted
				_, _ = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nOrigin: %s\r\n%s"+
					"Content-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s", path, formOrigin, auth, len(body), body)
			}()
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("token %q, request %d: %v", token, i, err)
			}
			codes = append(codes, resp.StatusCode)
			_ = resp.Body.Close()
			_ = conn.Close()
		}
		srv.Close() // every connection's reading done
		if n := read.Load(); n > 320<<10 {
			t.Errorf("token %q: the server read %d KiB of %d capture bodies answered %v from one client, whose budget is 320 KiB a minute",
				token, n>>10, len(codes), codes)
		}
	}
}
