// Package textsearch finds a string in a text in time linear in both,
// whatever they hold. The standard library's Index checks a long string
// at every position whose rolling hash matches its own, byte for byte: a
// text and a string made to collide — a company's own consent text and its
// own search term or approved text, say — make that work the product of
// their lengths, inside a paid verification's write transaction. A
// Finder runs Knuth–Morris–Pratt instead for a string longer than short;
// a short one goes to strings.Index, whose work on it is bounded by a
// small multiple of the text's length.
//
//	f := textsearch.New(term)
//	found := f.Index(text) >= 0
package textsearch

import (
	"bytes"
	"strings"
)

// short is the longest string found by strings.Index: up to it, the
// standard library compares at each position (on amd64, with vector
// instructions), at most short bytes each.
const short = 64

// Finder finds one string in texts. Its zero value finds "".
type Finder struct {
	sep  string
	seb  []byte  // sep, for IndexBytes
	fail []int32 // for a long sep: fail[i] is the longest proper border of sep[:i+1]
}

// New returns a Finder of sep. A long sep costs a table of 4 bytes a
// byte, made here once for every text it is looked for in.
func New(sep string) *Finder {
	f := &Finder{sep: sep, seb: []byte(sep)}
	if len(sep) <= short {
		return f
	}
	f.fail = make([]int32, len(sep))
	k := int32(0)
	for i := 1; i < len(sep); i++ {
		for k > 0 && sep[i] != sep[k] {
			k = f.fail[k-1]
		}
		if sep[i] == sep[k] {
			k++
		}
		f.fail[i] = k
	}
	return f
}

// Index returns the index of the first instance of the Finder's string in
// s, or -1 when there is none, as strings.Index does.
func (f *Finder) Index(s string) int {
	if f.fail == nil {
		return strings.Index(s, f.sep)
	}
	return kmp(f, s)
}

// IndexBytes is Index for a text held in bytes.
func (f *Finder) IndexBytes(s []byte) int {
	if f.fail == nil {
		return bytes.Index(s, f.seb)
	}
	return kmp(f, s)
}

// kmp is Index for a long string, by Knuth–Morris–Pratt: at most
// 2·len(s) comparisons of a byte, whatever s and the string hold.
func kmp[T string | []byte](f *Finder, s T) int {
	sep, k := f.sep, int32(0)
	for i := 0; i < len(s); i++ {
		for k > 0 && s[i] != sep[k] {
			k = f.fail[k-1]
		}
		if s[i] == sep[k] {
			k++
			if int(k) == len(sep) {
				return i - len(sep) + 1
			}
		}
	}
	return -1
}

// Index returns the index of the first instance of sep in s, or -1, as
// strings.Index does, in time linear in both.
func Index(s, sep string) int { return New(sep).Index(s) }
