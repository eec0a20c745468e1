package httpadapter_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/capture"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/internal/teststore"
)

const (
	formOrigin = "https://forms.acme.example"
	formPage   = formOrigin + "/quote"
	evilOrigin = "https://evil.example"
	rrwebChunk = `[{"type":4,"data":{"href":"https://forms.acme.example/quote","width":800,"height":600},"timestamp":1795301391553}]`
)

// capturing is a handler with a property that allows formOrigin.
func capturing(t testing.TB, store consent.Store, cfg httpadapter.Config) (*env, http.Handler) {
	t.Helper()
	e := setup(t, store)
	_, err := e.svc.AddProperty(ctx, consentkit.PropertyParams{ID: "acme-form", CompanyID: "acme", Name: "Quote form",
		AllowedOrigins: []string{formOrigin}})
	must(t, err)
	return e, e.handler(t, cfg)
}

// call sends a request with any method, origin and headers.
func call(h http.Handler, method, path, origin, token, body string, header ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if method == http.MethodOptions { // as a browser's preflight
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "authorization,content-type")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	req.RemoteAddr = "198.51.100.7:5555"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

type started struct {
	SessionID     string `json:"session_id"`
	CertificateID string `json:"certificate_id"`
	UploadToken   string `json:"upload_token"`
}

func startSession(t testing.TB, h http.Handler) started {
	t.Helper()
	rec := call(h, "POST", "/capture/sessions", formOrigin, "", `{"property_id":"acme-form","url":"`+formPage+`"}`,
		"Content-Type", "text/plain;charset=UTF-8")
	if rec.Code != 201 {
		t.Fatalf("start: %d %s", rec.Code, rec.Body)
	}
	var s started
	must(t, json.Unmarshal(rec.Body.Bytes(), &s))
	return s
}

// The capture routes on every store: statuses, bodies and CORS headers,
// then the certificate verifies like any other, and matches its lead.
func TestCaptureRoutes(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e, h := capturing(t, open(t), httpadapter.Config{})
		s := startSession(t, h)
		events := "/capture/sessions/" + s.SessionID + "/events"
		consentPath := "/capture/sessions/" + s.SessionID + "/consent"
		consentBody := `{"consents":[{"text":"  I agree to be called by Acme. ","types":["tcpa"]}],"email":"jane@example.com",` +
			`"url":"` + formPage + `","visibility":{"in_viewport":true,"visible":true,"font_size_px":16,` +
			`"text_color":"rgb(0, 0, 0)","background_color":"rgb(255, 255, 255)","contrast_ratio":21}}`
		for _, tc := range []struct {
			name              string
			method, path, org string
			token, body       string
			status            int
			want              string // a part of the body
			cors              bool   // Access-Control-Allow-Origin echoes the origin
		}{
			{"preflight events", "OPTIONS", events, formOrigin, "", "", 204, "", true},
			{"preflight events, foreign origin", "OPTIONS", events, evilOrigin, "", "", 403, "origin", false},
			{"preflight consent", "OPTIONS", consentPath, formOrigin, "", "", 204, "", true},
			{"preflight start with property", "OPTIONS", "/capture/sessions?property_id=acme-form", formOrigin, "", "", 204, "", true},
			{"preflight start without property", "OPTIONS", "/capture/sessions", formOrigin, "", "", 403, "", false},
			{"start, foreign origin", "POST", "/capture/sessions", evilOrigin, "", `{"property_id":"acme-form","url":"` + formPage + `"}`, 403, "origin", false},
			{"start, capture off", "POST", "/capture/sessions", formOrigin, "", `{"property_id":"acme-web","url":"` + formPage + `"}`, 403, "origin", false},
			{"start, unknown property", "POST", "/capture/sessions", formOrigin, "", `{"property_id":"nope","url":"` + formPage + `"}`, 404, "property", false},
			{"chunk without token", "POST", events, formOrigin, "", `{"seq":0,"events":` + rrwebChunk + `}`, 401, "", true},
			{"chunk to an unknown session", "POST", "/capture/sessions/ses_nope/events", formOrigin, s.UploadToken, `{"seq":0,"events":` + rrwebChunk + `}`, 401, "", false},
			{"chunk with a wrong token", "POST", events, formOrigin, "ckup_wrong", `{"seq":0,"events":` + rrwebChunk + `}`, 401, "upload token", true},
			{"chunk from a foreign origin", "POST", events, evilOrigin, s.UploadToken, `{"seq":0,"events":` + rrwebChunk + `}`, 403, "", false},
			{"chunk without seq", "POST", events, formOrigin, s.UploadToken, `{"events":` + rrwebChunk + `}`, 400, "seq", true},
			{"chunk not rrweb", "POST", events, formOrigin, s.UploadToken, `{"seq":0,"events":[{"hello":1}]}`, 400, "events[0].type", true},
			{"consent before events", "POST", consentPath, formOrigin, s.UploadToken, consentBody, 409, "no events", true},
			{"chunk 0", "POST", events, formOrigin, s.UploadToken, `{"seq":0,"events":` + rrwebChunk + `}`, 200, `"next_seq":1`, true},
			{"chunk 0 again", "POST", events, formOrigin, s.UploadToken, `{"seq":0,"events":` + rrwebChunk + `}`, 200, `"next_seq":1`, true},
			{"chunk 0 changed", "POST", events, formOrigin, s.UploadToken, `{"seq":0,"events":[{"type":3,"timestamp":5}]}`, 409, "other events", true},
			{"chunk gap", "POST", events, formOrigin, s.UploadToken, `{"seq":5,"events":` + rrwebChunk + `}`, 409, "expected seq 1", true},
			{"chunk oversize", "POST", events, formOrigin, s.UploadToken, `{"seq":1,"events":[{"type":3,"timestamp":5,"x":"` + strings.Repeat("a", 2<<20) + `"}]}`, 413, "", true},
			{"consent", "POST", consentPath, formOrigin, s.UploadToken, consentBody, 201, `"certificate_id":"` + s.CertificateID + `"`, true},
			{"consent again", "POST", consentPath, formOrigin, s.UploadToken, consentBody, 409, `"certificate_id":"` + s.CertificateID + `"`, true},
			{"chunk after consent", "POST", events, formOrigin, s.UploadToken, `{"seq":1,"events":` + rrwebChunk + `}`, 409, "closed", true},
		} {
			rec := call(h, tc.method, tc.path, tc.org, tc.token, tc.body)
			if rec.Code != tc.status || !strings.Contains(rec.Body.String(), tc.want) {
				t.Errorf("%s: %d %s; want %d with %q", tc.name, rec.Code, rec.Body, tc.status, tc.want)
			}
			if got := rec.Header().Get("Access-Control-Allow-Origin"); (got == tc.org) != tc.cors {
				t.Errorf("%s: Access-Control-Allow-Origin %q, want it %v", tc.name, got, tc.cors)
			}
		}

		// The issued certificate is an ordinary one: it verifies, matches
		// its lead, and certificate-info shows the browser's facts.
		match := serve(h, request{path: "/verify/match", token: acmeToken,
			body: matchBody(s.CertificateID, "acme", "I agree to be called by Acme.", `,"email":"Jane@Example.com"`)})
		if match.Code != 200 || !strings.Contains(match.Body.String(), `"valid":true`) || !strings.Contains(match.Body.String(), `"email_matched":true`) {
			t.Errorf("match of the captured certificate: %d %s", match.Code, match.Body)
		}
		info := serve(h, request{path: "/verify/certificate-info", token: acmeToken,
			body: `{"certificate_id":"` + s.CertificateID + `","company_id":"acme","property_id":"acme-form"}`})
		var got struct {
			SessionID       string             `json:"session_id"`
			ClientIP        string             `json:"client_ip"`
			RecordingSHA256 string             `json:"recording_sha256"`
			Visibility      consent.Visibility `json:"consent_visibility"`
		}
		must(t, json.Unmarshal(info.Body.Bytes(), &got))
		rec, err := e.svc.Recording(ctx, s.SessionID)
		must(t, err)
		if got.SessionID != s.SessionID || got.ClientIP != "198.51.100.7" || got.RecordingSHA256 != consent.DigestOf(string(rec)).String() ||
			got.Visibility.ContrastRatio != 21 || !got.Visibility.InViewport {
			t.Errorf("certificate-info: %s", info.Body)
		}
	})
}

// A landing page with a long tracking query is recorded and certified on
// every store: its URL, up to 8 KiB (the longest request line common web
// servers accept), is refused neither at the start nor with the consent.
// One byte more is refused at the start, before any session is made.
func TestCaptureLongPageURL(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e, h := capturing(t, open(t), httpadapter.Config{})
		page := formPage + "?utm_source=ads&gclid=" + strings.Repeat("x", 8<<10-len(formPage)-len("?utm_source=ads&gclid="))
		rec := call(h, "POST", "/capture/sessions", formOrigin, "", `{"property_id":"acme-form","url":"`+page+`"}`,
			"Content-Type", "text/plain;charset=UTF-8")
		if rec.Code != 201 {
			t.Fatalf("start with an 8 KiB page URL: %d %s", rec.Code, rec.Body)
		}
		var s started
		must(t, json.Unmarshal(rec.Body.Bytes(), &s))
		body := `{"consents":[{"text":"I agree to be called by Acme.","types":["tcpa"]}],"email":"jane@example.com","url":"` + page +
			`","seq":0,"events":` + rrwebChunk + `}`
		if rec := call(h, "POST", "/capture/sessions/"+s.SessionID+"/consent", formOrigin, s.UploadToken, body); rec.Code != 201 {
			t.Fatalf("consent from an 8 KiB page URL: %d %s", rec.Code, rec.Body)
		}
		cert, err := e.svc.CompanyCertificate(ctx, "acme", s.CertificateID)
		must(t, err)
		if cert.Origin != page {
			t.Errorf("certificate origin: %d bytes, want the %d-byte page URL", len(cert.Origin), len(page))
		}
		rec = call(h, "POST", "/capture/sessions", formOrigin, "", `{"property_id":"acme-form","url":"`+page+`x"}`,
			"Content-Type", "text/plain;charset=UTF-8")
		if rec.Code != 400 || !strings.Contains(rec.Body.String(), "url must be at most 8192 bytes") {
			t.Errorf("start with a page URL of 8 KiB and a byte: %d %s; want 400 naming the bound", rec.Code, rec.Body)
		}
	})
}

// Starting sessions is limited per client address and per property, so one
// address cannot fill the store with sessions.
func TestCaptureStartLimits(t *testing.T) {
	_, h := capturing(t, teststore.Memory(t), httpadapter.Config{CaptureStartsPerMinute: 3, CapturePropertyPerMinute: 5})
	start := func(ip string) int {
		req := httptest.NewRequest("POST", "/capture/sessions", strings.NewReader(`{"property_id":"acme-form","url":"`+formPage+`"}`))
		req.Header.Set("Origin", formOrigin)
		req.RemoteAddr = ip + ":1000"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	var codes []int
	for range 4 {
		codes = append(codes, start("203.0.113.1"))
	}
	if fmt.Sprint(codes) != "[201 201 201 429]" {
		t.Errorf("one address: %v, want 3 × 201 then 429", codes)
	}
	codes = nil
	for i := range 3 {
		codes = append(codes, start(fmt.Sprintf("203.0.113.%d", 10+i)))
	}
	if fmt.Sprint(codes) != "[201 201 429]" {
		t.Errorf("other addresses, same property: %v, want 201 201 429 (5 per property)", codes)
	}
}

// A start refused for its origin spends none of the property's starts:
// the limit is taken once the property allows the Origin and the page.
// Else any page, posting text/plain across origins (no preflight), each
// answered 403, could use them up and have the property's own forms
// answered 429.
func TestCaptureForeignStartsSpareThePropertyLimit(t *testing.T) {
	_, h := capturing(t, teststore.Memory(t), httpadapter.Config{CaptureStartsPerMinute: -1, CapturePropertyPerMinute: 2})
	start := func(origin, page string) int {
		return call(h, "POST", "/capture/sessions", origin, "", `{"property_id":"acme-form","url":"`+page+`"}`,
			"Content-Type", "text/plain;charset=UTF-8").Code
	}
	for i := range 5 {
		if code := start(evilOrigin, evilOrigin+"/x"); code != 403 {
			t.Fatalf("start %d from another origin: %d, want 403", i, code)
		}
		if code := start(formOrigin, evilOrigin+"/x"); code != 403 {
			t.Fatalf("start %d of a page of another origin: %d, want 403", i, code)
		}
	}
	var codes []int
	for range 3 {
		codes = append(codes, start(formOrigin, formPage))
	}
	if fmt.Sprint(codes) != "[201 201 429]" {
		t.Errorf("after ten starts refused for their origins, the property's own: %v; want 201 201 429 (2 per property)", codes)
	}
}

// viewCounted counts the read-only transactions run on a store.
type viewCounted struct {
	consent.Store
	views atomic.Int64
}

func (s *viewCounted) View(ctx context.Context, fn func(consent.Tx) error) error {
	s.views.Add(1)
	return s.Store.View(ctx, fn)
}

// A capture request refused by a limit, 429, reads nothing of the store
// for its CORS headers, and so carries none: a client that ignores
// Retry-After and is answered at once (more refusals than can be held)
// costs no read of the session and its property at every request.
func TestCaptureRefusalsReadNoStore(t *testing.T) {
	st := &viewCounted{Store: teststore.Memory(t)}
	_, h := capturing(t, st, httpadapter.Config{CapturePerMinute: 1, RefusalHold: -1})
	s := startSession(t, h)
	events := "/capture/sessions/" + s.SessionID + "/events"
	if rec := call(h, "POST", events, formOrigin, s.UploadToken, `{"seq":0,"events":`+rrwebChunk+`}`); rec.Code != 200 ||
		rec.Header().Get("Access-Control-Allow-Origin") != formOrigin {
		t.Fatalf("chunk: %d %s, Access-Control-Allow-Origin %q", rec.Code, rec.Body, rec.Header().Get("Access-Control-Allow-Origin"))
	}
	before := st.views.Load()
	var cors []string
	for i := range 10 {
		rec := call(h, "POST", events, formOrigin, s.UploadToken, `{"seq":1,"events":`+rrwebChunk+`}`)
		if rec.Code != 429 {
			t.Fatalf("refusal %d: %d %s; want 429", i, rec.Code, rec.Body)
		}
		if o := rec.Header().Get("Access-Control-Allow-Origin"); o != "" {
			cors = append(cors, o)
		}
	}
	if len(cors) > 0 {
		t.Errorf("refusals with Access-Control-Allow-Origin %q; want none", cors)
	}
	if n := st.views.Load() - before; n != 0 {
		t.Errorf("10 refusals read the store %d times; want none", n)
	}
}

// A preflight reads the store (the property's or the session's origins),
// so it is limited per client address as the capture posts are
// (Config.CapturePerMinute): an anonymous client cannot make the server
// read the store without bound; another address is not held back.
func TestCapturePreflightLimited(t *testing.T) {
	_, h := capturing(t, teststore.Memory(t), httpadapter.Config{CapturePerMinute: 3})
	var codes []int
	for range 4 {
		codes = append(codes, call(h, "OPTIONS", "/capture/sessions?property_id=acme-form", formOrigin, "", "").Code)
	}
	if fmt.Sprint(codes) != "[204 204 204 429]" {
		t.Errorf("one address: %v, want 3 × 204 then 429", codes)
	}
	req := httptest.NewRequest("OPTIONS", "/capture/sessions?property_id=acme-form", nil)
	req.Header.Set("Origin", formOrigin)
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.RemoteAddr = "203.0.113.9:1000"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 204 {
		t.Errorf("another address: %d, want 204", rec.Code)
	}
}

// A missing recorder is logged once a minute, not at every page view
// that asks for it: an anonymous client cannot flood the log.
func TestMissingRecorderLoggedOnceAMinute(t *testing.T) {
	e := setup(t, teststore.Memory(t))
	var logged bytes.Buffer
	h := e.handler(t, httpadapter.Config{RRWebDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	lines := func() int { return strings.Count(logged.String(), "recorder is not installed") }
	for range 5 {
		if rec := call(h, "GET", "/capture/rrweb.js", "", "", ""); rec.Code != 503 {
			t.Fatalf("GET /capture/rrweb.js: %d", rec.Code)
		}
	}
	if n := lines(); n != 1 {
		t.Errorf("5 requests in a moment logged %d lines, want 1", n)
	}
	e.clock.t = e.clock.t.Add(time.Minute)
	call(h, "GET", "/capture/rrweb.js", "", "", "")
	if n := lines(); n != 2 {
		t.Errorf("a minute later: %d lines, want 2", n)
	}
}

// The snippet and rrweb's recorder are served to any page; without the
// recorder installed its route says what to install, and the rest works.
func TestCaptureScripts(t *testing.T) {
	e := setup(t, teststore.Memory(t))
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "rrweb.umd.min.cjs"), []byte("var rrweb={};"), 0o644))
	h := e.handler(t, httpadapter.Config{RRWebDir: dir})
	for path, want := range map[string]string{"/capture/capture.js": "consent_certificate_id", "/capture/rrweb.js": "var rrweb={};"} { // inside its wrapping (capture.RecorderScript)
		rec := call(h, "GET", path, "", "", "")
		if rec.Code != 200 || !strings.Contains(rec.Body.String(), want) ||
			!strings.HasPrefix(rec.Header().Get("Content-Type"), "text/javascript") {
			t.Errorf("GET %s: %d %q %.80s", path, rec.Code, rec.Header().Get("Content-Type"), rec.Body)
		}
	}
	// Ranges are read as on the video route (RFC 9110): a suffix of none
	// is unsatisfiable.
	for path, size := range map[string]int{"/capture/capture.js": len(capture.Snippet), "/capture/rrweb.js": len(capture.RecorderScript([]byte("var rrweb={};")))} {
		rec := call(h, "GET", path, "", "", "", "Range", "bytes=-0")
		if want := fmt.Sprintf("bytes */%d", size); rec.Code != http.StatusRequestedRangeNotSatisfiable || rec.Header().Get("Content-Range") != want {
			t.Errorf("GET %s with Range bytes=-0: %d, Content-Range %q; want 416 with %q", path, rec.Code, rec.Header().Get("Content-Range"), want)
		}
		if rec := call(h, "GET", path, "", "", "", "Range", "bytes=0-3"); rec.Code != http.StatusPartialContent || rec.Body.Len() != 4 {
			t.Errorf("GET %s with Range bytes=0-3: %d, %d bytes; want 206 with 4", path, rec.Code, rec.Body.Len())
		}
	}

	later := t.TempDir()
	missing := e.handler(t, httpadapter.Config{RRWebDir: later})
	if rec := call(missing, "GET", "/capture/rrweb.js", "", "", ""); rec.Code != 503 ||
		!strings.Contains(rec.Body.String(), "not installed") || !strings.Contains(rec.Body.String(), "npm ci --prefix retain/mp4/replayer") {
		t.Errorf("recorder not installed: %d %s; want 503 saying what to install", rec.Code, rec.Body)
	}
	if rec := call(missing, "GET", "/capture/capture.js", "", "", ""); rec.Code != 200 {
		t.Errorf("snippet without the recorder: %d", rec.Code)
	}

	// Installed, then upgraded, while the handler runs: served at once.
	bundle := filepath.Join(later, "rrweb.umd.min.cjs")
	must(t, os.WriteFile(bundle, []byte("var rrweb={v:1};"), 0o644))
	if rec := call(missing, "GET", "/capture/rrweb.js", "", "", ""); rec.Code != 200 || rec.Body.String() != string(capture.RecorderScript([]byte("var rrweb={v:1};"))) {
		t.Errorf("recorder installed after start: %d %s", rec.Code, rec.Body)
	}
	must(t, os.WriteFile(bundle, []byte("var rrweb={version:2};"), 0o644))
	upgraded := time.Now().Add(time.Hour).Truncate(time.Second)
	must(t, os.Chtimes(bundle, upgraded, upgraded))
	rec := call(missing, "GET", "/capture/rrweb.js", "", "", "")
	if rec.Code != 200 || rec.Body.String() != string(capture.RecorderScript([]byte("var rrweb={version:2};"))) {
		t.Errorf("recorder upgraded after start: %d %s", rec.Code, rec.Body)
	}
	if got := rec.Header().Get("Last-Modified"); got != upgraded.UTC().Format(http.TimeFormat) {
		t.Errorf("Last-Modified %q, want the bundle's time %q", got, upgraded.UTC().Format(http.TimeFormat))
	}
}

// Handler.Only serves the capture routes alone: the others are unknown.
func TestOnlyCapture(t *testing.T) {
	e := setup(t, teststore.Memory(t))
	cfg := httpadapter.Config{Service: e.svc}
	h, err := httpadapter.New(cfg)
	must(t, err)
	only := h.Only(httpadapter.CaptureGroup)
	if rec := call(only, "GET", "/capture/capture.js", "", "", ""); rec.Code != 200 {
		t.Errorf("capture.js on the capture-only handler: %d", rec.Code)
	}
	if rec := serve(only, request{path: "/verify/match", token: acmeToken, body: matchBody("cert-1", "acme", consentText)}); rec.Code != 404 {
		t.Errorf("/verify/match on the capture-only handler: %d %s, want 404", rec.Code, rec.Body)
	}
}
