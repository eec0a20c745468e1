package httpadapter_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/signed"
	"github.com/consentkit/consentkit/store/memstore"
)

// openAPIDoc is the served document of h, as a client reads it.
func openAPIDoc(t *testing.T, h http.Handler) map[string]any {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/openapi.json", nil))
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("GET /openapi.json: %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	var doc map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// checker validates answers against the operations of an OpenAPI document:
// a small JSON Schema check of what the generator writes ($ref, allOf,
// type with null, properties, required, additionalProperties, items,
// const, enum, date-time, pattern, minimum).
type checker struct {
	doc map[string]any
	mux *http.ServeMux // the document's paths, to find a request's operation
}

func newChecker(doc map[string]any) *checker {
	c := &checker{doc: doc, mux: http.NewServeMux()}
	for path, item := range doc["paths"].(map[string]any) {
		for method := range item.(map[string]any) {
			c.mux.Handle(strings.ToUpper(method)+" "+path, http.NotFoundHandler())
		}
	}
	return c
}

// check returns what is wrong with the answer rec to req.
func (c *checker) check(req *http.Request, rec *httptest.ResponseRecorder) []string {
	_, pattern := c.mux.Handler(req)
	if pattern == "" {
		return []string{"no operation of the document matches " + req.Method + " " + req.URL.Path}
	}
	method, path, _ := strings.Cut(pattern, " ")
	op := c.doc["paths"].(map[string]any)[path].(map[string]any)[strings.ToLower(method)].(map[string]any)
	resp, ok := op["responses"].(map[string]any)[strconv.Itoa(rec.Code)].(map[string]any)
	if !ok {
		return []string{fmt.Sprintf("%s: status %d is not declared", pattern, rec.Code)}
	}
	var errs []string
	headers, _ := resp["headers"].(map[string]any)
	for name, hv := range headers {
		hd := c.resolve(hv)
		if hd["required"] == true && rec.Header().Get(name) == "" {
			errs = append(errs, fmt.Sprintf("%s %d: no %s header", pattern, rec.Code, name))
		}
		if v := rec.Header().Get(name); v != "" {
			var val any = v
			if s, _ := hd["schema"].(map[string]any); s["type"] == "integer" {
				val = json.Number(v)
			}
			errs = append(errs, c.validate(hd["schema"], val, name)...)
		}
	}
	content, _ := resp["content"].(map[string]any)
	ct, _, _ := strings.Cut(rec.Header().Get("Content-Type"), ";")
	if content == nil {
		if rec.Body.Len() > 0 {
			errs = append(errs, fmt.Sprintf("%s %d: a body where none is declared", pattern, rec.Code))
		}
		return errs
	}
	media, ok := content[ct].(map[string]any)
	if !ok {
		return append(errs, fmt.Sprintf("%s %d: Content-Type %q is not declared", pattern, rec.Code, ct))
	}
	if ct != "application/json" {
		return errs
	}
	dec := json.NewDecoder(rec.Body)
	dec.UseNumber()
	var body any
	if err := dec.Decode(&body); err != nil {
		return append(errs, fmt.Sprintf("%s %d: body is not JSON: %v", pattern, rec.Code, err))
	}
	for _, e := range c.validate(media["schema"], body, "body") {
		errs = append(errs, fmt.Sprintf("%s %d: %s", pattern, rec.Code, e))
	}
	return errs
}

func (c *checker) resolve(v any) map[string]any {
	m, _ := v.(map[string]any)
	if ref, ok := m["$ref"].(string); ok {
		var cur any = c.doc
		for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			cur = cur.(map[string]any)[part]
		}
		return c.resolve(cur)
	}
	return m
}

// jsonType is the JSON Schema type of a decoded value.
func jsonType(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	case json.Number:
		if _, err := v.Int64(); err == nil {
			return "integer"
		}
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

func (c *checker) validate(schemaV any, v any, at string) []string {
	s := c.resolve(schemaV)
	if s == nil {
		return nil
	}
	var errs []string
	for _, sub := range asAnyList(s["allOf"]) {
		errs = append(errs, c.validate(sub, v, at)...)
	}
	if want, ok := s["const"]; ok && fmt.Sprint(want) != fmt.Sprint(v) {
		errs = append(errs, fmt.Sprintf("%s = %v, want %v", at, v, want))
	}
	if enum, ok := s["enum"]; ok && !slices.ContainsFunc(asAnyList(enum), func(e any) bool { return fmt.Sprint(e) == fmt.Sprint(v) }) {
		errs = append(errs, fmt.Sprintf("%s = %v, not one of %v", at, v, enum))
	}
	if typ, ok := s["type"]; ok {
		types := asAnyList(typ)
		if types == nil {
			types = []any{typ}
		}
		got := jsonType(v)
		if !slices.Contains(types, any(got)) && !(got == "integer" && slices.Contains(types, any("number"))) {
			return append(errs, fmt.Sprintf("%s is %s, want %v", at, got, typ))
		}
	}
	switch v := v.(type) {
	case string:
		if s["format"] == "date-time" {
			if _, err := time.Parse(time.RFC3339Nano, v); err != nil {
				errs = append(errs, fmt.Sprintf("%s = %q, not a date-time", at, v))
			}
		}
		if p, ok := s["pattern"].(string); ok && !regexp.MustCompile(p).MatchString(v) {
			errs = append(errs, fmt.Sprintf("%s = %q, not matching %s", at, v, p))
		}
	case json.Number:
		if min, ok := s["minimum"].(float64); ok {
			if f, _ := v.Float64(); f < min {
				errs = append(errs, fmt.Sprintf("%s = %v, under %v", at, v, min))
			}
		}
	case []any:
		for i, e := range v {
			errs = append(errs, c.validate(s["items"], e, fmt.Sprintf("%s[%d]", at, i))...)
		}
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		for _, r := range asAnyList(s["required"]) {
			if _, ok := v[r.(string)]; !ok {
				errs = append(errs, fmt.Sprintf("%s has no %s", at, r))
			}
		}
		for k, e := range v {
			switch p, ok := props[k]; {
			case ok:
				errs = append(errs, c.validate(p, e, at+"."+k)...)
			case s["additionalProperties"] == false:
				errs = append(errs, fmt.Sprintf("%s has %s, which its schema lacks", at, k))
			case s["additionalProperties"] != nil:
				errs = append(errs, c.validate(s["additionalProperties"], e, at+"."+k)...)
			}
		}
	}
	return errs
}

func asAnyList(v any) []any { l, _ := v.([]any); return l }

// The answers of every endpoint case of TestEndpoints (on a fresh fixture
// each), and of the GET, capture, operator and rate-limit requests below,
// are what the served document declares: status, headers, content type,
// and a body valid against the operation's schema.
func TestOpenAPIValidatesRecordedAnswers(t *testing.T) {
	e := setup(t, memstore.New())
	const operator = "operator-secret-operator-secret-0001"
	doc := openAPIDoc(t, e.handler(t, httpadapter.Config{}))
	c := newChecker(doc)
	validated := map[string]bool{} // statuses seen, per operation
	record := func(t *testing.T, req *http.Request, rec *httptest.ResponseRecorder) {
		t.Helper()
		for _, err := range c.check(req, rec) {
			t.Error(err)
		}
		_, pattern := c.mux.Handler(req)
		validated[pattern+" "+strconv.Itoa(rec.Code)] = true
	}
	cases := append(append([]httpCase{}, verificationCases...), retainCases...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := setup(t, memstore.New())
			h := e.handler(t, httpadapter.Config{})
			rec := serve(h, tc.req)
			req := httptest.NewRequest(http.MethodPost, tc.req.path, nil)
			record(t, req, rec)
		})
	}

	h := e.handler(t, httpadapter.Config{OperatorSecret: operator}).(*httpadapter.Handler)
	get := func(path, token string) (*http.Request, *httptest.ResponseRecorder) {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.RemoteAddr = "192.0.2.1:1234"
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		return req, httptest.NewRecorder()
	}
	for _, r := range []struct {
		handler http.Handler
		path    string
		token   string
		status  int
	}{
		{h, "/openapi.json", "", 200},
		{h, "/api/integrations/acme/sessions/s1", acmeToken, 200},
		{h, "/api/integrations/acme/sessions/s9", acmeToken, 404},
		{h, "/api/integrations/acme/sessions/s1/video", acmeToken, 404},
		{h, "/capture/capture.js", "", 200},
		{h.Operator(), "/operator/companies/acme/audit?limit=2", operator, 200},
		{h.Operator(), "/operator/companies/acme/webhooks", operator, 200},
		{h.Operator(), "/operator/companies/nobody/audit", operator, 404},
		{h.Operator(), "/operator/companies/acme/audit?limit=x", operator, 400},
	} {
		req, rec := get(r.path, r.token)
		r.handler.ServeHTTP(rec, req)
		if rec.Code != r.status {
			t.Errorf("GET %s: %d, want %d: %s", r.path, rec.Code, r.status, rec.Body)
		}
		record(t, req, rec)
	}
	for _, r := range operatorRequests {
		req := httptest.NewRequest(r.method, r.path, strings.NewReader(r.body))
		req.RemoteAddr = "192.0.2.1:1234"
		req.Header.Set("Authorization", "Bearer "+operator)
		if r.key != "" {
			req.Header.Set(httpadapter.IdempotencyHeader, r.key)
		}
		rec := httptest.NewRecorder()
		h.Operator().ServeHTTP(rec, req)
		if rec.Code != r.status {
			t.Errorf("%s %s: %d, want %d: %s", r.method, r.path, rec.Code, r.status, rec.Body)
		}
		record(t, req, rec)
	}

	// Capture: a session started, a chunk sent, consent given; a preflight
	// from an origin the property does not allow.
	post := func(path, auth, body string) (*http.Request, *httptest.ResponseRecorder) {
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		req.RemoteAddr = "192.0.2.1:1234"
		req.Header.Set("Origin", "https://evil.example")
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		record(t, req, rec)
		return req, rec
	}
	if _, rec := post("/capture/sessions", "", `{"property_id":"acme-web","url":"https://acme.example/quote"}`); rec.Code != 403 {
		t.Errorf("capture start from an origin not allowed: %d: %s", rec.Code, rec.Body)
	}
	post("/capture/sessions/nope/events", "nope", `{"seq":0,"events":[]}`)
	pre := httptest.NewRequest(http.MethodOptions, "/capture/sessions?property_id=acme-web", nil)
	pre.Header.Set("Origin", "https://evil.example")
	pre.Header.Set("Access-Control-Request-Method", "POST")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, pre)
	record(t, pre, rec)

	// A keyed match, its replay, and the key with another body (D40).
	keyedPost := func(body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/verify/match", strings.NewReader(body))
		req.RemoteAddr = "192.0.2.1:1234"
		req.Header.Set("Authorization", "Bearer "+acmeToken)
		req.Header.Set(httpadapter.IdempotencyHeader, "doc-key")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		record(t, req, rec)
		return rec
	}
	keyedPost(matchBody("cert-1", "acme", consentText))
	if rec := keyedPost(matchBody("cert-1", "acme", consentText)); rec.Header().Get(httpadapter.ReplayedHeader) != "true" {
		t.Errorf("the keyed match sent again was not replayed: %d %s", rec.Code, rec.Body)
	}
	if rec := keyedPost(matchBody("cert-2", "acme", consentText)); rec.Code != http.StatusUnprocessableEntity {
		t.Errorf("the key with another body: %d %s; want 422", rec.Code, rec.Body)
	}

	// Opt-out until its rate limit answers 429 with Retry-After.
	for i := 0; i < 12; i++ {
		_, rec := post("/opt-out", "", `{"company_id":"acme","email":"nobody@example.com"}`)
		if i == 11 && rec.Code != http.StatusTooManyRequests {
			t.Errorf("the 12th opt-out: %d, want 429", rec.Code)
		}
	}

	for _, want := range []string{
		"POST /verify/match 200", "POST /verify/match 403", "POST /verify/match 401", "POST /verify/match 402",
		"POST /api/integrations/{companyId}/retain/{sessionId} 402", "POST /api/integrations/{companyId}/retain/batch 200",
		"POST /opt-out 200", "POST /opt-out 429", "GET /openapi.json 200", "GET /capture/capture.js 200",
		"GET /operator/companies/{company_id}/audit 200", "POST /verify/match 422",
		"POST /operator/companies 201", "POST /operator/companies/{company_id}/tokens 201",
		"POST /operator/companies/{company_id}/wallet/top-ups 201", "POST /operator/companies/{company_id}/wallet/top-ups 422",
		"GET /operator/companies/{company_id}/certificates/{certificate_id} 200",
		"GET /operator/companies/{company_id}/sessions/{session_id} 200",
	} {
		if !validated[want] {
			t.Errorf("no answer %s was validated", want)
		}
	}
}

// A signed certificate's certificate-info answer (signature, key_id,
// signed) and the published keys match the document too.
func TestOpenAPIValidatesSignedAnswers(t *testing.T) {
	key, err := signed.NewSigningKey("key-1")
	must(t, err)
	st := memstore.New()
	svc, err := consentkit.NewService(st, consentkit.Config{SigningKeys: []signed.SigningKey{key}})
	must(t, err)
	_, err = svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme"})
	must(t, err)
	_, err = svc.AddProperty(ctx, consentkit.PropertyParams{ID: "web", CompanyID: "acme", Name: "Form"})
	must(t, err)
	_, err = svc.StartSession(ctx, consentkit.SessionParams{ID: "s1", CompanyID: "acme", PropertyID: "web"})
	must(t, err)
	_, err = svc.IssueCertificate(ctx, consentkit.CertificateParams{ID: "cert-1", CompanyID: "acme", PropertyID: "web", SessionID: "s1",
		Origin: "https://acme.example/", Email: "a@b.example", Records: []consent.Record{{Text: "I agree", Types: []string{"tcpa"}}}})
	must(t, err)
	_, secret, err := svc.IssueToken(ctx, consentkit.TokenParams{CompanyID: "acme"})
	must(t, err)
	h, err := httpadapter.New(httpadapter.Config{Service: svc})
	must(t, err)
	c := newChecker(openAPIDoc(t, h))
	rec := serve(h, request{path: "/verify/certificate-info", token: secret,
		body: `{"certificate_id":"cert-1","company_id":"acme","property_id":"web"}`})
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"signature"`) || !strings.Contains(rec.Body.String(), `"signed"`) {
		t.Fatalf("certificate-info of a signed certificate: %d %s", rec.Code, rec.Body)
	}
	answer := rec.Body.String() // check reads the body
	for _, err := range c.check(httptest.NewRequest(http.MethodPost, "/verify/certificate-info", nil), rec) {
		t.Error(err)
	}
	// The document lists the values a status takes: one it does not know
	// is refused.
	const pending = `"insights":{"status":"pending"`
	if !strings.Contains(answer, pending) {
		t.Fatalf("certificate-info without pending insights: %s", answer)
	}
	odd := httptest.NewRecorder()
	odd.WriteHeader(rec.Code)
	for k, v := range rec.Header() {
		odd.Header()[k] = v
	}
	odd.Body.WriteString(strings.Replace(answer, pending, `"insights":{"status":"perhaps"`, 1))
	if errs := c.check(httptest.NewRequest(http.MethodPost, "/verify/certificate-info", nil), odd); len(errs) == 0 {
		t.Error(`insights with the status "perhaps" pass the document`)
	}
	keys := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/.well-known/consentkit-keys", nil)
	h.ServeHTTP(keys, req)
	if keys.Code != 200 || !strings.Contains(keys.Body.String(), `"key-1"`) {
		t.Fatalf("keys: %d %s", keys.Code, keys.Body)
	}
	for _, err := range c.check(req, keys) {
		t.Error(err)
	}
}
