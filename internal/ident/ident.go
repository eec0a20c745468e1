// Package ident is the identifier rule of the API (D29), and the case
// folding by which names and texts compare ignoring case, in one place for
// consent's vocabulary and for package signed, which the offline verifier
// imports without consent. It uses the standard library only.
//
//	id := ident.New("cert")      // "cert_" and 128 random bits in base32
//	ok := ident.Valid("acme-web") // 1 to 128 characters of [A-Za-z0-9._:-]
//	run := ident.NewRun("msg")   // ids of one transaction, next to each other in an index
//	next := run.Next()
package ident

import (
	"strings"
	"unicode"
)

// MaxLength is the longest identifier.
const MaxLength = 128

// Valid reports whether s is an identifier: 1 to MaxLength characters of
// [A-Za-z0-9._:-].
func Valid(s string) bool {
	if len(s) == 0 || len(s) > MaxLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c == '.' || c == '_' || c == ':' || c == '-') {
			return false
		}
	}
	return true
}

// Fold maps every rune to the smallest rune of its simple case folding
// orbit, so that two strings are equal under simple folding — as
// strings.EqualFold, and encoding/json matching a member's name to a
// field, compare them — exactly when their folds are equal, rune for rune.
func Fold(s string) string {
	return strings.Map(func(r rune) rune {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		return least
	}, s)
}
