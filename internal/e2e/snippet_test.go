package e2e_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/testwait"
)

// A password field that a "show password" button turns into a text field
// (the usual eye icon) is still a password field: what is typed into it is
// never recorded (D36), though its type is now "text".
func TestSnippetMasksPasswordShownAsText(t *testing.T) {
	s := newStack(t)
	ctx := browser(t)
	s.fill(t, ctx) // types "hunter2-secret" into the password field, ticks
	if err := runScript(`document.getElementById("password").type = "text"`)(ctx); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.ID("password"), "Z"),
		chromedp.Sleep(1500*time.Millisecond), // a flush
	); err != nil {
		t.Fatal(err)
	}
	form := s.submit(t, ctx)
	cert := waitCertificate(t, s.svc, form.Get("consent_certificate_id"))
	rec, err := s.svc.Recording(context.Background(), cert.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(rec, []byte("hunter2-secret")) {
		t.Errorf("the recording holds the password typed into a password field shown as text")
	}
}

// Browsers refuse keepalive bodies over 64 KiB of bytes, and text outside
// ASCII takes 2–3 bytes a character: a tail of 24,000 CJK characters
// (72 KB) is under 60,000 characters but too big to travel with the
// consent, which goes without it and is issued.
func TestSnippetNonASCIITailKeepsConsent(t *testing.T) {
	s := newStack(t)
	ctx := browser(t)
	s.fill(t, ctx)
	var consents atomic.Int32
	prev := s.service.Config.Handler
	s.service.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/consent") {
			consents.Add(1)
		}
		prev.ServeHTTP(w, r)
	})
	// The page shows terms in Japanese just before the consumer submits.
	if err := runScript(`(function () {
		var d = document.createElement("div");
		d.textContent = "同意します。".repeat(4000); // 24,000 characters, 72,000 bytes
		document.body.appendChild(d);
		setTimeout(function () { document.getElementById("submit").click(); }, 0);
	})()`)(ctx); err != nil {
		t.Fatal(err)
	}
	var form map[string][]string
	select {
	case form = <-s.posts:
	case <-testwait.Near(t):
		t.Fatal("the form's receiver never got the submission")
	}
	id := form["consent_certificate_id"][0]
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		err := s.svc.Store().View(context.Background(), func(tx consent.Tx) error {
			_, err := tx.Certificate(context.Background(), id)
			return err
		})
		if err == nil {
			return
		}
		if !errors.Is(err, consent.ErrNotFound) {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no certificate %s after 20 s; %d consent requests reached the service", id, consents.Load())
}

// retryStack serves a form whose snippet talks to the service through a
// proxy that, once failing is set, answers chunks of events 503 with
// Retry-After (readable: with the CORS header), as a service shedding load
// does, and counts the chunk requests.
type retryStack struct {
	base    *stack
	proxy   *httptest.Server
	pages   *httptest.Server
	failing atomic.Bool
	chunks  atomic.Int32
}

func newRetryStack(t *testing.T) *retryStack {
	s := &retryStack{base: newStack(t)}
	s.proxy = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/events") && s.failing.Load() {
			s.chunks.Add(1)
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Access-Control-Allow-Origin", r.Header.Get("Origin"))
			w.Header().Set("Access-Control-Expose-Headers", "Retry-After")
			w.Header().Set("Retry-After", "20")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		s.base.api.ServeHTTP(w, r)
	}))
	t.Cleanup(s.proxy.Close)
	page := strings.NewReplacer("{{SERVICE}}", s.proxy.URL, "{{BODY}}", withBox(""), "{{AFTER}}", "").Replace(evidencePage)
	s.pages = formPages(t, map[string]string{"/": page}, nil)
	if _, err := s.base.svc.AddProperty(context.Background(), consentkit.PropertyParams{ID: "evidence-form", CompanyID: "acme",
		Name: "Retry form", AllowedOrigins: []string{s.pages.URL}}); err != nil {
		t.Fatal(err)
	}
	return s
}

// Chunks are retried with backoff (docs/capture.md, D36), and not before
// the time a readable Retry-After asks for: the flush every second sends
// no chunk meanwhile.
func TestSnippetChunkRetriesBackOff(t *testing.T) {
	s := newRetryStack(t)
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(s.pages.URL+"/")); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[string](
		`(function(){var i=document.querySelector('input[name="consent_certificate_id"]');return i&&i.value?i.value:null})()`,
		chromedp.WithPollingTimeout(0))); err != nil {
		t.Fatal(err)
	}
	s.failing.Store(true)
	// Events keep coming: the pointer moves.
	if err := runScript(`setInterval(function () { document.body.dataset.n = String(Date.now()); }, 200)`)(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Second)
	// With the backoff (500 ms doubling) or Retry-After (20 s): at most 5
	// requests in 10 s.
	if n := s.chunks.Load(); n > 5 {
		t.Errorf("%d chunk requests in 10 s to a service answering 503 Retry-After: 20", n)
	}
}

// A page that checks its form itself (no `required`) cancels the submit
// when the box is not ticked. That cancelled attempt sends no consent; the
// consumer's real submission, after ticking the box by hand, sends it,
// opted in manual.
func TestSnippetCancelledSubmit(t *testing.T) {
	cases := []evidenceCase{
		{name: "validated", body: withBox(""), after: `<script>
document.querySelector("form").addEventListener("submit", function (e) {
  if (!document.getElementById("agree").checked) { e.preventDefault(); document.title = "tick the box"; }
});
</script>`, act: func(ctx context.Context) error {
			if err := clickOn("submit")(ctx); err != nil { // refused by the page: not ticked
				return err
			}
			return clickOn("agree")(ctx)
		}, check: optedIn("manual")},
	}
	s := newEvidenceStack(t, cases)
	ctx := browser(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, status := s.run(t, ctx, c)
			c.check(t, b, status)
		})
	}
}

// A page that already uses rrweb (its own session replay, window.rrweb)
// keeps it, and the snippet adds no global consentkitMeasure.
func TestSnippetLeavesPageGlobals(t *testing.T) {
	s := newStack(t, func(page string) string {
		return strings.Replace(page, "<script src=", `<script>window.rrweb = { record: function () {}, mine: true };</script>
<script src=`, 1)
	})
	ctx := browser(t)
	s.load(t, ctx)
	time.Sleep(1500 * time.Millisecond) // rrweb.js has loaded
	mine, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!!(window.rrweb && window.rrweb.mine)`))
	if err != nil {
		t.Fatal(err)
	}
	if !mine {
		t.Errorf("the page's window.rrweb was replaced by the snippet's")
	}
	measure, err := chromedp.Run(ctx, chromedp.Evaluate[string](`typeof window.consentkitMeasure`))
	if err != nil {
		t.Fatal(err)
	}
	if measure != "undefined" {
		t.Errorf("the snippet defines the global consentkitMeasure (%s)", measure)
	}
}

// Consent text as CMSs hold it, pasted from a word processor: a vertical
// tab (U+000B) where Word had a line break. The service refuses control
// characters in text (400), and the snippet does not retry a 400: it sends
// a space in its place, and the consent is issued.
func TestSnippetControlCharacterInText(t *testing.T) {
	cases := []evidenceCase{
		{name: "vertical-tab", body: `<p><label><input type="checkbox" name="agree" id="agree"> <span data-consent data-consent-types="tcpa">` +
			"I agree to be called\u000b by Acme.</span></label></p>", act: clickOn("agree"),
			check: func(t *testing.T, b *evidenceBody, status int) {
				if status != http.StatusCreated {
					t.Errorf("the service answered %d to the consent %q", status, b.Consents[0].Text)
				}
			}},
	}
	s := newEvidenceStack(t, cases)
	ctx := browser(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, status := s.run(t, ctx, c)
			c.check(t, b, status)
		})
	}
}

// A page that loads Prototype.js (1.6, still on many older lead forms)
// has Array.prototype.toJSON returning a string, so JSON.stringify writes
// every array as a quoted string, which the service refuses (400): the
// snippet writes its bodies without it, and the consent is issued.
func TestSnippetArrayToJSON(t *testing.T) {
	s := newStack(t, func(page string) string {
		return strings.Replace(page, "<script src=", `<script>
Array.prototype.toJSON = function () { // Prototype.js 1.6.0.3
  var out = []; for (var i = 0; i < this.length; i++) out.push(JSON.stringify(this[i]));
  return "[" + out.join(", ") + "]";
};
</script>
<script src=`, 1)
	})
	ctx := browser(t)
	certID := s.load(t, ctx)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("agree")), chromedp.Sleep(1500*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	s.submit(t, ctx)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		err := s.svc.Store().View(context.Background(), func(tx consent.Tx) error {
			_, err := tx.Certificate(context.Background(), certID)
			return err
		})
		if err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Errorf("no certificate %s on a page with Prototype.js's Array.prototype.toJSON", certID)
}

// issuedWithin reports whether certificate id is issued within d.
func issuedWithin(t *testing.T, s *stack, id string, d time.Duration) bool {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		err := s.svc.Store().View(context.Background(), func(tx consent.Tx) error {
			_, err := tx.Certificate(context.Background(), id)
			return err
		})
		if err == nil {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// rrweb.js is a UMD bundle: on a page with an AMD loader (RequireJS:
// define.amd) it would register a module instead of setting window.rrweb,
// and on a page where `exports` is an object — markup as plain as
// <div id="exports">, which the window's named access exposes — it would
// set exports.rrweb. Served wrapped (capture.RecorderScript), it records
// on such pages too, and the consent is issued.
func TestSnippetUMDConflicts(t *testing.T) {
	for name, head := range map[string]string{
		"amd":             `<script>window.define = function () {}; window.define.amd = {};</script>`,
		"exports-element": ``,
	} {
		t.Run(name, func(t *testing.T) {
			s := newStack(t, func(page string) string {
				page = strings.Replace(page, "<script src=", head+"\n<script src=", 1)
				if name == "exports-element" {
					page = strings.Replace(page, "<form ", `<div id="exports"></div><form `, 1)
				}
				return page
			})
			ctx := browser(t)
			certID := s.load(t, ctx)
			if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("agree")), chromedp.Sleep(2*time.Second)); err != nil {
				t.Fatal(err)
			}
			s.submit(t, ctx)
			if !issuedWithin(t, s, certID, 10*time.Second) {
				t.Errorf("no certificate %s", certID)
			}
		})
	}
}

// A page with two forms that each hold a consent (the usual mobile and
// desktop copies of one form, one of them display:none): each has
// consent_certificate_id, so the lead of whichever is submitted comes with
// the id of the certificate issued for it.
func TestSnippetTwoFormsHiddenInput(t *testing.T) {
	s := newStack(t, func(page string) string {
		return strings.Replace(page, "<form ", `<form method="post" action="/receive" style="display:none">
  <input type="email" name="email"><label><input type="checkbox" required>
  <span data-consent data-consent-types="tcpa">`+consentText+`</span></label><button type="submit">Go</button></form>
<form `, 1)
	})
	ctx := browser(t)
	reserved := s.fill(t, ctx)
	form := s.submit(t, ctx)
	if form.Get("consent_certificate_id") == "" {
		t.Errorf("the submitted form has no consent_certificate_id; certificate %s issued for it: %v",
			reserved, issuedWithin(t, s, reserved, 10*time.Second))
	}
}

// A form submitted by script, form.submit() (legacy forms, validation
// libraries' submit handlers), fires no submit event: the snippet sends
// the consent all the same, and the certificate whose id the lead posts is
// issued.
func TestSnippetScriptSubmit(t *testing.T) {
	s := newStack(t, func(page string) string {
		return strings.Replace(page, `<button type="submit" id="submit">`, `<button type="button" id="submit" onclick="HTMLFormElement.prototype.submit.call(this.form)">`, 1)
	})
	ctx := browser(t)
	reserved := s.fill(t, ctx)
	form := s.submit(t, ctx)
	if form.Get("consent_certificate_id") != reserved {
		t.Fatalf("posted id %q, reserved %q", form.Get("consent_certificate_id"), reserved)
	}
	if !issuedWithin(t, s, reserved, 10*time.Second) {
		t.Errorf("the lead posted certificate id %s, never issued", reserved)
	}
}

// An AJAX form cancels every submission and sends the form itself: its
// submission, complete and ticked, sends the consent though cancelled.
func TestSnippetAJAXForm(t *testing.T) {
	s := newStack(t, func(page string) string {
		return strings.Replace(page, "</body>", `<script>
document.querySelector("form").addEventListener("submit", function (e) {
  e.preventDefault();
  e.stopPropagation(); // as jQuery's return false does: the window never sees it
  fetch("/receive", { method: "POST", body: new URLSearchParams(new FormData(e.target)) });
});
</script></body>`, 1)
	})
	ctx := browser(t)
	reserved := s.fill(t, ctx)
	form := s.submit(t, ctx)
	if form.Get("consent_certificate_id") != reserved {
		t.Fatalf("posted id %q, reserved %q", form.Get("consent_certificate_id"), reserved)
	}
	if !issuedWithin(t, s, reserved, 10*time.Second) {
		t.Errorf("the AJAX form posted certificate id %s, never issued", reserved)
	}
}
