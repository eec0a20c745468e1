package consent

import (
	"strings"
	"unicode"
	"unicode/utf8"
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
// revoke consent that a different mailbox gave.
func NormalizeEmail(s string) (string, error) {
	e := strings.ToLower(strings.TrimSpace(s))
	at := strings.LastIndexByte(e, '@')
	if at <= 0 || at == len(e)-1 || len(e) > maxEmailLength || !utf8.ValidString(e) ||
		strings.ContainsAny(e, " \t\r\n") {
		return "", Errorf(Invalid, "email is not an email address")
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
		return "", Errorf(Invalid, "mobile must have %d to %d digits", minMobileDigits, maxMobileDigits)
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
func EmailDigest(email string) (Digest, error) {
	e, err := NormalizeEmail(email)
	if err != nil {
		return Digest{}, err
	}
	return DigestOf(e), nil
}

// MobileDigest returns the digest of the normalized mobile number (D17).
func MobileDigest(mobile string) (Digest, error) {
	m, err := NormalizeMobile(mobile)
	if err != nil {
		return Digest{}, err
	}
	return DigestOf(m), nil
}

// Fold maps every rune to the smallest rune of its simple case folding
// orbit, so that two strings are equal under simple folding exactly when
// their folds are equal, rune for rune: how partial match (D11) and an
// audit profile's brand names (D51) ignore case.
func Fold(s string) string {
	return strings.Map(func(r rune) rune {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		return least
	}, s)
}
