package textsearch

import (
	"strings"
	"testing"
)

// Index agrees with strings.Index on every text and string, short and
// long, and IndexBytes with it.
//
// go test -run '^$' -fuzz FuzzIndex ./internal/textsearch
func FuzzIndex(f *testing.F) {
	long := strings.Repeat("ab", 40)
	for _, c := range [][2]string{
		{"", ""}, {"abc", ""}, {"", "a"}, {"abcabd", "abd"},
		{strings.Repeat("a", 200), strings.Repeat("a", 65)},
		{strings.Repeat("a", 200) + "b", strings.Repeat("a", 65) + "b"},
		{long + "abc" + long, long + "abc"}, {long, long + "a"},
		{hostileText(300), hostileSep(100)},
	} {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, s, sep string) {
		// Long strings of few distinct bytes, where matches and near
		// matches are many, as well as the fuzzer's own.
		for _, c := range [][2]string{{s, sep}, {strings.Repeat(s, 8), strings.Repeat(sep, 3)}} {
			want := strings.Index(c[0], c[1])
			if got := Index(c[0], c[1]); got != want {
				t.Fatalf("Index(%q, %q) = %d, want %d", c[0], c[1], got, want)
			}
			if got := New(c[1]).IndexBytes([]byte(c[0])); got != want {
				t.Fatalf("IndexBytes(%q, %q) = %d, want %d", c[0], c[1], got, want)
			}
		}
	})
}

// hostileText and hostileSep collide under the standard library's rolling
// hash at every position: "TKOWAYSX" after a run of "M" hashes as a run of
// "M" as long (its base is 16777619, modulo 2³²), and both are left as
// they are by the case folding of consent text (consent.Fold).
func hostileText(n int) string { return strings.Repeat("M", n) }
func hostileSep(m int) string  { return strings.Repeat("M", m-8) + "TKOWAYSX" }

// The work of finding a string that collides with the text at every
// position, against the standard library's:
//
//	go test -run '^$' -bench Hostile ./internal/textsearch
func BenchmarkHostile(b *testing.B) { benchIndex(b, hostileText(1<<20), hostileSep(4<<10)) }

// The same lengths with nothing in common: the cost of the linear search
// where the standard library's needs no guard.
func BenchmarkBenign(b *testing.B) {
	benchIndex(b, strings.Repeat("consent text, ", 1<<20/14), strings.Repeat("x", 4<<10))
}

// benchIndex looks for sep, which text does not hold, with Index and with
// strings.Index.
func benchIndex(b *testing.B, text, sep string) {
	for _, c := range []struct {
		name  string
		index func(s, sep string) int
	}{{"textsearch", Index}, {"strings", strings.Index}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				if c.index(text, sep) != -1 {
					b.Fatal("found")
				}
			}
		})
	}
}
