// Package jsonscan reads JSON in one pass without building values: it
// checks the text as encoding/json's Valid does and hands out the raw
// bytes of an array's elements or an object's members. Capture checks
// every chunk of events it receives with it: decoding each event into a
// map cost most of a chunk's CPU (issue 36 bounds it at 6× a trivial
// request); its fuzz test holds it to encoding/json's verdicts.
package jsonscan

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// maxDepth is encoding/json's limit on nesting.
const maxDepth = 10000

// ErrSyntax is returned, wrapped, for text that is not valid JSON.
var ErrSyntax = errors.New("jsonscan: not valid JSON")

// ErrKind is returned, wrapped, for valid JSON of another kind than asked
// (an array where an object was asked for, say).
var ErrKind = errors.New("jsonscan: another kind of value")

// Valid reports whether b is one valid JSON value, as json.Valid does.
func Valid(b []byte) bool {
	s := scanner{b: b}
	s.ws()
	if s.value(0) != nil {
		return false
	}
	s.ws()
	return s.i == len(b)
}

// Array checks that b is one valid JSON array and calls fn with each
// element's raw bytes (sub-slices of b), in order. It stops at fn's first
// error and returns it.
func Array(b []byte, fn func(i int, elem []byte) error) error {
	s := scanner{b: b}
	return s.array(func(n int) error {
		start := s.i
		if err := s.value(1); err != nil {
			return err
		}
		return fn(n, b[start:s.i])
	})
}

// Object checks that b is one valid JSON object and calls fn with each
// member's name, as it is written between its quotes (escapes left as
// they are), and its value's raw bytes, in order. It stops at fn's first
// error and returns it. It is ObjectValues with every value read raw.
func Object(b []byte, fn func(name, value []byte) error) error {
	return ObjectValues(b, func(name []byte, v *Value) error {
		raw, err := v.Raw()
		if err != nil {
			return err
		}
		return fn(name, raw)
	})
}

// Objects checks that b is one valid JSON array of objects, in one pass,
// and calls member for each member of each object (i the object's index,
// name and value as Object gives them), then end after each object.
func Objects(b []byte, member func(i int, name, value []byte) error, end func(i int) error) error {
	s := scanner{b: b}
	return s.array(func(n int) error {
		if s.peek() != '{' {
			return s.kind("an array of objects")
		}
		if err := s.members(2, func(name, value []byte) error { return member(n, name, value) }); err != nil {
			return err
		}
		return end(n)
	})
}

// ObjectValues checks that b is one valid JSON object, as Object does,
// and calls fn with each member's name and its value not yet read: fn may
// read it, once, with Value.Raw or Value.Objects; a value fn leaves unread
// is read (checked) after fn returns. So a member's value is read once
// however fn wants it. It stops at fn's first error and returns it.
func ObjectValues(b []byte, fn func(name []byte, v *Value) error) error {
	s := scanner{b: b}
	s.ws()
	if s.peek() != '{' {
		return s.kind("an object")
	}
	if err := s.lazyMembers(fn); err != nil {
		return err
	}
	return s.end()
}

// Value is a member's value that ObjectValues has not read yet.
type Value struct {
	s    *scanner
	read bool
}

// errRead is the error of a Value read twice.
var errRead = errors.New("jsonscan: the value was read already")

// Raw reads the value and returns its bytes.
func (v *Value) Raw() ([]byte, error) {
	if v.read {
		return nil, errRead
	}
	v.read = true
	start := v.s.i
	if err := v.s.value(1); err != nil {
		return nil, err // the scanner may stand past the end
	}
	return v.s.b[start:v.s.i], nil
}

// Objects reads the value as Objects reads a whole text: an array of
// objects, member called for each member of each object and end after
// each object. It returns the value's bytes too. ErrKind (a value that is
// not an array of objects) comes once the value is read whole: the object
// can be read on.
func (v *Value) Objects(member func(i int, name, value []byte) error, end func(i int) error) ([]byte, error) {
	if v.read {
		return nil, errRead
	}
	v.read = true
	s := v.s
	start := s.i
	if s.peek() != '[' {
		if err := s.value(1); err != nil {
			return nil, err
		}
		return s.b[start:s.i], fmt.Errorf("%w: want an array of objects", ErrKind)
	}
	// After an element that is not an object, the rest is only checked:
	// ErrKind means the value was read whole and is valid JSON.
	var kind error
	err := s.elementsOf(func(n int) error {
		switch {
		case s.peek() != '{':
			kind = cmp.Or(kind, fmt.Errorf("%w: want an array of objects", ErrKind))
			return s.value(2)
		case kind != nil:
			return s.members(3, nil)
		}
		if err := s.members(3, func(name, value []byte) error { return member(n, name, value) }); err != nil {
			return err
		}
		return end(n)
	})
	if err != nil {
		return nil, err // the scanner may stand past the end
	}
	return s.b[start:s.i], kind
}

// lazyMembers reads an object from its '{', handing each member's value
// to fn unread.
func (s *scanner) lazyMembers(fn func(name []byte, v *Value) error) error {
	return s.eachMember(func(name []byte) error {
		v := Value{s: s}
		if err := fn(name, &v); err != nil {
			return err
		}
		if !v.read {
			return s.value(1)
		}
		return nil
	})
}

// array reads b, which must be one array and nothing else but white
// space, calling elem at the start of each element to read it.
func (s *scanner) array(elem func(n int) error) error {
	s.ws()
	if s.peek() != '[' {
		return s.kind("an array")
	}
	if err := s.elementsOf(elem); err != nil {
		return err
	}
	return s.end()
}

// elementsOf reads an array from its '[', calling elem at the start of
// each element to read it.
func (s *scanner) elementsOf(elem func(n int) error) error {
	s.i++ // [
	s.ws()
	if s.peek() == ']' {
		s.i++
		return nil
	}
	for n := 0; ; n++ {
		if err := elem(n); err != nil {
			return err
		}
		s.ws()
		switch s.next() {
		case ',':
			s.ws()
		case ']':
			return nil
		default:
			return s.syntax()
		}
	}
}

// scanner reads b from i on.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) next() byte {
	c := s.peek()
	s.i++
	return c
}

func (s *scanner) syntax() error {
	return fmt.Errorf("%w at offset %d", ErrSyntax, min(s.i, len(s.b)))
}

// kind is the error for a value that is not of the kind asked: a syntax
// error when b is not valid JSON at all.
func (s *scanner) kind(want string) error {
	if !Valid(s.b) {
		return fmt.Errorf("%w at offset %d", ErrSyntax, s.i)
	}
	return fmt.Errorf("%w: want %s", ErrKind, want)
}

// end checks that only white space follows.
func (s *scanner) end() error {
	s.ws()
	if s.i != len(s.b) {
		return s.syntax()
	}
	return nil
}

func (s *scanner) ws() {
	for s.i < len(s.b) && s.b[s.i] <= ' ' && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

// value reads one value at nesting depth.
func (s *scanner) value(depth int) error {
	switch c := s.peek(); {
	case c == '{':
		if depth >= maxDepth {
			return s.syntax()
		}
		return s.members(depth+1, nil)
	case c == '[':
		if depth >= maxDepth {
			return s.syntax()
		}
		return s.elements(depth + 1)
	case c == '"':
		return s.str()
	case c == '-' || c >= '0' && c <= '9':
		return s.number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	}
	return s.syntax()
}

// members reads an object from its '{', calling fn, when not nil, for each
// member.
func (s *scanner) members(depth int, fn func(name, value []byte) error) error {
	return s.eachMember(func(name []byte) error {
		start := s.i
		if err := s.value(depth); err != nil {
			return err
		}
		if fn != nil {
			return fn(name, s.b[start:s.i])
		}
		return nil
	})
}

// eachMember reads an object from its '{', calling value after each
// member's name and colon to read its value.
func (s *scanner) eachMember(value func(name []byte) error) error {
	s.i++ // {
	s.ws()
	if s.peek() == '}' {
		s.i++
		return nil
	}
	for {
		if s.peek() != '"' {
			return s.syntax()
		}
		nameStart := s.i
		if err := s.str(); err != nil {
			return err
		}
		name := s.b[nameStart+1 : s.i-1]
		s.ws()
		if s.next() != ':' {
			return s.syntax()
		}
		s.ws()
		if err := value(name); err != nil {
			return err
		}
		s.ws()
		switch s.next() {
		case ',':
			s.ws()
		case '}':
			return nil
		default:
			return s.syntax()
		}
	}
}

// elements reads an array from its '['.
func (s *scanner) elements(depth int) error {
	s.i++ // [
	s.ws()
	if s.peek() == ']' {
		s.i++
		return nil
	}
	for {
		if err := s.value(depth); err != nil {
			return err
		}
		s.ws()
		switch s.next() {
		case ',':
			s.ws()
		case ']':
			return nil
		default:
			return s.syntax()
		}
	}
}

// str reads a string from its opening quote: any bytes but control
// characters, and the escapes JSON has.
func (s *scanner) str() error {
	b, i := s.b, s.i+1 // after the opening quote
	for {
		for i < len(b) && plain[b[i]] {
			i++
		}
		if i == len(b) {
			s.i = i
			return s.syntax()
		}
		switch b[i] {
		case '"':
			s.i = i + 1
			return nil
		case '\\':
			i++
			if i == len(b) {
				s.i = i
				return s.syntax()
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if len(b)-i < 5 || !isHex(b[i+1]) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) {
					s.i = i
					return s.syntax()
				}
				i += 5
			default:
				s.i = i
				return s.syntax()
			}
		default: // a control character
			s.i = i
			return s.syntax()
		}
	}
}

// plain marks the bytes a string holds as they are: all but control
// characters, the quote and the backslash.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// number reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() error {
	if s.peek() == '-' {
		s.i++
	}
	switch c := s.peek(); {
	case c == '0':
		s.i++
	case c >= '1' && c <= '9':
		s.digits()
	default:
		return s.syntax()
	}
	if s.peek() == '.' {
		s.i++
		if !s.digits() {
			return s.syntax()
		}
	}
	if c := s.peek(); c == 'e' || c == 'E' {
		s.i++
		if c := s.peek(); c == '+' || c == '-' {
			s.i++
		}
		if !s.digits() {
			return s.syntax()
		}
	}
	return nil
}

// digits reads one or more digits, reporting whether there was one.
func (s *scanner) digits() bool {
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i > start
}

func (s *scanner) literal(word string) error {
	if len(s.b)-s.i < len(word) || string(s.b[s.i:s.i+len(word)]) != word {
		return s.syntax()
	}
	s.i += len(word)
	return nil
}

// NameIs reports whether raw, a member's name as written between its
// quotes, is want (ASCII) once its escapes are read (typ\u0065 is type):
// in one pass over raw, with no copy, so that a chunk of escaped names
// costs what a plain one of its size does.
func NameIs(raw []byte, want string) bool {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw) == want // compared, not copied
	}
	j := 0
	for i := 0; i < len(raw); j++ {
		c := raw[i]
		i++
		if c == '\\' {
			if i >= len(raw) {
				return false
			}
			c, i = raw[i], i+1
			switch c {
			case 'u':
				r, err := strconv.ParseUint(string(raw[i:min(i+4, len(raw))]), 16, 16)
				if err != nil || r >= utf8.RuneSelf || i+4 > len(raw) {
					return false // not ASCII, so not want
				}
				c, i = byte(r), i+4
			case 'b':
				c = '\b'
			case 'f':
				c = '\f'
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			case 't':
				c = '\t'
			}
		}
		if j >= len(want) || want[j] != c {
			return false
		}
	}
	return j == len(want)
}
