package ident

import (
	"encoding/binary"
	"strings"
	"testing"
	"time"
)

// Entry keeps New's form, carries its time in its first 48 bits, and
// stays unique among ids of the same millisecond.
func TestEntry(t *testing.T) {
	at := time.Date(2026, 11, 25, 3, 30, 0, 123456789, time.UTC)
	seen := map[string]bool{}
	for range 10000 {
		id := Entry(at)
		if !Valid(id) || len(id) != len(New("le")) || !strings.HasPrefix(id, "le_") {
			t.Fatalf("%q is not of New's form", id)
		}
		if seen[id] {
			t.Fatalf("%q twice", id)
		}
		seen[id] = true
		b, err := encoding.DecodeString(strings.TrimPrefix(id, "le_"))
		if err != nil || len(b) != 16 {
			t.Fatalf("%q: %v", id, err)
		}
		if ms := int64(binary.BigEndian.Uint16(b[:2]))<<32 | int64(binary.BigEndian.Uint32(b[2:6])); ms != at.UnixMilli() {
			t.Fatalf("%q carries %d ms, want %d", id, ms, at.UnixMilli())
		}
	}
	// A millisecond later, the ids still share their leading characters.
	a, b := Entry(at), Entry(at.Add(time.Millisecond))
	if a[:10] != b[:10] {
		t.Errorf("%q and %q, a millisecond apart, share no prefix", a, b)
	}
}

// format writes the prefix, "_" and the bytes in base32, whatever the
// prefix's length.
func TestFormat(t *testing.T) {
	b := [16]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 255}
	for _, prefix := range []string{"", "le", "cert", strings.Repeat("p", 100)} {
		if got, want := format(prefix, &b), prefix+"_"+encoding.EncodeToString(b[:]); got != want {
			t.Errorf("format(%q) = %q, want %q", prefix, got, want)
		}
	}
}
