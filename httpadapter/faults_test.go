package httpadapter_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/internal/teststore"
)

// Hostile input and hostile clients: each test here is one fault that the
// HTTP layer must not have.

// Text that one store would refuse (Postgres: NUL in text) is refused on
// every store with 400 naming the field, and nothing is revoked or
// recorded; text a store can keep is kept exactly.
func TestControlCharactersRefusedAlike(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e := setup(t, open(t))
		h := e.handler(t, httpadapter.Config{})
		for _, reason := range []string{`bad\u0000reason`, `bell\u0007`, `esc\u001b[31m`} {
			rec := serve(h, request{path: "/opt-out", body: `{"company_id":"acme","certificate_id":"cert-1","reason":"` + reason + `"}`})
			if rec.Code != 400 {
				t.Errorf("reason %s: status %d, want 400: %s", reason, rec.Code, rec.Body)
			}
			checkBody(t, rec.Body.Bytes(), `{"status":400,"error":"reason must be valid UTF-8 without control characters other than tab, line feed and carriage return"}`)
		}
		must(t, e.store.View(ctx, func(tx consent.Tx) error {
			revs, err := tx.Revocations(ctx, "acme")
			if len(revs) != 0 {
				t.Errorf("%d revocations recorded from refused requests", len(revs))
			}
			return err
		}))
		if rec := serve(h, request{path: "/verify/match", token: acmeToken, body: matchBody("cert-1", "acme", consentText)}); rec.Code != 200 {
			t.Errorf("cert-1 was revoked by a refused opt-out: %d", rec.Code)
		}
		const kept = "rappel\tdemandé 😀\r\npar 𝄞"
		rec := serve(h, request{path: "/opt-out", body: fmt.Sprintf(`{"company_id":"acme","certificate_id":"cert-2","reason":%q}`, kept)})
		if rec.Code != 200 {
			t.Fatalf("opt-out with a reason of 4-byte characters: %d %s", rec.Code, rec.Body)
		}
		must(t, e.store.View(ctx, func(tx consent.Tx) error {
			revs, err := tx.Revocations(ctx, "acme")
			if err == nil && (len(revs) != 1 || revs[0].Reason != kept) {
				t.Errorf("revocations %+v, want one with reason %q", revs, kept)
			}
			return err
		}))
	})
}

// Invalid UTF-8 and lone surrogate escapes, which encoding/json would turn
// into U+FFFD and match, are refused with 400 naming the field, and nothing
// is charged.
func TestInvalidUnicodeRefused(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e := setup(t, open(t))
		h := e.handler(t, httpadapter.Config{})
		for _, tc := range []struct {
			path, body, want string
		}{
			{"/verify/match", "{\"certificate_id\":\"cert-1\",\"company_id\":\"acme\",\"consent\":\"I agree\xff\"}",
				`{"status":400,"error":"consent must be valid UTF-8"}`},
			{"/verify/match", `{"certificate_id":"cert-1","company_id":"acme","consent":"I agree\udc00"}`,
				`{"status":400,"error":"consent must be valid UTF-8"}`},
			{"/verify/partial-match", `{"certificate_id":"cert-1","company_id":"acme","term":"\ud800"}`,
				`{"status":400,"error":"term must be valid UTF-8"}`},
			{"/verify/partial-match", "{\"certificate_id\":\"cert-1\",\"company_id\":\"acme\",\"term\":\"agree\",\"x\xff\":1}",
				`{"status":400,"error":"request body must be valid UTF-8"}`},
			{"/opt-out", "{\"company_id\":\"acme\",\"email\":\"jane@example.com\",\"reason\":\"\xc3\"}",
				`{"status":400,"error":"reason must be valid UTF-8"}`},
			{"/api/integrations/acme/retain/batch", "{\"session_ids\":[\"s1\",\"s\xff\"]}",
				`{"success":false,"error":"session_ids must be valid UTF-8"}`},
		} {
			rec := serve(h, request{path: tc.path, token: acmeToken, body: tc.body})
			if rec.Code != 400 {
				t.Errorf("%s %q: status %d, want 400", tc.path, tc.body, rec.Code)
			}
			checkBody(t, rec.Body.Bytes(), tc.want)
		}
		checkBalances(t, e, nil)
		// A surrogate pair is a character like any other.
		rec := serve(h, request{path: "/verify/partial-match", token: acmeToken,
			body: `{"certificate_id":"cert-1","company_id":"acme","term":"\ud83d\ude00"}`})
		checkBody(t, rec.Body.Bytes(), `{"valid":false,"consent_opt_in":"2026-11-20T10:00:03Z","origin":"https://acme.example/quote","verification_type":"first_party"}`)
	})
}

// Every client of one IPv6 /64 shares one opt-out bucket, directly or behind
// a trusted proxy: one subscriber holds the whole /64.
func TestOptOutLimitIPv6Prefix(t *testing.T) {
	e := setup(t, teststore.Memory(t))
	proxies := httpadapter.TrustedProxies{Networks: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}
	h := e.handler(t, httpadapter.Config{TrustedProxies: proxies})
	optOut := func(remote, xff string) int {
		r := request{path: "/opt-out", body: `{"company_id":"acme","email":"nobody@example.com"}`, remote: remote}
		if xff != "" {
			r.header = http.Header{"X-Forwarded-For": {xff}}
		}
		return serve(h, r).Code
	}
	for i := range 10 {
		if code := optOut("10.0.0.1:80", fmt.Sprintf("2001:db8:1:2::%x", i+1)); code != 200 {
			t.Fatalf("request %d: %d", i+1, code)
		}
	}
	if code := optOut("10.0.0.1:80", "2001:db8:1:2:ffff:ffff:ffff:ffff"); code != 429 {
		t.Errorf("11th request from one /64 behind the proxy: %d, want 429", code)
	}
	if code := optOut("10.0.0.1:80", "2001:db8:1:3::1"); code != 200 {
		t.Errorf("the next /64: %d, want 200", code)
	}
	for i := range 10 {
		optOut(fmt.Sprintf("[2001:db8:9:9::%x]:443", i+1), "")
	}
	if code := optOut("[2001:db8:9:9:1:2:3:4]:443", ""); code != 429 {
		t.Errorf("11th request from one /64 as peers: %d, want 429", code)
	}
	// The prefix length is configurable.
	h = e.handler(t, httpadapter.Config{IPv6PrefixBits: 128})
	for i := range 11 {
		if code := optOut(fmt.Sprintf("[2001:db8:7:7::%x]:443", i+1), ""); code != 200 {
			t.Errorf("with /128 keys, address %d: %d, want 200", i+1, code)
		}
	}
	if _, err := httpadapter.New(httpadapter.Config{Service: e.svc, IPv6PrefixBits: 129}); err == nil {
		t.Error("IPv6PrefixBits 129 accepted")
	}
}

// Spraying addresses never resets an exhausted client's bucket: at the key
// cap new clients wait, and the exhausted one stays limited.
func TestOptOutLimitSurvivesSpraying(t *testing.T) {
	e := setup(t, teststore.Memory(t))
	h := e.handler(t, httpadapter.Config{MaxLimiterKeys: 50})
	optOut := func(remote string) int {
		return serve(h, request{path: "/opt-out", body: `{"company_id":"acme","email":"nobody@example.com"}`, remote: remote}).Code
	}
	for range 10 {
		optOut("192.0.2.1:1")
	}
	if code := optOut("192.0.2.1:1"); code != 429 {
		t.Fatalf("11th request: %d, want 429", code)
	}
	codes := map[int]int{}
	for i := range 1000 {
		codes[optOut(fmt.Sprintf("198.51.%d.%d:1", i/256, i%256))]++
	}
	if codes[200] != 49 || codes[429] != 951 {
		t.Errorf("sprayed addresses: %v, want 49 answered (the cap, 50, less the exhausted client) and the rest 429", codes)
	}
	if code := optOut("192.0.2.1:1"); code != 429 {
		t.Errorf("the exhausted client after 1,000 sprayed addresses: %d, want 429", code)
	}
	e.clock.t = e.clock.t.Add(6 * time.Second)
	if code := optOut("192.0.2.1:1"); code != 200 {
		t.Errorf("the exhausted client 6 s later: %d, want 200", code)
	}
}

// serveUnix serves h on a Unix socket, as behind a proxy on the same
// machine, and returns a client that reaches it.
func serveUnix(t *testing.T, h http.Handler) *http.Client {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	serveOn(t, ln, h)
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
}

// Behind a proxy on a Unix socket, a trusted socket lets X-Forwarded-For
// name the client; an untrusted one never puts every client in one bucket.
func TestUnixSocketProxy(t *testing.T) {
	e := setup(t, teststore.Memory(t))
	optOut := func(c *http.Client, xff string) (int, string) {
		req, _ := http.NewRequest("POST", "http://proxy/opt-out", strings.NewReader(`{"company_id":"acme","email":"nobody@example.com"}`))
		if xff != "" {
			req.Header.Set("X-Forwarded-For", xff)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode, string(b)
	}
	trusted := serveUnix(t, e.handler(t, httpadapter.Config{TrustedProxies: httpadapter.TrustedProxies{UnixSocket: true}}))
	for i := range 10 {
		if code, body := optOut(trusted, "203.0.113.1"); code != 200 {
			t.Fatalf("request %d: %d %s", i+1, code, body)
		}
	}
	if code, _ := optOut(trusted, "203.0.113.1"); code != 429 {
		t.Errorf("11th request of one client: %d, want 429", code)
	}
	if code, _ := optOut(trusted, "203.0.113.2"); code != 200 {
		t.Errorf("another client behind the same proxy: %d, want 200", code)
	}
	must(t, e.store.View(ctx, func(tx consent.Tx) error {
		revs, err := tx.Revocations(ctx, "acme")
		if err == nil && revs[0].ClientIP != "203.0.113.1" {
			t.Errorf("revocation recorded client %q, want 203.0.113.1", revs[0].ClientIP)
		}
		return err
	}))
	// Not trusted, or trusted without a forwarded address: the client is
	// unknown, and the request is refused rather than put in a shared bucket.
	var logs bytes.Buffer
	untrusted := serveUnix(t, e.handler(t, httpadapter.Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))}))
	for _, c := range []struct {
		client *http.Client
		xff    string
	}{{untrusted, "203.0.113.3"}, {untrusted, ""}, {trusted, ""}} {
		code, body := optOut(c.client, c.xff)
		if code != 500 || body != `{"status":500,"error":"the client's address cannot be determined"}`+"\n" {
			t.Errorf("unknown client (X-Forwarded-For %q): %d %s", c.xff, code, body)
		}
	}
	if !strings.Contains(logs.String(), "TrustedProxies.UnixSocket") {
		t.Errorf("the log does not say how to fix it:\n%s", logs.String())
	}
}

// Unknown paths and wrong methods answer in the documented JSON shapes, with
// Allow on 405, wherever the handler is mounted; unclean paths are unknown,
// never redirected.
func TestUnroutedAnswersJSON(t *testing.T) {
	e := setup(t, teststore.Memory(t))
	h := e.handler(t, httpadapter.Config{})
	mux := http.NewServeMux()
	mux.Handle("/consent/", http.StripPrefix("/consent", h))
	for _, mount := range []struct {
		prefix string
		h      http.Handler
	}{{"", h}, {"/consent", mux}} {
		for _, tc := range []struct {
			method, path string
			status       int
			allow, want  string
		}{
			{"GET", "/verify/match", 405, "POST", `{"status":405,"error":"method GET is not allowed here; use POST"}`},
			{"PUT", "/api/verify/match", 405, "POST", `{"status":405,"error":"method PUT is not allowed here; use POST"}`},
			{"DELETE", "/opt-out", 405, "POST", `{"status":405,"error":"method DELETE is not allowed here; use POST"}`},
			{"GET", "/verify/session/acme", 405, "POST", `{"status":405,"error":"method GET is not allowed here; use POST"}`},
			{"GET", "/api/integrations/acme/retain/s1", 405, "POST", `{"success":false,"error":"method GET is not allowed here; use POST"}`},
			{"GET", "/api/integrations/acme/retain/batch", 405, "POST", `{"success":false,"error":"method GET is not allowed here; use POST"}`},
			{"POST", "/api/integrations/acme/sessions/s1", 405, "GET, HEAD", `{"success":false,"error":"method POST is not allowed here; use GET, HEAD"}`},
			{"POST", "/verify/nope", 404, "", `{"status":404,"error":"no such endpoint"}`},
			{"POST", "/verify/match/", 404, "", `{"status":404,"error":"no such endpoint"}`},
			{"POST", "/verify//match", 404, "", `{"status":404,"error":"no such endpoint"}`},
			{"POST", "/verify/../verify/match", 404, "", `{"status":404,"error":"no such endpoint"}`},
			{"POST", "/api/integrations/acme/nope", 404, "", `{"success":false,"error":"no such endpoint"}`},
			{"POST", "/api/integrations/acme/retain/s1/", 404, "", `{"success":false,"error":"no such endpoint"}`},
			{"GET", "/", 404, "", `{"status":404,"error":"no such endpoint"}`},
		} {
			if mount.prefix != "" && (strings.Contains(tc.path, "//") || strings.Contains(tc.path, "/..")) {
				continue // the host's mux cleans such a path before it reaches the handler
			}
			req := httptest.NewRequest(tc.method, "/", nil)
			req.URL.Path = mount.prefix + tc.path // as sent, uncleaned
			rec := httptest.NewRecorder()
			mount.h.ServeHTTP(rec, req)
			what := tc.method + " " + mount.prefix + tc.path
			if rec.Code != tc.status || rec.Header().Get("Allow") != tc.allow || rec.Header().Get("Content-Type") != "application/json" {
				t.Errorf("%s: %d, Allow %q, Content-Type %q; want %d, Allow %q", what, rec.Code,
					rec.Header().Get("Allow"), rec.Header().Get("Content-Type"), tc.status, tc.allow)
			}
			checkBody(t, rec.Body.Bytes(), tc.want)
		}
	}
}

// blockingStore holds every write transaction open until its context ends,
// then goes on with it on the real store, as a slow database would.
type blockingStore struct {
	consent.Store
	entered chan struct{}
}

func (s blockingStore) Update(ctx context.Context, fn func(consent.Tx) error) error {
	return s.Store.Update(ctx, func(tx consent.Tx) error {
		s.entered <- struct{}{}
		<-ctx.Done()
		return fn(tx)
	})
}

// statusLog records the status each request was answered with, as a host's
// request log does.
type statusLog struct {
	mu       sync.Mutex
	statuses []int
}

func (l *statusLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		l.mu.Lock()
		l.statuses = append(l.statuses, rec.Code)
		l.mu.Unlock()
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes()) // a client gone: the status is logged above
	})
}

// A client that goes away mid-request is logged as a cancelled request, not
// as an internal error, and recorded as 499, not 500; nothing is charged.
func TestClientGoneIsNotAServerFault(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e := setup(t, open(t))
		slow := blockingStore{Store: e.store, entered: make(chan struct{}, 1)}
		svc, err := consentkit.NewService(slow, consentkit.Config{Now: e.clock.Now})
		must(t, err)
		var logs bytes.Buffer
		h, err := httpadapter.New(httpadapter.Config{Service: svc, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		must(t, err)
		var log statusLog
		srv := httptest.NewServer(log.wrap(h))
		defer srv.Close()

		reqCtx, cancel := context.WithCancel(ctx)
		req, _ := http.NewRequestWithContext(reqCtx, "POST", srv.URL+"/verify/match",
			strings.NewReader(matchBody("cert-1", "acme", consentText)))
		req.Header.Set("Authorization", "Bearer "+acmeToken)
		done := make(chan error, 1)
		go func() {
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				_ = resp.Body.Close()
			}
			done <- err
		}()
		<-slow.entered // the request is inside its transaction
		cancel()       // and the client hangs up
		if err := <-done; err == nil {
			t.Fatal("the client got an answer after it hung up")
		}
		srv.Close() // waits for the handler to finish
		if len(log.statuses) != 1 || log.statuses[0] != httpadapter.StatusClientClosedRequest {
			t.Errorf("statuses recorded %v, want [499]", log.statuses)
		}
		if strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "request cancelled by the client") {
			t.Errorf("log:\n%s", logs.String())
		}
		checkBalances(t, e, nil)
	})
}

// Unknown, expired and revoked tokens are told apart by nothing, on every
// route: the README promises they fail alike.
func TestBadTokensFailAlike(t *testing.T) {
	e := setup(t, teststore.Memory(t))
	h := e.handler(t, httpadapter.Config{})
	for _, path := range []string{"/verify/match", "/api/integrations/acme/retain/s2", "/verify/session/acme"} {
		var bodies []string
		for _, tok := range []string{"ck_unknown-token-value", acmeExpired, acmeRevoked} {
			rec := serve(h, request{path: path, token: tok, body: matchBody("cert-1", "acme", consentText)})
			if rec.Code != 401 {
				t.Errorf("%s with %s: %d, want 401", path, tok, rec.Code)
			}
			bodies = append(bodies, rec.Body.String())
		}
		if bodies[0] != bodies[1] || bodies[1] != bodies[2] {
			t.Errorf("%s: unknown, expired and revoked tokens answer differently:\n%s", path, strings.Join(bodies, ""))
		}
	}
}
