package httpadapter

import (
	"container/heap"
	"math"
	"sync"
	"time"
)

// keyedLimiter keeps one token bucket per key: capacity n, refilled at n per
// minute (D20, D28). Each bucket is held as the time at which it is full
// again (the generic cell rate algorithm): a request at now spends one
// token, which moves that time one interval (a minute / n) later, and is
// refused when that would put it more than n intervals past now.
//
// Memory is bounded by maxKeys. A key is forgotten only once its bucket is
// full again, since a new key starts full and nothing is lost; a key whose
// bucket is not full is never forgotten, or a client could win back the
// requests it spent by spraying other keys. When maxKeys are held and none
// is full, a new key is refused until one is.
type keyedLimiter struct {
	n        int
	interval time.Duration // time to refill one token
	maxKeys  int
	now      func() time.Time

	mu   sync.Mutex
	keys map[string]*bucket
	full byFull // every bucket, the one full soonest first
}

type bucket struct {
	key   string
	full  time.Time // when the bucket holds n tokens again
	index int       // in the heap
}

// refill is how long an empty bucket takes to be full.
const refill = time.Minute

func newKeyedLimiter(n, maxKeys int, now func() time.Time) *keyedLimiter {
	return &keyedLimiter{n: n, interval: refill / time.Duration(n), maxKeys: maxKeys, now: now, keys: make(map[string]*bucket)}
}

// allow takes a token for key. When there is none it returns false and how
// long until there is.
func (l *keyedLimiter) allow(key string) (bool, time.Duration) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.keys[key]
	if !ok {
		// Forget the buckets that are full again, then make room.
		for len(l.full) > 0 && !l.full[0].full.After(now) {
			delete(l.keys, heap.Pop(&l.full).(*bucket).key)
		}
		if len(l.keys) >= l.maxKeys {
			return false, l.full[0].full.Sub(now)
		}
		b = &bucket{key: key, full: now}
		l.keys[key] = b
		heap.Push(&l.full, b)
	}
	next := b.full
	if next.Before(now) {
		next = now
	}
	next = next.Add(l.interval)
	if over := next.Sub(now) - time.Duration(l.n)*l.interval; over > 0 {
		return false, over
	}
	b.full = next
	heap.Fix(&l.full, b.index)
	return true, 0
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

// byFull is a min-heap of buckets by the time they are full again.
type byFull []*bucket

func (h byFull) Len() int           { return len(h) }
func (h byFull) Less(i, j int) bool { return h[i].full.Before(h[j].full) }
func (h byFull) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *byFull) Push(x any) {
	b := x.(*bucket)
	b.index = len(*h)
	*h = append(*h, b)
}
func (h *byFull) Pop() any {
	old := *h
	b := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return b
}
