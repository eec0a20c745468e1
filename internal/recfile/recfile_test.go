package recfile_test

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"slices"
	"testing"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/recfile"
)

func write(t testing.TB, chunks ...string) ([]byte, recfile.Summary) {
	t.Helper()
	var buf bytes.Buffer
	w := recfile.NewWriter(&buf)
	for _, c := range chunks {
		if err := w.Add([]byte(c)); err != nil {
			t.Fatal(err)
		}
	}
	sum, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), sum
}

// all bounds a Read well above the objects read.
var all = recfile.Limits{Chunks: 1 << 10, Bytes: 1 << 20}

var chunks = []string{`[{"type":4,"timestamp":1}]`, " [ ] ", `[{"type":3,"data":{"x":"ü\u2028"},"timestamp":2}]`}

func joinedDigest(chunks []string) consent.Digest {
	bs := make([][]byte, len(chunks))
	for i, c := range chunks {
		bs[i] = []byte(c)
	}
	return sha256.Sum256(consent.JoinChunks(bs))
}

// Read gives back each chunk byte for byte, in order, and the summary
// Write gave: the count, the bytes and the recording's digest.
func TestRoundTrip(t *testing.T) {
	obj, wrote := write(t, chunks...)
	if wrote.Chunks != 3 || wrote.Bytes != int64(len(chunks[0]+chunks[1]+chunks[2])) || wrote.SHA256 != joinedDigest(chunks) {
		t.Errorf("Write summary = %+v", wrote)
	}
	var got []string
	read, err := recfile.Read(bytes.NewReader(obj), all, func(seq int, c []byte) error {
		if seq != len(got) {
			t.Errorf("seq %d, want %d", seq, len(got))
		}
		got = append(got, string(c))
		return nil
	})
	if err != nil || read != wrote {
		t.Fatalf("Read = %+v, %v; want %+v", read, err, wrote)
	}
	if !slices.Equal(got, chunks) {
		t.Errorf("chunks = %q, want %q", got, chunks)
	}
	for seq, want := range chunks {
		c, ok, err := recfile.Chunk(bytes.NewReader(obj), all, seq)
		if err != nil || !ok || string(c) != want {
			t.Errorf("Chunk(%d) = %q, %v, %v; want %q", seq, c, ok, err, want)
		}
	}
	if _, ok, err := recfile.Chunk(bytes.NewReader(obj), all, 3); ok || err != nil {
		t.Errorf("Chunk(3) = %v, %v; want none", ok, err)
	}
}

// An object cut anywhere, or with a byte of content changed, is an error
// (ErrCorrupt when cut), never a shorter or another recording.
func TestDamageIsCorrupt(t *testing.T) {
	obj, _ := write(t, chunks...)
	for n := range len(obj) {
		_, err := recfile.Read(bytes.NewReader(obj[:n]), all, func(int, []byte) error { return nil })
		if !errors.Is(err, recfile.ErrCorrupt) {
			t.Fatalf("cut at %d of %d: %v; want ErrCorrupt", n, len(obj), err)
		}
	}
	for i := range obj {
		bad := bytes.Clone(obj)
		bad[i] ^= 0x20
		var got []string
		_, err := recfile.Read(bytes.NewReader(bad), all, func(_ int, c []byte) error {
			got = append(got, string(c))
			return nil
		})
		// Some bytes carry no content (the gzip header's time, the
		// padding bits of the last deflate byte): those read the same.
		if err == nil && !slices.Equal(got, chunks) {
			t.Fatalf("byte %d changed: read %q without an error", i, got)
		}
	}
	if _, err := recfile.Read(bytes.NewReader(append(bytes.Clone(obj), 0)), all, func(int, []byte) error { return nil }); !errors.Is(err, recfile.ErrCorrupt) {
		t.Errorf("a byte after the object: %v; want ErrCorrupt", err)
	}
}

// An object with more chunks, or more bytes, than the limits is
// ErrCorrupt as soon as it passes them: the chunk that passes is neither
// read nor handed on. One exactly at them reads whole.
func TestLimits(t *testing.T) {
	obj, wrote := write(t, chunks...)
	exact := recfile.Limits{Chunks: wrote.Chunks, Bytes: wrote.Bytes}
	if _, err := recfile.Read(bytes.NewReader(obj), exact, func(int, []byte) error { return nil }); err != nil {
		t.Errorf("Read at its limits: %v", err)
	}
	for _, c := range []struct {
		name   string
		lim    recfile.Limits
		handed int // chunks handed on before the error
	}{
		{"a chunk fewer", recfile.Limits{Chunks: 2, Bytes: wrote.Bytes}, 2},
		{"no chunk", recfile.Limits{Bytes: wrote.Bytes}, 0},
		{"a byte fewer", recfile.Limits{Chunks: 3, Bytes: wrote.Bytes - 1}, 2},
		{"under the first chunk", recfile.Limits{Chunks: 3, Bytes: int64(len(chunks[0]) - 1)}, 0},
	} {
		handed := 0
		_, err := recfile.Read(bytes.NewReader(obj), c.lim, func(int, []byte) error { handed++; return nil })
		if !errors.Is(err, recfile.ErrCorrupt) || handed != c.handed {
			t.Errorf("%s: Read handed %d chunks, %v; want %d, ErrCorrupt", c.name, handed, err, c.handed)
		}
		_, ok, err := recfile.Chunk(bytes.NewReader(obj), c.lim, 2)
		if ok || !errors.Is(err, recfile.ErrCorrupt) {
			t.Errorf("%s: Chunk(2) = %v, %v; want ErrCorrupt", c.name, ok, err)
		}
	}
}

// A hostile object of many small chunks, that compresses to little,
// hands on no more than its limits, however many it holds.
func TestHostileObjectBounded(t *testing.T) {
	var buf bytes.Buffer
	w := recfile.NewWriter(&buf)
	chunk := bytes.Repeat([]byte("a"), 200)
	for range 100_000 {
		if err := w.Add(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	lim := recfile.Limits{Chunks: 3, Bytes: 1000}
	var handed int64
	_, err := recfile.Read(bytes.NewReader(buf.Bytes()), lim, func(_ int, c []byte) error {
		handed += int64(len(c))
		return nil
	})
	if !errors.Is(err, recfile.ErrCorrupt) || handed > lim.Bytes {
		t.Errorf("Read of %d chunks under %+v: %v, %d bytes handed on; want ErrCorrupt, at most %d", 100_000, lim, err, handed, lim.Bytes)
	}
}

// A failing source is its own error, not ErrCorrupt: a network read that
// fails is worth trying again.
func TestSourceError(t *testing.T) {
	obj, _ := write(t, chunks...)
	boom := errors.New("connection reset")
	r := io.MultiReader(bytes.NewReader(obj[:len(obj)/2]), errReader{boom})
	_, err := recfile.Read(r, all, func(int, []byte) error { return nil })
	if !errors.Is(err, boom) || errors.Is(err, recfile.ErrCorrupt) {
		t.Errorf("Read of a failing source: %v; want its error", err)
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// An empty chunk cannot be written: the length 0 ends the chunks.
func TestEmptyChunkRefused(t *testing.T) {
	w := recfile.NewWriter(io.Discard)
	if err := w.Add(nil); err == nil {
		t.Error("Add(empty) succeeded")
	}
	if _, err := w.Close(); err == nil {
		t.Error("Close after a refused Add succeeded")
	}
}

// Any bytes read as an object either fail or give chunks that re-encode to
// the same summary, within the limits; never a panic.
func FuzzRead(f *testing.F) {
	obj, _ := write(f, chunks...)
	f.Add(obj)
	f.Add(obj[:len(obj)/2])
	f.Add([]byte("consentkit-recording 1\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var got []string
		lim := recfile.Limits{Chunks: 16, Bytes: 4096}
		sum, err := recfile.Read(bytes.NewReader(b), lim, func(seq int, c []byte) error {
			if len(c) == 0 || seq >= lim.Chunks {
				t.Fatalf("chunk %d of %d bytes", seq, len(c))
			}
			got = append(got, string(c))
			return nil
		})
		if err != nil {
			return
		}
		if sum.Chunks > lim.Chunks || sum.Bytes > lim.Bytes {
			t.Fatalf("read %+v past %+v", sum, lim)
		}
		_, again := write(t, got...)
		if again != sum {
			t.Fatalf("read %+v, re-written %+v", sum, again)
		}
	})
}

// A closed Writer takes nothing more, and its compressor serves the next.
func TestClosedWriter(t *testing.T) {
	var buf bytes.Buffer
	w := recfile.NewWriter(&buf)
	if err := w.Add([]byte(chunks[0])); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Add([]byte(chunks[1])); err == nil {
		t.Error("Add after Close succeeded")
	}
	if _, err := w.Close(); err == nil {
		t.Error("a second Close succeeded")
	}
	again, _ := write(t, chunks...)
	if _, err := recfile.Read(bytes.NewReader(again), all, func(int, []byte) error { return nil }); err != nil {
		t.Errorf("an object written after another: %v", err)
	}
	if _, err := recfile.Read(bytes.NewReader(buf.Bytes()), all, func(int, []byte) error { return nil }); err != nil {
		t.Errorf("the first object, after its writer went back: %v", err)
	}
}
