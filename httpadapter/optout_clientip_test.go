package httpadapter_test

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
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
