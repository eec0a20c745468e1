// Package testjcs writes JSON as RFC 8785 (the JSON Canonicalization
// Scheme) does, for the tests that hold the signed encoding to it. It is
// written from the scheme's text for the documents the tests sign —
// objects, arrays, strings, booleans, null and integers — not from
// package signed's encoder.
package testjcs

import (
	"bytes"
	"fmt"
	"sort"
)

// Write writes v, a tree decoded from JSON (map[string]any, []any,
// string, bool, nil, integers as float64), with sorted members, no white space and strings
// escaped as RFC 8785 escapes them. It panics on anything else.
func Write(b *bytes.Buffer, v any) {
	switch v := v.(type) {
	case map[string]any:
		names := make([]string, 0, len(v))
		for n := range v {
			names = append(names, n)
		}
		sort.Strings(names)
		b.WriteByte('{')
		for i, n := range names {
			if i > 0 {
				b.WriteByte(',')
			}
			Write(b, n)
			b.WriteByte(':')
			Write(b, v[n])
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, x := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			Write(b, x)
		}
		b.WriteByte(']')
	case bool:
		fmt.Fprint(b, v)
	case float64: // the documents' numbers are integers
		if v != float64(int64(v)) {
			panic(fmt.Sprintf("testjcs: %v is not an integer", v))
		}
		fmt.Fprint(b, int64(v))
	case nil:
		b.WriteString("null")
	case string:
		b.WriteByte('"')
		for _, r := range v {
			switch {
			case r == '"' || r == '\\':
				b.WriteByte('\\')
				b.WriteRune(r)
			case r == '\b':
				b.WriteString(`\b`)
			case r == '\t':
				b.WriteString(`\t`)
			case r == '\n':
				b.WriteString(`\n`)
			case r == '\f':
				b.WriteString(`\f`)
			case r == '\r':
				b.WriteString(`\r`)
			case r < 0x20:
				fmt.Fprintf(b, `\u%04x`, r)
			default:
				b.WriteRune(r)
			}
		}
		b.WriteByte('"')
	default:
		panic(fmt.Sprintf("testjcs: %T is not in the documents the tests sign", v))
	}
}

// String is Write into a new buffer.
func String(v any) string {
	var b bytes.Buffer
	Write(&b, v)
	return b.String()
}
