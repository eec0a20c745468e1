// Package ttlcache is a small in-process cache of values read from a store:
// each entry is served for at most a time-to-live after it was read, and a
// removal moves an epoch on so that a value read before it is never cached
// after it. consentkit.Service caches the tokens that authenticated
// recently with it.
//
//	c := &ttlcache.Cache[consent.Digest, *consent.Token]{TTL: 2 * time.Second, Size: 10_000}
//	tok, ok := c.Get(d, now)
//	epoch := c.Epoch() // before reading the store; then, with what was read:
//	c.Put(d, tok, now, epoch)
//	c.Remove(func(t *consent.Token) bool { return t.ID == revoked })
package ttlcache

import (
	"sync"
	"sync/atomic"
	"time"
)

// Cache maps keys to values read at a time. The zero Cache caches nothing:
// TTL must be positive and Size at least 1.
type Cache[K comparable, V any] struct {
	TTL  time.Duration // <= 0: no cache
	Size int           // the most entries; a new one beyond evicts one, any one

	mu      sync.Mutex
	entries map[K]entry[V]
	epoch   atomic.Int64
}

type entry[V any] struct {
	value  V
	loaded time.Time
}

// Get returns the value of k read no longer than TTL before now.
func (c *Cache[K, V]) Get(k K, now time.Time) (V, bool) {
	var zero V
	if c.TTL <= 0 {
		return zero, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	if !ok {
		return zero, false
	}
	if age := now.Sub(e.loaded); age >= c.TTL || age < 0 {
		delete(c.entries, k)
		return zero, false
	}
	return e.value, true
}

// Epoch is the count of removals so far: read it before reading a value
// from the store, and pass it to Put.
func (c *Cache[K, V]) Epoch() int64 { return c.epoch.Load() }

// Put caches v, read from the store at now, unless a removal happened
// since epoch was read.
func (c *Cache[K, V]) Put(k K, v V, now time.Time, epoch int64) {
	if c.TTL <= 0 || c.Size < 1 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.epoch.Load() != epoch {
		return
	}
	if c.entries == nil {
		c.entries = make(map[K]entry[V])
	}
	if _, ok := c.entries[k]; !ok && len(c.entries) >= c.Size {
		for old := range c.entries {
			delete(c.entries, old)
			break
		}
	}
	c.entries[k] = entry[V]{value: v, loaded: now}
}

// Remove removes the entries whose value match reports, and moves the epoch
// on.
func (c *Cache[K, V]) Remove(match func(V) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch.Add(1)
	for k, e := range c.entries {
		if match(e.value) {
			delete(c.entries, k)
		}
	}
}
