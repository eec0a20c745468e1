package consent

import (
	"crypto/ed25519"
	"crypto/sha256"
	"sync"
)

// DefaultSignatureCacheSize is how many checked signatures a Service
// remembers when Config.SignatureCacheSize is zero: 64 Ki of them, about
// 5 MiB at most.
const DefaultSignatureCacheSize = 1 << 16

// sigCache remembers signatures this service found good (D41), so that
// verifying one certificate again and again costs a SHA-256 of its
// canonical encoding instead of an Ed25519 verification (60–77 µs of
// processor time on the project's machines, more than the rest of a match
// on the memory store).
//
// An entry is the SHA-256 of everything the check took in — the public
// key, the signature and the canonical encoding of the certificate as it is
// now. A certificate whose stored content, key id or signature changed
// since has another digest, misses, and is checked in full, so the cache
// never lets through what the check would refuse; it remembers only
// successes. It is bounded: two generations of at most size/2 entries
// each; when the newer fills up, the older is dropped, so what was used
// lately stays.
type sigCache struct {
	half int // <= 0: no cache

	mu       sync.Mutex
	cur, old map[Digest]struct{}
}

func newSigCache(size int) *sigCache {
	return &sigCache{half: size / 2}
}

// verify reports whether sig is key's signature of c's canonical
// encoding, from the cache when it holds that very triple.
func (c *sigCache) verify(key ed25519.PublicKey, sig []byte, cert *Certificate) bool {
	if c.half <= 0 || len(key) != ed25519.PublicKeySize || len(sig) != ed25519.SignatureSize {
		return ed25519.Verify(key, CertificateEncoding(cert), sig)
	}
	var buf [1024]byte // most certificates' entry: no allocation
	d, msg := cacheEntry(buf[:0], key, sig, cert)
	if c.has(d) {
		return true
	}
	if !ed25519.Verify(key, msg, sig) {
		return false
	}
	c.add(d)
	return true
}

// cacheEntry returns the cache's entry for the check of sig, key's
// signature of cert, and cert's canonical encoding, written in b when it
// has room (else in a buffer of the right size). The entry is the
// SHA-256 of the key, the signature and the encoding, written one after
// the other in one buffer: the key and the signature have fixed sizes, so
// the three cannot run into each other.
func cacheEntry(b, key, sig []byte, cert *Certificate) (Digest, []byte) {
	if n := len(key) + len(sig) + encodingSize(cert); cap(b) < n {
		b = make([]byte, 0, n)
	}
	b = append(append(b[:0], key...), sig...)
	b = appendEncoding(b, cert)
	return sha256.Sum256(b), b[len(key)+len(sig):]
}

func (c *sigCache) has(d Digest) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.cur[d]; ok {
		return true
	}
	_, ok := c.old[d]
	return ok
}

func (c *sigCache) add(d Digest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.cur) >= c.half {
		c.old, c.cur = c.cur, nil
	}
	if c.cur == nil {
		c.cur = make(map[Digest]struct{}, min(c.half, 1024))
	}
	c.cur[d] = struct{}{}
}

// len is how many signatures the cache holds.
func (c *sigCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.cur) + len(c.old)
}
