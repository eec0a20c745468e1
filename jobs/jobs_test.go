package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/internal/testwait"
	"github.com/consentkit/consentkit/jobs"
)

var ctx = context.Background()

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// clock is a settable clock shared by goroutines.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

var t0 = time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)

func enqueue(t *testing.T, s consent.Store, kind string, keys ...string) {
	t.Helper()
	err := s.Update(ctx, func(tx consent.Tx) error {
		for _, k := range keys {
			if err := tx.EnqueueJob(ctx, &consent.Job{Kind: kind, Key: k, Payload: []byte("p-" + k), RunAfter: t0, CreatedAt: t0}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func job(t *testing.T, s consent.Store, kind, key string) *consent.Job {
	t.Helper()
	var j *consent.Job
	err := s.View(ctx, func(tx consent.Tx) error {
		var err error
		j, err = tx.Job(ctx, kind, key)
		return err
	})
	if consent.ErrorCode(err) == consent.NotFound {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func runner(t *testing.T, s consent.Store, c *clock, hs ...jobs.Handler) *jobs.Runner {
	t.Helper()
	r, err := jobs.New(jobs.Config{Store: s, Handlers: hs, ID: "r1", Now: c.Now, Logger: quiet, Poll: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func runOnce(t *testing.T, r *jobs.Runner, kind string) bool {
	t.Helper()
	worked, err := r.RunOnce(ctx, kind)
	if err != nil {
		t.Fatalf("RunOnce: %v", err)
	}
	return worked
}

// A done job is deleted in the transaction that commits its handler's
// writes; a Commit that fails leaves both undone, and is a failed attempt,
// retried after its backoff. After is told which.
func TestDoneCommitsWithTheJob(t *testing.T) {
	s := teststore.Memory(t)
	c := &clock{t: t0}
	var (
		commitFails atomic.Bool
		afters      []bool
	)
	r := runner(t, s, c, jobs.Handler{Kind: "mark", Do: func(ctx context.Context, j *consent.Job) (jobs.Result, error) {
		if string(j.Payload) != "p-"+j.Key {
			return jobs.Result{}, fmt.Errorf("payload %q", j.Payload)
		}
		return jobs.Result{Commit: func(ctx context.Context, tx consent.Tx) error {
			if commitFails.Load() {
				return errors.New("commit refused")
			}
			return tx.EnqueueJob(ctx, &consent.Job{Kind: "done", Key: j.Key, RunAfter: c.Now(), CreatedAt: c.Now()})
		}, After: func(ctx context.Context, committed bool) {
			afters = append(afters, committed)
		}}, nil
	}})
	enqueue(t, s, "mark", "a")
	commitFails.Store(true)
	if worked, err := r.RunOnce(ctx, "mark"); !worked || err == nil || !strings.Contains(err.Error(), "commit refused") {
		t.Fatalf("RunOnce with a failing Commit = %v, %v; want its error", worked, err)
	}
	if j := job(t, s, "mark", "a"); j == nil || j.LeaseOwner != "" || j.Attempts != 1 || !j.FailedAt.IsZero() ||
		!j.RunAfter.Equal(c.Now().Add(30*time.Second)) || j.LastError != "commit: commit refused" {
		t.Fatalf("job after a failed Commit = %+v; want a failed attempt, retried after the default 30 s", j)
	}
	if job(t, s, "done", "a") != nil {
		t.Fatal("the failed Commit's write was kept")
	}
	// The backoff runs out and the job is done again.
	commitFails.Store(false)
	if runOnce(t, r, "mark") {
		t.Fatal("job taken again before its backoff ran out")
	}
	c.Add(30 * time.Second)
	if !runOnce(t, r, "mark") {
		t.Fatal("job not taken again after its backoff")
	}
	if job(t, s, "mark", "a") != nil || job(t, s, "done", "a") == nil {
		t.Fatal("want the job deleted and the Commit's write kept")
	}
	if runOnce(t, r, "mark") {
		t.Fatal("a done job ran again")
	}
	if fmt.Sprint(afters) != "[false true]" {
		t.Errorf("After told %v; want [false true]", afters)
	}
}

// Failures are retried with exponential backoff, then failed for good with
// the last error kept; Failed runs in the same transaction each time.
func TestRetriesThenFails(t *testing.T) {
	s := teststore.Memory(t)
	c := &clock{t: t0}
	var finals []bool
	r := runner(t, s, c, jobs.Handler{Kind: "flaky", MaxAttempts: 3, Backoff: 10 * time.Second, MaxBackoff: 15 * time.Second,
		Do: func(ctx context.Context, j *consent.Job) (jobs.Result, error) {
			return jobs.Result{}, fmt.Errorf("try %d: bad \xff byte", j.Attempts)
		},
		Failed: func(ctx context.Context, tx consent.Tx, j *consent.Job, cause error, final bool) error {
			if want := fmt.Sprintf("try %d: bad \xff byte", j.Attempts); cause == nil || cause.Error() != want {
				t.Errorf("Failed got cause %v; want %q", cause, want)
			}
			finals = append(finals, final)
			return nil
		}})
	enqueue(t, s, "flaky", "a")
	for i, wait := range []time.Duration{10 * time.Second, 15 * time.Second} { // 20 s capped to 15
		if !runOnce(t, r, "flaky") {
			t.Fatalf("attempt %d not run", i+1)
		}
		j := job(t, s, "flaky", "a")
		if j.Attempts != i+1 || !j.RunAfter.Equal(c.Now().Add(wait)) || !j.FailedAt.IsZero() || j.LeaseOwner != "" {
			t.Fatalf("after attempt %d: %+v; want retry at +%v", i+1, j, wait)
		}
		if !consent.ValidText(j.LastError) {
			t.Fatalf("LastError %q is not valid text", j.LastError)
		}
		if runOnce(t, r, "flaky") {
			t.Fatal("retried before its backoff")
		}
		c.Add(wait)
	}
	runOnce(t, r, "flaky")
	j := job(t, s, "flaky", "a")
	if j.Attempts != 3 || j.FailedAt.IsZero() || j.LastError != "try 3: bad \uFFFD byte" {
		t.Fatalf("after the last attempt: %+v; want failed with the last error", j)
	}
	c.Add(24 * time.Hour)
	if runOnce(t, r, "flaky") {
		t.Fatal("a failed job ran again")
	}
	if fmt.Sprint(finals) != "[false false true]" {
		t.Fatalf("Failed saw final = %v; want [false false true]", finals)
	}
}

type permanentErr struct{}

func (permanentErr) Error() string   { return "never" }
func (permanentErr) Permanent() bool { return true }

// A permanent error and a panic: the first fails the job at once, the
// second is a failed attempt, never a crash.
func TestPermanentAndPanic(t *testing.T) {
	s := teststore.Memory(t)
	c := &clock{t: t0}
	r := runner(t, s, c, jobs.Handler{Kind: "k", Do: func(ctx context.Context, j *consent.Job) (jobs.Result, error) {
		if j.Key == "panics" {
			panic("boom")
		}
		return jobs.Result{}, fmt.Errorf("wrapped: %w", permanentErr{})
	}})
	enqueue(t, s, "k", "never", "panics")
	runOnce(t, r, "k")
	runOnce(t, r, "k")
	if j := job(t, s, "k", "never"); j.Attempts != 1 || j.FailedAt.IsZero() {
		t.Errorf("permanent failure: %+v; want failed after one attempt", j)
	}
	if j := job(t, s, "k", "panics"); j.Attempts != 1 || !j.FailedAt.IsZero() || j.LastError != "Do panicked: boom" {
		t.Errorf("panic: %+v; want a failed attempt to retry", j)
	}
}

// A job whose Started fails is a failed attempt like one whose Do fails:
// recorded with its backoff and Failed, in a transaction of its own, while
// Started's writes roll back with its lease; the job after it still runs.
// A NotFound from Started is such a failure too, not "no job due".
func TestStartedFails(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(tb testing.TB) consent.Store) {
		for _, code := range []consent.Code{consent.NotFound, consent.Invalid} {
			t.Run(string(code), func(t *testing.T) {
				s := open(t)
				c := &clock{t: t0}
				var ran, failed []string
				r := runner(t, s, c, jobs.Handler{Kind: "convert", MaxAttempts: 2, Backoff: time.Minute,
					Started: func(ctx context.Context, tx consent.Tx, j *consent.Job) error {
						// A write of Started's, kept only if the job starts.
						if err := tx.EnqueueJob(ctx, &consent.Job{Kind: "started", Key: j.Key, RunAfter: t0, CreatedAt: t0}); err != nil {
							return err
						}
						if j.Key == "a" {
							return consent.Errorf(code, "session a: no such row")
						}
						return nil
					},
					Do: func(ctx context.Context, j *consent.Job) (jobs.Result, error) {
						ran = append(ran, j.Key)
						return jobs.Result{}, nil
					},
					Failed: func(ctx context.Context, tx consent.Tx, j *consent.Job, cause error, final bool) error {
						failed = append(failed, fmt.Sprintf("%s %d %v %v", j.Key, j.Attempts, consent.ErrorCode(cause), final))
						return nil
					}})
				enqueue(t, s, "convert", "a", "b")
				if !runOnce(t, r, "convert") {
					t.Fatal("a's failed start: RunOnce says no job was due")
				}
				j := job(t, s, "convert", "a")
				if j == nil || j.LeaseOwner != "" || j.Attempts != 1 || !j.FailedAt.IsZero() ||
					!j.RunAfter.Equal(c.Now().Add(time.Minute)) || !strings.Contains(j.LastError, "session a: no such row") {
					t.Fatalf("a after its Started failed: %+v; want a failed attempt, retried in a minute", j)
				}
				if job(t, s, "started", "a") != nil {
					t.Error("the failed Started's write was kept")
				}
				if !runOnce(t, r, "convert") || fmt.Sprint(ran) != "[b]" || job(t, s, "started", "b") == nil {
					t.Fatalf("ran %v; want b run after a's Started failed", ran)
				}
				if runOnce(t, r, "convert") {
					t.Fatal("a taken again before its backoff ran out")
				}
				// The second start fails too: a's last attempt, failed for good.
				c.Add(time.Minute)
				runOnce(t, r, "convert")
				if j := job(t, s, "convert", "a"); j == nil || j.Attempts != 2 || j.FailedAt.IsZero() {
					t.Fatalf("a after its second failed start: %+v; want failed for good", j)
				}
				if want := fmt.Sprintf("[a 1 %v false a 2 %v true]", code, code); fmt.Sprint(failed) != want {
					t.Errorf("Failed told %v; want %v", failed, want)
				}
			})
		}
	})
}

// noPanic runs RunOnce and fails the test if it panics: in Run, a panic
// that is not recovered kills the process.
func noPanic(t *testing.T, r *jobs.Runner, kind string) (worked bool, err error) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("RunOnce panicked: %v", p)
		}
	}()
	return r.RunOnce(ctx, kind)
}

// A panic in Started, Commit or Failed fails the attempt like one in Do,
// never the process, and what the panicking function wrote rolls back; a
// panic in After is logged. A job whose hook panics is retried after its
// backoff, not left leased to panic again in the next runner.
func TestHooksPanic(t *testing.T) {
	// marker is written by the function that then panics.
	marker := func(ctx context.Context, tx consent.Tx, key string) {
		if err := tx.EnqueueJob(ctx, &consent.Job{Kind: "marker", Key: key, RunAfter: t0, CreatedAt: t0}); err != nil {
			panic(err)
		}
		panic("boom")
	}
	ok := func(ctx context.Context, j *consent.Job) (jobs.Result, error) { return jobs.Result{}, nil }
	teststore.Each(t, func(t *testing.T, open func(tb testing.TB) consent.Store) {
		for _, c := range []struct {
			name    string
			h       jobs.Handler
			lastErr []string // what the failed attempt keeps
			done    bool     // the job is done instead
		}{
			{name: "Started", h: jobs.Handler{Do: ok,
				Started: func(ctx context.Context, tx consent.Tx, j *consent.Job) error {
					marker(ctx, tx, j.Key)
					return nil
				}},
				lastErr: []string{"Started panicked", "boom"}},
			{name: "Commit", h: jobs.Handler{Do: func(ctx context.Context, j *consent.Job) (jobs.Result, error) {
				return jobs.Result{Commit: func(ctx context.Context, tx consent.Tx) error {
					marker(ctx, tx, j.Key)
					return nil
				}}, nil
			}},
				lastErr: []string{"Commit panicked", "boom"}},
			{name: "Failed", h: jobs.Handler{Do: func(ctx context.Context, j *consent.Job) (jobs.Result, error) {
				return jobs.Result{}, errors.New("down")
			}, Failed: func(ctx context.Context, tx consent.Tx, j *consent.Job, cause error, final bool) error {
				marker(ctx, tx, j.Key)
				return nil
			}},
				lastErr: []string{"down", "Failed panicked", "boom"}},
			{name: "After", h: jobs.Handler{Do: func(ctx context.Context, j *consent.Job) (jobs.Result, error) {
				return jobs.Result{After: func(ctx context.Context, committed bool) { panic("boom") }}, nil
			}},
				done: true},
		} {
			t.Run(c.name, func(t *testing.T) {
				s := open(t)
				clk := &clock{t: t0}
				var logs lockedBuffer
				h := c.h
				h.Kind, h.Backoff = "k", time.Minute
				r, err := jobs.New(jobs.Config{Store: s, Handlers: []jobs.Handler{h}, ID: "r1", Now: clk.Now,
					Logger: slog.New(slog.NewTextHandler(&logs, nil))})
				if err != nil {
					t.Fatal(err)
				}
				enqueue(t, s, "k", "a")
				if worked, err := noPanic(t, r, "k"); !worked || err != nil {
					t.Fatalf("RunOnce = %v, %v; want the attempt done or recorded as failed", worked, err)
				}
				j := job(t, s, "k", "a")
				if c.done {
					if j != nil || !strings.Contains(logs.String(), "After panicked") {
						t.Errorf("job %+v, log %q; want it done and the panic logged", j, logs.String())
					}
					return
				}
				if j == nil || j.LeaseOwner != "" || j.Attempts != 1 || !j.FailedAt.IsZero() || !j.RunAfter.Equal(clk.Now().Add(time.Minute)) {
					t.Fatalf("job after the panic: %+v; want a failed attempt, retried in a minute", j)
				}
				for _, want := range c.lastErr {
					if !strings.Contains(j.LastError, want) {
						t.Errorf("the job's last error %q does not say %q", j.LastError, want)
					}
				}
				if job(t, s, "marker", "a") != nil {
					t.Error("the write of the function that panicked was kept")
				}
			})
		}
	})
}

// GiveUpAfter fails an old job after a failed attempt, whatever its
// attempts.
func TestGiveUpAfter(t *testing.T) {
	s := teststore.Memory(t)
	c := &clock{t: t0}
	r := runner(t, s, c, jobs.Handler{Kind: "k", MaxAttempts: 100, GiveUpAfter: time.Hour, Backoff: time.Minute,
		Do: func(ctx context.Context, j *consent.Job) (jobs.Result, error) {
			return jobs.Result{}, errors.New("down")
		}})
	enqueue(t, s, "k", "a")
	runOnce(t, r, "k")
	if j := job(t, s, "k", "a"); !j.FailedAt.IsZero() {
		t.Fatalf("failed for good at once: %+v", j)
	}
	c.Add(time.Hour)
	runOnce(t, r, "k")
	if j := job(t, s, "k", "a"); j.FailedAt.IsZero() || j.Attempts != 2 {
		t.Fatalf("after an hour: %+v; want failed for good", j)
	}
}

// A recurring kind has one job, however many runners schedule it, due again
// Every after each run, and retried (never failed) when a run fails.
func TestRecurring(t *testing.T) {
	s := teststore.Memory(t)
	c := &clock{t: t0}
	var runs atomic.Int32
	var fail atomic.Bool
	h := jobs.Handler{Kind: "sweep", Every: time.Hour, MaxAttempts: 1, Backoff: time.Minute,
		Do: func(ctx context.Context, j *consent.Job) (jobs.Result, error) {
			runs.Add(1)
			if fail.Load() {
				return jobs.Result{}, errors.New("database away")
			}
			return jobs.Result{}, nil
		}}
	r1, r2 := runner(t, s, c, h), runner(t, s, c, h)
	for _, r := range []*jobs.Runner{r1, r2} {
		if err := r.Schedule(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if !runOnce(t, r1, "sweep") || runOnce(t, r2, "sweep") {
		t.Fatal("want one run now, not two")
	}
	if j := job(t, s, "sweep", jobs.EveryKey); j == nil || !j.RunAfter.Equal(t0.Add(time.Hour)) {
		t.Fatalf("after a run: %+v; want due again in an hour", j)
	}
	c.Add(time.Hour)
	fail.Store(true)
	runOnce(t, r2, "sweep")
	if j := job(t, s, "sweep", jobs.EveryKey); !j.FailedAt.IsZero() || !j.RunAfter.Equal(c.Now().Add(time.Minute)) {
		t.Fatalf("after a failed run: %+v; want a retry in a minute, never failed for good", j)
	}
	if runs.Load() != 2 {
		t.Fatalf("%d runs; want 2", runs.Load())
	}
}

// A recurring job that keeps failing backs off further after each failed
// run, never later than Every; a run that succeeds counts its attempts
// afresh.
func TestRecurringBacksOff(t *testing.T) {
	s := teststore.Memory(t)
	c := &clock{t: t0}
	var fail atomic.Bool
	fail.Store(true)
	r := runner(t, s, c, jobs.Handler{Kind: "sweep", Every: time.Hour, Backoff: time.Minute, MaxBackoff: 10 * time.Hour,
		Do: func(ctx context.Context, j *consent.Job) (jobs.Result, error) {
			if fail.Load() {
				return jobs.Result{}, errors.New("database away")
			}
			return jobs.Result{}, nil
		}})
	if err := r.Schedule(ctx); err != nil {
		t.Fatal(err)
	}
	// runDue runs the job once it is due and returns how long until it
	// is due again.
	runDue := func() time.Duration {
		t.Helper()
		if !runOnce(t, r, "sweep") {
			t.Fatal("the job is not due")
		}
		j := job(t, s, "sweep", jobs.EveryKey)
		if j == nil || !j.FailedAt.IsZero() {
			t.Fatalf("job after a run: %+v; want it kept, never failed for good", j)
		}
		wait := j.RunAfter.Sub(c.Now())
		c.t = j.RunAfter
		return wait
	}
	var waits []time.Duration
	for range 8 {
		waits = append(waits, runDue())
	}
	want := []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 16 * time.Minute,
		32 * time.Minute, time.Hour, time.Hour}
	if fmt.Sprint(waits) != fmt.Sprint(want) {
		t.Errorf("waits after consecutive failed runs: %v; want %v", waits, want)
	}
	fail.Store(false)
	if wait := runDue(); wait != time.Hour {
		t.Errorf("after a run that succeeded: due in %v; want an hour", wait)
	}
	fail.Store(true)
	if wait := runDue(); wait != time.Minute {
		t.Errorf("a failed run after one that succeeded: retried in %v; want a minute", wait)
	}
}

// The backoff doubles up to MaxBackoff however large that is, and never
// wraps round to a wait that is negative or zero.
func TestBackoffNeverOverflows(t *testing.T) {
	s := teststore.Memory(t)
	c := &clock{t: t0}
	const maxBackoff = time.Duration(1<<63 - 1)
	r := runner(t, s, c, jobs.Handler{Kind: "k", MaxAttempts: 100, Backoff: time.Hour, MaxBackoff: maxBackoff,
		Do: func(ctx context.Context, j *consent.Job) (jobs.Result, error) {
			return jobs.Result{}, errors.New("down")
		}})
	enqueue(t, s, "k", "a")
	last := time.Duration(0)
	for i := range 30 {
		if !runOnce(t, r, "k") {
			t.Fatalf("attempt %d: the job is not due", i+1)
		}
		j := job(t, s, "k", "a")
		wait := j.RunAfter.Sub(c.Now())
		if wait < last || wait <= 0 {
			t.Fatalf("attempt %d: retried in %v after %v; want the backoff never to shrink", i+1, wait, last)
		}
		last = wait
		// The job is due again at the end of its wait (years ahead, within
		// what a store keeps); the test moves the job, not the clock.
		err := s.Update(ctx, func(tx consent.Tx) error {
			return tx.EndJob(ctx, "k", "a", "", &consent.Job{Payload: j.Payload, Attempts: j.Attempts, RunAfter: c.Now()})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if last < maxBackoff-time.Microsecond { // times are kept to the microsecond
		t.Errorf("backoff after 30 failures: %v; want MaxBackoff", last)
	}
}

// flakyEnqueue is a store whose enqueues fail with a transient error (a
// failover, a reset connection) while failing says so.
type flakyEnqueue struct {
	consent.Store
	failing func() bool
	failed  atomic.Int32
}

func (s *flakyEnqueue) Update(ctx context.Context, fn func(consent.Tx) error) error {
	return s.Store.Update(ctx, func(tx consent.Tx) error { return fn(flakyEnqueueTx{tx, s}) })
}

type flakyEnqueueTx struct {
	consent.Tx
	s *flakyEnqueue
}

func (tx flakyEnqueueTx) EnqueueJob(ctx context.Context, j *consent.Job) error {
	if tx.s.failing() {
		tx.s.failed.Add(1)
		return errors.New("connection reset by peer")
	}
	return tx.Tx.EnqueueJob(ctx, j)
}

// lockedBuffer is a log shared by goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string { b.mu.Lock(); defer b.mu.Unlock(); return b.b.String() }

// Run keeps going when the recurring jobs cannot be scheduled at start:
// the other handlers run meanwhile, each failure is logged, and scheduling
// is tried again until it succeeds.
func TestRunSchedulesUntilItSucceeds(t *testing.T) {
	s := teststore.Memory(t)
	enqueue(t, s, "deliver", "m1")
	var delivered, purged atomic.Int32
	// Scheduling fails at least once, and until the delivery has run: so
	// the delivery ran while the recurring job was not scheduled.
	flaky := &flakyEnqueue{Store: s}
	flaky.failing = func() bool { return delivered.Load() == 0 || flaky.failed.Load() == 0 }
	var logs lockedBuffer
	c := &clock{t: t0}
	r, err := jobs.New(jobs.Config{Store: flaky, ID: "r1", Now: c.Now, Poll: 5 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&logs, nil)), Handlers: []jobs.Handler{
			{Kind: "purge", Every: time.Hour, Do: func(context.Context, *consent.Job) (jobs.Result, error) {
				purged.Add(1)
				return jobs.Result{}, nil
			}},
			{Kind: "deliver", Do: func(context.Context, *consent.Job) (jobs.Result, error) {
				delivered.Add(1)
				return jobs.Result{}, nil
			}},
		}})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	returned := make(chan error, 1)
	go func() { returned <- r.Run(runCtx) }()
	deadline := testwait.Near(t)
	for purged.Load() == 0 {
		select {
		case err := <-returned:
			t.Fatalf("Run returned %v before its context ended (delivered %d, purged %d)", err, delivered.Load(), purged.Load())
		case <-deadline:
			t.Fatalf("the recurring job never ran (delivered %d, scheduling failed %d times)", delivered.Load(), flaky.failed.Load())
		case <-time.After(5 * time.Millisecond):
		}
	}
	cancel()
	if err := <-returned; err != nil {
		t.Errorf("Run: %v", err)
	}
	if delivered.Load() != 1 || purged.Load() != 1 {
		t.Errorf("delivered %d, purged %d; want each once", delivered.Load(), purged.Load())
	}
	n := int(flaky.failed.Load())
	if got := strings.Count(logs.String(), "recurring jobs not scheduled"); n == 0 || got != n {
		t.Errorf("scheduling failed %d times, logged %d times; want each failure logged:\n%s", n, got, logs.String())
	}
}

// A lost lease cancels the handler's context and its result is dropped.
func TestLostLeaseCancels(t *testing.T) {
	s := teststore.Memory(t)
	c := &clock{t: t0}
	started := make(chan struct{})
	after := make(chan bool, 1)
	r := runner(t, s, c, jobs.Handler{Kind: "slow", Lease: 30 * time.Millisecond,
		Do: func(ctx context.Context, j *consent.Job) (jobs.Result, error) {
			close(started)
			<-ctx.Done()
			return jobs.Result{Commit: func(ctx context.Context, tx consent.Tx) error {
				return errors.New("a dropped result must not be committed")
			}, After: func(ctx context.Context, committed bool) { after <- committed }}, nil
		}})
	enqueue(t, s, "slow", "a")
	done := make(chan error, 1)
	go func() { _, err := r.RunOnce(ctx, "slow"); done <- err }()
	<-started
	// Another runner, whose clock reads a second on, takes the job once
	// the lease has run out by that clock. The first runner's renewals
	// (every 10 ms of real time) keep its lease 30 ms past its own clock's
	// now, whenever they land, so none can hold the job from the thief.
	later := c.Now().Add(time.Second)
	err := s.Update(ctx, func(tx consent.Tx) error {
		_, err := tx.LeaseJob(ctx, []string{"slow"}, "thief", later, later.Add(time.Hour))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("RunOnce after losing its lease: %v", err)
		}
	case <-testwait.Near(t):
		t.Fatal("the handler was not cancelled when its lease was lost")
	}
	if j := job(t, s, "slow", "a"); j == nil || j.LeaseOwner != "thief" {
		t.Fatalf("job = %+v; want it still held by the thief", j)
	}
	select {
	case committed := <-after:
		if committed {
			t.Error("After told of a commit of a dropped result")
		}
	default:
		t.Error("After was not told of the dropped result")
	}
}

// Two runners with several goroutines each, on every store: every job is
// done exactly once, and never by two goroutines at the same time.
func TestRunnersShareAStore(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(tb testing.TB) consent.Store) {
		s := open(t)
		const n = 40
		keys := make([]string, n)
		for i := range keys {
			keys[i] = fmt.Sprintf("k%02d", i)
		}
		enqueue(t, s, "work", keys...)
		var (
			mu      sync.Mutex
			running = map[string]bool{}
			done    = map[string]int{}
			all     = make(chan struct{})
		)
		h := jobs.Handler{Kind: "work", Concurrency: 3, Do: func(ctx context.Context, j *consent.Job) (jobs.Result, error) {
			mu.Lock()
			if running[j.Key] {
				t.Errorf("job %s run twice at once", j.Key)
			}
			running[j.Key] = true
			mu.Unlock()
			time.Sleep(2 * time.Millisecond)
			return jobs.Result{Commit: func(ctx context.Context, tx consent.Tx) error {
				mu.Lock()
				defer mu.Unlock()
				running[j.Key] = false
				done[j.Key]++
				if len(done) == n {
					select {
					case <-all:
					default:
						close(all)
					}
				}
				return nil
			}}, nil
		}}
		runCtx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		for i := range 2 {
			r, err := jobs.New(jobs.Config{Store: s, Handlers: []jobs.Handler{h}, ID: fmt.Sprint("r", i), Logger: quiet, Poll: 5 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := r.Run(runCtx); err != nil {
					t.Errorf("runner %d: %v", i, err)
				}
			}()
		}
		select {
		case <-all:
		case <-testwait.Near(t):
			t.Error("the jobs were not all done by the test's deadline")
		}
		cancel()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		for _, k := range keys {
			if done[k] != 1 {
				t.Errorf("job %s done %d times; want once", k, done[k])
			}
		}
	})
}

func TestNewRefuses(t *testing.T) {
	s := teststore.Memory(t)
	do := func(ctx context.Context, j *consent.Job) (jobs.Result, error) { return jobs.Result{}, nil }
	for name, cfg := range map[string]jobs.Config{
		"no store":    {Handlers: []jobs.Handler{{Kind: "k", Do: do}}},
		"no handlers": {Store: s},
		"no kind":     {Store: s, Handlers: []jobs.Handler{{Do: do}}},
		"no Do":       {Store: s, Handlers: []jobs.Handler{{Kind: "k"}}},
		"two of kind": {Store: s, Handlers: []jobs.Handler{{Kind: "k", Do: do}, {Kind: "k", Do: do}}},
		"negative":    {Store: s, Handlers: []jobs.Handler{{Kind: "k", Do: do, Lease: -1}}},
		"tiny lease":  {Store: s, Handlers: []jobs.Handler{{Kind: "k", Do: do, Lease: 2}}},
		"lease < 1ms": {Store: s, Handlers: []jobs.Handler{{Kind: "k", Do: do, Lease: time.Millisecond - 1}}},
		"bad kind":    {Store: s, Handlers: []jobs.Handler{{Kind: "k\x00", Do: do}}},
	} {
		if _, err := jobs.New(cfg); err == nil {
			t.Errorf("%s: New accepted it", name)
		}
	}
	if _, err := jobs.New(jobs.Config{Store: s, Handlers: []jobs.Handler{{Kind: "k", Do: do, Lease: time.Millisecond}}}); err != nil {
		t.Errorf("a Lease of 1 ms: %v", err)
	}
}

// lookingStore says on looked each time a write transaction (a runner
// looking for a due job) has ended.
type lookingStore struct {
	consent.Store
	looked chan struct{}
}

func (s lookingStore) Update(ctx context.Context, fn func(consent.Tx) error) error {
	err := s.Store.Update(ctx, fn)
	select {
	case s.looked <- struct{}{}:
	default:
	}
	return err
}

// Wake makes an idle runner look for due jobs at once, not at its next
// poll.
func TestWake(t *testing.T) {
	s := teststore.Memory(t)
	looking := lookingStore{Store: s, looked: make(chan struct{}, 1)}
	ran := make(chan string, 1)
	r, err := jobs.New(jobs.Config{Store: looking, Logger: quiet, Poll: time.Hour, Handlers: []jobs.Handler{{Kind: "k",
		Do: func(ctx context.Context, j *consent.Job) (jobs.Result, error) {
			ran <- j.Key
			return jobs.Result{}, nil
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := r.Run(runCtx); err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	defer func() { cancel(); <-done }()
	// The runner finds nothing and waits an hour. The job is enqueued
	// only once it has looked, however long that took.
	select {
	case <-looking.looked:
	case <-testwait.Near(t):
		t.Fatal("the runner never looked for a job")
	}
	err = s.Update(ctx, func(tx consent.Tx) error {
		return tx.EnqueueJob(ctx, &consent.Job{Kind: "k", Key: "a", RunAfter: time.Now().UTC(), CreatedAt: time.Now().UTC()})
	})
	if err != nil {
		t.Fatal(err)
	}
	deadline := testwait.Near(t)
	for {
		r.Wake()
		select {
		case key := <-ran:
			if key != "a" {
				t.Fatalf("ran %q", key)
			}
			return
		case <-deadline:
			t.Fatal("the woken runner did not take the job")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Timeout bounds Do: its context ends with DeadlineExceeded no later than
// Timeout after Do begins, and the attempt fails and is retried like any
// other.
func TestTimeout(t *testing.T) {
	s := teststore.Memory(t)
	c := &clock{t: t0}
	const timeout = 50 * time.Millisecond
	var (
		deadline    time.Time
		hasDeadline bool
		left        time.Duration
	)
	r := runner(t, s, c, jobs.Handler{Kind: "hangs", Timeout: timeout, Backoff: time.Minute,
		Do: func(ctx context.Context, j *consent.Job) (jobs.Result, error) {
			deadline, hasDeadline = ctx.Deadline()
			left = time.Until(deadline)
			<-ctx.Done() // only the timeout ends it: the lease is never lost
			return jobs.Result{}, ctx.Err()
		}})
	enqueue(t, s, "hangs", "a")
	if !runOnce(t, r, "hangs") {
		t.Fatal("the job did not run")
	}
	if !hasDeadline || left > timeout {
		t.Errorf("Do's context: deadline %v (set %v), %v from when Do began; want at most %v", deadline, hasDeadline, left, timeout)
	}
	j := job(t, s, "hangs", "a")
	if j == nil || j.Attempts != 1 || !j.FailedAt.IsZero() || !strings.Contains(j.LastError, "deadline exceeded") ||
		!j.RunAfter.Equal(c.Now().Add(time.Minute)) {
		t.Errorf("job after a timed-out attempt: %+v; want a retry in a minute with the deadline as its error", j)
	}
}
