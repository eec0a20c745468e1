package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/testwait"
	"github.com/consentkit/consentkit/retain/mp4"
)

// attestPage is one form of the attestation tests: evidencePage with body
// as its consent markup and after after the form; act, when set, runs once
// the recording has started.
type attestPage struct {
	name, body, after string
	act               func(ctx context.Context) error
}

// attestConsent is one consent as the snippet sent it, node_id kept as the
// JSON it was.
type attestConsent struct {
	Text       string             `json:"text"`
	Visibility evidenceVisibility `json:"visibility"`
	NodeID     json.RawMessage    `json:"node_id"`
}

// attested is what one submission left: the consents the snippet sent,
// the certificate issued for them and the session's recording.
type attested struct {
	consents  []attestConsent
	cert      *consent.Certificate
	recording json.RawMessage
}

// attestStack serves the pages, and the service through a proxy that
// keeps the body of each consent request and notes when the service has
// stored a chunk holding a full snapshot.
type attestStack struct {
	base     *stack
	pages    *httptest.Server
	proxy    *httptest.Server
	consents chan []byte
	snapshot atomic.Bool
}

func newAttestStack(t *testing.T, pages []attestPage) *attestStack {
	t.Helper()
	s := &attestStack{base: newStack(t), consents: make(chan []byte, 64)}
	s.proxy = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/capture/sessions/") {
			s.base.api.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		s.base.api.ServeHTTP(sw, r)
		switch {
		case strings.HasSuffix(r.URL.Path, "/consent"):
			select {
			case s.consents <- body:
			default: // nobody waits for so many
			}
		case strings.HasSuffix(r.URL.Path, "/events") && sw.status/100 == 2 && bytes.Contains(body, []byte(`"type":2,`)):
			s.snapshot.Store(true)
		}
	}))
	t.Cleanup(s.proxy.Close)
	served := map[string]string{}
	for _, p := range pages {
		served["/"+p.name] = strings.NewReplacer("{{SERVICE}}", s.proxy.URL, "{{BODY}}", p.body, "{{AFTER}}", p.after).Replace(evidencePage)
	}
	s.pages = formPages(t, served, nil)
	if _, err := s.base.svc.AddProperty(context.Background(), consentkit.PropertyParams{ID: "evidence-form", CompanyID: "acme",
		Name: "Attested forms", AllowedOrigins: []string{s.pages.URL}}); err != nil {
		t.Fatal(err)
	}
	return s
}

// run loads the page, waits until the service holds the recording's full
// snapshot, acts, submits, and returns what the submission left.
func (s *attestStack) run(t *testing.T, ctx context.Context, p attestPage) attested {
	t.Helper()
	s.snapshot.Store(false)
	url := s.pages.URL + "/" + p.name
	if resp, err := chromedp.RunResponse(ctx, chromedp.Navigate(url)); err != nil || resp.Status != http.StatusOK {
		t.Fatalf("loading %s: %v %v", url, err, resp)
	}
	var certID string
	var lastErr error
	if !testwait.Until(t, 20*time.Millisecond, func() bool {
		certID, lastErr = chromedp.Run(ctx, chromedp.Evaluate[string](`new Promise(function (resolve) {
			(function check() {
				var i = document.querySelector('input[name="consent_certificate_id"]');
				if (i && i.value) resolve(i.value); else requestAnimationFrame(check);
			})();
		})`, chromedp.EvalAwaitPromise))
		return lastErr == nil || ctx.Err() != nil
	}) || lastErr != nil {
		t.Fatalf("the snippet never reserved a certificate: %v", lastErr)
	}
	// The recorder runs, and the recording's start is stored, once a chunk
	// with the full snapshot has gone through (one a second).
	if !testwait.Until(t, 20*time.Millisecond, s.snapshot.Load) {
		t.Fatal("no chunk with the full snapshot reached the service")
	}
	if p.act != nil {
		if err := p.act(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.ID("submit"))); err != nil || resp.Status != http.StatusOK {
		t.Fatalf("submitting the form: %v %v", err, resp)
	}
	var out attested
	near := testwait.Near(t)
	for out.consents == nil {
		select {
		case raw := <-s.consents:
			var b struct {
				Consents []attestConsent `json:"consents"`
				URL      string          `json:"url"`
			}
			if err := json.Unmarshal(raw, &b); err != nil {
				t.Fatalf("the consent request is not JSON: %v: %s", err, raw)
			}
			if b.URL == url {
				out.consents = b.Consents
				t.Logf("consent request: %s", bytes.TrimSpace(raw[:min(len(raw), 2000)]))
			}
		case <-near:
			t.Fatal("no consent request reached the service")
		}
	}
	out.cert = waitCertificate(t, s.base.svc, certID)
	var err error
	if out.recording, err = s.base.svc.Recording(context.Background(), out.cert.SessionID); err != nil {
		t.Fatal(err)
	}
	return out
}

// nodeIDOf returns the consent's node_id, failing t unless the snippet sent
// a positive integer.
func nodeIDOf(t *testing.T, c attestConsent) int {
	t.Helper()
	id, err := strconv.Atoi(string(c.NodeID))
	if err != nil || id <= 0 {
		t.Fatalf("node_id %s, want a positive integer", c.NodeID)
	}
	return id
}

// recordedNode returns the node that the recording names id, from its
// full snapshots and the nodes its mutations add (the last one given that
// id), or nil.
func recordedNode(t *testing.T, recording json.RawMessage, id int) map[string]any {
	t.Helper()
	var events []struct {
		Type int `json:"type"`
		Data struct {
			Node   map[string]any `json:"node"`
			Source *int           `json:"source"`
			Adds   []struct {
				Node map[string]any `json:"node"`
			} `json:"adds"`
		} `json:"data"`
	}
	if err := json.Unmarshal(recording, &events); err != nil {
		t.Fatalf("the recording: %v", err)
	}
	var found map[string]any
	var walk func(n map[string]any)
	walk = func(n map[string]any) {
		if n == nil {
			return
		}
		if v, ok := n["id"].(float64); ok && int(v) == id {
			found = n
		}
		kids, _ := n["childNodes"].([]any)
		for _, k := range kids {
			m, _ := k.(map[string]any)
			walk(m)
		}
	}
	for _, e := range events {
		switch {
		case e.Type == 2:
			walk(e.Data.Node)
		case e.Type == 3 && e.Data.Source != nil && *e.Data.Source == 0:
			for _, a := range e.Data.Adds {
				walk(a.Node)
			}
		}
	}
	return found
}

// The snippet sends with each consent its element's id in the recording
// (node_id, rrweb's mirror id), by which a replay finds the element: a
// positive integer that names, in the recording the service keeps, the
// element marked data-consent.
func TestSnippetNodeID(t *testing.T) {
	pages := []attestPage{
		{name: "two", body: withBox("") + `<p data-consent data-consent-types="marketing">I agree to marketing calls.</p>`,
			act: clickOn("agree")},
	}
	s := newAttestStack(t, pages)
	ctx := browser(t)
	got := s.run(t, ctx, pages[0])
	if len(got.consents) != 2 {
		t.Fatalf("%d consents, want 2", len(got.consents))
	}
	seen := map[int]bool{}
	for i, c := range got.consents {
		id := nodeIDOf(t, c)
		if seen[id] {
			t.Errorf("consents[%d] has node_id %d, as an earlier one does", i, id)
		}
		seen[id] = true
		n := recordedNode(t, got.recording, id)
		attrs, _ := n["attributes"].(map[string]any)
		if _, marked := attrs["data-consent"]; n == nil || !marked {
			t.Errorf("consents[%d]: node %d of the recording is %v, not an element marked data-consent", i, id, n)
		}
		if got.cert.Records[i].NodeID != id {
			t.Errorf("the certificate's record %d has node id %d, the snippet sent %d", i, got.cert.Records[i].NodeID, id)
		}
	}
}

// attestor returns a video converter, whose Attest replays recordings;
// the test is skipped, saying why, when a tool is missing (except in CI).
func attestor(t *testing.T) *mp4.Converter {
	t.Helper()
	tmp, err := os.MkdirTemp("", "cke2a")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(tmp) }) // best effort: Close removed what the browsers made
	conv, err := mp4.New(mp4.Config{Replayer: rrwebDir, TempDir: tmp})
	var missing *mp4.MissingError
	if errors.As(err, &missing) && os.Getenv("CI") != "true" {
		t.Skipf("attestation test skipped: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := conv.Close(); err != nil {
			t.Errorf("close the converter: %v", err)
		}
	})
	return conv
}

// viewportOf returns the viewport of the recording's first meta event.
func viewportOf(t *testing.T, recording json.RawMessage) (int, int) {
	t.Helper()
	var events []struct {
		Type int `json:"type"`
		Data struct{ Width, Height int }
	}
	if err := json.Unmarshal(recording, &events); err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		if e.Type == 4 {
			return e.Data.Width, e.Data.Height
		}
	}
	t.Fatal("the recording has no meta event")
	return 0, 0
}

// The server measures what the consumer saw by replaying the recording
// to the consent moment: forms recorded through the real snippet in
// headless Chromium, attested at the certificate's opt-in time with the
// node ids the snippet sent, measure as the snippet did — an honest
// consent visible with the same text, a clause hidden by opacity hidden
// in the replay too — with a screenshot of the viewport; a node the
// recording lacks is not found, and a stylesheet the recorder could only
// link to is listed as unreproducible.
func TestAttest(t *testing.T) {
	// A stylesheet of another origin, without CORS: the recorder cannot
	// read it, so the recording links to it.
	css := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/css")
		_, _ = io.WriteString(w, "label { font-weight: bold }") // a browser gone: the test fails waiting for it
	}))
	t.Cleanup(css.Close)
	sheet := css.URL + "/site.css"
	pages := []attestPage{
		{name: "honest", body: withBox(""), act: clickOn("agree")},
		{name: "hidden", body: hiddenBy("opacity:0"), act: clickOn("agree")},
		{name: "linked", body: `<link rel="stylesheet" href="` + sheet + `">` + withBox(""), act: clickOn("agree")},
	}
	s := newAttestStack(t, pages)
	ctx := browser(t)
	conv := attestor(t)
	const missing = 1 << 30
	for _, p := range pages {
		t.Run(p.name, func(t *testing.T) {
			got := s.run(t, ctx, p)
			if len(got.consents) != 1 {
				t.Fatalf("%d consents, want 1", len(got.consents))
			}
			sent := got.consents[0]
			at := got.cert.Records[0].OptInAt.UnixMilli()
			a, err := conv.Attest(context.Background(), got.recording, at, []int{nodeIDOf(t, sent), missing})
			if err != nil {
				t.Fatal(err)
			}
			m := a.Consents[0]
			t.Logf("replayed: %+v; unreproducible %q", m, a.Unreproducible)
			v := sent.Visibility
			if !m.Found || m.Text != sent.Text || m.Visible != v.Visible || m.InViewport != v.InViewport ||
				!slices.Equal(m.HiddenText, v.HiddenText) || m.FontSizePx != v.FontSizePx || m.ContrastRatio != v.ContrastRatio ||
				m.TextColor != v.TextColor || m.BackgroundColor != v.BackgroundColor {
				t.Errorf("the replay measured %+v; the snippet sent %q %+v", m, sent.Text, v)
			}
			switch p.name {
			case "hidden":
				if m.Visible || m.Text != agreeText || !slices.Equal(m.HiddenText, []string{clauseText}) {
					t.Errorf("the hidden clause: replayed %+v, want %q hidden", m, clauseText)
				}
			default:
				if !m.Visible || m.Text != agreeText {
					t.Errorf("the honest consent: replayed %+v, want %q visible", m, agreeText)
				}
			}
			if a.Consents[1].NodeID != missing || a.Consents[1].Found {
				t.Errorf("a node the recording lacks: %+v, want Found false", a.Consents[1])
			}
			if linked := slices.Contains(a.Unreproducible, "stylesheet "+sheet); linked != (p.name == "linked") {
				t.Errorf("Unreproducible %q: lists %s %v", a.Unreproducible, sheet, linked)
			}
			width, height := viewportOf(t, got.recording)
			img, err := png.Decode(bytes.NewReader(a.Screenshot))
			if err != nil {
				t.Fatalf("the screenshot is not a PNG: %v", err)
			}
			if b := img.Bounds(); b.Dx() != width || b.Dy() != height {
				t.Errorf("the screenshot is %dx%d, the recording's viewport %dx%d", b.Dx(), b.Dy(), width, height)
			}
		})
	}
}
