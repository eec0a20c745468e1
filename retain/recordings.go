package retain

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/jobs"
)

// Job kinds of the recordings blob store (D52).
const (
	// JobMoveRecordings is the recurring move of finished recordings
	// from the database to the blob store (consentkit.Service.MoveRecordings).
	JobMoveRecordings = "recordings.move"
	// JobDeleteRecording removes the recording object of a purged
	// session; its key is the session id, its payload the object's key.
	JobDeleteRecording = consent.JobDeleteRecording
)

// MoveConfig configures the move of finished recordings. Service is
// required, with Config.Recordings set.
type MoveConfig struct {
	Service *consentkit.Service
	// Every is how often the move runs: default one minute, so that a
	// recording closed at consent leaves the database within about that.
	Every time.Duration
	// Batch is how many recordings one transaction's read lists: default
	// 500. A run moves batch after batch until one is not full.
	Batch int
	// SweepEvery is how often the sweep (JobSweepRecordings) runs, a page
	// of the recordings store each time: default one minute.
	SweepEvery time.Duration
	// SweepPage is how many objects one sweep lists: default 1,000, one
	// S3 list request. With the defaults a pass over a million recordings
	// takes about 17 hours.
	SweepPage int
	Logger    *slog.Logger // default slog.Default()
}

// MoveHandlers returns the job handlers that move finished recordings to
// the blob store (D52): the recurring move, the lock of a retained
// session's object until its ExpiresAt (consent.JobLockRecording), asked
// for when such a recording is moved and when a moved recording's session
// is retained, and the recurring sweep that deletes the objects no
// session names (SweepRecordings).
func MoveHandlers(cfg MoveConfig) ([]jobs.Handler, error) {
	if cfg.Service == nil || cfg.Service.Recordings() == nil {
		return nil, errors.New("retain: MoveConfig needs a Service with Config.Recordings")
	}
	if cfg.Every < 0 || cfg.Batch < 0 || cfg.SweepEvery < 0 || cfg.SweepPage < 0 {
		return nil, errors.New("retain: MoveConfig values must not be negative (zero means the default)")
	}
	if cfg.Every == 0 {
		cfg.Every = time.Minute
	}
	if cfg.Batch == 0 {
		cfg.Batch = 500
	}
	if cfg.SweepEvery == 0 {
		cfg.SweepEvery = time.Minute
	}
	if cfg.SweepPage == 0 {
		cfg.SweepPage = 1000
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	svc := cfg.Service
	return []jobs.Handler{
		{Kind: JobMoveRecordings, Every: cfg.Every, Lease: time.Minute, Do: func(ctx context.Context, j *consent.Job) (jobs.Result, error) {
			// Batch after batch until none is full: a backlog drains in
			// one run, not a batch a minute.
			total := 0
			for {
				n, err := svc.MoveRecordings(ctx, cfg.Batch)
				total += n
				if err != nil || n < cfg.Batch {
					if total > 0 {
						cfg.Logger.Info("recordings: moved to the blob store", "recordings", total)
					}
					return jobs.Result{}, err
				}
			}
		}},
		lockHandler(svc, consent.JobLockRecording, func(ctx context.Context, key string, until time.Time) error {
			return svc.Recordings().Lock(ctx, key, until)
		}, recordingToLock),
		sweepHandler(cfg),
	}, nil
}

// recordingToLock says what a recording lock job locks: a retained
// session's moved recording, until the session's ExpiresAt, read when the
// job runs (a later retention asks again); nothing for another session.
func recordingToLock(ctx context.Context, tx consent.Tx, sessionID string) (string, time.Time, error) {
	ses, err := tx.Session(ctx, sessionID)
	if err != nil || !ses.Recording.Moved() || ses.RetentionStatus != consent.RetentionRetained {
		return "", time.Time{}, err
	}
	return ses.Recording.Key, ses.ExpiresAt, nil
}

// deleteRecording removes a purged session's recording object. Without a
// recordings store there is nothing this instance can remove: the job
// fails, and is tried again, until one with the store runs it.
func (p *Purger) deleteRecording(ctx context.Context, j *consent.Job) (jobs.Result, error) {
	blobs := p.cfg.Service.Recordings()
	if blobs == nil {
		return jobs.Result{}, errors.New("retain: no recordings store to remove " + string(j.Payload) + " from")
	}
	if err := blobs.Delete(ctx, string(j.Payload)); err != nil {
		return jobs.Result{}, err
	}
	p.cfg.Logger.Info("purge: recording removed", "session", j.Key, "object", string(j.Payload))
	return jobs.Result{}, nil
}
