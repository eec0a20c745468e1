package dashboard_test

import (
	"context"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/dashboard"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/signed"
	"github.com/consentkit/consentkit/wallet"
	"github.com/consentkit/consentkit/webhook"
)

var ctx = context.Background()

const (
	secret      = "the-operator-secret-of-these-tests-01234"
	consentText = "I agree that Acme Insurance may call me about my quote."
	email       = "Lead.Person@Example.com"
)

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// fixture: companies acme and other, a property, a token and a
// certificate each; it returns the service and acme's token secret.
func fixture(t testing.TB, st consent.Store) (*consentkit.Service, string) {
	return fixtureAt(t, st, nil)
}

// fixtureAt is fixture with the service on the clock now (nil: the
// system's).
func fixtureAt(t testing.TB, st consent.Store, now func() time.Time) (*consentkit.Service, string) {
	key, err := signed.NewSigningKey("dashboard-test")
	must(t, err)
	svc, err := consentkit.NewService(st, consentkit.Config{SigningKeys: []signed.SigningKey{key}, Now: now})
	must(t, err)
	var acmeSecret string
	for _, id := range []string{"acme", "other"} {
		_, err := svc.CreateCompany(ctx, consentkit.CompanyParams{ID: id, Name: strings.ToUpper(id[:1]) + id[1:] + " Co"})
		must(t, err)
		_, err = svc.TopUp(ctx, id, wallet.Dollar, "initial")
		must(t, err)
		_, err = svc.AddProperty(ctx, consentkit.PropertyParams{ID: id + "-web", CompanyID: id, Name: "Quote form", AllowedOrigins: []string{"https://forms." + id + ".example"}})
		must(t, err)
		_, sec, err := svc.IssueToken(ctx, consentkit.TokenParams{CompanyID: id})
		must(t, err)
		if id == "acme" {
			acmeSecret = sec
		}
		_, err = svc.StartSession(ctx, consentkit.SessionParams{ID: "s-" + id, CompanyID: id, PropertyID: id + "-web"})
		must(t, err)
		_, err = svc.AppendEvents(ctx, "s-"+id, json.RawMessage(`[{"type":4,"data":{"width":800,"height":600},"timestamp":1}]`))
		must(t, err)
		_, err = svc.IssueCertificate(ctx, consentkit.CertificateParams{
			ID: "cert-" + id, CompanyID: id, PropertyID: id + "-web", SessionID: "s-" + id, Origin: "https://forms." + id + ".example/quote",
			Email: email, Records: []consent.Record{{Text: consentText, Types: []string{"tcpa"}}},
			Visibility: &consent.Visibility{InViewport: true, Visible: true, FontSizePx: 14, TextColor: "rgb(17, 17, 17)",
				BackgroundColor: "rgb(255, 255, 255)", ContrastRatio: 18.88},
		})
		must(t, err)
	}
	return svc, acmeSecret
}

type browser struct {
	t    testing.TB
	base string
	c    *http.Client
	csrf string // of the last page read
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func newBrowser(t testing.TB, h http.Handler) *browser {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/dashboard/", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	jar, err := cookiejar.New(nil)
	must(t, err)
	return &browser{t: t, base: srv.URL, c: &http.Client{Jar: jar}}
}

// get reads a page; it returns the status and body.
func (b *browser) get(path string) (int, string) {
	b.t.Helper()
	resp, err := b.c.Get(b.base + path)
	must(b.t, err)
	return b.read(resp)
}

func (b *browser) read(resp *http.Response) (int, string) {
	b.t.Helper()
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	must(b.t, err)
	if m := csrfRE.FindSubmatch(body); m != nil {
		b.csrf = string(m[1])
	}
	return resp.StatusCode, string(body)
}

// post submits a form with the CSRF token of the last page read, unless
// form sets its own.
func (b *browser) post(path string, form url.Values) (int, string) {
	b.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	if _, ok := form["csrf"]; !ok && b.csrf != "" {
		form.Set("csrf", b.csrf)
	}
	resp, err := b.c.PostForm(b.base+path, form)
	must(b.t, err)
	return b.read(resp)
}

func (b *browser) login() {
	b.t.Helper()
	if code, body := b.post("/dashboard/login", url.Values{"secret": {secret}}); code != 200 || !strings.Contains(body, "Companies") {
		b.t.Fatalf("log in: %d %s", code, body)
	}
}

func contains(t *testing.T, what, body string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(body, w) {
			t.Errorf("%s: no %q in the page", what, w)
		}
	}
}

func TestNewNeedsASecret(t *testing.T) {
	svc, err := consentkit.NewService(teststore.Memory(t), consentkit.Config{})
	must(t, err)
	if _, err := dashboard.New(svc, dashboard.Config{OperatorSecret: "short"}); err == nil {
		t.Error("a short operator secret was accepted")
	}
	if _, err := dashboard.New(nil, dashboard.Config{OperatorSecret: secret}); err == nil {
		t.Error("a nil service was accepted")
	}
}

// Only the operator secret logs in; everything else, company tokens
// included, is refused, and pages need a login.
func TestLogin(t *testing.T) {
	svc, acmeSecret := fixture(t, teststore.Memory(t))
	h, err := dashboard.New(svc, dashboard.Config{OperatorSecret: secret})
	must(t, err)
	b := newBrowser(t, h)
	code, body := b.get("/dashboard/companies/acme")
	if code != 200 || !strings.Contains(body, `name="secret"`) {
		t.Fatalf("a page without login: %d, want the login form: %s", code, body)
	}
	for _, wrong := range []string{"", acmeSecret, secret + "x", strings.ToUpper(secret)} {
		if code, _ := b.post("/dashboard/login", url.Values{"secret": {wrong}}); code != http.StatusUnauthorized {
			t.Errorf("log in with %q: %d, want 401", wrong, code)
		}
	}
	if code, body := b.get("/dashboard/companies/acme"); strings.Contains(body, "Wallet") {
		t.Errorf("a refused login still reads a page: %d", code)
	}
	// A login goes back where it was asked for, never elsewhere.
	code, body = b.post("/dashboard/login", url.Values{"secret": {secret}, "next": {"/dashboard/companies/acme"}})
	if code != 200 || !strings.Contains(body, `id="company-id"`) {
		t.Errorf("after login: %d, want acme's overview", code)
	}
	// A POST without the CSRF token, or with another's, is refused.
	if code, _ := b.post("/dashboard/companies/acme/topup", url.Values{"amount": {"5"}, "csrf": {""}}); code != http.StatusForbidden {
		t.Errorf("top-up without a CSRF token: %d, want 403", code)
	}
	if code, _ := b.post("/dashboard/companies/acme/topup", url.Values{"amount": {"5"}, "csrf": {"forged"}}); code != http.StatusForbidden {
		t.Errorf("top-up with a forged CSRF token: %d, want 403", code)
	}
	if bal, err := svc.Balance(ctx, "acme"); err != nil || bal != wallet.Dollar {
		t.Errorf("balance %v %v after refused top-ups, want 1.000", bal, err)
	}
	// A handler with another secret does not accept this login.
	h2, err := dashboard.New(svc, dashboard.Config{OperatorSecret: secret + "-rotated"})
	must(t, err)
	b2 := newBrowser(t, h2)
	b2.c.Jar = b.c.Jar
	u, _ := url.Parse(b.base)
	u2, _ := url.Parse(b2.base)
	b2.c.Jar.SetCookies(u2, b.c.Jar.Cookies(u.JoinPath("/dashboard/")))
	if _, body := b2.get("/dashboard/companies/acme"); !strings.Contains(body, `name="secret"`) {
		t.Error("a login of another secret was accepted")
	}
	// Log out.
	b.get("/dashboard/")
	b.post("/dashboard/logout", nil)
	if _, body := b.get("/dashboard/companies/acme"); !strings.Contains(body, `name="secret"`) {
		t.Error("still logged in after logging out")
	}
}

// Every page renders on every store; what the forms change is changed
// and audited with the actor "operator"; a company's pages never show
// another's certificate.
func TestPages(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		svc, _ := fixture(t, open(t))
		h, err := dashboard.New(svc, dashboard.Config{OperatorSecret: secret, PublicURL: "https://consent.example.com"})
		must(t, err)
		b := newBrowser(t, h)
		b.login()

		_, body := b.get("/dashboard/")
		contains(t, "companies", body, `href="/dashboard/companies/acme"`, `href="/dashboard/companies/other"`)
		if code, _ := b.post("/dashboard/companies", url.Values{"id": {"newco"}, "name": {"New Co"}}); code != 200 {
			t.Errorf("create a company: %d", code)
		}
		if _, err := svc.Balance(ctx, "newco"); err != nil {
			t.Errorf("the company created is not there: %v", err)
		}
		if code, body := b.post("/dashboard/companies", url.Values{"id": {"newco"}, "name": {"Again"}}); code != http.StatusConflict {
			t.Errorf("create it again: %d %s, want 409", code, body)
		}

		_, body = b.get("/dashboard/companies/acme")
		contains(t, "overview", body, "Acme Co", `<code id="company-id">acme</code>`, "<code>acme-web</code>", "$1.00", "top_up")
		// The top-up form carries a key of its own (D40): sent twice, it
		// credits once.
		key := regexp.MustCompile(`name="key" value="([^"]+)"`).FindStringSubmatch(body)
		if key == nil {
			t.Fatalf("the top-up form has no key: %s", body)
		}
		topUp := url.Values{"amount": {"2.50"}, "reference": {"invoice 7"}, "key": {key[1]}}
		if code, body := b.post("/dashboard/companies/acme/topup", topUp); code != 200 || !strings.Contains(body, `id="balance">$3.50<`) {
			t.Errorf("top up: %d, want the new balance $3.50: %s", code, body)
		}
		if code, body := b.post("/dashboard/companies/acme/topup", topUp); code != 200 || !strings.Contains(body, "already made") || !strings.Contains(body, `id="balance">$3.50<`) {
			t.Errorf("the same form sent again: %d, want the balance still $3.50 and a notice: %s", code, body)
		}
		topUp.Set("amount", "9")
		if code, _ := b.post("/dashboard/companies/acme/topup", topUp); code != http.StatusUnprocessableEntity {
			t.Errorf("the form's key with another amount: %d, want 422", code)
		}
		if code, _ := b.post("/dashboard/companies/acme/topup", url.Values{"amount": {"1"}}); code != http.StatusBadRequest {
			t.Errorf("top up without the form's key: %d, want 400", code)
		}
		if code, _ := b.post("/dashboard/companies/acme/topup", url.Values{"amount": {"-1"}, "key": {"k-negative"}}); code != http.StatusBadRequest {
			t.Errorf("top up a negative amount: %d, want 400", code)
		}
		if bal, err := svc.Balance(ctx, "acme"); err != nil || bal != 3*wallet.Dollar+wallet.Dollar/2 {
			t.Errorf("balance %v %v after the top-ups, want 3.5", bal, err)
		}
		invoice7 := 0
		ledger, err := svc.LedgerPage(ctx, consent.Page{CompanyID: "acme", Limit: consent.MaxPage})
		must(t, err)
		for _, e := range ledger {
			if e.Reference == "invoice 7" {
				invoice7++
			}
		}
		if invoice7 != 1 {
			t.Errorf("%d ledger entries of the top-up, want 1 (the form sent twice credits once)", invoice7)
		}
		_, body = b.get("/dashboard/companies/acme/ledger")
		contains(t, "ledger", body, `id="ledger"`, "invoice 7", "+$2.50", "+$1.00")
		_, body = b.get("/dashboard/companies/acme/ledger?since=2000-01-01&until=2000-01-02")
		contains(t, "ledger of other dates", body, "No entries between these dates")
		// The last day a store keeps is a bound like any other: its end is
		// past every time.
		_, body = b.get("/dashboard/companies/acme/ledger?since=2000-01-01&until=9999-12-31")
		contains(t, "ledger up to the last day", body, "invoice 7", "+$2.50")
		if code, _ := b.get("/dashboard/companies/acme/ledger?since=yesterday"); code != http.StatusBadRequest {
			t.Errorf("ledger with a bad date: %d, want 400", code)
		}

		_, body = b.get("/dashboard/companies/acme/tokens")
		before := strings.Count(body, "<tr data-token=")
		code, body := b.post("/dashboard/companies/acme/tokens", url.Values{"retention": {"1"}, "days": {"30"}})
		m := regexp.MustCompile(`<pre class="secret" id="new-secret">([^<]+)</pre>`).FindStringSubmatch(body)
		if code != 200 || m == nil {
			t.Fatalf("issue a token: %d, the page shows no secret: %s", code, body)
		}
		tok, err := svc.Authenticate(ctx, m[1])
		if err != nil || tok.CompanyID != "acme" || !tok.Has(consent.PermissionRetention) {
			t.Fatalf("the secret shown does not authenticate as acme with retention: %v %+v", err, tok)
		}
		_, body = b.get("/dashboard/companies/acme/tokens")
		if strings.Contains(body, m[1]) {
			t.Error("the token's secret is shown again")
		}
		if n := strings.Count(body, "<tr data-token="); n != before+1 {
			t.Errorf("%d tokens listed, want %d", n, before+1)
		}
		if code, _ := b.post("/dashboard/companies/acme/tokens/"+tok.ID+"/revoke", nil); code != 200 {
			t.Errorf("revoke: %d", code)
		}
		if _, err := svc.Authenticate(ctx, m[1]); consent.ErrorCode(err) != consent.Unauthorized {
			t.Errorf("the revoked token still authenticates: %v", err)
		}
		if code, _ := b.post("/dashboard/companies/other/tokens/"+tok.ID+"/revoke", nil); code != http.StatusNotFound {
			t.Errorf("revoke acme's token under other: %d, want 404", code)
		}

		_, body = b.get("/dashboard/companies/acme/properties")
		contains(t, "properties", body, `&lt;script src=&#34;https://consent.example.com/capture/capture.js&#34; data-property-id=&#34;acme-web&#34; async&gt;&lt;/script&gt;`, "https://forms.acme.example")
		if code, _ := b.post("/dashboard/companies/acme/properties", url.Values{"id": {"acme-landing"}, "name": {"Landing"}, "origins": {"https://landing.acme.example\nhttps://www.acme.example"}}); code != 200 {
			t.Errorf("add a property: %d", code)
		}
		if code, _ := b.post("/dashboard/companies/acme/properties/acme-landing/origins", url.Values{"origins": {"https://landing.acme.example"}}); code != 200 {
			t.Errorf("set origins: %d", code)
		}
		must(t, svc.Store().View(ctx, func(tx consent.Tx) error {
			p, err := tx.Property(ctx, "acme-landing")
			if err == nil && (p.CompanyID != "acme" || strings.Join(p.AllowedOrigins, " ") != "https://landing.acme.example") {
				t.Errorf("property after setting its origins: %+v", p)
			}
			return err
		}))
		_, body = b.get("/dashboard/companies/acme/certificates?by=email&q=" + url.QueryEscape(" lead.person@example.com "))
		contains(t, "search by email", body, `href="/dashboard/companies/acme/certificates/cert-acme"`)
		if strings.Contains(body, "cert-other") {
			t.Error("the search by email shows another company's certificate")
		}
		_, body = b.get("/dashboard/companies/acme/certificates?by=id&q=cert-other")
		contains(t, "search another's id", body, `id="no-results"`)
		_, body = b.get("/dashboard/companies/acme/certificates")
		contains(t, "newest certificates", body, `id="recent"`, `href="/dashboard/companies/acme/certificates/cert-acme"`)
		if strings.Contains(body, "cert-other") {
			t.Error("the newest certificates show another company's")
		}
		_, body = b.get("/dashboard/companies/acme/certificates/cert-acme?term=quote")
		contains(t, "certificate", body, "<mark>quote</mark>", "not revoked", "https://forms.acme.example/quote")
		if code, _ := b.get("/dashboard/companies/acme/certificates/cert-other"); code != http.StatusNotFound {
			t.Errorf("another company's certificate: %d, want 404", code)
		}

		// Webhook endpoints: added (the secret shown once), disabled,
		// enabled, deleted.
		code, body = b.post("/dashboard/companies/acme/webhooks", url.Values{"url": {"https://crm.acme.example/hooks"},
			"events": {consent.EventConsentRevoked, consent.EventCertificateIssued}})
		ws := regexp.MustCompile(`id="new-webhook-secret">(whsec_[^<]+)<`).FindStringSubmatch(body)
		endpoints := webhook.Endpoints{Service: svc}
		eps, err := endpoints.List(ctx, "acme")
		must(t, err)
		if code != 200 || ws == nil || len(eps) != 1 || eps[0].Secret != html.UnescapeString(ws[1]) || strings.Join(eps[0].Events, " ") != "certificate.issued consent.revoked" {
			t.Fatalf("add an endpoint: %d, endpoints %+v: %s", code, eps, body)
		}
		ep := eps[0].ID
		_, body = b.get("/dashboard/companies/acme/webhooks")
		if strings.Contains(body, "whsec_") {
			t.Error("the endpoint's secret is shown again")
		}
		for _, step := range []struct {
			action   string
			disabled bool
		}{{"disable", true}, {"enable", false}} {
			if code, _ := b.post("/dashboard/companies/acme/webhooks/"+ep, url.Values{"action": {step.action}}); code != 200 {
				t.Errorf("%s the endpoint: %d", step.action, code)
			}
			if eps, err := endpoints.List(ctx, "acme"); err != nil || len(eps) != 1 || eps[0].Disabled() != step.disabled {
				t.Errorf("after %s: %+v %v", step.action, eps, err)
			}
		}
		if code, _ := b.post("/dashboard/companies/other/webhooks/"+ep, url.Values{"action": {"delete"}}); code != http.StatusNotFound {
			t.Errorf("delete acme's endpoint under other: %d, want 404", code)
		}
		if code, _ := b.post("/dashboard/companies/acme/webhooks/"+ep, url.Values{"action": {"delete"}}); code != 200 {
			t.Errorf("delete the endpoint: %d", code)
		}
		if eps, err := endpoints.List(ctx, "acme"); err != nil || len(eps) != 0 {
			t.Errorf("after delete: %+v %v", eps, err)
		}

		for _, page := range []string{"revocations", "webhooks", "audit"} {
			if code, body := b.get("/dashboard/companies/acme/" + page); code != 200 {
				t.Errorf("%s: %d %s", page, code, body)
			}
		}
		entries, err := svc.AuditLog(ctx, consent.AuditQuery{CompanyID: "acme", Actor: consent.ActorOperator})
		must(t, err)
		actions := map[string]int{}
		for _, e := range entries {
			if e.Outcome == consent.AuditOK {
				actions[e.Action]++
			}
		}
		for _, a := range []string{consent.AuditWalletCredit, consent.AuditTokenIssue, consent.AuditTokenRevoke, consent.AuditPropertyCreate, consent.AuditPropertyUpdate,
			consent.AuditWebhookCreate, consent.AuditWebhookDisable, consent.AuditWebhookEnable, consent.AuditWebhookDelete} {
			if actions[a] == 0 {
				t.Errorf("no audit entry %s by the operator: %v", a, actions)
			}
		}
		_, body = b.get("/dashboard/companies/acme/audit")
		contains(t, "audit page", body, consent.AuditTokenRevoke, tok.ID)

		if code, _ := b.get("/dashboard/companies/nobody"); code != http.StatusNotFound {
			t.Errorf("an unknown company: %d, want 404", code)
		}
	})
}

// A dashboard mounted at the root (Prefix "/") serves its login page.
func TestNewPrefixRoot(t *testing.T) {
	svc, _ := fixture(t, teststore.Memory(t))
	var h *dashboard.Handler
	var err error
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("dashboard.New with Prefix \"/\" panicked: %v", p)
			}
		}()
		h, err = dashboard.New(svc, dashboard.Config{OperatorSecret: secret, Prefix: "/"})
	}()
	if err != nil {
		t.Skipf("Prefix \"/\" refused: %v", err) // an error is an acceptable answer
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/login")
	if err != nil {
		t.Fatalf("GET /login: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != 200 {
		t.Errorf("GET /login with Prefix \"/\": %d, want 200 and the login form", resp.StatusCode)
	}
}

// New takes a prefix that routes and links can be built on, and refuses
// any other with an error, never a panic; at the root, a login leads to
// the root's pages.
func TestNewPrefix(t *testing.T) {
	svc, _ := fixture(t, teststore.Memory(t))
	for _, bad := range []string{"/a b", "/{company}", "/a/../b", "/a//b", "/./a", "/%2e", "/dash?x", "/dash#x"} {
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("New with Prefix %q panicked: %v", bad, p)
				}
			}()
			if _, err := dashboard.New(svc, dashboard.Config{OperatorSecret: secret, Prefix: bad}); err == nil {
				t.Errorf("New with Prefix %q: no error", bad)
			}
		}()
	}
	for _, good := range []string{"dashboard", "/ops/dashboard/", "/a-b_c.d~"} {
		if _, err := dashboard.New(svc, dashboard.Config{OperatorSecret: secret, Prefix: good}); err != nil {
			t.Errorf("New with Prefix %q: %v", good, err)
		}
	}
	h, err := dashboard.New(svc, dashboard.Config{OperatorSecret: secret, Prefix: "/"})
	must(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()
	jar, err := cookiejar.New(nil)
	must(t, err)
	c := &http.Client{Jar: jar}
	resp, err := c.PostForm(srv.URL+"/login", url.Values{"secret": {secret}, "next": {"/companies/acme"}})
	must(t, err)
	body, err := io.ReadAll(resp.Body)
	must(t, err)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/companies/acme" || !strings.Contains(string(body), "<h1>Acme Co</h1>") {
		t.Errorf("log in at the root: %d at %s, want acme's overview", resp.StatusCode, resp.Request.URL)
	}
}

// The confirmation shown on a page is one the dashboard made, not any
// text a link carries.
func TestNoticeNotFromLink(t *testing.T) {
	svc, _ := fixture(t, teststore.Memory(t))
	h, err := dashboard.New(svc, dashboard.Config{OperatorSecret: secret})
	must(t, err)
	b := newBrowser(t, h)
	b.login()
	_, body := b.get("/dashboard/companies/acme?notice=" + url.QueryEscape("Your session expired: log in again at https://evil.example/login"))
	if strings.Contains(body, "evil.example") {
		t.Errorf("the page shows a notice that a link wrote: %.200s", body[max(strings.Index(body, "<main"), 0):])
	}
	// The dashboard's own confirmation, after a change, is shown.
	b.get("/dashboard/companies/acme/properties")
	_, body = b.post("/dashboard/companies/acme/properties", url.Values{"id": {"acme-app"}, "name": {"App"}})
	contains(t, "after adding a property", body, `<p class="notice" role="status">Property acme-app added.</p>`)
}
