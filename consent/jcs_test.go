package consent

import (
	"bytes"
	"fmt"
	"testing"
)

// jcsReference writes s character by character, as RFC 8785 (and the
// package's notes on signed certificates) say, for appendJCS to be held to.
func jcsReference(s string) []byte {
	var b bytes.Buffer
	b.WriteByte('"')
	for _, r := range s { // an invalid byte comes as U+FFFD
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
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
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.Bytes()
}

// The canonical encoding of a string, on what the seeds hold and what the
// fuzzer makes of them: every byte alone, escapes amid plain runs, invalid
// and truncated UTF-8, a real U+FFFD.
//
// go test -run '^$' -fuzz FuzzCanonicalString ./consent
func FuzzCanonicalString(f *testing.F) {
	for c := range 256 {
		f.Add(string([]byte{byte(c)}))
	}
	for _, s := range []string{"", "I agree to be contacted by Acme.", `a"b\c`, "tab\there\nnew\r\f\b\x00\x1f\x7f",
		"Ich stimme zu — ünïcødé ✓", "😀", "\xf0\x9f\x98", "\xed\xa0\x80", "\ufffd", "a\xffb\xfe", "\xc3", "x\u2028y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := appendJCS([]byte("prefix"), s)
		if want := append([]byte("prefix"), jcsReference(s)...); !bytes.Equal(got, want) {
			t.Fatalf("%q: %q; want %q", s, got, want)
		}
	})
}
