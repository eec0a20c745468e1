package capture

import (
	"testing"
)

// A chunk that ParseChunk reads has its events judged as CheckEvents
// judges them, since Append then trusts that verdict.
func FuzzParseChunkChecksAsCheckEvents(f *testing.F) {
	for _, s := range []string{`{"seq":0,"events":[{"type":4,"timestamp":1}]}`, `{"seq":1,"events":[]}`,
		`{"seq":2,"events":[{"type":"4","timestamp":1}]}`, `{"seq":3,"events":[{"typ\u0065":4,"timestamp":-1}]}`,
		`{"events":[{"type":1,"timestamp":1}],"seq":4,"events":[{"type":1.5,"timestamp":1}]}`, `{"seq":5,"events":[1,2]}`,
		`{"seq":6,"events":{"type":1}}`, `{"seq":7}`, `{"seq":8,"events":[{"type":1,"timestamp":1},{}]}`,
		`{"events":[{"":0`, `{"seq":9,"events":[{"type":1`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		body = body[:len(body):len(body)] // no room past the end: reading there panics
		ch, ok := ParseChunk(body)
		if !ok {
			return
		}
		if !ch.checked {
			t.Fatalf("ParseChunk(%q) read a chunk it did not check", body)
		}
		got, want := ch.invalid, CheckEvents(ch.Events)
		if (got == nil) != (want == nil) || got != nil && got.Error() != want.Error() {
			t.Fatalf("ParseChunk(%q): %v; CheckEvents of its events: %v", body, got, want)
		}
	})
}
