package capture_test

import (
	"encoding/json"
	"testing"

	"github.com/consentkit/consentkit/capture"
	"github.com/consentkit/consentkit/consent"
)

// An rrweb event's type and timestamp are JSON numbers (D34): a string
// that holds a number is refused, as the replayer would not play the event
// (found by FuzzCaptureEvents).
func TestCheckEventsNumbers(t *testing.T) {
	for _, tc := range []struct {
		events string
		ok     bool
	}{
		{`[{"type":3,"timestamp":5}]`, true},
		{`[{"type":-1,"timestamp":0.5}]`, true},
		{`[{"timestamp":1e3,"type":2}]`, true},
		{`[{"type":"3","timestamp":5}]`, false},
		{`[{"type":3,"timestamp":"5"}]`, false},
		{`[{"type":3,"timestamp":5},{"type":"2","timestamp":6}]`, false},
		{`[{"type":null,"timestamp":5}]`, false},
		{`[{"type":3,"timestamp":null}]`, false},
		{`[{"type":3}]`, false},
		{`[{"type":3.0,"timestamp":5}]`, false},
		{`[{"type":3,"timestamp":-5}]`, false},
		{`[{"type":3,"timestamp":5}] ]`, false},
	} {
		err := capture.CheckEvents(json.RawMessage(tc.events))
		if (err == nil) != tc.ok || err != nil && consent.ErrorCode(err) != consent.Invalid {
			t.Errorf("CheckEvents(%s) = %v, want ok %v (or Invalid)", tc.events, err, tc.ok)
		}
	}
}
