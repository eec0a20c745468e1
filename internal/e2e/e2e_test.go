package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/internal/testwait"
	"github.com/consentkit/consentkit/retain"
	"github.com/consentkit/consentkit/retain/mp4"
	"github.com/consentkit/consentkit/signed"
	"github.com/consentkit/consentkit/wallet"
)

const (
	rrwebDir    = "../../retain/mp4/replayer/node_modules/rrweb/dist"
	chromium    = "/usr/lib/chromium/chromium"
	consentText = "By ticking this box I agree that Acme Insurance may call and text me at the number above."
	typedEmail  = "Jane.Doe@Example.com"
	typedMobile = "(555) 010-2000"
)

// formPage is a plain HTML form, served from another origin than the
// service, that embeds the snippet with the documented tag (D36). Before
// the snippet's handlers run, a listener stamps the submit time; after
// them, another writes how long they took into the form, so the receiver
// learns whether anything held the submission up.
const formPage = `<!doctype html>
<html><head><meta charset="utf-8"><title>Get a quote</title>
<script>
window.addEventListener("submit", function () { window.__t0 = performance.now(); }, true);
window.addEventListener("submit", function (e) {
  e.target.elements.handlers_ms.value = String(performance.now() - window.__t0);
});
</script>
<script src="{{SERVICE}}/capture/capture.js" data-property-id="acme-form" async></script>
</head>
<body style="font: 16px sans-serif; background: #fff; color: #111">
<form method="post" action="/receive">
  <p><label>Email <input type="email" name="email" id="email"></label></p>
  <p><label>Mobile <input type="tel" name="mobile" id="mobile"></label></p>
  <p><label>Password <input type="password" name="password" id="password"></label></p>
  <p><label>Policy number <input type="text" name="policy" id="policy" data-consent-mask></label></p>
  <p><label><input type="checkbox" name="agree" id="agree" required>
    <span data-consent data-consent-types="tcpa,marketing">` + consentText + `</span></label></p>
  <input type="hidden" name="handlers_ms" value="">
  <button type="submit" id="submit">Get my quote</button>
</form>
</body></html>`

type stack struct {
	svc     *consentkit.Service
	api     http.Handler
	service *httptest.Server
	form    *httptest.Server
	posts   chan url.Values
	token   string
	key     signed.SigningKey // signs certificates and statements
	videos  retain.Dir        // the video store: videos and screenshots
	// hold, when set, makes capture chunks and consents wait until it is
	// closed: a slow service.
	hold atomic.Pointer[chan struct{}]
	// down, when set, makes them fail as a dead service's would.
	down atomic.Bool
	// chunkHold, when set, holds each chunk of events until it is closed:
	// before the service stores it, or with chunkStoredFirst after, its
	// answer alone held. chunksHeld counts the chunks held.
	chunkHold        atomic.Pointer[chan struct{}]
	chunkStoredFirst bool
	chunksHeld       atomic.Int32
	// ticked is set once the service has taken a chunk of events that
	// holds the consent checkbox's tick.
	ticked atomic.Bool
}

// statusWriter notes the status of an answer.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// newStack starts the service and the form's server, the form's page
// edited by edits.
func newStack(t *testing.T, edits ...func(page string) string) *stack {
	t.Helper()
	if _, err := os.Stat(chromium); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI must run the browser tests: %v", err)
		}
		t.Skipf("browser test skipped: %s not found (apt-get install chromium)", chromium)
	}
	if _, err := os.Stat(filepath.Join(rrwebDir, "rrweb.umd.min.cjs")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI must run the browser tests: %v", err)
		}
		t.Skipf("browser test skipped: rrweb is not installed (npm ci --prefix retain/mp4/replayer): %v", err)
	}
	key, err := signed.NewSigningKey("e2e-key")
	if err != nil {
		t.Fatal(err)
	}
	svc, err := consentkit.NewService(teststore.SQLite(t), consentkit.Config{SigningKeys: []signed.SigningKey{key}})
	if err != nil {
		t.Fatal(err)
	}
	videos := retain.Dir{Root: t.TempDir()}
	ctx := context.Background()
	if _, err := svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme Insurance"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.TopUp(ctx, "acme", 5*wallet.Dollar, "test"); err != nil {
		t.Fatal(err)
	}
	_, token, err := svc.IssueToken(ctx, consentkit.TokenParams{CompanyID: "acme", Permissions: []consent.Permission{consent.PermissionRetention}})
	if err != nil {
		t.Fatal(err)
	}
	api, err := httpadapter.New(httpadapter.Config{Service: svc, RRWebDir: rrwebDir, Videos: videos,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	s := &stack{svc: svc, api: api, token: token, key: key, videos: videos, posts: make(chan url.Values, 4)}
	s.service = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/capture/sessions/") {
			if s.down.Load() {
				panic(http.ErrAbortHandler) // the connection drops, as with a dead service
			}
			if hold := s.hold.Load(); hold != nil {
				<-*hold
			}
		}
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/events") {
			api.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		hold := s.chunkHold.Load()
		if hold != nil {
			s.chunksHeld.Add(1)
			if !s.chunkStoredFirst {
				<-*hold
			}
		}
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		api.ServeHTTP(sw, r)
		if sw.status/100 == 2 && bytes.Contains(body, []byte(`"isChecked":true`)) {
			s.ticked.Store(true)
		}
		if hold != nil && s.chunkStoredFirst {
			<-*hold
		}
	}))
	t.Cleanup(s.service.Close)
	page := strings.ReplaceAll(formPage, "{{SERVICE}}", s.service.URL)
	for _, edit := range edits {
		page = edit(page)
	}
	s.form = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/receive" {
			if err := r.ParseForm(); err != nil {
				t.Errorf("the form's post: %v", err)
			}
			s.posts <- r.PostForm
			_, _ = io.WriteString(w, "<!doctype html><p>Thank you.</p>")
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, page) // a browser gone: the test fails waiting for it
	}))
	t.Cleanup(s.form.Close)
	// The service and the form are on different ports: different origins.
	if _, err := svc.AddProperty(ctx, consentkit.PropertyParams{ID: "acme-form", CompanyID: "acme", Name: "Quote form",
		AllowedOrigins: []string{s.form.URL}}); err != nil {
		t.Fatal(err)
	}
	return s
}

// browser returns a context of a fresh headless Chromium.
func browser(t *testing.T) context.Context {
	t.Helper()
	dir, err := os.MkdirTemp("", "cke2e")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) }) // best effort, unlike t.TempDir: a browser may still write there
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.UserDataDir(dir),
		chromedp.Flag("disable-gpu", true), chromedp.WindowSize(1000, 800), chromedp.Env("TMPDIR="+dir))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	// The browser's steps run until a little before the test's deadline,
	// after near, so that a hung step is still reported.
	cancelTimeout := context.CancelFunc(func() {})
	if deadline, ok := t.Deadline(); ok {
		ctx, cancelTimeout = context.WithDeadline(ctx, deadline.Add(-min(15*time.Second, time.Until(deadline)/20)))
	}
	t.Cleanup(func() { cancelTimeout(); cancel(); cancelAlloc() })
	return ctx
}

// fill loads the form, waits for the reserved certificate id, types, ticks,
// and returns the id the page holds.
func (s *stack) fill(t *testing.T, ctx context.Context) string {
	t.Helper()
	certID := s.load(t, ctx)
	err := chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.ID("email"), typedEmail),
		chromedp.SendKeys(chromedp.ID("mobile"), typedMobile),
		chromedp.SendKeys(chromedp.ID("password"), "hunter2-secret"),
		chromedp.SendKeys(chromedp.ID("policy"), "POL-778899"),
		chromedp.Click(chromedp.ID("agree")),
	)
	if err != nil {
		t.Fatal(err)
	}
	// Chunks reach the service before submit, the last of them with the
	// tick (the snippet sends one a second): wait for it, however long.
	if !testwait.Until(t, 20*time.Millisecond, s.ticked.Load) {
		t.Fatal("no chunk of events with the checkbox's tick reached the service")
	}
	return certID
}

// load loads the form and returns the certificate id the snippet
// reserved in it, once there.
func (s *stack) load(t *testing.T, ctx context.Context) string {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(s.form.URL+"/")); err != nil {
		t.Fatal(err)
	}
	certID, err := chromedp.Run(ctx, chromedp.Poll[string](
		`(function(){var i=document.querySelector('input[name="consent_certificate_id"]');return i&&i.value?i.value:null})()`,
		chromedp.WithPollingTimeout(0)))
	if err != nil {
		t.Fatalf("the reserved certificate id never reached the form: %v", err)
	}
	return certID
}

func (s *stack) submit(t *testing.T, ctx context.Context) url.Values {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("submit"))); err != nil {
		t.Fatal(err)
	}
	select {
	case form := <-s.posts:
		return form
	case <-testwait.Near(t):
		t.Fatal("the form's receiver never got the submission")
	}
	return nil
}

func (s *stack) post(t *testing.T, path, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.service.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("%d, the answer is not JSON: %v", resp.StatusCode, err)
	}
	return resp.StatusCode, out
}

// The whole loop in a real browser: a form on another origin embeds the
// snippet, a consumer fills and submits it, and the certificate it issues
// verifies, matches its lead, is retained as an MP4, and is refused once
// the consumer opts out.
func TestBrowserCapture(t *testing.T) {
	s := newStack(t)
	ctx := browser(t)
	reserved := s.fill(t, ctx)
	form := s.submit(t, ctx)
	if got := form.Get("consent_certificate_id"); got == "" || got != reserved {
		t.Fatalf("the receiver got consent_certificate_id %q, want the reserved %q", got, reserved)
	}
	if form.Get("email") != typedEmail {
		t.Errorf("the receiver got email %q: the snippet changed the form", form.Get("email"))
	}

	// The consent request outlives the page: wait for the certificate.
	cert := waitCertificate(t, s.svc, reserved)
	if len(cert.Records) != 1 || cert.Records[0].Text != consentText ||
		strings.Join(cert.Records[0].Types, ",") != "tcpa,marketing" || cert.Origin != s.form.URL+"/" ||
		cert.ClientIP != "127.0.0.1" || !strings.Contains(cert.UserAgent, "Chrome") || cert.RecordingSHA256.IsZero() {
		t.Errorf("certificate: %+v", cert)
	}
	rec, err := s.svc.Recording(context.Background(), cert.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if consent.DigestOf(string(rec)) != cert.RecordingSHA256 {
		t.Errorf("the certificate's recording SHA-256 is not that of the stored recording")
	}
	if bytes.Contains(rec, []byte("hunter2")) {
		t.Errorf("the recording holds the typed password")
	}
	if bytes.Contains(rec, []byte("778899")) || !bytes.Contains(rec, []byte(`"**********"`)) {
		t.Errorf("the recording does not mask the data-consent-mask input as asterisks")
	}
	if !bytes.Contains(rec, []byte(typedEmail[:4])) {
		t.Errorf("the recording lacks the typed email")
	}

	match := fmt.Sprintf(`{"certificate_id":%q,"company_id":"acme","consent":%q,"email":"jane.doe@example.com"}`, reserved, consentText)
	if code, body := s.post(t, "/verify/match", match); code != 200 || body["valid"] != true || body["email_matched"] != true {
		t.Errorf("match: %d %v", code, body)
	}
	if code, body := s.post(t, "/verify/partial-match", fmt.Sprintf(`{"certificate_id":%q,"company_id":"acme","term":"CALL AND TEXT"}`, reserved)); code != 200 || body["valid"] != true {
		t.Errorf("partial match: %d %v", code, body)
	}
	code, info := s.post(t, "/verify/certificate-info", fmt.Sprintf(`{"certificate_id":%q,"company_id":"acme","property_id":"acme-form"}`, reserved))
	vis, _ := info["consent_visibility"].(map[string]any)
	if code != 200 || vis == nil || vis["in_viewport"] != true || vis["visible"] != true || vis["font_size_px"] != 16.0 ||
		vis["contrast_ratio"].(float64) < 15 || info["session_id"] != cert.SessionID {
		t.Errorf("certificate-info: %d %v", code, info)
	}

	// Retain the session through the Retain API; the worker makes its MP4.
	if code, body := s.post(t, "/api/integrations/acme/retain/"+cert.SessionID, ""); code != 200 {
		t.Fatalf("retain: %d %v", code, body)
	}
	convertRetained(t, s.svc, cert.SessionID)

	// The consumer opts out by the email they typed: verification refused.
	if code, body := s.post(t, "/opt-out", `{"company_id":"acme","email":"jane.doe@example.com"}`); code != 200 || body["revoked"] != 1.0 {
		t.Fatalf("opt-out: %d %v", code, body)
	}
	if code, body := s.post(t, "/verify/match", match); code != 403 {
		t.Errorf("match after opt-out: %d %v, want 403", code, body)
	}
}

// convertRetained runs the real converter on the retained session and
// checks that its MP4 is stored.
func convertRetained(t *testing.T, svc *consentkit.Service, sessionID string) {
	t.Helper()
	tmp, err := os.MkdirTemp("", "cke2v")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(tmp) }) // best effort, unlike t.TempDir: a browser may still write there
	conv, err := mp4.New(mp4.Config{Replayer: rrwebDir, TempDir: tmp})
	if err != nil {
		t.Fatal(err)
	}
	videos := retain.Dir{Root: filepath.Join(tmp, "videos")}
	w, err := retain.NewWorker(retain.WorkerConfig{Service: svc, Converter: conv, Videos: videos,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if worked, err := w.RunOnce(context.Background()); err != nil || !worked {
		t.Fatalf("conversion: worked %v, %v", worked, err)
	}
	var ses *consent.Session
	err = svc.Store().View(context.Background(), func(tx consent.Tx) error {
		ses, err = tx.Session(context.Background(), sessionID)
		return err
	})
	if err != nil || ses.VideoStatus != consent.VideoConverted {
		t.Fatalf("session after conversion: %+v, %v", ses, err)
	}
	out, err := exec.Command("ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", ses.Video.Path).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", ses.Video.Path, err)
	}
	// The video lasts as long as the recording, within a frame (25 a
	// second): how long that is depends on how fast the browser went.
	rec, err := svc.Recording(context.Background(), sessionID)
	if err != nil {
		t.Fatal(err)
	}
	var events []struct {
		Timestamp float64 `json:"timestamp"`
	}
	if err := json.Unmarshal(rec, &events); err != nil || len(events) < 2 {
		t.Fatalf("the recording of %s: %d events, %v", sessionID, len(events), err)
	}
	span := (events[len(events)-1].Timestamp - events[0].Timestamp) / 1000
	if d, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64); err != nil || span <= 0 || math.Abs(d-span) > 1.0/25+0.001 {
		t.Errorf("video of %s lasts %q s, want the recording's %.3f s", sessionID, out, span)
	}
}

// A slow or dead service never holds the form up: the submission reaches
// the form's receiver while the service still holds the consent request (or
// after it failed), and the snippet's submit handlers run to their end.
//
// How long the handlers took is logged, not bounded: on a busy machine
// any span can pass between two statements. That they do not wait for the
// service is what the held request shows: it is released only after the
// form has arrived.
func TestBrowserSlowOrDeadService(t *testing.T) {
	for _, mode := range []string{"slow", "dead"} {
		t.Run(mode, func(t *testing.T) {
			s := newStack(t)
			ctx := browser(t)
			s.fill(t, ctx)
			release := make(chan struct{})
			if mode == "slow" {
				s.hold.Store(&release)
			} else {
				s.down.Store(true)
			}
			form := s.submit(t, ctx)
			close(release)
			ms, err := strconv.ParseFloat(form.Get("handlers_ms"), 64)
			if err != nil || ms < 0 {
				t.Errorf("submit handlers took %q ms: the listener after them did not run", form.Get("handlers_ms"))
			}
			t.Logf("the submit handlers took %.1f ms", ms)
			if form.Get("consent_certificate_id") == "" {
				t.Errorf("the form lost consent_certificate_id")
			}
			if mode == "slow" {
				// The held consent goes through once the service answers.
				waitCertificate(t, s.svc, form.Get("consent_certificate_id"))
			}
		})
	}
}

// waitCertificate returns the certificate once it is issued, failing t
// when it is not by shortly before the test's deadline.
func waitCertificate(t *testing.T, svc *consentkit.Service, id string) *consent.Certificate {
	t.Helper()
	var (
		cert *consent.Certificate
		err  error
	)
	testwait.Until(t, 100*time.Millisecond, func() bool {
		err = svc.Store().View(context.Background(), func(tx consent.Tx) error {
			var err error
			cert, err = tx.Certificate(context.Background(), id)
			return err
		})
		return !errors.Is(err, consent.ErrNotFound)
	})
	if err != nil {
		t.Fatalf("certificate %s: %v", id, err)
	}
	return cert
}

// Markup on the form's page that holds no script — what a sanitizer lets
// through from a comment or a review — cannot take the snippet elsewhere:
// an image named currentScript, which document.currentScript would then
// be, pointing at another server's capture.js, and an element whose id is
// the snippet's own guard. The snippet still records to its own service,
// and never loads or sends anything to the other.
func TestSnippetIgnoresClobberingMarkup(t *testing.T) {
	var hits atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/capture/capture.js" { // the image's own fetch
			hits.Add(1)
		}
		w.Header().Set("Access-Control-Allow-Origin", "*")
		if r.URL.Path == "/capture/rrweb.js" {
			w.Header().Set("Content-Type", "text/javascript")
			_, _ = io.WriteString(w, `document.title = "taken";`)
			return
		}
		w.WriteHeader(http.StatusNotFound)
	}))
	t.Cleanup(other.Close)
	s := newStack(t, func(page string) string {
		return strings.Replace(page, "<form ", `<div class="comment"><img name="currentScript" src="`+other.URL+
			`/capture/capture.js" data-property-id="x"><a id="__consentkit" href="#">a link</a></div>
<form `, 1)
	})
	ctx := browser(t)
	if id := s.load(t, ctx); id == "" {
		t.Fatal("no certificate id reserved")
	}
	title, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.title`))
	if err != nil {
		t.Fatal(err)
	}
	if n := hits.Load(); n > 0 || title != "Get a quote" {
		t.Errorf("the other server got %d requests from the snippet, and the page's title is %q", n, title)
	}
}

// A form submitted while a chunk of events is on its way gets its
// certificate, over every event: the consent carries the chunk in flight
// and the events after it as one chunk. When the chunk in flight reached
// the service first, the consent's chunk extends it and the service stores
// the rest; when it comes after the consent, it is refused as late (D34).
func TestSubmitWhileChunkInFlight(t *testing.T) {
	for _, storedFirst := range []bool{false, true} {
		name := "chunk after the consent"
		if storedFirst {
			name = "chunk stored first"
		}
		t.Run(name, func(t *testing.T) {
			s := newStack(t)
			s.chunkStoredFirst = storedFirst
			ctx := browser(t)
			s.fill(t, ctx)
			release := make(chan struct{})
			s.chunkHold.Store(&release)
			defer func() { s.chunkHold.Store(nil); close(release) }() // before the servers close
			// Typing makes events, which the snippet's next flush sends as
			// a chunk, held.
			if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("email"), "x")); err != nil {
				t.Fatal(err)
			}
			if !testwait.Until(t, 10*time.Millisecond, func() bool { return s.chunksHeld.Load() > 0 }) {
				t.Fatal("no chunk was sent")
			}
			form := s.submit(t, ctx)
			id := form.Get("consent_certificate_id")
			cert := waitCertificate(t, s.svc, id)
			rec, err := s.svc.Recording(context.Background(), cert.SessionID)
			if err != nil {
				t.Fatal(err)
			}
			if consent.DigestOf(string(rec)) != cert.RecordingSHA256 {
				t.Error("the certificate's digest is not its recording's")
			}
			if !bytes.Contains(rec, []byte(`"text":"`+typedEmail+`x"`)) {
				t.Error("the recording lacks the key typed while the chunk was in flight")
			}
		})
	}
}
