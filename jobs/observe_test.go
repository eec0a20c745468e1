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

// Observe is told of each attempt once, with its final outcome: a failed
// Started, a Commit that fails or panics, a lease lost before the end was
// recorded are failures, not successes nor unseen. (It was told of Do's
// result alone, before Commit ran: a failed Started was never observed, a
// failed Commit nor a lost lease was.)
func TestObserveOutcomes(t *testing.T) {
	s := teststore.Memory(t)
	c := &clock{t: t0}
	var (
		mu       sync.Mutex
		observed = map[string][]error{}
	)
	observe := func(kind string, took time.Duration, err error) {
		mu.Lock()
		defer mu.Unlock()
		if took < 0 {
			t.Errorf("%s took %v", kind, took)
		}
		observed[kind] = append(observed[kind], err)
	}
	ok := func(ctx context.Context, j *consent.Job) (jobs.Result, error) { return jobs.Result{}, nil }
	commit := func(fn func(ctx context.Context, tx consent.Tx) error) func(context.Context, *consent.Job) (jobs.Result, error) {
		return func(ctx context.Context, j *consent.Job) (jobs.Result, error) { return jobs.Result{Commit: fn}, nil }
	}
	r, err := jobs.New(jobs.Config{Store: s, ID: "r1", Now: c.Now, Logger: quiet, Observe: observe,
		Handlers: []jobs.Handler{
			{Kind: "done", Do: commit(func(ctx context.Context, tx consent.Tx) error { return nil })},
			{Kind: "do", Do: func(ctx context.Context, j *consent.Job) (jobs.Result, error) {
				return jobs.Result{}, errors.New("do failed")
			}},
			{Kind: "start", Do: ok, Started: func(ctx context.Context, tx consent.Tx, j *consent.Job) error {
				return errors.New("start failed")
			}},
			{Kind: "commit", Do: commit(func(ctx context.Context, tx consent.Tx) error { return errors.New("commit failed") })},
			{Kind: "panic", Do: commit(func(ctx context.Context, tx consent.Tx) error { panic("boom") })},
			{Kind: "lost", Do: func(ctx context.Context, j *consent.Job) (jobs.Result, error) {
				// Another runner takes the job, its lease run out by its
				// clock, before this one records its end.
				later := c.Now().Add(time.Hour)
				err := s.Update(ctx, func(tx consent.Tx) error {
					_, err := tx.LeaseJob(ctx, []string{"lost"}, "thief", later, later.Add(time.Hour))
					return err
				})
				return jobs.Result{}, err
			}},
		}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"done":   "<nil>",
		"do":     "do failed",
		"start":  "start failed",
		"commit": "commit failed",
		"panic":  "Commit panicked: boom",
		"lost":   "jobs: lease lost",
	}
	for kind := range want {
		enqueue(t, s, kind, "a")
		if worked, _ := r.RunOnce(ctx, kind); !worked { // commit's error is returned as well as observed
			t.Fatalf("%s: no job run", kind)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for kind, text := range want {
		errs := observed[kind]
		if len(errs) != 1 || !strings.Contains(fmt.Sprint(errs[0]), text) {
			t.Errorf("%s: observed %v; want one attempt, %q", kind, errs, text)
			continue
		}
		if kind == "lost" && !errors.Is(errs[0], jobs.ErrLeaseLost) {
			t.Errorf("lost: observed %v; want ErrLeaseLost", errs[0])
		}
	}
	if len(observed) != len(want) {
		t.Errorf("observed %v; want only %d kinds", observed, len(want))
	}
}
