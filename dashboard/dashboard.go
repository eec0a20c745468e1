// Package dashboard serves an operator's pages in the browser: companies
// and their balance and ledger, tokens, properties with the snippet tag
// ready to copy, certificates (search, detail, signature status, the
// recording's video, the attestation of what a replay of the recording
// measured at the consent moment and its screenshot, D49, and the insights:
// the behaviour signals, the bot verdict with its reasons and what is
// computed when asked, D50, and the grade by an audit profile of any
// company, as that company's verification would grade it, D51), the
// thresholds of a company's bot verdict, audit profiles, revocations,
// webhooks and the audit log. Mount it under its prefix, where only
// operators reach it:
//
//	d, err := dashboard.New(svc, dashboard.Config{OperatorSecret: secret})
//	mux.Handle("/dashboard/", d)
//
// The audit page checks the company's chain of hashes (D42) as far as it
// shows it: the entries on the page, or, on request, a bounded run from
// an entry with a link to the next run. It says which entries it checked
// and, when the chain is broken, the first broken entry; it never calls
// entries intact that it did not check.
//
// Pages are rendered on the server with html/template: no front-end build
// step, no external asset, one small inline script (copying the snippet
// tag). They are usable on a phone-sized screen and with the keyboard
// alone.
//
// An operator logs in with the operator secret, the credential of the
// operator API (httpadapter.Config.OperatorSecret); company tokens never
// log in here. A login is a session kept in the store
// (consent.OperatorSession, holding only the digest of the session's
// secret) and an HttpOnly, SameSite=Strict cookie holding that secret,
// signed with a key derived from the operator secret; the cookie is
// Secure when the client came over HTTPS (directly, or through one of
// Config.TrustedProxies that says so in X-Forwarded-Proto). Every
// instance sharing the store and the operator secret accepts it until it
// expires (Config.SessionTTL) or the operator logs out, which deletes the
// session for all of them; changing the operator secret logs every
// operator out. A login deletes a bounded number of expired sessions.
// Every form carries a CSRF token derived from the session, and a POST
// without it is refused with 403. Everything the dashboard changes goes
// through consentkit.Service and is audited with the actor "operator" (D42).
//
// Login attempts are limited per client address (Config.LoginsPerMinute;
// an IPv6 client by its /64; behind Config.TrustedProxies, the forwarded
// address, D20), in bounded memory (D28), so that guessing from one
// address never locks the operator out at another. A login that the
// browser says came from another site (Sec-Fetch-Site, or else Origin) is
// refused before it counts, so that a page the operator visits cannot
// spend the operator's attempts. A login leads back to the page of the
// dashboard that asked for it, its query included, and never elsewhere.
package dashboard

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/internal/ratelimit"
	"github.com/consentkit/consentkit/profile"
	"github.com/consentkit/consentkit/retain"
	"github.com/consentkit/consentkit/webhook"
)

// Config configures the dashboard.
type Config struct {
	// OperatorSecret is what an operator types to log in: required, at
	// least MinSecret bytes. Use the operator API's secret.
	OperatorSecret string
	// Prefix is the path the handler is mounted at: default "/dashboard";
	// "/" mounts it at the root. It is a clean path of letters, digits
	// and - . _ ~; New refuses any other.
	Prefix string
	// Videos is where the conversion worker keeps videos, for the
	// certificate page's player; nil: no video is shown.
	Videos retain.VideoStore
	// PublicURL is the service's base URL as pages see it, for the snippet
	// tag (https://consent.example.com); default: the scheme and Host of
	// the request.
	PublicURL string
	// SessionTTL is how long a login lasts, unless the operator logs out
	// first: default DefaultSessionTTL.
	SessionTTL time.Duration
	// LoginsPerMinute bounds each client's login attempts, against
	// guessing: a token bucket of this many refilled over a minute, per
	// client address (D20): default DefaultLoginsPerMinute.
	LoginsPerMinute int
	// MaxLoginClients bounds the clients whose login attempts are counted
	// at once (D28): default DefaultMaxLoginClients.
	MaxLoginClients int
	// TrustedProxies are the peers whose X-Forwarded-For names the client
	// of a login (D20) and whose X-Forwarded-Proto says the client came
	// over HTTPS (a Secure cookie), as httpadapter.Config.TrustedProxies:
	// pass the same value. The zero value trusts nobody.
	TrustedProxies httpadapter.TrustedProxies
	// IPv6PrefixBits is how much of an IPv6 client address keys its login
	// limit, as httpadapter.Config.IPv6PrefixBits: default 64.
	IPv6PrefixBits int
}

// Defaults and bounds of Config.
const (
	MinSecret              = 32
	DefaultSessionTTL      = 12 * time.Hour
	DefaultLoginsPerMinute = 10
	DefaultMaxLoginClients = 10_000
)

// Handler serves the dashboard. It is safe for concurrent use.
type Handler struct {
	svc    *consentkit.Service
	cfg    Config
	key    []byte // signs login cookies and CSRF tokens
	secret [sha256.Size]byte
	logins *ratelimit.Limiter // login attempts per client
	mux    *http.ServeMux

	endpoints webhook.Endpoints // the companies' webhook endpoints
	// auditProfiles are the companies' audit profiles (D51).
	auditProfiles profile.Profiles
}

// New returns the dashboard over svc.
func New(svc *consentkit.Service, cfg Config) (*Handler, error) {
	if svc == nil {
		return nil, errors.New("dashboard: nil service")
	}
	if len(cfg.OperatorSecret) < MinSecret {
		return nil, fmt.Errorf("dashboard: Config.OperatorSecret must be at least %d bytes", MinSecret)
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "/dashboard"
	}
	// Kept without its trailing slash: "" is the root.
	cfg.Prefix = strings.TrimSuffix("/"+strings.Trim(cfg.Prefix, "/"), "/")
	if !validPrefix(cfg.Prefix) {
		return nil, fmt.Errorf("dashboard: Config.Prefix %q must be a clean path of letters, digits and - . _ ~ such as \"/dashboard\", or \"/\" for the root", cfg.Prefix)
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	if cfg.LoginsPerMinute <= 0 {
		cfg.LoginsPerMinute = DefaultLoginsPerMinute
	}
	if cfg.MaxLoginClients < 0 {
		return nil, errors.New("dashboard: Config.MaxLoginClients must not be negative")
	}
	if cfg.MaxLoginClients == 0 {
		cfg.MaxLoginClients = DefaultMaxLoginClients
	}
	if cfg.IPv6PrefixBits == 0 {
		cfg.IPv6PrefixBits = 64
	}
	if cfg.IPv6PrefixBits < 1 || cfg.IPv6PrefixBits > 128 {
		return nil, errors.New("dashboard: Config.IPv6PrefixBits must be 1 to 128")
	}
	cfg.PublicURL = strings.TrimSuffix(cfg.PublicURL, "/")
	mac := hmac.New(sha256.New, []byte(cfg.OperatorSecret))
	mac.Write([]byte("consentkit dashboard session v2"))
	h := &Handler{
		svc: svc, endpoints: webhook.Endpoints{Service: svc}, auditProfiles: profile.Profiles{Service: svc}, cfg: cfg, key: mac.Sum(nil),
		secret: sha256.Sum256([]byte(cfg.OperatorSecret)),
		logins: ratelimit.New(cfg.LoginsPerMinute, cfg.MaxLoginClients, svc.Now),
		mux:    http.NewServeMux(),
	}
	h.routes()
	return h, nil
}

// validPrefix reports whether prefix, without its trailing slash, is a
// path that routes and links can be built on: "" (the root), or segments
// of [A-Za-z0-9._~-], none empty, "." or "..".
func validPrefix(prefix string) bool {
	if prefix == "" {
		return true
	}
	if !strings.HasPrefix(prefix, "/") {
		return false
	}
	for seg := range strings.SplitSeq(prefix[1:], "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
		for _, c := range []byte(seg) {
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~", c) >= 0) {
				return false
			}
		}
	}
	return true
}

// ServeHTTP serves a dashboard page.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "same-origin")
	hd.Set("X-Frame-Options", "DENY")
	h.mux.ServeHTTP(w, r)
}

// A page handler returns the page to render, or an error to show.
type pageFunc func(w http.ResponseWriter, r *http.Request, p *page) error

func (h *Handler) routes() {
	pre := h.cfg.Prefix
	open := func(method, path string, fn pageFunc) {
		h.mux.HandleFunc(method+" "+pre+path, func(w http.ResponseWriter, r *http.Request) { h.serve(w, r, fn, false, maxForm) })
	}
	authedUpTo := func(limit int64, method, path string, fn pageFunc) {
		h.mux.HandleFunc(method+" "+pre+path, func(w http.ResponseWriter, r *http.Request) { h.serve(w, r, fn, true, limit) })
	}
	authed := func(method, path string, fn pageFunc) { authedUpTo(maxForm, method, path, fn) }
	if pre != "" {
		h.mux.HandleFunc("GET "+pre, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, pre+"/", http.StatusSeeOther)
		})
	}
	open("GET", "/login", h.loginPage)
	open("POST", "/login", h.login)
	authed("POST", "/logout", h.logout)
	authed("GET", "/{$}", h.companies)
	authed("POST", "/companies", h.createCompany)
	authed("GET", "/companies/{company}", h.overview)
	authed("POST", "/companies/{company}/topup", h.topUp)
	authed("POST", "/companies/{company}/insights-rules", h.setInsightsRules)
	authed("GET", "/companies/{company}/profiles", h.profiles)
	authedUpTo(maxProfileForm, "POST", "/companies/{company}/profiles", h.putProfile)
	authed("POST", "/companies/{company}/profiles/{name}/delete", h.deleteProfile)
	authed("GET", "/companies/{company}/tokens", h.tokens)
	authed("POST", "/companies/{company}/tokens", h.issueToken)
	authed("POST", "/companies/{company}/tokens/{token}/revoke", h.revokeToken)
	authed("GET", "/companies/{company}/properties", h.properties)
	authed("POST", "/companies/{company}/properties", h.addProperty)
	authed("POST", "/companies/{company}/properties/{property}/origins", h.setOrigins)
	authed("GET", "/companies/{company}/certificates", h.certificates)
	authed("GET", "/companies/{company}/certificates/{certificate}", h.certificate)
	authed("GET", "/companies/{company}/certificates/{certificate}/screenshot", h.screenshot)
	authed("GET", "/companies/{company}/sessions/{session}/video", h.video)
	authed("GET", "/companies/{company}/revocations", h.revocations)
	authed("GET", "/companies/{company}/ledger", h.ledger)
	authed("GET", "/companies/{company}/webhooks", h.webhooks)
	authed("POST", "/companies/{company}/webhooks", h.addWebhook)
	authed("GET", "/companies/{company}/webhooks/{endpoint}", h.deliveries)
	authed("POST", "/companies/{company}/webhooks/{endpoint}", h.setWebhook)
	authed("GET", "/companies/{company}/audit", h.audit)
}

// serve authenticates the request when it must, reads a POST's form of at
// most limit bytes and checks its CSRF token, runs fn and renders what it
// chose, or the error.
func (h *Handler) serve(w http.ResponseWriter, r *http.Request, fn pageFunc, auth bool, limit int64) {
	p := &page{Prefix: h.cfg.Prefix, Nonce: nonce()}
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'nonce-"+p.Nonce+"'; script-src 'nonce-"+p.Nonce+
		"'; img-src 'self' data:; media-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	if auth {
		session, err := h.session(r)
		if err != nil {
			h.fail(w, p, statusOf(err), messageOf(err))
			return
		}
		if session == "" {
			if r.Method == http.MethodGet {
				http.Redirect(w, r, h.cfg.Prefix+"/login?next="+urlQueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			h.fail(w, p, http.StatusUnauthorized, "Log in first.")
			return
		}
		p.LoggedIn, p.CSRF, p.session = true, h.csrfToken(session), session
		if r.Method == http.MethodPost {
			if status, msg := h.checkPost(w, r, session, limit); status != 0 {
				h.fail(w, p, status, msg)
				return
			}
		}
	}
	ctx := consentkit.WithActor(r.Context(), consent.ActorOperator)
	r = r.WithContext(ctx)
	if err := fn(w, r, p); err != nil {
		h.fail(w, p, statusOf(err), messageOf(err))
		return
	}
	if p.redirect != "" {
		http.Redirect(w, r, p.redirect, http.StatusSeeOther)
		return
	}
	if p.done {
		return
	}
	h.render(w, p, http.StatusOK)
}

// fail renders an error page.
func (h *Handler) fail(w http.ResponseWriter, p *page, status int, msg string) {
	p.Template, p.Title, p.Error = "error", http.StatusText(status), msg
	h.render(w, p, status)
}

func (h *Handler) render(w http.ResponseWriter, p *page, status int) {
	var b strings.Builder
	if err := pages.ExecuteTemplate(&b, p.Template, p); err != nil {
		slog.Error("consentkit: dashboard page failed to render", "page", p.Template, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, b.String()) // a client gone mid-page has no one to tell
}

// statusOf maps the service's error codes to HTTP statuses.
func statusOf(err error) int {
	switch consent.ErrorCode(err) {
	case consent.Invalid:
		return http.StatusBadRequest
	case consent.NotFound:
		return http.StatusNotFound
	case consent.Conflict:
		return http.StatusConflict
	case consent.Unprocessable:
		return http.StatusUnprocessableEntity
	case consent.Payment:
		return http.StatusPaymentRequired
	case consent.Forbidden:
		return http.StatusForbidden
	}
	return http.StatusInternalServerError
}

// messageOf is what an error page says: the service's message, never the
// text of a store's error.
func messageOf(err error) string {
	if consent.ErrorCode(err) == consent.Internal {
		slog.Error("consentkit: dashboard request failed", "err", err)
	}
	return consent.ErrorMessage(err)
}

// Sessions. A login is a session kept in the store (consent.OperatorSession):
// the cookie holds "<secret>.<mac>", a random session secret and the HMAC
// of it under a key derived from the operator secret; the store keeps the
// secret's digest (consent.DigestOf) and the session's times. A cookie is
// accepted when its MAC holds and the store has an unexpired session of
// its digest: a logout deletes the session for every instance sharing
// the store, and changing the operator secret changes the key, so that
// no cookie made before holds.

const cookieName = "consentkit_dashboard"

// pruneSessions is how many expired sessions a login deletes: more than
// a login makes, so they never pile up, and few enough to stay cheap.
const pruneSessions = 100

func (h *Handler) sign(msg string) string {
	mac := hmac.New(sha256.New, h.key)
	mac.Write([]byte(msg))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// session returns the session secret of the request's login cookie when
// the cookie is one this handler made and its session is in the store and
// has not expired; "" when not. An error is the store's.
func (h *Handler) session(r *http.Request) (string, error) {
	c, err := r.Cookie(cookieName)
	if err != nil {
		return "", nil
	}
	sec, mac, ok := strings.Cut(c.Value, ".")
	if !ok || sec == "" || !hmac.Equal([]byte(mac), []byte(h.sign("session|"+sec))) {
		return "", nil
	}
	ctx := r.Context()
	var s *consent.OperatorSession
	err = h.svc.Store().View(ctx, func(tx consent.Tx) error {
		var err error
		s, err = tx.OperatorSession(ctx, consent.DigestOf(sec))
		return err
	})
	switch {
	case consent.ErrorCode(err) == consent.NotFound:
		return "", nil
	case err != nil:
		return "", err
	case !s.ExpiresAt.After(h.svc.Now()):
		return "", nil
	}
	return sec, nil
}

// csrfToken is the CSRF token of the forms of a session.
func (h *Handler) csrfToken(session string) string { return h.sign("csrf|" + session) }

// checkPost reads a POST's form, of at most limit bytes, and reports why
// it is refused: 413 when its body is larger, 403 unless it carries the
// CSRF token of its session and, when the browser says where it came
// from, came from this origin; 0 when it is not refused.
func (h *Handler) checkPost(w http.ResponseWriter, r *http.Request, session string, limit int64) (int, string) {
	const stale = "This form is stale or came from another site; reload the page and try again."
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" && s != "same-origin" {
		return http.StatusForbidden, stale
	}
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	if err := r.ParseForm(); err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return http.StatusRequestEntityTooLarge, fmt.Sprintf("This form is too large: at most %d KB are taken. Nothing was changed.", limit>>10)
		}
		// Anything else unread leaves the token unread: refused below.
	}
	token := r.PostFormValue("csrf")
	if token == "" || !hmac.Equal([]byte(token), []byte(h.csrfToken(session))) {
		return http.StatusForbidden, stale
	}
	return 0, ""
}

// maxForm bounds a form's body.
const maxForm = 64 << 10

// maxProfileForm bounds the body of the form that puts an audit profile:
// rules of consent.MaxProfileRules bytes, each byte URL-encoded in up to 3
// ("%7B"), and the form's other fields.
const maxProfileForm = 3*consent.MaxProfileRules + maxForm

// startSession stores a new session, prunes expired ones, and sets its
// cookie.
func (h *Handler) startSession(w http.ResponseWriter, r *http.Request) error {
	b := make([]byte, 32)
	rand.Read(b)
	sec := base64.RawURLEncoding.EncodeToString(b)
	now := h.svc.Now()
	ctx := r.Context()
	err := h.svc.Store().Update(ctx, func(tx consent.Tx) error {
		if _, err := tx.PruneOperatorSessions(ctx, now, pruneSessions); err != nil {
			return err
		}
		return tx.CreateOperatorSession(ctx, &consent.OperatorSession{Digest: consent.DigestOf(sec), CreatedAt: now, ExpiresAt: now.Add(h.cfg.SessionTTL)})
	})
	if err != nil {
		return err
	}
	h.setCookie(w, r, sec+"."+h.sign("session|"+sec), int(h.cfg.SessionTTL/time.Second))
	return nil
}

// setCookie sets the login cookie; maxAge -1 clears it. It is Secure when
// the client came over HTTPS, directly or through a trusted proxy.
func (h *Handler) setCookie(w http.ResponseWriter, r *http.Request, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: value, Path: cmp.Or(h.cfg.Prefix, "/"), MaxAge: maxAge,
		HttpOnly: true, Secure: h.cfg.TrustedProxies.HTTPS(r), SameSite: http.SameSiteStrictMode,
	})
}

func (h *Handler) loginPage(w http.ResponseWriter, r *http.Request, p *page) error {
	if sec, err := h.session(r); err != nil {
		return err
	} else if sec != "" {
		p.redirect = h.cfg.Prefix + "/"
		return nil
	}
	p.Template, p.Title, p.Next = "login", "Log in", localPath(h.cfg.Prefix, r.URL.Query().Get("next"))
	return nil
}

// login checks the operator secret, within the client's login limit.
//
// Each client address (an IPv6 client's network, D20) has a bucket of
// Config.LoginsPerMinute attempts, right or wrong, so that guessing from
// one address is slow and never locks out the operator at another. A
// client whose bucket is empty is refused without the secret being
// looked at, the right one too: were the right one let in, the answer
// would tell a right guess from a wrong one and the limit would limit
// nothing. Memory is bounded: when the limiter holds
// Config.MaxLoginClients clients that have spent attempts (an attacker
// spraying addresses), a new client has no bucket; its secret is still
// checked, so that the operator logs in and a wrong secret is refused.
// Guessing from addresses beyond the cap is then bounded only by the
// secret's length (MinSecret), as guessing from many addresses is anyway.
//
// A login that the browser says came from another site (a page the
// operator visits posting the form) is refused before it spends an
// attempt, so that such a page cannot spend the operator's.
func (h *Handler) login(w http.ResponseWriter, r *http.Request, p *page) error {
	if !loginFromHere(r) {
		h.fail(w, p, http.StatusForbidden, "This login came from another site; open the login page and log in there.")
		p.done = true
		return nil
	}
	ip := h.cfg.TrustedProxies.ClientIP(r)
	if !ip.IsValid() {
		// Never one shared bucket for every client of unknown address.
		slog.ErrorContext(r.Context(), "consentkit: a dashboard login's client address is unknown, so its rate limit cannot apply; "+
			"behind a proxy on a Unix socket set Config.TrustedProxies.UnixSocket and have the proxy send X-Forwarded-For",
			"peer", r.RemoteAddr)
		h.fail(w, p, http.StatusInternalServerError, "The client's address cannot be determined, so logins cannot be limited.")
		p.done = true
		return nil
	}
	wait, err := h.logins.Allow(ratelimit.ClientKey(ip, h.cfg.IPv6PrefixBits))
	if errors.Is(err, ratelimit.ErrEmpty) {
		w.Header().Set("Retry-After", strconv.Itoa(ratelimit.RetryAfter(wait)))
		h.fail(w, p, http.StatusTooManyRequests, "Too many login attempts from this address; wait a minute.")
		p.done = true
		return nil
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	got := sha256.Sum256([]byte(r.PostFormValue("secret")))
	if !hmac.Equal(got[:], h.secret[:]) {
		p.Template, p.Title, p.Error, p.Next = "login", "Log in", "That is not the operator secret.", localPath(h.cfg.Prefix, r.PostFormValue("next"))
		h.render(w, p, http.StatusUnauthorized)
		p.done = true
		return nil
	}
	if err := h.startSession(w, r); err != nil {
		return err
	}
	p.redirect = localPath(h.cfg.Prefix, r.PostFormValue("next"))
	return nil
}

// loginFromHere reports whether a login POST may have come from the
// dashboard's own page, as far as the browser tells: Sec-Fetch-Site is
// same-origin, or none (the operator's own navigation); without it, an
// Origin, when sent, is of this host. A client that sends neither is not
// a browser a page could drive, and is let through.
func loginFromHere(r *http.Request) bool {
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" {
		return s == "same-origin" || s == "none"
	}
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host)
}

// logout ends the session on the server, for every instance sharing the
// store, and clears the cookie.
func (h *Handler) logout(w http.ResponseWriter, r *http.Request, p *page) error {
	ctx := r.Context()
	err := h.svc.Store().Update(ctx, func(tx consent.Tx) error { return tx.DeleteOperatorSession(ctx, consent.DigestOf(p.session)) })
	if err != nil {
		return err
	}
	h.setCookie(w, r, "", -1)
	p.redirect = h.cfg.Prefix + "/login"
	return nil
}

// localPath returns next, a path and maybe a query, when it is a page of
// the dashboard, its path cleaned as a browser would clean it (dot
// segments, encoded or not); else the dashboard's home: a login never
// redirects elsewhere.
func localPath(prefix, next string) string {
	home := prefix + "/"
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n#") {
		return home
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.Opaque != "" || u.User != nil {
		return home
	}
	clean := path.Clean(u.Path)
	if strings.HasSuffix(u.Path, "/") && clean != "/" {
		clean += "/"
	}
	if !strings.HasPrefix(clean, home) {
		return home
	}
	return (&url.URL{Path: clean, RawQuery: u.RawQuery}).String()
}

func nonce() string {
	b := make([]byte, 16)
	rand.Read(b)
	return base64.RawStdEncoding.EncodeToString(b)
}

// companyOf returns the company of the request's {company}; NotFound when
// there is none.
func (h *Handler) companyOf(ctx context.Context, r *http.Request) (*consent.Company, error) {
	id := r.PathValue("company")
	if err := consent.CheckID("company_id", id); err != nil {
		return nil, consent.Errorf(consent.NotFound, "company not found")
	}
	var c *consent.Company
	err := h.svc.Store().View(ctx, func(tx consent.Tx) error {
		var err error
		c, err = tx.Company(ctx, id)
		return err
	})
	if consent.ErrorCode(err) == consent.NotFound {
		return nil, consent.Errorf(consent.NotFound, "company %s not found", id)
	}
	return c, err
}
