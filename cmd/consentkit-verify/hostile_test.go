package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// An answer nested far deeper than encoding/json reads (8 MiB of "[", or
// of {"a":) is refused as no JSON in memory bounded by a small multiple of
// its size: the check of its names, which runs first, no longer keeps a
// frame and a map for each level (60 MiB of "[" took 5.5 GB). Neither do
// 8 MiB of small objects cost more than a few times their size.
func TestHostileNestingMemoryBounded(t *testing.T) {
	keys := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(keys, []byte(`{"keys":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	const size = 8 << 20
	for name, c := range map[string]struct {
		in   []byte
		code int
		says string
	}{
		"8 MiB of [":     {bytes.Repeat([]byte("["), size), 2, "not JSON"},
		`8 MiB of {"a":`: {bytes.Repeat([]byte(`{"a":`), size/5), 2, "not JSON"},
		"empty objects":  {[]byte(`{"x":[` + strings.Repeat("{},", size/3) + "{}]}"), 2, "no certificate-info answer"},
	} {
		var before, after runtime.MemStats
		var out, errOut bytes.Buffer
		runtime.GC()
		runtime.ReadMemStats(&before)
		code := run([]string{"-keys", keys}, bytes.NewReader(c.in), &out, &errOut)
		runtime.ReadMemStats(&after)
		alloc := after.TotalAlloc - before.TotalAlloc
		if code != c.code || !strings.Contains(errOut.String(), c.says) || alloc > 64<<20 {
			t.Errorf("%s: exit %d, %.200s%.200s, allocated %d MiB for %d MiB; want exit %d, %q, at most 64 MiB",
				name, code, out.String(), errOut.String(), alloc>>20, len(c.in)>>20, c.code, c.says)
		}
	}
}
