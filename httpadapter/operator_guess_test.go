package httpadapter_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/internal/teststore"
)

// Guessing the operator secret is limited per client address, as the
// dashboard's login is: each wrong secret is logged, without the secret,
// and once a client has sent OperatorFailuresPerMinute of them every
// request of its address is refused with 429 and Retry-After, the right
// secret too, so that the answer tells no right guess from a wrong one.
// Right secrets spend nothing; another address is not limited; a minute's
// share of the limit later the client may try again.
func TestOperatorSecretGuessesLimited(t *testing.T) {
	e := setup(t, teststore.Memory(t))
	var logged bytes.Buffer
	h, err := httpadapter.New(httpadapter.Config{Service: e.svc, OperatorSecret: operatorSecret,
		Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	must(t, err)
	op := h.Operator()
	call := func(addr, secret string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", "/operator/companies", nil)
		req.RemoteAddr = addr
		req.Header.Set("Authorization", "Bearer "+secret)
		rec := httptest.NewRecorder()
		op.ServeHTTP(rec, req)
		return rec
	}
	const guesser, operator = "203.0.113.9:5000", "198.51.100.2:6000"
	guess := func(i int) string { return "wrong guess " + strings.Repeat("x", i) }

	// Right secrets spend none of the client's wrong ones.
	for range 3 * httpadapter.OperatorFailuresPerMinute {
		if rec := call(guesser, operatorSecret); rec.Code != http.StatusOK {
			t.Fatalf("the right secret: %d %s", rec.Code, rec.Body)
		}
	}
	for i := range httpadapter.OperatorFailuresPerMinute {
		if rec := call(guesser, guess(i)); rec.Code != http.StatusUnauthorized {
			t.Fatalf("wrong secret %d: %d %s, want 401", i+1, rec.Code, rec.Body)
		}
	}
	if n := strings.Count(logged.String(), "wrong operator secret"); n != httpadapter.OperatorFailuresPerMinute {
		t.Errorf("%d wrong secrets logged, want %d:\n%s", n, httpadapter.OperatorFailuresPerMinute, logged.String())
	}
	if strings.Contains(logged.String(), "wrong guess") || !strings.Contains(logged.String(), "client=203.0.113.9") {
		t.Errorf("the log of wrong secrets shows a secret, or not the client:\n%s", logged.String())
	}
	for name, secret := range map[string]string{"another wrong secret": guess(99), "the right secret": operatorSecret} {
		rec := call(guesser, secret)
		if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "6" {
			t.Errorf("%s from the limited client: %d, Retry-After %q; want 429, 6", name, rec.Code, rec.Header().Get("Retry-After"))
		}
	}
	if rec := call(operator, operatorSecret); rec.Code != http.StatusOK {
		t.Errorf("the right secret from another address: %d, want 200", rec.Code)
	}
	if rec := call(operator, guess(1)); rec.Code != http.StatusUnauthorized {
		t.Errorf("a wrong secret from another address: %d, want 401", rec.Code)
	}
	e.clock.t = e.clock.t.Add(6 * time.Second)
	if rec := call(guesser, operatorSecret); rec.Code != http.StatusOK {
		t.Errorf("the right secret once a wrong one is allowed again: %d, want 200", rec.Code)
	}
}

// nthClient is the address of the nth of many clients, 10.0.0.0 on: a
// test sending many wrong secrets on purpose sends each from its own, so
// that none is limited (OperatorFailuresPerMinute).
func nthClient(n uint32) string {
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, byte(n >> 16), byte(n >> 8), byte(n)}), 1234).String()
}

// The OpenAPI document declares the 429 that every operator route
// answers a client out of wrong secrets, with its Retry-After (D28).
func TestOperatorLimitDocumented(t *testing.T) {
	e := setup(t, teststore.Memory(t))
	c := newChecker(openAPIDoc(t, e.handler(t, httpadapter.Config{})))
	op := e.handler(t, httpadapter.Config{OperatorSecret: operatorSecret}).(*httpadapter.Handler).Operator()
	var (
		rec *httptest.ResponseRecorder
		req *http.Request
	)
	for i := 0; i <= httpadapter.OperatorFailuresPerMinute; i++ {
		secret := "wrong-wrong-wrong-wrong-wrong-wrong-wrong"
		if i == httpadapter.OperatorFailuresPerMinute {
			secret = operatorSecret // the right one, once the client has no failures left
		}
		req = httptest.NewRequest("GET", "/operator/companies/acme", nil)
		req.RemoteAddr = "192.0.2.9:1234"
		req.Header.Set("Authorization", "Bearer "+secret)
		rec = httptest.NewRecorder()
		op.ServeHTTP(rec, req)
	}
	if rec.Code != http.StatusTooManyRequests {
		t.Fatalf("after %d wrong secrets: %d, want 429", httpadapter.OperatorFailuresPerMinute, rec.Code)
	}
	for _, err := range c.check(req, rec) {
		t.Error(err)
	}
}
