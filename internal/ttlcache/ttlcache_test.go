package ttlcache

import (
	"testing"
	"time"
)

func TestCache(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	c := Cache[string, int]{TTL: time.Second, Size: 2}
	c.Put("a", 1, t0, c.Epoch())
	if v, ok := c.Get("a", t0.Add(999*time.Millisecond)); !ok || v != 1 {
		t.Errorf("Get within the TTL = %d, %v; want 1, true", v, ok)
	}
	if _, ok := c.Get("a", t0.Add(time.Second)); ok {
		t.Error("Get at the TTL found the entry")
	}
	if _, ok := c.Get("a", t0); ok {
		t.Error("an expired entry was kept")
	}
	c.Put("b", 2, t0, c.Epoch())
	if _, ok := c.Get("b", t0.Add(-time.Millisecond)); ok {
		t.Error("Get before the entry was read found it (a clock that went back)")
	}

	// A value read before a removal is not cached after it.
	epoch := c.Epoch()
	c.Remove(func(v int) bool { return v == 3 })
	c.Put("c", 3, t0, epoch)
	if _, ok := c.Get("c", t0); ok {
		t.Error("a value read before a removal was cached")
	}
	c.Put("c", 3, t0, c.Epoch())
	c.Remove(func(v int) bool { return v == 3 })
	if _, ok := c.Get("c", t0); ok {
		t.Error("Remove kept a matching entry")
	}

	// At most Size entries.
	for i, k := range []string{"d", "e", "f"} {
		c.Put(k, i, t0, c.Epoch())
	}
	n := 0
	for _, k := range []string{"b", "d", "e", "f"} {
		if _, ok := c.Get(k, t0); ok {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d entries kept, want Size (2)", n)
	}

	var off Cache[string, int]
	off.Put("a", 1, t0, off.Epoch())
	if _, ok := off.Get("a", t0); ok {
		t.Error("the zero Cache cached")
	}
}
