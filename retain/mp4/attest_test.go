package mp4_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/consentkit/consentkit/capture"
	"github.com/consentkit/consentkit/retain/mp4"
)

// attestPage holds one consent element per way of showing or hiding a
// clause; data-case names each. site.css (same origin) makes .tiny 2 px
// type, which the recorder inlines; ghost.css comes from another origin
// without CORS, so the recorder can only link to it, and the replay cannot
// load it: it hides .ghost in the live page alone.
const attestPage = `<!doctype html>
<html><head><meta charset="utf-8"><title>Attest</title>
<link rel="stylesheet" href="/site.css">
<link rel="stylesheet" href="{{OTHER}}/ghost.css">
</head>
<body style="margin:0; padding:20px; font: 16px sans-serif; background: #fff; color: #111">
<p><label><input type="checkbox" id="agree"> <span data-consent data-case="plain">I agree to be called by Acme.</span></label></p>
<p><span data-consent data-case="opacity">I agree to be called by Acme. <span style="opacity:0">and I consent to autodialed calls</span></span></p>
<p><span data-consent data-case="display">I agree. <span style="display:none">and to calls from 500 partners</span></span></p>
<p><span data-consent data-case="tiny">I agree. <span class="tiny">and to calls from 500 partners</span></span></p>
<p style="color:#fff; background:#123">I agree, <span data-consent data-case="light-on-dark">in white on dark blue.</span></p>
<p><span data-consent data-case="covered">I agree. <span id="clause" style="display:inline-block">and to calls from 500 partners</span></span></p>
<p><span data-consent data-case="changed">Nothing yet.</span></p>
<p><span data-consent data-case="ghost">I agree. <span class="ghost">and to calls from 500 partners</span></span></p>
<div style="height:2000px"></div>
<p><span data-consent data-case="below">I agree, far below the fold.</span></p>
</body></html>`

// attestAct is what the session does once recorded: a tick, a text
// changed and a clause covered by a script, as mutations of the recording.
const attestAct = `(function () {
  document.querySelector('[data-case="changed"]').textContent = 'I agree, as a script wrote.';
  var r = document.getElementById('clause').getBoundingClientRect(), d = document.createElement('div');
  d.style.cssText = 'position:absolute;background:#fff;left:' + (r.left + scrollX - 2) + 'px;top:' + (r.top + scrollY - 2) +
    'px;width:' + (r.width + 4) + 'px;height:' + (r.height + 4) + 'px';
  document.body.appendChild(d);
  return true;
})()`

// liveConsent is a consent element as the snippet's measure saw it in the
// live page.
type liveConsent struct {
	Case       string `json:"case"`
	NodeID     int    `json:"node_id"`
	Text       string `json:"text"`
	Visibility struct {
		InViewport      bool     `json:"in_viewport"`
		Visible         bool     `json:"visible"`
		FontSizePx      float64  `json:"font_size_px"`
		TextColor       string   `json:"text_color"`
		BackgroundColor string   `json:"background_color"`
		ContrastRatio   float64  `json:"contrast_ratio"`
		HiddenText      []string `json:"hidden_text"`
	} `json:"visibility"`
}

// measureLive measures every consent element of the page with the
// snippet's measure, and returns the time of the measure on the clock of
// rrweb's timestamps.
const measureLive = `(function () {
  const measure = (function () {
` + "%s" + `
    return consentkitMeasure;
  })();
  const page = {};
  const consents = Array.from(document.querySelectorAll('[data-consent]')).map(function (el) {
    const m = measure(el, window, page);
    return { case: el.dataset.case, node_id: rrweb.record.mirror.getId(el), text: m.text, visibility: m.visibility };
  });
  return JSON.stringify({ at: Date.now(), consents: consents });
})()`

// recordPage records url in a headless Chromium with rrweb's recorder at a
// viewport of width×height, runs act in the page, and measures the consent
// elements live. It returns the recording, the time of the measure and
// the measures.
func recordPage(t *testing.T, url string, width, height int, act string) (json.RawMessage, int64, []liveConsent) {
	t.Helper()
	bundle, err := os.ReadFile(filepath.Join(replayer, "rrweb.umd.min.cjs"))
	if err != nil {
		t.Fatal(err) // converter() has checked that it is there
	}
	chromium := "/usr/lib/chromium/chromium"
	if _, err := os.Stat(chromium); err != nil {
		if chromium, err = exec.LookPath("chromium"); err != nil {
			t.Skip("attestation test skipped: no Chromium to record a page with (apt-get install chromium)")
		}
	}
	dir, err := os.MkdirTemp("", "ckat")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) }) // best effort: a browser may still write there
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium),
		chromedp.UserDataDir(filepath.Join(dir, "profile")), chromedp.Env("TMPDIR="+dir),
		chromedp.Flag("disable-gpu", true), chromedp.Flag("font-render-hinting", "none"))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	browserCtx, cancel := chromedp.NewContext(alloc, chromedp.WithLogf(func(string, ...any) {}))
	defer cancel()
	ctx, stop := untilDeadline(t, browserCtx)
	defer stop()
	if _, err := chromedp.Call(ctx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
		Width: int64(width), Height: int64(height), DeviceScaleFactor: 1,
	}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("load %s: %v", url, err)
	}
	if err := chromedp.Do(ctx,
		chromedp.Evaluate[chromedp.Void](string(bundle)+"\n;true"),
		chromedp.Evaluate[chromedp.Void](`window.__events = []; window.__stop = rrweb.record({ emit(e) { __events.push(e); } }); true`),
		chromedp.Click(chromedp.ID("agree")),
		chromedp.Evaluate[chromedp.Void](act),
	); err != nil {
		t.Fatalf("record %s: %v", url, err)
	}
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(measureLive, capture.MeasureJS)))
	if err != nil {
		t.Fatalf("measure the live page: %v", err)
	}
	var live struct {
		At       int64         `json:"at"`
		Consents []liveConsent `json:"consents"`
	}
	if err := json.Unmarshal([]byte(raw), &live); err != nil {
		t.Fatal(err)
	}
	events, err := chromedp.Run(ctx, chromedp.Evaluate[string](`__stop(); JSON.stringify(__events)`))
	if err != nil {
		t.Fatalf("collect the events: %v", err)
	}
	closeCtx, stopClose := context.WithTimeout(browserCtx, 10*time.Second)
	defer stopClose()
	_ = chromedp.Cancel(closeCtx) // the allocator kills it otherwise
	return json.RawMessage(events), live.At, live.Consents
}

// attestServers serves attestPage and site.css, and ghost.css from
// another origin.
func attestServers(t *testing.T) (page, other string) {
	t.Helper()
	ghost := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/css")
		_, _ = io.WriteString(w, ".ghost { opacity: 0 }") // a browser gone: the test fails on what it lacks
	}))
	t.Cleanup(ghost.Close)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/site.css" {
			w.Header().Set("Content-Type", "text/css")
			_, _ = io.WriteString(w, ".tiny { font-size: 2px }") // as above
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, strings.ReplaceAll(attestPage, "{{OTHER}}", ghost.URL)) // as above
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/", ghost.URL
}

// checkPNG checks that shot is a PNG of width×height that shows something.
func checkPNG(t *testing.T, shot []byte, width, height int) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("the screenshot is not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() != width || b.Dy() != height {
		t.Errorf("the screenshot is %dx%d, want the viewport's %dx%d", b.Dx(), b.Dy(), width, height)
	}
	colors := map[[4]uint32]bool{}
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y && len(colors) < 2; y += 3 {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X && len(colors) < 2; x += 3 {
			r, g, b, a := img.At(x, y).RGBA()
			colors[[4]uint32{r, g, b, a}] = true
		}
	}
	if len(colors) < 2 {
		t.Errorf("the screenshot is of one colour")
	}
}

// The replay measures what the live page measured, with the snippet's own
// code: visible text, hidden clauses (by inline style, by an inlined
// stylesheet, covered by an element a script added), colours, font size,
// the viewport; a mutation is replayed before the consent moment. The one
// difference is the clause that only a stylesheet of another origin hid:
// the replay cannot load it, and says so in Unreproducible.
func TestAttestMeasuresAsTheSnippet(t *testing.T) {
	c, tmp := converter(t, mp4.Config{})
	url, other := attestServers(t)
	const width, height = 801, 601 // odd: the viewport is the recording's to the pixel
	events, at, live := recordPage(t, url, width, height, attestAct)
	var nodes []int
	for _, l := range live {
		nodes = append(nodes, l.NodeID)
	}
	const missing = 1 << 30
	nodes = append(nodes, missing)
	// Twice: the second in the browser the first left warm.
	for round := range 2 {
		a, err := c.Attest(context.Background(), events, at, nodes)
		if err != nil {
			t.Fatal(err)
		}
		if len(a.Consents) != len(nodes) {
			t.Fatalf("%d measures for %d nodes", len(a.Consents), len(nodes))
		}
		for i, l := range live {
			m := a.Consents[i]
			if m.NodeID != l.NodeID || !m.Found {
				t.Errorf("%s: node %d not found (%+v)", l.Case, l.NodeID, m)
				continue
			}
			replayed := fmt.Sprintf("%q visible=%v in_viewport=%v %gpx %s on %s (%.2f) hidden %q", m.Text, m.Visible, m.InViewport,
				m.FontSizePx, m.TextColor, m.BackgroundColor, m.ContrastRatio, m.HiddenText)
			v := l.Visibility
			seen := fmt.Sprintf("%q visible=%v in_viewport=%v %gpx %s on %s (%.2f) hidden %q", l.Text, v.Visible, v.InViewport,
				v.FontSizePx, v.TextColor, v.BackgroundColor, v.ContrastRatio, v.HiddenText)
			if round == 0 {
				t.Logf("%s: live %s", l.Case, seen)
			}
			if l.Case == "ghost" {
				// Hidden live by ghost.css, which the replay has not.
				if v.Visible || !m.Visible || !slices.Equal(v.HiddenText, []string{"and to calls from 500 partners"}) {
					t.Errorf("ghost: live %s, replayed %s; want hidden live, visible replayed", seen, replayed)
				}
				continue
			}
			if replayed != seen {
				t.Errorf("%s: replayed %s, live %s", l.Case, replayed, seen)
			}
		}
		if m := a.Consents[len(live)]; m.NodeID != missing || m.Found {
			t.Errorf("a node that the recording lacks: %+v, want Found false", m)
		}
		if want := "stylesheet " + other + "/ghost.css"; !slices.Contains(a.Unreproducible, want) {
			t.Errorf("Unreproducible %q lacks %q", a.Unreproducible, want)
		}
		for _, u := range a.Unreproducible {
			if strings.Contains(u, "site.css") {
				t.Errorf("Unreproducible lists the inlined stylesheet: %q", u)
			}
		}
		checkPNG(t, a.Screenshot, width, height)
	}
	// Each case is what the page says it is, so that the comparison
	// above covers what it claims.
	want := map[string]bool{"plain": true, "light-on-dark": true, "changed": true, "below": true, "ghost": false}
	for _, l := range live {
		if visible, ok := want[l.Case]; ok && l.Visibility.Visible != visible || !ok && (l.Visibility.Visible || len(l.Visibility.HiddenText) != 1) {
			t.Errorf("the live page's %s consent: %+v", l.Case, l)
		}
		if l.Case == "changed" && l.Text != "I agree, as a script wrote." || l.Case == "below" && l.Visibility.InViewport {
			t.Errorf("the live page's %s consent: %+v", l.Case, l)
		}
	}
	// Attestations share the converter's browsers with conversions.
	if _, err := c.Convert(context.Background(), events, filepath.Join(t.TempDir(), "v.mp4")); err != nil {
		t.Fatal(err)
	}
	if n := c.BrowsersStarted(); n != 1 {
		t.Errorf("%d browsers started, want 1 kept warm", n)
	}
	checkClean(t, c, tmp)
}

// What the recording only links to is listed, whether or not it changes
// the consent: a stylesheet, an image, a video's source, a web font the
// text uses, a canvas. The replay asks this machine's server for none of
// them, and measures the text in the fallback font.
func TestAttestUnreproducible(t *testing.T) {
	c, _ := converter(t, mp4.Config{})
	hits := make(chan string, 10)
	srv := newCountingServer(t, hits)
	rec := fmt.Sprintf(`[{"type":4,"data":{"href":"http://example.test/","width":320,"height":240},"timestamp":1000},
{"type":2,"data":{"node":{"type":0,"id":1,"childNodes":[{"type":2,"tagName":"html","id":2,"attributes":{},"childNodes":[
{"type":2,"tagName":"head","id":3,"attributes":{},"childNodes":[{"type":2,"tagName":"link","id":4,"attributes":{"rel":"stylesheet","href":"%[1]s/style.css"},"childNodes":[]},
{"type":2,"tagName":"style","id":11,"attributes":{},"childNodes":[{"type":3,"id":12,"isStyle":true,"textContent":"@font-face { font-family: Brand; src: url(%[1]s/brand.woff2) } p { font: 16px Brand, sans-serif }"}]}]},
{"type":2,"tagName":"body","id":5,"attributes":{},"childNodes":[{"type":2,"tagName":"img","id":6,"attributes":{"src":"%[1]s/pixel.png"},"childNodes":[]},
{"type":2,"tagName":"canvas","id":7,"attributes":{"width":"20","height":"20"},"childNodes":[]},
{"type":2,"tagName":"video","id":8,"attributes":{"src":"%[1]s/clip.webm"},"childNodes":[]},
{"type":2,"tagName":"p","id":9,"attributes":{"data-consent":""},"childNodes":[{"type":3,"id":10,"textContent":"I agree."}]}]}]}]},"initialOffset":{"top":0,"left":0}},"timestamp":1010},
{"type":3,"data":{"source":2,"type":2,"id":9,"x":1,"y":1},"timestamp":1500}]`, srv.url)
	a, err := c.Attest(context.Background(), json.RawMessage(rec), 2000, []int{9})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"stylesheet " + srv.url + "/style.css", "image " + srv.url + "/pixel.png",
		"media " + srv.url + "/clip.webm", "canvas node 7", "font Brand"} {
		if !slices.Contains(a.Unreproducible, want) {
			t.Errorf("Unreproducible %q lacks %q", a.Unreproducible, want)
		}
	}
	t.Logf("unreproducible: %q", a.Unreproducible)
	if m := a.Consents[0]; !m.Found || m.Text != "I agree." || !m.Visible || !m.InViewport {
		t.Errorf("the consent: %+v", m)
	}
	checkPNG(t, a.Screenshot, 320, 240)
	select {
	case path := <-hits:
		t.Errorf("the replay fetched %s", path)
	default:
	}
}

// The consent moment picks the events: a text changed after it is not in
// the replay, and a moment before the first full snapshot, a malformed
// recording or one too large are refused as permanent *RecordingErrors
// before any browser starts.
func TestAttestMoment(t *testing.T) {
	c, _ := converter(t, mp4.Config{MaxRecordingBytes: 4096})
	rec := `[{"type":4,"data":{"href":"http://example.test/","width":320,"height":240},"timestamp":1000},
{"type":2,"data":{"node":{"type":0,"id":1,"childNodes":[{"type":2,"tagName":"html","id":2,"attributes":{},"childNodes":[
{"type":2,"tagName":"head","id":3,"attributes":{},"childNodes":[]},
{"type":2,"tagName":"body","id":5,"attributes":{},"childNodes":[
{"type":2,"tagName":"p","id":9,"attributes":{"data-consent":""},"childNodes":[{"type":3,"id":10,"textContent":"I agree."}]}]}]}]},"initialOffset":{"top":0,"left":0}},"timestamp":1010},
{"type":3,"data":{"source":0,"texts":[{"id":10,"value":"I agree to everything."}],"attributes":[],"removes":[],"adds":[]},"timestamp":1600}]`
	for _, tc := range []struct {
		at   int64
		want string
	}{{1599, "I agree."}, {1600, "I agree to everything."}} {
		a, err := c.Attest(context.Background(), json.RawMessage(rec), tc.at, []int{9})
		if err != nil {
			t.Fatal(err)
		}
		if m := a.Consents[0]; !m.Found || m.Text != tc.want {
			t.Errorf("at %d: %+v, want %q", tc.at, m, tc.want)
		}
	}
	for _, bad := range []struct {
		rec string
		at  int64
	}{
		{rec, 1005},                                   // before the full snapshot
		{`{"a":1}`, 2000},                             // not an array
		{`[{"type":4,"data":{}}]`, 2000},              // no timestamp
		{"[" + strings.Repeat(" ", 5000) + "]", 2000}, // too large
	} {
		_, err := c.Attest(context.Background(), json.RawMessage(bad.rec), bad.at, []int{9})
		var rerr *mp4.RecordingError
		if !errors.As(err, &rerr) || !rerr.Permanent() {
			t.Errorf("Attest(%.40s…, %d): %v, want a *RecordingError", bad.rec, bad.at, err)
		}
	}
	if n := c.BrowsersStarted(); n != 1 {
		t.Errorf("%d browsers started, want 1", n)
	}
}

// A recording of several pieces (handOver sends about 1 MiB at a time),
// one of its events larger than a piece, reaches the replay whole and in
// order: the consent's text is the one the last of 3,000 mutations wrote.
func TestAttestRecordingInPieces(t *testing.T) {
	c, _ := converter(t, mp4.Config{})
	var rec bytes.Buffer
	big, err := json.Marshal(strings.Repeat("Terms of the offer. ", 80_000)) // 1.5 MiB
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&rec, `[{"type":4,"data":{"href":"http://example.test/","width":320,"height":240},"timestamp":1000},
{"type":2,"data":{"node":{"type":0,"id":1,"childNodes":[{"type":2,"tagName":"html","id":2,"attributes":{},"childNodes":[
{"type":2,"tagName":"head","id":3,"attributes":{},"childNodes":[]},
{"type":2,"tagName":"body","id":5,"attributes":{},"childNodes":[
{"type":2,"tagName":"p","id":9,"attributes":{"data-consent":""},"childNodes":[{"type":3,"id":10,"textContent":"I agree."}]},
{"type":2,"tagName":"p","id":11,"attributes":{"style":"height:1px;overflow:hidden"},"childNodes":[{"type":3,"id":12,"textContent":%s}]}]}]}]},"initialOffset":{"top":0,"left":0}},"timestamp":1010}`, big)
	pad := strings.Repeat("x", 400)
	const n = 3000
	for i := range n {
		fmt.Fprintf(&rec, `,{"type":3,"data":{"source":0,"texts":[{"id":10,"value":"I agree, version %d."}],"attributes":[{"id":11,"attributes":{"data-pad":"%s%d"}}],"removes":[],"adds":[]},"timestamp":%d}`, i, pad, i, 1020+i)
	}
	rec.WriteString("]")
	if rec.Len() < 3<<20 {
		t.Fatalf("the recording is %d bytes, want at least 3 MiB", rec.Len())
	}
	a, err := c.Attest(context.Background(), rec.Bytes(), math.MaxInt64, []int{9})
	if err != nil {
		t.Fatal(err)
	}
	if m, want := a.Consents[0], fmt.Sprintf("I agree, version %d.", n-1); !m.Found || m.Text != want {
		t.Errorf("%+v, want %q", m, want)
	}
}
