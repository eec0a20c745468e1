package capture_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/consentkit/consentkit/capture"
	"github.com/consentkit/consentkit/insights"
)

// A chunk that capture stores is one the insights walker reads: a number
// past float64's range, which JSON.parse reads as Infinity and the
// replayer plays, must not make the stored recording ErrMalformed to
// insights (which then judges it as if it held no events at all).
func TestCheckedEventsReadByInsights(t *testing.T) {
	for _, events := range []string{
		`[{"type":3,"timestamp":1,"data":{"source":1e999}}]`,
		`[{"type":3,"timestamp":1,"data":{"source":1,"x":1e400}}]`,
		`[{"type":3,"timestamp":1,"pad":-1e309}]`,
	} {
		if err := capture.CheckEvents(json.RawMessage(events)); err != nil {
			continue // refused at capture: never stored
		}
		_, err := insights.Extract(bytes.NewReader([]byte(events)), "Mozilla/5.0", insights.Limits{})
		if errors.Is(err, insights.ErrMalformed) {
			t.Errorf("CheckEvents accepts %s, insights.Extract: %v", events, err)
		}
	}
}
