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
