package dashboard_test

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/dashboard"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/internal/teststore"
)

// getWith reads a page of h with the cookie value c (none when "").
func getWith(h http.Handler, path, c string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("GET", path, nil)
	if c != "" {
		r.AddCookie(&http.Cookie{Name: "consentkit_dashboard", Value: c})
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// opens reports whether the cookie c opens the companies page of h.
func opens(h http.Handler, c string) bool {
	w := getWith(h, "/dashboard/", c)
	return w.Code == http.StatusOK && strings.Contains(w.Body.String(), "<h1>Companies</h1>")
}

// sessionCookie logs in on h and returns the login cookie.
func sessionCookie(t *testing.T, h http.Handler, hdr ...string) *http.Cookie {
	t.Helper()
	w := loginAs(h, "192.0.2.1:1234", secret, hdr...)
	for _, c := range w.Result().Cookies() {
		if c.Name == "consentkit_dashboard" && c.Value != "" {
			return c
		}
	}
	t.Fatalf("log in: %d, no cookie: %s", w.Code, w.Body)
	return nil
}

// A login is a session kept in the store: a logout on one instance ends
// it on every instance sharing the store, and a session that expired, or
// a cookie this handler did not make, opens nothing.
func TestSessions(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		st := open(t)
		c := newClock()
		instance := func() *dashboard.Handler {
			svc, err := consentkit.NewService(st, consentkit.Config{Now: c.now})
			must(t, err)
			h, err := dashboard.New(svc, dashboard.Config{OperatorSecret: secret, SessionTTL: time.Hour})
			must(t, err)
			return h
		}
		h1, h2 := instance(), instance()

		login := sessionCookie(t, h1)
		if login.MaxAge != 3600 || !login.HttpOnly || login.SameSite != http.SameSiteStrictMode || login.Path != "/dashboard" {
			t.Errorf("login cookie %+v: want HttpOnly, SameSite=Strict, Path /dashboard, MaxAge 3600", login)
		}
		if !opens(h1, login.Value) || !opens(h2, login.Value) {
			t.Fatal("a login does not open pages on both instances")
		}
		other := sessionCookie(t, h2)

		// Log out on the first instance, with the page's CSRF token.
		page := getWith(h1, "/dashboard/", login.Value).Body.String()
		token := csrfRE.FindStringSubmatch(page)
		if token == nil {
			t.Fatalf("no CSRF token: %s", page)
		}
		r := httptest.NewRequest("POST", "/dashboard/logout", strings.NewReader(url.Values{"csrf": {token[1]}}.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.AddCookie(&http.Cookie{Name: "consentkit_dashboard", Value: login.Value})
		w := httptest.NewRecorder()
		h1.ServeHTTP(w, r)
		if w.Code != http.StatusSeeOther || !strings.Contains(w.Header().Get("Set-Cookie"), "Max-Age=0") {
			t.Fatalf("log out: %d %v, want a redirect that clears the cookie", w.Code, w.Header())
		}
		if opens(h1, login.Value) || opens(h2, login.Value) {
			t.Error("the cookie of a session logged out still opens pages")
		}
		if !opens(h1, other.Value) || !opens(h2, other.Value) {
			t.Error("a logout ended another session")
		}
		// A form's CSRF token is its session's: another session's refuses it.
		r = httptest.NewRequest("POST", "/dashboard/logout", strings.NewReader(url.Values{"csrf": {token[1]}}.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.AddCookie(&http.Cookie{Name: "consentkit_dashboard", Value: other.Value})
		w = httptest.NewRecorder()
		h2.ServeHTTP(w, r)
		if w.Code != http.StatusForbidden || !opens(h2, other.Value) {
			t.Errorf("log out with another session's CSRF token: %d, want 403 and the session kept", w.Code)
		}

		// A session lasts SessionTTL on the clock, and not a microsecond more.
		c.t = c.t.Add(time.Hour - time.Microsecond)
		if !opens(h1, other.Value) {
			t.Error("a session is refused before it expires")
		}
		c.t = c.t.Add(time.Microsecond)
		if opens(h1, other.Value) || opens(h2, other.Value) {
			t.Error("an expired session opens pages")
		}

		// Cookies this handler did not make.
		fresh := sessionCookie(t, h1).Value
		sec, mac, _ := strings.Cut(fresh, ".")
		flip := func(s string) string {
			b := []byte(s)
			b[len(b)/2] ^= 1
			return string(b)
		}
		for _, forged := range []string{"x", fresh + "x", sec, sec + ".", "." + mac, flip(sec) + "." + mac, sec + "." + flip(mac),
			strings.Repeat("A", len(sec)) + "." + mac, sec + "." + sec} {
			if opens(h1, forged) {
				t.Errorf("a forged cookie %q opens pages", forged)
			}
		}
		if !opens(h1, fresh) {
			t.Error("the cookie the forgeries were made from is refused")
		}
		// Another operator secret: every session ends.
		svc, err := consentkit.NewService(st, consentkit.Config{Now: c.now})
		must(t, err)
		rotated, err := dashboard.New(svc, dashboard.Config{OperatorSecret: secret + "-rotated"})
		must(t, err)
		if opens(rotated, fresh) {
			t.Error("a session of the old operator secret opens pages of the new")
		}
	})
}

// A login prunes sessions that expired, a bounded number at a time.
func TestSessionsPruned(t *testing.T) {
	st := teststore.Memory(t)
	c := newClock()
	svc, err := consentkit.NewService(st, consentkit.Config{Now: c.now})
	must(t, err)
	h, err := dashboard.New(svc, dashboard.Config{OperatorSecret: secret, SessionTTL: time.Minute})
	must(t, err)
	var old []*http.Cookie
	for range 3 {
		old = append(old, sessionCookie(t, h))
	}
	stored := func(ck *http.Cookie) bool {
		var found bool
		must(t, st.View(ctx, func(tx consent.Tx) error {
			_, err := tx.OperatorSession(ctx, dashboard.SessionDigest(ck.Value))
			found = err == nil
			if consent.ErrorCode(err) == consent.NotFound {
				return nil
			}
			return err
		}))
		return found
	}
	for _, ck := range old {
		if !stored(ck) {
			t.Fatal("a session logged in is not in the store")
		}
	}
	c.t = c.t.Add(time.Minute)
	sessionCookie(t, h)
	for i, ck := range old {
		if stored(ck) {
			t.Errorf("expired session %d is still stored after a login", i)
		}
	}
}

// The cookie is Secure when the client came over HTTPS: over TLS, or
// through a trusted proxy that says so, never because another peer says
// so.
func TestSecureCookie(t *testing.T) {
	h := loginHandler(t, newClock(), dashboard.Config{
		TrustedProxies: httpadapter.TrustedProxies{Networks: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}})
	secure := func(remote string, overTLS bool, hdr ...string) (login, logout bool) {
		t.Helper()
		do := func(r *http.Request) *http.Cookie {
			r.RemoteAddr = remote
			if overTLS {
				r.TLS = &tls.ConnectionState{}
			}
			for i := 0; i+1 < len(hdr); i += 2 {
				r.Header.Add(hdr[i], hdr[i+1])
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			for _, c := range w.Result().Cookies() {
				if c.Name == "consentkit_dashboard" {
					return c
				}
			}
			t.Fatalf("%s %s: %d, no cookie", r.Method, r.URL, w.Code)
			return nil
		}
		r := httptest.NewRequest("POST", "/dashboard/login", strings.NewReader("secret="+url.QueryEscape(secret)))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		c := do(r)
		page := getWith(h, "/dashboard/", c.Value).Body.String()
		r = httptest.NewRequest("POST", "/dashboard/logout", strings.NewReader("csrf="+url.QueryEscape(csrfRE.FindStringSubmatch(page)[1])))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.AddCookie(c)
		return c.Secure, do(r).Secure
	}
	for _, tc := range []struct {
		name   string
		remote string
		tls    bool
		hdr    []string
		want   bool
	}{
		{"plain HTTP", "192.0.2.1:1", false, nil, false},
		{"TLS", "192.0.2.1:1", true, nil, true},
		{"trusted proxy, https", "10.0.0.1:1", false, []string{"X-Forwarded-Proto", "https"}, true},
		{"trusted proxy, http", "10.0.0.1:1", false, []string{"X-Forwarded-Proto", "http"}, false},
		{"untrusted peer claiming https", "192.0.2.1:1", false, []string{"X-Forwarded-Proto", "https"}, false},
	} {
		login, logout := secure(tc.remote, tc.tls, tc.hdr...)
		if login != tc.want || logout != tc.want {
			t.Errorf("%s: Secure on login %v, on logout %v; want %v", tc.name, login, logout, tc.want)
		}
	}
}
