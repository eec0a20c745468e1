package jobs_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/internal/testwait"
	"github.com/consentkit/consentkit/jobs"
)

// renewStore fails the first fails renewals (all of them when fails is
// negative) with an error that is neither Conflict nor NotFound, a store
// out of reach, and keeps the deadline of each renewal's context.
type renewStore struct {
	consent.Store
	fails int

	mu        sync.Mutex
	tries, ok int
	deadlines []time.Time // zero for none
}

func (s *renewStore) Update(ctx context.Context, fn func(consent.Tx) error) error {
	return s.Store.Update(ctx, func(tx consent.Tx) error { return fn(renewTx{tx, s}) })
}

func (s *renewStore) counts() (tries, ok int) { s.mu.Lock(); defer s.mu.Unlock(); return s.tries, s.ok }

type renewTx struct {
	consent.Tx
	s *renewStore
}

func (tx renewTx) RenewJob(ctx context.Context, kind, key, owner string, until time.Time) error {
	s := tx.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tries++
	deadline, _ := ctx.Deadline()
	s.deadlines = append(s.deadlines, deadline)
	if s.fails < 0 || s.tries <= s.fails {
		return errors.New("connection reset by peer")
	}
	if err := tx.Tx.RenewJob(ctx, kind, key, owner, until); err != nil {
		return err
	}
	s.ok++
	return nil
}

// Renewals that fail with any error, not only Conflict or NotFound, cancel
// Do (ErrLeaseLost) before the lease runs out, so that the runner that
// takes the job once it has run out never does it beside its holder. Each
// renewal runs under a deadline before the lease's end. (Renewals that
// failed were dropped, Do ran on, and both runners did the job at once.)
func TestRenewFailuresCancel(t *testing.T) {
	base := teststore.Memory(t)
	s := &renewStore{Store: base, fails: -1}
	wall := func() time.Time { return time.Now().UTC() }
	var (
		r1ctx   atomic.Pointer[context.Context]
		r1Done  = make(chan struct{})
		overlap atomic.Bool
	)
	do1 := func(ctx context.Context, j *consent.Job) (jobs.Result, error) {
		r1ctx.Store(&ctx)
		defer close(r1Done)
		<-ctx.Done() // never done by itself: only a lost lease ends it
		return jobs.Result{Commit: func(ctx context.Context, tx consent.Tx) error {
			return errors.New("a result of a lost lease must not be committed")
		}}, nil
	}
	do2 := func(ctx context.Context, j *consent.Job) (jobs.Result, error) {
		// By r2's clock, the same as r1's, r1's lease has run out: r1
		// must have given it up, its Do cancelled.
		if p := r1ctx.Load(); p == nil || (*p).Err() == nil {
			overlap.Store(true)
		}
		return jobs.Result{}, nil
	}
	// Lease: 500 ms, given up by r1 50 ms before it runs out.
	r1, err := jobs.New(jobs.Config{Store: s, ID: "r1", Now: wall, Logger: quiet,
		Handlers: []jobs.Handler{{Kind: "convert", Lease: 500 * time.Millisecond, Do: do1}}})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := jobs.New(jobs.Config{Store: base, ID: "r2", Now: wall, Logger: quiet,
		Handlers: []jobs.Handler{{Kind: "convert", Lease: 500 * time.Millisecond, Do: do2}}})
	if err != nil {
		t.Fatal(err)
	}
	err = base.Update(ctx, func(tx consent.Tx) error {
		return tx.EnqueueJob(ctx, &consent.Job{Kind: "convert", Key: "a", RunAfter: wall(), CreatedAt: wall()})
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := r1.RunOnce(ctx, "convert"); done <- err }()
	var until time.Time
	if !testwait.Until(t, time.Millisecond, func() bool {
		j := job(t, base, "convert", "a")
		until = j.LeaseUntil
		return j.LeaseOwner != ""
	}) {
		t.Fatal("r1 never leased the job")
	}
	// r2 tries until it takes the job, once its lease has run out.
	if !testwait.Until(t, 5*time.Millisecond, func() bool { worked, _ := r2.RunOnce(ctx, "convert"); return worked }) {
		t.Fatal("r2 never took the job")
	}
	if overlap.Load() {
		t.Error("r2 did the job while r1's Do, its lease run out, was not cancelled")
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("RunOnce after losing its lease: %v", err)
		}
	case <-testwait.Near(t):
		t.Fatal("r1's Do was never cancelled: its failed renewals were dropped")
	}
	<-r1Done
	if cause := context.Cause(*r1ctx.Load()); !errors.Is(cause, jobs.ErrLeaseLost) {
		t.Errorf("r1's Do was cancelled by %v; want ErrLeaseLost", cause)
	}
	if j := job(t, base, "convert", "a"); j != nil {
		t.Errorf("job after r2 did it: %+v; want it done", j)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tries == 0 {
		t.Error("r1 never tried to renew its lease")
	}
	for i, d := range s.deadlines {
		if d.IsZero() || d.After(until) {
			t.Errorf("renewal %d ran under the deadline %v; want one before the lease's end %v", i+1, d, until)
		}
	}
}

// A renewal that fails is tried again, and the lease, renewed in time,
// kept: Do runs on, and its result is recorded.
func TestRenewRetried(t *testing.T) {
	s := &renewStore{Store: teststore.Memory(t), fails: 1}
	c := &clock{t: t0}
	var cancelled atomic.Bool
	// A Lease of 1 s: renewed at 333 ms, failing, tried again 100 ms on,
	// then every 333 ms; given up at 900 ms without a renewal.
	r := runner(t, s, c, jobs.Handler{Kind: "convert", Lease: time.Second,
		Do: func(ctx context.Context, j *consent.Job) (jobs.Result, error) {
			testwait.Until(t, time.Millisecond, func() bool {
				_, ok := s.counts()
				return ok >= 2 || ctx.Err() != nil
			})
			cancelled.Store(ctx.Err() != nil)
			return jobs.Result{}, ctx.Err()
		}})
	enqueue(t, s, "convert", "a")
	if !runOnce(t, r, "convert") {
		t.Fatal("no job run")
	}
	if tries, ok := s.counts(); cancelled.Load() || ok < 2 {
		t.Fatalf("Do cancelled: %v after %d renewals, %d of them done; want it kept on after one failed", cancelled.Load(), tries, ok)
	}
	if j := job(t, s, "convert", "a"); j != nil {
		t.Errorf("job %+v; want it done", j)
	}
}
