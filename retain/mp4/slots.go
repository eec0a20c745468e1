package mp4

import (
	"context"
	"slices"
	"sync"
)

// slots hands out the Converter's Parallel browsers. A conversion is paid
// for and an attestation is not (D49), so a waiting conversion always
// takes the next free slot before a waiting attestation; among each, the
// first to wait goes first.
type slots struct {
	mu        sync.Mutex
	free      int
	high, low []chan struct{} // waiters: conversions, attestations
}

func newSlots(n int) *slots { return &slots{free: n} }

// take waits for a slot: high for a conversion, low for an attestation.
func (s *slots) take(ctx context.Context, high bool) error {
	s.mu.Lock()
	if s.free > 0 && (high || len(s.high) == 0) {
		s.free--
		s.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	q := &s.low
	if high {
		q = &s.high
	}
	*q = append(*q, ch)
	s.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		i := slices.Index(*q, ch)
		if i >= 0 {
			*q = slices.Delete(*q, i, i+1)
		}
		s.mu.Unlock()
		if i < 0 { // given a slot as ctx ended: hand it on
			s.give()
		}
		return ctx.Err()
	}
}

// give returns a slot: to the first waiting conversion, else to the first
// waiting attestation, else to the pool.
func (s *slots) give() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, q := range []*[]chan struct{}{&s.high, &s.low} {
		if len(*q) > 0 {
			close((*q)[0])
			*q = (*q)[1:]
			return
		}
	}
	s.free++
}
