package blob

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Dir is a Store in a directory of the filesystem, the default. An object
// is the file Root/<key>, so files written by retain before this package
// (<session>.mp4, <certificate>.png) are its objects. Put writes a temporary
// file in the same directory, syncs it, renames it over the key and syncs
// the directory, so a reader or a crash never leaves half an object. A
// lock is a small file under Root/.locks holding its date.
type Dir struct {
	Root string
	// Now is the clock for locks; nil means time.Now.
	Now func() time.Time

	mu sync.Mutex // orders Put's and Delete's lock checks against Lock
}

var _ Store = (*Dir)(nil)

// NewDir returns a Dir store rooted at root, which it creates if needed.
func NewDir(root string) (*Dir, error) {
	if err := os.MkdirAll(root, 0o750); err != nil {
		return nil, fmt.Errorf("blob: %w", err)
	}
	return &Dir{Root: root}, nil
}

func (d *Dir) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

func (d *Dir) path(key string) (string, error) {
	if err := ValidKey(key); err != nil {
		return "", err
	}
	return filepath.Join(d.Root, filepath.FromSlash(key)), nil
}

func (d *Dir) lockPath(key string) string {
	return filepath.Join(d.Root, ".locks", filepath.FromSlash(key))
}

// lockedUntil returns the object's lock date, zero when none.
func (d *Dir) lockedUntil(key string) (time.Time, error) {
	b, err := os.ReadFile(d.lockPath(key))
	if errors.Is(err, fs.ErrNotExist) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("blob: lock of %s: %w", key, err)
	}
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(string(b)))
	if err != nil {
		return time.Time{}, fmt.Errorf("blob: lock of %s: %w", key, err)
	}
	return t, nil
}

func (d *Dir) checkUnlocked(key string) error {
	until, err := d.lockedUntil(key)
	if err != nil {
		return err
	}
	if d.now().Before(until) {
		return fmt.Errorf("%w: %s until %s", ErrLocked, key, until.UTC().Format(time.RFC3339))
	}
	return nil
}

// writeAtomic streams r into name through a synced temporary file, which
// rename moves into place.
func writeAtomic(name string, r io.Reader, sum io.Writer, rename func(tmp, name string) error) (n int64, err error) {
	dir := filepath.Dir(name)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return 0, err
	}
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return 0, err
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	w := io.Writer(tmp)
	if sum != nil {
		w = io.MultiWriter(tmp, sum)
	}
	if n, err = io.Copy(w, r); err != nil {
		return 0, err
	}
	// CreateTemp makes the file private to its owner; objects are served
	// and backed up by other processes, as retain's files always were.
	if err = tmp.Chmod(0o644); err != nil {
		return 0, err
	}
	if err = tmp.Sync(); err != nil {
		return 0, err
	}
	if err = tmp.Close(); err != nil {
		return 0, err
	}
	if err = rename(tmp.Name(), name); err != nil {
		return 0, err
	}
	// The rename is durable only once the directory is synced.
	df, err := os.Open(dir)
	if err != nil {
		return 0, err
	}
	defer func() { _ = df.Close() }() // read only
	return n, df.Sync()
}

// Put implements Store.
func (d *Dir) Put(ctx context.Context, key string, r io.Reader) (Info, error) {
	name, err := d.path(key)
	if err != nil {
		return Info{}, err
	}
	if err := d.checkUnlocked(key); err != nil {
		return Info{}, err
	}
	h := sha256.New()
	// The lock is checked again as the object replaces the old one, in
	// the order Lock and Delete keep, so that a Lock made while r was
	// being written is never overtaken.
	n, err := writeAtomic(name, r, h, func(tmp, name string) error {
		d.mu.Lock()
		defer d.mu.Unlock()
		if err := d.checkUnlocked(key); err != nil {
			return err
		}
		return os.Rename(tmp, name)
	})
	if err != nil {
		return Info{}, fmt.Errorf("blob: put %s: %w", key, err)
	}
	info := Info{Key: key, Size: n}
	copy(info.SHA256[:], h.Sum(nil))
	return info, nil
}

// Open implements Store.
func (d *Dir) Open(ctx context.Context, key string) (io.ReadCloser, Info, error) {
	return d.OpenRange(ctx, key, 0, -1)
}

// OpenRange implements Store.
func (d *Dir) OpenRange(_ context.Context, key string, offset, length int64) (io.ReadCloser, Info, error) {
	name, err := d.path(key)
	if err != nil {
		return nil, Info{}, err
	}
	f, err := os.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, Info{}, fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	if err != nil {
		return nil, Info{}, fmt.Errorf("blob: open %s: %w", key, err)
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	var off, n int64
	if err == nil {
		off, n, err = clip(st.Size(), offset, length)
	}
	if err != nil {
		_ = f.Close() // read only
		return nil, Info{}, err
	}
	info := Info{Key: key, Size: st.Size()}
	return readCloser{io.NewSectionReader(f, off, n), f}, info, nil
}

type readCloser struct {
	io.Reader
	io.Closer
}

// Delete implements Store.
func (d *Dir) Delete(_ context.Context, key string) error {
	name, err := d.path(key)
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.checkUnlocked(key); err != nil {
		return err
	}
	if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("blob: delete %s: %w", key, err)
	}
	if err := os.Remove(d.lockPath(key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("blob: delete %s: %w", key, err)
	}
	return nil
}

// Lock implements Store.
func (d *Dir) Lock(_ context.Context, key string, until time.Time) error {
	name, err := d.path(key)
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, err := os.Stat(name); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s", ErrNotFound, key)
	} else if err != nil {
		return fmt.Errorf("blob: lock %s: %w", key, err)
	}
	old, err := d.lockedUntil(key)
	if err != nil {
		return err
	}
	if !until.After(old) {
		return nil
	}
	_, err = writeAtomic(d.lockPath(key), strings.NewReader(until.UTC().Format(time.RFC3339Nano)), nil, os.Rename)
	if err != nil {
		return fmt.Errorf("blob: lock %s: %w", key, err)
	}
	return nil
}
