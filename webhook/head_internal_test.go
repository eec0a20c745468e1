package webhook

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A receiver's answer head is bounded as its body is: one that sends
// headers past maxResponseRead fails the delivery rather than being read
// whole (Go's default head limit is 10 MiB, read by every delivery
// worker for every attempt).
func TestAnswerHeadBounded(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer func() { _ = conn.Close() }()
		// Read the request's head, then answer with 1 MiB of headers.
		r := bufio.NewReader(conn)
		for {
			line, err := r.ReadString('\n')
			if err != nil || line == "\r\n" {
				break
			}
		}
		w := bufio.NewWriter(conn)
		_, _ = w.WriteString("HTTP/1.1 204 No Content\r\n")
		pad := "X-Pad: " + strings.Repeat("x", 1000) + "\r\n"
		for range 1 << 10 {
			_, _ = w.WriteString(pad)
		}
		_, _ = w.WriteString("\r\n")
		_ = w.Flush()
	}()
	req, err := http.NewRequest(http.MethodPost, "http://"+ln.Addr().String()+"/", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := newClient(true, 5*time.Second).Do(req)
	if err == nil {
		_ = resp.Body.Close()
		t.Fatalf("an answer with 1 MiB of headers: %s, read whole; want it refused", resp.Status)
	}
}
