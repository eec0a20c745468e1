package signed

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/consentkit/consentkit/internal/testjcs"
)

// jcsReference writes s as RFC 8785 does, character by character
// (internal/testjcs, written from the scheme's text), for appendJCS to be
// held to.
func jcsReference(s string) []byte { return []byte(testjcs.String(s)) }

// The canonical encoding of a string, on what the seeds hold and what the
// fuzzer makes of them: every byte alone, escapes amid plain runs, invalid
// and truncated UTF-8, a real U+FFFD.
//
// go test -run '^$' -fuzz FuzzCanonicalString ./signed
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

// referenceEncoding writes c by the rules of the package's notes on the
// canonical encoding, from its strings and with jcsReference: not with the
// package's encoder, which FuzzEncoding holds to it.
func referenceEncoding(c *Content) []byte {
	var b bytes.Buffer
	member := func(name string, value []byte) {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%q:%s", name, value)
	}
	b.WriteByte('{')
	member("company_id", jcsReference(c.CompanyID))
	var consents bytes.Buffer
	consents.WriteByte('[')
	for i, r := range c.Consents {
		if i > 0 {
			consents.WriteByte(',')
		}
		var types [][]byte
		for _, t := range r.Types {
			types = append(types, jcsReference(t))
		}
		fmt.Fprintf(&consents, `{"opt_in_at":%s,"text":%s,"types":[%s]}`, jcsReference(r.OptInAt), jcsReference(r.Text), bytes.Join(types, []byte(",")))
	}
	consents.WriteByte(']')
	member("consents", consents.Bytes())
	for _, m := range []struct{ name, value string }{{"created_at", c.CreatedAt}, {"email_sha256", c.EmailSHA256}, {"id", c.ID},
		{"key_id", c.KeyID}, {"mobile_sha256", c.MobileSHA256}, {"origin", c.Origin}, {"property_id", c.PropertyID},
		{"recording_sha256", c.RecordingSHA256}, {"session_id", c.SessionID}, {"v", c.V}} {
		member(m.name, jcsReference(m.value))
	}
	b.WriteByte('}')
	return b.Bytes()
}

// The one encoder writes from a Document's fields what its Content (the
// JSON the API shows and the offline check reads) makes of them by the
// documented rules, byte for byte, on whatever the fuzzer makes of the
// text, times and digests; the Content reads back as the same Document.
// When every time and digest is set and no character needs an escape,
// size is the length exactly.
//
// go test -run '^$' -fuzz FuzzEncoding ./signed
func FuzzEncoding(f *testing.F) {
	f.Add("acme", "cert-1", "key-1", "https://acme.example/q?a=1", "web", "s1", "I agree.", "tcpa", int64(1795600000123456789), int64(1795599999000000000), []byte{1, 2, 3}, uint8(3))
	f.Add("", "", "", "", "", "", "", "", int64(0), int64(0), []byte{}, uint8(0))
	f.Add("a\"b", "c\\d", "\x00", "\u2028", "ü", "\xff", "tab\there", "", int64(math.MinInt64), int64(math.MaxInt64), []byte{0xff}, uint8(1))
	f.Fuzz(func(t *testing.T, company, id, keyID, origin, property, session, text, typ string, created, optIn int64, digests []byte, records uint8) {
		var d [3][sha256.Size]byte
		for i := range d {
			if i < len(digests) && digests[i] != 0 {
				d[i] = sha256.Sum256(append([]byte{byte(i)}, digests...))
			}
		}
		doc := &Document{ID: id, CompanyID: company, PropertyID: property, SessionID: session, Origin: origin, KeyID: keyID,
			CreatedAt: time.Unix(0, created), EmailSHA256: d[0], MobileSHA256: d[1], RecordingSHA256: d[2]}
		if created == 0 {
			doc.CreatedAt = time.Time{}
		}
		for i := range int(records % 4) {
			r := DocumentConsent{Text: strings.Repeat(text, i+1), OptInAt: time.Unix(0, optIn+int64(i))}
			if typ != "" {
				r.Types = append(r.Types, typ)
			}
			for range i {
				r.Types = append(r.Types, fmt.Sprint(i))
			}
			doc.Consents = append(doc.Consents, r)
		}
		got := doc.AppendEncoding([]byte("prefix"))
		sc := doc.Content()
		if want := append([]byte("prefix"), referenceEncoding(&sc)...); !bytes.Equal(got, want) {
			t.Fatalf("AppendEncoding:\n%s\nthe documented encoding of its Content:\n%s", got, want)
		}
		got = got[len("prefix"):]
		if !bytes.Equal(doc.Encoding(), got) {
			t.Fatal("Encoding differs from AppendEncoding")
		}
		if back, err := sc.Encoding(); err != nil || !bytes.Equal(back, got) {
			t.Fatalf("the Content reads back as another encoding (%v):\n%s", err, back)
		}
		plain := !doc.CreatedAt.IsZero() && d[0] != [sha256.Size]byte{} && d[1] != [sha256.Size]byte{} && d[2] != [sha256.Size]byte{}
		for _, s := range append([]string{company, id, keyID, origin, property, session, text, typ}, sc.CreatedAt) {
			plain = plain && bytes.Equal(appendJCS(nil, s), []byte(`"`+s+`"`))
		}
		for _, r := range sc.Consents {
			plain = plain && r.OptInAt != ""
		}
		if plain && len(got) != doc.size() {
			t.Errorf("the encoding is %d bytes, size says %d:\n%s", len(got), doc.size(), got)
		}
	})
}

// appendMicroTime writes what AppendFormat writes in timeLayout,
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
		if got, want := string(appendMicroTime([]byte("x"), tm)), "x"+tm.Format(timeLayout); got != want {
			t.Errorf("appendMicroTime(%v) = %q, want %q", tm, got, want)
		}
	}
}
