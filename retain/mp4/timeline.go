package mp4

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/consentkit/consentkit/internal/jsonscan"
)

// rrweb event types and incremental sources used here.
const (
	eventFullSnapshot = 2
	eventIncremental  = 3
	eventMeta         = 4
	eventCustom       = 5
)

// Default viewport when a recording has no meta event.
const defaultWidth, defaultHeight = 1024, 768

// maxViewport bounds the viewport a recording may ask for: a larger side
// is clamped to it. Converter.Attest measures at the recording's viewport
// up to it.
const maxViewport = 4096

// budgetWidth × budgetHeight is the viewport of the drawing budget: a
// conversion may draw as many pixels as frames of this size for
// Config.MaxDuration at Config.FPS, and no more. A frame where the page
// animates is drawn and shot whole, at a cost of about its pixels: some
// 80 ns a pixel for a full-page CSS filter animation on a 2-core machine,
// so 0.19 s a frame at 1920×1080, 0.34 s at 2560×1600, 1.3 s at 4096²
// (32 times real time at 25 fps). The budget holds every common desktop
// viewport (2560×1440, 1920×1080 and smaller), so such recordings convert
// up to MaxDuration as before; a larger viewport converts up to
// proportionally less time (4096×4096 about 14 minutes of the default
// hour), and no recording costs more than the largest of those.
const budgetWidth, budgetHeight = 2560, 1600

// budgetArea is the pixels of a frame of budgetWidth × budgetHeight.
const budgetArea = budgetWidth * budgetHeight

// timeline is what the converter needs to know of a recording before
// replaying it.
type timeline struct {
	total         time.Duration   // from the first event to the last
	width, height int             // viewport, rounded up to even numbers
	snapshotAt    time.Duration   // offset of the first full snapshot
	actions       []time.Duration // sorted offsets at which the replay changes
}

// event is the part of an rrweb event read here.
type event struct {
	Type      int
	Timestamp float64
	Data      []byte // raw, a slice of the recording; nil when absent
}

// readEvent reads an event's type, timestamp and data by their names,
// exactly as JSON.parse, and so the replayer, reads them: names compared
// once unescaped, case and all, the last member of a name kept
// (encoding/json would also take "Timestamp" for "timestamp", and the
// timeline could then disagree with the replay). The type is an integer,
// the timestamp a number of milliseconds, not negative.
func readEvent(raw []byte) (event, bool) {
	var v [3][]byte
	if !members(raw, v[:], "type", "timestamp", "data") {
		return event{}, false
	}
	typ, err := strconv.Atoi(string(v[0]))
	if err != nil {
		return event{}, false
	}
	ts, err := strconv.ParseFloat(string(v[1]), 64) // a valid JSON value: a number, or not one at all
	if err != nil || ts < 0 {
		return event{}, false
	}
	return event{Type: typ, Timestamp: ts, Data: v[2]}, true
}

// members sets vals[i] to the raw value of obj's member names[i] (nil when
// it has none), as readEvent reads names, and reports whether obj is a
// JSON object.
func members(obj []byte, vals [][]byte, names ...string) bool {
	clear(vals)
	return jsonscan.Object(obj, func(name, value []byte) error {
		for i, n := range names {
			if jsonscan.NameIs(name, n) {
				vals[i] = value
			}
		}
		return nil
	}) == nil
}

// viewport reads a meta event's width and height; ok is false unless both
// are positive integers.
func viewport(data []byte) (width, height int, ok bool) {
	var v [2][]byte
	if !members(data, v[:], "width", "height") {
		return 0, 0, false
	}
	w, werr := strconv.Atoi(string(v[0]))
	h, herr := strconv.Atoi(string(v[1]))
	return w, h, werr == nil && herr == nil && w > 0 && h > 0
}

// positionOffsets reads the timeOffset of each position of a batch of
// mouse or touch positions (0 for one without); ok is false when the data
// holds no such batch or one that cannot be read.
func positionOffsets(data []byte) (offsets []float64, ok bool) {
	var v [1][]byte
	if !members(data, v[:], "positions") || v[0] == nil {
		return nil, false
	}
	err := jsonscan.Array(v[0], func(_ int, p []byte) error {
		var o [1][]byte
		if !members(p, o[:], "timeOffset") {
			return errNotPosition
		}
		off := 0.0
		if o[0] != nil {
			var err error
			if off, err = strconv.ParseFloat(string(o[0]), 64); err != nil {
				return errNotPosition
			}
		}
		offsets = append(offsets, off)
		return nil
	})
	return offsets, err == nil
}

var errNotPosition = errors.New("not a position")

// RecordingError is a recording that cannot be converted whatever is tried:
// malformed, without a full snapshot, spanning more than MaxDuration, or
// with more pixels to draw than MaxDuration allows (see Config.MaxDuration).
// It is permanent: the conversion worker fails the job at once.
type RecordingError struct {
	Reason string
}

func (e *RecordingError) Error() string { return "mp4: " + e.Reason }

// Permanent reports that trying again cannot help.
func (e *RecordingError) Permanent() bool { return true }

func recordingErrorf(format string, args ...any) error {
	return &RecordingError{Reason: fmt.Sprintf(format, args...)}
}

// splitEvents checks that raw is a JSON array and returns its events,
// each a slice of raw: nothing of the recording is copied.
func splitEvents(raw []byte) ([]json.RawMessage, error) {
	var events []json.RawMessage
	err := jsonscan.Array(raw, func(_ int, e []byte) error {
		events = append(events, e)
		return nil
	})
	if err != nil {
		return nil, recordingErrorf("recording is not a JSON array of events: %v", err)
	}
	return events, nil
}

// readRecording reads a recording, a JSON array of rrweb events, as
// parseTimeline does, and returns its timeline and its events to replay.
func readRecording(raw []byte, compressIdle, maxDuration time.Duration) (timeline, []json.RawMessage, error) {
	events, err := splitEvents(raw)
	if err != nil {
		return timeline{}, nil, err
	}
	tl, err := parseTimeline(events, compressIdle, maxDuration)
	return tl, events, err
}

// parseTimeline reads the events of a recording (rrweb events, in time
// order as rrweb records them; timestamps are milliseconds from any origin,
// 0 included). Gaps between events longer than compressIdle are shortened
// to compressIdle when it is positive, and the events of events are then
// replaced by copies rewritten to match. A recording that, so compressed,
// spans more than maxDuration is refused with a *RecordingError before
// anything is planned, so that no timestamp can make a conversion's work
// unbounded.
func parseTimeline(events []json.RawMessage, compressIdle, maxDuration time.Duration) (timeline, error) {
	if len(events) < 2 {
		return timeline{}, recordingErrorf("a recording needs at least two events")
	}
	parsed := make([]event, len(events))
	for i, e := range events {
		var ok bool
		if parsed[i], ok = readEvent(e); !ok {
			return timeline{}, recordingErrorf("event %d has no valid type and timestamp", i)
		}
	}
	if compressIdle > 0 {
		compress(parsed, float64(compressIdle.Milliseconds()))
		for i, e := range events {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(e, &m); err != nil {
				return timeline{}, fmt.Errorf("mp4: event %d: %w", i, err)
			}
			m["timestamp"] = json.RawMessage(fmt.Sprint(int64(parsed[i].Timestamp)))
			events[i], _ = json.Marshal(m) // a map of raw JSON always marshals
		}
	}
	// The span is bounded before any time becomes a Duration, which
	// holds some 292 years.
	first, last := parsed[0].Timestamp, parsed[0].Timestamp
	for _, e := range parsed {
		first, last = min(first, e.Timestamp), max(last, e.Timestamp)
	}
	if last-first > maxSpanMillis {
		return timeline{}, recordingErrorf("the recording's events span %s, more than the %s a conversion can plan", millis(last-first), millis(maxSpanMillis))
	}
	if maxDuration > 0 && last-parsed[0].Timestamp > float64(maxDuration.Milliseconds()) {
		gap, after := longestGap(parsed)
		return timeline{}, recordingErrorf("the recording spans %s, more than the %s a conversion may take (Config.MaxDuration); "+
			"its longest pause, %s after event %d, is likely a wrong timestamp: Config.CompressIdle shortens pauses",
			millis(last-parsed[0].Timestamp), maxDuration, millis(gap), after)
	}
	start := parsed[0].Timestamp
	tl := timeline{width: defaultWidth, height: defaultHeight, snapshotAt: -1}
	offset := func(ms float64) time.Duration {
		return time.Duration(math.Round((ms - start) * float64(time.Millisecond)))
	}
	metaSeen := false
	for _, e := range parsed {
		at := offset(e.Timestamp)
		tl.total = max(tl.total, at)
		switch e.Type {
		case eventMeta:
			if w, h, ok := viewport(e.Data); !metaSeen && ok {
				tl.width, tl.height = even(min(w, maxViewport)), even(min(h, maxViewport))
				metaSeen = true
			}
		case eventFullSnapshot:
			if tl.snapshotAt < 0 {
				tl.snapshotAt = at
			}
		case eventIncremental:
			// A batch of mouse or touch positions replays each position at
			// its own time, before the batch's timestamp, within the
			// recording.
			if offsets, ok := positionOffsets(e.Data); ok {
				for _, o := range offsets {
					tl.actions = append(tl.actions, max(0, offset(min(max(e.Timestamp+o, first), last))))
				}
			}
		}
		tl.actions = append(tl.actions, at)
	}
	if tl.snapshotAt < 0 {
		return timeline{}, recordingErrorf("the recording has no full snapshot")
	}
	slices.Sort(tl.actions)
	return tl, nil
}

// longestGap returns the longest pause between consecutive events, in
// milliseconds, and the index of the event before it.
func longestGap(events []event) (float64, int) {
	var (
		longest float64
		at      int
	)
	for i := 1; i < len(events); i++ {
		if gap := events[i].Timestamp - events[i-1].Timestamp; gap > longest {
			longest, at = gap, i-1
		}
	}
	return longest, at
}

// maxSpanMillis bounds the milliseconds between a recording's earliest and
// latest event whatever Config.MaxDuration says: a century, well within a
// Duration.
const maxSpanMillis = 100 * 366 * 24 * 3600 * 1000

// millis returns ms milliseconds as a Duration rounded to the millisecond,
// or the longest Duration for a span it cannot hold.
func millis(ms float64) time.Duration {
	if ms >= float64(math.MaxInt64/int64(time.Millisecond)) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(math.Round(ms)) * time.Millisecond
}

// compress shortens every gap between consecutive events to at most max
// milliseconds, shifting later events earlier.
func compress(events []event, max float64) {
	shift := 0.0
	prev := events[0].Timestamp
	for i := range events {
		ts := events[i].Timestamp
		if gap := ts - prev; gap > max {
			shift += gap - max
		}
		prev = ts
		events[i].Timestamp = ts - shift
	}
}

func even(n int) int { return n + n%2 }

// frame is one video frame: the replay time it shows, and whether anything
// in the recording may have changed since the previous frame.
type frame struct {
	at    time.Duration
	dirty bool
}

// frames returns the frames of a video at fps frames per second. There are
// ceil(total/frame) of them, so the video lasts as long as the recording,
// within one frame; frame i shows the replay at i frames, except that frames
// before the first full snapshot hold it (there is nothing to show before),
// and the last frame shows the end of the recording.
func (tl timeline) frames(fps int) []frame {
	step := time.Second / time.Duration(fps)
	n := tl.frameCount(fps)
	out := make([]frame, n)
	next := 0 // index into tl.actions
	prev := time.Duration(-1)
	for i := range out {
		at := time.Duration(i) * step
		if i == n-1 {
			at = tl.total
		}
		at = max(at, tl.snapshotAt)
		dirty := i == 0
		for next < len(tl.actions) && tl.actions[next] <= at {
			if tl.actions[next] > prev {
				dirty = true
			}
			next++
		}
		out[i] = frame{at: at, dirty: dirty}
		prev = at
	}
	return out
}

// frameCount returns how many frames the video has at fps: as many as
// frames returns, without making them.
func (tl timeline) frameCount(fps int) int {
	step := time.Second / time.Duration(fps)
	return max(1, int((tl.total+step-1)/step))
}

// drawing returns the pixels a conversion at fps draws at most: every
// frame of the recording's viewport.
func (tl timeline) drawing(fps int) float64 {
	return float64(tl.frameCount(fps)) * float64(tl.width) * float64(tl.height)
}

// drawBudget returns the pixels a conversion at fps may draw when
// recordings may span maxDuration: that many frames of budgetArea.
func drawBudget(fps int, maxDuration time.Duration) float64 {
	return float64(timeline{total: maxDuration}.frameCount(fps)) * budgetArea
}

// checkDrawing refuses, with a *RecordingError, a recording whose frames
// would draw more pixels than drawBudget allows: each frame of an
// animated page is drawn and shot whole, so its cost is its pixels, and a
// large viewport, over many frames, could keep a browser for days. A
// recording in a viewport of budgetArea or fewer pixels that spans at most
// maxDuration is always within the budget.
func (tl timeline) checkDrawing(fps int, maxDuration time.Duration) error {
	drawing, budget := tl.drawing(fps), drawBudget(fps, maxDuration)
	if drawing <= budget {
		return nil
	}
	step := time.Second / time.Duration(fps)
	longest := time.Duration(budget/(float64(tl.width)*float64(tl.height))) * step
	return recordingErrorf("the recording's %d×%d viewport over its %d frames (%s at %d fps) is %.4g pixels to draw, "+
		"more than the %.4g a conversion may draw (frames of %d×%d for Config.MaxDuration, %s); "+
		"in this viewport a recording may span at most %s",
		tl.width, tl.height, tl.frameCount(fps), tl.total, fps, drawing, budget,
		budgetWidth, budgetHeight, maxDuration, longest.Truncate(time.Millisecond))
}
