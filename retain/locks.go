package retain

import (
	"context"
	"log/slog"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/jobs"
)

// Job kinds of the locks of the video store (D45, D49). Each is enqueued
// in the transaction that records the object, or that moves its row's
// retention date, and runs once that has committed: an object is locked
// only once a row names it, never at Put.
const (
	// JobLockVideo locks the video that a session's row names until the
	// session's ExpiresAt, read when the job runs; its key is the session
	// id. A purged session's does nothing.
	JobLockVideo = "video.lock"
	// JobLockScreenshot locks the screenshot that a certificate's
	// attestation names until the certificate's ExpiresAt, read when the
	// job runs; its key is the certificate id.
	JobLockScreenshot = "screenshot.lock"
)

// enqueueLock asks, in tx, for the lock job of kind and key, due now. A
// lock already asked for and not yet done is enough: it reads the row
// when it runs (consentkit.EnqueueOnce).
func enqueueLock(ctx context.Context, tx consent.Tx, kind, key string, now time.Time) error {
	return consentkit.EnqueueOnce(ctx, tx, &consent.Job{Kind: kind, Key: key, RunAfter: now, CreatedAt: now})
}

// lockHandlers returns the handlers of the lock jobs, which lock in videos
// what the rows name now: a session purged, or a video replaced, since the
// job was asked for leaves nothing to lock, or the row's newer object.
func lockHandlers(svc *consentkit.Service, videos VideoStore) []jobs.Handler {
	return []jobs.Handler{
		lockHandler(svc, JobLockVideo, videos.Lock, func(ctx context.Context, tx consent.Tx, id string) (string, time.Time, error) {
			ses, err := tx.Session(ctx, id)
			if err != nil || ses.RetentionStatus == consent.RetentionExpired {
				return "", time.Time{}, err
			}
			return ses.Video.Path, ses.ExpiresAt, nil
		}),
		lockHandler(svc, JobLockScreenshot, videos.Lock, func(ctx context.Context, tx consent.Tx, id string) (string, time.Time, error) {
			cert, err := tx.Certificate(ctx, id)
			if err != nil {
				return "", time.Time{}, err
			}
			att, err := tx.Attestation(ctx, id)
			if err != nil {
				return "", time.Time{}, err
			}
			return att.Screenshot, cert.ExpiresAt, nil
		}),
	}
}

// lockHandler is the handler of a lock job of kind: read says, in a
// transaction, what the row keyed by the job's key names now and until
// when to keep it ("" and no error: nothing to lock; a row not found is
// nothing), and lock locks it. The transaction that ends the job reads the
// row again: when it names another object, or a later date — a retention
// or a conversion committed while the job ran, whose ask found this job
// still queued — it asks for the job again, so that no object a row names
// stays unlocked.
func lockHandler(svc *consentkit.Service, kind string, lock func(ctx context.Context, path string, until time.Time) error,
	read func(ctx context.Context, tx consent.Tx, key string) (string, time.Time, error)) jobs.Handler {
	named := func(ctx context.Context, tx consent.Tx, key string) (string, time.Time, error) {
		path, until, err := read(ctx, tx, key)
		if consent.ErrorCode(err) == consent.NotFound {
			return "", time.Time{}, nil
		}
		return path, until, err
	}
	// A lock job never fails for good: a lock is evidence kept from
	// deletion, and a job failed for good would also swallow each later
	// ask (EnqueueOnce finds it queued). It is tried again at most hourly
	// until the store takes the lock; each failure counts in the metrics.
	return jobs.Handler{Kind: kind, MaxAttempts: consent.MaxJobAttempts, Backoff: time.Minute, MaxBackoff: time.Hour,
		Do: func(ctx context.Context, j *consent.Job) (jobs.Result, error) {
			var (
				path  string
				until time.Time
			)
			err := svc.Store().View(ctx, func(tx consent.Tx) error {
				var err error
				path, until, err = named(ctx, tx, j.Key)
				return err
			})
			if err != nil {
				return jobs.Result{}, err
			}
			if path != "" {
				if err := lock(ctx, path, until); err != nil {
					return jobs.Result{}, err
				}
			}
			return jobs.Result{Commit: func(ctx context.Context, tx consent.Tx) error {
				now, nowUntil, err := named(ctx, tx, j.Key)
				if err != nil || now == path && !nowUntil.After(until) {
					return err
				}
				t := svc.Now()
				return tx.EnqueueJob(ctx, &consent.Job{Kind: kind, Key: j.Key, RunAfter: t, CreatedAt: t})
			}}, nil
		}}
}

// discard removes, best effort, the object at path that a job wrote for
// its commit to name, once that commit did not come or recorded nothing:
// when named, read again now, says that no row names it. With a
// VideoDiscarder that object alone; otherwise, when purged says that its
// session or certificate is purged, Delete, which removes every object of
// it (as the purge would); otherwise nothing: a store that writes each
// object under one name (Dir) replaces it at the next write, and locks
// nothing. What is left is unlocked, and the purge removes it.
func discard(ctx context.Context, videos VideoStore, log *slog.Logger, path string,
	named func(ctx context.Context) (named, purged bool, err error)) {
	isNamed, purged, err := named(ctx)
	if err != nil {
		log.Warn("an object whose commit did not come is left, unlocked, for the purge", "object", path, "err", err)
		return
	}
	if isNamed {
		return // the commit came after all
	}
	if d, ok := videos.(VideoDiscarder); ok {
		err = d.Discard(ctx, path)
	} else if purged {
		err = videos.Delete(ctx, path)
	} else {
		return
	}
	if err != nil {
		log.Warn("an object whose commit did not come is left, unlocked, for the purge", "object", path, "err", err)
		return
	}
	log.Info("an object whose commit did not come was removed", "object", path)
}
