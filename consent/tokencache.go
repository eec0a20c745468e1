package consent

import (
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of the token cache (Config.TokenCacheTTL, TokenCacheSize).
const (
	DefaultTokenCacheTTL  = 2 * time.Second
	DefaultTokenCacheSize = 10_000
)

// tokenCache keeps the tokens that authenticated recently, by digest, so
// that a request does not need a transaction of its own to authenticate.
// A revocation made through this Service removes its token at once; one
// made elsewhere (another instance, the store directly) is seen when the
// entry, at most ttl old, is read again from the store. Unknown secrets
// are never cached: they always ask the store.
type tokenCache struct {
	ttl  time.Duration // <= 0: no cache
	size int

	mu      sync.Mutex
	entries map[Digest]tokenEntry
	// epoch moves on at every revocation through this Service; a token
	// read from the store before it moved is not cached, so a revocation
	// that commits while a request reads the token is never hidden by a
	// stale entry.
	epoch atomic.Int64
}

type tokenEntry struct {
	token  *Token
	loaded time.Time
}

// get returns the cached token of d read no longer than ttl before now.
func (c *tokenCache) get(d Digest, now time.Time) *Token {
	if c.ttl <= 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[d]
	if !ok {
		return nil
	}
	if age := now.Sub(e.loaded); age >= c.ttl || age < 0 {
		delete(c.entries, d)
		return nil
	}
	return e.token
}

// put caches t, read from the store at now, unless a revocation happened
// since epoch was read.
func (c *tokenCache) put(t *Token, now time.Time, epoch int64) {
	if c.ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.epoch.Load() != epoch {
		return
	}
	if c.entries == nil {
		c.entries = make(map[Digest]tokenEntry)
	}
	if _, ok := c.entries[t.Digest]; !ok && len(c.entries) >= c.size {
		for d := range c.entries { // evict one, any one
			delete(c.entries, d)
			break
		}
	}
	c.entries[t.Digest] = tokenEntry{token: t, loaded: now}
}

// forget removes the company's token id and moves the epoch on.
func (c *tokenCache) forget(companyID, tokenID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch.Add(1)
	for d, e := range c.entries {
		if e.token.ID == tokenID && e.token.CompanyID == companyID {
			delete(c.entries, d)
		}
	}
}
