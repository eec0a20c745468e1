package mp4

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// sized is a recording in a width × height viewport whose last event comes
// span after its first.
func sized(width, height int, span time.Duration) []byte {
	return recording(
		fmt.Sprintf(`{"type":4,"data":{"href":"http://example.test/","width":%d,"height":%d},"timestamp":0}`, width, height),
		`{"type":2,"data":{"node":{"type":0,"id":1,"childNodes":[]},"initialOffset":{"top":0,"left":0}},"timestamp":1}`,
		fmt.Sprintf(`{"type":3,"data":{"source":2,"type":2,"id":1,"x":1,"y":1},"timestamp":%d}`, span.Milliseconds()),
	)
}

// TestDrawingBudget checks the bound on the pixels a conversion draws:
// recordings of common viewports pass up to MaxDuration at any frame rate;
// a 4096×4096 one passes up to the longest span the budget allows, and is
// refused one frame beyond it, or at an hour, with a permanent
// *RecordingError that says why.
func TestDrawingBudget(t *testing.T) {
	check := func(raw []byte, fps int, maxDuration time.Duration) error {
		t.Helper()
		tl, _, err := readRecording(raw, 0, maxDuration)
		if err != nil {
			t.Fatal(err)
		}
		return tl.checkDrawing(fps, maxDuration)
	}
	form, err := os.ReadFile("../../testdata/rrweb-form-recording.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, fps := range []int{1, 5, 25, 30, 60} {
		if err := check(form, fps, time.Hour); err != nil {
			t.Errorf("the form recording at %d fps: %v", fps, err)
		}
		for _, v := range [][2]int{{1024, 768}, {1920, 1080}, {1920, 1200}, {2560, 1440}, {2560, 1600}, {2559, 1599}, {1600, 2560}} {
			for _, maxDuration := range []time.Duration{time.Minute, time.Hour, 3 * time.Hour} {
				if err := check(sized(v[0], v[1], maxDuration), fps, maxDuration); err != nil {
					t.Errorf("%dx%d for MaxDuration %v at %d fps: %v", v[0], v[1], maxDuration, fps, err)
				}
			}
		}
	}

	// 4096×4096 at 25 fps for an hour: 90000 frames of 4096×4096 pixels
	// may draw 90000 × 2560×1600 / 4096² = 21972 frames of it, 878.88 s.
	longest := 21972 * 40 * time.Millisecond
	if err := check(sized(4096, 4096, longest), 25, time.Hour); err != nil {
		t.Errorf("4096x4096 for %v, just within the budget: %v", longest, err)
	}
	for _, span := range []time.Duration{longest + 40*time.Millisecond, time.Hour} {
		err := check(sized(4096, 4096, span), 25, time.Hour)
		var re *RecordingError
		if !errors.As(err, &re) || !re.Permanent() {
			t.Fatalf("4096x4096 for %v: %v, want a permanent *RecordingError", span, err)
		}
		for _, want := range []string{"4096×4096 viewport", "2560×1600", "may span at most 14m38.88s"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("4096x4096 for %v: %q does not say %q", span, err, want)
			}
		}
	}
}
