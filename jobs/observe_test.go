package jobs_test

import (
	"cmp"
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
// failed Commit nor a lost lease was.) A job deleted while it runs
// (consent.Tx.DeleteLaneJobs) is a lost lease, whether Do succeeded or
// failed, and RunOnce returns no error.
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
	// deleted deletes its job while it runs (as deleting a webhook
	// endpoint deletes its messages), then returns doErr.
	deleted := func(doErr error) func(context.Context, *consent.Job) (jobs.Result, error) {
		return func(ctx context.Context, j *consent.Job) (jobs.Result, error) {
			err := s.Update(ctx, func(tx consent.Tx) error {
				n, err := tx.DeleteLaneJobs(ctx, j.Kind, j.CompanyID, j.Lane)
				if err == nil && n != 1 {
					err = fmt.Errorf("deleted %d jobs; want 1", n)
				}
				return err
			})
			return jobs.Result{}, cmp.Or(err, doErr)
		}
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
			{Kind: "deleted", Do: deleted(nil)},
			{Kind: "deleted-failed", Do: deleted(errors.New("do failed"))},
		}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"deleted":        "jobs: lease lost",
		"deleted-failed": "jobs: lease lost",
		"done":           "<nil>",
		"do":             "do failed",
		"start":          "start failed",
		"commit":         "commit failed",
		"panic":          "Commit panicked: boom",
		"lost":           "jobs: lease lost",
	}
	for kind := range want {
		enqueue(t, s, kind, "a")
		worked, err := r.RunOnce(ctx, kind)
		if !worked { // commit's error is returned as well as observed
			t.Fatalf("%s: no job run", kind)
		}
		if strings.HasPrefix(kind, "deleted") && err != nil {
			t.Errorf("%s: RunOnce: %v; want a lost lease, not an error", kind, err)
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
		if text == "jobs: lease lost" && !errors.Is(errs[0], jobs.ErrLeaseLost) {
			t.Errorf("%s: observed %v; want ErrLeaseLost", kind, errs[0])
		}
	}
	if len(observed) != len(want) {
		t.Errorf("observed %v; want only %d kinds", observed, len(want))
	}
}
