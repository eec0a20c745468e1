package httpadapter_test

import (
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/wallet"
)

// The fixture's token secrets that authenticate, and their companies.
var fixtureTokens = map[string]string{
	acmeToken: "acme", acmeNoPerm: "acme", buyerToken: "buyer", otherToken: "other", poorToken: "poor", closedToken: "closed",
}

// Routes that take a company or a session from the path or the body, by
// the fuzzer's choice. A /verify/ route is sent as /verify/… to one
// fixture and as /api/verify/… to another (D30).
var pathRoutes = []struct {
	method, prefix string
	// segments and suffix make the path from the company and session;
	// body the JSON body (nil: none).
	segments func(company, session string) []string
	suffix   string
	body     func(company, session string) any
	retain   bool // the Retain API: its error shape, the vzew_retention permission
	paid     bool // a 200 is charged, with one ledger entry
	statuses []int
}{
	{"POST", "/api/integrations", func(c, s string) []string { return []string{c, "retain", s} }, "", nil, true, true,
		[]int{200, 400, 401, 402, 403, 404, 409}},
	{"GET", "/api/integrations", func(c, s string) []string { return []string{c, "sessions", s} }, "", nil, true, false,
		[]int{200, 400, 401, 403, 404}},
	{"POST", "/verify/session", func(c, s string) []string { return []string{c} }, "",
		func(c, s string) any { return map[string]string{"session_id": s} }, false, true, []int{200, 400, 401, 402, 403, 404, 409}},
	{"POST", "/verify/certificate", func(c, s string) []string { return []string{c} }, "",
		func(c, s string) any { return map[string]string{"session_id": s} }, false, true, []int{200, 400, 401, 402, 403, 404, 409}},
	{"POST", "/verify/match", nil, "",
		func(c, s string) any {
			return map[string]string{"certificate_id": s, "company_id": c, "consent": consentText}
		}, false, true,
		[]int{200, 400, 401, 402, 403, 404, 409}},
	{"POST", "/verify/partial-match", nil, "",
		func(c, s string) any { return map[string]string{"certificate_id": s, "company_id": c, "term": "agree"} }, false, true,
		[]int{200, 400, 401, 402, 403, 404, 409}},
	{"POST", "/verify/certificate-info", nil, "",
		func(c, s string) any {
			return map[string]string{"certificate_id": s, "company_id": c, "property_id": c + "-web"}
		}, false, false, []int{200, 400, 401, 403, 404, 409}},
}

// The path parameters of the Retain API and of the retention routes, the
// ids of the verification bodies, and the Authorization header, whatever
// they are: an answer of the route's documented set and its shape (D14);
// a header that does not carry a live token's secret is a 401; the Retain
// API refuses a token without vzew_retention (403); a 200 only for the
// token's own company (D7), and a paid 200 has exactly one debit while
// nothing else is stored by any refusal (D3); and /verify/… and
// /api/verify/… answer alike, byte for byte (D30).
//
// go test -run '^$' -fuzz FuzzPathsAndAuth ./httpadapter
func FuzzPathsAndAuth(f *testing.F) {
	for route := range pathRoutes {
		r := uint8(route)
		for _, s := range []struct{ company, session, auth string }{
			{"acme", "new", ""}, {"acme", "s1", ""}, {"acme", "s2", ""}, {"other", "new", ""}, {"acme", "new", "Bearer " + buyerToken}, {"acme", "s-retained", ""}, {"acme", "cert-1", ""}, {"acme", "cert-revoked", ""},
			{"other", "s-other", ""}, {"acme", "s-other", ""}, {"acme", "nope", ""},
			{"acme", "s1", "Bearer " + otherToken}, {"acme", "s1", "Bearer " + acmeNoPerm}, {"acme", "s1", "Bearer " + acmeExpired},
			{"acme", "s1", "Bearer " + acmeRevoked}, {"poor", "s-poor", "Bearer " + poorToken}, {"poor", "cert-poor", "Bearer " + poorToken},
			{"acme", "s1", "bearer  " + acmeToken + "\t"}, {"acme", "s1", "Bearer\t" + acmeToken}, {"acme", "s1", "Token " + acmeToken},
			{"acme", "s1", "Bearer"}, {"acme", "s1", "Bearer " + acmeToken + " x"}, {"acme", "s1", acmeToken},
			{"a/b", "s1", ""}, {"acme", "s/1", ""}, {"acme", "..", ""}, {"", "s1", ""}, {"acme", "", ""}, {"ac me", "s%31", ""},
			{"acme", "s1\x00", ""}, {"ACME", "S1", ""}, {"acme", "batch", ""},
		} {
			f.Add(r, s.company, s.session, s.auth)
		}
	}
	open := func() (*env, *journal, *httpadapter.Handler) {
		j := &journal{Store: teststore.Memory(f)}
		e := setup(f, j)
		h, err := httpadapter.New(httpadapter.Config{Service: e.svc, OptOutPerMinute: -1, RetainPerMinute: -1})
		must(f, err)
		return e, j, h
	}
	eA, jA, hA := open() // served /verify/…
	eB, jB, hB := open() // served /api/verify/…
	fresh := 0
	f.Fuzz(func(t *testing.T, route uint8, company, session, auth string) {
		rt := pathRoutes[int(route)%len(pathRoutes)]
		canonical := auth == ""
		if canonical {
			auth = "Bearer " + acmeToken
		}
		if session == "new" { // a session of acme's that nobody retained, and its certificate
			fresh++
			session = "new-" + strconv.Itoa(fresh)
			for _, e := range []*env{eA, eB} {
				newSession(t, e, session)
			}
		}
		secret, _ := bearerOf(auth)
		tokenCompany, live := fixtureTokens[secret]
		var segments []string
		if rt.segments != nil {
			segments = rt.segments(company, session)
		}
		var body []byte
		if rt.body != nil {
			body, _ = json.Marshal(rt.body(company, session))
		}
		// Keep the wallets able to pay, so that refusals are of the input.
		for _, e := range []*env{eA, eB} {
			for _, c := range companies {
				if c != "poor" && e.balance(t, c) < wallet.Dollar/2 {
					_, err := e.svc.TopUp(ctx, c, wallet.Dollar, "fuzz")
					must(t, err)
				}
			}
		}
		serveOne := func(h *httpadapter.Handler, j *journal, prefix string) (*httptest.ResponseRecorder, []string) {
			req := fuzzRequest(rt.method, prefix, segments, rt.suffix, "", string(body))
			req.Header.Set("Authorization", auth)
			req.Header.Set("Content-Type", "application/json")
			mark := j.mark()
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			return rec, j.since(mark, "AppendAudit")
		}
		recA, writesA := serveOne(hA, jA, rt.prefix)
		prefixB := rt.prefix
		if !rt.retain {
			prefixB = "/api" + rt.prefix
		}
		recB, writesB := serveOne(hB, jB, prefixB)
		if recA.Code != recB.Code || recA.Body.String() != recB.Body.String() || !slices.Equal(writesA, writesB) {
			t.Fatalf("%s and %s answer otherwise:\n%d %s (stored %v)\n%d %s (stored %v)", rt.prefix, prefixB,
				recA.Code, recA.Body, writesA, recB.Code, recB.Body, writesB)
		}
		rec, writes := recA, writesA
		what := rt.method + " " + rt.prefix + " " + company + " " + session + " " + auth
		if isNoRoute(rec) {
			if len(writes) > 0 {
				t.Fatalf("%s: an unknown path stored %v", what, writes)
			}
			return
		}
		shape := httpadapter.VerifyErrors
		if rt.retain {
			shape = httpadapter.RetainErrors
		}
		checkAnswer(t, what, rec, shape, rt.statuses...)
		switch {
		case !live && rec.Code != 401:
			t.Fatalf("%s: %d for a header that carries no live token: %s", what, rec.Code, rec.Body)
		case canonical && rec.Code == 401:
			t.Fatalf("%s: 401 for a live token: %s", what, rec.Body)
		case rt.retain && secret == acmeNoPerm && rec.Code != 403:
			t.Fatalf("%s: %d for a token without %s: %s", what, rec.Code, consent.PermissionRetention, rec.Body)
		case rec.Code == 200 && company != tokenCompany:
			t.Fatalf("%s: 200 for company %q with a token of %q: %s", what, company, tokenCompany, rec.Body)
		}
		debits := 0
		for _, w := range writes {
			if w == "Debit" {
				debits++
			}
		}
		switch {
		case rec.Code != 200 && len(writes) > 0:
			t.Fatalf("%s: %d %s stored %v", what, rec.Code, rec.Body, writes)
		case rec.Code == 200 && rt.paid && debits != 1:
			t.Fatalf("%s: a paid 200 with %d debits: %v", what, debits, writes)
		case rec.Code == 200 && !rt.paid && debits != 0:
			t.Fatalf("%s: a free 200 with %d debits: %v", what, debits, writes)
		}
	})
}

// newSession adds a session of acme's, with a chunk of events and a
// certificate of the same id.
func newSession(t *testing.T, e *env, id string) {
	_, err := e.svc.StartSession(ctx, consentkit.SessionParams{ID: id, CompanyID: "acme", PropertyID: "acme-web"})
	must(t, err)
	_, err = e.svc.AppendEvents(ctx, id, json.RawMessage(`[{"type":4,"data":{"width":1024,"height":625},"timestamp":1}]`))
	must(t, err)
	_, err = e.svc.IssueCertificate(ctx, consentkit.CertificateParams{ID: id, CompanyID: "acme", PropertyID: "acme-web", SessionID: id,
		Origin: "https://acme.example/quote", Records: []consent.Record{{Text: consentText, Types: []string{"tcpa"}}}})
	must(t, err)
}
