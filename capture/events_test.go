package capture_test

import (
	"encoding/json"
	"testing"

	"github.com/consentkit/consentkit/capture"
	"github.com/consentkit/consentkit/consent"
)

// An rrweb event's type and timestamp are JSON numbers (D34) under those
// very names: a string that holds a number is refused, as the replayer
// would not play the event (found by FuzzCaptureEvents).
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
		// Names as the replayer reads them, exactly (found by
		// FuzzCaptureEvents): encoding/json matches a struct field in any
		// case.
		{`[{"TYpe":0,"timestAmp":0}]`, false},
		{`[{"Type":3,"timestamp":5}]`, false},
		{`[{"type":3,"Timestamp":5}]`, false},
		{`[{"type":3,"timestamp":5,"Type":"x","data":{"type":"y"}}]`, true},
		{`[{"type":"x","timestamp":5,"type":3}]`, true}, // the last of a repeated name, as JSON.parse takes it
		{`[null]`, false},
		{`[{"type":3,"timestamp":5,"data":{"source":0,"texts":[],"attributes":[{"id":1,"attributes":{"value":"a"}}]}}]`, true},
	} {
		err := capture.CheckEvents(json.RawMessage(tc.events))
		if (err == nil) != tc.ok || err != nil && consent.ErrorCode(err) != consent.Invalid {
			t.Errorf("CheckEvents(%s) = %v, want ok %v (or Invalid)", tc.events, err, tc.ok)
		}
	}
}
