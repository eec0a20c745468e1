package mp4_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/consentkit/consentkit/internal/testwait"
	"github.com/consentkit/consentkit/retain/mp4"
)

// fixturesDirEnv names the environment variable that, when set, makes
// TestFixtures keep what it makes in that directory: each recording as
// <fixture>.json (recordings of real pages, handy for benchmarks) and both
// videos of it as <fixture>-1.mp4 and <fixture>-2.mp4.
const fixturesDirEnv = "CONSENTKIT_FIXTURES_DIR"

// rrweb incremental snapshot sources the fixtures check for.
const (
	srcMutation          = 0
	srcScroll            = 3
	srcInput             = 5
	srcMediaInteraction  = 7
	srcStyleSheetRule    = 8
	srcCanvasMutation    = 9
	srcStyleDeclaration  = 13
	srcSelection         = 14
	srcAdoptedStyleSheet = 15
)

// A fixture is a page under testdata/pages and a short scripted session on
// it, recorded by the test with rrweb's recorder. Each one covers a group of
// browser features that a host's pages use and that a replay must render
// the same way every time.
type fixture struct {
	name  string
	page  string
	ready string // a JavaScript expression, true once the page can be recorded
	play  func(s *session)
	want  []requirement // what the recording must hold, so that the fixture covers what it claims
}

var fixtures = []fixture{
	{
		name: "frames",
		page: "frames.html",
		ready: `(() => { const d = document.getElementById('frame').contentDocument;
			return !!d && d.readyState === 'complete' && !!d.getElementById('rows').firstChild; })()`,
		play: func(s *session) {
			s.pause(150)
			s.click(s.at("#frame", "#name"))
			s.typeText("Ada")
			s.click(s.at("#frame", "#send"))
			s.click(s.at("#grow"))
			s.pause(150)
			s.click(s.at("#grow"))
			s.wheel(s.at("#frame"), 120)
			s.pause(200)
			s.js(`document.getElementById('frame').contentDocument.getElementById('log').textContent += ' (and changed by a script)'`)
			s.click(s.at("#grow"))
			s.pause(300)
		},
		want: []requirement{
			contains("a same-origin iframe's document", `"isAttachIframe":true`),
			contains("an open shadow root", `"isShadowHost":true`),
			shadowMutated("content of a shadow root changed during the recording"),
			source("typing in the iframe", srcInput),
			source("scrolling in the iframe", srcScroll),
		},
	},
	{
		name: "stylesheets",
		page: "stylesheets.html",
		play: func(s *session) {
			s.pause(100)
			for i := range 8 {
				s.js(fmt.Sprintf("steps[%d]()", i))
				s.moveTo(point{X: float64(80 + 60*i), Y: float64(120 + 20*(i%3))})
				s.pause(170)
			}
			s.pause(150)
		},
		want: []requirement{
			contains("the linked stylesheet, inlined", `"_cssText":`),
			source("rules inserted and deleted during the recording", srcStyleSheetRule),
			source("a declaration changed during the recording", srcStyleDeclaration),
			atLeast("adopted stylesheets, in the snapshot and changed during the recording", srcAdoptedStyleSheet, 3),
			contains("a constructed stylesheet replaced during the recording", `"replaceSync":`),
		},
	},
	{
		name:  "video",
		page:  "media.html",
		ready: `document.getElementById('clip').readyState >= 2`,
		play: func(s *session) {
			s.pause(100)
			s.click(s.at("#play"))
			s.pause(600)
			s.click(s.at("#pause"))
			s.js(`document.getElementById('clip').currentTime = 0.5`)
			s.pause(300)
			s.click(s.at("#play"))
			s.pause(300)
			s.click(s.at("#pause"))
			s.pause(300)
		},
		want: []requirement{
			contains("a video with controls", `"controls":""`),
			atLeast("the video played, paused and sought", srcMediaInteraction, 4),
		},
	},
	{
		// Players with their media in <source> children, one of them added
		// during the recording: a replayed <source> made its player show
		// Chromium's loading spinner, which turns on real time.
		name:  "video-sources",
		page:  "sources.html",
		ready: `document.getElementById('clip').readyState >= 2`,
		play: func(s *session) {
			s.pause(100)
			s.click(s.at("#play"))
			s.pause(500)
			s.click(s.at("#add"))
			s.pause(200)
			s.click(s.at("#pause"))
			s.js(`document.getElementById('clip').currentTime = 0.5`)
			s.pause(300)
			s.click(s.at("#play"))
			s.pause(300)
			s.click(s.at("#pause"))
			s.pause(300)
		},
		want: []requirement{
			contains("a video whose media is in <source> children", `"tagName":"source"`),
			added("a player with a <source> child added during the recording", "source"),
			atLeast("the video played, paused and sought", srcMediaInteraction, 4),
		},
	},
	{
		name: "dialog",
		page: "dialog.html",
		play: func(s *session) {
			s.pause(100)
			s.click(s.at("#open"))
			s.pause(150)
			s.click(s.at("#email"))
			s.typeText("jane@example.com")
			s.pause(150)
			s.click(s.at("#ok"))
			s.pause(300)
			s.click(s.at("#open"))
			s.pause(400)
		},
		want: []requirement{
			contains("a dialog opened with showModal", `"rr_open_mode":"modal"`),
			source("typing in the dialog", srcInput),
		},
	},
	{
		name: "canvas",
		page: "canvas.html",
		play: func(s *session) {
			s.pause(100)
			s.js(`animate(40)`)
			s.pause(500)
			c := s.at("#canvas")
			s.click(c)
			s.pause(200)
			s.click(point{X: c.X + 120, Y: c.Y - 60})
			s.pause(400)
		},
		want: []requirement{
			contains("the canvas drawn before the recording", `"rr_dataURL":`),
			atLeast("drawing during the recording", srcCanvasMutation, 10),
		},
	},
	{
		name: "text",
		page: "text.html",
		play: func(s *session) {
			s.pause(100)
			s.click(s.at("#name"))
			s.typeText("Ada Lovelace")
			s.click(s.at("#notes"))
			s.typeText("Call at 6.")
			s.click(s.char(4, "#para"))
			s.shiftClick(s.char(24, "#para"))
			s.pause(200)
			s.doubleClick(s.char(37, "#para"))
			s.pause(150)
			s.wheel(s.at("#pane"), 160)
			s.pause(150)
			s.wheel(point{X: 600, Y: 300}, 200)
			s.pause(150)
			s.wheel(point{X: 600, Y: 300}, 250)
			s.pause(200)
		},
		want: []requirement{
			source("typing in an input and a textarea", srcInput),
			atLeast("text selected with the mouse, by a shift-click and by a double click", srcSelection, 2),
			scrolledTargets("scrolling of the window and of an overflow element", 2),
		},
	},
}

// The fixtures are recorded in Chromium, converted twice each, and each
// video lasts as long as its recording, within one frame, and is the same
// file both times.
func TestFixtures(t *testing.T) {
	c, _ := converter(t, mp4.Config{})
	rec := startRecorder(t)
	out := os.Getenv(fixturesDirEnv)
	if out != "" {
		if err := os.MkdirAll(out, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	const fps = 25 // the Config's default
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			start := time.Now()
			raw := rec.record(t, f)
			recorded := time.Since(start)
			events := parseEvents(t, raw)
			for _, r := range f.want {
				if !r.ok(events) {
					t.Errorf("the recording lacks %s", r.what)
				}
			}
			span := time.Duration((events[len(events)-1].Timestamp - events[0].Timestamp) * float64(time.Millisecond))
			dir := out
			if dir == "" {
				dir = t.TempDir()
			} else if err := os.WriteFile(filepath.Join(dir, f.name+".json"), raw, 0o644); err != nil {
				t.Fatal(err)
			}
			var videos [2]string
			for i := range videos {
				videos[i] = filepath.Join(dir, fmt.Sprintf("%s-%d.mp4", f.name, i+1))
				convStart := time.Now()
				if _, err := c.Convert(context.Background(), raw, videos[i]); err != nil {
					t.Fatalf("conversion %d: %v", i+1, err)
				}
				secs, err := strconv.ParseFloat(ffprobe(t, videos[i]).Format.Duration, 64)
				if err != nil {
					t.Fatalf("video %d: duration: %v", i+1, err)
				}
				if math.Abs(secs-span.Seconds()) > 1.0/fps+0.001 {
					t.Errorf("video %d lasts %.3f s, the recording %.3f s: more than one frame apart", i+1, secs, span.Seconds())
				}
				t.Logf("conversion %d took %v", i+1, time.Since(convStart).Round(time.Millisecond))
			}
			t.Logf("%d events over %.3f s, recorded in %v", len(events), span.Seconds(), recorded.Round(time.Millisecond))
			a, err := os.ReadFile(videos[0])
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(videos[1])
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a, b) {
				t.Errorf("the two videos of one recording differ: %s", frameDiff(t, videos[0], videos[1], fps))
				if out == "" {
					t.Logf("set %s to keep the recording and both videos", fixturesDirEnv)
				}
			}
		})
	}
}

// recorder is a headless Chromium that records the fixtures' pages, served
// by a test server.
type recorder struct {
	ctx    context.Context // the browser's
	server *httptest.Server
	rrweb  string // rrweb's browser bundle
	helper string // testdata/pages/recorder.js
}

func startRecorder(t *testing.T) *recorder {
	t.Helper()
	bundle, err := os.ReadFile(filepath.Join(replayer, "rrweb.umd.min.cjs"))
	if err != nil {
		t.Fatal(err) // converter() has checked that it is there
	}
	helper, err := os.ReadFile("testdata/pages/recorder.js")
	if err != nil {
		t.Fatal(err)
	}
	chromium := "/usr/lib/chromium/chromium"
	if _, err := os.Stat(chromium); err != nil {
		if chromium, err = exec.LookPath("chromium"); err != nil {
			if chromium, err = exec.LookPath("chromium-browser"); err != nil {
				t.Fatal("chromium not found") // converter() has found one
			}
		}
	}
	// Short paths: Chromium makes Unix sockets in here.
	dir, err := os.MkdirTemp("", "ckfx")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) }) // best effort, unlike t.TempDir: Chromium may still write there

	clip := filepath.Join(dir, "clip.webm")
	if msg, err := exec.Command("ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=15:duration=2",
		"-c:v", "libvpx", "-b:v", "200k", "-y", clip).CombinedOutput(); err != nil {
		// As converter() does for missing tools: CI must have them.
		if os.Getenv("CI") == "true" {
			t.Fatalf("make the video clip (ffmpeg with libvpx): %v: %s", err, msg)
		}
		t.Skipf("fixtures test skipped: ffmpeg cannot make a VP8 clip (an ffmpeg with libvpx is needed): %v: %s", err, msg)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/clip.webm", func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, clip) })
	mux.Handle("/", http.FileServer(http.Dir("testdata/pages")))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium),
		chromedp.UserDataDir(filepath.Join(dir, "profile")), chromedp.Env("TMPDIR="+dir),
		chromedp.Flag("disable-gpu", true),
		// Only the test server, on 127.0.0.1, can be reached.
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"),
		chromedp.Flag("font-render-hinting", "none"),
		chromedp.WindowSize(800, 600))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc, chromedp.WithLogf(func(string, ...any) {}))
	t.Cleanup(func() {
		closeCtx, stop := context.WithTimeout(ctx, 10*time.Second)
		_ = chromedp.Cancel(closeCtx) // a browser that does not close is killed: cancelAlloc
		stop()
		cancel()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return &recorder{ctx: ctx, server: srv, rrweb: string(bundle), helper: string(helper)}
}

// record opens the fixture's page in a fresh browser context, starts rrweb's
// recorder, plays the fixture's session and returns the events as JSON.
func (r *recorder) record(t *testing.T, f fixture) []byte {
	t.Helper()
	tab, cancelTab := chromedp.NewContext(r.ctx, chromedp.WithNewBrowserContext())
	defer func() {
		closeCtx, stop := context.WithTimeout(tab, 10*time.Second)
		_ = chromedp.Cancel(closeCtx) // a tab that does not close goes with cancelTab
		stop()
		cancelTab()
	}()
	ctx, cancel := untilDeadline(t, tab)
	defer cancel()
	if _, err := chromedp.Call(ctx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
		Width: 800, Height: 600, DeviceScaleFactor: 1,
	}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(r.server.URL+"/"+f.page)); err != nil {
		t.Fatalf("load %s: %v", f.page, err)
	}
	if f.ready != "" {
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](f.ready, chromedp.WithPollingTimeout(0))); err != nil {
			t.Fatalf("%s never got ready: %v", f.page, err)
		}
	}
	if err := chromedp.Do(ctx,
		chromedp.Evaluate[chromedp.Void](r.rrweb+"\n;true"),
		chromedp.Evaluate[chromedp.Void](r.helper+"\n;true"),
		chromedp.Evaluate[chromedp.Void]("__fixture.start()")); err != nil {
		t.Fatalf("start rrweb's recorder: %v", err)
	}
	s := &session{ctx: ctx, mouse: point{X: 400, Y: 300}}
	f.play(s)
	if s.err != nil {
		t.Fatalf("play the session: %v", s.err)
	}
	// What the session did reaches the recording on the page's time: an
	// animation's frames, a scroll's events, a selection's. The recording
	// goes on until it holds what the fixture must cover, however slowly
	// the machine draws; TestFixtures checks it again, and says what is
	// missing when the test's deadline came first.
	testwait.Until(t, 100*time.Millisecond, func() bool {
		raw, err := chromedp.Run(ctx, chromedp.Evaluate[string]("__fixture.peek()"))
		var events []recordedEvent
		if err != nil || json.Unmarshal([]byte(raw), &events) != nil {
			return true // stop() fails too, and says why
		}
		for _, r := range f.want {
			if !r.ok(events) {
				return false
			}
		}
		return true
	})
	events, err := chromedp.Run(ctx, chromedp.Evaluate[string]("__fixture.stop()"))
	if err != nil {
		t.Fatalf("collect the events: %v", err)
	}
	return []byte(events)
}

// untilDeadline returns a context of parent that ends a little before the
// test's deadline (go test's -timeout), after near: a browser step waits
// as long as the test binary allows, never for a span that assumes how
// fast the machine is, and its failure is still reported.
func untilDeadline(t *testing.T, parent context.Context) (context.Context, context.CancelFunc) {
	deadline, ok := t.Deadline()
	if !ok {
		return context.WithCancel(parent)
	}
	return context.WithDeadline(parent, deadline.Add(-min(15*time.Second, time.Until(deadline)/20)))
}

type point struct{ X, Y float64 }

// session drives a page as a user would: mouse moves, clicks, wheel
// turns and keystrokes, with pauses. The first error stops it; record
// reports it.
type session struct {
	ctx   context.Context
	err   error
	mouse point
}

func (s *session) do(steps ...chromedp.Action[chromedp.Void]) {
	if s.err == nil {
		s.err = chromedp.Do(s.ctx, steps...)
	}
}

func (s *session) pause(ms int) { s.do(chromedp.Sleep(time.Duration(ms) * time.Millisecond)) }

// js runs a script of the page, as the page's own code would.
func (s *session) js(expr string) { s.do(chromedp.Evaluate[chromedp.Void](expr)) }

func (s *session) locate(expr string) point {
	if s.err != nil {
		return point{}
	}
	p, err := chromedp.Run(s.ctx, chromedp.Evaluate[point](expr))
	if err != nil {
		s.err = fmt.Errorf("%s: %w", expr, err)
	}
	return p
}

// at returns the middle of an element: path holds a selector and, for an
// element inside a shadow root or an iframe, a selector in each.
func (s *session) at(path ...string) point {
	b, _ := json.Marshal(path)
	return s.locate("__fixture.center(" + string(b) + ")")
}

// char returns the middle of the character at offset in an element's text.
func (s *session) char(offset int, path ...string) point {
	b, _ := json.Marshal(path)
	return s.locate(fmt.Sprintf("__fixture.char(%s, %d)", b, offset))
}

// moveTo glides the mouse to p in a few steps.
func (s *session) moveTo(p point, opts ...chromedp.MouseOption) {
	const steps = 4
	from := s.mouse
	for i := 1; i <= steps; i++ {
		k := float64(i) / steps
		s.do(chromedp.MouseEvent(chromedp.MouseMoved, from.X+(p.X-from.X)*k, from.Y+(p.Y-from.Y)*k, opts...),
			chromedp.Sleep(15*time.Millisecond))
	}
	s.mouse = p
}

func (s *session) click(p point) {
	s.moveTo(p)
	s.do(chromedp.MouseClickXY(p.X, p.Y), chromedp.Sleep(40*time.Millisecond))
}

func (s *session) doubleClick(p point) {
	s.moveTo(p)
	s.do(chromedp.MouseClickXY(p.X, p.Y, chromedp.ClickCount(1)), chromedp.Sleep(60*time.Millisecond),
		chromedp.MouseClickXY(p.X, p.Y, chromedp.ClickCount(2)), chromedp.Sleep(40*time.Millisecond))
}

// shiftClick clicks with Shift held, which extends the selection to p.
func (s *session) shiftClick(p point) {
	s.moveTo(p)
	s.do(chromedp.MouseClickXY(p.X, p.Y, chromedp.ButtonModifiers(chromedp.ModifierShift)), chromedp.Sleep(40*time.Millisecond))
}

// wheel turns the mouse wheel over p by dy pixels.
func (s *session) wheel(p point, dy float64) {
	s.moveTo(p)
	// The typed parameters leave out a zero deltaX, which Chromium requires.
	s.do(chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		return t.Call(ctx, "Input.dispatchMouseEvent", map[string]any{
			"type": input.DispatchMouseEventTypeMouseWheel, "x": p.X, "y": p.Y, "deltaX": 0, "deltaY": dy,
		}, nil)
	}))
}

// typeText types into the focused element, one key at a time.
func (s *session) typeText(text string) {
	for _, r := range text {
		s.do(chromedp.KeyEvent(string(r)), chromedp.Sleep(25*time.Millisecond))
	}
}

// recordedEvent is the part of an rrweb event the checks read.
type recordedEvent struct {
	Type      int             `json:"type"`
	Timestamp float64         `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

func parseEvents(t *testing.T, raw []byte) []recordedEvent {
	t.Helper()
	var events []recordedEvent
	if err := json.Unmarshal(raw, &events); err != nil {
		t.Fatalf("the recording is not a list of events: %v", err)
	}
	if len(events) < 2 {
		t.Fatalf("the recording has %d events", len(events))
	}
	return events
}

// incremental returns the incremental snapshot events of a source.
func incremental(events []recordedEvent, src int) []recordedEvent {
	var out []recordedEvent
	for _, e := range events {
		var d struct {
			Source *int `json:"source"`
		}
		if e.Type == 3 && json.Unmarshal(e.Data, &d) == nil && d.Source != nil && *d.Source == src {
			out = append(out, e)
		}
	}
	return out
}

// requirement is something a fixture's recording must hold.
type requirement struct {
	what string
	ok   func([]recordedEvent) bool
}

func source(what string, src int) requirement { return atLeast(what, src, 1) }

func atLeast(what string, src, n int) requirement {
	return requirement{fmt.Sprintf("%s (%d or more events of source %d)", what, n, src), func(events []recordedEvent) bool {
		return len(incremental(events, src)) >= n
	}}
}

func contains(what, text string) requirement {
	return requirement{fmt.Sprintf("%s (%s)", what, text), func(events []recordedEvent) bool {
		return slices.ContainsFunc(events, func(e recordedEvent) bool { return bytes.Contains(e.Data, []byte(text)) })
	}}
}

// added requires an element of the tag among the nodes that mutations add
// during the recording.
func added(what, tag string) requirement {
	text := []byte(`"tagName":"` + tag + `"`)
	return requirement{fmt.Sprintf("%s (a mutation adding a %s element)", what, tag), func(events []recordedEvent) bool {
		return slices.ContainsFunc(incremental(events, srcMutation), func(e recordedEvent) bool { return bytes.Contains(e.Data, text) })
	}}
}

// shadowMutated requires a mutation inside a shadow root: a node added to,
// or a text or attribute changed in, a node that the full snapshot or an
// earlier mutation put in one.
func shadowMutated(what string) requirement {
	type node struct {
		ID         int    `json:"id"`
		IsShadow   bool   `json:"isShadow"`
		ChildNodes []node `json:"childNodes"`
	}
	return requirement{what + " (a mutation of a node in a shadow root)", func(events []recordedEvent) bool {
		inShadow := map[int]bool{}
		var walk func(n node, shadow bool)
		walk = func(n node, shadow bool) {
			shadow = shadow || n.IsShadow
			if shadow {
				inShadow[n.ID] = true
			}
			for _, c := range n.ChildNodes {
				walk(c, shadow)
			}
		}
		for _, e := range events {
			var d struct {
				Source *int `json:"source"`
				Node   node `json:"node"` // of a full snapshot
				Adds   []struct {
					ParentID int  `json:"parentId"`
					Node     node `json:"node"`
				} `json:"adds"`
				Texts      []struct{ ID int } `json:"texts"`
				Attributes []struct{ ID int } `json:"attributes"`
			}
			if json.Unmarshal(e.Data, &d) != nil {
				continue
			}
			switch {
			case e.Type == 2:
				walk(d.Node, false)
			case e.Type == 3 && d.Source != nil && *d.Source == srcMutation:
				changed := false
				for _, a := range d.Adds {
					if inShadow[a.ParentID] || a.Node.IsShadow {
						changed = true
						walk(a.Node, true)
					}
				}
				for _, t := range d.Texts {
					changed = changed || inShadow[t.ID]
				}
				for _, a := range d.Attributes {
					changed = changed || inShadow[a.ID]
				}
				if changed {
					return true
				}
			}
		}
		return false
	}}
}

func scrolledTargets(what string, n int) requirement {
	return requirement{fmt.Sprintf("%s (scroll events on %d or more nodes)", what, n), func(events []recordedEvent) bool {
		ids := map[int]bool{}
		for _, e := range incremental(events, srcScroll) {
			var d struct{ ID int }
			if json.Unmarshal(e.Data, &d) == nil {
				ids[d.ID] = true
			}
		}
		return len(ids) >= n
	}}
}

// clearDiff is the gray-level difference above which two decoded pixels
// differ in what they show rather than only in how the encoder approximated
// them: a difference in one frame makes the encoder approximate the frames
// that follow a little differently too, by up to a few dozen levels near
// sharp edges.
const clearDiff = 48

// frameDiff says which decoded frames of two videos differ, and where.
func frameDiff(t *testing.T, a, b string, fps int) string {
	t.Helper()
	fa, width := grayFrames(t, a)
	fb, _ := grayFrames(t, b)
	var msg strings.Builder
	if len(fa) != len(fb) {
		fmt.Fprintf(&msg, "%d frames against %d; ", len(fa), len(fb))
	}
	type box struct{ x0, y0, x1, y1 int }
	var (
		clear                    []int // frames that differ clearly
		boxes                    = map[int]box{}
		differing, slight, worst int
		all                      = min(len(fa), len(fb))
	)
	for i := range all {
		if bytes.Equal(fa[i], fb[i]) {
			continue
		}
		differing++
		bx, most := box{x0: math.MaxInt, y0: math.MaxInt, x1: -1, y1: -1}, 0
		for p := range fa[i] {
			d := int(fa[i][p]) - int(fb[i][p])
			d = max(d, -d)
			most = max(most, d)
			if d > clearDiff {
				x, y := p%width, p/width
				bx = box{min(bx.x0, x), min(bx.y0, y), max(bx.x1, x), max(bx.y1, y)}
			}
		}
		if bx.x1 < 0 {
			slight++
			worst = max(worst, most)
			continue
		}
		clear = append(clear, i)
		boxes[i] = bx
	}
	if differing == 0 {
		msg.WriteString("the decoded frames are identical (the encoder or the container differs)")
		return msg.String()
	}
	fmt.Fprintf(&msg, "%d of %d frames differ", differing, all)
	if len(clear) > 0 {
		var runs []string
		for _, r := range runsOf(clear) {
			u := boxes[r[0]]
			for f := r[0] + 1; f <= r[1]; f++ {
				b := boxes[f]
				u = box{min(u.x0, b.x0), min(u.y0, b.y0), max(u.x1, b.x1), max(u.y1, b.y1)}
			}
			runs = append(runs, fmt.Sprintf("%s in x %d–%d, y %d–%d", frameSpan(r, fps), u.x0, u.x1, u.y0, u.y1))
		}
		fmt.Fprintf(&msg, "; by more than %d gray levels: %s", clearDiff, strings.Join(runs, "; "))
	}
	if slight > 0 {
		fmt.Fprintf(&msg, "; %d other frames by at most %d levels (likely the encoder carrying an earlier difference forward)", slight, worst)
	}
	return msg.String()
}

// runsOf groups sorted frame indices into runs of consecutive ones.
func runsOf(frames []int) [][2]int {
	var runs [][2]int
	for _, f := range frames {
		if n := len(runs); n > 0 && runs[n-1][1] == f-1 {
			runs[n-1][1] = f
		} else {
			runs = append(runs, [2]int{f, f})
		}
	}
	return runs
}

// frameSpan writes a run of frames with its times.
func frameSpan(r [2]int, fps int) string {
	at := func(f int) string { return strconv.FormatFloat(float64(f)/float64(fps), 'f', 2, 64) + "s" }
	if r[0] == r[1] {
		return fmt.Sprintf("frame %d (%s)", r[0], at(r[0]))
	}
	return fmt.Sprintf("frames %d–%d (%s–%s)", r[0], r[1], at(r[0]), at(r[1]))
}

// grayFrames decodes a video to 8-bit gray frames and returns them with
// the width.
func grayFrames(t *testing.T, path string) ([][]byte, int) {
	t.Helper()
	s := ffprobe(t, path).Streams[0]
	out, err := exec.Command("ffmpeg", "-v", "error", "-i", path, "-f", "rawvideo", "-pix_fmt", "gray", "-").Output()
	if err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
	size := s.Width * s.Height
	var frames [][]byte
	for len(out) >= size && size > 0 {
		frames = append(frames, out[:size])
		out = out[size:]
	}
	return frames, s.Width
}
