package blob_test

import (
	"context"
	"errors"
	"io"
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
