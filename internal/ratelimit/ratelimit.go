// Package ratelimit holds the rate limiter that httpadapter and dashboard
// share: token buckets kept per key (a client's address, a company, a
// property) in bounded memory (D20, D28).
//
//	l := ratelimit.New(10, 10_000, time.Now) // 10 a minute per key, at most 10,000 keys
//	if wait, err := l.Allow(ratelimit.ClientKey(addr, 64)); err != nil {
//		w.Header().Set("Retry-After", strconv.Itoa(ratelimit.RetryAfter(wait))) // and answer 429
//	}
package ratelimit

import (
	"container/heap"
	"errors"
	"math"
	"net/netip"
	"sync"
	"time"
)

// Limiter keeps one token bucket per key: capacity n (or the burst of
// NewBurst), refilled at n per minute (D20, D28). Each bucket is held as the time at which it is full
// again (the generic cell rate algorithm): a request at now spends one
// token, which moves that time one interval (a minute / n) later, and is
// refused when that would put it more than n intervals past now.
//
// Memory is bounded by maxKeys. A key is forgotten only once its bucket is
// full again, since a new key starts full and nothing is lost; a key whose
// bucket is not full is never forgotten, or a client could win back the
// requests it spent by spraying other keys. When maxKeys are held and none
// is full, a new key is refused (ErrFull) until one is.
//
// A Limiter is safe for concurrent use.
type Limiter struct {
	n        int
	burst    int           // tokens a full bucket holds
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

// Why Allow refuses.
var (
	// ErrEmpty: the key's bucket has no token left.
	ErrEmpty = errors.New("ratelimit: no token left")
	// ErrFull: the key has no bucket, and none can be made while maxKeys
	// buckets are held that are not full again.
	ErrFull = errors.New("ratelimit: too many keys")
	// ErrTooBig: AllowN was asked for more tokens than a bucket holds.
	ErrTooBig = errors.New("ratelimit: cost over the bucket's size")
)

// New returns a limiter of n requests a minute per key (n ≥ 1), holding
// at most maxKeys keys (≥ 1), on the clock now.
func New(n, maxKeys int, now func() time.Time) *Limiter { return NewBurst(n, n, maxKeys, now) }

// NewBurst is New with buckets of burst tokens (1 ≤ burst ≤ n): a key may
// spend at most burst at once, and n a minute over time. A byte budget
// uses it so that a client cannot spend a minute's bytes in a second.
func NewBurst(n, burst, maxKeys int, now func() time.Time) *Limiter {
	return &Limiter{n: n, burst: min(max(burst, 1), n), interval: refill / time.Duration(n), maxKeys: maxKeys, now: now, keys: make(map[string]*bucket)}
}

// Burst is how many tokens a full bucket holds: the most one AllowN takes.
func (l *Limiter) Burst() int { return l.burst }

// Allow takes a token for key. When there is none it returns ErrEmpty, or
// ErrFull when key has no bucket and there is no room for one, and how
// long until there is.
func (l *Limiter) Allow(key string) (time.Duration, error) { return l.AllowN(key, 1) }

// AllowN takes cost tokens for key at once, as Allow takes one: a budget
// of bytes spends one token a unit of them. A cost over what a bucket
// holds is never allowed (ErrTooBig).
func (l *Limiter) AllowN(key string, cost int) (time.Duration, error) {
	if cost > l.burst {
		return 0, ErrTooBig
	}
	cost = max(cost, 1)
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
			return l.full[0].full.Sub(now), ErrFull
		}
		b = &bucket{key: key, full: now}
		l.keys[key] = b
		heap.Push(&l.full, b)
	}
	next := b.full
	if next.Before(now) {
		next = now
	}
	next = next.Add(time.Duration(cost) * l.interval)
	if over := next.Sub(now) - time.Duration(l.burst)*l.interval; over > 0 {
		return over, ErrEmpty
	}
	b.full = next
	heap.Fix(&l.full, b.index)
	return 0, nil
}

// Return gives back a token that Allow took for key, as if it had not
// been taken. A check that spends only on failure (a wrong secret) takes
// its token before it looks and gives it back when what it looked at was
// right: requests sent at once then cannot all be looked at before the
// first failure is counted. A key no longer held (full again, and
// forgotten) has nothing to give back to.
func (l *Limiter) Return(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if b, ok := l.keys[key]; ok {
		b.full = b.full.Add(-l.interval)
		heap.Fix(&l.full, b.index)
	}
}

// Owe takes cost more tokens for key than its bucket holds, after an
// AllowN of all it holds: the key's bucket is full again only once they
// too are refilled. A cost larger than a bucket (a body larger than a
// byte budget's burst) is so paid for in full, rather than refused for
// good. A key no longer held has nothing to owe on.
func (l *Limiter) Owe(key string, cost int) {
	if cost <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if b, ok := l.keys[key]; ok {
		b.full = b.full.Add(time.Duration(cost) * l.interval)
		heap.Fix(&l.full, b.index)
	}
}

// Wait returns how long until key may take a token, without taking one:
// 0 when Allow would allow it now, or when key has no bucket (a new key
// starts full). A key limited for what it did (a wrong secret, say)
// refuses every request while Wait is not 0, so that the answer to one it
// would otherwise allow tells nothing.
func (l *Limiter) Wait(key string) time.Duration {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.keys[key]
	if !ok {
		return 0
	}
	next := b.full
	if next.Before(now) {
		next = now
	}
	return max(0, next.Add(l.interval).Sub(now)-time.Duration(l.burst)*l.interval)
}

// Len returns the number of keys held.
func (l *Limiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.keys)
}

// RetryAfter renders a delay as whole seconds, rounded up, at least 1: the
// value of a Retry-After header.
func RetryAfter(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

// ClientKey is the key of a client address: an IPv4 address itself, an
// IPv6 address its network of the given prefix length, since one
// subscriber commonly holds a whole /64 and could otherwise take a new key
// for every request. An IPv4 address mapped into IPv6 is the IPv4 address.
func ClientKey(a netip.Addr, ipv6Bits int) string {
	a = a.Unmap()
	if a.Is4() {
		return a.String()
	}
	p, _ := a.Prefix(ipv6Bits)
	return p.String()
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
