// Package jsontext finds what encoding/json would hide: text that is not
// valid Unicode. encoding/json turns invalid UTF-8 and \u escapes of lone
// surrogates into U+FFFD without a word, so a consent text (or a seed file)
// so changed would be stored, matched and charged as if it had been sent.
package jsontext

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// CheckMembers checks every member of the JSON object data (already known
// to be valid JSON) for invalid UTF-8 and for \u escapes of lone
// surrogates. It returns ok, or the name of the first member at fault ("" if
// the fault is in a name).
func CheckMembers(data []byte) (field string, ok bool) {
	if utf8.Valid(data) && !bytes.Contains(data, []byte(`\u`)) {
		return "", true // the common case: nothing to look at
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil { // {
		return "", false
	}
	for dec.More() {
		start := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		name, _ := tok.(string)
		if !Valid(data[start:dec.InputOffset()]) {
			return "", false
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return name, false
		}
		if !Valid(value) {
			return name, false
		}
	}
	return "", true
}

// Valid reports whether raw, a piece of JSON text, is valid UTF-8 whose \u
// escapes pair every surrogate. An escape cut short is not valid.
func Valid(raw []byte) bool {
	if !utf8.Valid(raw) {
		return false
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		i++ // the escaped character
		if i >= len(raw) || raw[i] != 'u' {
			continue
		}
		r, ok := hex4(raw[i+1:])
		i += 4
		switch {
		case !ok || 0xDC00 <= r && r <= 0xDFFF:
			return false // cut short, or a low surrogate alone
		case 0xD800 <= r && r <= 0xDBFF:
			if i+2 >= len(raw) || raw[i+1] != '\\' || raw[i+2] != 'u' {
				return false
			}
			if lo, ok := hex4(raw[i+3:]); !ok || lo < 0xDC00 || lo > 0xDFFF {
				return false
			}
			i += 6
		}
	}
	return true
}

// hex4 reads the four hex digits of a \u escape.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[:4]), 16, 32)
	return rune(n), err == nil
}

// AppendString appends s as a JSON string, byte for byte as encoding/json
// writes it (with its escapes of <, > and &): by hand when s is printable
// ASCII that needs no escape, through encoding/json otherwise.
func AppendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// AppendMember appends the name of an object's member, and the comma before
// it unless it is the first: the object's '{' is at b[open]. name must be a
// string that needs no escape.
func AppendMember(b []byte, open int, name string) []byte {
	if len(b) > open+1 {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, name...)
	return append(b, '"', ':')
}

// Flat calls member with the name and value of each member of the JSON
// object data, in order, when data is the simplest kind of object: white
// space, '{', members whose names and values are strings written without an
// escape or a control character, in valid UTF-8, '}', white space. It
// returns false for any other text, valid JSON or not, and as soon as member
// returns false; member may have been called for some members by then. The
// name and value it passes are pieces of data (data[i:j]), not copies.
//
// It is a fast path: a caller decodes the text in full (encoding/json,
// CheckMembers) when Flat returns false, and Flat walks no text that those
// would read differently, as the string contents it hands out are the
// strings' values exactly.
func Flat(data []byte, member func(name, value []byte) bool) bool {
	i := skipSpace(data, 0)
	if i == len(data) || data[i] != '{' {
		return false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return skipSpace(data, i+1) == len(data)
	}
	for {
		name, j, ok := plainString(data, i)
		if !ok {
			return false
		}
		if j = skipSpace(data, j); j == len(data) || data[j] != ':' {
			return false
		}
		value, k, ok := plainString(data, skipSpace(data, j+1))
		if !ok || !member(name, value) {
			return false
		}
		if k = skipSpace(data, k); k == len(data) {
			return false
		}
		switch data[k] {
		case ',':
			i = skipSpace(data, k+1)
		case '}':
			return skipSpace(data, k+1) == len(data)
		default:
			return false
		}
	}
}

// plainString reads the JSON string at data[i:] when it has no escape and
// no control character and is valid UTF-8: its contents and the index after
// its closing quote.
func plainString(data []byte, i int) (s []byte, next int, ok bool) {
	if i == len(data) || data[i] != '"' {
		return nil, 0, false
	}
	end := bytes.IndexByte(data[i+1:], '"')
	if end < 0 {
		return nil, 0, false
	}
	s = data[i+1 : i+1+end]
	for _, c := range s {
		if c < 0x20 || c == '\\' {
			return nil, 0, false
		}
	}
	return s, i + 2 + end, utf8.Valid(s)
}

// skipSpace is the index of the first byte at or after i that is not JSON
// white space.
func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}
