package mp4

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/headlessexperimental"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/consentkit/consentkit/capture"
)

// Attestation is what a replay of a recording shows at the consent moment:
// each consent element measured as the capture snippet measures it, and the
// viewport as a picture.
type Attestation struct {
	Consents   []Measured // one per node, in the order given
	Screenshot []byte     // PNG of the viewport at the consent moment
	// Unreproducible lists what the replay could not reproduce — resources
	// it could not load (stylesheets, fonts, images the recording only
	// links to), canvas — so that a difference they explain is not a
	// mismatch. Each entry is a kind (stylesheet, font, image, media,
	// frame, canvas) and what it names: "stylesheet
	// https://cdn.example/site.css", "font Brand Sans", "canvas node 42".
	// They are sorted, at most MaxUnreproducible of them, the last then
	// saying how many more there were; empty, not nil, when there are none.
	Unreproducible []string
}

// Measured is one consent element of the replayed page, measured by the
// capture snippet's own code (capture.MeasureJS).
type Measured struct {
	NodeID int
	Found  bool   // the node is an element of the replayed page; if not, the rest is zero
	Text   string // as the snippet measures it
	// The rest are the snippet's visibility fields: whether some visible
	// text was in the viewport, whether the whole text was visible, the
	// smallest font size of the visible text, and the colours and contrast
	// of its visible text of lowest contrast.
	InViewport, Visible        bool
	FontSizePx, ContrastRatio  float64
	TextColor, BackgroundColor string
	HiddenText                 []string // the fragments hidden from the consumer, in order
}

// MaxUnreproducible bounds Attestation.Unreproducible.
const MaxUnreproducible = 100

// Attest replays events, an rrweb recording, in one of the converter's warm
// browsers (a fresh browser context, cut off the network, as Convert does)
// up to the consent moment: its last event whose timestamp is at or before
// at (milliseconds, the clock of the recording's timestamps; a recording
// that ended with the consent, as a captured session's does, is replayed
// whole with at = math.MaxInt64). It then measures the elements
// whose recorder ids are nodes (the node_id the snippet sends with each
// consent) with the same code the snippet ran in the consumer's browser,
// and takes a screenshot of the viewport.
//
// The replay is the one the video shows, in the recording's viewport to
// the pixel: the events are applied on the virtual clock at the frames
// (Config.FPS) in which they fall, and the clock then runs on to the
// consent moment, so that CSS animations and transitions stand where they
// stood then. It reproduces what the recording holds: the DOM, its attributes
// and text, inline styles and every stylesheet the recorder could read (the
// page's own, and those of other origins that allow it) with their changes,
// form state, scroll positions, same-origin iframes and open shadow roots.
// It cannot reproduce what the recording only names, since the replay has
// no network: stylesheets of other origins that the recorder could not
// read, web fonts, images, video and audio, other origins' frames; nor
// canvas drawings, which the snippet does not record. Each of these that
// the page holds at that moment is listed in Unreproducible, found in the
// replayed document (images and stylesheets by element, fonts by the
// families that failed, every canvas, video and audio); images of CSS
// backgrounds and stylesheets of @import only as far as Chromium has
// reported their refused requests before Attest returns. It measures in
// Chromium's headless shell with this machine's fonts at a device pixel
// ratio of 1, whatever browser and screen the consumer had: text metrics,
// and so line breaks, clipping and positions, may differ a little, and
// media queries of resolution, colour scheme or pointer may match
// differently. No script of the page runs, hover and focus are as the
// replayer simulates them, and typed text is masked as it was recorded.
//
// A node id that is not an element of the replayed page at that moment
// (not in the recording, removed by then, or a text node) is Found false.
// The error is a *RecordingError when the recording is malformed, larger
// than Config.MaxRecordingBytes, spans more than Config.MaxDuration up to
// at, or has no full snapshot at or before at. Attest waits for a free
// browser, as Convert does, and is bounded by Config.Timeout.
func (c *Converter) Attest(ctx context.Context, events json.RawMessage, at int64, nodes []int) (*Attestation, error) {
	if len(events) > c.opts.MaxRecordingBytes {
		return nil, recordingErrorf("the recording is %d bytes, more than the %d a replay takes (Config.MaxRecordingBytes)", len(events), c.opts.MaxRecordingBytes)
	}
	all, err := splitEvents(events)
	if err != nil {
		return nil, err
	}
	replay, start, end, width, height, err := eventsUntil(all, at)
	if err != nil {
		return nil, err
	}
	tl, err := parseTimeline(replay, 0, c.opts.MaxDuration)
	if err != nil {
		return nil, err
	}
	timeout := c.opts.Timeout
	if timeout <= 0 {
		timeout = 2*time.Minute + 5*tl.total
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	// The replay steps the clock to each frame of the video at which
	// something happens, then to the consent moment.
	var steps []float64
	for _, f := range tl.frames(c.opts.FPS) {
		if f.dirty {
			steps = append(steps, float64(f.at)/float64(time.Millisecond))
		}
	}
	target := end - start // the consent moment
	if len(steps) > 0 {
		target = math.Max(target, steps[len(steps)-1])
	}
	steps = append(steps, target)

	b, err := c.acquire(ctx, false)
	if err != nil {
		return nil, err
	}
	// Attest uses no encoder: the one prepared for the next conversion is
	// stopped, since release prepares another.
	if e := b.encoder; e != nil {
		b.encoder = nil
		_ = e.finish(true) // killed: its error says nothing
	}
	a, err := c.attest(ctx, b, replay, steps, width, height, nodes)
	c.release(b, err != nil)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("mp4: attest: %w (%w)", ctx.Err(), err)
		}
		return nil, err
	}
	return a, nil
}

// momentSlack is how long before the recording's last event the consent
// moment the snippet marked may be: its submit listeners run at once, and
// the consent leaves right after them. A mark earlier than that is not
// taken (the recording is replayed to its end), so a page that would add
// one of its own, then change what the consent shows, chooses no moment
// of the replay beyond what it could show in the last second anyway.
const momentSlack = 1000 // milliseconds

// eventsUntil returns the events dated at or before at, up to the last
// consent moment the snippet marked among them (a custom event tagged
// capture.ConsentMomentTag, at most momentSlack before the last event:
// what the page's own submit listeners changed after it is not replayed;
// a recording without one is taken to its end), in the order the
// replayer applies them (by timestamp, events of one time as recorded);
// the timestamps of the first and the last of them; and the viewport of
// their first meta event (the default one when there is none).
func eventsUntil(events []json.RawMessage, at int64) (kept []json.RawMessage, start, end float64, width, height int, err error) {
	type timed struct {
		raw json.RawMessage
		ev  event
	}
	read := make([]timed, 0, len(events))
	moment := -1 // index in read of the last consent moment marked
	for i, e := range events {
		ev, ok := readEvent(e)
		if !ok {
			return nil, 0, 0, 0, 0, recordingErrorf("event %d has no valid type and timestamp", i)
		}
		if ev.Timestamp > float64(at) {
			continue
		}
		if ev.Type == eventCustom && isConsentMoment(ev.Data) {
			moment = len(read)
		}
		read = append(read, timed{e, ev})
	}
	last := math.Inf(-1)
	for _, t := range read {
		last = max(last, t.ev.Timestamp)
	}
	if moment >= 0 && last-read[moment].ev.Timestamp <= momentSlack {
		read = read[:moment+1]
	}
	slices.SortStableFunc(read, func(a, b timed) int { return cmp.Compare(a.ev.Timestamp, b.ev.Timestamp) })
	kept = make([]json.RawMessage, 0, len(read))
	width, height = defaultWidth, defaultHeight
	snapshot, meta := false, false
	for _, t := range read {
		ev := t.ev
		if len(kept) == 0 {
			start = ev.Timestamp
		}
		end = max(end, ev.Timestamp)
		kept = append(kept, t.raw)
		switch ev.Type {
		case eventFullSnapshot:
			snapshot = true
		case eventMeta:
			if w, h, ok := viewport(ev.Data); !meta && ok {
				width, height, meta = min(w, maxViewport), min(h, maxViewport), true
			}
		}
	}
	if !snapshot {
		return nil, 0, 0, 0, 0, recordingErrorf("the recording has no full snapshot at or before %d", at)
	}
	return kept, start, end, width, height, nil
}

// isConsentMoment reports whether data, a custom event's, is the
// snippet's mark of the consent moment (capture.ConsentMomentTag).
func isConsentMoment(data []byte) bool {
	var v [1][]byte
	if !members(data, v[:], "tag") || v[0] == nil {
		return false
	}
	var tag string
	return json.Unmarshal(v[0], &tag) == nil && tag == capture.ConsentMomentTag
}

// attest runs one replay in a fresh tab of b.
func (c *Converter) attest(ctx context.Context, b *browser, events []json.RawMessage, steps []float64, width, height int, nodes []int) (*Attestation, error) {
	t, err := c.takeTab(b)
	if err != nil {
		return nil, err
	}
	defer t.close()
	tab, stop := context.WithCancel(t.ctx)
	defer stop()
	defer context.AfterFunc(ctx, stop)()

	// What the page asks of the network, refused by isolate, is what the
	// replay could not load.
	var (
		mu      sync.Mutex
		refused []string
	)
	if err := chromedp.Listen(tab, func(ev any) {
		if e, ok := ev.(*fetch.EventRequestPaused); ok && e.Request != nil {
			if kind := refusedKinds[e.ResourceType]; kind != "" {
				mu.Lock()
				refused = append(refused, kind+" "+e.Request.URL)
				mu.Unlock()
			}
		}
	}); err != nil {
		return nil, fmt.Errorf("mp4: attest: %w", err)
	}
	// The viewport is the recording's, to the pixel.
	if _, err := chromedp.Call(tab, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
		Width: int64(width), Height: int64(height), DeviceScaleFactor: 1,
	}); err != nil {
		return nil, fmt.Errorf("mp4: attest: size the viewport: %w", err)
	}
	if nodes == nil {
		nodes = []int{}
	}
	args, err := json.Marshal([]any{replayRules, steps, nodes})
	if err != nil {
		return nil, err
	}
	if err := handOver(tab, events); err != nil {
		return nil, fmt.Errorf("mp4: attest: hand the recording over: %w", err)
	}
	// args is JSON that json.Marshal wrote, hence a plain JavaScript
	// literal.
	res, err := chromedp.Run(tab, chromedp.Evaluate[attestResult](attestScript()+"(__consentkit.taken(),"+string(args)+")", chromedp.EvalAwaitPromise))
	if err != nil {
		return nil, fmt.Errorf("mp4: attest: replay and measure: %w", err)
	}
	if len(res.Consents) != len(nodes) {
		return nil, fmt.Errorf("mp4: attest: %d measures for %d nodes", len(res.Consents), len(nodes))
	}
	shot, err := screenshot(tab)
	if err != nil {
		return nil, fmt.Errorf("mp4: attest: screenshot: %w", err)
	}
	a := &Attestation{Screenshot: shot, Consents: make([]Measured, len(nodes))}
	for i, m := range res.Consents {
		a.Consents[i] = Measured{NodeID: nodes[i], Found: m.Found, Text: m.Text,
			InViewport: m.Visibility.InViewport, Visible: m.Visibility.Visible,
			FontSizePx: m.Visibility.FontSizePx, ContrastRatio: m.Visibility.ContrastRatio,
			TextColor: m.Visibility.TextColor, BackgroundColor: m.Visibility.BackgroundColor,
			HiddenText: m.Visibility.HiddenText}
		if a.Consents[i].HiddenText == nil {
			a.Consents[i].HiddenText = []string{}
		}
	}
	mu.Lock()
	all := slices.Concat(res.Unreproducible, refused)
	mu.Unlock()
	a.Unreproducible = unreproducible(all)
	return a, nil
}

// refusedKinds names the refused requests that Unreproducible lists: those
// that change what the page shows.
var refusedKinds = map[network.ResourceType]string{
	network.ResourceTypeStylesheet: "stylesheet",
	network.ResourceTypeImage:      "image",
	network.ResourceTypeMedia:      "media",
	network.ResourceTypeDocument:   "frame",
}

// unreproducible sorts and deduplicates the entries, and bounds them.
func unreproducible(entries []string) []string {
	out := slices.Compact(slices.Sorted(slices.Values(entries)))
	if out == nil {
		return []string{}
	}
	if len(out) > MaxUnreproducible {
		more := len(out) - (MaxUnreproducible - 1)
		out = append(out[:MaxUnreproducible-1], fmt.Sprintf("and %d more", more))
	}
	return out
}

// screenshot draws the tab and returns the frame as PNG. The tab draws
// only when asked (see Converter.replay); a frame drawn without damage
// comes back without a screenshot, so the page is damaged, out of sight,
// until one does.
func screenshot(ctx context.Context) ([]byte, error) {
	for try := 0; ; try++ {
		res, err := chromedp.Call(ctx, headlessexperimental.BeginFrame, headlessexperimental.BeginFrameParams{Screenshot: attestPNG})
		if err != nil {
			return nil, err
		}
		if len(res.ScreenshotData) > 0 {
			return res.ScreenshotData, nil
		}
		if try == 5 {
			return nil, errors.New("no screenshot from Chromium")
		}
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`__consentkitDamage()`)); err != nil {
			return nil, err
		}
	}
}

// attestPNG is how the attestation's screenshot is taken: PNG, compressed
// as well as Chromium can (it is kept, unlike the frames of a video).
var attestPNG = &headlessexperimental.ScreenshotParams{Format: headlessexperimental.ScreenshotParamsFormatPng}

// attestResult is what attestJS returns.
type attestResult struct {
	Consents []struct {
		Found      bool   `json:"found"`
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
	} `json:"consents"`
	Unreproducible []string `json:"unreproducible"`
}

// attestScript returns attestJS with the snippet's measure in it.
var attestScript = sync.OnceValue(func() string {
	return strings.Replace(attestJS, "/* capture.MeasureJS */", capture.MeasureJS, 1)
})

// attestJS is a function of the recording and of [rules, steps, nodes]:
// it loads the replay, steps the virtual clock to each time in steps
// (milliseconds from the recording's start), waits for the fonts and images
// the replay is loading, at most two seconds, and returns the measure of
// each node and what the replay could not reproduce.
const attestJS = `(async function (events, args) {
  'use strict';
  const [rules, steps, nodes] = args;
  const consentkitMeasure = (function () {
/* capture.MeasureJS */
    return consentkitMeasure;
  })();
  // The screenshot needs a frame with damage: an element of the replay
  // page, under the replayed one, changes.
  window.__consentkitDamage = () => {
    let d = document.getElementById('consentkit-damage');
    if (!d) {
      d = document.createElement('div');
      d.id = 'consentkit-damage';
      d.style.cssText = 'position:absolute;left:0;top:0;width:1px;height:1px;z-index:-1';
      document.body.prepend(d);
    }
    d.style.background = d.style.background ? '' : '#fff';
    return true;
  };
  const api = window.__consentkit;
  // The replayer casts events in time order; the last one cast is the
  // consent moment's state.
  let last = null;
  for (const e of events) if (e && typeof e.timestamp === 'number' && (!last || e.timestamp >= last.timestamp)) last = e;
  api.load(events, rules);
  const replayer = api.replayer();
  let reached = false;
  replayer.on('event-cast', (e) => { if (e === last) reached = true; });
  const later = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  let now = 0;
  for (const at of steps) {
    api.advance(Math.max(0, at - now));
    now = Math.max(now, at);
    // A replay that pauses for a stylesheet it cannot load goes on when
    // rrweb's timer (loadTimeout, 0 ms) fires: before the clock moves on.
    for (let i = 0; i < 100 && !reached && replayer.service.state.matches('paused'); i++) await later(0);
  }
  if (!reached) replayer.pause(now + 1); // the rest of the events, at once
  if (!reached) throw new Error('the replay did not reach the last event');

  const top = replayer.iframe.contentDocument;
  const docs = [];
  (function collect(doc, depth) {
    if (!doc || depth > 8) return;
    docs.push(doc);
    for (const f of doc.querySelectorAll('iframe, frame')) {
      let inner = null;
      try { inner = f.contentDocument; } catch (e) { /* another origin */ }
      collect(inner, depth + 1);
    }
  })(top, 0);
  // Fonts and images the replay asked for fail at once; the page is
  // measured and shot once they have. A layout first: it is what starts
  // the loading of the fonts that the text uses.
  const pending = [];
  for (const doc of docs) {
    if (doc.documentElement) void doc.documentElement.getBoundingClientRect();
    if (doc.fonts && doc.fonts.status === 'loading') pending.push(doc.fonts.ready);
    for (const img of doc.images) {
      if (!img.complete) pending.push(new Promise((resolve) => { img.addEventListener('load', resolve); img.addEventListener('error', resolve); }));
    }
  }
  if (pending.length) await Promise.race([Promise.all(pending), later(2000)]);

  const mirror = replayer.getMirror();
  const page = {};
  const consents = nodes.map((id) => {
    const el = mirror.getNode(id);
    if (!el || el.nodeType !== 1 || !el.isConnected) return { found: false, text: '', visibility: { hidden_text: [] } };
    try {
      const m = consentkitMeasure(el, el.ownerDocument.defaultView, page);
      return { found: true, text: m.text, visibility: m.visibility };
    } catch (e) { // as the snippet does when a measure fails
      return { found: true, text: el.innerText || '', visibility: { in_viewport: false, visible: false, font_size_px: 0,
        text_color: '', background_color: '', contrast_ratio: 1, hidden_text: [] } };
    }
  });

  const out = new Set();
  const real = (url) => !!url && !/^(data|blob|about|javascript):/i.test(url);
  for (const doc of docs) {
    for (const l of doc.querySelectorAll('link[href]')) {
      if (/(^|\s)stylesheet(\s|$)/i.test(l.rel) && !/(^|\s)alternate(\s|$)/i.test(l.rel) && !l.disabled && !l.sheet && real(l.href)) out.add('stylesheet ' + l.href);
    }
    for (const img of doc.images) {
      const src = img.currentSrc || img.src;
      if (real(src) && (!img.complete || img.naturalWidth === 0)) out.add('image ' + src);
    }
    // Media elements keep their source as data-consentkit-src, or in
    // renamed <source> children (see clockScript).
    for (const m of doc.querySelectorAll('video, audio')) {
      const child = m.querySelector('[data-consentkit-src], consentkit-source[src]');
      const src = m.getAttribute('data-consentkit-src') || (child && (child.getAttribute('data-consentkit-src') || child.getAttribute('src')));
      out.add('media ' + (real(src) ? src : 'node ' + mirror.getId(m)));
    }
    for (const cv of doc.querySelectorAll('canvas')) out.add('canvas node ' + mirror.getId(cv));
    if (doc.fonts) doc.fonts.forEach((f) => { if (f.status === 'error' || f.status === 'loading') out.add('font ' + f.family); });
  }
  return { consents, unreproducible: Array.from(out) };
})`
