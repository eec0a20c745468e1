package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/insights"
	"github.com/consentkit/consentkit/internal/testwait"
)

// desktopUA is the user agent of a desktop Chrome, which the masked
// browser sends instead of its HeadlessChrome one.
const desktopUA = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/140.0.0.0 Safari/537.36"

// insightsPage is a form laid out at fixed places, so that a hand finds
// its fields by their coordinates (atName…), in a frame that fills the
// viewport too. {{EMAIL}} adds attributes to the email input, {{SCRIPT}} a
// script after the form.
const insightsPage = `<!doctype html>
<html><head><meta charset="utf-8"><title>Get a quote</title>
<script src="{{SERVICE}}/capture/capture.js" data-property-id="insights-form" async></script>
<style>
body { margin: 0; font: 16px sans-serif; background: #fff; color: #111 }
.f { position: absolute; left: 20px; width: 300px; height: 30px; box-sizing: border-box; margin: 0 }
</style></head>
<body>
<form method="post" action="/receive">
<input class="f" style="top:20px" type="text" name="name" id="name">
<input class="f" style="top:70px" type="email" name="email" id="email"{{EMAIL}}>
<input class="f" style="top:120px" type="text" name="ref" id="ref" value="spring-promo">
<label><input type="checkbox" name="agree" id="agree" style="position:absolute;left:20px;top:170px;width:20px;height:20px;margin:0">
<span data-consent data-consent-types="tcpa" style="position:absolute;left:50px;top:170px">` + agreeText + `</span></label>
<button type="submit" id="submit" style="position:absolute;left:20px;top:220px;width:120px;height:36px">Get my quote</button>
</form>
<p id="clip" style="position:absolute;left:20px;top:300px;margin:0">jane.paste@example.com</p>
{{SCRIPT}}
</body></html>`

// The centres of insightsPage's elements, in CSS pixels from the page's
// top left.
var (
	atName   = [2]float64{170, 35}
	atEmail  = [2]float64{170, 85}
	atAgree  = [2]float64{30, 180}
	atSubmit = [2]float64{80, 238}
)

// selfSubmit sends the form as soon as the snippet has its session and
// the recorder runs (rrweb's addCustomEvent throws until it does): a form
// sent by a script well under a second after it was shown.
const selfSubmit = `<script>
(function wait() {
  var id = document.querySelector('input[name="consent_certificate_id"]');
  var el = document.querySelector('script[src$="/capture/rrweb.js"]');
  var lib = (el && el.consentkitRecorder) || window.rrweb; // the recorder as the snippet finds it
  var record = lib && lib.record;
  if (id && id.value && record) {
    try { record.addCustomEvent("test/ready", {}); document.forms[0].requestSubmit(); return; } catch (e) { /* not recording yet */ }
  }
  requestAnimationFrame(wait);
})();
</script>`

// insightsStack serves the forms, a page of another site that frames one,
// and the service through a proxy that notes when a chunk holding the full
// snapshot is stored, and holds rrweb's recorder while held is set
// (holdRecorder); the forms' receiver passes on the certificate id each
// submission carries.
type insightsStack struct {
	base     *stack
	pages    *httptest.Server
	parent   *httptest.Server // reached as http://localhost:port, another site
	proxy    *httptest.Server
	snapshot atomic.Bool
	received chan string
	held     atomic.Pointer[chan struct{}]
	heldAt   atomic.Pointer[time.Time] // when a held request for the recorder came
}

func newInsightsStack(t *testing.T) *insightsStack {
	t.Helper()
	s := &insightsStack{base: newStack(t), received: make(chan string, 16)}
	s.proxy = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if held := s.held.Load(); held != nil && r.URL.Path == "/capture/rrweb.js" {
			at := time.Now()
			s.heldAt.CompareAndSwap(nil, &at)
			select {
			case <-*held:
			case <-r.Context().Done():
				return
			}
		}
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/events") {
			s.base.api.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		s.base.api.ServeHTTP(sw, r)
		if sw.status/100 == 2 && bytes.Contains(body, []byte(`"type":2,`)) {
			s.snapshot.Store(true)
		}
	}))
	t.Cleanup(s.proxy.Close)
	page := func(email, script string) string {
		return strings.NewReplacer("{{SERVICE}}", s.proxy.URL, "{{EMAIL}}", email, "{{SCRIPT}}", script).Replace(insightsPage)
	}
	s.pages = formPages(t, map[string]string{
		"/form":      page("", ""),
		"/prefilled": page(` value="jane@example.com"`, ""),
		"/fast":      page("", selfSubmit),
	}, func(r *http.Request) {
		if err := r.ParseForm(); err != nil {
			t.Errorf("the form's post: %v", err)
		}
		s.received <- r.PostForm.Get("consent_certificate_id")
	})
	s.parent = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, `<!doctype html><html><head><title>Publisher</title></head><body style="margin:0">`+
			`<iframe src="`+s.pages.URL+`/form" style="position:fixed;left:0;top:0;width:100%;height:100%;border:0"></iframe></body></html>`)
	}))
	t.Cleanup(s.parent.Close)
	if _, err := s.base.svc.AddProperty(context.Background(), consentkit.PropertyParams{ID: "insights-form", CompanyID: "acme",
		Name: "Insights forms", AllowedOrigins: []string{s.pages.URL}}); err != nil {
		t.Fatal(err)
	}
	return s
}

// parentURL is the framing page's address, on localhost: a site other
// than the form's 127.0.0.1.
func (s *insightsStack) parentURL() string {
	_, port, _ := net.SplitHostPort(s.parent.Listener.Addr().String())
	return "http://localhost:" + port
}

// insightsBrowser returns a context of a fresh headless Chromium. masked,
// its automation flags are hidden: navigator.webdriver is false
// (--disable-blink-features=AutomationControlled) and it sends a desktop
// Chrome's user agent; otherwise they are left as chromedp sets them.
func insightsBrowser(t *testing.T, masked bool) context.Context {
	t.Helper()
	dir, err := os.MkdirTemp("", "cke2i")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) }) // best effort: a browser may still write there
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.UserDataDir(dir),
		chromedp.Flag("disable-gpu", true), chromedp.WindowSize(1000, 800), chromedp.Env("TMPDIR="+dir))
	if masked {
		opts = append(opts, chromedp.Flag("disable-blink-features", "AutomationControlled"), chromedp.UserAgent(desktopUA))
	}
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	cancelTimeout := context.CancelFunc(func() {})
	if deadline, ok := t.Deadline(); ok {
		ctx, cancelTimeout = context.WithDeadline(ctx, deadline.Add(-min(15*time.Second, time.Until(deadline)/20)))
	}
	t.Cleanup(func() { cancelTimeout(); cancel(); cancelAlloc() })
	return ctx
}

// hand acts as a person does: the pointer glides to what it clicks, keys
// come one at a time with a typist's gaps. Its pace is drawn from a fixed
// seed: every run acts alike.
type hand struct {
	x, y float64
	rnd  *rand.Rand
}

func newHand() *hand { return &hand{x: 500, y: 400, rnd: rand.New(rand.NewPCG(34, 50))} }

func (h *hand) wait(from, to int) {
	time.Sleep(time.Duration(from+h.rnd.IntN(to-from+1)) * time.Millisecond)
}

// moveTo glides the pointer to at in a dozen steps.
func (h *hand) moveTo(ctx context.Context, at [2]float64) error {
	const steps = 12
	for i := 1; i <= steps; i++ {
		f := float64(i) / steps
		x, y := h.x+(at[0]-h.x)*f, h.y+(at[1]-h.y)*f
		if i < steps {
			x, y = x+float64(h.rnd.IntN(5)-2), y+float64(h.rnd.IntN(5)-2)
		}
		if err := chromedp.Do(ctx, chromedp.MouseEvent(chromedp.MouseMoved, x, y)); err != nil {
			return err
		}
		h.wait(12, 30)
	}
	h.x, h.y = at[0], at[1]
	return nil
}

func (h *hand) click(ctx context.Context, at [2]float64) error {
	if err := h.moveTo(ctx, at); err != nil {
		return err
	}
	h.wait(60, 140)
	return chromedp.Do(ctx, chromedp.MouseClickXY(at[0], at[1]))
}

// typeText presses a key for each character, 70 to 170 ms apart.
func (h *hand) typeText(ctx context.Context, text string) error {
	for _, r := range text {
		if err := chromedp.Do(ctx, chromedp.KeyEvent(string(r))); err != nil {
			return err
		}
		h.wait(70, 170)
	}
	return nil
}

// shortcut presses Ctrl and key together, with the editing command the
// browser runs for it (copy, paste).
func shortcut(ctx context.Context, key, command string) error {
	code := int64(strings.ToUpper(key)[0])
	down := input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeRawKeyDown, Modifiers: int64(chromedp.ModifierCtrl), Key: key, Code: "Key" + strings.ToUpper(key),
		WindowsVirtualKeyCode: code, NativeVirtualKeyCode: code, Commands: []string{command}}
	up := down
	up.Type, up.Commands = input.DispatchKeyEventTypeKeyUp, nil
	for _, p := range []input.DispatchKeyEventParams{down, up} {
		if _, err := chromedp.Call(ctx, input.DispatchKeyEvent, p); err != nil {
			return err
		}
	}
	return nil
}

// fill is a person filling insightsPage: they look at the page, type
// their name and email (or paste the email), tick the box and send it.
func (h *hand) fill(ctx context.Context, pasteEmail bool) error {
	h.wait(500, 800) // reading the page
	if err := h.click(ctx, atName); err != nil {
		return err
	}
	if err := h.typeText(ctx, "Jane Doe"); err != nil {
		return err
	}
	if pasteEmail {
		if err := runScript(`(function () { var r = document.createRange(); r.selectNodeContents(document.getElementById("clip"));
			var s = getSelection(); s.removeAllRanges(); s.addRange(r); })()`)(ctx); err != nil {
			return err
		}
		if err := shortcut(ctx, "c", "copy"); err != nil {
			return err
		}
	}
	if err := h.click(ctx, atEmail); err != nil {
		return err
	}
	if pasteEmail {
		h.wait(200, 400)
		if err := shortcut(ctx, "v", "paste"); err != nil {
			return err
		}
	} else if err := h.typeText(ctx, typedEmail); err != nil {
		return err
	}
	return h.tickAndSend(ctx)
}

func (h *hand) tickAndSend(ctx context.Context) error {
	if err := h.click(ctx, atAgree); err != nil {
		return err
	}
	h.wait(300, 600)
	return h.click(ctx, atSubmit)
}

// session loads url, waits until the service holds the recording's full
// snapshot (the snippet has its session and the recorder runs), acts,
// and returns the signals of the certificate the submission got: its
// recording read back from the store after consent, judged with the
// default rules. With no act the page sends itself, maybe before its
// load event: session starts loading it and waits for the submission,
// not for the load.
func (s *insightsStack) session(t *testing.T, ctx context.Context, url string, act func(context.Context) error) (*insights.Signals, insights.Judgement) {
	t.Helper()
	s.snapshot.Store(false)
	if act == nil {
		if err := unaborted(func() error { return navigateNoWait(ctx, url) }); err != nil {
			t.Fatalf("loading %s: %v", url, err)
		}
		return s.signalsOf(t, s.submission(t))
	}
	if err := unaborted(func() error { return chromedp.Do(ctx, chromedp.Navigate(url)) }); err != nil {
		t.Fatalf("loading %s: %v", url, err)
	}
	s.waitSnapshot(t)
	if err := act(ctx); err != nil {
		t.Fatal(err)
	}
	return s.signalsOf(t, s.submission(t))
}

// unaborted runs navigate again, at most twice, when the browser aborted
// it (net::ERR_ABORTED): the form that the session before sent is still
// navigating to its receiver's answer when its submission has arrived,
// and a navigation that commits after this one starts takes its place.
func unaborted(navigate func() error) error {
	err := navigate()
	for range 2 {
		if err == nil || !strings.Contains(err.Error(), "ERR_ABORTED") {
			break
		}
		err = navigate()
	}
	return err
}

// navigateNoWait starts loading url and returns once the browser has its
// response, without waiting for the page's load event: a page may
// navigate away before it (a form that sends itself), or hold it back (a
// recorder still loading).
func navigateNoWait(ctx context.Context, url string) error {
	res, err := chromedp.Call(ctx, page.Navigate, page.NavigateParams{URL: url})
	if err == nil && res.ErrorText != "" {
		err = fmt.Errorf("page load error %s", res.ErrorText)
	}
	return err
}

// waitSnapshot waits until a chunk with the full snapshot reached the
// service since session or the test cleared s.snapshot.
func (s *insightsStack) waitSnapshot(t *testing.T) {
	t.Helper()
	if !testwait.Until(t, 20*time.Millisecond, s.snapshot.Load) {
		t.Fatal("no chunk with the full snapshot reached the service")
	}
}

// submission waits for the forms' receiver to get a submission, and
// returns the certificate id it carried.
func (s *insightsStack) submission(t *testing.T) string {
	t.Helper()
	var certID string
	select {
	case certID = <-s.received:
	case <-testwait.Near(t):
		t.Fatal("the form's receiver never got the submission")
	}
	if certID == "" {
		t.Fatal("the submission carried no consent_certificate_id")
	}
	return certID
}

// holdRecorder makes the proxy hold every request for rrweb's recorder
// (the snippet runs, the recording does not start) until release is
// called, or the test ends; s.heldAt tells when the first came.
func (s *insightsStack) holdRecorder(t *testing.T) (release func()) {
	t.Helper()
	ch := make(chan struct{})
	s.heldAt.Store(nil)
	s.held.Store(&ch)
	var once sync.Once
	release = func() { once.Do(func() { s.held.Store(nil); close(ch) }) }
	t.Cleanup(release)
	return release
}

// signalsOf reads the certificate's recording back from the store and
// returns its signals and verdict.
func (s *insightsStack) signalsOf(t *testing.T, certID string) (*insights.Signals, insights.Judgement) {
	t.Helper()
	cert := waitCertificate(t, s.base.svc, certID)
	rec, err := s.base.svc.Recording(context.Background(), cert.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := insights.Extract(bytes.NewReader(rec), cert.UserAgent, insights.Limits{})
	if err != nil {
		t.Fatalf("Extract: %v", err)
	}
	j := (insights.Rules{}).Judge(sig, insights.Facts{})
	b, _ := json.Marshal(sig)
	t.Logf("user agent %q\nsignals %s\nverdict %s %v", cert.UserAgent, b, j.Verdict, j.Reasons)
	return sig, j
}

func hasReason(j insights.Judgement, r insights.Reason) bool { return slices.Contains(j.Reasons, r) }

// The signals and the verdict of consents given through the real snippet
// in headless Chromium, read from the recordings the service kept: a
// person typing at a person's pace with the pointer is human, and so is
// one who pastes, one whose form came prefilled, one who typed before the
// recorder started and one in a cross-site frame, whose parent's origin
// is told; a value set by script, a form sent within a second, the same
// person's acts from a browser with its automation flags on, and a plain
// HTTP client's made-up events are not.
func TestBrowserInsights(t *testing.T) {
	s := newInsightsStack(t)
	masked := insightsBrowser(t, true)

	human := func(t *testing.T, sig *insights.Signals, j insights.Judgement) {
		t.Helper()
		if j.Verdict != insights.Human || len(j.Reasons) != 0 {
			t.Errorf("verdict %s %v, want human with no reasons", j.Verdict, j.Reasons)
		}
		if r := sig.Reported; r == nil || r.Webdriver || r.Viewport.Width != 1000 || r.TimeZone == "" || r.Language == "" {
			t.Errorf("reported %+v: want navigator.webdriver false, the 1000 px viewport, a time zone and a language", r)
		}
		if sig.Client.Headless || sig.Client.Browser != "Chrome" || sig.Client.Device != "desktop" {
			t.Errorf("client %+v, want desktop Chrome", sig.Client)
		}
		if sig.Pointer.Moves == 0 || sig.Pointer.Clicks < 2 {
			t.Errorf("pointer %+v, want the hand's moves and clicks", sig.Pointer)
		}
	}

	t.Run("person", func(t *testing.T) {
		h := newHand()
		sig, j := s.session(t, masked, s.pages.URL+"/form", func(ctx context.Context) error { return h.fill(ctx, false) })
		human(t, sig, j)
		want := map[string]insights.Input{
			"name":  {Method: insights.Typed, Keystrokes: len("Jane Doe")},
			"email": {Method: insights.Typed, Keystrokes: len(typedEmail)},
			"ref":   {Method: insights.Prefilled},
		}
		if !maps.Equal(sig.Inputs, want) {
			t.Errorf("inputs %+v, want %+v", sig.Inputs, want)
		}
		if sig.Reported != nil && (sig.Reported.IsFramed || sig.Reported.ParentOrigin != "") {
			t.Errorf("a top-level page reported framed by %q", sig.Reported.ParentOrigin)
		}
		if sig.KeysPerMinute <= 0 || sig.SecondsToSubmit <= 0 || sig.SecondsToSubmit > sig.SecondsOnPage {
			t.Errorf("keys per minute %v, %v s to submit of %v s on the page", sig.KeysPerMinute, sig.SecondsToSubmit, sig.SecondsOnPage)
		}
	})

	t.Run("paste", func(t *testing.T) {
		h := newHand()
		sig, j := s.session(t, masked, s.pages.URL+"/form", func(ctx context.Context) error { return h.fill(ctx, true) })
		human(t, sig, j)
		if got := sig.Inputs["email"]; got != (insights.Input{Method: insights.Pasted, Pastes: 1}) {
			t.Errorf("email %+v, want pasted once, no key counted (Ctrl+V is a shortcut)", got)
		}
	})

	t.Run("prefilled", func(t *testing.T) {
		h := newHand()
		sig, j := s.session(t, masked, s.pages.URL+"/prefilled", func(ctx context.Context) error {
			h.wait(1800, 2200) // reading the page: longer than the 1.5 s a person needs at least
			return h.tickAndSend(ctx)
		})
		human(t, sig, j)
		want := map[string]insights.Input{"email": {Method: insights.Prefilled}, "ref": {Method: insights.Prefilled}}
		if !maps.Equal(sig.Inputs, want) {
			t.Errorf("inputs %+v, want %+v", sig.Inputs, want)
		}
	})

	t.Run("scripted", func(t *testing.T) {
		h := newHand()
		sig, j := s.session(t, masked, s.pages.URL+"/form", func(ctx context.Context) error {
			h.wait(500, 800)
			if err := h.click(ctx, atName); err != nil {
				return err
			}
			if err := h.typeText(ctx, "Jane Doe"); err != nil {
				return err
			}
			if err := runScript(`document.getElementById("email").value = "bot@example.com"`)(ctx); err != nil {
				return err
			}
			return h.tickAndSend(ctx)
		})
		if got := sig.Inputs["email"]; got.Method != insights.Scripted || got.Keystrokes != 0 {
			t.Errorf("email %+v, want scripted", got)
		}
		if got := sig.Inputs["name"]; got.Method != insights.Typed {
			t.Errorf("name %+v, want typed", got)
		}
		if j.Verdict == insights.Human || !hasReason(j, insights.ReasonScriptedInput) {
			t.Errorf("verdict %s %v, want scripted_input and not human", j.Verdict, j.Reasons)
		}
	})

	t.Run("under a second", func(t *testing.T) {
		sig, j := s.session(t, masked, s.pages.URL+"/fast", nil)
		t.Logf("sent %.3f s after the page began loading", sig.SecondsOnPage)
		if j.Verdict != insights.Bot || !hasReason(j, insights.ReasonSubmittedTooFast) {
			t.Errorf("verdict %s %v, want bot for submitted_too_fast", j.Verdict, j.Reasons)
		}
		if sig.Reported == nil || sig.Reported.Webdriver || hasReason(j, insights.ReasonWebdriver) || hasReason(j, insights.ReasonHeadlessUserAgent) {
			t.Errorf("the masked browser's flags showed: %+v %v", sig.Reported, j.Reasons)
		}
	})

	// The recorder starts late (rrweb.js is held): the person types their
	// name and moves to the email while only the snippet runs, then types
	// the email once the recorder does. The page's age the snippet reports counts the time before the
	// recording, and the snippet's key count tells the name typed, not
	// prefilled. A fresh browser, whose cache holds no recorder.
	t.Run("recorder started late", func(t *testing.T) {
		ctx := insightsBrowser(t, true)
		h := newHand()
		release := s.holdRecorder(t)
		s.snapshot.Store(false)
		url := s.pages.URL + "/form"
		if err := navigateNoWait(ctx, url); err != nil {
			t.Fatalf("loading %s: %v", url, err)
		}
		if !testwait.Until(t, 20*time.Millisecond, func() bool { return s.heldAt.Load() != nil }) {
			t.Fatal("the snippet never asked for the recorder")
		}
		if _, err := chromedp.Run(ctx, chromedp.Poll[string](
			`(function(){var i=document.querySelector('input[name="consent_certificate_id"]');return i&&i.value?i.value:null})()`,
			chromedp.WithPollingTimeout(0))); err != nil {
			t.Fatalf("the reserved certificate id never reached the form: %v", err)
		}
		h.wait(500, 800)
		if err := h.click(ctx, atName); err != nil {
			t.Fatal(err)
		}
		if err := h.typeText(ctx, "Jane Doe"); err != nil {
			t.Fatal(err)
		}
		// Into the email field, so that the name's change event, too,
		// comes before the recorder: the recording holds no change of it.
		if err := h.click(ctx, atEmail); err != nil {
			t.Fatal(err)
		}
		if s.snapshot.Load() {
			t.Fatal("the recording began while the recorder was held")
		}
		held := time.Since(*s.heldAt.Load())
		release()
		s.waitSnapshot(t)
		if err := h.typeText(ctx, typedEmail); err != nil {
			t.Fatal(err)
		}
		if err := h.tickAndSend(ctx); err != nil {
			t.Fatal(err)
		}
		sig, j := s.signalsOf(t, s.submission(t))
		human(t, sig, j)
		want := map[string]insights.Input{
			"name":  {Method: insights.Typed, Keystrokes: len("Jane Doe")},
			"email": {Method: insights.Typed, Keystrokes: len(typedEmail)},
			"ref":   {Method: insights.Prefilled},
		}
		if !maps.Equal(sig.Inputs, want) {
			t.Errorf("inputs %+v, want %+v", sig.Inputs, want)
		}
		// The page was as old as the recorder was held, at least, when the
		// recording began, and its first interaction came after that.
		if least := held.Seconds() + sig.SecondsToSubmit; sig.SecondsOnPage < least-0.01 {
			t.Errorf("%v s on the page, want at least %.3f: the recorder was held %v, then %v s to submit",
				sig.SecondsOnPage, least, held, sig.SecondsToSubmit)
		}
	})

	t.Run("cross-site frame", func(t *testing.T) {
		h := newHand()
		sig, j := s.session(t, masked, s.parentURL()+"/publisher", func(ctx context.Context) error { return h.fill(ctx, false) })
		human(t, sig, j)
		if r := sig.Reported; r == nil || !r.IsFramed || r.ParentOrigin != s.parentURL() {
			t.Errorf("reported %+v, want framed by %s", r, s.parentURL())
		}
		if got := sig.Inputs["email"]; got.Method != insights.Typed || got.Keystrokes != len(typedEmail) {
			t.Errorf("email %+v, want typed, %d keys", got, len(typedEmail))
		}
	})

	t.Run("flags left on", func(t *testing.T) {
		h := newHand()
		sig, j := s.session(t, insightsBrowser(t, false), s.pages.URL+"/form", func(ctx context.Context) error { return h.fill(ctx, false) })
		if j.Verdict == insights.Human || !hasReason(j, insights.ReasonWebdriver) || !hasReason(j, insights.ReasonHeadlessUserAgent) {
			t.Errorf("verdict %s %v, want webdriver and headless_user_agent, not human", j.Verdict, j.Reasons)
		}
		if sig.Reported == nil || !sig.Reported.Webdriver || !sig.Client.Headless {
			t.Errorf("reported %+v, client %+v", sig.Reported, sig.Client)
		}
	})

	// A plain HTTP client (Go's) starts a session with the form's origin
	// in a header and gives consent with a few events it made up; with its
	// own user agent, and with a browser's.
	for _, ua := range []string{"", desktopUA} {
		name := "plain HTTP client"
		if ua != "" {
			name += ", a browser's user agent"
		}
		t.Run(name, func(t *testing.T) {
			sig, j := s.signalsOf(t, s.madeUp(t, ua))
			if j.Verdict != insights.Bot || !hasReason(j, insights.ReasonNoSnapshot) || !hasReason(j, insights.ReasonNoSignals) {
				t.Errorf("verdict %s %v, want bot for no_snapshot and no_signals", j.Verdict, j.Reasons)
			}
			if ua == "" && (!hasReason(j, insights.ReasonNotABrowser) || !strings.HasPrefix(sig.Client.Browser, "Go-http-client")) {
				t.Errorf("client %+v, reasons %v: want Go's agent, not a browser", sig.Client, j.Reasons)
			}
		})
	}
}

// madeUp gives consent over plain HTTP with made-up events, sending the
// User-Agent ua (Go's own when empty), and returns the certificate's id.
func (s *insightsStack) madeUp(t *testing.T, ua string) string {
	t.Helper()
	origin := s.pages.URL
	call := func(path, token, body string) (int, []byte) {
		req, err := http.NewRequest(http.MethodPost, s.proxy.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Origin", origin)
		req.Header.Set("Content-Type", "text/plain;charset=UTF-8")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if ua != "" {
			req.Header.Set("User-Agent", ua)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	code, body := call("/capture/sessions", "", `{"property_id":"insights-form","url":"`+origin+`/form"}`)
	var started struct {
		SessionID     string `json:"session_id"`
		CertificateID string `json:"certificate_id"`
		UploadToken   string `json:"upload_token"`
	}
	if err := json.Unmarshal(body, &started); code != http.StatusCreated || err != nil {
		t.Fatalf("start: %d %s", code, body)
	}
	at := time.Now().UnixMilli() - 20_000
	ts := func(ms int64) string { return strconv.FormatInt(at+ms, 10) }
	events := `[{"type":4,"data":{"href":"` + origin + `/form","width":1000,"height":800},"timestamp":` + ts(0) + `},` +
		`{"type":3,"data":{"source":5,"text":"` + typedEmail + `","isChecked":false,"userTriggered":true,"id":12},"timestamp":` + ts(9000) + `},` +
		`{"type":3,"data":{"source":2,"type":2,"id":20,"x":80,"y":238},"timestamp":` + ts(18000) + `}]`
	consentBody := fmt.Sprintf(`{"consents":[{"text":%q,"types":["tcpa"],"opt_in_method":"manual","visibility":{"in_viewport":true,`+
		`"visible":true,"font_size_px":16,"text_color":"rgb(0, 0, 0)","background_color":"rgb(255, 255, 255)","contrast_ratio":21,`+
		`"hidden_text":[]}}],"email":%q,"url":%q,"seq":0,"events":%s}`, agreeText, typedEmail, origin+"/form", events)
	if code, body := call("/capture/sessions/"+started.SessionID+"/consent", started.UploadToken, consentBody); code != http.StatusCreated {
		t.Fatalf("consent: %d %s", code, body)
	}
	return started.CertificateID
}
