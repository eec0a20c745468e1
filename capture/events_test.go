package capture_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
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

// mapCheck is how CheckEvents read events before it read them in one
// pass: each event decoded into a map of its members. CheckEvents must
// give the same verdict, and the same message but where an event is null
// (which the map reading took for an event without members).
func mapCheck(events []byte) error {
	var list []map[string]json.RawMessage
	if err := json.Unmarshal(events, &list); err != nil || len(list) == 0 {
		return consent.Errorf(consent.Invalid, "events must be a non-empty JSON array of rrweb event objects")
	}
	if len(list) > 100_000 {
		return consent.Errorf(consent.Invalid, "events: at most %d in a chunk", 100_000)
	}
	isNumber := func(raw []byte) bool { return len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') }
	for i, e := range list {
		typ := e["type"]
		if _, err := strconv.ParseInt(string(typ), 10, 64); !isNumber(typ) || strings.ContainsAny(string(typ), ".eE") || err != nil {
			return consent.Errorf(consent.Invalid, "events[%d].type must be an integer", i)
		}
		ts := e["timestamp"]
		if ms, err := strconv.ParseFloat(string(ts), 64); !isNumber(ts) || err != nil || ms < 0 || ms > 1<<53 {
			return consent.Errorf(consent.Invalid, "events[%d].timestamp must be a number of milliseconds", i)
		}
	}
	return nil
}

func FuzzCheckEventsAgrees(f *testing.F) {
	for _, s := range []string{`[{"type":3,"timestamp":5}]`, `[{"typ\u0065":3,"timestamp":5}]`, `[{"type":3,"timestamp":5},{"type":1e2,"timestamp":1}]`,
		`[{"type":3,"timestamp":5,"type":"x"}]`, `[{"type":-0,"timestamp":9007199254740993}]`, `[]`, `{}`, `[{"type":3,"timestamp":5}`,
		`[{"type":99999999999999999999,"timestamp":1}]`, `[{"type":1,"timestamp":1e400}]`, "[{\"type\":1,\"timestamp\":1,\"\xff\":2}]",
		// At the bounds of the checks that read digits only.
		`[{"type":999999999999999999,"timestamp":999999999999999}]`, `[{"type":9223372036854775807,"timestamp":9007199254740992}]`,
		`[{"type":9223372036854775808,"timestamp":1}]`, `[{"type":1,"timestamp":9007199254740994}]`, `[{"type":1,"timestamp":-0}]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, want := capture.CheckEvents(b), mapCheck(b)
		if (got == nil) != (want == nil) {
			t.Fatalf("CheckEvents(%q) = %v, the map reading %v", b, got, want)
		}
		var list []json.RawMessage
		hasNull := json.Unmarshal(b, &list) == nil && slices.ContainsFunc(list, func(e json.RawMessage) bool { return string(e) == "null" })
		if got != nil && !hasNull && got.Error() != want.Error() {
			t.Fatalf("CheckEvents(%q) = %v, the map reading %v", b, got, want)
		}
	})
}

// The check's cost is bounded by a chunk's bytes whatever its events look
// like (D52): a chunk whose member names are all escaped costs no more
// allocations than one written plainly, where reading each name through
// encoding/json cost several per event.
func TestEscapedNamesCostNoMore(t *testing.T) {
	var plain, escaped strings.Builder
	plain.WriteString("[")
	escaped.WriteString("[")
	for i := range 2000 {
		if i > 0 {
			plain.WriteString(",")
			escaped.WriteString(",")
		}
		fmt.Fprintf(&plain, `{"type":3,"data":{"source":1},"timestamp":%d}`, i)
		fmt.Fprintf(&escaped, `{"typ\u0065":3,"d\u0061ta":{"s\u006furce":1},"\u0074imestamp":%d}`, i)
	}
	plain.WriteString("]")
	escaped.WriteString("]")
	cost := func(chunk string) float64 {
		b := []byte(chunk)
		if err := capture.CheckEvents(b); err != nil {
			t.Fatalf("CheckEvents: %v", err)
		}
		return testing.AllocsPerRun(5, func() { _ = capture.CheckEvents(b) })
	}
	if p, e := cost(plain.String()), cost(escaped.String()); e > p+2 {
		t.Errorf("2,000 events with escaped names: %.0f allocations; plainly written, %.0f", e, p)
	}
}

// Whatever a chunk's events look like — the most events a chunk may hold,
// each as small as can be; nesting as deep as JSON readers allow; escaped
// names — reading and checking it allocates no more than for one small
// event (D52): the work is one pass over its bytes, never a value per
// event. (Its CPU a byte is measured, not asserted: examples/load
// -scenario hostile prints the costliest chunk's.)
func TestChunkShapesCostNoAllocations(t *testing.T) {
	shapes := map[string]string{
		"one small event":   `[{"type":3,"timestamp":1}]`,
		"100,000 events":    "[" + strings.Repeat(`{"type":3,"timestamp":1},`, 99_999) + `{"type":3,"timestamp":1}]`,
		"nested 9,990 deep": `[{"type":3,"timestamp":1,"data":` + strings.Repeat("[", 9990) + strings.Repeat("]", 9990) + `}]`,
		"escaped names":     "[" + strings.Repeat(`{"typ\u0065":3,"\u0074imestamp":1,"d\u0061ta":{"\u0078":[1,2,{}]}},`, 999) + `{"type":3,"timestamp":1}]`,
	}
	allocs := func(events string) (check, parse float64) {
		b := []byte(events)
		body := []byte(`{"seq":0,"events":` + events + `}`)
		if err := capture.CheckEvents(b); err != nil {
			t.Fatalf("CheckEvents(%.40s…): %v", events, err)
		}
		if ch, ok := capture.ParseChunk(body); !ok || ch.Seq != 0 {
			t.Fatalf("ParseChunk(%.40s…) = %+v, %v", body, ch, ok)
		}
		return testing.AllocsPerRun(3, func() { _ = capture.CheckEvents(b) }),
			testing.AllocsPerRun(3, func() { _, _ = capture.ParseChunk(body) })
	}
	check0, parse0 := allocs(shapes["one small event"])
	for name, events := range shapes {
		if c, p := allocs(events); c > check0 || p > parse0 {
			t.Errorf("%s: CheckEvents %.0f allocations, ParseChunk %.0f; one small event: %.0f, %.0f", name, c, p, check0, parse0)
		}
	}
}
