package consent

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
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

// CertificateEncoding writes from the certificate's fields what Signed
// makes of them and SignedContent.Encoding writes (the offline check's
// encoding): byte for byte the same, on whatever the fuzzer makes of the
// text, times and digests. When every time and digest is set and no
// character needs an escape, encodingSize is the length exactly.
//
// go test -run '^$' -fuzz FuzzCertificateEncoding ./consent
func FuzzCertificateEncoding(f *testing.F) {
	f.Add("acme", "cert-1", "key-1", "https://acme.example/q?a=1", "web", "s1", "I agree.", "tcpa", int64(1795600000123456789), int64(1795599999000000000), []byte{1, 2, 3}, uint8(3))
	f.Add("", "", "", "", "", "", "", "", int64(0), int64(0), []byte{}, uint8(0))
	f.Add("a\"b", "c\\d", "\x00", "\u2028", "ü", "\xff", "tab\there", "", int64(math.MinInt64), int64(math.MaxInt64), []byte{0xff}, uint8(1))
	f.Fuzz(func(t *testing.T, company, id, keyID, origin, property, session, text, typ string, created, optIn int64, digests []byte, records uint8) {
		var d [3]Digest
		for i := range d {
			if i < len(digests) && digests[i] != 0 {
				d[i] = sha256.Sum256(append([]byte{byte(i)}, digests...))
			}
		}
		c := &Certificate{ID: id, CompanyID: company, PropertyID: property, SessionID: session, Origin: origin, KeyID: keyID,
			CreatedAt: time.Unix(0, created), EmailDigest: d[0], MobileDigest: d[1], RecordingSHA256: d[2]}
		if created == 0 {
			c.CreatedAt = time.Time{}
		}
		for i := range int(records % 4) {
			r := Record{Text: strings.Repeat(text, i+1), OptInAt: time.Unix(0, optIn+int64(i))}
			if typ != "" {
				r.Types = append(r.Types, typ)
			}
			for range i {
				r.Types = append(r.Types, fmt.Sprint(i))
			}
			c.Records = append(c.Records, r)
		}
		got := appendEncoding([]byte("prefix"), c)
		sc := Signed(c)
		if want := append([]byte("prefix"), sc.Encoding()...); !bytes.Equal(got, want) {
			t.Fatalf("appendEncoding:\n%s\nSigned(c).Encoding:\n%s", got, want)
		}
		got = got[len("prefix"):]
		if !bytes.Equal(CertificateEncoding(c), got) {
			t.Fatal("CertificateEncoding differs from appendEncoding")
		}
		plain := !c.CreatedAt.IsZero() && !d[0].IsZero() && !d[1].IsZero() && !d[2].IsZero()
		for _, s := range append([]string{company, id, keyID, origin, property, session, text, typ}, sc.CreatedAt) {
			plain = plain && bytes.Equal(appendJCS(nil, s), []byte(`"`+s+`"`))
		}
		for _, r := range sc.Consents {
			plain = plain && r.OptInAt != ""
		}
		if plain && len(got) != encodingSize(c) {
			t.Errorf("the encoding is %d bytes, encodingSize says %d:\n%s", len(got), encodingSize(c), got)
		}
	})
}

// appendMicroTime writes what AppendFormat writes in canonicalTimeLayout,
// at the edges of its hand-written range and beyond them.
func TestAppendMicroTime(t *testing.T) {
	times := []time.Time{
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 59, 123456789, time.UTC),
		time.Date(2026, 11, 25, 9, 8, 7, 6000, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 6, 1, 12, 0, 0, 500, time.UTC),
		time.Date(-12345, 6, 1, 12, 0, 0, 0, time.UTC),
		time.Unix(0, math.MinInt64).UTC(),
		time.Unix(0, math.MaxInt64).UTC(),
	}
	for s := int64(-62135596800); s < 253402300800; s += 7919 * 86400 / 7 {
		times = append(times, time.Unix(s, s%1000000007).UTC())
	}
	for _, tm := range times {
		if got, want := string(appendMicroTime([]byte("x"), tm)), "x"+tm.Format(canonicalTimeLayout); got != want {
			t.Errorf("appendMicroTime(%v) = %q, want %q", tm, got, want)
		}
	}
}
