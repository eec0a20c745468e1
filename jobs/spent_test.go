package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/jobs"
)

// leaseAndDie leases the job of kind n times, as runners that die holding
// it would: each lease ends unrecorded, and runs out (the clock is moved
// past it) before the next.
func leaseAndDie(t *testing.T, s consent.Store, c *clock, kind, key string, n int) {
	t.Helper()
	for i := range n {
		err := s.Update(ctx, func(tx consent.Tx) error {
			now := c.Now()
			j, err := tx.LeaseJob(ctx, []string{kind}, "dead-runner", now, now.Add(time.Minute))
			if err == nil && (j.Key != key || j.Attempts != i+1) {
				err = fmt.Errorf("leased %+v; want %s at attempt %d", j, key, i+1)
			}
			return err
		})
		if err != nil {
			t.Fatalf("lease %d: %v", i+1, err)
		}
		c.Add(time.Minute + time.Second)
	}
}

// failedCall is one call of a Handler's Failed hook.
type failedCall struct {
	attempts int
	cause    error
	final    bool
}

// Attempts that end unrecorded (the runner crashed, or lost its lease)
// count against MaxAttempts and GiveUpAfter: a one-off job leased again
// with its attempts spent is failed for good without running, its Failed
// hook told, final, and its outcome observed once. A recurring job is left
// to run. (Do ran at every lease, whatever the count: a job that killed its
// runner was run again after every restart, for good.)
func TestUnrecordedAttemptsCount(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(tb testing.TB) consent.Store) {
		s := open(t)
		c := &clock{t: t0}
		var (
			mu       sync.Mutex
			ran      []string // key@attempt of each Do
			failed   = map[string][]failedCall{}
			observed = map[string][]error{}
		)
		do := func(ctx context.Context, j *consent.Job) (jobs.Result, error) {
			mu.Lock()
			defer mu.Unlock()
			ran = append(ran, j.Kind+"/"+j.Key)
			if j.Key == "fails" {
				return jobs.Result{}, errors.New("down")
			}
			return jobs.Result{}, nil
		}
		hook := func(ctx context.Context, tx consent.Tx, j *consent.Job, cause error, final bool) error {
			mu.Lock()
			defer mu.Unlock()
			failed[j.Kind+"/"+j.Key] = append(failed[j.Kind+"/"+j.Key], failedCall{j.Attempts, cause, final})
			return nil
		}
		r, err := jobs.New(jobs.Config{Store: s, ID: "r1", Now: c.Now, Logger: quiet,
			Observe: func(kind string, took time.Duration, err error) {
				mu.Lock()
				defer mu.Unlock()
				observed[kind] = append(observed[kind], err)
			},
			Handlers: []jobs.Handler{
				{Kind: "max", MaxAttempts: 3, Backoff: time.Minute, Do: do, Failed: hook},
				{Kind: "old", MaxAttempts: 100, GiveUpAfter: time.Hour, Backoff: time.Minute, Do: do, Failed: hook},
				{Kind: "every", Every: time.Hour, MaxAttempts: 3, Do: do, Failed: hook},
			}})
		if err != nil {
			t.Fatal(err)
		}
		reset := func() {
			mu.Lock()
			defer mu.Unlock()
			ran, failed, observed = nil, map[string][]failedCall{}, map[string][]error{}
		}

		// Leased 6 times by runners that died: attempt 7 of at most 3.
		enqueue(t, s, "max", "poison")
		leaseAndDie(t, s, c, "max", "poison", 6)
		if !runOnce(t, r, "max") {
			t.Fatal("no job leased")
		}
		if len(ran) != 0 {
			t.Errorf("Do ran %v; want a job past MaxAttempts not run", ran)
		}
		j := job(t, s, "max", "poison")
		if j == nil || j.FailedAt.IsZero() || j.Attempts != 7 || !strings.Contains(j.LastError, "unrecorded") || j.LeaseOwner != "" {
			t.Errorf("job leased 6 times unrecorded, run with MaxAttempts 3: %+v; want failed for good at attempt 7, its last error saying why", j)
		}
		calls := failed["max/poison"]
		if len(calls) != 1 || !calls[0].final || calls[0].attempts != 7 || !jobs.Permanent(calls[0].cause) {
			t.Errorf("Failed told %+v; want once, final, at attempt 7, of a permanent error", calls)
		}
		if o := observed["max"]; len(o) != 1 || o[0] == nil || !strings.Contains(o[0].Error(), "unrecorded") {
			t.Errorf("observed %v; want one failure, attempts unrecorded", o)
		}
		if runOnce(t, r, "max") {
			t.Error("a job failed for good was leased again")
		}

		// The lease that reaches MaxAttempts is its last try: it runs.
		reset()
		enqueue(t, s, "max", "last")
		leaseAndDie(t, s, c, "max", "last", 2)
		runOnce(t, r, "max")
		if j := job(t, s, "max", "last"); len(ran) != 1 || j != nil {
			t.Errorf("attempt 3 of at most 3: ran %v, job %+v; want run and done", ran, j)
		}

		// Past GiveUpAfter, after an attempt that ended unrecorded.
		reset()
		enqueue(t, s, "old", "crashed")
		leaseAndDie(t, s, c, "old", "crashed", 1)
		c.Add(time.Hour)
		runOnce(t, r, "old")
		j = job(t, s, "old", "crashed")
		if len(ran) != 0 || j == nil || j.FailedAt.IsZero() || j.Attempts != 2 || !strings.Contains(j.LastError, "unrecorded") {
			t.Errorf("job older than GiveUpAfter after an unrecorded attempt: ran %v, job %+v; want failed for good, not run", ran, j)
		}
		if calls := failed["old/crashed"]; len(calls) != 1 || !calls[0].final {
			t.Errorf("Failed told %+v; want once, final", calls)
		}

		// Past GiveUpAfter, a first try runs, and so does the retry that
		// a recorded failure scheduled (failed for good when it fails).
		reset()
		c.Add(2 * time.Hour)
		enqueue(t, s, "old", "first") // created at t0: older than GiveUpAfter
		runOnce(t, r, "old")
		if j := job(t, s, "old", "first"); len(ran) != 1 || j != nil {
			t.Errorf("first try of a job older than GiveUpAfter: ran %v, job %+v; want run and done", ran, j)
		}
		reset()
		err = s.Update(ctx, func(tx consent.Tx) error {
			now := c.Now()
			return tx.EnqueueJob(ctx, &consent.Job{Kind: "old", Key: "fails", RunAfter: now, CreatedAt: now})
		})
		if err != nil {
			t.Fatal(err)
		}
		runOnce(t, r, "old") // fails, recorded: retried after a minute
		c.Add(time.Hour)
		runOnce(t, r, "old")
		j = job(t, s, "old", "fails")
		if len(ran) != 2 || j == nil || j.FailedAt.IsZero() || j.Attempts != 2 || j.LastError != "down" {
			t.Errorf("retry after a recorded failure, past GiveUpAfter: ran %v, job %+v; want run, then failed for good", ran, j)
		}
		if calls := failed["old/fails"]; len(calls) != 2 || calls[0].final || !calls[1].final {
			t.Errorf("Failed told %+v; want twice, then final", calls)
		}

		// A recurring job is never failed for good: it runs.
		reset()
		if err := r.Schedule(ctx); err != nil {
			t.Fatal(err)
		}
		leaseAndDie(t, s, c, "every", jobs.EveryKey, 6)
		runOnce(t, r, "every")
		if j := job(t, s, "every", jobs.EveryKey); len(ran) != 1 || j == nil || !j.FailedAt.IsZero() {
			t.Errorf("recurring job leased 6 times unrecorded: ran %v, job %+v; want run, due again", ran, j)
		}
	})
}
