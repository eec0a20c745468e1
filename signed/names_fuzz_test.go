package signed

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"

	"github.com/consentkit/consentkit/internal/ident"
)

// CheckNames reads names as the decoder of encoding/json does, token by
// token, which the one it had before reading the bytes itself did: both
// refuse the same answers, with the same error.
//
// go test -run '^$' -fuzz FuzzCheckNames ./signed
func FuzzCheckNames(f *testing.F) {
	for _, s := range []string{
		`{"text":"a","Text":"b"}`, `{"a":[[],[{"b":{"c":[0,{"x":1,"X":2}]}}]]}`, `{"te\u0078t":1,"text":2}`,
		"{\"\xff\":1,\"\xfe\":2}", `{"a\"b":1,"A\"B":2}`, `[1,"a",{"a":{"b":null}},{"A":{"B":null}}]`, `{"text":`,
		`{"m0":0,"m1":1,"m2":2,"m3":3,"m4":4,"m5":5,"m6":6,"m7":7,"m8":8,"m9":9,"m10":0,"m11":0,"m12":0,"m13":0,"m14":0,"m15":0,"m16":0,"m17":0,"\u004d3":0}`,
		`{"k":{"\u212a":[{"s":1,"\u017f":2}]}}`, ` {"a" : [ "b" , {"c":"}\\\"{"} ] , "A" : 1 } `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, answer []byte) {
		got, want := CheckNames(answer), referenceCheckNames(answer)
		if !json.Valid(answer) {
			want = nil // the reference read a prefix of what is no JSON
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%q: %v; the decoder's reading: %v", answer, got, want)
		}
	})
}

// referenceCheckNames is CheckNames as it read the answer with the
// decoder of encoding/json, before json.Valid and its depth.
func referenceCheckNames(answer []byte) error {
	type frame struct {
		names  map[string]string // folded name → name as written; nil in an array
		member string            // the member being read, in an object
		index  int               // the element being read, in an array
		key    bool              // an object's next token is a member's name
	}
	var stack []*frame
	path := func() string {
		var b []byte
		for _, f := range stack[:len(stack)-1] {
			if f.names == nil {
				b = append(b, '[')
				b = strconv.AppendInt(b, int64(f.index), 10)
				b = append(b, ']')
				continue
			}
			if len(b) > 0 {
				b = append(b, '.')
			}
			b = append(b, f.member...)
		}
		return string(b)
	}
	dec := json.NewDecoder(bytes.NewReader(answer))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // the end, or no JSON: the decoder that reads it says so
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.key {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
			} else {
				name, _ := tok.(string)
				folded := ident.Fold(name) // as encoding/json matches a name to a field
				if first, ok := top.names[folded]; ok {
					where := "the answer"
					if p := path(); p != "" {
						where = "the answer's " + p
					}
					return fmt.Errorf("signed: %s has members %q and %q, one name twice to a reader that ignores case", where, first, name)
				}
				top.names[folded], top.member, top.key = name, name, false
				continue
			}
		} else {
			switch tok {
			case json.Delim('{'):
				stack = append(stack, &frame{names: map[string]string{}, key: true})
				continue
			case json.Delim('['):
				stack = append(stack, &frame{})
				continue
			case json.Delim(']'):
				stack = stack[:len(stack)-1]
			}
		}
		// A value is read whole: its object is ready for the next name,
		// its array for the next element.
		if len(stack) == 0 {
			continue
		}
		if top = stack[len(stack)-1]; top.names != nil {
			top.key = true
		} else {
			top.index++
		}
	}
}
