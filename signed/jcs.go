package signed

import (
	"crypto/sha256"
	"encoding/hex"
	"time"
	"unicode/utf8"
)

// timeLayout is how the canonical encoding writes a time, in UTC.
const timeLayout = "2006-01-02T15:04:05.000000Z"

// timeString is t as the canonical encoding writes it, unquoted; "" for
// the zero time.
func timeString(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return string(appendMicroTime(make([]byte, 0, len(timeLayout)), t.UTC()))
}

// digestString is d as the canonical encoding writes it, unquoted; "" for
// the zero digest.
func digestString(d [sha256.Size]byte) string {
	if d == [sha256.Size]byte{} {
		return ""
	}
	return hex.EncodeToString(d[:])
}

// appendTime appends t as the canonical encoding writes it: a JSON string
// of timeLayout's digits and "-:.TZ", which need no escape, or "" for the
// zero time, which is never written out (parseTime refuses it written).
func appendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	if !t.IsZero() {
		b = appendMicroTime(b, t.UTC())
	}
	return append(b, '"')
}

// appendMicroTime appends t, a UTC time, in timeLayout. A time of the
// years 0–9999 (every stored one falls in 1–9999: consent's Tx contract)
// is written digit by digit, the bytes AppendFormat writes in a fraction
// of its time (a signature check encodes every time of its certificate);
// others go through AppendFormat.
func appendMicroTime(b []byte, t time.Time) []byte {
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(b, timeLayout)
	}
	hour, minute, sec := t.Clock()
	b = appendDigits(b, year, 4)
	b = appendDigits(append(b, '-'), int(month), 2)
	b = appendDigits(append(b, '-'), day, 2)
	b = appendDigits(append(b, 'T'), hour, 2)
	b = appendDigits(append(b, ':'), minute, 2)
	b = appendDigits(append(b, ':'), sec, 2)
	b = appendDigits(append(b, '.'), t.Nanosecond()/1000, 6)
	return append(b, 'Z')
}

// appendDigits appends the n last decimal digits of v >= 0, zeros first.
func appendDigits(b []byte, v, n int) []byte {
	b = append(b, make([]byte, n)...) // no allocation: the compiler extends b
	for i := len(b) - 1; i >= len(b)-n; i-- {
		b[i] = byte('0' + v%10)
		v /= 10
	}
	return b
}

// appendDigest appends d as the canonical encoding writes it: a JSON
// string of 64 lowercase hex digits, or "" for the zero digest.
func appendDigest(b []byte, d [sha256.Size]byte) []byte {
	b = append(b, '"')
	if d != [sha256.Size]byte{} {
		b = hex.AppendEncode(b, d[:])
	}
	return append(b, '"')
}

// appendJCS appends s as RFC 8785 writes a string: quoted, with \" and
// \\, the short escapes \b \t \n \f \r, other characters below U+0020
// as \u00xx, and everything else as itself. Stored text is valid UTF-8
// (consent's ValidText); an invalid byte is written as U+FFFD all the
// same. Runs of characters written as themselves are copied whole.
func appendJCS(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	start := 0 // s[start:i] is still to copy as it is
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b = append(b, s[start:i]...)
				b = utf8.AppendRune(b, utf8.RuneError)
				start = i + 1
			}
			i += size
			continue
		}
		if c >= 0x20 && c != '"' && c != '\\' {
			i++
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\b':
			b = append(b, `\b`...)
		case '\t':
			b = append(b, `\t`...)
		case '\n':
			b = append(b, `\n`...)
		case '\f':
			b = append(b, `\f`...)
		case '\r':
			b = append(b, `\r`...)
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		i++
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
