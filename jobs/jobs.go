// Package jobs runs the store's job queue (consent.Job): conversions of
// retained recordings to video, the purge of expired data and webhook
// deliveries are its handlers.
//
//	runner, err := jobs.New(jobs.Config{
//		Store:    svc.Store(),
//		Handlers: append(purger.Handlers(), conversion, webhooks), // retain's and webhook's
//	})
//	err = runner.Run(ctx) // until ctx ends; errors are logged and retried
//
// A job is enqueued with consent.Tx.EnqueueJob inside the transaction of the
// change that calls for it, so it exists exactly when that change committed.
// A Runner leases due jobs, keeps each lease alive while its handler works,
// and ends the job in one transaction together with the handler's own
// writes: deleted when done, tried again after an exponential backoff, or
// kept as failed (FailedAt set, the last error kept) after MaxAttempts, once
// older than GiveUpAfter, or at once on a permanent error (one with a
// Permanent() bool method that says true). A job whose runner dies is taken
// again by any runner once its lease runs out, so every job is done at least
// once; a handler must therefore be safe to run again for the same job.
// Each lease counts an attempt, so an attempt that ends unrecorded (its
// runner crashed or stopped, or lost the lease) counts too: a one-off job
// leased again with its attempts spent is failed for good at once, without
// running (Handler.MaxAttempts and GiveUpAfter say when), so that a job
// that kills its runner is not run again after every restart, for good.
// An error of Started or of a Result's Commit fails the attempt as one of
// Do does. Jobs handle input from the public: a panic in a handler's Do,
// Started, Commit or Failed fails the attempt like an error, never the
// process, and one in After is logged.
//
// Runners on many machines may share one store: a lease keeps the others
// off a job. A lease goes to the company holding the fewest, and a job's
// lane holds one lease at a time (consent.Job.CompanyID and Lane, D53), so
// one company's backlog never stands before another's. Each handler has
// its own pool of Concurrency goroutines that lease only its kind, so slow
// jobs (conversions) never hold up quick ones (webhooks).
//
// Clocks: a lease runs out at a wall-clock time set by its holder's clock
// (Config.Now plus Handler.Lease), and another runner judges it run out by
// its own clock. The holder, unless it renewed the lease, gives it up a
// tenth of Lease before it runs out by its own monotonic clock, cancelling
// Do. So the clocks of the runners sharing a store must agree to well
// within a tenth of each handler's Lease (6 s of the default minute), less
// the time a Do takes to stop once cancelled: keep them in sync (NTP). A
// runner whose clock runs ahead by more takes jobs whose holder is still
// at work, and both do them at once.
package jobs

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
)

// Handler does the jobs of one kind.
type Handler struct {
	// Kind is the kind of job it does (consent.Job.Kind). Required.
	Kind string
	// Do does one job, outside any transaction. Its Result's Commit runs in
	// the transaction that ends the job. Required.
	Do func(ctx context.Context, j *consent.Job) (Result, error)
	// Started, when set, runs in the transaction that leases the job,
	// unless the job is failed for good at once, its attempts spent
	// (MaxAttempts, GiveUpAfter). When it fails, that transaction is
	// rolled back and the attempt is recorded as failed, in a transaction
	// of its own, as when Do fails.
	Started func(ctx context.Context, tx consent.Tx, j *consent.Job) error
	// Failed, when set, runs in the transaction that records a failed
	// attempt, or hands back one cut short by shutdown: cause is what Do,
	// Started or Commit returned, or the panic of one of them, and final
	// says the job will not be tried again. When Failed itself returns an
	// error or panics, the attempt is recorded without Failed's writes (it
	// is not tried again: a Failed that always fails would otherwise keep
	// the job leased, retried at every lease, for good), its last error
	// naming both; whether it is final follows cause alone.
	Failed func(ctx context.Context, tx consent.Tx, j *consent.Job, cause error, final bool) error
	// Every, when positive, makes the kind recurring: one job of key
	// EveryKey always exists (each Runner enqueues it when it starts, and
	// the first to do so wins) and after each run it is due again Every
	// later. A recurring job is never failed for good: after a failed run
	// it is retried with backoff, growing while its runs keep failing but
	// at most Every later, and counted afresh after a run that succeeds.
	Every time.Duration
	// Concurrency is how many jobs of this kind the Runner does at once:
	// default 1.
	Concurrency int
	// Lease is how long a job is held without a sign of life: default 1
	// minute, at least 1 ms. The Runner renews it every Lease/3 while Do
	// runs (sooner after a renewal that failed), and cancels Do's context
	// when it is lost: taken by another runner, or not renewed by a tenth
	// of Lease before it runs out, by the runner's own monotonic clock
	// (the package doc says how far the clocks of runners sharing a store
	// may disagree). Do must then stop: its result is discarded.
	Lease time.Duration
	// Timeout, when positive, bounds one Do.
	Timeout time.Duration
	// MaxAttempts is how many tries a job gets: default 5. Each lease
	// counts one, so an attempt that ended unrecorded (its runner crashed
	// or stopped, or lost the lease) counts too: a job leased for a try
	// past MaxAttempts is failed for good at once, without running (Failed
	// is told, final, of an error that says so). A recurring kind's job is
	// never failed for good (Every).
	MaxAttempts int
	// GiveUpAfter, when positive, fails a job for good after a failed
	// attempt once it is older than this, whatever its attempts. Attempts
	// that ended unrecorded count too: a job leased again once older than
	// this, after earlier attempts of which none was recorded (none left
	// a last error), is failed for good at once, without running, as past
	// MaxAttempts. A job's first try, and a retry after a recorded failed
	// attempt, run whatever its age.
	GiveUpAfter time.Duration
	// Backoff is the wait after the first failed attempt, doubled after
	// each further one up to MaxBackoff: defaults 30 s and 1 h.
	Backoff, MaxBackoff time.Duration
}

// EveryKey is the key of a recurring kind's one job.
const EveryKey = "every"

// Result is what a Handler's Do did.
type Result struct {
	// Commit, when set, runs in the transaction that ends the job: the
	// handler's writes commit if and only if the job is recorded as done.
	// When it returns an error (whatever its code) or panics, or that
	// transaction fails to commit, the attempt fails as when Do fails:
	// backed off, counted, failed for good per MaxAttempts, GiveUpAfter
	// or a permanent error.
	Commit func(ctx context.Context, tx consent.Tx) error
	// Again, when set, keeps the job, due again at that time with its
	// attempts reset, instead of deleting it.
	Again time.Time
	// Payload, with Again, replaces the job's payload (nil keeps it).
	Payload []byte
	// After, when set, runs once the runner has tried to record the job's
	// end, outside any transaction, with a context that outlives shutdown:
	// committed says whether the transaction that ran Commit committed.
	// When it did not (the lease lost to another runner, Commit or the
	// store failing), nothing Commit wrote is recorded, and After may undo
	// what Do did outside the store, such as an object written for Commit
	// to name. A commit cut off by a lost connection may have committed
	// nonetheless: After reads the store again before undoing anything.
	After func(ctx context.Context, committed bool)
}

// Config configures a Runner. Store and at least one Handler are required.
type Config struct {
	// Store holds the queue: a Service's Store, or a store that New wraps
	// with consentkit.Checked, so that the runner's writes are checked as the
	// Service's are. Required.
	Store consent.Store
	// Handlers do the kinds of job the runner does. Required: one at least.
	Handlers []Handler
	// ID names this runner in leases: default host-pid-random. Every runner
	// sharing a store needs its own.
	ID string
	// Poll is how often an idle goroutine looks for a due job: default 1 s.
	Poll time.Duration
	// Now is the clock that RunAfter, leases and backoff follow: default
	// the wall clock in UTC. Tests pass a fake one.
	Now    func() time.Time
	Logger *slog.Logger // default slog.Default()
	// Observe, when set, is told of each attempt at a job, once, when it
	// has ended: its kind, how long it took (from its lease to its end
	// recorded) and its outcome (package metrics keeps these, counting
	// each non-nil err as a failure). err is nil when the job was done,
	// its Commit committed; else it says why the attempt failed: what
	// Started, Do or Commit returned, or the panic of one of them; the
	// store's error when the end could not be recorded; or, when the
	// lease was lost (taken by another runner, not renewed in time, or
	// the job deleted, as consent.Tx.DeleteLaneJobs does) and the result
	// discarded, an error that errors.Is ErrLeaseLost. An
	// attempt cut short by shutdown, handed back without counting against
	// MaxAttempts, reports Do's error too: it was not done.
	Observe func(kind string, took time.Duration, err error)
}

// Runner leases and does jobs. It is safe for concurrent use.
type Runner struct {
	cfg      Config
	handlers map[string]*Handler
	wake     chan struct{}
}

// New checks cfg and returns a Runner.
func New(cfg Config) (*Runner, error) {
	if cfg.Store == nil || len(cfg.Handlers) == 0 {
		return nil, errors.New("jobs: Config needs a Store and at least one Handler")
	}
	if cfg.Poll < 0 {
		return nil, errors.New("jobs: Config.Poll must not be negative")
	}
	cfg.Store = consentkit.Checked(cfg.Store)
	if cfg.ID == "" {
		host, _ := os.Hostname()
		var b [4]byte
		rand.Read(b[:])
		cfg.ID = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	}
	if cfg.Poll == 0 {
		cfg.Poll = time.Second
	}
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return time.Now().UTC() }
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	r := &Runner{cfg: cfg, handlers: map[string]*Handler{}, wake: make(chan struct{})}
	for _, h := range cfg.Handlers {
		if h.Kind == "" || h.Do == nil {
			return nil, errors.New("jobs: a Handler needs a Kind and Do")
		}
		if r.handlers[h.Kind] != nil {
			return nil, fmt.Errorf("jobs: two handlers of kind %q", h.Kind)
		}
		if err := consent.CheckText("kind", h.Kind); err != nil {
			return nil, err
		}
		if h.Every < 0 || h.Concurrency < 0 || h.Lease < 0 || h.Timeout < 0 || h.MaxAttempts < 0 || h.GiveUpAfter < 0 ||
			h.Backoff < 0 || h.MaxBackoff < 0 {
			return nil, fmt.Errorf("jobs: handler %q: values must not be negative (zero means the default)", h.Kind)
		}
		if h.Lease > 0 && h.Lease < minLease {
			return nil, fmt.Errorf("jobs: handler %q: Lease must be at least %v (it is renewed every Lease/3)", h.Kind, minLease)
		}
		h.Concurrency = max(h.Concurrency, 1)
		h.MaxAttempts = cmp.Or(h.MaxAttempts, 5)
		h.Lease = cmp.Or(h.Lease, time.Minute)
		h.Backoff = cmp.Or(h.Backoff, 30*time.Second)
		h.MaxBackoff = cmp.Or(h.MaxBackoff, time.Hour)
		r.handlers[h.Kind] = &h
	}
	return r, nil
}

// minLease is the shortest Handler.Lease: a third of it, how often the
// lease is renewed, must be a positive span a store can keep up with.
const minLease = time.Millisecond

// Run does jobs until ctx is done, then returns once the jobs in hand are
// handed back. Errors are logged and retried, not returned: when the jobs
// of the recurring kinds cannot be scheduled (Schedule), the handlers run
// meanwhile, and scheduling is tried again after a backoff from Poll (at
// most 1 s) doubling up to a minute, until it succeeds or ctx is done.
func (r *Runner) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		r.schedule(ctx)
	}()
	for _, h := range r.handlers {
		for i := range h.Concurrency {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r.loop(ctx, h, fmt.Sprintf("%s/%s/%d", r.cfg.ID, h.Kind, i))
			}()
		}
	}
	wg.Wait()
	return nil
}

// maxScheduleWait bounds the wait between two tries of Run to schedule the
// recurring jobs.
const maxScheduleWait = time.Minute

// schedule calls Schedule until it succeeds or ctx is done, logging each
// failure, then wakes the idle goroutines to run what it enqueued.
func (r *Runner) schedule(ctx context.Context) {
	wait := min(r.cfg.Poll, time.Second)
	for {
		err := r.Schedule(ctx)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			r.Wake()
			return
		}
		r.cfg.Logger.Error("job runner: recurring jobs not scheduled; trying again", "runner", r.cfg.ID, "err", err, "retry_in", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		wait = min(2*wait, maxScheduleWait)
	}
}

// Schedule enqueues the job of every recurring kind that has none, due now.
// Run calls it; tests that use RunOnce call it themselves.
func (r *Runner) Schedule(ctx context.Context) error {
	for _, h := range r.handlers {
		if h.Every <= 0 {
			continue
		}
		now := r.cfg.Now()
		err := r.cfg.Store.Update(ctx, func(tx consent.Tx) error {
			return tx.EnqueueJob(ctx, &consent.Job{Kind: h.Kind, Key: EveryKey, RunAfter: now, CreatedAt: now})
		})
		if err != nil && consent.ErrorCode(err) != consent.Conflict {
			return fmt.Errorf("jobs: schedule %s: %w", h.Kind, err)
		}
	}
	return nil
}

// Wake makes idle goroutines look for due jobs now rather than at their
// next poll: call it after enqueueing work that should start at once.
func (r *Runner) Wake() {
	for {
		select {
		case r.wake <- struct{}{}:
		default:
			return
		}
	}
}

func (r *Runner) loop(ctx context.Context, h *Handler, owner string) {
	for ctx.Err() == nil {
		worked, err := r.runOnce(ctx, h, owner)
		if err != nil && ctx.Err() == nil {
			r.cfg.Logger.Error("job runner", "kind", h.Kind, "runner", owner, "err", err)
		}
		if worked && err == nil {
			continue // there may be more
		}
		t := time.NewTimer(r.cfg.Poll)
		select {
		case <-ctx.Done():
		case <-t.C:
		case <-r.wake:
		}
		t.Stop()
	}
}

// RunOnce does at most one due job of the kind and reports whether there
// was one. A failed attempt is recorded, not returned, but for one whose
// result could not be recorded (Commit or its transaction returning an
// error): that error is returned once the attempt is recorded as failed.
func (r *Runner) RunOnce(ctx context.Context, kind string) (bool, error) {
	h := r.handlers[kind]
	if h == nil {
		return false, fmt.Errorf("jobs: no handler of kind %q", kind)
	}
	return r.runOnce(ctx, h, r.cfg.ID+"/"+kind+"/once")
}

// ErrLeaseLost is the cause (context.Cause) of the cancellation of Do's
// context when the runner lost the job's lease (Handler.Lease).
var ErrLeaseLost = errors.New("jobs: lease lost")

func (r *Runner) runOnce(ctx context.Context, h *Handler, owner string) (bool, error) {
	leased := time.Now() // before the lease: its end by the store is no earlier than Lease after
	job, spent, err := r.lease(ctx, h, owner)
	var notStarted *startError
	if errors.As(err, &notStarted) {
		job, err = notStarted.job, nil
	}
	if consent.ErrorCode(err) == consent.NotFound {
		return false, nil // no job due
	}
	if err != nil {
		return false, err
	}
	log := r.cfg.Logger.With("kind", job.Kind, "key", job.Key, "attempt", job.Attempts, "runner", owner)
	if notStarted != nil {
		outcome := notStarted.cause
		err := lostLease(&outcome, r.fail(ctx, log, h, job, owner, notStarted.cause, failStart))
		r.observe(job.Kind, leased, outcome)
		return true, err
	}
	if spent != nil {
		// Its tries were used up by attempts that ended unrecorded: it is
		// failed for good, without running, as on a permanent error (the
		// Failed hook told, final), even when ctx is done.
		finishCtx, stop := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer stop()
		outcome := spent
		err := lostLease(&outcome, r.fail(finishCtx, log, h, job, owner, spent, failAttempt))
		r.observe(job.Kind, leased, outcome)
		return true, err
	}
	// outcome is the attempt's, observed once it has ended.
	var outcome error
	defer func() { r.observe(job.Kind, leased, outcome) }()

	doCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if h.Timeout > 0 {
		var stop context.CancelFunc
		doCtx, stop = context.WithTimeout(doCtx, h.Timeout)
		defer stop()
	}
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		r.renew(doCtx, cancel, log, h, job, owner, leased)
	}()
	res, err := do(doCtx, h, job)
	cancel(nil)
	<-renewed
	// Finish even when ctx is done, so the job is handed back at once.
	finishCtx, stop := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer stop()
	if errors.Is(context.Cause(doCtx), ErrLeaseLost) {
		log.Warn("lease lost (taken by another runner, or not renewed in time); result discarded")
		if err == nil {
			after(finishCtx, log, res.After, false)
		}
		outcome = ErrLeaseLost
		return true, nil
	}
	if err != nil {
		outcome = err
		how := failAttempt
		if ctx.Err() != nil {
			how = failStopping
		}
		return true, lostLease(&outcome, r.fail(finishCtx, log, h, job, owner, err, how))
	}
	now := r.cfg.Now()
	again := res.Again
	if again.IsZero() && h.Every > 0 {
		again = now.Add(h.Every)
	}
	// EndJob's error and Commit's are kept apart: only EndJob's Conflict
	// (or NotFound) says the lease was lost; a Commit's, whatever its
	// code, is the handler's, and fails the attempt. (The store may run
	// fn more than once: each run sets both afresh.)
	var endErr, commitErr error
	err = r.cfg.Store.Update(finishCtx, func(tx consent.Tx) error {
		endErr, commitErr = nil, nil
		var next *consent.Job
		if !again.IsZero() {
			next = &consent.Job{Payload: job.Payload, RunAfter: again}
			if res.Payload != nil {
				next.Payload = res.Payload
			}
		}
		if endErr = tx.EndJob(finishCtx, job.Kind, job.Key, owner, next); endErr != nil {
			return endErr
		}
		if res.Commit != nil {
			commitErr = recovered("Commit", func() error { return res.Commit(finishCtx, tx) })
			return commitErr
		}
		return nil
	})
	after(finishCtx, log, res.After, err == nil)
	switch code := consent.ErrorCode(endErr); {
	case err == nil:
		return true, nil
	case endErr != nil && (code == consent.Conflict || code == consent.NotFound):
		log.Warn("lease lost (taken by another runner, or the job deleted) before the result was recorded")
		outcome = fmt.Errorf("%w: %w", ErrLeaseLost, endErr)
		return true, nil
	case endErr != nil:
		outcome = err
		return true, err // the store failed: the job is taken again when its lease runs out
	}
	// Commit failed or panicked, or the transaction that ran it failed to
	// commit: the job is still leased, its transaction rolled back. The
	// attempt fails as when Do fails, so that it backs off, counts
	// against MaxAttempts and GiveUpAfter and frees its lane.
	cause := err
	var p *panicked
	switch {
	case errors.As(commitErr, &p):
		cause = p
	case commitErr != nil:
		cause = fmt.Errorf("commit: %w", commitErr)
	}
	outcome = cause
	if err := r.fail(finishCtx, log, h, job, owner, cause, failAttempt); err != nil || p != nil {
		return true, lostLease(&outcome, err)
	}
	// Recorded as failed; still returned, as it was before Commit's
	// errors failed the attempt (a panic's never was).
	return true, fmt.Errorf("jobs: %s %s: result not recorded: %w", job.Kind, job.Key, cause)
}

// lostLease returns err, what fail returned, unless it says that the lease
// was lost before the failure was recorded: then that is the attempt's
// outcome, not an error of the runner's.
func lostLease(outcome *error, err error) error {
	if errors.Is(err, ErrLeaseLost) {
		*outcome = err
		return nil
	}
	return err
}

// observe tells Config.Observe of an attempt of kind, leased at leased
// (by the monotonic clock), that has ended with outcome.
func (r *Runner) observe(kind string, leased time.Time, outcome error) {
	if r.cfg.Observe != nil {
		r.cfg.Observe(kind, time.Since(leased), outcome)
	}
}

// panicked is a panic of a handler's function, recovered.
type panicked struct {
	what  string
	value any
}

func (p *panicked) Error() string { return fmt.Sprintf("%s panicked: %v", p.what, p.value) }

// recovered calls fn, the handler's function named what; a panic is
// returned as a *panicked error. A panic of Do, Started, Commit or Failed
// fails the attempt, never the process: jobs handle input from the public.
func recovered(what string, fn func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &panicked{what: what, value: p}
		}
	}()
	return fn()
}

// after calls a Result's After, when set; a panic is logged.
func after(ctx context.Context, log *slog.Logger, fn func(ctx context.Context, committed bool), committed bool) {
	if fn == nil {
		return
	}
	err := recovered("After", func() error {
		fn(ctx, committed)
		return nil
	})
	if err != nil {
		log.Error("job's After panicked", "err", err, "committed", committed)
	}
}

// do calls h.Do; a panic fails the attempt like an error (recovered), and
// leaves no Result.
func do(ctx context.Context, h *Handler, j *consent.Job) (Result, error) {
	var res Result
	err := recovered("Do", func() error {
		var err error
		res, err = h.Do(ctx, j)
		return err
	})
	return res, err
}

// startError is a Started that failed: the lease that ran it is rolled
// back.
type startError struct {
	job   *consent.Job
	cause error
}

func (e *startError) Error() string {
	return fmt.Sprintf("jobs: %s %s: %v", e.job.Kind, e.job.Key, e.cause)
}

// lease leases a due job of h's kind and runs h.Started in the same
// transaction: NotFound when no job is due, a *startError when Started
// failed. A job leased with its attempts spent (spentAttempts) is leased
// without Started, and spent says why it is not to run.
func (r *Runner) lease(ctx context.Context, h *Handler, owner string) (job *consent.Job, spent error, err error) {
	err = r.cfg.Store.Update(ctx, func(tx consent.Tx) error {
		now := r.cfg.Now()
		var err error
		if job, err = tx.LeaseJob(ctx, []string{h.Kind}, owner, now, now.Add(h.Lease)); err != nil {
			return err
		}
		if spent = spentAttempts(h, job, now); spent != nil {
			return nil
		}
		if h.Started != nil {
			if err := recovered("Started", func() error { return h.Started(ctx, tx, job) }); err != nil {
				return &startError{job: job, cause: fmt.Errorf("start: %w", err)}
			}
		}
		return nil
	})
	return job, spent, err
}

// spentAttempts returns, for a one-off job just leased, a permanent error
// when its attempts are spent, nil otherwise. A failed attempt that was
// recorded ends the job when it uses up the last try (failed), so a job
// leased past MaxAttempts (LeaseJob counted this lease) had attempts that
// ended unrecorded: its runner crashed or stopped, or lost the lease. Past
// GiveUpAfter, the job is spent only when none of its earlier attempts was
// recorded (no last error): a first try, or the retry a recorded failure
// scheduled, runs whatever the job's age, as before.
func spentAttempts(h *Handler, job *consent.Job, now time.Time) error {
	switch {
	case h.Every > 0:
		return nil // never failed for good
	case job.Attempts > h.MaxAttempts:
		return &spentError{attempt: job.Attempts, limit: fmt.Sprintf("past MaxAttempts (%d)", h.MaxAttempts)}
	case h.GiveUpAfter > 0 && job.Attempts > 1 && job.LastError == "" && now.Sub(job.CreatedAt) >= h.GiveUpAfter:
		return &spentError{attempt: job.Attempts, limit: fmt.Sprintf("older than GiveUpAfter (%v)", h.GiveUpAfter)}
	}
	return nil
}

// spentError is why a job leased with its attempts spent is failed for
// good without running: permanent.
type spentError struct {
	attempt int
	limit   string
}

func (e *spentError) Error() string {
	return fmt.Sprintf("jobs: not run: leased for attempt %d, %s; earlier attempts ended unrecorded (the runner stopped or lost its lease)", e.attempt, e.limit)
}

func (*spentError) Permanent() bool { return true }

// leaseMargin is how long before a lease runs out, by the runner's
// monotonic clock, the runner gives it up when it was not renewed: Do's
// context is cancelled then. It leaves room for Do to stop and for the
// clocks of the runners sharing a store to disagree (the package doc);
// a tenth of the Lease: 6 s of the default minute.
func leaseMargin(lease time.Duration) time.Duration { return lease / 10 }

// renew keeps the lease alive until ctx is done, renewing it every
// Lease/3, and cancels the job's context (ErrLeaseLost) when the lease is
// lost: when the store says another runner holds it or the job is gone,
// or when its end, less leaseMargin, passes without a renewal that
// succeeded, whatever the renewals' errors (a store out of reach, a
// timeout) or however long they hang. The end is kept on the monotonic
// clock, never the wall clock (which may jump): Lease after leased, the
// moment before the lease was taken, then Lease after the start of each
// renewal that succeeded; each lease the store keeps ends later, by the
// runner's own clock. Each renewal runs under a deadline of that end,
// less leaseMargin: one that lands later would come too late.
func (r *Runner) renew(ctx context.Context, cancel context.CancelCauseFunc, log *slog.Logger, h *Handler, j *consent.Job, owner string, leased time.Time) {
	margin := leaseMargin(h.Lease)
	giveUp := leased.Add(h.Lease - margin)
	lost := time.AfterFunc(time.Until(giveUp), func() { cancel(ErrLeaseLost) })
	defer lost.Stop()
	t := time.NewTimer(h.Lease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		began := time.Now()
		renewCtx, stop := context.WithDeadline(ctx, giveUp)
		err := r.cfg.Store.Update(renewCtx, func(tx consent.Tx) error {
			return tx.RenewJob(renewCtx, j.Kind, j.Key, owner, r.cfg.Now().Add(h.Lease))
		})
		stop()
		switch code := consent.ErrorCode(err); {
		case err == nil:
			giveUp = began.Add(h.Lease - margin)
			if !lost.Stop() {
				return // given up meanwhile: Do is cancelled
			}
			lost.Reset(time.Until(giveUp))
			t.Reset(h.Lease / 3)
		case code == consent.Conflict || code == consent.NotFound:
			cancel(ErrLeaseLost)
			return
		case ctx.Err() != nil:
			return
		default:
			// Tried again sooner than Lease/3: the lease is given up
			// unless one succeeds before giveUp.
			log.Warn("job lease not renewed; trying again", "err", err, "gives_up_in", time.Until(giveUp))
			t.Reset(margin)
		}
	}
}

// maxErrorText bounds the error kept with a job.
const maxErrorText = 1000

// ErrorText is cause's message as a job keeps it: valid text (a tool's
// output may hold any bytes), at most 1000 bytes.
func ErrorText(cause error) string {
	msg := consent.CleanText(cause.Error())
	if len(msg) > maxErrorText {
		msg = strings.ToValidUTF8(msg[:maxErrorText], "") // never cut a character in two
	}
	return msg
}

// Permanent reports whether err says that trying again cannot help.
func Permanent(err error) bool {
	var p interface{ Permanent() bool }
	return errors.As(err, &p) && p.Permanent()
}

// failHow says what a failed attempt was.
type failHow int

const (
	failAttempt  failHow = iota // Do failed
	failStopping                // Do was cut short by shutdown
	failStart                   // Started failed, and the lease rolled back
)

// errOtherJob rolls back the lease that fail takes to record a failed
// Started, when it is another job's.
var errOtherJob = errors.New("jobs: another job was due first")

// fail records a failed attempt: tried again after a backoff, or failed for
// good. An attempt cut short by shutdown is handed back at once and not
// counted. When Started failed, the lease rolled back with it: fail leases
// the job again, in the transaction that records the failure, which is
// then what counts the attempt. When the lease was lost meanwhile — another
// runner holds it, or the job was deleted (consent.Tx.DeleteLaneJobs) —
// nothing is recorded, and the error returned wraps ErrLeaseLost.
func (r *Runner) fail(ctx context.Context, log *slog.Logger, h *Handler, job *consent.Job, owner string, cause error, how failHow) error {
	var (
		next    *consent.Job
		final   bool
		hookErr error // what Failed returned, or its panic
		lastErr = cause
	)
	record := func(hook bool) error {
		return r.cfg.Store.Update(ctx, func(tx consent.Tx) error {
			hookErr = nil
			now := r.cfg.Now()
			cur := job
			if how == failStart {
				j, err := tx.LeaseJob(ctx, []string{h.Kind}, owner, now, now.Add(h.Lease))
				if err != nil {
					return err
				}
				if j.Kind != job.Kind || j.Key != job.Key {
					return errOtherJob
				}
				cur = j
			}
			next, final = r.failed(h, cur, cause, lastErr, how, now)
			if err := tx.EndJob(ctx, cur.Kind, cur.Key, owner, next); err != nil {
				return err
			}
			if hook && h.Failed != nil {
				hookErr = recovered("Failed", func() error { return h.Failed(ctx, tx, cur, cause, final) })
				return hookErr
			}
			return nil
		})
	}
	err := record(true)
	if err != nil && hookErr != nil {
		// Failed failed or panicked: the attempt is recorded without it,
		// its writes rolled back, else the job, taken again when its
		// lease runs out, would fail again in Failed for good, never
		// backing off nor failing for good, and hold its lane. Whether it
		// is failed for good still follows the attempt's cause alone.
		var p *panicked
		if !errors.As(hookErr, &p) {
			hookErr = fmt.Errorf("hook Failed: %w", hookErr)
		}
		log.Error("job's Failed hook failed; the failed attempt is recorded without it", "err", hookErr, "cause", cause)
		lastErr = fmt.Errorf("%w (then %w)", cause, hookErr)
		err = record(false)
	}
	switch {
	case how == failStart && (errors.Is(err, errOtherJob) || consent.ErrorCode(err) == consent.NotFound):
		// Another runner took the job meanwhile, or another is due first:
		// the failure is not recorded, and the job is leased again later.
		return fmt.Errorf("jobs: %s %s: %w (not recorded: the job was no longer the one due)", job.Kind, job.Key, cause)
	case consent.ErrorCode(err) == consent.Conflict || consent.ErrorCode(err) == consent.NotFound:
		// Another runner holds it now, or the job was deleted meanwhile
		// (consent.Tx.DeleteLaneJobs): the lease was lost, and nothing is
		// recorded.
		log.Warn("lease lost (taken by another runner, or the job deleted) before the failure was recorded", "err", cause)
		return fmt.Errorf("%w: %w", ErrLeaseLost, err)
	case err != nil:
		return err
	case how == failStopping:
		log.Info("job interrupted by shutdown; handed back")
	case final:
		log.Error("job failed for good", "err", cause)
	default:
		log.Warn("job failed; will retry", "err", cause, "retry_at", next.RunAfter)
	}
	return nil
}

// failed returns what a job becomes after a failed attempt, and whether it
// is failed for good: cause decides, and lastErr, cause or more (a Failed
// hook's failure beside it), is its last error.
func (r *Runner) failed(h *Handler, job *consent.Job, cause, lastErr error, how failHow, now time.Time) (next *consent.Job, final bool) {
	next = &consent.Job{Payload: job.Payload, Attempts: job.Attempts, LastError: ErrorText(lastErr)}
	switch {
	case how == failStopping:
		next.Attempts, next.RunAfter, next.LastError = job.Attempts-1, now, job.LastError
	case h.Every > 0:
		// Never failed for good; the attempts count on until a run
		// succeeds, so that the backoff grows while it keeps failing.
		next.RunAfter = now.Add(min(r.backoff(h, job.Attempts), h.Every))
	case job.Attempts >= h.MaxAttempts || Permanent(cause) || h.GiveUpAfter > 0 && now.Sub(job.CreatedAt) >= h.GiveUpAfter:
		next.RunAfter, next.FailedAt, final = now, now, true
	default:
		next.RunAfter = now.Add(r.backoff(h, job.Attempts))
	}
	return next, final
}

// backoff is the wait after the given number of failed attempts.
func (r *Runner) backoff(h *Handler, attempts int) time.Duration {
	d := h.Backoff
	for i := 1; i < attempts && d < h.MaxBackoff; i++ {
		if d > h.MaxBackoff/2 {
			return h.MaxBackoff // doubling d would pass it, or overflow
		}
		d *= 2
	}
	return min(d, h.MaxBackoff)
}
