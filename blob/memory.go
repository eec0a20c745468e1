package blob

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"
)

// Memory is a Store in memory, for tests and the quick start. It holds
// whole objects, so it suits small ones.
type Memory struct {
	mu    sync.Mutex
	objs  map[string]memObj
	locks map[string]time.Time
	now   func() time.Time
}

type memObj struct {
	data []byte
	info Info
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty Memory store.
func NewMemory() *Memory {
	return &Memory{objs: map[string]memObj{}, locks: map[string]time.Time{}, now: time.Now}
}

// Put implements Store.
func (m *Memory) Put(ctx context.Context, key string, r io.Reader) (Info, error) {
	if err := ValidKey(key); err != nil {
		return Info{}, err
	}
	h := sha256.New()
	var buf bytes.Buffer
	n, err := io.Copy(io.MultiWriter(&buf, h), r)
	if err != nil {
		return Info{}, fmt.Errorf("blob: put %s: %w", key, err)
	}
	info := Info{Key: key, Size: n}
	copy(info.SHA256[:], h.Sum(nil))
	m.mu.Lock()
	defer m.mu.Unlock()
	if until, ok := m.locks[key]; ok && m.now().Before(until) {
		return Info{}, fmt.Errorf("%w: %s until %s", ErrLocked, key, until.UTC().Format(time.RFC3339))
	}
	m.objs[key] = memObj{data: buf.Bytes(), info: info}
	return info, nil
}

// Open implements Store.
func (m *Memory) Open(ctx context.Context, key string) (io.ReadCloser, Info, error) {
	return m.OpenRange(ctx, key, 0, -1)
}

// OpenRange implements Store.
func (m *Memory) OpenRange(_ context.Context, key string, offset, length int64) (io.ReadCloser, Info, error) {
	if err := ValidKey(key); err != nil {
		return nil, Info{}, err
	}
	m.mu.Lock()
	o, ok := m.objs[key]
	m.mu.Unlock()
	if !ok {
		return nil, Info{}, fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	off, n, err := clip(o.info.Size, offset, length)
	if err != nil {
		return nil, Info{}, err
	}
	// Objects are never written in place, so the slice stays as it was.
	return io.NopCloser(bytes.NewReader(o.data[off : off+n])), o.info, nil
}

// Delete implements Store.
func (m *Memory) Delete(_ context.Context, key string) error {
	if err := ValidKey(key); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if until, ok := m.locks[key]; ok && m.now().Before(until) {
		return fmt.Errorf("%w: %s until %s", ErrLocked, key, until.UTC().Format(time.RFC3339))
	}
	delete(m.objs, key)
	delete(m.locks, key)
	return nil
}

// Lock implements Store.
func (m *Memory) Lock(_ context.Context, key string, until time.Time) error {
	if err := ValidKey(key); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.objs[key]; !ok {
		return fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	if until.After(m.locks[key]) {
		m.locks[key] = until.UTC()
	}
	return nil
}

// ListAfter implements Store.
func (m *Memory) ListAfter(_ context.Context, prefix, after string, limit int) ([]string, error) {
	keys := []string{}
	if limit <= 0 {
		return keys, nil
	}
	m.mu.Lock()
	for k := range m.objs {
		if k > after && strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	m.mu.Unlock()
	slices.Sort(keys)
	return keys[:min(len(keys), limit)], nil
}
