package retain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/jobs"
)

// WorkerConfig configures a Worker. Service, Converter and Videos are
// required; zero values of the rest mean their defaults. The store and the
// clock are the Service's.
type WorkerConfig struct {
	Service   *consentkit.Service // required
	Converter Converter           // required: mp4.New's, in a real service
	Videos    VideoStore          // required: where videos are kept
	// ID names this worker in leases; default host-pid-random. Every
	// worker sharing a store needs its own. (NewWorker only: a
	// ConversionHandler takes its runner's.)
	ID string
	// Concurrency is how many jobs this worker converts at once: default 1.
	Concurrency int
	// Lease is how long a job is held without a sign of life: default 2
	// minutes. The worker renews it every Lease/3 while converting; a
	// crashed worker's job is taken again once it runs out.
	Lease time.Duration
	// Poll is how often an idle worker looks for jobs: default 2 s.
	// (NewWorker only.)
	Poll time.Duration
	// MaxAttempts is how many conversions are tried before a job fails for
	// good: default 5.
	MaxAttempts int
	// Backoff is the wait after the first failed attempt, doubled after
	// each further one, up to MaxBackoff: defaults 30 s and 1 h.
	Backoff, MaxBackoff time.Duration
	// MaxAttested is the largest recording, in bytes of events, that an
	// attestation replays (D49): default DefaultMaxAttested. The browser
	// holds a replayed recording, parsed, in several times its size of
	// JavaScript heap (mp4.Config.MaxHeapMiB bounds it); a larger one is
	// stated unavailable, with the reason. (AttestationHandler only.)
	MaxAttested int64
	// TempDir holds each job's working directory: default os.TempDir().
	TempDir string
	Logger  *slog.Logger // default slog.Default()
	// Observe, when set, is told of each conversion and attestation its
	// runner does, as jobs.Config.Observe is (NewWorker only).
	Observe func(kind string, took time.Duration, err error)
}

// Worker converts retained recordings to video (D21) and, when its
// Converter is also an Attester (mp4.Converter is), attests certificates
// (D49): a jobs.Runner with the handlers that ConversionHandler and
// AttestationHandler return, sharing the Converter's browsers, conversions
// first. A service that runs other jobs too (purge, webhooks) puts those
// handlers in its own Runner instead.
type Worker struct {
	runner *jobs.Runner
}

// NewWorker checks cfg and returns a Worker.
func NewWorker(cfg WorkerConfig) (*Worker, error) {
	h, err := ConversionHandler(cfg)
	if err != nil {
		return nil, err
	}
	poll := cfg.Poll
	if poll == 0 {
		poll = 2 * time.Second
	}
	handlers := []jobs.Handler{h}
	if _, ok := cfg.Converter.(Attester); ok {
		a, err := AttestationHandler(cfg)
		if err != nil {
			return nil, err
		}
		handlers = append(handlers, a)
	}
	r, err := jobs.New(jobs.Config{Store: cfg.Service.Store(), Handlers: handlers, ID: cfg.ID, Poll: poll,
		Now: cfg.Service.Now, Logger: cfg.Logger, Observe: cfg.Observe})
	if err != nil {
		return nil, err
	}
	return &Worker{runner: r}, nil
}

// Run converts jobs until ctx is done, then returns nil once the jobs in
// hand are given back. Other errors are logged and retried, not returned.
func (w *Worker) Run(ctx context.Context) error { return w.runner.Run(ctx) }

// RunOnce converts at most one due job and reports whether there was one.
func (w *Worker) RunOnce(ctx context.Context) (bool, error) {
	return w.runner.RunOnce(ctx, consent.JobConvert)
}

// AttestOnce does at most one due attestation and reports whether there
// was one.
func (w *Worker) AttestOnce(ctx context.Context) (bool, error) {
	return w.runner.RunOnce(ctx, consent.JobAttest)
}

// ConversionHandler returns the handler of consent.JobConvert jobs, which
// the retention of a session with its video enqueues (D21): it marks the
// session converting when it leases the job, runs the Converter, stores the
// MP4 in cfg.Videos and marks the session converted with the video's size
// and SHA-256 in the transaction that ends the job, which also asks for
// the video's lock (JobLockVideo, D45). A video that transaction does not
// record (the lease lost, the session purged meanwhile, the store failing)
// is not locked, and is removed when no row names it (VideoDiscarder). A
// failed attempt puts the session back to pending, to be tried again with
// exponential backoff; after MaxAttempts, or at once when the recording can
// never be converted, the session is marked failed and the job keeps the
// last error. Both ends emit their webhook event (video.converted,
// video.failed; D44) in the transaction that records them.
func ConversionHandler(cfg WorkerConfig) (jobs.Handler, error) {
	if cfg.Service == nil || cfg.Converter == nil || cfg.Videos == nil {
		return jobs.Handler{}, errors.New("retain: WorkerConfig needs Service, Converter and Videos")
	}
	if cfg.Concurrency < 0 || cfg.Lease < 0 || cfg.Poll < 0 || cfg.MaxAttempts < 0 || cfg.Backoff < 0 || cfg.MaxBackoff < 0 {
		return jobs.Handler{}, errors.New("retain: WorkerConfig values must not be negative (zero means the default)")
	}
	if cfg.Lease == 0 {
		cfg.Lease = 2 * time.Minute
	}
	if cfg.TempDir == "" {
		cfg.TempDir = os.TempDir()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	c := &converter{cfg: cfg, store: cfg.Service.Store()}
	return jobs.Handler{
		Kind: consent.JobConvert,
		Do:   c.do,
		Started: func(ctx context.Context, tx consent.Tx, j *consent.Job) error {
			_, err := setVideoStatus(ctx, tx, j.Key, consent.VideoConverting)
			return err
		},
		Failed:      c.failed,
		Concurrency: cfg.Concurrency,
		Lease:       cfg.Lease,
		MaxAttempts: cfg.MaxAttempts,
		Backoff:     cfg.Backoff,
		MaxBackoff:  cfg.MaxBackoff,
	}, nil
}

// converter does conversion jobs.
type converter struct {
	cfg   WorkerConfig
	store consent.Store
}

// setVideoStatus sets the session's video status, and returns it; nil for
// a session purged meanwhile (D43), which keeps the status it was purged
// with: no conversion of it is under way, nor can fail.
func setVideoStatus(ctx context.Context, tx consent.Tx, sessionID string, status consent.VideoStatus) (*consent.Session, error) {
	ses, err := tx.Session(ctx, sessionID)
	if err != nil || ses.RetentionStatus == consent.RetentionExpired {
		return nil, err
	}
	ses.VideoStatus = status
	return ses, tx.UpdateSession(ctx, ses)
}

func (c *converter) do(ctx context.Context, j *consent.Job) (jobs.Result, error) {
	log := c.cfg.Logger.With("session", j.Key, "attempt", j.Attempts)
	log.Info("converting recording")
	video, err := c.convert(ctx, j.Key)
	if err != nil {
		return jobs.Result{}, err
	}
	log.Info("recording converted", "video", video.Path, "bytes", video.Bytes, "duration", video.Duration)
	var orphan bool // the commit found the session purged
	return jobs.Result{Commit: func(ctx context.Context, tx consent.Tx) error {
		orphan = false // the store may run this again
		ses, err := tx.Session(ctx, j.Key)
		if err != nil {
			return err
		}
		if ses.RetentionStatus == consent.RetentionExpired {
			// Purged while converting (D43): the purge's removal of its
			// videos may have run before this one was written, and no
			// row is to name it. After removes it.
			orphan = true
			return nil
		}
		ses.VideoStatus, ses.Video = consent.VideoConverted, video
		if err := tx.UpdateSession(ctx, ses); err != nil {
			return err
		}
		// Locked once this commits and a row names it, never before (D45).
		if err := enqueueLock(ctx, tx, JobLockVideo, ses.ID, c.cfg.Service.Now()); err != nil {
			return err
		}
		return c.cfg.Service.EmitEvent(ctx, tx, ses.CompanyID, consent.EventVideoConverted, map[string]any{
			"session_id": ses.ID, "company_id": ses.CompanyID, "rrweb_to_video_status": ses.VideoStatus,
			"video": map[string]any{"bytes": video.Bytes, "sha256": video.SHA256.String(), "duration_ms": video.Duration.Milliseconds()},
		})
	}, After: func(ctx context.Context, committed bool) {
		if committed && !orphan {
			return
		}
		// Not recorded: the lease lost, the session purged, the store
		// failing. The video is unlocked; remove it if no row names it.
		discard(ctx, c.cfg.Videos, log, video.Path, func(ctx context.Context) (named, purged bool, err error) {
			err = c.store.View(ctx, func(tx consent.Tx) error {
				ses, err := tx.Session(ctx, j.Key)
				if consent.ErrorCode(err) == consent.NotFound {
					purged = true
					return nil
				}
				if err != nil {
					return err
				}
				named, purged = ses.Video.Path == video.Path, ses.RetentionStatus == consent.RetentionExpired
				return nil
			})
			return named, purged, err
		})
	}}, nil
}

func (c *converter) failed(ctx context.Context, tx consent.Tx, j *consent.Job, _ error, final bool) error {
	if !final {
		_, err := setVideoStatus(ctx, tx, j.Key, consent.VideoPending)
		return err
	}
	ses, err := setVideoStatus(ctx, tx, j.Key, consent.VideoFailed)
	if err != nil || ses == nil {
		return err // nil: purged, and no video.failed for it
	}
	return c.cfg.Service.EmitEvent(ctx, tx, ses.CompanyID, consent.EventVideoFailed, map[string]any{
		"session_id": ses.ID, "company_id": ses.CompanyID, "rrweb_to_video_status": ses.VideoStatus, "attempts": j.Attempts,
	})
}

// convert reads the session's recording, streamed a chunk at a time from
// the database or its object into the one copy the replayer plays, runs
// the converter in a directory
// of its own and stores the video. The recording (up to 64 MiB) is read in
// a read-only transaction, never in the write transaction of the lease: on
// SQLite that would hold the one writer, and every charge would queue
// behind it. The lease keeps other runners off the job meanwhile. (A panic
// in the Converter or the VideoStore fails the attempt like an error: the
// runner recovers it.)
func (c *converter) convert(ctx context.Context, sessionID string) (consent.Video, error) {
	var events json.RawMessage
	err := c.store.View(ctx, func(tx consent.Tx) error {
		var err error
		events, err = consent.ReadRecording(ctx, tx, sessionID)
		return err
	})
	if err != nil {
		return consent.Video{}, fmt.Errorf("read recording: %w", err)
	}
	dir, err := os.MkdirTemp(c.cfg.TempDir, "consentkit-convert-")
	if err != nil {
		return consent.Video{}, err
	}
	defer func() { _ = os.RemoveAll(dir) }() // best effort: a leftover stays under Config.TempDir
	out := filepath.Join(dir, "video.mp4")
	d, err := c.cfg.Converter.Convert(ctx, events, out)
	if err != nil {
		return consent.Video{}, err
	}
	v, err := c.cfg.Videos.Put(ctx, sessionID, out)
	if err != nil {
		return consent.Video{}, fmt.Errorf("store video: %w", err)
	}
	v.Duration = d.Round(time.Millisecond)
	return v, nil
}
