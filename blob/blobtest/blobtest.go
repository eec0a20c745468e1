// Package blobtest is the contract every blob.Store passes: Run it from an
// implementation's tests with a function that returns a fresh, empty store.
package blobtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/consentkit/consentkit/blob"
)

// Run runs every contract case, each on a store from newStore.
func Run(t *testing.T, newStore func(t *testing.T) blob.Store) {
	t.Helper()
	cases := []struct {
		name string
		fn   func(t *testing.T, s blob.Store)
	}{
		{"Put/RoundTrip", roundTrip},
		{"Put/StreamingDigest", streamingDigest},
		{"Put/Replaces", replaces},
		{"Put/Empty", empty},
		{"OpenRange/Edges", ranges},
		{"Open/NotFound", notFound},
		{"Delete/Removes", deletes},
		{"Delete/MissingIsNil", deleteMissing},
		{"Lock/RefusesEarlyDelete", lockRefuses},
		{"Lock/RefusesPut", lockRefusesPut},
		{"Lock/NotFound", lockMissing},
		{"Key/Invalid", invalidKeys},
		{"Put/ConcurrentSameKey", concurrentPut},
		{"ListAfter/Pages", listPages},
		{"ListAfter/UnderAnObject", listUnderAnObject},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(t, newStore(t))
		})
	}
}

// pattern returns n deterministic bytes that differ by seed.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*31) ^ seed
	}
	return b
}

func put(t *testing.T, s blob.Store, key string, data []byte) blob.Info {
	t.Helper()
	info, err := s.Put(context.Background(), key, bytes.NewReader(data))
	if err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
	return info
}

func read(t *testing.T, s blob.Store, key string, off, n int64) ([]byte, blob.Info) {
	t.Helper()
	rc, info, err := s.OpenRange(context.Background(), key, off, n)
	if err != nil {
		t.Fatalf("OpenRange(%q, %d, %d): %v", key, off, n, err)
	}
	defer func() { _ = rc.Close() }()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read %q: %v", key, err)
	}
	return b, info
}

func roundTrip(t *testing.T, s blob.Store) {
	data := pattern(300_000, 1)
	put(t, s, "videos/s_1.mp4", data)
	rc, info, err := s.Open(context.Background(), "videos/s_1.mp4")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	_ = rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("read %d bytes, not the %d put", len(got), len(data))
	}
	if info.Size != int64(len(data)) || info.Key != "videos/s_1.mp4" {
		t.Fatalf("Open info = %+v", info)
	}
}

// oneByOne hands out its bytes a few at a time, as a network stream would.
type oneByOne struct{ r io.Reader }

func (o oneByOne) Read(p []byte) (int, error) {
	if len(p) > 7 {
		p = p[:7]
	}
	return o.r.Read(p)
}

func streamingDigest(t *testing.T, s blob.Store) {
	data := pattern(100_003, 2)
	info, err := s.Put(context.Background(), "c_1.png", oneByOne{bytes.NewReader(data)})
	if err != nil {
		t.Fatal(err)
	}
	if info.SHA256 != sha256.Sum256(data) || info.Size != int64(len(data)) {
		t.Fatalf("Put info = size %d sha %x, want %d %x", info.Size, info.SHA256, len(data), sha256.Sum256(data))
	}
}

func replaces(t *testing.T, s blob.Store) {
	put(t, s, "k", pattern(1000, 3))
	want := pattern(10, 4)
	put(t, s, "k", want)
	if got, _ := read(t, s, "k", 0, -1); !bytes.Equal(got, want) {
		t.Fatalf("after replacing: %x, want %x", got, want)
	}
}

func empty(t *testing.T, s blob.Store) {
	info := put(t, s, "empty", nil)
	if info.Size != 0 || info.SHA256 != sha256.Sum256(nil) {
		t.Fatalf("Put info = %+v", info)
	}
	if got, _ := read(t, s, "empty", 0, -1); len(got) != 0 {
		t.Fatalf("read %d bytes", len(got))
	}
}

func ranges(t *testing.T, s blob.Store) {
	data := pattern(1000, 5)
	put(t, s, "r.mp4", data)
	for _, c := range []struct{ off, n, from, to int64 }{
		{0, 1, 0, 1},
		{0, 1000, 0, 1000},
		{0, -1, 0, 1000},
		{999, 1, 999, 1000},
		{500, -1, 500, 1000},
		{990, 100, 990, 1000}, // past the end: cut short
		{1000, 10, 1000, 1000},
		{5000, 10, 1000, 1000},
		{10, 0, 10, 10},
		// A length that overflows offset+length is past the end too.
		{1, math.MaxInt64, 1, 1000},
		{990, math.MaxInt64, 990, 1000},
		{5000, math.MaxInt64, 1000, 1000},
	} {
		got, info := read(t, s, "r.mp4", c.off, c.n)
		if !bytes.Equal(got, data[c.from:c.to]) {
			t.Errorf("OpenRange(%d, %d) = %d bytes, want data[%d:%d]", c.off, c.n, len(got), c.from, c.to)
		}
		if info.Size != 1000 {
			t.Errorf("OpenRange(%d, %d) size = %d, want the whole object's 1000", c.off, c.n, info.Size)
		}
	}
	if _, _, err := s.OpenRange(context.Background(), "r.mp4", -1, 1); err == nil {
		t.Error("OpenRange with a negative offset succeeded")
	}
}

func notFound(t *testing.T, s blob.Store) {
	ctx := context.Background()
	if _, _, err := s.Open(ctx, "missing"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Open(missing) = %v, want ErrNotFound", err)
	}
	if _, _, err := s.OpenRange(ctx, "missing", 0, 1); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("OpenRange(missing) = %v, want ErrNotFound", err)
	}
}

func deletes(t *testing.T, s blob.Store) {
	put(t, s, "d", pattern(10, 6))
	if err := s.Delete(context.Background(), "d"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Open(context.Background(), "d"); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("Open after Delete = %v, want ErrNotFound", err)
	}
}

func deleteMissing(t *testing.T, s blob.Store) {
	if err := s.Delete(context.Background(), "never-put"); err != nil {
		t.Fatalf("Delete(missing) = %v, want nil", err)
	}
}

func lockRefuses(t *testing.T, s blob.Store) {
	ctx := context.Background()
	put(t, s, "locked.mp4", pattern(10, 7))
	if err := s.Lock(ctx, "locked.mp4", time.Now().Add(24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	// An earlier date never shortens a lock.
	if err := s.Lock(ctx, "locked.mp4", time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "locked.mp4"); !errors.Is(err, blob.ErrLocked) {
		t.Fatalf("Delete before the lock's date = %v, want ErrLocked", err)
	}
	if got, _ := read(t, s, "locked.mp4", 0, -1); !bytes.Equal(got, pattern(10, 7)) {
		t.Fatal("a refused Delete changed the object")
	}
	// A lock already past does not keep the object.
	put(t, s, "past", pattern(10, 8))
	if err := s.Lock(ctx, "past", time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "past"); err != nil {
		t.Fatalf("Delete after the lock's date = %v", err)
	}
}

func lockRefusesPut(t *testing.T, s blob.Store) {
	ctx := context.Background()
	put(t, s, "kept.png", pattern(10, 9))
	if err := s.Lock(ctx, "kept.png", time.Now().Add(24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "kept.png", bytes.NewReader(pattern(10, 10))); !errors.Is(err, blob.ErrLocked) {
		t.Fatalf("Put over a locked object = %v, want ErrLocked", err)
	}
	if got, _ := read(t, s, "kept.png", 0, -1); !bytes.Equal(got, pattern(10, 9)) {
		t.Fatal("a refused Put changed the object")
	}
}

func lockMissing(t *testing.T, s blob.Store) {
	err := s.Lock(context.Background(), "missing", time.Now().Add(time.Hour))
	if !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("Lock(missing) = %v, want ErrNotFound", err)
	}
}

func invalidKeys(t *testing.T, s blob.Store) {
	ctx := context.Background()
	for _, k := range []string{"", "..", "../x", "a/../../x", "/etc/passwd", "a//b", "a/", ".hidden", "a\\b", "a b", "ü", string(make([]byte, 201))} {
		if _, err := s.Put(ctx, k, bytes.NewReader([]byte("x"))); !errors.Is(err, blob.ErrInvalidKey) {
			t.Errorf("Put(%q) = %v, want ErrInvalidKey", k, err)
		}
		if _, _, err := s.Open(ctx, k); !errors.Is(err, blob.ErrInvalidKey) {
			t.Errorf("Open(%q) = %v, want ErrInvalidKey", k, err)
		}
		if err := s.Delete(ctx, k); !errors.Is(err, blob.ErrInvalidKey) {
			t.Errorf("Delete(%q) = %v, want ErrInvalidKey", k, err)
		}
		if err := s.Lock(ctx, k, time.Now()); !errors.Is(err, blob.ErrInvalidKey) {
			t.Errorf("Lock(%q) = %v, want ErrInvalidKey", k, err)
		}
	}
}

func concurrentPut(t *testing.T, s blob.Store) {
	const writers, size = 8, 64 << 10
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.Put(context.Background(), "same", bytes.NewReader(pattern(size, byte(i)))); err != nil {
				errs <- fmt.Errorf("writer %d: %w", i, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	got, _ := read(t, s, "same", 0, -1)
	for i := range writers {
		if bytes.Equal(got, pattern(size, byte(i))) {
			return
		}
	}
	t.Fatalf("after concurrent Puts the object (%d bytes) is none of the writers' whole objects", len(got))
}

// listPages lists keys a page at a time, in byte order, under a prefix or
// all of them, resuming after a key that is gone too.
func listPages(t *testing.T, s blob.Store) {
	ctx := context.Background()
	for _, k := range []string{"recordings/c", "recordings/b.1", "recordings-x", "recordings/sub/d", "recordings/a", "other/z", "recordings/b", "recordings/gone"} {
		put(t, s, k, []byte(k))
	}
	if err := s.Delete(ctx, "recordings/gone"); err != nil {
		t.Fatal(err)
	}
	all := []string{"other/z", "recordings-x", "recordings/a", "recordings/b", "recordings/b.1", "recordings/c", "recordings/sub/d"}
	walk := func(prefix string, limit int) ([]string, int) {
		var got []string
		after, pages := "", 0
		for {
			keys, err := s.ListAfter(ctx, prefix, after, limit)
			if err != nil {
				t.Fatalf("ListAfter(%q, %q, %d): %v", prefix, after, limit, err)
			}
			if len(keys) > limit {
				t.Fatalf("ListAfter(%q, %q, %d) = %q: more than the limit", prefix, after, limit, keys)
			}
			if len(keys) == 0 {
				return got, pages
			}
			pages++
			got = append(got, keys...)
			after = keys[len(keys)-1]
		}
	}
	for _, c := range []struct {
		prefix string
		limit  int
		want   []string
		pages  int
	}{
		{"recordings/", 2, all[2:], 3},
		{"recordings/", 1000, all[2:], 1},
		{"", 1, all, 7},
		{"", 3, all, 3},
		{"recordings/b", 10, []string{"recordings/b", "recordings/b.1"}, 1},
		{"recordings/sub/", 10, []string{"recordings/sub/d"}, 1},
		{"nothing/", 10, nil, 0},
	} {
		if got, pages := walk(c.prefix, c.limit); !slices.Equal(got, c.want) || pages != c.pages {
			t.Errorf("pages of %d under %q: %q in %d pages; want %q in %d", c.limit, c.prefix, got, pages, c.want, c.pages)
		}
	}
	if keys, err := s.ListAfter(ctx, "recordings/", "recordings/bb", 10); err != nil || !slices.Equal(keys, []string{"recordings/c", "recordings/sub/d"}) {
		t.Errorf("ListAfter from a key that is not there = %q, %v", keys, err)
	}
	if keys, err := s.ListAfter(ctx, "", "", 0); err != nil || len(keys) != 0 {
		t.Errorf("ListAfter of none = %q, %v", keys, err)
	}
}

// listUnderAnObject lists nothing under a key that is an object: no key
// starts with "rec/" when "rec" is one (on the filesystem, the path of
// such a key would go through a file).
func listUnderAnObject(t *testing.T, s blob.Store) {
	ctx := context.Background()
	for _, k := range []string{"rec", "rec.x", "recs/d"} {
		put(t, s, k, []byte(k))
	}
	for _, prefix := range []string{"rec/", "rec/x", "rec/sub/", "rec/sub/x"} {
		if keys, err := s.ListAfter(ctx, prefix, "", 10); err != nil || len(keys) != 0 {
			t.Errorf("ListAfter(%q) = %q, %v; want none", prefix, keys, err)
		}
		if keys, err := s.ListAfter(ctx, prefix, "rec/a", 10); err != nil || len(keys) != 0 {
			t.Errorf("ListAfter(%q) after rec/a = %q, %v; want none", prefix, keys, err)
		}
	}
	if keys, err := s.ListAfter(ctx, "rec", "", 10); err != nil || !slices.Equal(keys, []string{"rec", "rec.x", "recs/d"}) {
		t.Errorf("ListAfter(rec) = %q, %v; want [rec rec.x recs/d]", keys, err)
	}
}
