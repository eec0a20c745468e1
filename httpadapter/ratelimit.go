package httpadapter

import (
	"container/list"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// keyedLimiter keeps one token bucket per key: capacity n, refilled at n per
// minute. Its memory is bounded: a key unused for a minute is dropped (its
// bucket would be full again, so nothing is lost), and when maxKeys are held
// the least recently used key is dropped to make room.
type keyedLimiter struct {
	n       int
	maxKeys int
	now     func() time.Time

	mu   sync.Mutex
	keys map[string]*list.Element // of *bucket
	lru  list.List                // front: most recently used
}

type bucket struct {
	key  string
	lim  *rate.Limiter
	last time.Time
}

// refill is how long an unused bucket takes to be full again.
const refill = time.Minute

func newKeyedLimiter(n, maxKeys int, now func() time.Time) *keyedLimiter {
	return &keyedLimiter{n: n, maxKeys: maxKeys, now: now, keys: make(map[string]*list.Element)}
}

// allow takes a token for key. When there is none it returns false and how
// long until there is.
func (l *keyedLimiter) allow(key string) (bool, time.Duration) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.bucket(key, now)
	r := b.lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

func (l *keyedLimiter) bucket(key string, now time.Time) *bucket {
	if e, ok := l.keys[key]; ok {
		b := e.Value.(*bucket)
		b.last = now
		l.lru.MoveToFront(e)
		return b
	}
	// Drop idle buckets from the back, then the least recently used one if
	// the map is still full.
	for e := l.lru.Back(); e != nil && now.Sub(e.Value.(*bucket).last) >= refill; e = l.lru.Back() {
		l.remove(e)
	}
	if len(l.keys) >= l.maxKeys {
		l.remove(l.lru.Back())
	}
	b := &bucket{key: key, lim: rate.NewLimiter(rate.Limit(float64(l.n)/refill.Seconds()), l.n), last: now}
	l.keys[key] = l.lru.PushFront(b)
	return b
}

func (l *keyedLimiter) remove(e *list.Element) {
	l.lru.Remove(e)
	delete(l.keys, e.Value.(*bucket).key)
}

// size returns the number of keys held.
func (l *keyedLimiter) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.keys)
}

// retryAfter renders a delay as whole seconds, rounded up, at least 1.
func retryAfter(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}
