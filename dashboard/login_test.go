package dashboard_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/dashboard"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/internal/teststore"
)

// clock is a test's clock: it moves only when the test moves it.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newClock() *clock { return &clock{time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)} }

// loginHandler is a dashboard on an empty memory store, on the clock c.
func loginHandler(t *testing.T, c *clock, cfg dashboard.Config) *dashboard.Handler {
	t.Helper()
	svc, err := consentkit.NewService(teststore.Memory(t), consentkit.Config{Now: c.now})
	must(t, err)
	cfg.OperatorSecret = secret
	h, err := dashboard.New(svc, cfg)
	must(t, err)
	return h
}

// loginAs posts the login form from the peer remote, with the headers hdr
// (name, value, …); it returns the answer.
func loginAs(h http.Handler, remote, sec string, hdr ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("POST", "/dashboard/login", strings.NewReader(url.Values{"secret": {sec}}.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.RemoteAddr = remote
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Add(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// loggedIn: the answer is a login's, a redirect that sets the cookie.
func loggedIn(w *httptest.ResponseRecorder) bool {
	return w.Code == http.StatusSeeOther && strings.Contains(w.Header().Get("Set-Cookie"), "consentkit_dashboard=")
}

// Login attempts are limited per client address, never for all clients
// together: a client guessing from one address, or from a spray of
// addresses filling the limiter's table, never stops the operator's
// right secret from another address. A client whose own bucket is empty
// is refused even the right secret, since its answer would otherwise tell
// a guess that is right from one that is wrong.
func TestLoginLimitPerClient(t *testing.T) {
	c := newClock()
	h := loginHandler(t, c, dashboard.Config{LoginsPerMinute: 5, MaxLoginClients: 100})
	const a, b = "203.0.113.1:4000", "203.0.113.2:4000"
	for i := range 100 {
		w := loginAs(h, a, "a wrong secret")
		want := http.StatusUnauthorized
		if i >= 5 {
			want = http.StatusTooManyRequests
		}
		if w.Code != want {
			t.Fatalf("bad login %d from A: %d, want %d", i+1, w.Code, want)
		}
		if want == http.StatusTooManyRequests && w.Header().Get("Retry-After") != "12" {
			t.Errorf("bad login %d from A: Retry-After %q, want 12 (a minute / 5)", i+1, w.Header().Get("Retry-After"))
		}
	}
	if w := loginAs(h, b, secret); !loggedIn(w) {
		t.Fatalf("the right secret from B after 100 bad logins from A: %d, want logged in", w.Code)
	}
	if w := loginAs(h, a, secret); w.Code != http.StatusTooManyRequests {
		t.Errorf("the right secret from A, whose bucket is empty: %d, want 429", w.Code)
	}
	c.t = c.t.Add(12 * time.Second) // one token back
	if w := loginAs(h, a, secret); !loggedIn(w) {
		t.Errorf("the right secret from A 12 s later: %d, want logged in", w.Code)
	}

	// A spray of 10,000 addresses fills the table, and it stays at its cap.
	for i := range 10_000 {
		loginAs(h, fmt.Sprintf("198.18.%d.%d:1", i/256, i%256), "a wrong secret")
		if n := dashboard.LoginClients(h); n > 100 {
			t.Fatalf("after %d addresses the login limit holds %d clients, over its cap of 100", i+1, n)
		}
	}
	if n := dashboard.LoginClients(h); n != 100 {
		t.Errorf("the login limit holds %d clients after the spray, want its cap, 100", n)
	}
	// A client the full table cannot take still logs in with the right
	// secret, and is refused a wrong one.
	if w := loginAs(h, "192.0.2.77:1", secret); !loggedIn(w) {
		t.Errorf("the right secret from a new address while the table is full: %d, want logged in", w.Code)
	}
	if w := loginAs(h, "192.0.2.78:1", "a wrong secret"); w.Code != http.StatusUnauthorized {
		t.Errorf("a wrong secret from a new address while the table is full: %d, want 401", w.Code)
	}
}

// IPv6 clients are limited by their /64 (Config.IPv6PrefixBits).
func TestLoginLimitIPv6(t *testing.T) {
	h := loginHandler(t, newClock(), dashboard.Config{LoginsPerMinute: 3})
	for i := range 3 {
		loginAs(h, fmt.Sprintf("[2001:db8:1:2::%x]:1", i+1), "a wrong secret")
	}
	if w := loginAs(h, "[2001:db8:1:2:ffff:ffff:ffff:ffff]:1", secret); w.Code != http.StatusTooManyRequests {
		t.Errorf("the right secret from the same /64: %d, want 429", w.Code)
	}
	if w := loginAs(h, "[2001:db8:1:3::1]:1", secret); !loggedIn(w) {
		t.Errorf("the right secret from the next /64: %d, want logged in", w.Code)
	}
	if _, err := dashboard.New(mustService(t), dashboard.Config{OperatorSecret: secret, IPv6PrefixBits: 129}); err == nil {
		t.Error("an IPv6 prefix of 129 bits was accepted")
	}
}

// Behind a trusted proxy the client is the forwarded address (D20, as
// httpadapter.TrustedProxies decides); from any other peer the header is
// ignored.
func TestLoginLimitBehindProxy(t *testing.T) {
	h := loginHandler(t, newClock(), dashboard.Config{LoginsPerMinute: 3,
		TrustedProxies: httpadapter.TrustedProxies{Networks: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}})
	const proxy = "10.0.0.1:443"
	for range 3 {
		loginAs(h, proxy, "a wrong secret", "X-Forwarded-For", "203.0.113.1")
	}
	if w := loginAs(h, proxy, secret, "X-Forwarded-For", "203.0.113.1"); w.Code != http.StatusTooManyRequests {
		t.Errorf("the right secret forwarded for the guessing client: %d, want 429", w.Code)
	}
	if w := loginAs(h, proxy, secret, "X-Forwarded-For", "203.0.113.2"); !loggedIn(w) {
		t.Errorf("the right secret forwarded for another client through the same proxy: %d, want logged in", w.Code)
	}
	// An untrusted peer's X-Forwarded-For is its own to make up: ignored.
	for i := range 3 {
		loginAs(h, "198.51.100.7:1", "a wrong secret", "X-Forwarded-For", fmt.Sprintf("192.0.2.%d", i))
	}
	if w := loginAs(h, "198.51.100.7:1", secret, "X-Forwarded-For", "192.0.2.99"); w.Code != http.StatusTooManyRequests {
		t.Errorf("an untrusted peer claiming another address: %d, want 429 (its own bucket is empty)", w.Code)
	}
}

// A client of no known address (a proxy on a Unix socket that is not
// trusted) is not put in one bucket with every other such client: the
// login says the address is unknown.
func TestLoginUnknownAddress(t *testing.T) {
	h := loginHandler(t, newClock(), dashboard.Config{})
	if w := loginAs(h, "", secret); w.Code != http.StatusInternalServerError || !strings.Contains(w.Body.String(), "address") {
		t.Errorf("a login of unknown address: %d %s, want 500 naming the address", w.Code, w.Body)
	}
}

func mustService(t *testing.T) *consentkit.Service {
	svc, err := consentkit.NewService(teststore.Memory(t), consentkit.Config{})
	must(t, err)
	return svc
}

// A login goes back to a page of the dashboard, never to another path of
// the host ("localPath returns next when it is a path of the dashboard").
func TestLoginNextStaysInDashboard(t *testing.T) {
	svc, _ := fixture(t, teststore.Memory(t))
	h, err := dashboard.New(svc, dashboard.Config{OperatorSecret: secret})
	must(t, err)
	form := url.Values{"secret": {secret}, "next": {"/dashboard/../operator/companies"}}
	r := httptest.NewRequest("POST", "/dashboard/login", strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.RemoteAddr = "192.0.2.1:1234"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	loc := w.Header().Get("Location")
	if w.Code != http.StatusSeeOther || !strings.HasPrefix(loc, "/dashboard/") {
		t.Errorf("after login: %d, Location %q, want a page under /dashboard/", w.Code, loc)
	}
}

// A link to a page with a query (the grade's ?company=&profile=, which
// docs/operating.md says can be linked) leads there after the login.
func TestLoginKeepsLinkQuery(t *testing.T) {
	svc, _ := fixture(t, teststore.Memory(t))
	h, err := dashboard.New(svc, dashboard.Config{OperatorSecret: secret})
	must(t, err)
	const link = "/dashboard/companies/acme/certificates/cert-acme?company=other&profile=strict"
	w := getWith(h, link, "")
	loc, err := url.Parse(w.Header().Get("Location"))
	must(t, err)
	if next := loc.Query().Get("next"); next != link {
		t.Errorf("redirect to the login with next=%q, want %q", next, link)
	}
}

// A page on another site that the operator visits cannot spend the
// operator's login attempts: a cross-site login POST (the browser says
// Sec-Fetch-Site: cross-site) is refused before it counts, so that the
// operator's own login from the same address still works.
func TestLoginCrossSiteSpendsNothing(t *testing.T) {
	c := newClock()
	h := loginHandler(t, c, dashboard.Config{LoginsPerMinute: 5})
	const operator = "203.0.113.9:4000"
	for range 20 { // a hidden form on evil.example, auto-submitted
		loginAs(h, operator, "guess", "Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example")
	}
	if w := loginAs(h, operator, secret, "Sec-Fetch-Site", "same-origin"); !loggedIn(w) {
		t.Errorf("the operator's own login after a cross-site page posted 20 logins from the operator's browser: %d, want logged in", w.Code)
	}
}

// A login the browser says came from another site is refused (403)
// before it spends an attempt; one from the dashboard's own page, or the
// operator's own navigation, or from a client that says nothing of where
// it came from, logs in.
func TestLoginFromAnotherSite(t *testing.T) {
	c := newClock()
	h := loginHandler(t, c, dashboard.Config{LoginsPerMinute: 1})
	for i, tc := range []struct {
		hdr  []string
		want bool
	}{
		{[]string{"Sec-Fetch-Site", "cross-site"}, false},
		{[]string{"Sec-Fetch-Site", "same-site"}, false},
		{[]string{"Origin", "https://evil.example"}, false},
		{[]string{"Origin", "null"}, false},
		{[]string{"Sec-Fetch-Site", "same-origin", "Origin", "http://example.com"}, true},
		{[]string{"Sec-Fetch-Site", "none"}, true},
		{[]string{"Origin", "http://example.com"}, true}, // httptest's Host
		{nil, true},
	} {
		w := loginAs(h, fmt.Sprintf("198.51.100.%d:4000", i+1), secret, tc.hdr...)
		if loggedIn(w) != tc.want {
			t.Errorf("a login with %q: %d, want logged in %v", tc.hdr, w.Code, tc.want)
		}
		if !tc.want && w.Code != http.StatusForbidden {
			t.Errorf("a login with %q: %d, want 403", tc.hdr, w.Code)
		}
	}
}
