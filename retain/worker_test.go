package retain_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/internal/testwait"
	"github.com/consentkit/consentkit/retain"
	"github.com/consentkit/consentkit/wallet"
)

var ctx = context.Background()

// clock is a settable clock shared by goroutines.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// fakeConverter writes "mp4 of <first event>" and counts its calls.
type fakeConverter struct {
	mu      sync.Mutex
	calls   map[string]int
	fail    error         // when set, every call fails with it
	block   bool          // when set, calls wait for ctx to end
	started chan struct{} // receives once per call, when set
	delay   time.Duration
}

func (f *fakeConverter) Convert(ctx context.Context, events json.RawMessage, dst string) (time.Duration, error) {
	var list []struct {
		Data struct{ Session string } `json:"data"`
	}
	if err := json.Unmarshal(events, &list); err != nil || len(list) == 0 {
		return 0, fmt.Errorf("fake: bad events %s", events)
	}
	id := list[0].Data.Session
	f.mu.Lock()
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.calls[id]++
	f.mu.Unlock()
	if f.started != nil {
		f.started <- struct{}{}
	}
	if f.block {
		<-ctx.Done()
		return 0, ctx.Err()
	}
	time.Sleep(f.delay)
	if f.fail != nil {
		return 0, f.fail
	}
	return 5642 * time.Millisecond, os.WriteFile(dst, []byte("mp4 of "+id), 0o644)
}

func (f *fakeConverter) count(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[id]
}

type env struct {
	store  consent.Store
	svc    *consentkit.Service
	clock  *clock
	retain *retain.Service
	videos string
}

// setup makes company acme with n retained sessions s00…, each recording's
// first event naming its session.
func setup(t *testing.T, st consent.Store, n int) *env {
	t.Helper()
	return setupWith(t, st, n, consentkit.Config{})
}

// setupWith is setup with the service's Config cfg (its Now the env's
// clock).
func setupWith(t *testing.T, st consent.Store, n int, cfg consentkit.Config) *env {
	t.Helper()
	clk := &clock{t: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)}
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	cfg.Now = clk.Now
	svc, err := consentkit.NewService(st, cfg)
	must(svc, err)
	must(svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme"}))
	must(svc.AddProperty(ctx, consentkit.PropertyParams{ID: "web", CompanyID: "acme", Name: "Form"}))
	must(svc.TopUp(ctx, "acme", 100*wallet.Dollar, ""))
	e := &env{store: st, svc: svc, clock: clk, retain: retain.New(svc), videos: t.TempDir()}
	for i := range n {
		id := fmt.Sprintf("s%02d", i)
		must(svc.StartSession(ctx, consentkit.SessionParams{ID: id, CompanyID: "acme", PropertyID: "web"}))
		must(svc.AppendEvents(ctx, id, json.RawMessage(`[{"type":4,"data":{"session":"`+id+`"}}]`)))
		must(e.retain.Retain(ctx, "acme", "acme", id))
	}
	return e
}

func (e *env) worker(t *testing.T, conv retain.Converter, mod func(*retain.WorkerConfig)) *retain.Worker {
	t.Helper()
	cfg := retain.WorkerConfig{
		Service: e.svc, Converter: conv, Videos: retain.Dir{Root: e.videos},
		Poll: 5 * time.Millisecond, TempDir: t.TempDir(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if mod != nil {
		mod(&cfg)
	}
	w, err := retain.NewWorker(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func (e *env) session(t *testing.T, id string) *consent.Session {
	t.Helper()
	var s *consent.Session
	if err := e.store.View(ctx, func(tx consent.Tx) error {
		var err error
		s, err = tx.Session(ctx, id)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return s
}

func (e *env) job(t *testing.T, id string) (*consent.Job, error) {
	t.Helper()
	var j *consent.Job
	err := e.store.View(ctx, func(tx consent.Tx) error {
		var err error
		j, err = tx.Job(ctx, consent.JobConvert, id)
		return err
	})
	return j, err
}

// Every job is converted exactly once by several workers, each converting
// several jobs at a time, and the videos are stored with size and digest.
func TestWorkersConvertEachJobOnce(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		const sessions = 12
		e := setup(t, open(t), sessions)
		conv := &fakeConverter{delay: 3 * time.Millisecond}
		runCtx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		for i := range 3 {
			w := e.worker(t, conv, func(c *retain.WorkerConfig) { c.ID, c.Concurrency = fmt.Sprint("w", i), 2 })
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := w.Run(runCtx); err != nil {
					t.Errorf("Run: %v", err)
				}
			}()
		}
		stop := testwait.Near(t)
		for id := 0; id < sessions; {
			if s := e.session(t, fmt.Sprintf("s%02d", id)); s.VideoStatus == consent.VideoConverted {
				id++
				continue
			}
			select {
			case <-stop:
				t.Fatalf("s%02d not converted by the test's deadline", id)
			case <-time.After(5 * time.Millisecond):
			}
		}
		cancel()
		wg.Wait()
		for i := range sessions {
			id := fmt.Sprintf("s%02d", i)
			if n := conv.count(id); n != 1 {
				t.Errorf("%s converted %d times", id, n)
			}
			s := e.session(t, id)
			want := []byte("mp4 of " + id)
			got, err := os.ReadFile(s.Video.Path)
			if err != nil || string(got) != string(want) {
				t.Errorf("video of %s: %q, %v", id, got, err)
			}
			// One file, the one the row names, in the session's directory.
			files, _ := filepath.Glob(filepath.Join(e.videos, id, "*.mp4"))
			temps, _ := os.ReadDir(filepath.Join(e.videos, id, ".tmp")) // blob.Dir's temporary files
			if len(files) != 1 || files[0] != s.Video.Path || len(temps) != 0 {
				t.Errorf("%s's directory holds videos %v and %d temporary files; want %s alone", id, files, len(temps), s.Video.Path)
			}
			if s.Video.Bytes != int64(len(want)) ||
				s.Video.SHA256 != sha256.Sum256(want) || s.Video.Duration != 5642*time.Millisecond {
				t.Errorf("session %s video = %+v", id, s.Video)
			}
			if _, err := e.job(t, id); consent.ErrorCode(err) != consent.NotFound {
				t.Errorf("job of %s still there: %v", id, err)
			}
		}
		if entries, _ := os.ReadDir(e.videos); len(entries) != sessions {
			t.Errorf("video dir holds %d entries, want a directory for each of the %d sessions", len(entries), sessions)
		}
	})
}

// A worker that dies mid-job is replaced once its lease runs out, and can
// no longer touch the job.
func TestDeadWorkerIsReplaced(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e := setup(t, open(t), 1)
		lease := 2 * time.Minute
		if err := e.store.Update(ctx, func(tx consent.Tx) error {
			now := e.clock.Now()
			_, err := tx.LeaseJob(ctx, []string{consent.JobConvert}, "dead", now, now.Add(lease))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		conv := &fakeConverter{}
		w := e.worker(t, conv, func(c *retain.WorkerConfig) { c.Lease = lease })
		if worked, err := w.RunOnce(ctx); worked || err != nil {
			t.Fatalf("RunOnce while the lease runs: %v, %v; want nothing to do", worked, err)
		}
		e.clock.Add(lease + time.Second)
		if worked, err := w.RunOnce(ctx); !worked || err != nil {
			t.Fatalf("RunOnce after the lease ran out: %v, %v", worked, err)
		}
		if s := e.session(t, "s00"); s.VideoStatus != consent.VideoConverted || conv.count("s00") != 1 {
			t.Errorf("session %+v after replacement, %d conversions", s, conv.count("s00"))
		}
		err := e.store.Update(ctx, func(tx consent.Tx) error {
			return tx.EndJob(ctx, consent.JobConvert, "s00", "dead", &consent.Job{RunAfter: e.clock.Now()})
		})
		if code := consent.ErrorCode(err); code != consent.NotFound {
			t.Errorf("the dead worker's EndJob: %v, want NotFound (the job is done)", err)
		}
	})
}

// A failing converter is retried with exponential backoff and ends in
// failed, with the last error kept, after MaxAttempts.
func TestFailingConversionGivesUp(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e := setup(t, open(t), 1)
		conv := &fakeConverter{fail: errors.New("chromium crashed")}
		w := e.worker(t, conv, func(c *retain.WorkerConfig) { c.MaxAttempts, c.Backoff = 3, time.Minute })
		for attempt, wait := range []time.Duration{time.Minute, 2 * time.Minute} {
			start := e.clock.Now()
			if worked, err := w.RunOnce(ctx); !worked || err != nil {
				t.Fatalf("attempt %d: %v, %v", attempt+1, worked, err)
			}
			j, err := e.job(t, "s00")
			if err != nil || j.Attempts != attempt+1 || !j.RunAfter.Equal(start.Add(wait)) || j.LastError != "chromium crashed" || !j.FailedAt.IsZero() {
				t.Fatalf("job after attempt %d: %+v, %v", attempt+1, j, err)
			}
			if s := e.session(t, "s00"); s.VideoStatus != consent.VideoPending {
				t.Errorf("status after attempt %d: %s, want pending", attempt+1, s.VideoStatus)
			}
			if worked, _ := w.RunOnce(ctx); worked {
				t.Fatalf("the job was retried before its backoff ran out")
			}
			e.clock.Add(wait)
		}
		if worked, err := w.RunOnce(ctx); !worked || err != nil {
			t.Fatalf("attempt 3: %v, %v", worked, err)
		}
		j, err := e.job(t, "s00")
		if err != nil || j.Attempts != 3 || j.FailedAt.IsZero() || j.LastError != "chromium crashed" {
			t.Errorf("job after the last attempt: %+v, %v", j, err)
		}
		if s := e.session(t, "s00"); s.VideoStatus != consent.VideoFailed {
			t.Errorf("status %s, want failed", s.VideoStatus)
		}
		e.clock.Add(24 * time.Hour)
		if worked, _ := w.RunOnce(ctx); worked || conv.count("s00") != 3 {
			t.Errorf("a failed job was tried again (%d conversions)", conv.count("s00"))
		}
	})
}

// permanentError is a converter's error that no retry can cure.
type permanentError struct{}

func (permanentError) Error() string   { return "the recording spans 198 days" }
func (permanentError) Permanent() bool { return true }

// A permanent error fails the job at its first attempt: retrying a
// recording that can never convert would only spend the worker's time.
func TestPermanentFailureIsNotRetried(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e := setup(t, open(t), 1)
		conv := &fakeConverter{fail: fmt.Errorf("mp4: %w", permanentError{})}
		w := e.worker(t, conv, func(c *retain.WorkerConfig) { c.MaxAttempts = 5 })
		if worked, err := w.RunOnce(ctx); !worked || err != nil {
			t.Fatalf("attempt: %v, %v", worked, err)
		}
		j, err := e.job(t, "s00")
		if err != nil || j.Attempts != 1 || j.FailedAt.IsZero() || j.LastError != "mp4: the recording spans 198 days" {
			t.Errorf("job after a permanent failure: %+v, %v", j, err)
		}
		if s := e.session(t, "s00"); s.VideoStatus != consent.VideoFailed {
			t.Errorf("status %s, want failed", s.VideoStatus)
		}
		e.clock.Add(24 * time.Hour)
		if worked, _ := w.RunOnce(ctx); worked || conv.count("s00") != 1 {
			t.Errorf("a permanently failed job was tried again (%d conversions)", conv.count("s00"))
		}
	})
}

// A conversion of a session purged meanwhile (D43) neither starts nor
// fails on its row: the purged row keeps the video status it was purged
// with, and no video.failed is sent for a session that is gone.
func TestConversionOfPurgedSessionLeavesItsRow(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e := setup(t, open(t), 1)
		conv := &fakeConverter{fail: fmt.Errorf("mp4: %w", permanentError{})}
		w := e.worker(t, conv, func(c *retain.WorkerConfig) { c.MaxAttempts = 5 })
		err := e.svc.Store().Update(ctx, func(tx consent.Tx) error {
			ses, err := tx.Session(ctx, "s00")
			if err != nil {
				return err
			}
			ses.RetentionStatus = consent.RetentionExpired // as the purge leaves it
			return tx.UpdateSession(ctx, ses)
		})
		if err != nil {
			t.Fatal(err)
		}
		before := e.session(t, "s00").VideoStatus
		if worked, err := w.RunOnce(ctx); !worked || err != nil {
			t.Fatalf("attempt: %v, %v", worked, err)
		}
		if s := e.session(t, "s00"); s.VideoStatus != before {
			t.Errorf("a purged session's video status went from %s to %s", before, s.VideoStatus)
		}
	})
}

// Cancelling Run stops the worker; the job in hand is handed back at once
// without counting the attempt.
func TestWorkerStopsOnCancel(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e := setup(t, open(t), 1)
		conv := &fakeConverter{block: true, started: make(chan struct{}, 1)}
		w := e.worker(t, conv, nil)
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error)
		go func() { done <- w.Run(runCtx) }()
		<-conv.started
		if s := e.session(t, "s00"); s.VideoStatus != consent.VideoConverting {
			t.Errorf("status during conversion: %s", s.VideoStatus)
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		j, err := e.job(t, "s00")
		if err != nil || j.Attempts != 0 || j.LeaseOwner != "" || j.RunAfter.After(e.clock.Now()) {
			t.Errorf("job after shutdown: %+v, %v", j, err)
		}
		if s := e.session(t, "s00"); s.VideoStatus != consent.VideoPending {
			t.Errorf("status after shutdown: %s, want pending", s.VideoStatus)
		}
	})
}

// A worker whose lease was taken over stops converting and records nothing.
func TestLostLeaseCancelsConversion(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e := setup(t, open(t), 1)
		conv := &fakeConverter{block: true, started: make(chan struct{}, 1)}
		lease := 60 * time.Millisecond // the renewal ticker is real: every 20 ms
		w := e.worker(t, conv, func(c *retain.WorkerConfig) { c.Lease = lease })
		done := make(chan error)
		go func() { _, err := w.RunOnce(ctx); done <- err }()
		<-conv.started
		// To a worker whose clock reads an hour on, this one looks dead:
		// its lease has run out. Its renewals (every 20 ms of real time)
		// keep the lease 60 ms past its own clock's now, whenever they
		// land, so none can hold the job from the thief.
		if err := e.store.Update(ctx, func(tx consent.Tx) error {
			later := e.clock.Now().Add(time.Hour)
			_, err := tx.LeaseJob(ctx, []string{consent.JobConvert}, "thief", later, later.Add(time.Hour))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("RunOnce: %v", err)
			}
		case <-testwait.Near(t):
			t.Fatal("the conversion went on after the lease was lost")
		}
		if j, err := e.job(t, "s00"); err != nil || j.LeaseOwner != "thief" {
			t.Errorf("job %+v, %v; want it still leased by the thief", j, err)
		}
	})
}

func TestDirRejectsBadNames(t *testing.T) {
	d := retain.Dir{Root: t.TempDir()}
	src := filepath.Join(t.TempDir(), "v.mp4")
	if err := os.WriteFile(src, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"", "..", "a/b"} {
		if _, err := d.Put(ctx, id, src); err == nil {
			t.Errorf("Put(%q) succeeded", id)
		}
	}
}

// watchedStore notes every recording read inside a write transaction.
type watchedStore struct {
	consent.Store
	mu             sync.Mutex
	readsInUpdate  int
	readsElsewhere int
}

type watchedTx struct {
	consent.Tx
	s     *watchedStore
	write bool
}

func (s *watchedStore) Update(ctx context.Context, fn func(consent.Tx) error) error {
	return s.Store.Update(ctx, func(tx consent.Tx) error { return fn(watchedTx{tx, s, true}) })
}

func (s *watchedStore) View(ctx context.Context, fn func(consent.Tx) error) error {
	return s.Store.View(ctx, func(tx consent.Tx) error { return fn(watchedTx{tx, s, false}) })
}

func (t watchedTx) EachEventChunk(ctx context.Context, sessionID string, fn func([]byte) error) error {
	t.s.mu.Lock()
	if t.write {
		t.s.readsInUpdate++
	} else {
		t.s.readsElsewhere++
	}
	t.s.mu.Unlock()
	return t.Tx.EachEventChunk(ctx, sessionID, fn)
}

// The worker reads a recording (up to 64 MiB) outside the write transaction
// of its lease: on SQLite that transaction holds the one writer, and every
// charge would queue behind the read.
func TestWorkerReadsRecordingOutsideWrites(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		watched := &watchedStore{Store: open(t)}
		e := setup(t, watched, 2)
		w := e.worker(t, &fakeConverter{}, nil)
		for range 2 {
			if worked, err := w.RunOnce(ctx); !worked || err != nil {
				t.Fatalf("RunOnce: %v, %v", worked, err)
			}
		}
		if watched.readsInUpdate != 0 || watched.readsElsewhere != 2 {
			t.Errorf("recordings read %d times inside a write transaction and %d outside; want 0 and 2",
				watched.readsInUpdate, watched.readsElsewhere)
		}
		if s := e.session(t, "s01"); s.VideoStatus != consent.VideoConverted {
			t.Errorf("s01 is %s, want converted", s.VideoStatus)
		}
	})
}

// A tool's error may hold any bytes (NUL, invalid UTF-8, a character cut at
// the length limit); the failure is still recorded, on every store, with its
// text made valid.
func TestFailureWithBinaryErrorIsRecorded(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e := setup(t, open(t), 1)
		msg := "ffmpeg said \x00\x1b[31m\xff " + strings.Repeat("é", 600) // the limit falls inside an é
		w := e.worker(t, &fakeConverter{fail: errors.New(msg)}, nil)
		if worked, err := w.RunOnce(ctx); !worked || err != nil {
			t.Fatalf("RunOnce: %v, %v", worked, err)
		}
		j, err := e.job(t, "s00")
		if err != nil {
			t.Fatal(err)
		}
		if !consent.ValidText(j.LastError) || !strings.HasPrefix(j.LastError, "ffmpeg said [31m\uFFFD éé") || len(j.LastError) > 1000 {
			t.Errorf("last error %q (%d bytes)", j.LastError, len(j.LastError))
		}
		if s := e.session(t, "s00"); s.VideoStatus != consent.VideoPending {
			t.Errorf("session is %s, want pending (to be retried)", s.VideoStatus)
		}
	})
}

// attemptConverter writes a video of its own on each call, as real
// conversions (never byte for byte the same) do, and runs during, when
// set, in its first call before writing.
type attemptConverter struct {
	calls  int
	during func()
}

func (c *attemptConverter) Convert(_ context.Context, _ json.RawMessage, dst string) (time.Duration, error) {
	c.calls++
	if c.calls == 1 && c.during != nil {
		c.during()
	}
	return time.Second, os.WriteFile(dst, fmt.Appendf(nil, "mp4 of attempt %d", c.calls), 0o644)
}

// A conversion that lost its lease while another worker converted and
// recorded the session's video writes a file of its own, which it then
// discards: the video the row names is the one it describes (D21, D45).
func TestLostLeaseLeavesTheRecordedVideo(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e := setup(t, open(t), 1)
		conv := &attemptConverter{}
		b := e.worker(t, conv, func(c *retain.WorkerConfig) { c.ID, c.Lease = "B", time.Hour })
		conv.during = func() { // A stalls past its lease; B takes the job
			e.clock.Add(2 * time.Hour)
			if ok, err := b.RunOnce(ctx); !ok || err != nil {
				t.Errorf("B: %v, %v", ok, err)
			}
		}
		a := e.worker(t, conv, func(c *retain.WorkerConfig) { c.ID, c.Lease = "A", time.Hour })
		_, _ = a.RunOnce(ctx) // its commit finds the lease lost
		s := e.session(t, "s00")
		got, err := os.ReadFile(s.Video.Path)
		if err != nil || s.VideoStatus != consent.VideoConverted || consent.Digest(sha256.Sum256(got)) != s.Video.SHA256 || string(got) != "mp4 of attempt 2" {
			t.Fatalf("the row says %s %+v; its file holds %q, %v", s.VideoStatus, s.Video, got, err)
		}
		if files, _ := filepath.Glob(filepath.Join(e.videos, "s00", "*.mp4")); len(files) != 1 {
			t.Errorf("s00's videos: %v, want the recorded one alone", files)
		}
	})
}

// Certificates retained after their session take the session to their
// term (D25): a year after the session's retention, /verify/certificate
// keeps both five years from then, so the certificates never outlive the
// recording they vouch for.
func TestCertificatesRetainedLaterExtendTheSession(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e := setup(t, open(t), 1) // s00, retained now by the Retain API
		if _, err := e.svc.IssueCertificate(ctx, consentkit.CertificateParams{ID: "c1", CompanyID: "acme", PropertyID: "web", SessionID: "s00",
			Records: []consent.Record{{Text: "I agree."}}}); err != nil {
			t.Fatal(err)
		}
		first := e.session(t, "s00").ExpiresAt
		e.clock.Add(365 * 24 * time.Hour)
		res, err := e.retain.RetainCertificates(ctx, "acme", "acme", "s00")
		if err != nil {
			t.Fatal(err)
		}
		ses := e.session(t, "s00")
		if !ses.ExpiresAt.Equal(res.RetainedUntil) || !ses.ExpiresAt.After(first) {
			t.Errorf("the session kept until %v (first %v), its certificate until %v; want the certificate's", ses.ExpiresAt, first, res.RetainedUntil)
		}
		var cert *consent.Certificate
		if err := e.store.View(ctx, func(tx consent.Tx) error { cert, err = tx.Certificate(ctx, "c1"); return err }); err != nil {
			t.Fatal(err)
		}
		if !cert.ExpiresAt.Equal(ses.ExpiresAt) {
			t.Errorf("the certificate kept until %v, the session until %v", cert.ExpiresAt, ses.ExpiresAt)
		}
	})
}
