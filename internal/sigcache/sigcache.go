// Package sigcache remembers certificate signatures found good (D41), so
// that verifying one certificate again and again costs a SHA-256 of its
// canonical encoding instead of an Ed25519 verification (60–77 µs of
// processor time on the project's machines, more than the rest of a match
// on the memory store). consentkit.Service keeps one.
//
//	c := sigcache.New(1 << 16)
//	if !c.Verify(key.Key, cert.Signature, &doc) { // a hash when it holds the triple, else Ed25519
//		return errIntegrity
//	}
package sigcache

import (
	"crypto/ed25519"
	"crypto/sha256"
	"sync"

	"github.com/consentkit/consentkit/signed"
)

// Cache holds the signatures found good lately.
//
// An entry is the SHA-256 of everything the check took in — the public
// key, the signature and the canonical encoding of the certificate as it is
// now. A certificate whose stored content, key id or signature changed
// since has another digest, misses, and is checked in full, so the cache
// never lets through what the check would refuse; it remembers only
// successes. It is bounded: two generations of at most size/2 entries
// each; when the newer fills up, the older is dropped, so what was used
// lately stays.
type Cache struct {
	half int // <= 0: no cache

	mu       sync.Mutex
	cur, old map[[sha256.Size]byte]struct{}
}

// New returns a cache of at most size signatures; none when size < 2.
func New(size int) *Cache {
	return &Cache{half: size / 2}
}

// Verify reports whether sig is key's signature of d's canonical
// encoding, from the cache when it holds that very triple.
func (c *Cache) Verify(key ed25519.PublicKey, sig []byte, d *signed.Document) bool {
	if c.half <= 0 || len(key) != ed25519.PublicKeySize || len(sig) != ed25519.SignatureSize {
		return ed25519.Verify(key, d.Encoding(), sig)
	}
	var buf [1024]byte // most certificates' entry: no allocation
	e, msg := entry(buf[:0], key, sig, d)
	if c.has(e) {
		return true
	}
	if !ed25519.Verify(key, msg, sig) {
		return false
	}
	c.add(e)
	return true
}

// entry returns the cache's entry for the check of sig, key's signature
// of d, and d's canonical encoding, written in b when it has room (else
// in a buffer that AppendEncoding sizes). The entry is the SHA-256 of the
// key, the signature and the encoding, written one after the other in one
// buffer: the key and the signature have fixed sizes, so the three cannot
// run into each other.
func entry(b, key, sig []byte, d *signed.Document) ([sha256.Size]byte, []byte) {
	b = append(append(b[:0], key...), sig...)
	b = d.AppendEncoding(b)
	return sha256.Sum256(b), b[len(key)+len(sig):]
}

func (c *Cache) has(e [sha256.Size]byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.cur[e]; ok {
		return true
	}
	_, ok := c.old[e]
	return ok
}

func (c *Cache) add(e [sha256.Size]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.cur) >= c.half {
		c.old, c.cur = c.cur, nil
	}
	if c.cur == nil {
		c.cur = make(map[[sha256.Size]byte]struct{}, min(c.half, 1024))
	}
	c.cur[e] = struct{}{}
}

// Len is how many signatures the cache holds.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.cur) + len(c.old)
}
