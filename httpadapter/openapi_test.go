package httpadapter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/store/memstore"
	"github.com/consentkit/consentkit/wallet"
)

// openAPIJSON is h's document as a client reads it: marshalled and decoded.
func openAPIJSON(t *testing.T, h *Handler) map[string]any {
	t.Helper()
	b, err := json.Marshal(h.OpenAPI())
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// operationOf is the operation of method and path in doc, nil when none.
func operationOf(doc map[string]any, method, path string) map[string]any {
	item, _ := doc["paths"].(map[string]any)[path].(map[string]any)
	op, _ := item[strings.ToLower(method)].(map[string]any)
	return op
}

// Every route of the table is in the document, every operation of the
// document is a route, and every route has its summary and statuses in
// routeDocs, whose every key is a route.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	h, _ := newTestHandler(t)
	doc := openAPIJSON(t, h)
	if doc["openapi"] != "3.1.0" {
		t.Errorf("openapi %v, want 3.1.0", doc["openapi"])
	}
	routes, keys := map[string]bool{}, map[string]bool{}
	for _, rt := range h.Routes() {
		routes[rt.Method+" "+rt.Pattern] = true
		keys[docKey(rt)] = true
		if operationOf(doc, rt.Method, rt.Pattern) == nil {
			t.Errorf("%s %s is not in the document", rt.Method, rt.Pattern)
		}
		if _, ok := routeDocs[docKey(rt)]; !ok {
			t.Errorf("%s %s has no entry in routeDocs", rt.Method, rt.Pattern)
		}
	}
	if !routes["GET /openapi.json"] {
		t.Error("GET /openapi.json is not a route")
	}
	ids := map[string]string{}
	for path, item := range doc["paths"].(map[string]any) {
		for method, op := range item.(map[string]any) {
			key := strings.ToUpper(method) + " " + path
			if !routes[key] {
				t.Errorf("the document has %s, which is no route", key)
			}
			id, _ := op.(map[string]any)["operationId"].(string)
			if prev, dup := ids[id]; dup || id == "" {
				t.Errorf("operationId %q of %s is empty or also that of %s", id, key, prev)
			}
			ids[id] = key
		}
	}
	for key := range routeDocs {
		if !keys[key] {
			t.Errorf("routeDocs has %s, which is no route", key)
		}
	}
}

// resolve follows a local $ref of doc.
func resolve(doc map[string]any, v any) map[string]any {
	m, _ := v.(map[string]any)
	if ref, ok := m["$ref"].(string); ok {
		var cur any = doc
		for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			cur = cur.(map[string]any)[part]
		}
		return resolve(doc, cur)
	}
	return m
}

// propertiesOf is the properties of a schema, those of its allOf included.
func propertiesOf(doc map[string]any, schema map[string]any) map[string]any {
	out := map[string]any{}
	props, _ := resolve(doc, schema)["properties"].(map[string]any)
	for k, v := range props {
		out[k] = v
	}
	for _, s := range asList(schema["allOf"]) {
		for k, v := range propertiesOf(doc, s.(map[string]any)) {
			out[k] = v
		}
	}
	return out
}

func asList(v any) []any { l, _ := v.([]any); return l }

// Each operation declares every status its route's rules produce on the
// handler as configured, stated here from the Route's fields, apart from
// the generator: the authentication's 401 and 403, the rate limit's 429
// with Retry-After, the body's 400 and 413, the price's 402 with required
// and current_balance, and the error shape of its API. With the defaults
// the verification routes have no rate limit (D28) and certificate-info no
// price (D2): neither 429 nor that 402 can be answered, so neither is
// declared; configured, both are.
func TestOpenAPIDeclaresTheRulesStatuses(t *testing.T) {
	h, _ := newTestHandler(t)
	t.Run("defaults", func(t *testing.T) { declaresTheRulesStatuses(t, h, false) })
	prices := wallet.DefaultPrices()
	prices.CertificateInfo = wallet.Cent
	svc, err := consentkit.NewService(memstore.New(), consentkit.Config{Prices: &prices})
	if err != nil {
		t.Fatal(err)
	}
	configured, err := New(Config{Service: svc, VerifyPerMinute: 60})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("configured", func(t *testing.T) { declaresTheRulesStatuses(t, configured, true) })
}

// declaresTheRulesStatuses is TestOpenAPIDeclaresTheRulesStatuses on h,
// whose verification routes are rate limited and certificate-info priced
// when configured says so.
func declaresTheRulesStatuses(t *testing.T, h *Handler, configured bool) {
	doc := openAPIJSON(t, h)
	for _, rt := range h.Routes() {
		key := rt.Method + " " + rt.Pattern
		op := operationOf(doc, rt.Method, rt.Pattern)
		if op == nil {
			t.Errorf("%s: not in the document", key)
			continue
		}
		responses := op["responses"].(map[string]any)
		want := map[int]string{}
		success := rt.Status
		if success == 0 {
			success = 200
		}
		want[success] = "its success"
		switch rt.Auth {
		case AuthToken, AuthRetention:
			want[401], want[403] = "its authentication", "a token of another company or without the permission"
		case AuthUpload, AuthOperator:
			want[401] = "its authentication"
		}
		if rt.Limit != NoLimit && (rt.Limit != VerifyLimit || configured) {
			want[429] = "its rate limit"
		}
		if rt.Request != nil {
			want[500] = "an internal error"
			for i := range rt.Request.NumField() {
				f := rt.Request.Field(i)
				_, path := f.Tag.Lookup("path")
				_, query := f.Tag.Lookup("query")
				switch {
				case path || query:
					want[400] = "a malformed path or query parameter"
				case f.Tag.Get("json") != "-":
					want[400], want[413] = "a malformed body", "a body too large"
				}
			}
		}
		if rt.Price != "" && rt.Price != wallet.RetainBatch && (rt.Price != wallet.CertificateInfo || configured) {
			want[402] = "its price"
		}
		if rt.ContentType != "" {
			want[206] = "a Range request"
		}
		// A rule that cannot refuse on this handler declares nothing.
		for _, status := range []int{402, 429} {
			if _, declared := responses[strconv.Itoa(status)]; declared && want[status] == "" && rt.Auth != AuthOperator && !slices.Contains(routeDocs[docKey(rt)].answers, status) {
				t.Errorf("%s: declares %d, which it cannot answer here", key, status)
			}
		}
		for status, why := range want {
			r, ok := responses[strconv.Itoa(status)].(map[string]any)
			if !ok {
				t.Errorf("%s: no %d (%s)", key, status, why)
				continue
			}
			headers, _ := r["headers"].(map[string]any)
			if _, ok := headers["X-Request-Id"]; !ok {
				t.Errorf("%s %d: no X-Request-Id header", key, status)
			}
			content, _ := r["content"].(map[string]any)
			switch status {
			case 429:
				if ra, _ := headers["Retry-After"].(map[string]any); ra["required"] != true {
					t.Errorf("%s 429: Retry-After is not a required header: %v", key, headers)
				}
			case 206:
				if _, ok := content[rt.ContentType]; !ok {
					t.Errorf("%s 206: content %v, want %s", key, content, rt.ContentType)
				}
				if _, ok := headers["Content-Range"]; !ok {
					t.Errorf("%s 206: no Content-Range", key)
				}
			}
			if status < 400 {
				continue
			}
			props := propertiesOf(doc, content["application/json"].(map[string]any)["schema"].(map[string]any))
			_, hasSuccess := props["success"]
			_, hasStatus := props["status"]
			if (rt.Errors == RetainErrors) != hasSuccess || (rt.Errors == VerifyErrors) != hasStatus {
				t.Errorf("%s %d: error properties %v, not the shape %v", key, status, props, rt.Errors)
			}
			if status == 402 && (props["required"] == nil || props["current_balance"] == nil) {
				t.Errorf("%s 402: no required and current_balance in %v", key, props)
			}
		}
		if rt.ContentType == "video/mp4" {
			h200 := responses["200"].(map[string]any)["headers"].(map[string]any)
			if _, ok := h200["X-Content-SHA256"]; !ok {
				t.Errorf("%s 200: no X-Content-SHA256 header", key)
			}
		}
		if rt.Method == http.MethodOptions {
			if r := responses["204"].(map[string]any); r["content"] != nil {
				t.Errorf("%s 204: content %v", key, r["content"])
			}
		}
	}
}

// Requests that break each route's rules get statuses that its operation
// declares: none or bad credentials, a body over the route's limit,
// malformed JSON.
func TestOpenAPIDeclaresWhatRoutesAnswer(t *testing.T) {
	_, svc := newTestHandler(t)
	const operator = "operator-secret-operator-secret-0001"
	// No byte budget: one address sends every route's largest body, which
	// would spend it (D52) and be answered 429, not what this asks about.
	h, err := New(Config{Service: svc, OperatorSecret: operator, Logger: slog.New(slog.DiscardHandler), CaptureBytesPerMinute: -1})
	if err != nil {
		t.Fatal(err)
	}
	const token = "acme-openapi-token-0001"
	if _, _, err := svc.IssueToken(context.Background(), consentkit.TokenParams{CompanyID: "acme", Secret: token,
		Permissions: []consent.Permission{consent.PermissionRetention}}); err != nil {
		t.Fatal(err)
	}
	doc := openAPIJSON(t, h)
	wildcard := regexp.MustCompile(`\{[^}]+\}`)
	for _, rt := range h.Routes() {
		key := rt.Method + " " + rt.Pattern
		srv := http.Handler(h)
		credential := "Bearer " + token
		switch rt.Auth {
		case AuthOperator:
			srv, credential = h.Operator(), "Bearer "+operator
		case AuthUpload:
			credential = "Bearer not-the-upload-token"
		}
		responses := operationOf(doc, rt.Method, rt.Pattern)["responses"].(map[string]any)
		path := wildcard.ReplaceAllString(rt.Pattern, "acme")
		try := func(what, auth string, body []byte, want int) {
			t.Helper()
			req := httptest.NewRequest(rt.Method, path, bytes.NewReader(body))
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			rec := httptest.NewRecorder()
			srv.ServeHTTP(rec, req)
			if _, ok := responses[strconv.Itoa(rec.Code)]; !ok {
				t.Errorf("%s with %s: %d, which its operation does not declare: %s", key, what, rec.Code, rec.Body)
			}
			if want != 0 && rec.Code != want {
				t.Errorf("%s with %s: %d, want %d: %s", key, what, rec.Code, want, rec.Body)
			}
		}
		var noAuth int
		if rt.Auth != AuthNone {
			noAuth = http.StatusUnauthorized
		}
		try("no credentials", "", []byte(`{}`), noAuth)
		if rt.Auth != AuthNone {
			try("a malformed Authorization header", "Basic eA==", []byte(`{}`), http.StatusUnauthorized)
		}
		if rt.Request != nil && hasBody(rt.Request) {
			max := rt.MaxBody
			if max == 0 {
				max = MaxBodyBytes
			}
			try("a body over its limit", credential, bytes.Repeat([]byte(" "), int(max)+1), http.StatusRequestEntityTooLarge)
			try("malformed JSON", credential, []byte(`{"`), http.StatusBadRequest)
		} else {
			try("its credentials", credential, nil, 0)
		}
	}
}

// The document as GET /openapi.json serves it, under a prefix, passes
// Redocly CLI's recommended rules, unmodified (openapi/redocly.yaml), but
// for the nodes that openapi/.redocly.lint-ignore.yaml exempts, saying
// why. In CI a missing tool fails the test; elsewhere it skips, saying how
// to install it.
func TestOpenAPIRedoclyLint(t *testing.T) {
	dir, err := filepath.Abs("openapi")
	if err != nil {
		t.Fatal(err)
	}
	_, errBin := os.Stat(filepath.Join(dir, "node_modules", ".bin", "redocly"))
	_, errNpx := exec.LookPath("npx")
	if err := errors.Join(errBin, errNpx); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Redocly CLI is not installed (run npm ci --prefix httpadapter/openapi): %v", err)
		}
		t.Skipf("Redocly CLI is not installed; run npm ci --prefix httpadapter/openapi: %v", err)
	}
	h, _ := newTestHandler(t)
	mux := http.NewServeMux()
	mux.Handle("/consent/", http.StripPrefix("/consent", h))
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/consent/openapi.json", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /consent/openapi.json: %d %s", rec.Code, rec.Body)
	}
	// The configuration and its list of exempted nodes beside the
	// document, whose path the list names relative to itself.
	tmp := t.TempDir()
	for _, name := range []string{"redocly.yaml", ".redocly.lint-ignore.yaml"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(tmp, "openapi.json")
	if err := os.WriteFile(file, rec.Body.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("npx", "--no-install", "--prefix", dir, "redocly", "lint",
		"--config", filepath.Join(tmp, "redocly.yaml"), "--format", "stylish", file)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("redocly lint: %v\n%s", err, out)
	}
	if s := string(out); !strings.Contains(s, "valid") || regexp.MustCompile(`(?i)\b(error|warning)s?\b`).MatchString(stripBanner(s)) {
		t.Errorf("redocly lint reported problems:\n%s", out)
	}
}

// stripBanner drops the lines of a box that Redocly CLI draws around
// notices about its own runtime (such as the end of support of a Node.js
// version), which are not about the document.
func stripBanner(s string) string {
	var keep []string
	for _, line := range strings.Split(s, "\n") {
		if strings.ContainsAny(line, "║╔╚") || strings.HasPrefix(line, "npm warn") {
			continue
		}
		keep = append(keep, line)
	}
	return strings.Join(keep, "\n")
}

// The document's one server, resolved as a client resolves it against the
// URL it fetched the document from, is the root the handler is mounted at,
// under any prefix: the routes answer there. The document is the same
// whatever Host the request names.
func TestOpenAPIServerIsTheHandlersRoot(t *testing.T) {
	h, _ := newTestHandler(t)
	get := func(t *testing.T, u, host string) []byte {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, u, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		var b bytes.Buffer
		if _, err := b.ReadFrom(resp.Body); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", u, resp.StatusCode, b.Bytes())
		}
		return b.Bytes()
	}
	for _, prefix := range []string{"", "/consent", "/a/b"} {
		t.Run("prefix "+prefix, func(t *testing.T) {
			mux := http.NewServeMux()
			mux.Handle(prefix+"/", http.StripPrefix(prefix, h))
			srv := httptest.NewServer(mux)
			defer srv.Close()
			docURL := srv.URL + prefix + "/openapi.json"
			body := get(t, docURL, "")
			if forged := get(t, docURL, "evil.example"); !bytes.Equal(forged, body) {
				t.Errorf("the document differs with Host: evil.example")
			}
			var doc struct {
				Servers []struct {
					URL string `json:"url"`
				} `json:"servers"`
			}
			if err := json.Unmarshal(body, &doc); err != nil {
				t.Fatal(err)
			}
			if len(doc.Servers) != 1 {
				t.Fatalf("servers %+v, want one", doc.Servers)
			}
			base, err := url.Parse(docURL)
			if err != nil {
				t.Fatal(err)
			}
			ref, err := url.Parse(doc.Servers[0].URL)
			if err != nil {
				t.Fatalf("server url %q: %v", doc.Servers[0].URL, err)
			}
			// A path is added to the server's URL less its trailing
			// slash (swagger-client's buildOas3UrlWithContext).
			root := strings.TrimSuffix(base.ResolveReference(ref).String(), "/")
			if root != srv.URL+prefix {
				t.Errorf("server %q resolves to %q, want %q", doc.Servers[0].URL, root, srv.URL+prefix)
			}
			for _, p := range []string{"/openapi.json", "/.well-known/consentkit-keys", "/capture/capture.js"} {
				get(t, root+p, "")
			}
		})
	}
}

// info.version is the module's version as the build records it, else
// APIVersion; the served document has it.
func TestOpenAPIDocumentVersion(t *testing.T) {
	const mod = "github.com/consentkit/consentkit"
	app := debug.Module{Path: "example.com/app", Version: "(devel)"}
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"no build information", nil, APIVersion},
		{"a build of a checkout", &debug.BuildInfo{Main: debug.Module{Path: mod, Version: "(devel)"}}, APIVersion},
		{"a build of a checkout stamped from its commit",
			&debug.BuildInfo{Main: debug.Module{Path: mod, Version: "v0.0.0-20260301120000-0123456789ab+dirty"}},
			"v0.0.0-20260301120000-0123456789ab+dirty"},
		{"an application requiring a release", &debug.BuildInfo{Main: app, Deps: []*debug.Module{
			{Path: "example.com/other", Version: "v2.0.0"}, {Path: mod, Version: "v1.4.0"}}}, "v1.4.0"},
		{"a release replaced by a directory", &debug.BuildInfo{Main: app, Deps: []*debug.Module{
			{Path: mod, Version: "v1.4.0", Replace: &debug.Module{Path: "../consentkit"}}}}, APIVersion},
		{"a release replaced by a fork's", &debug.BuildInfo{Main: app, Deps: []*debug.Module{
			{Path: mod, Version: "v1.4.0", Replace: &debug.Module{Path: "example.com/fork", Version: "v1.4.1"}}}}, "v1.4.1"},
		{"an application without the module", &debug.BuildInfo{Main: app}, APIVersion},
	} {
		if got := documentVersion(tc.bi, tc.bi != nil); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	h, _ := newTestHandler(t)
	info := openAPIJSON(t, h)["info"].(map[string]any)
	if want := documentVersion(debug.ReadBuildInfo()); info["version"] != want || want == "" {
		t.Errorf("info.version %v, want %q", info["version"], want)
	}
}
