package httpadapter_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/webhook"
)

// fuzzRequest is a request for path, whose segments (after the first
// prefix ones, given escaped) are sent percent-encoded, as a client sends
// an identifier that holds "/" or "%": the route sees each segment whole.
func fuzzRequest(method, prefix string, segments []string, suffix, query, body string) *http.Request {
	req := httptest.NewRequest(method, "/", strings.NewReader(body))
	raw, escaped := prefix, prefix
	for _, s := range segments {
		raw += "/" + s
		escaped += "/" + url.PathEscape(s)
	}
	req.URL = &url.URL{Path: raw + suffix, RawPath: escaped + suffix, RawQuery: query}
	req.RequestURI = req.URL.RequestURI()
	req.RemoteAddr = "192.0.2.1:1234"
	return req
}

// isNoRoute reports whether rec is the router's answer to a path that names
// no route (an empty, "." or ".." segment leaves the path unclean).
func isNoRoute(rec *httptest.ResponseRecorder) bool {
	return rec.Code == 404 && strings.Contains(rec.Body.String(), "no such endpoint")
}

// The operator API's routes, by the fuzzer's choice.
var operatorRoutes = []struct {
	method, suffix string
	endpoint       bool // the path names an endpoint: /webhooks/{endpoint_id}…
	statuses       []int
	writes         []string // what a success stores, audit entries aside
}{
	{"POST", "/webhooks", false, []int{201, 400, 404, 413}, []string{"CreateWebhookEndpoint"}},
	{"GET", "/webhooks", false, []int{200, 400, 404}, nil},
	{"DELETE", "", true, []int{200, 400, 404}, []string{"DeleteWebhookEndpoint"}},
	{"POST", "/disable", true, []int{200, 400, 404}, []string{"DisableWebhookEndpoint"}},
	{"POST", "/enable", true, []int{200, 400, 404}, []string{"DisableWebhookEndpoint"}},
	{"GET", "/deliveries", true, []int{200, 400, 404}, nil},
	{"GET", "/audit", false, []int{200, 400, 404}, nil},
}

// The operator API, whatever the route's path parameters, query, body and
// Authorization header: anything but the operator secret is a 401 that
// stores nothing; with it, an answer of the route's documented set and
// shape; a change stored only when it succeeded, and only the route's own;
// an endpoint added holds the URL, events and secret sent; a page of the
// delivery log or of the audit log is within its limit, in order, and
// passes the query's filters, and the audit log's page is the one SQLite
// returns for the same query of the same entries.
//
// go test -run '^$' -fuzz FuzzOperatorAPI ./httpadapter
func FuzzOperatorAPI(f *testing.F) {
	hook := `{"url":"https://hooks.acme.example/in","events":["consent.revoked","session.retained"]}`
	for _, s := range []struct {
		route                             uint8
		company, endpoint, query, body, a string
	}{
		{0, "acme", "", "", hook, ""},
		{0, "acme", "", "", `{"url":"http://hooks.acme.example:8080/in?x=1","events":["video.failed","video.failed"],"secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}`, ""},
		{0, "acme", "", "", `{"url":"https://127.0.0.1/in","events":["consent.revoked"]}`, ""},
		{0, "acme", "", "", `{"url":"https://0x7f.1/in","events":["consent.revoked"]}`, ""},
		{0, "acme", "", "", `{"url":"https://u:p@hooks.acme.example/","events":["consent.revoked"]}`, ""},
		{0, "acme", "", "", `{"url":"ftp://hooks.acme.example","events":["consent.revoked"]}`, ""},
		{0, "acme", "", "", `{"url":"https://hooks.acme.example","events":[]}`, ""},
		{0, "acme", "", "", `{"url":"https://hooks.acme.example","events":["nope"]}`, ""},
		{0, "acme", "", "", `{"url":"https://hooks.acme.example","events":["consent.revoked"],"secret":"whsec_short"}`, ""},
		{0, "acme", "", "", `{"url":"https://hooks.acme.example/\u0007","events":["consent.revoked"]}`, ""},
		{0, "nobody", "", "", hook, ""}, {0, "a/b", "", "", hook, ""}, {0, "", "", "", hook, ""}, {0, "..", "", "", hook, ""},
		{0, "acme", "", "", `{"url":1}`, ""}, {0, "acme", "", "", ``, ""},
		{0, "acme", "", "", hook, "Bearer " + acmeToken}, {0, "acme", "", "", hook, "Bearer " + operatorSecret + "x"},
		{0, "acme", "", "", hook, "bearer   " + operatorSecret + " "}, {0, "acme", "", "", hook, "Basic " + operatorSecret},
		{1, "acme", "", "", "", ""}, {1, "other", "", "", "", ""}, {1, "nobody", "", "", "", ""}, {1, "acme co", "", "", "", ""},
		{2, "acme", "ep-fuzz", "", "", ""}, {2, "other", "ep-fuzz", "", "", ""}, {2, "acme", "ep fuzz", "", "", ""},
		{3, "acme", "ep-fuzz", "", "", ""}, {4, "acme", "ep-fuzz", "", "", ""}, {3, "nobody", "ep-fuzz", "", "", ""},
		{5, "acme", "ep-fuzz", "limit=2", "", ""}, {5, "acme", "ep-fuzz", "limit=2&before=3", "", ""},
		{5, "acme", "ep-fuzz", "limit=0x10", "", ""}, {5, "acme", "ep-fuzz", "before=-1", "", ""}, {5, "acme", "ep-fuzz", "limit=5000", "", ""},
		{5, "acme", "ep-fuzz", "limit=1&limit=2;x", "", ""}, {5, "other", "ep-fuzz", "", "", ""}, {5, "acme", "ep-nope", "", "", ""},
		{6, "acme", "", "", "", ""}, {6, "acme", "", "action=wallet.&limit=3", "", ""}, {6, "acme", "", "after=2&limit=1", "", ""},
		{6, "acme", "", "actor=operator&target=acme", "", ""}, {6, "acme", "", "action=%25&target=_", "", ""},
		{6, "acme", "", "action=%00", "", ""}, {6, "acme", "", "limit=1001", "", ""}, {6, "acme", "", "after=-1", "", ""},
		{6, "nobody", "", "", "", ""}, {6, "acme", "", "action=w%C3", "", ""},
		{6, "acme", "", "before=1", "", ""}, {6, "acme", "", "before=4&after=1", "", ""}, {6, "acme", "", "order=newest&limit=3", "", ""},
		{6, "acme", "", "order=newest&before=5&action=wallet.", "", ""}, {6, "acme", "", "order=sideways", "", ""},
	} {
		f.Add(s.route, s.company, s.endpoint, s.query, s.body, s.a)
	}
	j := &journal{Store: teststore.Memory(f)}
	e := setup(f, j)
	h, err := httpadapter.New(httpadapter.Config{Service: e.svc, OperatorSecret: operatorSecret,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	must(f, err)
	op := h.Operator()
	addFixtureEndpoint := func(t testing.TB) {
		_, err := webhook.Endpoints{Service: e.svc}.Add(ctx, webhook.Params{ID: "ep-fuzz", CompanyID: "acme",
			URL: "https://hooks.acme.example/fixture", Events: []string{consent.EventConsentRevoked}})
		must(t, err)
		must(t, e.store.Update(ctx, func(tx consent.Tx) error {
			for i := range 3 {
				err := tx.AppendWebhookDelivery(ctx, &consent.WebhookDelivery{EndpointID: "ep-fuzz", MessageID: "msg_" + strconv.Itoa(i),
					EventType: consent.EventConsentRevoked, Attempt: 1, At: now.Add(time.Duration(i) * time.Second), Status: 500 + i})
				if err != nil {
					return err
				}
			}
			return nil
		}))
	}
	addFixtureEndpoint(f)
	// The same audit log on SQLite: acme's entries appended again there
	// chain to the same hashes.
	sqlite := teststore.SQLite(f)
	entries, err := e.svc.AuditLog(ctx, consent.AuditQuery{CompanyID: "acme", Limit: consent.MaxAuditPage})
	must(f, err)
	must(f, sqlite.Update(ctx, func(tx consent.Tx) error {
		err := e.store.View(ctx, func(mem consent.Tx) error {
			co, err := mem.Company(ctx, "acme")
			if err == nil {
				err = tx.CreateCompany(ctx, co)
			}
			return err
		})
		if err != nil {
			return err
		}
		for _, en := range entries {
			c := *en
			if err := tx.AppendAudit(ctx, &c); err != nil {
				return err
			}
			if c.Hash != en.Hash {
				return fmt.Errorf("audit entry %d hashes otherwise on SQLite", en.Seq)
			}
		}
		return nil
	}))
	auditFixture := len(entries)

	var clients atomic.Uint32
	f.Fuzz(func(t *testing.T, route uint8, company, endpoint, query, body, auth string) {
		rt := operatorRoutes[int(route)%len(operatorRoutes)]
		segments := []string{company}
		suffix := rt.suffix
		if rt.endpoint {
			segments = append(segments, "webhooks", endpoint)
		}
		if rt.suffix != "/deliveries" && rt.suffix != "/audit" {
			query = "" // only the two pages read a query
		}
		req := fuzzRequest(rt.method, "/operator/companies", segments, suffix, query, body)
		// Each from an address of its own: the wrong secrets the fuzzer
		// sends would spend one address's (OperatorFailuresPerMinute), and
		// the right one be answered 429.
		req.RemoteAddr = nthClient(clients.Add(1))
		canonical := auth == ""
		if canonical {
			auth = "Bearer " + operatorSecret
		}
		secret, _ := bearerOf(auth)
		operator := secret == operatorSecret
		req.Header.Set("Authorization", auth)
		mark := j.mark()
		rec := httptest.NewRecorder()
		op.ServeHTTP(rec, req)
		what := rt.method + " " + req.URL.RawPath + "?" + query
		writes := j.since(mark, "AppendAudit")
		if !operator && !isNoRoute(rec) {
			checkAnswer(t, what, rec, httpadapter.VerifyErrors, 401)
		}
		got := checkAnswer(t, what, rec, httpadapter.VerifyErrors, append(rt.statuses, 401)...)
		if rec.Code == 401 && canonical {
			t.Fatalf("%s: 401 for the operator secret: %s", what, rec.Body)
		}
		if rec.Code >= 300 {
			if len(writes) > 0 {
				t.Fatalf("%s: %d %s stored %v", what, rec.Code, rec.Body, writes)
			}
			return
		}
		if !slices.Equal(writes, rt.writes) {
			t.Fatalf("%s: %d stored %v, want %v", what, rec.Code, writes, rt.writes)
		}
		if !slices.Contains(companies, company) {
			t.Fatalf("%s: %d for a company that does not exist: %s", what, rec.Code, rec.Body)
		}
		switch {
		case rt.method == "POST" && rt.suffix == "/webhooks":
			checkAddedEndpoint(t, e, body, got)
			// Delete it, so that a company never reaches its endpoints' limit.
			must(t, webhook.Endpoints{Service: e.svc}.Delete(ctx, company, got["id"].(string)))
		case rt.method == "DELETE" && endpoint == "ep-fuzz":
			addFixtureEndpoint(t)
		case rt.suffix == "/deliveries":
			checkPage(t, what, query, got, "deliveries", "before", 50, func(prev, seq int64) bool { return seq < prev })
		case rt.suffix == "/audit":
			if q, _ := url.ParseQuery(query); q.Get("order") == "newest" { // newest first, paged on with before
				checkPage(t, what, query, got, "entries", "before", 100, func(prev, seq int64) bool { return seq < prev })
			} else {
				checkPage(t, what, query, got, "entries", "after", 100, func(prev, seq int64) bool { return seq > prev })
			}
			checkAuditPage(t, sqlite, auditFixture, company, query, got)
		}
	})
}

// checkAddedEndpoint checks the answer of an added webhook endpoint: the
// URL as sent, the events sent (known ones, sorted, once each), the secret
// sent or a new one, and the same stored.
func checkAddedEndpoint(t *testing.T, e *env, body string, got map[string]any) {
	t.Helper()
	var req struct {
		URL    string   `json:"url"`
		Events []string `json:"events"`
		Secret string   `json:"secret"`
	}
	must(t, json.Unmarshal([]byte(body), &req))
	u, err := url.Parse(req.URL)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Hostname() == "" || u.User != nil {
		t.Fatalf("an endpoint was added with the URL %q", req.URL)
	}
	events := slices.Clone(req.Events)
	slices.Sort(events)
	events = slices.Compact(events)
	for _, ev := range events {
		if !slices.Contains(consent.EventTypes, ev) {
			t.Fatalf("an endpoint was added for the event %q", ev)
		}
	}
	id, _ := got["id"].(string)
	secret, _ := got["secret"].(string)
	if got["url"] != req.URL || !strings.HasPrefix(secret, "whsec_") || req.Secret != "" && secret != req.Secret {
		t.Fatalf("added %s, answered %v", body, got)
	}
	var stored *consent.WebhookEndpoint
	must(t, e.store.View(ctx, func(tx consent.Tx) (err error) {
		stored, err = tx.WebhookEndpoint(ctx, id)
		return err
	}))
	if stored.URL != req.URL || stored.Secret != secret || !slices.Equal(stored.Events, events) {
		t.Fatalf("added %s, stored %+v", body, stored)
	}
}

// checkPage checks a page of a log: at most its limit (the query's, else
// def) of entries, each after the one before it and after (or before) the
// query's bound, and a next page's bound exactly when the page is full.
func checkPage(t *testing.T, what, query string, got map[string]any, list, bound string, def int, follows func(prev, seq int64) bool) {
	t.Helper()
	q, _ := url.ParseQuery(query)
	limit := def
	if n, _ := strconv.Atoi(q.Get("limit")); n != 0 { // none, or 0: the default
		limit = n
	}
	var from int64
	if s := q.Get(bound); s != "" {
		from, _ = strconv.ParseInt(s, 10, 64)
	}
	items, ok := got[list].([]any)
	if !ok || len(items) > limit {
		t.Fatalf("%s: %d %s for a limit of %d", what, len(items), list, limit)
	}
	prev := from
	for i, it := range items {
		n, _ := it.(map[string]any)["seq"].(json.Number).Int64()
		if (i > 0 || from != 0) && !follows(prev, n) {
			t.Fatalf("%s: entry %d of seq %d is out of order (the bound or the one before is %d)", what, i, n, prev)
		}
		prev = n
	}
	if _, next := got["next_"+bound]; next != (len(items) == limit) {
		t.Fatalf("%s: %d of %d %s, next_%s %v", what, len(items), limit, list, bound, got["next_"+bound])
	}
}

// checkAuditPage checks a page of acme's audit log against the query's
// filters, and, while the log is the fixture's, against SQLite's answer to
// the same query.
func checkAuditPage(t *testing.T, sqlite consent.Store, fixture int, company, query string, got map[string]any) {
	t.Helper()
	q, _ := url.ParseQuery(query)
	aq := consent.AuditQuery{CompanyID: company, ActionPrefix: q.Get("action"), Target: q.Get("target"), Actor: q.Get("actor"), Limit: 100}
	// A limit of 0 is the default page, as on every operator list.
	if n, _ := strconv.Atoi(q.Get("limit")); n != 0 {
		aq.Limit = n
	}
	if s := q.Get("after"); s != "" {
		aq.AfterSeq, _ = strconv.ParseInt(s, 10, 64)
	}
	if s := q.Get("before"); s != "" {
		aq.BeforeSeq, _ = strconv.ParseInt(s, 10, 64)
	}
	aq.Newest = q.Get("order") == "newest"
	var seqs []int64
	for _, it := range got["entries"].([]any) {
		en := it.(map[string]any)
		action, target, actor := en["action"].(string), en["target"].(string), en["actor"].(string)
		if !strings.HasPrefix(action, aq.ActionPrefix) || aq.Target != "" && target != aq.Target || aq.Actor != "" && actor != aq.Actor {
			t.Fatalf("audit ?%s: the entry %v does not pass the filters", query, en)
		}
		n, _ := en["seq"].(json.Number).Int64()
		seqs = append(seqs, n)
	}
	if company != "acme" {
		return
	}
	var want []int64
	err := sqlite.View(ctx, func(tx consent.Tx) error {
		es, err := tx.AuditEntries(ctx, aq)
		for _, e := range es {
			if e.Seq <= int64(fixture) {
				want = append(want, e.Seq)
			}
		}
		return err
	})
	if err != nil {
		t.Fatalf("audit ?%s: SQLite refuses the query the memory store answered: %v", query, err)
	}
	var mine []int64
	for _, s := range seqs {
		if s <= int64(fixture) {
			mine = append(mine, s)
		}
	}
	if len(seqs) < aq.Limit && !cmp.Equal(mine, want) {
		t.Fatalf("audit ?%s: entries %v; SQLite's %v", query, mine, want)
	}
}
