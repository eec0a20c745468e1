package group

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/consentkit/consentkit/internal/testwait"
)

// db is a database of named values with transactions and one level of
// savepoints, enough to watch what a Group commits.
type db struct {
	mu        sync.Mutex
	committed map[string]int
	commits   int
	failBegin error
	breakNext map[string]bool // a Release after the write of this key fails
	// dup is a key whose write is found taken only when it is written
	// behind: at Commit, or at the Release after the write of blameAt.
	dup, blameAt string
}

type tx struct {
	db       *db
	writes   map[string]int
	sp       map[string]int // writes at the savepoint
	inSP     bool
	lastKey  string
	finished bool
	calls    int            // savepoints taken: the running member's index + 1
	writer   map[string]int // the member index of each write
}

// member is the index of the member running in t.
func (t *tx) member() int { return max(t.calls-1, 0) }

func newDB() *db { return &db{committed: map[string]int{}, breakNext: map[string]bool{}} }

func (d *db) ops() Ops[*tx] {
	return Ops[*tx]{
		Begin: func(context.Context) (*tx, error) {
			d.mu.Lock()
			defer d.mu.Unlock()
			if d.failBegin != nil {
				return nil, d.failBegin
			}
			return &tx{db: d, writes: map[string]int{}, writer: map[string]int{}}, nil
		},
		Commit: func(_ context.Context, t *tx) error {
			if t.inSP {
				return errors.New("commit inside a savepoint")
			}
			if i, ok := t.writer[t.db.dup]; ok && t.db.dup != "" {
				if _, ok := t.writes[t.db.dup]; ok {
					return &MemberError{Index: i, Err: errTaken}
				}
			}
			d.mu.Lock()
			defer d.mu.Unlock()
			for k, v := range t.writes {
				d.committed[k] = v
			}
			d.commits++
			t.finished = true
			return nil
		},
		Rollback: func(context.Context, *tx) error { return nil },
		Savepoint: func(_ context.Context, t *tx) error {
			if t.inSP {
				return errors.New("savepoint inside a savepoint")
			}
			t.sp, t.inSP = maps(t.writes), true
			t.calls++
			return nil
		},
		Release: func(_ context.Context, t *tx) error {
			d.mu.Lock()
			bad := d.breakNext[t.lastKey]
			delete(d.breakNext, t.lastKey)
			d.mu.Unlock()
			if bad {
				return errors.New("disk I/O error")
			}
			if i, ok := t.writer[t.db.dup]; ok && t.lastKey == t.db.blameAt && t.db.blameAt != "" {
				return &MemberError{Index: i, Err: errTaken}
			}
			t.inSP = false
			return nil
		},
		RollbackTo: func(_ context.Context, t *tx) error {
			t.writes, t.inSP = t.sp, false
			return nil
		},
	}
}

func maps(m map[string]int) map[string]int {
	c := make(map[string]int, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func (d *db) get(k string) (int, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	v, ok := d.committed[k]
	return v, ok
}

// write is a member function: it writes key and fails with err.
func write(key string, err error) func(*tx) error {
	return func(t *tx) error {
		t.writes[key] = len(key)
		t.lastKey = key
		t.writer[key] = t.member()
		return err
	}
}

// hold occupies g's one runner until release is called, so that callers
// who arrive meanwhile wait together in the open batch: a test decides who
// shares a batch, and in what order, without racing a timer (Delay) or the
// scheduler.
func hold[T any](t *testing.T, g *Group[T]) (release func()) {
	t.Helper()
	started, held := make(chan struct{}), make(chan struct{})
	go func() {
		// Its outcome is not under test, and may come after the test's end.
		_ = g.Do(context.Background(), func(T) error {
			close(started)
			<-held
			return nil
		})
	}()
	select {
	case <-started: // its batch is closed: later callers open another
	case <-testwait.Near(t):
		t.Fatal("the holding call never ran")
	}
	return sync.OnceFunc(func() { close(held) })
}

// join starts call in a goroutine of wg and returns once the call has
// joined g's open batch, whose size is then want (0: the call filled it,
// and it closed).
func join[T any](t *testing.T, g *Group[T], wg *sync.WaitGroup, want int, call func()) {
	t.Helper()
	wg.Go(call)
	stop := testwait.Near(t)
	for {
		g.mu.Lock()
		n := 0
		if g.open != nil {
			n = len(g.open.members)
		}
		g.mu.Unlock()
		if n == want {
			return
		}
		select {
		case <-stop:
			t.Fatalf("the open batch holds %d callers; want %d", n, want)
		case <-time.After(100 * time.Microsecond):
		}
	}
}

// Concurrent callers share commits; each returns only once its write is
// committed; a failing caller's write is undone and the others' kept.
// They arrive while the runner is busy, as under load: every batch fills.
func TestBatchesShareCommits(t *testing.T) {
	d := newDB()
	const maxBatch = 8
	g := New(d.ops(), Config{MaxBatch: maxBatch, Runners: 1, Delay: 20 * time.Millisecond})
	release := hold(t, g)
	defer release()
	boom := errors.New("refused")
	var wg sync.WaitGroup
	errs := make([]error, 40)
	for i := range errs {
		join(t, g, &wg, (i+1)%maxBatch, func() {
			var fail error
			if i%5 == 0 {
				fail = boom
			}
			key := fmt.Sprint("k", i)
			errs[i] = g.Do(context.Background(), write(key, fail))
			if _, ok := d.get(key); errs[i] == nil && !ok {
				t.Errorf("%s: Do returned before its write was committed", key)
			}
		})
	}
	release()
	wg.Wait()
	for i, err := range errs {
		_, ok := d.get(fmt.Sprint("k", i))
		if i%5 == 0 {
			if !errors.Is(err, boom) || ok {
				t.Errorf("k%d: err %v, committed %v; want its own error and nothing committed", i, err, ok)
			}
		} else if err != nil || !ok {
			t.Errorf("k%d: err %v, committed %v; want committed", i, err, ok)
		}
	}
	// The holding call is a batch, a member and a commit of its own.
	batches, members := g.Stats()
	batches, members, commits := batches-1, members-1, d.commits-1
	if commits >= 32 || batches >= 40 || members != 40 {
		t.Errorf("%d commits, %d batches, %d members for 40 callers: no grouping", commits, batches, members)
	}
	t.Logf("%d commits, %d batches for 40 callers", commits, batches)
}

// writeInOrder writes each key from a caller of its own, the callers
// joining one batch in the order of keys, and returns each one's error and
// how many times each key's function ran.
func writeInOrder(t *testing.T, d *db, keys []string) ([]error, map[string]int) {
	t.Helper()
	g := New(d.ops(), Config{MaxBatch: 10, Runners: 1, Delay: 50 * time.Millisecond})
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		runs = map[string]int{}
		errs = make([]error, len(keys))
	)
	release := hold(t, g)
	defer release()
	for i, k := range keys {
		join(t, g, &wg, i+1, func() {
			errs[i] = g.Do(context.Background(), func(t *tx) error {
				mu.Lock()
				runs[k]++
				mu.Unlock()
				return write(k, nil)(t)
			})
		})
	}
	release()
	wg.Wait()
	return errs, runs
}

// A batch whose transaction breaks is rolled back: the caller whose
// statement broke it fails, and the others run again and commit once.
func TestBrokenBatchRunsOthersAgain(t *testing.T) {
	d := newDB()
	d.breakNext["bad"] = true
	keys := []string{"a", "b", "bad", "c", "d"}
	errs, runs := writeInOrder(t, d, keys)
	for i, k := range keys {
		v, ok := d.get(k)
		if k == "bad" {
			if errs[i] == nil || ok {
				t.Errorf("bad: err %v, committed %v; want an error and nothing", errs[i], ok)
			}
			continue
		}
		if errs[i] != nil || !ok || v != len(k) {
			t.Errorf("%s: err %v, committed %v %d", k, errs[i], ok, v)
		}
	}
	if runs["a"] < 2 || runs["d"] < 1 {
		t.Errorf("runs %v: a should have run again after the batch broke", runs)
	}
}

// A caller that gives up before its turn never runs; one whose turn came
// runs to its end.
func TestCancelledCallerDoesNotRun(t *testing.T) {
	d := newDB()
	g := New(d.ops(), Config{MaxBatch: 4, Runners: 1})
	hold := make(chan struct{})
	started := make(chan struct{})
	go func() {
		// It occupies the runner; its outcome is not under test.
		_ = g.Do(context.Background(), func(t *tx) error {
			close(started)
			<-hold
			return write("first", nil)(t)
		})
	}()
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	ran := false
	done := make(chan error)
	var wg sync.WaitGroup
	join(t, g, &wg, 1, func() { done <- g.Do(ctx, func(t *tx) error { ran = true; return write("late", nil)(t) }) })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Do: %v", err)
	}
	close(hold)
	if err := g.Do(context.Background(), write("after", nil)); err != nil {
		t.Fatal(err)
	}
	if _, ok := d.get("late"); ran || ok {
		t.Errorf("a cancelled caller's function ran (%v) or committed (%v)", ran, ok)
	}
	for _, k := range []string{"first", "after"} {
		if _, ok := d.get(k); !ok {
			t.Errorf("%s not committed", k)
		}
	}
}

// A failure to begin reaches every caller of the batch; nothing ran.
func TestBeginFails(t *testing.T) {
	d := newDB()
	g := New(d.ops(), Config{MaxBatch: 4, Runners: 1, Delay: 20 * time.Millisecond})
	release := hold(t, g) // its transaction began before the failures
	defer release()
	refused := errors.New("connection refused")
	d.mu.Lock()
	d.failBegin = refused
	d.mu.Unlock()
	var wg sync.WaitGroup
	for i := range 4 {
		join(t, g, &wg, (i+1)%4, func() {
			ran := false
			err := g.Do(context.Background(), func(t *tx) error { ran = true; return nil })
			if !errors.Is(err, refused) || ran {
				t.Errorf("caller %d: err %v, ran %v", i, err, ran)
			}
		})
	}
	release()
	wg.Wait()
	if batches, members := g.Stats(); batches != 1 || members != 1 {
		t.Errorf("%d batches ran %d functions; want only the holding call's", batches, members)
	}
}

// A panic reaches its own caller; the batch goes on without its work.
func TestPanicStaysWithItsCaller(t *testing.T) {
	d := newDB()
	g := New(d.ops(), Config{MaxBatch: 3, Runners: 1, Delay: 50 * time.Millisecond})
	release := hold(t, g)
	defer release()
	var wg sync.WaitGroup
	var recovered any
	join(t, g, &wg, 1, func() {
		defer func() { recovered = recover() }()
		_ = g.Do(context.Background(), func(t *tx) error { t.writes["p"] = 1; panic("bug") }) // panics: recovered above
	})
	var errs [2]error
	for i := range 2 {
		join(t, g, &wg, (i+2)%3, func() {
			errs[i] = g.Do(context.Background(), write(fmt.Sprint("ok", i), nil))
		})
	}
	release()
	wg.Wait()
	if recovered != "bug" {
		t.Errorf("recovered %v, want the panic", recovered)
	}
	if _, ok := d.get("p"); ok {
		t.Error("the panicking function's write was committed")
	}
	for i, err := range errs {
		if _, ok := d.get(fmt.Sprint("ok", i)); err != nil || !ok {
			t.Errorf("ok%d: %v %v", i, err, ok)
		}
	}
}

// MaxBatch bounds a batch.
func TestMaxBatch(t *testing.T) {
	d := newDB()
	var sizes []int
	var mu sync.Mutex
	ops := d.ops()
	commit := ops.Commit
	ops.Commit = func(ctx context.Context, t *tx) error {
		mu.Lock()
		sizes = append(sizes, len(t.writes))
		mu.Unlock()
		return commit(ctx, t)
	}
	g := New(ops, Config{MaxBatch: 3, Runners: 1, Delay: time.Second})
	var wg sync.WaitGroup
	for i := range 9 {
		wg.Go(func() {
			if err := g.Do(context.Background(), write(fmt.Sprint("k", i), nil)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if slices.Max(sizes) > 3 {
		t.Errorf("batch sizes %v, want at most 3", sizes)
	}
}

var errTaken = errors.New("taken")

// A conflict found when the batch writes behind — at its commit, or at a
// later member's release — is the error of the member whose work it was;
// the others run again and commit.
func TestMemberErrorBlamesItsMember(t *testing.T) {
	for _, blameAt := range []string{"", "c"} {
		t.Run("at "+map[string]string{"": "commit", "c": "a later release"}[blameAt], func(t *testing.T) {
			d := newDB()
			d.dup, d.blameAt = "dup", blameAt
			keys := []string{"a", "dup", "b", "c", "d"}
			errs, runs := writeInOrder(t, d, keys)
			for i, k := range keys {
				_, ok := d.get(k)
				if k == "dup" {
					if !errors.Is(errs[i], errTaken) || ok {
						t.Errorf("dup: err %v, committed %v; want taken and nothing", errs[i], ok)
					}
					continue
				}
				if errs[i] != nil || !ok {
					t.Errorf("%s: err %v, committed %v; want committed", k, errs[i], ok)
				}
			}
			if runs["a"] < 2 || runs["dup"] != 1 {
				t.Errorf("runs %v: a should have run again, dup once", runs)
			}
		})
	}
}

// A member that fails after a kept member may fail for that member's work
// (a balance it spent, an id it took): its error stands if the batch
// commits, and when the batch is rolled back instead it runs again, where
// the work it saw is gone. It never hears an error that rests on work no
// commit kept.
func TestFailureAfterKeptWaitsForTheOutcome(t *testing.T) {
	errSeen := errors.New("dup is there")
	for _, rolledBack := range []bool{true, false} {
		t.Run(fmt.Sprintf("rolled back %v", rolledBack), func(t *testing.T) {
			d := newDB()
			if rolledBack {
				d.dup = "dup" // found taken at the commit: dup fails, the batch is rolled back
			}
			g := New(d.ops(), Config{MaxBatch: 10, Runners: 1})
			var wg sync.WaitGroup
			var dupErr, xErr error
			xRuns := 0
			release := hold(t, g)
			join(t, g, &wg, 1, func() { dupErr = g.Do(context.Background(), write("dup", nil)) })
			join(t, g, &wg, 2, func() {
				xErr = g.Do(context.Background(), func(t *tx) error {
					xRuns++
					if _, ok := t.writes["dup"]; ok {
						return errSeen
					}
					return write("x", nil)(t)
				})
			})
			release()
			wg.Wait()
			_, xKept := d.get("x")
			switch {
			case rolledBack && (!errors.Is(dupErr, errTaken) || xErr != nil || !xKept || xRuns != 2):
				t.Errorf("dup: %v; x: %v, kept %v, %d runs; want dup taken, x run again and kept", dupErr, xErr, xKept, xRuns)
			case !rolledBack && (dupErr != nil || !errors.Is(xErr, errSeen) || xKept || xRuns != 1):
				t.Errorf("dup: %v; x: %v, kept %v, %d runs; want dup kept, x refused for it once", dupErr, xErr, xKept, xRuns)
			}
		})
	}
}
