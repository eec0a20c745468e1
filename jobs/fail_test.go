package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/jobs"
)

// A Commit that returns an error is a failed attempt, as a failed Do is:
// backed off, counted, failed for good after MaxAttempts, Failed told each
// time. Its error, even a Conflict of its own writes, is never taken for a
// lost lease, which left the job leased, retried at every lease for good
// and, first in its lane, holding every later job of the lane (D53).
func TestCommitErrorFailsTheAttempt(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(tb testing.TB) consent.Store) {
		s := open(t)
		c := &clock{t: t0}
		var ran, failed []string
		r := runner(t, s, c, jobs.Handler{Kind: "deliver", MaxAttempts: 3, Backoff: time.Minute,
			Do: func(ctx context.Context, j *consent.Job) (jobs.Result, error) {
				ran = append(ran, j.Key)
				if j.Key != "poison" {
					return jobs.Result{}, nil
				}
				return jobs.Result{Commit: func(ctx context.Context, tx consent.Tx) error {
					return consent.Errorf(consent.Conflict, "commit refused")
				}}, nil
			},
			Failed: func(ctx context.Context, tx consent.Tx, j *consent.Job, cause error, final bool) error {
				failed = append(failed, fmt.Sprintf("%s %d %v", j.Key, j.Attempts, final))
				return nil
			}})
		err := s.Update(ctx, func(tx consent.Tx) error {
			for i, k := range []string{"poison", "next"} {
				at := t0.Add(time.Duration(i) * time.Second)
				if err := tx.EnqueueJob(ctx, &consent.Job{Kind: "deliver", Key: k, Lane: "ep1", CompanyID: "co1", RunAfter: at, CreatedAt: at}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		c.Add(time.Second)
		if worked, err := r.RunOnce(ctx, "deliver"); !worked || consent.ErrorCode(err) != consent.Conflict {
			t.Fatalf("RunOnce = %v, %v; want Commit's error", worked, err)
		}
		j := job(t, s, "deliver", "poison")
		if j == nil || j.LeaseOwner != "" || j.Attempts != 1 || !j.FailedAt.IsZero() ||
			!j.RunAfter.Equal(c.Now().Add(time.Minute)) || !strings.Contains(j.LastError, "commit refused") {
			t.Fatalf("poison after its Commit failed: %+v; want a failed attempt, retried in a minute", j)
		}
		// Its lane is free meanwhile.
		if !runOnce(t, r, "deliver") || job(t, s, "deliver", "next") != nil {
			t.Fatalf("ran %v; want the next job of the lane done while poison backs off", ran)
		}
		for range 10 { // bounded: more than enough for MaxAttempts
			c.Add(time.Hour)
			if worked, _ := r.RunOnce(ctx, "deliver"); !worked {
				break
			}
		}
		j = job(t, s, "deliver", "poison")
		if j == nil || j.Attempts != 3 || j.FailedAt.IsZero() || !strings.Contains(j.LastError, "commit refused") {
			t.Fatalf("poison after its attempts: %+v; want failed for good after 3 attempts", j)
		}
		if want := "[poison 1 false poison 2 false poison 3 true]"; fmt.Sprint(failed) != want {
			t.Errorf("Failed told %v; want %v", failed, want)
		}
		if want := "[poison next poison poison]"; fmt.Sprint(ran) != want {
			t.Errorf("ran %v; want %v", ran, want)
		}
	})
}

// A Failed hook that returns an error, even a Conflict of its own writes,
// is dropped as one that panics is: the attempt is recorded without its
// writes, its last error naming both, and the job backs off and fails for
// good per the attempt's cause alone (the hook's error being permanent
// changes nothing). It was neither recorded nor retried, the job left
// leased and done again at every lease for good.
func TestFailedHookErrors(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(tb testing.TB) consent.Store) {
		s := open(t)
		c := &clock{t: t0}
		var finals []bool
		r := runner(t, s, c, jobs.Handler{Kind: "k", MaxAttempts: 2, Backoff: time.Minute,
			Do: func(ctx context.Context, j *consent.Job) (jobs.Result, error) {
				return jobs.Result{}, errors.New("down")
			},
			Failed: func(ctx context.Context, tx consent.Tx, j *consent.Job, cause error, final bool) error {
				finals = append(finals, final)
				if err := tx.EnqueueJob(ctx, &consent.Job{Kind: "marker", Key: j.Key, RunAfter: t0, CreatedAt: t0}); err != nil {
					return err
				}
				return fmt.Errorf("%w: %w", permanentErr{}, consent.Errorf(consent.Conflict, "log busy"))
			}})
		enqueue(t, s, "k", "a")
		if worked, err := r.RunOnce(ctx, "k"); !worked || err != nil {
			t.Fatalf("RunOnce = %v, %v; want the failed attempt recorded", worked, err)
		}
		j := job(t, s, "k", "a")
		if j == nil || j.LeaseOwner != "" || j.Attempts != 1 || !j.FailedAt.IsZero() || !j.RunAfter.Equal(c.Now().Add(time.Minute)) {
			t.Fatalf("job after Failed failed: %+v; want a failed attempt, retried in a minute", j)
		}
		for _, want := range []string{"down", "hook Failed", "log busy"} {
			if !strings.Contains(j.LastError, want) {
				t.Errorf("the job's last error %q does not say %q", j.LastError, want)
			}
		}
		if job(t, s, "marker", "a") != nil {
			t.Error("the write of the Failed that failed was kept")
		}
		c.Add(time.Minute)
		runOnce(t, r, "k")
		if j := job(t, s, "k", "a"); j == nil || j.Attempts != 2 || j.FailedAt.IsZero() {
			t.Fatalf("job after its last attempt: %+v; want failed for good", j)
		}
		if fmt.Sprint(finals) != "[false true]" {
			t.Errorf("Failed saw final = %v; want [false true]", finals)
		}
	})
}
