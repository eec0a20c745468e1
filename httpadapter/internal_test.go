package httpadapter

import (
	"fmt"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"
)

// Per-key limiter memory stays bounded under 100,000 distinct keys (D28):
// at the cap, new keys wait until a bucket is full again and can go.
func TestLimiterBounded(t *testing.T) {
	clock := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	l := newKeyedLimiter(10, 1000, func() time.Time { return clock })
	allowed := 0
	for i := range 100_000 {
		ok, wait := l.allow(fmt.Sprintf("198.51.%d.%d", i/256, i%256))
		if ok {
			allowed++
		} else if wait != 6*time.Second {
			t.Fatalf("key %d refused with wait %v, want 6s (until the first bucket is full again)", i, wait)
		}
		if n := l.size(); n > 1000 {
			t.Fatalf("after %d keys the limiter holds %d, over its cap of 1000", i+1, n)
		}
	}
	if allowed != 1000 || l.size() != 1000 {
		t.Errorf("%d keys allowed, %d held; want the cap, 1000, of each", allowed, l.size())
	}
	// Six seconds later every bucket is full again: they go, and new keys come in.
	clock = clock.Add(6 * time.Second)
	if ok, _ := l.allow("fresh"); !ok {
		t.Error("a new key was refused once the held buckets were full again")
	}
	if n := l.size(); n != 1 {
		t.Errorf("after the buckets refilled the limiter holds %d keys, want 1", n)
	}
}

// Forgetting a key never gives back what it spent: a client that emptied
// its bucket stays limited however many other keys come and go.
func TestLimiterNeverForgetsSpent(t *testing.T) {
	clock := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	l := newKeyedLimiter(10, 1000, func() time.Time { return clock })
	for i := range 10 {
		if ok, _ := l.allow("victim"); !ok {
			t.Fatalf("request %d refused", i+1)
		}
	}
	for round := range 3 {
		for i := range 10_000 {
			l.allow(fmt.Sprintf("spray-%d-%d", round, i))
		}
		if ok, _ := l.allow("victim"); ok {
			t.Fatalf("round %d: an emptied bucket got a token back after 10,000 other keys", round)
		}
		clock = clock.Add(time.Second)
	}
	clock = clock.Add(3 * time.Second) // 6 s after it emptied: one token, no more
	if ok, _ := l.allow("victim"); !ok {
		t.Error("no token after 6 s")
	}
	if ok, _ := l.allow("victim"); ok {
		t.Error("two tokens after 6 s")
	}
}

// A busy key keeps its bucket while idle keys are evicted around it.
func TestLimiterKeepsActiveKeys(t *testing.T) {
	clock := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	l := newKeyedLimiter(2, 10, func() time.Time { return clock })
	l.allow("busy")
	l.allow("busy")
	for i := range 100 {
		l.allow("busy") // refused, but keeps the key recent
		l.allow(fmt.Sprint("other-", i))
	}
	if ok, wait := l.allow("busy"); ok || wait != 30*time.Second {
		t.Errorf("busy key: allowed %v, wait %v; want refused for 30 s", ok, wait)
	}
}

func TestClientIP(t *testing.T) {
	trusted := TrustedProxies{Networks: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}}
	for _, tc := range []struct {
		name, remote string
		xff          []string
		want         string
	}{
		{"peer", "192.0.2.1:1234", nil, "192.0.2.1"},
		{"untrusted peer's header ignored", "192.0.2.1:1234", []string{"203.0.113.9"}, "192.0.2.1"},
		{"trusted proxy", "10.0.0.1:80", []string{"203.0.113.9"}, "203.0.113.9"},
		{"rightmost untrusted", "10.0.0.1:80", []string{"198.51.100.1, 203.0.113.9, 10.0.0.2"}, "203.0.113.9"},
		{"spoofed left part ignored", "10.0.0.1:80", []string{"1.1.1.1", "203.0.113.9"}, "203.0.113.9"},
		{"all trusted", "10.0.0.1:80", []string{"10.0.0.3, 10.0.0.2"}, "10.0.0.3"},
		{"garbage stops at the last trusted hop", "10.0.0.1:80", []string{"203.0.113.9, garbage, 10.0.0.2"}, "10.0.0.2"},
		{"IPv6 peer", "[2001:db8::1]:443", []string{"203.0.113.9"}, "2001:db8::1"},
		{"IPv6 trusted proxy", "[fd00::1]:443", []string{"2001:db8::7"}, "2001:db8::7"},
		{"mapped IPv4", "[::ffff:192.0.2.5]:1", nil, "192.0.2.5"},
		{"port in header", "10.0.0.1:80", []string{"203.0.113.9:5555"}, "203.0.113.9"},
	} {
		r := httptest.NewRequest("POST", "/opt-out", nil)
		r.RemoteAddr = tc.remote
		for _, v := range tc.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		if got := trusted.ClientIP(r).String(); got != tc.want {
			t.Errorf("%s: ClientIP = %s, want %s", tc.name, got, tc.want)
		}
	}
}
