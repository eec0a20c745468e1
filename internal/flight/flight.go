// Package flight lets calls that share a key take turns within one
// process: a second call waits, for a bounded time, until the first one
// leaves. consentkit.Service uses it for idempotency keys (D40), so that a
// retried call waits for the first instead of queueing on the database
// behind it.
//
//	var g flight.Group // the zero Group is ready
//	leave, err := g.Enter(ctx, scope+" "+key, 10*time.Second) // flight.ErrBusy when it waits in vain
//	if err != nil {
//		return err
//	}
//	defer leave()
package flight

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ErrBusy is returned by Enter when the key was still taken at the end of
// the wait.
var ErrBusy = errors.New("flight: the key is still taken")

// Group tracks the keys whose calls run. The zero Group is ready to use.
type Group struct {
	mu      sync.Mutex
	running map[string]chan struct{}
}

// Enter waits until no other call with key runs, up to wait, and marks the
// key as taken; leave frees it. ErrBusy when the wait runs out, the
// context's error when it ends first.
func (g *Group) Enter(ctx context.Context, key string, wait time.Duration) (leave func(), err error) {
	var timer <-chan time.Time
	for {
		g.mu.Lock()
		if g.running == nil {
			g.running = make(map[string]chan struct{})
		}
		done, busy := g.running[key]
		if !busy {
			done = make(chan struct{})
			g.running[key] = done
			g.mu.Unlock()
			return func() {
				g.mu.Lock()
				delete(g.running, key)
				g.mu.Unlock()
				close(done)
			}, nil
		}
		g.mu.Unlock()
		if timer == nil {
			t := time.NewTimer(wait)
			defer t.Stop()
			timer = t.C
		}
		select {
		case <-done:
		case <-timer:
			return nil, ErrBusy
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
