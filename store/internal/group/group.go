// Package group runs concurrent store transactions together in one
// database transaction (group commit), so that one commit — one fsync —
// makes many callers' work durable.
//
// Each caller's function runs in the caller's own goroutine, in turn,
// inside a savepoint of its own: a function that fails rolls back to its
// savepoint, undoing only its own work, and its caller gets its error at
// once. A function that succeeds waits for the shared commit and gets the
// commit's outcome, so no caller hears of success before its work is
// durable. A batch whose transaction breaks (a savepoint that cannot be
// released, a storage failure) is rolled back whole, and the callers whose
// work it held run their functions again in a later batch: store
// functions may run more than once (consent.Store's contract).
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
	turn  chan turn[T] // runner → caller: run now
	done  chan outcome // caller → runner: how the function ended
	after chan error   // runner → caller: the batch's end
}

type turn[T any] struct {
	tx   T
	solo bool  // the only member: no savepoint, the runner rolls back on failure
	skip error // do not run: return this (errAgain: join another batch)
}

type outcome struct {
	kept   bool  // the function succeeded and its work waits for the commit
	broken error // the transaction can no longer be used
}

type batch[T any] struct {
	members []*member[T]
	full    chan struct{} // closed when MaxBatch members joined
}

// errAgain tells a member that its batch ended without its function
// having run to a kept end; it joins another batch.
var errAgain = errors.New("group: run again")

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
		if err != errAgain {
			return err
		}
	}
}

func (g *Group[T]) do(ctx context.Context, fn func(T) error) error {
	m := &member[T]{turn: make(chan turn[T], 1), done: make(chan outcome, 1), after: make(chan error, 1)}
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
		// The caller who opened the batch runs it, its own function
		// included, in its goroutine: a lone call makes no hand-off.
		return g.lead(ctx, b, m, fn)
	}

	var t turn[T]
	select {
	case t = <-m.turn:
	case <-ctx.Done():
		if m.state.CompareAndSwap(waiting, gone) {
			return ctx.Err()
		}
		t = <-m.turn // the leader took this member first: its turn has come
	}
	if t.skip != nil {
		return t.skip
	}
	fnErr, broken, panicked, p := g.runMember(ctx, t, fn)
	m.done <- outcome{kept: fnErr == nil && broken == nil, broken: broken}
	switch {
	case panicked:
		panic(p)
	case fnErr != nil:
		return fnErr
	case broken != nil:
		// This member's own statement broke the batch: it fails, and the
		// others run again without it.
		return fmt.Errorf("group: the transaction broke: %w", broken)
	}
	return <-m.after
}

// runMember runs fn in the member's savepoint (none when it is alone) and
// reports fn's error, an error that broke the transaction, and a panic.
func (g *Group[T]) runMember(ctx context.Context, t turn[T], fn func(T) error) (fnErr, broken error, panicked bool, p any) {
	bg := context.WithoutCancel(ctx)
	if !t.solo {
		if err := g.ops.Savepoint(bg, t.tx); err != nil {
			return nil, err, false, nil
		}
	}
	func() {
		defer func() {
			if r := recover(); r != nil {
				panicked, p = true, r
				fnErr = fmt.Errorf("group: panic: %v", r)
			}
		}()
		fnErr = fn(t.tx)
		if fnErr == nil {
			// A caller who gave up while its function ran gets nothing
			// committed, as with a transaction of its own.
			fnErr = ctx.Err()
		}
	}()
	if t.solo {
		return fnErr, nil, panicked, p
	}
	if fnErr != nil {
		if err := g.ops.RollbackTo(bg, t.tx); err != nil {
			return fnErr, err, panicked, p
		}
		return fnErr, nil, panicked, p
	}
	if err := g.ops.Release(bg, t.tx); err != nil {
		return nil, err, false, nil
	}
	return nil, nil, false, nil
}

// lead waits for a runner and runs b, whose first member is self, the
// caller. A caller who gives up while waiting hands the batch to a
// goroutine that runs the others.
func (g *Group[T]) lead(ctx context.Context, b *batch[T], self *member[T], fn func(T) error) error {
	select {
	case g.runners <- struct{}{}:
	case <-ctx.Done():
		self.state.Store(gone) // no one else reads it before the batch runs
		go func() {
			g.runners <- struct{}{}
			g.runBatch(ctx, b, self, nil)
		}()
		return ctx.Err()
	}
	return g.runBatch(ctx, b, self, fn)
}

// runBatch closes b to new members and runs them in one transaction, with
// a runner held (it lets go of it); self's function runs in place. It
// returns self's outcome after every other member has its own. The batch
// runs to its end even when self's ctx ends: the others' work is in it.
func (g *Group[T]) runBatch(ctx context.Context, b *batch[T], self *member[T], fn func(T) error) error {
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

	bg := context.Background()
	tx, err := g.ops.Begin(bg)
	if err != nil {
		// No function ran: each caller gets the failure to begin.
		skip(members[1:], err)
		return err
	}
	g.batches.Add(1)
	solo := len(members) == 1
	var (
		kept     []*member[T]
		broken   bool
		failed   bool // the solo member's function failed
		selfErr  = ctx.Err()
		panicked bool
		p        any
	)
	for i, m := range members {
		if !m.state.CompareAndSwap(waiting, running) {
			continue // its caller gave up
		}
		g.members.Add(1)
		var out outcome
		if m == self {
			var fnErr, brk error
			fnErr, brk, panicked, p = g.runMember(ctx, turn[T]{tx: tx, solo: solo}, fn)
			out = outcome{kept: fnErr == nil && brk == nil, broken: brk}
			switch {
			case fnErr != nil:
				selfErr = fnErr
			case brk != nil:
				selfErr = fmt.Errorf("group: the transaction broke: %w", brk)
			}
		} else {
			m.turn <- turn[T]{tx: tx, solo: solo}
			out = <-m.done
			if out.broken != nil {
				m.after <- errAgain // not read: it returns its own error
			}
		}
		switch {
		case out.broken != nil:
			broken = true
			skip(members[i+1:], errAgain)
		case out.kept:
			kept = append(kept, m)
		case solo:
			failed = true
		}
		if broken {
			break
		}
	}
	if broken || failed || len(kept) == 0 {
		g.ops.Rollback(bg, tx)
		for _, m := range kept {
			if m == self {
				selfErr = errAgain
			} else {
				m.after <- errAgain
			}
		}
	} else {
		err = g.ops.Commit(bg, tx)
		for _, m := range kept {
			if m == self {
				selfErr = err
			} else {
				m.after <- err
			}
		}
	}
	if panicked {
		panic(p)
	}
	return selfErr
}

// skip tells the members that still wait not to run, with err.
func skip[T any](members []*member[T], err error) {
	for _, m := range members {
		if m.state.CompareAndSwap(waiting, running) {
			m.turn <- turn[T]{skip: err}
		}
	}
}
