package blob

import (
	"container/heap"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Dir is a Store in a directory of the filesystem, the default. An object
// is the file Root/<key>, so files written by retain before this package
// (<session>.mp4, <certificate>.png) are its objects. Put writes a temporary
// file in a .tmp directory beside the object (so that the rename stays on
// one filesystem, should a directory of keys be a mount of its own), syncs
// it, renames it over the key and syncs the key's directory (and the
// parent of each directory it makes), so a reader or a crash never leaves
// half an object; Delete syncs the key's directory too. A process killed during a Put
// leaves its temporary file behind: the first Put of a process into a
// directory removes those that have gone unwritten for StaleTemp. A lock is
// a small file under Root/.locks holding its date. No key names a file
// under either, since no segment of a key starts with ".".
type Dir struct {
	Root string
	// Now is the clock for locks; nil means time.Now.
	Now func() time.Time

	mu sync.Mutex // orders Put's and Delete's lock checks against Lock
}

var _ Store = (*Dir)(nil)

// StaleTemp is how long a temporary file of Put's goes unwritten before a
// Put takes it for one that a killed process left.
const StaleTemp = time.Hour

// tempDir holds Put's temporary files, in the directory of their key.
const tempDir = ".tmp"

// NewDir returns a Dir store rooted at root, which it creates if needed.
func NewDir(root string) (*Dir, error) {
	if err := mkdirAll(root); err != nil {
		return nil, fmt.Errorf("blob: %w", err)
	}
	return &Dir{Root: root}, nil
}

// syncDir syncs a directory, making durable the entries created, renamed
// or removed in it. A variable so that a test sees which are synced.
var syncDir = func(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // read only
	return f.Sync()
}

// mkdirs orders mkdirAll's calls, so that a directory found made was
// synced into its parent by whichever call made it.
var mkdirs sync.Mutex

// mkdirAll is os.MkdirAll that syncs the parent of each directory it
// makes: a file synced into a new directory is not durable until the
// directory's own entry is.
func mkdirAll(dir string) error {
	mkdirs.Lock()
	defer mkdirs.Unlock()
	return mkdirLocked(filepath.Clean(dir))
}

func mkdirLocked(dir string) error {
	if st, err := os.Stat(dir); err == nil {
		if !st.IsDir() {
			return &fs.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
		}
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := mkdirLocked(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o750); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	// Made by this call, or by another process just now: either way
	// its entry is synced before a file goes in.
	return syncDir(parent)
}

// swept holds the temporary directories this process has swept.
var swept sync.Map

// sweepTemps removes, once a process, the temporary files in dir that
// have gone unwritten for StaleTemp: what Puts of a killed process left.
// It is best effort: a file it cannot remove stays for the next process,
// and no Put fails for it.
func sweepTemps(dir string) {
	if _, done := swept.LoadOrStore(dir, true); done {
		return
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	cutoff := time.Now().Add(-StaleTemp)
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() && info.ModTime().Before(cutoff) {
			_ = os.Remove(filepath.Join(dir, e.Name())) // gone since, or kept for the next process
		}
	}
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

// writeAtomic streams r into name through a synced temporary file in the
// .tmp directory beside it, which rename moves into place.
func writeAtomic(name string, r io.Reader, sum io.Writer, rename func(tmp, name string) error) (n int64, err error) {
	dir := filepath.Dir(name)
	temps := filepath.Join(dir, tempDir)
	if err := mkdirAll(temps); err != nil {
		return 0, err
	}
	sweepTemps(temps)
	tmp, err := os.CreateTemp(temps, "put-*")
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
	return n, syncDir(dir)
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
	if fi, err := os.Lstat(name); err == nil && fi.IsDir() {
		// The directory of other keys ("x.mp4/…"), no object: key is
		// absent. Removed, it would be another id's, and a directory
		// that holds something is no error to retry for ever.
		return nil
	}
	if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("blob: delete %s: %w", key, err)
	}
	if err := os.Remove(d.lockPath(key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("blob: delete %s: %w", key, err)
	}
	// The removal is durable only once the directory is synced; it is
	// synced even when the object was gone already, which a Delete that
	// failed to sync may have left.
	if err := syncDir(filepath.Dir(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
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

// ListAfter implements Store. A directory keeps no order of its own: a
// page reads the name of every entry under the prefix's directory (names
// only, neither opened nor statted) and keeps the limit first after
// after, so that its memory is a page's while its time grows with the
// number of objects. Names starting with "." (the directories of Put's
// temporary files and of the locks) and names that are no valid key are
// not objects.
func (d *Dir) ListAfter(ctx context.Context, prefix, after string, limit int) ([]string, error) {
	if limit <= 0 {
		return []string{}, nil
	}
	// The deepest directory that holds every key starting with prefix.
	base, _, _ := cutLast(prefix, '/')
	if base != "" && ValidKey(base) != nil {
		return []string{}, nil // no key starts with prefix
	}
	l := &lister{prefix: prefix, after: after, limit: limit}
	if err := d.list(ctx, base, l); err != nil {
		return nil, fmt.Errorf("blob: list %s: %w", prefix, err)
	}
	keys := l.page.keys
	slices.Sort(keys)
	return keys, nil
}

// cutLast splits s around its last sep; base is "" when there is none.
func cutLast(s string, sep byte) (base, rest string, ok bool) {
	if i := strings.LastIndexByte(s, sep); i >= 0 {
		return s[:i], s[i+1:], true
	}
	return "", s, false
}

// lister keeps the limit first keys after after that start with prefix.
type lister struct {
	prefix, after string
	limit         int
	page          maxHeap
}

// list adds the keys under the directory of key dir ("" for Root). No
// key is under a dir that is missing, or is an object or any other file
// but a directory (ENOTDIR when a segment of dir before the last is one):
// those list nothing, as they do on the other stores.
func (d *Dir) list(ctx context.Context, dir string, l *lister) error {
	f, err := os.Open(filepath.Join(d.Root, filepath.FromSlash(dir)))
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil
	}
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // read only
	if st, err := f.Stat(); err != nil {
		return err
	} else if !st.IsDir() {
		return nil
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		entries, err := f.ReadDir(1024)
		for _, e := range entries {
			name := e.Name()
			if name == "" || name[0] == '.' {
				continue
			}
			key := name
			if dir != "" {
				key = dir + "/" + name
			}
			switch {
			case e.IsDir():
				// Its keys are key+"/…", all below key+"0".
				sub := key + "/"
				if !strings.HasPrefix(sub, l.prefix) && !strings.HasPrefix(l.prefix, sub) || l.after >= key+"0" ||
					len(l.page.keys) == l.limit && sub > l.page.keys[0] {
					continue
				}
				if err := d.list(ctx, key, l); err != nil {
					return err
				}
			case e.Type().IsRegular():
				if key <= l.after || !strings.HasPrefix(key, l.prefix) || ValidKey(key) != nil {
					continue
				}
				if len(l.page.keys) < l.limit {
					heap.Push(&l.page, key)
				} else if key < l.page.keys[0] {
					l.page.keys[0] = key
					heap.Fix(&l.page, 0)
				}
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// maxHeap is a heap of keys, the greatest first.
type maxHeap struct{ keys []string }

func (h *maxHeap) Len() int           { return len(h.keys) }
func (h *maxHeap) Less(i, j int) bool { return h.keys[i] > h.keys[j] }
func (h *maxHeap) Swap(i, j int)      { h.keys[i], h.keys[j] = h.keys[j], h.keys[i] }
func (h *maxHeap) Push(x any)         { h.keys = append(h.keys, x.(string)) }
func (h *maxHeap) Pop() any {
	k := h.keys[len(h.keys)-1]
	h.keys = h.keys[:len(h.keys)-1]
	return k
}
