// Package contact normalizes a consumer's email and mobile number and
// digests them (D17): certificates, revocations and searches keep and
// compare only the digests, so two spellings of one mailbox or one number
// are one consumer.
//
//	d, err := contact.EmailDigest(" Jane@Example.com ") // the digest of "jane@example.com"
package contact

import (
	"strings"
	"unicode/utf8"

	"github.com/consentkit/consentkit/consent"
)

// Limits on consumer identifiers, beyond D17: an email has an @ with text on
// both sides and at most 254 bytes (RFC 5321's path limit); a mobile number
// has 7 to 15 digits (E.164 allows at most 15).
const (
	maxEmailLength  = 254
	minMobileDigits = 7
	maxMobileDigits = 15
)

// NormalizeEmail trims s and lower-cases it (D17). Nothing else is changed:
// dots and +tags are significant to many mail systems, so removing them would
// revoke consent that a different mailbox gave. s must be valid UTF-8: it is
// checked before lower-casing, which would turn each invalid byte into
// U+FFFD and so make distinct invalid addresses one.
func NormalizeEmail(s string) (string, error) {
	e := strings.ToLower(strings.TrimSpace(s))
	at := strings.LastIndexByte(e, '@')
	if !utf8.ValidString(s) || at <= 0 || at == len(e)-1 || len(e) > maxEmailLength ||
		strings.ContainsAny(e, " \t\r\n") {
		return "", consent.Errorf(consent.Invalid, "email is not an email address")
	}
	return e, nil
}

// NormalizeMobile keeps the digits of s, and a leading + for international
// numbers; 10-digit and 1+10-digit North American numbers become
// +1XXXXXXXXXX (D17). Letters, spaces and punctuation are dropped.
func NormalizeMobile(s string) (string, error) {
	s = strings.TrimSpace(s)
	plus := strings.HasPrefix(s, "+")
	var b strings.Builder
	b.Grow(len(s) + 2)
	for i := 0; i < len(s); i++ {
		if '0' <= s[i] && s[i] <= '9' {
			b.WriteByte(s[i])
		}
	}
	d := b.String()
	if len(d) < minMobileDigits || len(d) > maxMobileDigits {
		return "", consent.Errorf(consent.Invalid, "mobile must have %d to %d digits", minMobileDigits, maxMobileDigits)
	}
	switch {
	case plus:
		return "+" + d, nil
	case len(d) == 10:
		return "+1" + d, nil
	case len(d) == 11 && d[0] == '1':
		return "+" + d, nil
	}
	return d, nil
}

// EmailDigest returns the digest of the normalized email (D17).
func EmailDigest(email string) (consent.Digest, error) {
	e, err := NormalizeEmail(email)
	if err != nil {
		return consent.Digest{}, err
	}
	return consent.DigestOf(e), nil
}

// MobileDigest returns the digest of the normalized mobile number (D17).
func MobileDigest(mobile string) (consent.Digest, error) {
	m, err := NormalizeMobile(mobile)
	if err != nil {
		return consent.Digest{}, err
	}
	return consent.DigestOf(m), nil
}
