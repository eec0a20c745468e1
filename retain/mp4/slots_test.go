package mp4

import (
	"context"
	"runtime"
	"testing"
)

// A waiting conversion takes the next free slot before an attestation that
// waited longer (D49); a waiter whose context ends leaves the queue, and a
// slot is never lost.
func TestSlotsConversionsFirst(t *testing.T) {
	s := newSlots(1)
	ctx := context.Background()
	if err := s.take(ctx, false); err != nil { // an attestation runs
		t.Fatal(err)
	}
	order := make(chan string, 3)
	wait := func(name string, high bool) {
		go func() {
			if err := s.take(ctx, high); err != nil {
				t.Error(err)
				return
			}
			order <- name
			s.give()
		}()
	}
	queued := func(high, low int) {
		t.Helper()
		for { // bounded by the test's own timeout; no clock involved
			s.mu.Lock()
			h, l := len(s.high), len(s.low)
			s.mu.Unlock()
			if h == high && l == low {
				return
			}
			runtime.Gosched()
		}
	}
	wait("attestation", false)
	queued(0, 1)
	gone, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- s.take(gone, true) }()
	queued(1, 1)
	cancel()
	if err := <-done; err == nil {
		t.Fatal("a cancelled wait took a slot")
	}
	queued(0, 1)
	wait("conversion", true)
	queued(1, 1)
	s.give() // the running attestation ends
	if first, second := <-order, <-order; first != "conversion" || second != "attestation" {
		t.Errorf("slots went to %s then %s, want the conversion first", first, second)
	}
	if err := s.take(ctx, false); err != nil || s.free != 0 {
		t.Errorf("after every give, one slot is free: take %v, free %d", err, s.free)
	}
}
