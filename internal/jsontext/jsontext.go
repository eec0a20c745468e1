// Package jsontext finds what encoding/json would hide: text that is not
// valid Unicode. encoding/json turns invalid UTF-8 and \u escapes of lone
// surrogates into U+FFFD without a word, so a consent text (or a seed file)
// so changed would be stored, matched and charged as if it had been sent.
//
//	if !jsontext.Valid(body) {
//		return consent.Errorf(consent.Invalid, "the body must be valid UTF-8")
//	}
//	field, ok := jsontext.CheckMembers(obj) // which member of an object is at fault
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
		j := bytes.IndexByte(raw[i:], '\\') // fast where there are few escapes
		if j < 0 {
			return true
		}
		i += j + 1 // the escaped character
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
