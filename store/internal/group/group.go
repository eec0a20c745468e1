// Package group runs concurrent store transactions together in one
// database transaction (group commit), so that one commit — one fsync —
// makes many callers' work durable.
//
// The batch's leader — the caller who opened it — runs every member's
// function in turn in its own goroutine, each inside a savepoint of its own,
// while the other callers wait: the transaction is never handed from
// goroutine to goroutine, so a busy scheduler cannot stretch the time the
// store's one writer is held (on SQLite the batch is the critical section
// of every write). A function that fails rolls back to its savepoint,
// undoing only its own work, and its caller gets its error — at once, or,
// when a function before it in the batch was kept (its failure may rest on
// that work: a balance spent, an id taken), with the batch's outcome: the
// error if the batch commits, else a run in another batch; a
// function that panics has its panic raised again in its caller's
// goroutine. A function that succeeds waits for the shared commit and gets
// the commit's outcome, so no caller hears of success before its work is
// durable. A function must therefore not depend on the goroutine it runs
// in (a test's t.FailNow, for one, belongs in the test's goroutine). A
// batch whose transaction breaks (a savepoint that cannot be released, a
// storage failure) is rolled back whole, and the callers whose work it held
// run their functions again in a later batch: store functions may run more
// than once (consent.Store's contract). A store that writes some of its
// calls' rows behind, at the commit, and finds there that one call's row
// cannot be written reports it with a MemberError: that call fails, and
// the others run again.
//
// A batch forms while the previous ones run: a caller who finds no open
// batch opens one and waits for a free runner; callers arriving meanwhile
// join it, up to MaxBatch. An idle store therefore adds no delay, and a
// busy one commits in bigger batches. Delay, when set, holds a batch open
// that long for more callers even when a runner is free.
package group

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Ops are the statements a Group needs from a store's driver. Begin and
// Commit run on a context of their own: no caller's cancellation may end
// a transaction that holds other callers' work.
type Ops[T any] struct {
	Begin      func(ctx context.Context) (T, error)
	Commit     func(ctx context.Context, tx T) error
	Rollback   func(ctx context.Context, tx T) error
	Savepoint  func(ctx context.Context, tx T) error
	Release    func(ctx context.Context, tx T) error
	RollbackTo func(ctx context.Context, tx T) error // and release it
}

// Config shapes batches.
type Config struct {
	MaxBatch int           // callers per batch, at least 1
	Delay    time.Duration // how long a batch stays open for more callers once a runner is free
	Runners  int           // batches running at once, at least 1
}

// Group runs functions in batches. Its zero value is not usable: use New.
type Group[T any] struct {
	ops     Ops[T]
	cfg     Config
	runners chan struct{}

	mu   sync.Mutex
	open *batch[T] // the batch that callers join, nil when none is open

	batches, members atomic.Int64
}

// New returns a Group.
func New[T any](ops Ops[T], cfg Config) *Group[T] {
	cfg.MaxBatch = max(cfg.MaxBatch, 1)
	cfg.Runners = max(cfg.Runners, 1)
	return &Group[T]{ops: ops, cfg: cfg, runners: make(chan struct{}, cfg.Runners)}
}

// Stats returns how many batches have run and how many functions they ran
// in all (a function run again counts again).
func (g *Group[T]) Stats() (batches, members int64) {
	return g.batches.Load(), g.members.Load()
}

// A member's state: the runner and a caller who gives up race for it.
const (
	waiting int32 = iota
	running
	gone
)

type member[T any] struct {
	state atomic.Int32
	ctx   context.Context
	fn    func(T) error
	res   chan result // runner → caller: how the call ended
}

type turn[T any] struct {
	tx   T
	solo bool // the only member: no savepoint, the runner rolls back on failure
}

// result ends a member's call: err is what Do returns (errAgain: join
// another batch), unless the function panicked, when p is raised again in
// the caller's goroutine.
type result struct {
	err      error
	panicked bool
	p        any
}

type batch[T any] struct {
	members []*member[T]
	full    chan struct{} // closed when MaxBatch members joined
}

// errAgain tells a member that its batch ended without its function
// having run to a kept end; it joins another batch.
var errAgain = errors.New("group: run again")

// MemberError is an error of Commit, or one that broke the batch, that the
// work of one member caused and that was found only after its function had
// returned (a store that writes behind finds a conflict when it writes):
// Index counts the members whose functions ran in the batch, from 0, in the
// order they ran (with Savepoint, when the batch has more than one). That
// member's call gets Err; the batch is rolled back, and the other members
// whose work it held run again.
type MemberError struct {
	Index int
	Err   error
}

func (e *MemberError) Error() string { return e.Err.Error() }
func (e *MemberError) Unwrap() error { return e.Err }

// Do runs fn in a batch's transaction and returns when fn's outcome is
// settled: fn's own error when it failed (its work undone, no one else's),
// otherwise the commit's error. ctx ends the wait for a turn, and when it
// has ended by the time fn returns, fn's work is undone and Do returns
// ctx's error. The statements fn makes must not be interrupted by ctx (an
// interrupted statement can abort the shared transaction): the store gives
// fn a transaction whose statements, once started, ignore cancellation.
func (g *Group[T]) Do(ctx context.Context, fn func(T) error) error {
	for {
		err := g.do(ctx, fn)
		if !errors.Is(err, errAgain) {
			return err
		}
	}
}

func (g *Group[T]) do(ctx context.Context, fn func(T) error) error {
	m := &member[T]{ctx: ctx, fn: fn, res: make(chan result, 1)}
	g.mu.Lock()
	b := g.open
	lead := b == nil
	if lead {
		b = &batch[T]{full: make(chan struct{})}
		g.open = b
	}
	b.members = append(b.members, m)
	if len(b.members) >= g.cfg.MaxBatch {
		g.open = nil
		close(b.full)
	}
	g.mu.Unlock()
	if lead {
		return g.lead(ctx, b, m)
	}

	var r result
	select {
	case r = <-m.res:
	case <-ctx.Done():
		if m.state.CompareAndSwap(waiting, gone) {
			return ctx.Err()
		}
		r = <-m.res // the leader took this member first: it runs to its end
	}
	if r.panicked {
		panic(r.p)
	}
	return r.err
}

// runMember runs fn in the member's savepoint (none when it is alone) and
// reports fn's outcome (its error, or its panic) and an error that broke
// the transaction.
func (g *Group[T]) runMember(ctx context.Context, t turn[T], fn func(T) error) (r result, broken error) {
	bg := context.WithoutCancel(ctx)
	if !t.solo {
		if err := g.ops.Savepoint(bg, t.tx); err != nil {
			return result{}, err
		}
	}
	func() {
		defer func() {
			if p := recover(); p != nil {
				r = result{err: fmt.Errorf("group: panic: %v", p), panicked: true, p: p}
			}
		}()
		r.err = fn(t.tx)
		if r.err == nil {
			// A caller who gave up while its function ran gets nothing
			// committed, as with a transaction of its own.
			r.err = ctx.Err()
		}
	}()
	if t.solo {
		return r, nil
	}
	if r.err != nil {
		return r, g.ops.RollbackTo(bg, t.tx)
	}
	return result{}, g.ops.Release(bg, t.tx)
}

// lead waits for a runner and runs b, whose first member is self, the
// caller. A caller who gives up while waiting hands the batch to a
// goroutine that runs the others.
func (g *Group[T]) lead(ctx context.Context, b *batch[T], self *member[T]) error {
	select {
	case g.runners <- struct{}{}:
	case <-ctx.Done():
		self.state.Store(gone) // no one else reads it before the batch runs
		go func() {
			g.runners <- struct{}{}
			g.runBatch(ctx, b, self)
		}()
		return ctx.Err()
	}
	r := g.runBatch(ctx, b, self)
	if r.panicked {
		panic(r.p)
	}
	return r.err
}

// runBatch closes b to new members and runs their functions in one
// transaction, in this goroutine, with a runner held (it lets go of it).
// It returns self's result after every other member has its own. The batch
// runs to its end even when self's ctx ends: the others' work is in it.
func (g *Group[T]) runBatch(ctx context.Context, b *batch[T], self *member[T]) result {
	defer func() { <-g.runners }()
	if g.cfg.Delay > 0 {
		t := time.NewTimer(g.cfg.Delay)
		select {
		case <-b.full:
		case <-t.C:
		}
		t.Stop()
	}
	g.mu.Lock()
	if g.open == b {
		g.open = nil
	}
	members := b.members
	g.mu.Unlock()
	if ctx.Err() != nil {
		self.state.CompareAndSwap(waiting, gone) // it gave up before its turn
	}
	// self's result is returned, the others' are sent.
	var selfRes result
	settle := func(m *member[T], r result) {
		if m == self {
			selfRes = r
		} else {
			m.res <- r
		}
	}

	bg := context.Background()
	tx, err := g.ops.Begin(bg)
	if err != nil {
		// No function ran: each caller gets the failure to begin.
		skip(members[1:], err)
		return result{err: err}
	}
	g.batches.Add(1)
	solo := len(members) == 1
	var (
		kept   []*member[T]
		held   []heldFailure[T] // failed after a kept member: answered with the batch's outcome
		broken bool
		failed bool // the solo member's function failed
	)
	selfRes = result{err: ctx.Err()} // self gave up before its turn, unless it runs
	var (
		ran     []*member[T] // whose functions ran, in order (MemberError's Index)
		culprit *member[T]   // a MemberError's member, and its error
		blame   error
	)
	blamed := func(err error) bool {
		var me *MemberError
		if !errors.As(err, &me) || me.Index < 0 || me.Index >= len(ran) {
			return false
		}
		culprit, blame = ran[me.Index], me.Err
		return true
	}
	for i, m := range members {
		if !m.state.CompareAndSwap(waiting, running) {
			continue // its caller gave up
		}
		g.members.Add(1)
		ran = append(ran, m)
		r, brk := g.runMember(m.ctx, turn[T]{tx: tx, solo: solo}, m.fn)
		switch {
		case brk != nil && blamed(brk) && culprit != m:
			// An earlier member's work broke the batch: this one runs
			// again, as do the others.
			broken = true
			if r.panicked {
				settle(m, r)
			} else {
				settle(m, result{err: errAgain})
			}
			skip(members[i+1:], errAgain)
		case brk != nil:
			// This member's own statement broke the batch: it fails,
			// and the others run again in another batch.
			broken = true
			switch {
			case culprit == m:
				r.err, culprit = blame, nil
			case r.err == nil: // else undoing fn's work broke it: fn's error stands
				r.err = fmt.Errorf("group: the transaction broke: %w", brk)
			}
			settle(m, r)
			skip(members[i+1:], errAgain)
		case r.err != nil && len(kept) > 0 && !r.panicked:
			// It may have failed for a kept member's work (the balance
			// it spent, the id it took), which is real only if the batch
			// commits: its answer waits for the batch's outcome.
			held = append(held, heldFailure[T]{m, r})
		case r.err != nil:
			failed = failed || solo
			settle(m, r)
		default:
			kept = append(kept, m)
		}
		if broken {
			break
		}
	}
	err = errAgain
	if broken || failed || len(kept) == 0 {
		_ = g.ops.Rollback(bg, tx) // each member is told its own outcome, or to run again
	} else if err = g.ops.Commit(bg, tx); blamed(err) {
		err = errAgain // Commit rolled back: the others run again
	}
	for _, m := range kept {
		if m == culprit {
			settle(m, result{err: blame})
		} else {
			settle(m, result{err: err})
		}
	}
	for _, h := range held {
		if err != nil { // the work it saw was not kept: it runs again
			h.r = result{err: errAgain}
		}
		settle(h.m, h.r)
	}
	return selfRes
}

// heldFailure is a member whose function failed after a kept member's,
// and its result.
type heldFailure[T any] struct {
	m *member[T]
	r result
}

// skip ends, with err, the calls of members that still wait, none of them
// the leader's (members[0]), without running their functions.
func skip[T any](members []*member[T], err error) {
	for _, m := range members {
		if m.state.CompareAndSwap(waiting, running) {
			m.res <- result{err: err}
		}
	}
}
