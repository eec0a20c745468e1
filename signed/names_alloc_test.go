package signed_test

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/consentkit/consentkit/signed"
)

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// hostile are answers of 8 MiB that cost a reader memory: nested deeper
// than encoding/json reads, nested as deep as it reads, and many small
// objects and members.
func hostile() map[string][]byte {
	const size = 8 << 20
	deep := 10000 // encoding/json's limit
	wide := &bytes.Buffer{}
	wide.WriteByte('{')
	for i := 0; wide.Len() < size; i++ {
		if i > 0 {
			wide.WriteByte(',')
		}
		fmt.Fprintf(wide, `"m%d":0`, i)
	}
	wide.WriteByte('}')
	return map[string][]byte{
		"8 MiB of [":                 bytes.Repeat([]byte("["), size),
		`8 MiB of {"a":`:             bytes.Repeat([]byte(`{"a":`), size/5),
		"10000 arrays deep":          []byte(strings.Repeat("[", deep) + strings.Repeat("]", deep)),
		"10000 objects deep":         []byte(strings.Repeat(`{"a":`, deep-1) + "{}" + strings.Repeat("}", deep-1)),
		"empty objects":              []byte("[" + strings.Repeat("{},", size/3) + "{}]"),
		"objects of a member":        []byte("[" + strings.Repeat(`{"a":1},`, size/8) + "{}]"),
		"objects of 2 members, deep": []byte(strings.Repeat(`{"a":1,"b":`, 9000) + "0" + strings.Repeat("}", 9000)),
		"one object, many members":   wide.Bytes(),
	}
}

// CheckNames reads an answer nested without bound, or made of many
// objects, in memory bounded by a small multiple of its size (it took
// gigabytes for 60 MiB of "["): what is deeper than encoding/json reads
// it leaves to the decoder, allocating next to nothing, and it makes no
// map for an object of a few members.
func TestCheckNamesMemoryBounded(t *testing.T) {
	for name, answer := range hostile() {
		var err error
		alloc := allocated(func() { err = signed.CheckNames(answer) })
		// A frame for each open array and object, encoding/json's limit
		// of them (json.Valid keeps one as well), and for each name of
		// the open objects where it is and, in an object of many, its
		// hash in a table.
		limit := uint64(12*len(answer) + 4<<20)
		if strings.HasPrefix(name, "8 MiB of") {
			limit = 1 << 20 // refused as too deep, by json.Valid
		}
		t.Logf("%s (%d KiB): allocated %d KiB", name, len(answer)>>10, alloc>>10)
		if err != nil || alloc > limit {
			t.Errorf("%s (%d KiB): %v, allocated %d KiB; want at most %d KiB", name, len(answer)>>10, err, alloc>>10, limit>>10)
		}
	}
	// Names are still compared in objects of many members, past a map's
	// making, and in objects nested as deep as encoding/json reads.
	for answer, want := range map[string]string{
		`{"m0":0,"m1":1,"m2":2,"m3":3,"m4":4,"m5":5,"m6":6,"m7":7,"m8":8,"m9":9,"m10":0,"m11":0,"m12":0,"m13":0,"m14":0,"m15":0,"m16":0,"m17":0,"M3":0}`: `the answer has members "m3" and "M3"`,
		`{"m0":0,"m1":1,"m2":2,"m3":3,"m4":4,"m5":5,"m6":6,"m7":7,"m8":8,"m9":9,"m10":0,"m11":0,"m12":0,"m13":0,"m14":0,"m15":0,"M16":0,"m16":0}`:        `the answer has members "M16" and "m16"`,
		`{"m0":0,"m1":1,"m2":2,"m3":3,"m4":4,"m5":5,"m6":6,"m7":7,"m8":8,"m9":9,"m10":0,"m11":0,"m12":0,"m13":0,"m14":0,"m15":0,"m16":0,"M15":0}`:        `the answer has members "m15" and "M15"`,
		strings.Repeat(`{"a":`, 9998) + `{"k":1,"\u212a":2}` + strings.Repeat("}", 9998):                                                                 "members \"k\" and \"\u212a\"",
		`[{"a":{"b":1},"b":{"a":1,"b":2,"A":3}}]`: `the answer's [0].b has members "a" and "A"`,
	} {
		if err := signed.CheckNames([]byte(answer)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%.80s: %.200v; want %s", answer, err, want)
		}
	}
}
