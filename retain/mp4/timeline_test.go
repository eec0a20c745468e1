package mp4

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseTimelineOfTheTestRecording(t *testing.T) {
	raw, err := os.ReadFile("../../testdata/rrweb-form-recording.json")
	if err != nil {
		t.Fatal(err)
	}
	tl, _, err := readRecording(raw, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if tl.total != 5642*time.Millisecond || tl.width != 1024 || tl.height != 626 {
		t.Errorf("total %v, viewport %dx%d; want 5.642s, 1024x626 (625 rounded up to even)", tl.total, tl.width, tl.height)
	}
	if tl.snapshotAt <= 0 || tl.snapshotAt > 500*time.Millisecond {
		t.Errorf("first full snapshot at %v", tl.snapshotAt)
	}
	frames := tl.frames(25)
	if len(frames) != 142 { // ceil(5642 / 40)
		t.Fatalf("%d frames, want 142", len(frames))
	}
	if d := time.Duration(len(frames))*40*time.Millisecond - tl.total; d < 0 || d >= 40*time.Millisecond {
		t.Errorf("video lasts %v longer than the recording, want less than one frame", d)
	}
}

func TestFrames(t *testing.T) {
	tl := timeline{
		total:      1000 * time.Millisecond,
		snapshotAt: 90 * time.Millisecond,
		actions:    []time.Duration{0, 90 * time.Millisecond, 95 * time.Millisecond, 500 * time.Millisecond, 1000 * time.Millisecond},
	}
	frames := tl.frames(10) // 100 ms a frame
	if len(frames) != 10 {
		t.Fatalf("%d frames, want 10", len(frames))
	}
	want := []frame{
		{90 * time.Millisecond, true},  // held until the snapshot
		{100 * time.Millisecond, true}, // the action at 95 ms
		{200 * time.Millisecond, false},
		{300 * time.Millisecond, false},
		{400 * time.Millisecond, false},
		{500 * time.Millisecond, true},
		{600 * time.Millisecond, false},
		{700 * time.Millisecond, false},
		{800 * time.Millisecond, false},
		{1000 * time.Millisecond, true}, // the last frame shows the end
	}
	for i := range want {
		if frames[i] != want[i] {
			t.Errorf("frame %d = %+v, want %+v", i, frames[i], want[i])
		}
	}
}

func recording(events ...string) []byte { return []byte("[" + strings.Join(events, ",") + "]") }

func TestParseTimelineMousePositionsAndErrors(t *testing.T) {
	raw := recording(
		`{"type":4,"data":{"width":801,"height":99999},"timestamp":1000}`,
		`{"type":2,"data":{},"timestamp":1010}`,
		`{"type":3,"data":{"source":1,"positions":[{"x":1,"y":1,"id":1,"timeOffset":-300},{"x":2,"y":2,"id":1,"timeOffset":-100}]},"timestamp":1500}`,
	)
	tl, _, err := readRecording(raw, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{0, 10 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 500 * time.Millisecond}
	if len(tl.actions) != len(want) {
		t.Fatalf("actions %v, want %v", tl.actions, want)
	}
	for i := range want {
		if tl.actions[i] != want[i] {
			t.Errorf("actions %v, want %v", tl.actions, want)
			break
		}
	}
	if tl.width != 802 || tl.height != maxViewport {
		t.Errorf("viewport %dx%d, want 802x%d", tl.width, tl.height, maxViewport)
	}
	for name, bad := range map[string][]byte{
		"not an array":     []byte(`{}`),
		"one event":        recording(`{"type":2,"data":{},"timestamp":1}`),
		"no timestamp":     recording(`{"type":4,"data":{}}`, `{"type":2,"data":{},"timestamp":1}`),
		"no full snapshot": recording(`{"type":4,"data":{},"timestamp":1}`, `{"type":3,"data":{},"timestamp":2}`),
		"negative time":    recording(`{"type":4,"data":{},"timestamp":-5}`, `{"type":2,"data":{},"timestamp":1}`),
	} {
		_, _, err := readRecording(bad, 0, 0)
		var re *RecordingError
		if !errors.As(err, &re) || !re.Permanent() {
			t.Errorf("%s: %v, want a permanent *RecordingError", name, err)
		}
	}
}

// rrweb replays recordings whose clock starts at 0; so does the converter.
func TestTimestampsFromZero(t *testing.T) {
	raw := recording(
		`{"type":4,"data":{"width":100,"height":100},"timestamp":0}`,
		`{"type":2,"data":{},"timestamp":0}`,
		`{"type":3,"data":{"source":2},"timestamp":1500}`,
	)
	tl, _, err := readRecording(raw, 0, 0)
	if err != nil || tl.total != 1500*time.Millisecond || tl.snapshotAt != 0 {
		t.Fatalf("timeline %+v, %v; want 1.5 s with the snapshot at 0", tl, err)
	}
}

// One event dated 198 days after the others would plan 427 million frames:
// the recording is refused at once, permanently, naming the pause; with
// CompressIdle it converts at its real length.
func TestOutlierTimestampIsBounded(t *testing.T) {
	const day = 24 * 60 * 60 * 1000
	raw := recording(
		`{"type":4,"data":{"width":100,"height":100},"timestamp":1795301391553}`,
		`{"type":2,"data":{},"timestamp":1795301391600}`,
		`{"type":3,"data":{"source":2},"timestamp":1795301393000}`,
		fmt.Sprintf(`{"type":3,"data":{"source":2},"timestamp":%d}`, 1795301393000+198*day),
	)
	_, _, err := readRecording(raw, 0, time.Hour)
	var re *RecordingError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "4752h0m0s after event 2") || !strings.Contains(err.Error(), "CompressIdle") {
		t.Fatalf("outlier: %v, want a RecordingError naming the pause after event 2", err)
	}
	tl, _, err := readRecording(raw, 5*time.Second, time.Hour)
	if err != nil || tl.total != 1447*time.Millisecond+5*time.Second {
		t.Errorf("with CompressIdle: %v, %v; want 6.447 s", tl.total, err)
	}
	if n := len(tl.frames(25)); n != 162 {
		t.Errorf("frames with CompressIdle: %d, want 162", n)
	}
}

func TestCompressIdle(t *testing.T) {
	raw := recording(
		`{"type":4,"data":{"width":100,"height":100},"timestamp":1000}`,
		`{"type":2,"data":{},"timestamp":1100}`,
		`{"type":3,"data":{"source":2},"timestamp":9100}`, // 8 s idle
		`{"type":3,"data":{"source":2},"timestamp":9200}`,
		`{"type":3,"data":{"source":2},"timestamp":30200}`, // 21 s idle
	)
	tl, out, err := readRecording(raw, time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	if tl.total != 2200*time.Millisecond {
		t.Errorf("compressed total %v, want 2.2s", tl.total)
	}
	got := []int64{}
	for _, e := range out {
		var ev struct{ Timestamp int64 }
		if err := json.Unmarshal(e, &ev); err != nil {
			t.Fatal(err)
		}
		got = append(got, ev.Timestamp)
	}
	if want := []int64{1000, 1100, 2100, 2200, 3200}; !equal(got, want) {
		t.Errorf("timestamps %v, want %v", got, want)
	}
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// The timeline reads an event's members as JSON.parse and the replayer do:
// by their exact names once unescaped, the last of a name kept. A member
// named "Timestamp" is not the timestamp, so it cannot make a recording
// look shorter than the replay plays it, nor move the consent moment.
func TestEventMembersByExactName(t *testing.T) {
	raw := recording(
		`{"type":4,"data":{"width":100,"height":100,"Width":3000},"timestamp":1000}`,
		`{"type":2,"data":{},"timestamp":1000}`,
		`{"type":3,"data":{"source":2},"timestamp":5000,"Timestamp":1000}`,
		`{"type":3,"data":{"source":2},"timestamp":1000,"timestamp":6000}`,
		`{"type":3,"data":{"source":2},"timest\u0061mp":7000}`,
	)
	tl, _, err := readRecording(raw, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if tl.total != 6*time.Second || tl.width != 100 {
		t.Errorf("total %v, width %d; want 6s (the escaped name is timestamp too), 100", tl.total, tl.width)
	}
	if _, _, err := readRecording(raw, 0, 5*time.Second); err == nil {
		t.Error("a recording of 6 s passed MaxDuration 5 s")
	}
	events, err := splitEvents(raw)
	if err != nil {
		t.Fatal(err)
	}
	_, _, end, _, _, err := eventsUntil(events, 10_000)
	if err != nil || end != 7000 {
		t.Errorf("the consent moment %v, %v; want 7000", end, err)
	}
	_, _, end, _, _, err = eventsUntil(events, 5500)
	if err != nil || end != 5000 {
		t.Errorf("the consent moment before 5500: %v, %v; want 5000 (not the member Timestamp's 1000)", end, err)
	}
	for name, bad := range map[string]string{
		"type not an integer":   `{"type":3.5,"data":{},"timestamp":2000}`,
		"type a string":         `{"type":"3","data":{},"timestamp":2000}`,
		"only a Type":           `{"Type":3,"data":{},"timestamp":2000}`,
		"timestamp a string":    `{"type":3,"data":{},"timestamp":"2000"}`,
		"timestamp null":        `{"type":3,"data":{},"timestamp":null}`,
		"timestamp beyond f64":  `{"type":3,"data":{},"timestamp":1e400}`,
		"not an object":         `[3,2000]`,
		"only a Timestamp":      `{"type":3,"data":{},"Timestamp":2000}`,
		"negative, last of two": `{"type":3,"data":{},"timestamp":2000,"timestamp":-1}`,
	} {
		_, _, err := readRecording(recording(`{"type":2,"data":{},"timestamp":1000}`, bad), 0, 0)
		var re *RecordingError
		if !errors.As(err, &re) {
			t.Errorf("%s: %v, want a *RecordingError", name, err)
		}
	}
}

// No timestamp can overflow the timeline's Durations, whatever
// MaxDuration says: a recording whose events span more than a century is
// refused, and a position's time offset stays within the recording.
func TestTimelineSpanBounded(t *testing.T) {
	for _, maxDuration := range []time.Duration{0, time.Hour} {
		for _, ts := range []string{"10000000000000", "1e300"} {
			raw := recording(`{"type":2,"data":{},"timestamp":1000}`, `{"type":3,"data":{"source":2},"timestamp":`+ts+`}`)
			var re *RecordingError
			if _, _, err := readRecording(raw, 0, maxDuration); !errors.As(err, &re) {
				t.Errorf("timestamp %s, MaxDuration %v: %v, want a *RecordingError", ts, maxDuration, err)
			}
		}
		raw := recording(`{"type":3,"data":{},"timestamp":1e300}`, `{"type":2,"data":{},"timestamp":0}`)
		if _, _, err := readRecording(raw, 0, maxDuration); err == nil {
			t.Errorf("MaxDuration %v: an event a googol of milliseconds before the snapshot passed", maxDuration)
		}
	}
	raw := recording(
		`{"type":2,"data":{},"timestamp":1000}`,
		`{"type":3,"data":{"source":1,"positions":[{"x":1,"y":1,"id":1,"timeOffset":-1e300},{"x":1,"y":1,"id":1,"timeOffset":1e300}]},"timestamp":2000}`,
	)
	tl, _, err := readRecording(raw, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range tl.actions {
		if a < 0 || a > tl.total {
			t.Errorf("action at %v, outside the recording's %v", a, tl.total)
		}
	}
}
