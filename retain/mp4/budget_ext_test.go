package mp4_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/consentkit/consentkit/retain/mp4"
)

// TestConvertRefusesOverDrawingBudget converts 4096×4096 recordings with
// MaxDuration 2 s at 5 fps, a budget of 10 frames of 2560×1600: one of 5
// frames is refused at once, as a permanent *RecordingError, before any
// browser starts; one of 2 frames converts.
func TestConvertRefusesOverDrawingBudget(t *testing.T) {
	c, _ := converter(t, mp4.Config{FPS: 5, MaxDuration: 2 * time.Second})
	rec := func(span int) []byte {
		return []byte(fmt.Sprintf(`[{"type":4,"data":{"href":"http://example.test/","width":4096,"height":4096},"timestamp":0},
{"type":2,"data":{"node":{"type":0,"id":1,"childNodes":[{"type":2,"tagName":"html","id":2,"attributes":{},"childNodes":[
{"type":2,"tagName":"head","id":3,"attributes":{},"childNodes":[]},{"type":2,"tagName":"body","id":4,"attributes":{},"childNodes":[]}]}]},
"initialOffset":{"top":0,"left":0}},"timestamp":1},
{"type":3,"data":{"source":2,"type":2,"id":4,"x":1,"y":1},"timestamp":%d}]`, span))
	}
	_, err := c.Convert(context.Background(), rec(1000), filepath.Join(t.TempDir(), "over.mp4"))
	var re *mp4.RecordingError
	if !errors.As(err, &re) || !re.Permanent() {
		t.Fatalf("5 frames of 4096x4096: %v, want a permanent *RecordingError", err)
	}
	t.Log(err)
	if n := c.BrowsersStarted(); n != 0 {
		t.Errorf("%d browsers started for a recording over the budget, want none", n)
	}
	out := filepath.Join(t.TempDir(), "under.mp4")
	d, err := c.Convert(context.Background(), rec(400), out)
	if err != nil {
		t.Fatalf("2 frames of 4096x4096: %v", err)
	}
	if p := ffprobe(t, out).Streams[0]; d != 400*time.Millisecond || p.Width != 4096 || p.Height != 4096 {
		t.Errorf("2 frames of 4096x4096: %v of video, %+v", d, p)
	}
}
