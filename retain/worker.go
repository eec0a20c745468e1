package retain

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/consentkit/consentkit/consent"
)

// WorkerConfig configures a Worker. Service, Converter and Videos are
// required; zero values of the rest mean their defaults. The store and the
// clock are the Service's.
type WorkerConfig struct {
	Service   *consent.Service
	Converter Converter
	Videos    VideoStore
	// ID names this worker in leases; default host-pid-random. Every
	// worker sharing a store needs its own.
	ID string
	// Concurrency is how many jobs this worker converts at once: default 1.
	Concurrency int
	// Lease is how long a job is held without a sign of life: default 2
	// minutes. The worker renews it every Lease/3 while converting; a
	// crashed worker's job is taken again once it runs out.
	Lease time.Duration
	// Poll is how often an idle worker looks for jobs: default 2 s.
	Poll time.Duration
	// MaxAttempts is how many conversions are tried before a job fails for
	// good: default 5.
	MaxAttempts int
	// Backoff is the wait after the first failed attempt, doubled after
	// each further one, up to MaxBackoff: defaults 30 s and 1 h.
	Backoff, MaxBackoff time.Duration
	// TempDir holds each job's working directory: default os.TempDir().
	TempDir string
	Logger  *slog.Logger // default slog.Default()
}

// Worker converts retained recordings to video (D21): it leases pending jobs,
// marks their sessions converting, runs the Converter, stores the MP4 and
// marks them converted, or retries with exponential backoff and finally
// marks them failed with the last error kept. Workers on many machines may
// share one store: a job's lease keeps others off it.
type Worker struct {
	cfg   WorkerConfig
	store consent.Store
}

// NewWorker checks cfg and returns a Worker.
func NewWorker(cfg WorkerConfig) (*Worker, error) {
	if cfg.Service == nil || cfg.Converter == nil || cfg.Videos == nil {
		return nil, errors.New("retain: WorkerConfig needs Service, Converter and Videos")
	}
	if cfg.Concurrency < 0 || cfg.Lease < 0 || cfg.Poll < 0 || cfg.MaxAttempts < 0 || cfg.Backoff < 0 || cfg.MaxBackoff < 0 {
		return nil, errors.New("retain: WorkerConfig values must not be negative (zero means the default)")
	}
	if cfg.ID == "" {
		host, _ := os.Hostname()
		var b [4]byte
		rand.Read(b[:])
		cfg.ID = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	}
	defaults := []struct {
		v   *time.Duration
		def time.Duration
	}{{&cfg.Lease, 2 * time.Minute}, {&cfg.Poll, 2 * time.Second}, {&cfg.Backoff, 30 * time.Second}, {&cfg.MaxBackoff, time.Hour}}
	for _, d := range defaults {
		if *d.v <= 0 {
			*d.v = d.def
		}
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 1
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 5
	}
	if cfg.TempDir == "" {
		cfg.TempDir = os.TempDir()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Worker{cfg: cfg, store: cfg.Service.Store()}, nil
}

// Run converts jobs until ctx is done, then returns nil once the jobs in
// hand are given back. Other errors are logged and retried, not returned.
func (w *Worker) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for i := range w.cfg.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.loop(ctx, fmt.Sprintf("%s/%d", w.cfg.ID, i))
		}()
	}
	wg.Wait()
	return nil
}

func (w *Worker) loop(ctx context.Context, owner string) {
	for ctx.Err() == nil {
		worked, err := w.runOnce(ctx, owner)
		if err != nil && ctx.Err() == nil {
			w.cfg.Logger.Error("conversion worker", "worker", owner, "err", err)
		}
		if worked && err == nil {
			continue // there may be more
		}
		select {
		case <-ctx.Done():
		case <-time.After(w.cfg.Poll):
		}
	}
}

// RunOnce converts at most one due job and reports whether there was one.
func (w *Worker) RunOnce(ctx context.Context) (bool, error) {
	return w.runOnce(ctx, w.cfg.ID+"/once")
}

func (w *Worker) now() time.Time { return w.cfg.Service.Now() }

func (w *Worker) runOnce(ctx context.Context, owner string) (bool, error) {
	job, err := w.lease(ctx, owner)
	if consent.ErrorCode(err) == consent.NotFound {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	log := w.cfg.Logger.With("session", job.SessionID, "attempt", job.Attempts, "worker", owner)
	log.Info("converting recording")

	convCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		w.renew(convCtx, cancel, job.SessionID, owner)
	}()
	video, err := w.convert(convCtx, job.SessionID)
	cancel(nil)
	<-renewed
	if cause := context.Cause(convCtx); errors.Is(cause, errLeaseLost) {
		log.Warn("lease lost to another worker; result discarded")
		return true, nil
	}
	// Finish even when ctx is done, so the job is handed back at once.
	finishCtx, stop := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer stop()
	if err != nil {
		return true, w.fail(finishCtx, log, job, owner, err, ctx.Err() != nil)
	}
	err = w.store.Update(finishCtx, func(tx consent.Tx) error {
		if err := tx.EndLease(finishCtx, job.SessionID, owner, nil); err != nil {
			return err
		}
		ses, err := tx.Session(finishCtx, job.SessionID)
		if err != nil {
			return err
		}
		ses.VideoStatus, ses.Video = consent.VideoConverted, video
		return tx.UpdateSession(finishCtx, ses)
	})
	if consent.ErrorCode(err) == consent.Conflict {
		log.Warn("lease lost to another worker before the result was recorded")
		return true, nil
	}
	if err != nil {
		return true, err
	}
	log.Info("recording converted", "video", video.Path, "bytes", video.Bytes, "duration", video.Duration)
	return true, nil
}

// lease takes a due job and marks its session converting.
func (w *Worker) lease(ctx context.Context, owner string) (*consent.ConversionJob, error) {
	var job *consent.ConversionJob
	err := w.store.Update(ctx, func(tx consent.Tx) error {
		now := w.now()
		var err error
		if job, err = tx.LeaseConversion(ctx, owner, now, now.Add(w.cfg.Lease)); err != nil {
			return err
		}
		ses, err := tx.Session(ctx, job.SessionID)
		if err != nil {
			return err
		}
		ses.VideoStatus = consent.VideoConverting
		return tx.UpdateSession(ctx, ses)
	})
	if err != nil {
		return nil, err
	}
	return job, nil
}

var errLeaseLost = errors.New("retain: lease lost")

// renew keeps the lease alive until ctx is done; when the lease is lost it
// cancels the conversion.
func (w *Worker) renew(ctx context.Context, cancel context.CancelCauseFunc, sessionID, owner string) {
	t := time.NewTicker(w.cfg.Lease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := w.store.Update(ctx, func(tx consent.Tx) error {
			return tx.RenewLease(ctx, sessionID, owner, w.now().Add(w.cfg.Lease))
		})
		if code := consent.ErrorCode(err); code == consent.Conflict || code == consent.NotFound {
			cancel(errLeaseLost)
			return
		}
	}
}

// convert reads the session's recording, runs the converter in a directory
// of its own and stores the video. The recording (up to 64 MiB) is read in
// a read-only transaction, never in the write transaction of the lease: on
// SQLite that would hold the one writer, and every charge would queue
// behind it. The lease keeps other workers off the job meanwhile.
//
// A panic in the Converter or the VideoStore fails the attempt like an
// error: a recording from the public must never take the server down.
func (w *Worker) convert(ctx context.Context, sessionID string) (v consent.Video, err error) {
	defer func() {
		if r := recover(); r != nil {
			v, err = consent.Video{}, fmt.Errorf("conversion panicked: %v", r)
		}
	}()
	var (
		chunks [][]byte
		ses    *consent.Session
	)
	err = w.store.View(ctx, func(tx consent.Tx) error {
		var err error
		if ses, err = tx.Session(ctx, sessionID); err != nil {
			return err
		}
		chunks, err = tx.Events(ctx, sessionID)
		return err
	})
	if err != nil {
		return consent.Video{}, fmt.Errorf("read recording: %w", err)
	}
	events := consent.JoinChunks(chunks)
	dir, err := os.MkdirTemp(w.cfg.TempDir, "consentkit-convert-")
	if err != nil {
		return consent.Video{}, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "video.mp4")
	d, err := w.cfg.Converter.Convert(ctx, events, out)
	if err != nil {
		return consent.Video{}, err
	}
	v, err = w.cfg.Videos.Put(ctx, sessionID, out, ses.ExpiresAt)
	if err != nil {
		return consent.Video{}, fmt.Errorf("store video: %w", err)
	}
	v.Duration = d.Round(time.Millisecond)
	return v, nil
}

// maxErrorText bounds the error kept with a job.
const maxErrorText = 1000

// fail records a failed attempt: retried after a backoff, or failed for
// good after MaxAttempts. An attempt cut short by shutdown is handed back
// at once and not counted.
func (w *Worker) fail(ctx context.Context, log *slog.Logger, job *consent.ConversionJob, owner string, cause error, stopping bool) error {
	now := w.now()
	msg := consent.CleanText(cause.Error()) // a tool's output may hold any bytes
	if len(msg) > maxErrorText {
		msg = strings.ToValidUTF8(msg[:maxErrorText], "") // never cut a character in two
	}
	next := &consent.ConversionJob{Attempts: job.Attempts, RunAfter: now.Add(w.backoff(job.Attempts)), LastError: msg}
	status := consent.VideoPending
	switch {
	case stopping:
		next.Attempts, next.RunAfter, next.LastError = job.Attempts-1, now, job.LastError
	case job.Attempts >= w.cfg.MaxAttempts || permanent(cause):
		next.FailedAt, status = now, consent.VideoFailed
	}
	err := w.store.Update(ctx, func(tx consent.Tx) error {
		if err := tx.EndLease(ctx, job.SessionID, owner, next); err != nil {
			return err
		}
		ses, err := tx.Session(ctx, job.SessionID)
		if err != nil {
			return err
		}
		ses.VideoStatus = status
		return tx.UpdateSession(ctx, ses)
	})
	switch {
	case consent.ErrorCode(err) == consent.Conflict:
		return nil // another worker holds it now
	case err != nil:
		return err
	case stopping:
		log.Info("conversion interrupted by shutdown; job handed back")
	case status == consent.VideoFailed:
		log.Error("conversion failed for good", "err", cause)
	default:
		log.Warn("conversion failed; will retry", "err", cause, "retry_at", next.RunAfter)
	}
	return nil
}

// backoff is the wait after the given number of failed attempts.
func (w *Worker) backoff(attempts int) time.Duration {
	d := w.cfg.Backoff
	for i := 1; i < attempts && d < w.cfg.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, w.cfg.MaxBackoff)
}
