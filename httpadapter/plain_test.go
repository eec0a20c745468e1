package httpadapter

import (
	"bytes"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
)

// A chunk body read in its plain form reads as the general path (json/v2)
// reads it; a body the plain reading declines is left to that path whole.
func FuzzChunkPlain(f *testing.F) {
	for _, s := range []string{`{"seq":0,"events":[{"type":4,"timestamp":1}]}`, `{"events":[],"seq":-0}`, `{"seq":1.5,"events":[]}`,
		`{"SEQ":2,"seq":1,"events":[]}`, `{"seq":1,"events":[],"seq":2}`, `{"ſeq":3,"events":[]}`, `{"seq":null,"events":null}`,
		`{"seq":99999999999999999999,"events":[]}`, `{"se\u0071":1}`, `[1]`, `{"seq":1,"events":[}`, `{"other":{"seq":5},"seq":6}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		body = body[:len(body):len(body)] // no room past the end: reading there panics
		var plain eventsRequest
		if !plain.decodePlain(body) {
			return
		}
		var general eventsRequest
		if err := jsonv2.Unmarshal(body, &general, decodeOptions); err != nil {
			t.Fatalf("read plainly, but json/v2 refuses %q: %v", body, err)
		}
		if (plain.Seq == nil) != (general.Seq == nil) || plain.Seq != nil && *plain.Seq != *general.Seq {
			t.Fatalf("%q: seq %v plainly, %v by json/v2", body, plain.Seq, general.Seq)
		}
		if !bytes.Equal(plain.Events, general.Events) || (plain.Events == nil) != (general.Events == nil) {
			t.Fatalf("%q: events %q plainly, %q by json/v2", body, plain.Events, general.Events)
		}
	})
}
