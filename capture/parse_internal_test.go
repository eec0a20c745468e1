package capture

import (
	"bytes"
	"fmt"
	"os"
	"strings"
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

// go test -run '^$' -bench ParseChunk ./capture measures a chunk's read
// and check: 16 KiB of events as the load program sends them, and the
// project's form recording (the full snapshot, then small events).
func BenchmarkParseChunk(b *testing.B) {
	var load bytes.Buffer
	load.WriteString(`{"seq":0,"events":[`)
	for i := 0; load.Len() < 16<<10-120; i++ {
		if i > 0 {
			load.WriteByte(',')
		}
		fmt.Fprintf(&load, `{"type":3,"data":{"source":5,"text":"%s","isChecked":false,"id":%d},"timestamp":%d}`,
			strings.Repeat("x", 40), 10+i%50, 1795301391553+i*16)
	}
	load.WriteString(`]}`)
	form, err := os.ReadFile("../testdata/rrweb-form-recording.json")
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		body []byte
	}{
		{"load", load.Bytes()},
		{"form", append(append([]byte(`{"seq":0,"events":`), form...), '}')},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.body)))
			for b.Loop() {
				if ch, ok := ParseChunk(c.body); !ok || ch.invalid != nil {
					b.Fatalf("ParseChunk: %v, %v", ok, ch.invalid)
				}
			}
		})
	}
}
