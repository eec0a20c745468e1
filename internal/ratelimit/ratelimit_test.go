package ratelimit

import (
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"
)

// Per-key limiter memory stays bounded under 100,000 distinct keys (D28):
// at the cap, new keys wait until a bucket is full again and can go.
func TestLimiterBounded(t *testing.T) {
	clock := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	l := New(10, 1000, func() time.Time { return clock })
	allowed := 0
	for i := range 100_000 {
		wait, err := l.Allow(fmt.Sprintf("198.51.%d.%d", i/256, i%256))
		switch {
		case err == nil:
			allowed++
		case !errors.Is(err, ErrFull) || wait != 6*time.Second:
			t.Fatalf("key %d refused with %v, wait %v; want ErrFull, 6s (until the first bucket is full again)", i, err, wait)
		}
		if n := l.Len(); n > 1000 {
			t.Fatalf("after %d keys the limiter holds %d, over its cap of 1000", i+1, n)
		}
	}
	if allowed != 1000 || l.Len() != 1000 {
		t.Errorf("%d keys allowed, %d held; want the cap, 1000, of each", allowed, l.Len())
	}
	// Six seconds later every bucket is full again: they go, and new keys come in.
	clock = clock.Add(6 * time.Second)
	if _, err := l.Allow("fresh"); err != nil {
		t.Errorf("a new key was refused once the held buckets were full again: %v", err)
	}
	if n := l.Len(); n != 1 {
		t.Errorf("after the buckets refilled the limiter holds %d keys, want 1", n)
	}
}

// Forgetting a key never gives back what it spent: a client that emptied
// its bucket stays limited however many other keys come and go.
func TestLimiterNeverForgetsSpent(t *testing.T) {
	clock := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	l := New(10, 1000, func() time.Time { return clock })
	for i := range 10 {
		if _, err := l.Allow("victim"); err != nil {
			t.Fatalf("request %d refused: %v", i+1, err)
		}
	}
	for round := range 3 {
		for i := range 10_000 {
			_, _ = l.Allow(fmt.Sprintf("spray-%d-%d", round, i)) // refused or not: it fills the table
		}
		if _, err := l.Allow("victim"); !errors.Is(err, ErrEmpty) {
			t.Fatalf("round %d: an emptied bucket answered %v after 10,000 other keys, want ErrEmpty", round, err)
		}
		clock = clock.Add(time.Second)
	}
	clock = clock.Add(3 * time.Second) // 6 s after it emptied: one token, no more
	if _, err := l.Allow("victim"); err != nil {
		t.Errorf("no token after 6 s: %v", err)
	}
	if _, err := l.Allow("victim"); err == nil {
		t.Error("two tokens after 6 s")
	}
}

// A busy key keeps its bucket while idle keys are evicted around it.
func TestLimiterKeepsActiveKeys(t *testing.T) {
	clock := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	l := New(2, 10, func() time.Time { return clock })
	for i := range 2 {
		if _, err := l.Allow("busy"); err != nil {
			t.Fatalf("request %d refused: %v", i+1, err)
		}
	}
	for i := range 100 {
		_, _ = l.Allow("busy")                  // refused, but keeps the key recent
		_, _ = l.Allow(fmt.Sprint("other-", i)) // a bucket, or ErrFull once they fill the table
	}
	if wait, err := l.Allow("busy"); !errors.Is(err, ErrEmpty) || wait != 30*time.Second {
		t.Errorf("busy key: %v, wait %v; want ErrEmpty for 30 s", err, wait)
	}
}

func TestClientKey(t *testing.T) {
	for _, tc := range []struct {
		addr string
		bits int
		want string
	}{
		{"192.0.2.1", 64, "192.0.2.1"},
		{"::ffff:192.0.2.1", 64, "192.0.2.1"},
		{"2001:db8:1:2:3:4:5:6", 64, "2001:db8:1:2::/64"},
		{"2001:db8:1:2:ffff::1", 64, "2001:db8:1:2::/64"},
		{"2001:db8:1:2:3:4:5:6", 48, "2001:db8:1::/48"},
		{"2001:db8:1:2:3:4:5:6", 128, "2001:db8:1:2:3:4:5:6/128"},
	} {
		if got := ClientKey(netip.MustParseAddr(tc.addr), tc.bits); got != tc.want {
			t.Errorf("ClientKey(%s, %d) = %s, want %s", tc.addr, tc.bits, got, tc.want)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	for d, want := range map[time.Duration]int{0: 1, time.Millisecond: 1, time.Second: 1, 1001 * time.Millisecond: 2, 6 * time.Second: 6} {
		if got := RetryAfter(d); got != want {
			t.Errorf("RetryAfter(%v) = %d, want %d", d, got, want)
		}
	}
}

// AllowN spends a budget by the cost of each request: 1,000 tokens a
// minute allow 1,000 in costs of 300 and 100 in a burst, refuse the next
// with the wait until its cost is back, refill at 1,000 a minute, and
// never allow a cost over the bucket.
func TestLimiterAllowN(t *testing.T) {
	clock := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	l := New(1000, 10, func() time.Time { return clock })
	for _, cost := range []int{300, 300, 300, 100} {
		if _, err := l.AllowN("client", cost); err != nil {
			t.Fatalf("cost %d within the budget refused: %v", cost, err)
		}
	}
	wait, err := l.AllowN("client", 150)
	if !errors.Is(err, ErrEmpty) || wait != 9*time.Second {
		t.Errorf("over the budget: %v, wait %v; want ErrEmpty, 9s (150 tokens at 1,000 a minute)", err, wait)
	}
	if _, err := l.AllowN("other", 1000); err != nil {
		t.Errorf("another key's budget: %v", err)
	}
	clock = clock.Add(9 * time.Second)
	if _, err := l.AllowN("client", 150); err != nil {
		t.Errorf("after the wait: %v", err)
	}
	if _, err := l.AllowN("client", 1001); !errors.Is(err, ErrTooBig) {
		t.Errorf("a cost over the bucket: %v, want ErrTooBig", err)
	}
}

// A bucket of NewBurst holds burst tokens: no more is spent at once, and
// the rate over time is still n a minute.
func TestLimiterBurst(t *testing.T) {
	clock := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	l := NewBurst(600, 100, 10, func() time.Time { return clock })
	if _, err := l.AllowN("client", 101); !errors.Is(err, ErrTooBig) {
		t.Errorf("a cost over the burst: %v, want ErrTooBig", err)
	}
	if _, err := l.AllowN("client", 100); err != nil {
		t.Fatalf("the burst refused: %v", err)
	}
	wait, err := l.AllowN("client", 10)
	if !errors.Is(err, ErrEmpty) || wait != time.Second {
		t.Errorf("past the burst: %v, wait %v; want ErrEmpty, 1s (10 tokens at 600 a minute)", err, wait)
	}
	for range 59 { // a second at a time: 10 tokens back each
		clock = clock.Add(time.Second)
		if _, err := l.AllowN("client", 10); err != nil {
			t.Fatalf("after a second: %v", err)
		}
	}
	if _, err := l.AllowN("client", 1); !errors.Is(err, ErrEmpty) {
		t.Errorf("with what came back spent: %v, want ErrEmpty", err)
	}
}

// Wait tells how long until a key may take a token, as Allow would, and
// takes none: a new key may at once; a key that spent its bucket waits
// the interval of one token, less the time gone by.
func TestLimiterWait(t *testing.T) {
	clock := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	l := New(10, 100, func() time.Time { return clock })
	if w := l.Wait("a"); w != 0 || l.Len() != 0 {
		t.Fatalf("a new key: wait %v, %d keys held; want 0, none made", w, l.Len())
	}
	for i := range 10 {
		if w := l.Wait("a"); w != 0 {
			t.Fatalf("after %d tokens: wait %v, want 0", i, w)
		}
		if _, err := l.Allow("a"); err != nil {
			t.Fatalf("token %d: %v", i+1, err)
		}
	}
	for range 3 { // asking takes nothing
		if w := l.Wait("a"); w != 6*time.Second {
			t.Fatalf("an empty bucket: wait %v, want 6s", w)
		}
	}
	if w, err := l.Allow("a"); !errors.Is(err, ErrEmpty) || w != 6*time.Second {
		t.Errorf("Allow on an empty bucket: %v, %v; want ErrEmpty, 6s as Wait said", w, err)
	}
	clock = clock.Add(4 * time.Second)
	if w := l.Wait("a"); w != 2*time.Second {
		t.Errorf("4 s later: wait %v, want 2s", w)
	}
	clock = clock.Add(2 * time.Second)
	if w := l.Wait("a"); w != 0 {
		t.Errorf("6 s later: wait %v, want 0", w)
	}
	if w := l.Wait("b"); w != 0 {
		t.Errorf("another key: wait %v, want 0", w)
	}
}

// A token given back is as if it had not been taken: a key that takes and
// returns tokens without end is never limited, and one that keeps some is
// limited at its burst, as before.
func TestLimiterReturn(t *testing.T) {
	clock := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	l := New(3, 10, func() time.Time { return clock })
	for i := range 10 {
		if _, err := l.Allow("k"); err != nil {
			t.Fatalf("take %d, each given back: %v", i+1, err)
		}
		l.Return("k")
	}
	if w := l.Wait("k"); w != 0 {
		t.Errorf("after tokens given back, Wait = %v; want 0", w)
	}
	for i := range 3 {
		if _, err := l.Allow("k"); err != nil {
			t.Fatalf("take %d of 3, kept: %v", i+1, err)
		}
	}
	if _, err := l.Allow("k"); !errors.Is(err, ErrEmpty) {
		t.Errorf("a fourth take within the minute: %v; want ErrEmpty", err)
	}
	l.Return("k")
	if _, err := l.Allow("k"); err != nil {
		t.Errorf("a take after one given back: %v", err)
	}
	l.Return("unknown") // nothing held: nothing to give back, and no bucket made
	if n := l.Len(); n != 1 {
		t.Errorf("the limiter holds %d keys; want 1", n)
	}
}

// A cost owed after the whole bucket was spent delays the bucket's refill
// by as many tokens: the key waits for them too, and a key not held owes
// nothing.
func TestLimiterOwe(t *testing.T) {
	clock := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	l := NewBurst(60, 8, 100, func() time.Time { return clock }) // a token a second, 8 at once
	if _, err := l.AllowN("big", 8); err != nil {
		t.Fatal(err)
	}
	l.Owe("big", 12)
	if w := l.Wait("big"); w != 13*time.Second {
		t.Errorf("after 8 spent and 12 owed, the key waits %v; want 13s (a token, once the 12 owed are refilled)", w)
	}
	clock = clock.Add(12 * time.Second)
	if _, err := l.Allow("big"); err == nil {
		t.Errorf("a token was taken 12 s after 12 were owed and 8 spent: the debt was not paid first")
	}
	l.Owe("nobody", 5)
	if w := l.Wait("nobody"); w != 0 {
		t.Errorf("a key not held waits %v after Owe; want 0", w)
	}
}
