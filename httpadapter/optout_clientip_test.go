package httpadapter_test

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/store/memstore"
)

// Behind a proxy trusted by its IPv4-mapped prefix, as a dual-stack
// listener reports it, each forwarded client has its own opt-out bucket:
// one that spends its 10 leaves the next client its own.
func TestOptOutMappedTrustedProxy(t *testing.T) {
	e := setup(t, memstore.New())
	h := e.handler(t, httpadapter.Config{TrustedProxies: httpadapter.TrustedProxies{
		Networks: []netip.Prefix{netip.MustParsePrefix("::ffff:10.0.0.0/104")}}})
	optOut := func(client string) *httptest.ResponseRecorder {
		return serve(h, request{path: "/opt-out", body: `{"company_id":"acme","email":"nobody@example.com"}`,
			remote: "[::ffff:10.0.0.1]:80", header: http.Header{"X-Forwarded-For": {client}}})
	}
	for i := range 10 {
		if rec := optOut("198.51.100.7"); rec.Code != 200 {
			t.Fatalf("request %d: %d %s", i+1, rec.Code, rec.Body)
		}
	}
	if rec := optOut("198.51.100.7"); rec.Code != 429 {
		t.Errorf("11th request of one client: %d, want 429", rec.Code)
	}
	if rec := optOut("203.0.113.9"); rec.Code != 200 {
		t.Errorf("another client behind the proxy: %d %s, want 200", rec.Code, rec.Body)
	}
	must(t, e.store.View(ctx, func(tx consent.Tx) error {
		revs, err := tx.Revocations(ctx, "acme")
		var clients []string
		for _, r := range revs {
			clients = append(clients, r.ClientIP)
		}
		if err == nil && (len(clients) == 0 || clients[len(clients)-1] != "203.0.113.9") {
			t.Errorf("revocations recorded of clients %q, the last 203.0.113.9", clients)
		}
		return err
	}))
}

// An opt-out whose client address is unknown (an untrusted Unix-socket
// peer) is refused as the limited routes refuse it, with the opt-out limit
// off too: its revocation would record no address (D19), and its
// Idempotency-Key would be shared by every client of unknown address.
func TestOptOutUnknownClientLimitOff(t *testing.T) {
	const want = `{"status":500,"error":"the client's address cannot be determined"}` + "\n"
	unix := context.WithValue(context.Background(), http.LocalAddrContextKey, &net.UnixAddr{Name: "/run/app.sock", Net: "unix"})
	for _, perMinute := range []int{-1, 0} { // off, and the default 10 for comparison
		e := setup(t, memstore.New())
		revocations := func() int {
			var n int
			must(t, e.store.View(ctx, func(tx consent.Tx) error {
				revs, err := tx.Revocations(ctx, "acme")
				n = len(revs)
				return err
			}))
			return n
		}
		before := revocations()
		var logs bytes.Buffer
		h := e.handler(t, httpadapter.Config{OptOutPerMinute: perMinute, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		for _, body := range []string{`{"company_id":"acme","certificate_id":"cert-1"}`, `{"company_id":"acme","certificate_id":"cert-2"}`} {
			req := httptest.NewRequest("POST", "/opt-out", strings.NewReader(body)).WithContext(unix)
			req.RemoteAddr = "@"
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", "shared-key")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != 500 || rec.Body.String() != want {
				t.Errorf("OptOutPerMinute %d, %s: %d %s, want 500 %s", perMinute, body, rec.Code, rec.Body, want)
			}
		}
		if n := revocations(); n != before {
			t.Errorf("OptOutPerMinute %d: %d revocations recorded of an unknown client", perMinute, n-before)
		}
		if !strings.Contains(logs.String(), "TrustedProxies.UnixSocket") {
			t.Errorf("OptOutPerMinute %d: the log does not say how to fix it:\n%s", perMinute, logs.String())
		}
	}
}
