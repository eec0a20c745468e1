package retain

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/jobs"
)

// Job kinds of the purge (D26, D43).
const (
	// JobPurge is the recurring purge.
	JobPurge = "purge"
	// JobDeleteVideo removes the video of a purged session from the video
	// store; its key is the session id, its payload the video's Path.
	JobDeleteVideo = "video.delete"
	// JobPruneKeys is the recurring removal of idempotency keys past
	// consent.IdempotencyTTL (D40).
	JobPruneKeys = "idempotency.prune"
)

// PurgeConfig configures the purge. Service and Videos are required.
type PurgeConfig struct {
	// Service gives the store and the clock: what expires at or before
	// Service.Now() is purged. Required.
	Service *consentkit.Service
	// Videos is where the videos of purged sessions are removed, and
	// those of retained ones locked. Required. It must be a VideoSweeper
	// (as Dir and s3video.Store are, and metrics.Videos of either): the
	// removals that name no path, a session's unrecorded videos and
	// every attestation's screenshots, fail otherwise.
	Videos VideoStore
	// Every is how often the purge runs: default one hour.
	Every time.Duration
	// Batch is how many certificates or sessions one transaction purges:
	// default 250. Small batches keep each transaction short, so writers
	// (charges, retentions) never wait long behind the purge.
	Batch int
	// Pause is the rest after each batch: default as long as the batch
	// took, so that the purge holds the database at most half the time and
	// writers never queue behind a run of batches; negative for none.
	Pause time.Duration
	// WebhookLogFor is how long webhook delivery-log entries, and the
	// messages given up (failed jobs of kind consent.JobWebhook), are kept
	// after their attempt: default 90 days (D44).
	WebhookLogFor time.Duration
	Logger        *slog.Logger // default slog.Default()
}

// Purged counts what one purge removed.
type Purged struct {
	Certificates, Sessions, Videos int
	// Recordings counts the recording objects whose removal was asked
	// for (JobDeleteRecording).
	Recordings int
	// WebhookLog counts the delivery-log entries and the webhook messages
	// given up that were older than WebhookLogFor.
	WebhookLog int
}

// Purger removes what is past its retention window (D26, D43): the
// certificates whose ExpiresAt has passed (their consent text, recording
// snapshot, email and mobile digests, browser facts: the whole row), and
// the recordings of the sessions whose ExpiresAt has passed (their events,
// page URL and upload capability; the row stays, with retention_status
// expired, so the API can say so). A session's video is removed from the
// video store by a JobDeleteVideo job enqueued in the purge's transaction,
// so it is removed at least once, after the purge commits.
//
// An item that is retained has its retention date as ExpiresAt, so the
// purge never touches it while its retention runs (five years by default);
// once that date has passed it is purged like any other. Revocations, the
// ledger and the audit log are never purged: a purged certificate verifies
// as 404, and its revocation record still stands.
type Purger struct {
	cfg   PurgeConfig
	store consent.Store
}

// NewPurger checks cfg and returns a Purger.
func NewPurger(cfg PurgeConfig) (*Purger, error) {
	if cfg.Service == nil || cfg.Videos == nil {
		return nil, errors.New("retain: PurgeConfig needs Service and Videos")
	}
	if cfg.Every < 0 || cfg.Batch < 0 || cfg.WebhookLogFor < 0 {
		return nil, errors.New("retain: PurgeConfig values must not be negative (zero means the default)")
	}
	if cfg.Every == 0 {
		cfg.Every = time.Hour
	}
	if cfg.Batch == 0 {
		cfg.Batch = 250
	}
	if cfg.WebhookLogFor == 0 {
		cfg.WebhookLogFor = 90 * 24 * time.Hour
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Purger{cfg: cfg, store: cfg.Service.Store()}, nil
}

// Handlers returns the job handlers of the purge, for a jobs.Runner: the
// recurring purge, every cfg.Every, the removal of videos and of
// attestations' screenshots, the
// recurring removal of expired idempotency keys (PruneKeys), every
// cfg.Every too, and the locks of the videos and screenshots that rows
// name until their retention dates (JobLockVideo, JobLockScreenshot; D45).
func (p *Purger) Handlers() []jobs.Handler {
	return append([]jobs.Handler{
		{Kind: JobPruneKeys, Every: p.cfg.Every, Lease: time.Minute, Do: func(ctx context.Context, j *consent.Job) (jobs.Result, error) {
			_, err := p.PruneKeys(ctx)
			return jobs.Result{}, err
		}},
		{Kind: JobPurge, Every: p.cfg.Every, Lease: time.Minute, Do: func(ctx context.Context, j *consent.Job) (jobs.Result, error) {
			_, err := p.Purge(ctx)
			return jobs.Result{}, err
		}},
		// A removal is tried until it is done, at most daily: a store down
		// for days must not leave a purged video in place for good.
		{Kind: JobDeleteVideo, MaxAttempts: consent.MaxJobAttempts, Backoff: time.Minute, MaxBackoff: 24 * time.Hour,
			Do: func(ctx context.Context, j *consent.Job) (jobs.Result, error) {
				if err := p.remove(ctx, string(j.Payload), j.Key, false); err != nil {
					return jobs.Result{}, err
				}
				p.cfg.Logger.Info("purge: video removed", "session", j.Key, "video", string(j.Payload))
				return jobs.Result{}, nil
			}},
		{Kind: JobDeleteScreenshot, MaxAttempts: consent.MaxJobAttempts, Backoff: time.Minute, MaxBackoff: 24 * time.Hour, Do: p.deleteScreenshot},
		{Kind: JobDeleteRecording, MaxAttempts: consent.MaxJobAttempts, Backoff: time.Minute, MaxBackoff: 24 * time.Hour, Do: p.deleteRecording},
	}, lockHandlers(p.cfg.Service, p.cfg.Videos)...)
}

// remove removes the object at path, or with no path every object of id
// that the video store keeps (VideoSweeper). A store that is no
// VideoSweeper cannot remove by id: the job fails, and is tried again,
// rather than end as done with the objects left in place (D45).
func (p *Purger) remove(ctx context.Context, path, id string, screenshots bool) error {
	if path != "" {
		return p.cfg.Videos.Delete(ctx, path)
	}
	vs, ok := p.cfg.Videos.(VideoSweeper)
	if !ok {
		what := "videos of session"
		if screenshots {
			what = "screenshots of certificate"
		}
		return fmt.Errorf("retain: cannot remove the %s %s: the video store %T is not a retain.VideoSweeper (no DeleteAll), so nothing was removed", what, id, p.cfg.Videos)
	}
	return vs.DeleteAll(ctx, id, screenshots)
}

// deleteScreenshot removes an attestation's screenshot once its
// certificate is purged (D49). While the certificate lives and its
// attestation names the screenshot (or, for a job that names none, while
// it lives at all), the job waits: due again at the certificate's
// retention date, which a retention may have moved, or after the next
// purge if that date has passed.
func (p *Purger) deleteScreenshot(ctx context.Context, j *consent.Job) (jobs.Result, error) {
	path := string(j.Payload)
	var wait time.Time
	err := p.store.View(ctx, func(tx consent.Tx) error {
		cert, err := tx.Certificate(ctx, j.Key)
		if consent.ErrorCode(err) == consent.NotFound {
			return nil
		}
		if err != nil {
			return err
		}
		att, err := tx.Attestation(ctx, j.Key)
		if path == "" || err == nil && att.Screenshot == path {
			wait = later(cert.ExpiresAt, p.cfg.Service.Now().Add(p.cfg.Every))
		}
		if consent.ErrorCode(err) == consent.NotFound {
			return nil
		}
		return err
	})
	if err != nil || !wait.IsZero() {
		return jobs.Result{Again: wait}, err
	}
	if err := p.remove(ctx, path, j.Key, true); err != nil {
		return jobs.Result{}, err
	}
	p.cfg.Logger.Info("purge: screenshot removed", "certificate", j.Key, "screenshot", path)
	return jobs.Result{}, nil
}

// PruneKeys deletes the idempotency keys past consent.IdempotencyTTL (D40),
// in batches of cfg.Batch with cfg.Pause between them, and returns how
// many it deleted.
func (p *Purger) PruneKeys(ctx context.Context) (int, error) {
	n, err := p.batches(ctx, func(tx consent.Tx) (int, error) {
		return tx.PruneIdempotencyKeys(ctx, p.cfg.Service.Now(), p.cfg.Batch)
	})
	if err != nil {
		return n, fmt.Errorf("prune idempotency keys: %w", err)
	}
	return n, nil
}

// Purge removes everything that has expired, in batches of cfg.Batch, each
// its own transaction, until nothing expired is left or ctx is done. What
// one batch removed stays removed whatever happens to the next.
func (p *Purger) Purge(ctx context.Context) (Purged, error) {
	var n Purged
	now := p.cfg.Service.Now()
	certs, err := p.batches(ctx, func(tx consent.Tx) (int, error) {
		ids, err := tx.PurgeCertificates(ctx, now, p.cfg.Batch)
		return len(ids), err
	})
	n.Certificates += certs
	if err != nil {
		return n, fmt.Errorf("purge certificates: %w", err)
	}
	for {
		var count, videos, recordings int
		err := p.batch(ctx, func(tx consent.Tx) error {
			purged, err := tx.PurgeSessions(ctx, now, p.cfg.Batch)
			if err != nil {
				return err
			}
			// The removal of each video and recording object, enqueued
			// together in the purge's transaction.
			var removals []*consent.Job
			remove := func(kind, sessionID, path string) {
				removals = append(removals, &consent.Job{Kind: kind, Key: sessionID, Payload: []byte(path), RunAfter: now, CreatedAt: now})
			}
			count, videos, recordings = len(purged), 0, 0
			for _, s := range purged {
				// A session whose recording was ever converted may have
				// videos that no row names (an attempt whose commit never
				// came): their removal, by id, is asked too.
				if s.Video.Path != "" || s.VideoStatus != consent.VideoNone && s.VideoStatus != "" {
					remove(JobDeleteVideo, s.ID, s.Video.Path)
					videos++
				}
				// Moved, or being moved (D52): a move that writes the
				// object after this asks for its removal again when it
				// finds the key gone.
				if s.Recording.Key != "" {
					remove(JobDeleteRecording, s.ID, s.Recording.Key)
					recordings++
				}
			}
			if err := tx.EnqueueJobs(ctx, removals); err != nil {
				return fmt.Errorf("enqueue the removal of videos and recordings: %w", err)
			}
			return nil
		})
		if err != nil {
			return n, fmt.Errorf("purge sessions: %w", err)
		}
		n.Sessions += count
		n.Videos += videos
		n.Recordings += recordings
		if count < p.cfg.Batch {
			break
		}
	}
	// The webhook log: what an issue or an opt-out wrote there, anonymous
	// capture's included, goes too (D44, D52).
	before := now.Add(-p.cfg.WebhookLogFor)
	for _, prune := range []func(tx consent.Tx) (int, error){
		func(tx consent.Tx) (int, error) { return tx.DeleteWebhookDeliveries(ctx, before, p.cfg.Batch) },
		func(tx consent.Tx) (int, error) {
			return tx.DeleteFailedJobs(ctx, consent.JobWebhook, before, p.cfg.Batch)
		},
	} {
		count, err := p.batches(ctx, prune)
		n.WebhookLog += count
		if err != nil {
			return n, fmt.Errorf("purge the webhook log: %w", err)
		}
	}
	if n != (Purged{}) {
		p.cfg.Logger.Info("purge: expired data removed", "certificates", n.Certificates, "sessions", n.Sessions, "videos", n.Videos,
			"recordings", n.Recordings, "webhook_log", n.WebhookLog)
	}
	return n, nil
}

// batches runs fn as batches (batch) until one removes fewer than
// cfg.Batch, and returns how many they removed, those before a failed
// batch included.
func (p *Purger) batches(ctx context.Context, fn func(tx consent.Tx) (int, error)) (int, error) {
	total := 0
	for {
		var n int
		if err := p.batch(ctx, func(tx consent.Tx) (err error) { n, err = fn(tx); return err }); err != nil {
			return total, err
		}
		total += n
		if n < p.cfg.Batch {
			return total, nil
		}
	}
}

// batch runs one batch in a transaction of its own, then rests (Pause).
func (p *Purger) batch(ctx context.Context, fn func(tx consent.Tx) error) error {
	start := time.Now()
	if err := p.store.Update(ctx, fn); err != nil {
		return err
	}
	rest := p.cfg.Pause
	if rest == 0 {
		rest = time.Since(start)
	}
	if rest > 0 {
		t := time.NewTimer(rest)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}
