package mp4

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// canvasRecording is a recording of canvases that each carry an image
// (rr_dataURL) and ask for side × side pixels: in the full snapshot (one of
// them as CANVAS), in a node added later, and given by an attribute change
// to a canvas that had neither. rrweb would draw each image into its
// canvas, which gives the canvas a pixel buffer of side² × 4 bytes outside
// the JavaScript heap.
func canvasRecording(side int) []byte {
	img := fmt.Sprintf(`data:image/svg+xml,%%3Csvg xmlns='http://www.w3.org/2000/svg' width='%[1]d' height='%[1]d'%%3E%%3Crect width='100%%25' height='100%%25' fill='red'/%%3E%%3C/svg%%3E`, side)
	canvas := func(id int, tag string) string {
		return fmt.Sprintf(`{"type":2,"tagName":%q,"id":%d,"attributes":{"width":"%d","height":" %d","style":"width:10px;height:10px","rr_dataURL":%q},"childNodes":[]}`,
			tag, id, side, side, img)
	}
	return []byte(fmt.Sprintf(`[{"type":4,"data":{"href":"http://example.test/","width":320,"height":240},"timestamp":1000},
{"type":2,"data":{"node":{"type":0,"id":1,"childNodes":[{"type":2,"tagName":"html","id":2,"attributes":{},"childNodes":[
{"type":2,"tagName":"head","id":3,"attributes":{},"childNodes":[]},
{"type":2,"tagName":"body","id":5,"attributes":{},"childNodes":[%s,%s,
{"type":2,"tagName":"canvas","id":12,"attributes":{},"childNodes":[]}]}]}]},"initialOffset":{"top":0,"left":0}},"timestamp":1010},
{"type":3,"data":{"source":0,"texts":[],"removes":[],"attributes":[],"adds":[{"parentId":5,"nextId":null,"node":%s}]},"timestamp":1050},
{"type":3,"data":{"source":0,"texts":[],"removes":[],"adds":[],"attributes":[{"id":12,"attributes":{"WIDTH":"%d","height":"%d","rr_dataURL":%q}}]},"timestamp":1100},
{"type":3,"data":{"source":2,"type":2,"id":5,"x":1,"y":1},"timestamp":1500}]`,
		canvas(10, "canvas"), canvas(11, "CANVAS"), canvas(13, "canvas"), side, side, img))
}

// canvasCheck returns, for the last replay of the page, how many canvases
// the replayed document holds, the largest width and height any of them
// has, how many of them have an rr_dataURL attribute, and how many of the
// events the replayer holds still give a canvas an image; and whether a
// canvas of the replayed document can get a context (and so a buffer).
const canvasCheck = `(function () {
  const r = __consentkit.replayer();
  const doc = r.iframe.contentDocument;
  const out = { canvases: 0, width: 0, height: 0, attributes: 0, images: 0,
    contexts: doc.createElement('canvas').getContext('2d') !== null };
  for (const c of doc.querySelectorAll('canvas')) {
    out.canvases++;
    out.width = Math.max(out.width, c.width);
    out.height = Math.max(out.height, c.height);
    for (const a of c.getAttributeNames()) if (a.toLowerCase() === 'rr_dataurl') out.attributes++;
  }
  const has = (attrs) => !!attrs && Object.keys(attrs).some((k) => k.toLowerCase() === 'rr_dataurl');
  const walk = (n) => {
    if (!n || typeof n !== 'object') return;
    if (has(n.attributes)) out.images++;
    for (const c of n.childNodes || []) walk(c);
  };
  for (const e of r.service.state.context.events) {
    if (e.type === 2) walk(e.data.node);
    if (e.type === 3 && e.data.source === 0) {
      for (const a of e.data.adds || []) walk(a.node);
      for (const m of e.data.attributes || []) if (has(m.attributes)) out.images++;
    }
  }
  return out;
})()`

type canvasState struct {
	Canvases, Width, Height, Attributes, Images int
	Contexts                                    bool
}

// TestReplayDropsCanvasImages replays canvases of 8192² with images, as a
// conversion and as an attestation replay them, and checks in the replayed
// page that the replayer was never given an image to draw into a canvas
// and that no canvas is larger than the viewport's bound.
func TestReplayDropsCanvasImages(t *testing.T) {
	c, err := New(Config{Replayer: "replayer/node_modules/rrweb/dist", TempDir: shortTempDir(t), FPS: 5, MaxHeapMiB: 128})
	var missing *MissingError
	if errors.As(err, &missing) && os.Getenv("CI") != "true" {
		t.Skipf("replay test skipped: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	rec := canvasRecording(8192)
	for _, via := range []string{"convert", "attest"} {
		t.Run(via, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			tl, events, err := readRecording(rec, 0, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			b, err := c.acquire(ctx, false)
			if err != nil {
				t.Fatal(err)
			}
			defer c.release(b, true) // a fresh browser for the next
			tb, err := c.takeTab(b)
			if err != nil {
				t.Fatal(err)
			}
			defer tb.close()
			tab, stop := context.WithCancel(tb.ctx)
			defer stop()
			defer context.AfterFunc(ctx, stop)()
			switch via {
			case "convert": // as Converter.replay does, through every event
				if err := c.load(tab, tl, events); err != nil {
					t.Fatal(err)
				}
				for range tl.frames(c.opts.FPS) {
					if _, err := chromedp.Run(tab, chromedp.Evaluate[int]("__consentkit.advance(200)")); err != nil {
						t.Fatal(err)
					}
				}
			case "attest": // as Converter.attest does
				if err := handOver(tab, events); err != nil {
					t.Fatal(err)
				}
				args, _ := json.Marshal([]any{replayRules, []float64{0, 10, 50, 100, 500}, []int{10}})
				if _, err := chromedp.Run(tab, chromedp.Evaluate[attestResult](attestScript()+"(__consentkit.taken(),"+string(args)+")", chromedp.EvalAwaitPromise)); err != nil {
					t.Fatal(err)
				}
			}
			got, err := chromedp.Run(tab, chromedp.Evaluate[canvasState](canvasCheck))
			if err != nil {
				t.Fatal(err)
			}
			if got.Canvases != 4 {
				t.Fatalf("%d canvases replayed, want 4", got.Canvases)
			}
			if got.Images != 0 || got.Attributes != 0 {
				t.Errorf("the replay was given %d canvas images (rr_dataURL), and %d canvases have one as an attribute; want none", got.Images, got.Attributes)
			}
			if got.Contexts {
				t.Error("a canvas of the replayed page gets a 2D context")
			}
			if got.Width > maxViewport || got.Height > maxViewport {
				t.Errorf("a canvas of %d×%d was replayed; want none beyond %d on a side", got.Width, got.Height, maxViewport)
			}
		})
	}
}

// shortTempDir returns a temporary directory short enough for Chromium's
// sockets (t.TempDir's are not), removed after the test.
func shortTempDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "ckt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}
