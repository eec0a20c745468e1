package signed

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/consentkit/consentkit/internal/ident"
)

// CheckNames fails when an object of the JSON answer, at any depth, has
// two members whose names are equal under Unicode simple case folding,
// such as "text" and "Text", or the same name twice. encoding/json reads
// either name into the same field and keeps the last, where other readers
// (jq, JavaScript) read the name as written: such an answer shows one
// value to one reader and another to the next, and no check of it holds
// for both. The error names the object and both members. CheckNames reads
// answer once; it says nothing of input that is not JSON, which any
// decoder refuses.
func CheckNames(answer []byte) error {
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
