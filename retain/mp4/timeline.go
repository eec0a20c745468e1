package mp4

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/consentkit/consentkit/internal/jsonscan"
)

// rrweb event types and incremental sources used here.
const (
	eventFullSnapshot = 2
	eventIncremental  = 3
	eventMeta         = 4
)

// Default viewport when a recording has no meta event.
const defaultWidth, defaultHeight = 1024, 768

// maxViewport bounds the viewport a recording may ask for.
const maxViewport = 4096

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
}

// RecordingError is a recording that cannot be converted whatever is tried:
// malformed, without a full snapshot, or spanning more than MaxDuration.
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
		// A timestamp that is absent or null stays negative.
		head := struct {
			Type      int     `json:"type"`
			Timestamp float64 `json:"timestamp"`
		}{Timestamp: -1}
		if err := json.Unmarshal(e, &head); err != nil || head.Timestamp < 0 {
			return timeline{}, recordingErrorf("event %d has no valid type and timestamp", i)
		}
		parsed[i] = event{Type: head.Type, Timestamp: head.Timestamp}
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
	start := parsed[0].Timestamp
	tl := timeline{width: defaultWidth, height: defaultHeight, snapshotAt: -1}
	offset := func(ms float64) time.Duration {
		return time.Duration(math.Round((ms - start) * float64(time.Millisecond)))
	}
	metaSeen := false
	for i, e := range parsed {
		at := offset(e.Timestamp)
		tl.total = max(tl.total, at)
		switch e.Type {
		case eventMeta:
			var m struct {
				Data struct{ Width, Height int } `json:"data"`
			}
			if !metaSeen && json.Unmarshal(events[i], &m) == nil && m.Data.Width > 0 && m.Data.Height > 0 {
				tl.width, tl.height = even(min(m.Data.Width, maxViewport)), even(min(m.Data.Height, maxViewport))
				metaSeen = true
			}
		case eventFullSnapshot:
			if tl.snapshotAt < 0 {
				tl.snapshotAt = at
			}
		case eventIncremental:
			// A batch of mouse or touch positions replays each position at
			// its own time, before the batch's timestamp.
			var d struct {
				Data struct {
					Positions []struct{ TimeOffset float64 } `json:"positions"`
				} `json:"data"`
			}
			if json.Unmarshal(events[i], &d) == nil {
				for _, p := range d.Data.Positions {
					tl.actions = append(tl.actions, max(0, offset(e.Timestamp+p.TimeOffset)))
				}
			}
		}
		tl.actions = append(tl.actions, at)
	}
	if tl.snapshotAt < 0 {
		return timeline{}, recordingErrorf("the recording has no full snapshot")
	}
	if maxDuration > 0 && tl.total > maxDuration {
		gap, after := longestGap(parsed)
		return timeline{}, recordingErrorf("the recording spans %s, more than the %s a conversion may take (Config.MaxDuration); "+
			"its longest pause, %s after event %d, is likely a wrong timestamp: Config.CompressIdle shortens pauses",
			tl.total.Round(time.Millisecond), maxDuration, gap.Round(time.Millisecond), after)
	}
	slices.Sort(tl.actions)
	return tl, nil
}

// longestGap returns the longest pause between consecutive events and the
// index of the event before it.
func longestGap(events []event) (time.Duration, int) {
	var (
		longest float64
		at      int
	)
	for i := 1; i < len(events); i++ {
		if gap := events[i].Timestamp - events[i-1].Timestamp; gap > longest {
			longest, at = gap, i-1
		}
	}
	return time.Duration(longest * float64(time.Millisecond)), at
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
	n := max(1, int((tl.total+step-1)/step))
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
