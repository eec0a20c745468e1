package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/internal/testwait"
)

// The consent text of the evidence pages: what the consumer can read, and
// the clause a page hides from them.
const (
	agreeText  = "I agree to be called by Acme."
	clauseText = "and I consent to autodialed calls from 500 partners"
)

// evidencePage is a form on another origin than the service, as formPage
// is; {{BODY}} is the case's consent markup, {{AFTER}} what follows the
// form. Listeners before and after the snippet's write how long the submit
// handlers took into the form.
const evidencePage = `<!doctype html>
<html><head><meta charset="utf-8"><title>Evidence</title>
<script>
window.addEventListener("submit", function () { window.__t0 = performance.now(); }, true);
window.addEventListener("submit", function (e) {
  e.target.elements.handlers_ms.value = String(performance.now() - window.__t0);
});
</script>
<script src="{{SERVICE}}/capture/capture.js" data-property-id="evidence-form" async></script>
</head>
<body style="margin:0; padding:20px; font: 16px sans-serif; background: #fff; color: #111">
<form method="post" action="/receive">
  <p><label>Email <input type="email" name="email" value="jane@example.com"></label></p>
  {{BODY}}
  <input type="hidden" name="handlers_ms" value="">
  <button type="submit" id="submit">Get my quote</button>
</form>
{{AFTER}}
</body></html>`

// A consent inside a label with its checkbox, the clause hidden by style.
func hiddenBy(style string) string {
	return `<p><label><input type="checkbox" name="agree" id="agree"> <span data-consent data-consent-types="tcpa">` +
		agreeText + ` <span style="` + style + `">` + clauseText + `</span></span></label></p>`
}

// withBox is a consent inside a label with a checkbox of the given attributes.
func withBox(attrs string) string {
	return `<p><label><input type="checkbox" name="agree" id="agree"` + attrs + `> <span data-consent data-consent-types="tcpa">` +
		agreeText + `</span></label></p>`
}

type evidenceVisibility struct {
	InViewport      bool     `json:"in_viewport"`
	Visible         bool     `json:"visible"`
	FontSizePx      float64  `json:"font_size_px"`
	TextColor       string   `json:"text_color"`
	BackgroundColor string   `json:"background_color"`
	ContrastRatio   float64  `json:"contrast_ratio"`
	HiddenText      []string `json:"hidden_text"`
}

type evidenceConsent struct {
	Text        string              `json:"text"`
	Types       []string            `json:"types"`
	Visibility  *evidenceVisibility `json:"visibility"`
	OptInMethod string              `json:"opt_in_method"`
}

// evidenceBody is the consent request the snippet sends.
type evidenceBody struct {
	Consents   []evidenceConsent   `json:"consents"`
	Email      string              `json:"email"`
	URL        string              `json:"url"`
	Visibility *evidenceVisibility `json:"visibility"`
	Seq        *int                `json:"seq"`
	Events     json.RawMessage     `json:"events"`
}

// consentPost is one consent request as the service got it.
type consentPost struct {
	body   []byte
	status int // the service's answer
}

type evidenceCase struct {
	name  string
	body  string // the consent markup, in the form
	after string // after the form
	// act, when set, runs once the page holds its certificate id.
	act   func(ctx context.Context) error
	check func(t *testing.T, b *evidenceBody, status int)
}

// evidenceStack serves the cases' pages, and the service through a
// handler that records the consent requests the snippet sends.
type evidenceStack struct {
	base     *stack
	pages    *httptest.Server // the forms
	proxy    *httptest.Server // the service, its consent requests recorded
	consents chan consentPost
	received chan string // handlers_ms of each submission the forms' receiver got
}

func newEvidenceStack(t *testing.T, cases []evidenceCase) *evidenceStack {
	t.Helper()
	s := &evidenceStack{base: newStack(t), consents: make(chan consentPost, 64), received: make(chan string, 64)}
	// The service, with the consent requests recorded on their way through:
	// the tests look at what the snippet sent, whatever the service answers.
	s.proxy = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/capture/sessions/") || !strings.HasSuffix(r.URL.Path, "/consent") {
			s.base.api.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		s.base.api.ServeHTTP(sw, r)
		select {
		case s.consents <- consentPost{body: body, status: sw.status}:
		default: // nobody waits for so many
		}
	}))
	t.Cleanup(s.proxy.Close)
	pages := map[string]string{}
	for _, c := range cases {
		pages["/"+c.name] = strings.NewReplacer("{{SERVICE}}", s.proxy.URL, "{{BODY}}", c.body, "{{AFTER}}", c.after).Replace(evidencePage)
	}
	s.pages = formPages(t, pages, func(r *http.Request) {
		if err := r.ParseForm(); err != nil {
			t.Errorf("the form's post: %v", err)
		}
		s.received <- r.PostForm.Get("handlers_ms")
	})
	if _, err := s.base.svc.AddProperty(context.Background(), consentkit.PropertyParams{ID: "evidence-form", CompanyID: "acme",
		Name: "Evidence forms", AllowedOrigins: []string{s.pages.URL}}); err != nil {
		t.Fatal(err)
	}
	return s
}

// run loads the case's page, waits for the snippet's session, acts,
// submits, and returns the consent request the snippet sent for the page.
func (s *evidenceStack) run(t *testing.T, ctx context.Context, c evidenceCase) (*evidenceBody, int) {
	t.Helper()
	page := s.pages.URL + "/" + c.name
	if resp, err := chromedp.RunResponse(ctx, chromedp.Navigate(page)); err != nil || resp.Status != http.StatusOK {
		t.Fatalf("loading %s: %v %v", page, err, resp)
	}
	// The snippet has its session once the page holds the reserved id. A
	// promise in the page waits for it; the page's default context is
	// asked afresh, since a poll may still hold the previous page's.
	var lastErr error
	if !testwait.Until(t, 20*time.Millisecond, func() bool {
		_, lastErr = chromedp.Run(ctx, chromedp.Evaluate[string](`new Promise(function (resolve) {
			(function check() {
				var i = document.querySelector('input[name="consent_certificate_id"]');
				if (i && i.value) resolve(i.value); else requestAnimationFrame(check);
			})();
		})`, chromedp.EvalAwaitPromise))
		return lastErr == nil || ctx.Err() != nil
	}) || lastErr != nil {
		t.Fatalf("the snippet never reserved a certificate: %v", lastErr)
	}
	if c.act != nil {
		if err := c.act(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// The click returns once the browser shows the receiver's answer: the
	// next case may navigate.
	if resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.ID("submit"))); err != nil || resp.Status != http.StatusOK {
		t.Fatalf("submitting the form: %v %v", err, resp)
	}
	near := testwait.Near(t)
	select {
	case ms := <-s.received:
		t.Logf("the submit handlers took %s ms", ms)
		if v, err := strconv.ParseFloat(ms, 64); err != nil || v < 0 {
			t.Errorf("submit handlers took %q ms: the listener after them did not run", ms)
		}
	case <-near:
		t.Fatal("the form's receiver never got the submission")
	}
	for {
		select {
		case p := <-s.consents:
			var b evidenceBody
			if err := json.Unmarshal(p.body, &b); err != nil {
				t.Fatalf("the consent request is not JSON: %v: %s", err, p.body)
			}
			if b.URL != page {
				continue // a retry from an earlier page
			}
			consents, _ := json.Marshal(b.Consents)
			t.Logf("consents sent (the service answered %d): %s", p.status, consents)
			return &b, p.status
		case <-near:
			t.Fatal("no consent request reached the service")
		}
	}
}

func clickOn(id string) func(context.Context) error {
	return func(ctx context.Context) error { return chromedp.Do(ctx, chromedp.Click(chromedp.ID(id))) }
}

func runScript(js string) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("("+js+", true)"))
		return err
	}
}

// one returns the request's only consent, after checking what every
// request must hold.
func one(t *testing.T, b *evidenceBody) evidenceConsent {
	t.Helper()
	checkBody(t, b)
	if len(b.Consents) != 1 {
		t.Fatalf("%d consents, want 1", len(b.Consents))
	}
	return b.Consents[0]
}

// checkBody checks what every consent request holds: a visibility with a
// hidden_text list for each consent, the first one's also at the top level.
func checkBody(t *testing.T, b *evidenceBody) {
	t.Helper()
	if len(b.Consents) == 0 {
		t.Fatal("no consents")
	}
	for i, c := range b.Consents {
		if c.Visibility == nil || c.Visibility.HiddenText == nil {
			t.Fatalf("consents[%d] has no visibility with hidden_text: %+v", i, c)
		}
		if c.Visibility.Visible && (len(c.Visibility.HiddenText) > 0 || c.Text == "") {
			t.Errorf("consents[%d] is visible with hidden text %q and text %q", i, c.Visibility.HiddenText, c.Text)
		}
	}
	if b.Visibility == nil || !slices.Equal(b.Visibility.HiddenText, b.Consents[0].Visibility.HiddenText) ||
		b.Visibility.Visible != b.Consents[0].Visibility.Visible || b.Visibility.FontSizePx != b.Consents[0].Visibility.FontSizePx ||
		b.Visibility.ContrastRatio != b.Consents[0].Visibility.ContrastRatio {
		t.Errorf("top-level visibility %+v is not the first consent's %+v", b.Visibility, b.Consents[0].Visibility)
	}
	if b.Email != "jane@example.com" {
		t.Errorf("email %q", b.Email)
	}
}

// hiddenClause checks a consent whose clause the page hid: listed as
// hidden, left out of the text, and the consent not visible.
func hiddenClause(t *testing.T, b *evidenceBody, _ int) {
	t.Helper()
	c := one(t, b)
	if !slices.Equal(c.Visibility.HiddenText, []string{clauseText}) {
		t.Errorf("hidden_text %q, want [%q]", c.Visibility.HiddenText, clauseText)
	}
	if c.Text != agreeText || strings.Contains(c.Text, "autodialed") {
		t.Errorf("text %q, want only the visible %q", c.Text, agreeText)
	}
	if c.Visibility.Visible {
		t.Errorf("visible is true for a consent with hidden text")
	}
}

// visibleConsent checks a consent shown whole, with the opt-in method want.
func visibleConsent(want, method string) func(*testing.T, *evidenceBody, int) {
	return func(t *testing.T, b *evidenceBody, _ int) {
		t.Helper()
		c := one(t, b)
		if c.Text != want || !c.Visibility.Visible || len(c.Visibility.HiddenText) != 0 || !c.Visibility.InViewport {
			t.Errorf("consent %q %+v, want %q visible in the viewport with nothing hidden", c.Text, *c.Visibility, want)
		}
		if c.OptInMethod != method {
			t.Errorf("opt_in_method %q, want %q", c.OptInMethod, method)
		}
	}
}

func optedIn(want string) func(*testing.T, *evidenceBody, int) {
	return visibleConsent(agreeText, want)
}

// What the snippet sends with a consent is what the consumer could read:
// text hidden in any of the ways a page can hide it is listed as hidden and
// left out of the text, each marked element is measured on its own, and
// each consent says how its checkbox came to be ticked.
func TestEvidence(t *testing.T) {
	cases := []evidenceCase{
		{name: "plain", body: `<p><label><input type="checkbox" name="agree" id="agree">
			<span data-consent data-consent-types="tcpa,marketing">` + consentText + `</span></label></p>`,
			act: clickOn("agree"),
			check: func(t *testing.T, b *evidenceBody, status int) {
				visibleConsent(consentText, "manual")(t, b, status)
				c := one(t, b)
				if v := c.Visibility; v.FontSizePx != 16 || v.ContrastRatio < 15 || v.TextColor != "rgb(17, 17, 17)" ||
					v.BackgroundColor != "rgb(255, 255, 255)" || !slices.Equal(c.Types, []string{"tcpa", "marketing"}) {
					t.Errorf("consent %+v %+v", c, *v)
				}
				if status != http.StatusCreated {
					t.Errorf("the service answered %d to the consent: it no longer takes what the snippet sends", status)
				}
			}},
		{name: "opacity", body: hiddenBy("opacity:0"), check: hiddenClause},
		{name: "visibility-hidden", body: hiddenBy("visibility:hidden"), check: hiddenClause},
		{name: "display-none", body: hiddenBy("display:none"), check: hiddenClause},
		{name: "zero-size", body: hiddenBy("display:inline-block;width:0;height:0;overflow:hidden"), check: hiddenClause},
		{name: "overflow-clipped", body: `<div data-consent data-consent-types="tcpa" style="height:1.5em;line-height:1.5em;overflow:hidden">` +
			`<div>` + agreeText + `</div><div>` + clauseText + `</div></div>`, check: hiddenClause},
		// One text node, its second line clipped: measured word by word.
		{name: "line-clipped", body: `<div data-consent data-consent-types="tcpa" style="white-space:pre-line;height:1.5em;line-height:1.5em;overflow:hidden">` +
			agreeText + "\n" + clauseText + `</div>`, check: hiddenClause},
		{name: "off-screen", body: hiddenBy("position:absolute;left:-9999px"), check: hiddenClause},
		// In a page that scrolls in its body, what the body's scrolling
		// cannot reach.
		{name: "off-screen-in-scroller", body: `<style>html { height: 100%; overflow: hidden } body { height: 100%; overflow: auto; box-sizing: border-box }</style>` +
			hiddenBy("position:absolute;left:-9999px"), check: hiddenClause},
		{name: "font-2px", body: hiddenBy("font-size:2px"), check: hiddenClause},
		{name: "scaled-down", body: hiddenBy("display:inline-block;transform:scale(0.1)"), check: hiddenClause},
		// Lines 3.5 px tall are drawn, but in type under 4 px.
		{name: "font-3.5px", body: hiddenBy("font-size:3.5px"), check: hiddenClause},
		{name: "near-white", body: hiddenBy("color:#fefefe"), check: hiddenClause},
		// Over an image, where contrast cannot be told, opacity alone.
		{name: "opacity-on-gradient", body: `<div style="background-image:linear-gradient(#003,#036);color:#fff;padding:8px">` +
			hiddenBy("opacity:0") + `</div>`, check: hiddenClause},
		{name: "covered", body: hiddenBy("display:inline-block\" id=\"clause"), after: `<script>
(function () {
  var r = document.getElementById("clause").getBoundingClientRect(), d = document.createElement("div");
  d.style.cssText = "position:absolute;background:#fff;left:" + (r.left + scrollX - 2) + "px;top:" + (r.top + scrollY - 2) +
    "px;width:" + (r.width + 4) + "px;height:" + (r.height + 4) + "px";
  document.body.appendChild(d);
})();
</script>`, check: hiddenClause},
		{name: "two-fragments", body: `<p><span data-consent data-consent-types="tcpa">` + agreeText +
			` <span style="opacity:0">and I consent</span><span style="opacity:0"> to autodialed calls</span> <span style="font-size:1px">from 500 partners</span></span></p>`,
			check: func(t *testing.T, b *evidenceBody, _ int) {
				c := one(t, b)
				want := []string{"and I consent", "to autodialed calls", "from 500 partners"}
				if !slices.Equal(c.Visibility.HiddenText, want) || c.Text != agreeText || c.Visibility.Visible {
					t.Errorf("consent %q %+v, want text %q with hidden_text %q", c.Text, *c.Visibility, agreeText, want)
				}
			}},
		{name: "two-elements", body: withBox("") + `<p data-consent data-consent-types="marketing" style="font-size:1px;color:#fefefe">` +
			`I agree to marketing calls from 500 partners.</p>`, act: clickOn("agree"),
			check: func(t *testing.T, b *evidenceBody, _ int) {
				checkBody(t, b)
				if len(b.Consents) != 2 {
					t.Fatalf("%d consents, want 2", len(b.Consents))
				}
				fine, tiny := b.Consents[0], b.Consents[1]
				if fine.Text != agreeText || !fine.Visibility.Visible || len(fine.Visibility.HiddenText) != 0 ||
					fine.Visibility.FontSizePx != 16 || fine.OptInMethod != "manual" {
					t.Errorf("the first consent: %+v %+v", fine, *fine.Visibility)
				}
				if tiny.Text != "" || tiny.Visibility.Visible || tiny.Visibility.FontSizePx != 1 || tiny.Visibility.ContrastRatio > 1.01 ||
					!slices.Equal(tiny.Visibility.HiddenText, []string{"I agree to marketing calls from 500 partners."}) ||
					!slices.Equal(tiny.Types, []string{"marketing"}) || tiny.OptInMethod != "none" {
					t.Errorf("the second consent, at 1 px #fefefe: %+v %+v", tiny, *tiny.Visibility)
				}
			}},
		// Visible text that only looks hidden to a careless measure: a
		// transparent input over its label, links and bold inside it.
		{name: "overlaid-input", body: `<p style="position:relative"><input type="checkbox" name="agree" id="agree"
			style="position:absolute;left:0;top:0;width:100%;height:100%;margin:0;opacity:0"><label for="agree" data-consent
			data-consent-types="tcpa">I agree to <a href="#">be called</a>  by <b>Acme</b>.</label></p>`,
			act: clickOn("agree"), check: optedIn("manual")},
		{name: "light-on-dark", body: `<div style="background:rgba(0,0,0,0.85);color:#fff;padding:8px">` +
			`<span data-consent data-consent-types="tcpa">` + agreeText + `</span></div>`, check: optedIn("none")},
		// Over an image the snippet cannot tell the colour: not hidden.
		{name: "light-on-gradient", body: `<div style="background-image:linear-gradient(#003,#036);color:#fff;padding:8px">` +
			`<span data-consent data-consent-types="tcpa">` + agreeText + `</span></div>`, check: optedIn("none")},
		// A page that scrolls in its body, not its viewport: the consent,
		// scrolled past on the way to the button, is above the viewport.
		{name: "scrolled-past", body: `<style>html { height: 100%; overflow: hidden } body { height: 100%; overflow: auto; box-sizing: border-box }</style>` +
			withBox("") + `<div style="height:3000px"></div>`, act: clickOn("agree"),
			check: func(t *testing.T, b *evidenceBody, _ int) {
				c := one(t, b)
				if c.Text != agreeText || !c.Visibility.Visible || len(c.Visibility.HiddenText) != 0 || c.Visibility.InViewport || c.OptInMethod != "manual" {
					t.Errorf("consent %q %+v %s, want it visible, out of the viewport", c.Text, *c.Visibility, c.OptInMethod)
				}
			}},
		{name: "pre-ticked", body: withBox(" checked"), check: optedIn("pre_selected")},
		{name: "hand-ticked", body: withBox(""), act: clickOn("agree"), check: optedIn("manual")},
		{name: "script-ticked", body: withBox(""), act: runScript(`document.getElementById("agree").checked = true`), check: optedIn("scripted")},
		{name: "script-clicked", body: withBox(""), act: runScript(`document.getElementById("agree").click()`), check: optedIn("scripted")},
		{name: "hand-unticked", body: withBox(" checked"), act: clickOn("agree"), check: optedIn("unchecked")},
		{name: "retick-by-script", body: withBox(" checked"), act: func(ctx context.Context) error {
			if err := clickOn("agree")(ctx); err != nil {
				return err
			}
			return runScript(`document.getElementById("agree").checked = true`)(ctx)
		}, check: optedIn("scripted")},
		{name: "named-checkbox", body: `<p><input type="checkbox" name="agree" id="tick"> <span data-consent data-consent-types="tcpa"
			data-consent-checkbox="tick">` + agreeText + `</span></p>`, act: clickOn("tick"), check: optedIn("manual")},
		{name: "no-checkbox", body: `<p><span data-consent data-consent-types="tcpa">` + agreeText + `</span></p>`, check: optedIn("none")},
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

// formPages serves pages by path, and answers the forms' POST /receive
// with a thank-you page after receive (nil: nothing else). It stops at the
// test's end.
func formPages(t *testing.T, pages map[string]string, receive func(*http.Request)) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/receive" {
			if receive != nil {
				receive(r)
			}
			_, _ = io.WriteString(w, "<!doctype html><p>Thank you.</p>")
			return
		}
		page, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, page) // a browser gone: the test fails waiting for it
	}))
	t.Cleanup(srv.Close)
	return srv
}
