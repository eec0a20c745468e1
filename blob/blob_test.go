package blob_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/consentkit/consentkit/blob"
	"github.com/consentkit/consentkit/blob/blobtest"
)

func TestMemory(t *testing.T) {
	blobtest.Run(t, func(*testing.T) blob.Store { return blob.NewMemory() })
}

func TestDir(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) blob.Store {
		d, err := blob.NewDir(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return d
	})
}

// A key that names the directory of other keys is absent: Delete of it
// removes nothing and is no error (retain's earlier-form video key "x.mp4"
// of session x is the directory of a session named "x.mp4").
func TestDirDeleteOfADirectory(t *testing.T) {
	ctx := context.Background()
	d, err := blob.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Put(ctx, "x.mp4/v.mp4", strings.NewReader("a video of session x.mp4")); err != nil {
		t.Fatal(err)
	}
	if err := d.Delete(ctx, "x.mp4"); err != nil {
		t.Errorf("Delete of a key that is a directory: %v; want nil, the key absent", err)
	}
	r, _, err := d.Open(ctx, "x.mp4/v.mp4")
	if err != nil {
		t.Fatalf("the object under it is gone: %v", err)
	}
	_ = r.Close()
}

// lockingReader locks its key on the store when it is read to its end: a
// Lock that lands while a Put is still writing.
type lockingReader struct {
	t      *testing.T
	r      io.Reader
	lock   func() error
	locked bool
}

func (l *lockingReader) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	if err == io.EOF && !l.locked {
		l.locked = true
		if lerr := l.lock(); lerr != nil {
			l.t.Errorf("Lock during Put: %v", lerr)
		}
	}
	return n, err
}

// A Lock made while a Put of its key is writing is not overtaken: the Put
// is refused and the locked object stays as it was.
func TestDirLockDuringPut(t *testing.T) {
	ctx := context.Background()
	d, err := blob.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Put(ctx, "v.mp4", strings.NewReader("first")); err != nil {
		t.Fatal(err)
	}
	r := &lockingReader{t: t, r: strings.NewReader("second"), lock: func() error {
		return d.Lock(ctx, "v.mp4", time.Now().Add(time.Hour))
	}}
	if _, err := d.Put(ctx, "v.mp4", r); !errors.Is(err, blob.ErrLocked) {
		t.Errorf("Put while a Lock landed: %v, want ErrLocked", err)
	}
	rc, _, err := d.Open(ctx, "v.mp4")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	if b, _ := io.ReadAll(rc); string(b) != "first" {
		t.Errorf("the locked object reads %q, want %q", b, "first")
	}
}

// A Put writes its temporary file in a .tmp directory beside its key, so
// that the rename never crosses filesystems, and a process killed during a
// Put leaves it there; no listing shows it. The first Put of a process
// into that directory removes those that have gone unwritten for
// StaleTemp, and keeps one written since (a Put of another process, still
// going).
func TestDirStaleTemporaryFiles(t *testing.T) {
	root := t.TempDir()
	d, err := blob.NewDir(root)
	if err != nil {
		t.Fatal(err)
	}
	temps := filepath.Join(root, "recordings", ".tmp")
	// What killed Puts left: one untouched for longer than StaleTemp, one
	// written a moment ago.
	if err := os.MkdirAll(temps, 0o750); err != nil {
		t.Fatal(err)
	}
	old, fresh := filepath.Join(temps, "put-old"), filepath.Join(temps, "put-fresh")
	for _, name := range []string{old, fresh} {
		if err := os.WriteFile(name, []byte("half an object"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	long := time.Now().Add(-blob.StaleTemp - time.Minute)
	if err := os.Chtimes(old, long, long); err != nil {
		t.Fatal(err)
	}
	var during []string
	body := readFunc(func(p []byte) (int, error) {
		entries, _ := os.ReadDir(temps)
		for _, e := range entries {
			during = append(during, e.Name())
		}
		return 0, io.EOF
	})
	if _, err := d.Put(context.Background(), "recordings/s1", body); err != nil {
		t.Fatal(err)
	}
	if len(during) != 2 || !slices.Contains(during, "put-fresh") || slices.Contains(during, "put-old") {
		t.Fatalf("during the Put, %s held %v; want the fresh file and the Put's own", temps, during)
	}
	if after, err := os.ReadDir(temps); err != nil || len(after) != 1 || after[0].Name() != "put-fresh" {
		t.Fatalf("after the Put, %s holds %v (%v); want the fresh file alone", temps, after, err)
	}
	if keys, err := d.ListAfter(context.Background(), "", "", 10); err != nil || len(keys) != 1 || keys[0] != "recordings/s1" {
		t.Errorf("ListAfter = %v, %v; want the one object", keys, err)
	}
}

type readFunc func([]byte) (int, error)

func (f readFunc) Read(p []byte) (int, error) { return f(p) }
