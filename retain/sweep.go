package retain

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/blob"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/jobs"
)

// JobSweepRecordings is the recurring sweep of the recordings blob store
// (D52): a page of its recording objects a run, deleting those that no
// session row names.
const JobSweepRecordings = "recordings.sweep"

// Swept tells what one page of the sweep did.
type Swept struct {
	// Listed counts the objects listed under recordings/.
	Listed int
	// Deleted counts the orphans deleted: objects of a purged session
	// whose row no longer names them.
	Deleted int
	// Locked counts orphans kept because their lock has not ended; a
	// later pass deletes them.
	Locked int
	// Unexplained are the keys, kept, of objects that no row names but
	// that no purge explains: no such session, or one not purged (a
	// database restored from a backup older than the store, or an object
	// someone else put there).
	Unexplained []string
	// Failed counts the deletes that failed, FirstFailure the first's
	// error; a later pass tries again.
	Failed       int
	FirstFailure error
	// Next is the key the next page starts after: "" once the listing
	// reached the end, so that the next page starts over.
	Next string
}

// SweepRecordings sweeps one page of the recordings store of svc
// (consentkit.Config.Recordings): it lists at most page objects under
// recordings/ after the key after, reads their sessions, and deletes the
// orphans — the objects of purged sessions whose rows no longer name
// them, which a move left when its process died between writing the
// object and its last commit while a purge came in between (D52). It
// keeps every object that a row names, and every object whose session is
// not purged: a move names its object in the row before writing it, and
// only the purge, which makes the session expired for good, takes the
// name away, so such an object is one a move is writing or has written.
// The keys are listed before the rows are read, so that no object a move
// writes can be listed before its row names it.
//
// An error means that nothing was listed or read, and the page is to be
// swept again; a delete that fails is counted in Swept and the page
// still ends.
func SweepRecordings(ctx context.Context, svc *consentkit.Service, after string, page int) (Swept, error) {
	blobs := svc.Recordings()
	if blobs == nil {
		return Swept{}, errors.New("retain: no recordings store to sweep")
	}
	if page <= 0 {
		return Swept{}, errors.New("retain: the sweep's page must be positive")
	}
	prefix := consentkit.RecordingKey("")
	keys, err := blobs.ListAfter(ctx, prefix, after, page)
	if err != nil {
		return Swept{}, fmt.Errorf("retain: sweep the recordings: %w", err)
	}
	sw := Swept{Listed: len(keys)}
	if len(keys) == page {
		sw.Next = keys[len(keys)-1]
	}
	// Only then the rows: an object listed was written after its row
	// named it, so a row read now names it unless a purge took it away.
	ids := make([]string, 0, len(keys))
	for _, k := range keys {
		if id, ok := recordingSession(k); ok {
			ids = append(ids, id)
		}
	}
	var sessions []*consent.Session
	err = svc.Store().View(ctx, func(tx consent.Tx) error {
		var err error
		sessions, err = tx.Sessions(ctx, ids)
		return err
	})
	if err != nil {
		return Swept{}, fmt.Errorf("retain: sweep the recordings: read their sessions: %w", err)
	}
	byID := make(map[string]*consent.Session, len(sessions))
	for i, s := range sessions {
		byID[ids[i]] = s
	}
	for _, key := range keys {
		id, _ := recordingSession(key)
		ses := byID[id]
		switch {
		case ses != nil && ses.Recording.Key == key:
			continue // named: moved, or being moved
		case ses == nil || ses.RetentionStatus != consent.RetentionExpired:
			sw.Unexplained = append(sw.Unexplained, key)
			continue
		}
		switch err := blobs.Delete(ctx, key); {
		case err == nil:
			sw.Deleted++
		case errors.Is(err, blob.ErrLocked):
			sw.Locked++
		default:
			if ctx.Err() != nil {
				return Swept{}, ctx.Err()
			}
			if sw.Failed++; sw.FirstFailure == nil {
				sw.FirstFailure = err
			}
		}
	}
	return sw, nil
}

// recordingSession returns the session whose recording key is key, false
// when key is no recording key (consentkit.RecordingKey).
func recordingSession(key string) (string, bool) {
	id, ok := strings.CutPrefix(key, consentkit.RecordingKey(""))
	if !ok || !consent.ValidID(id) || consentkit.RecordingKey(id) != key {
		return "", false
	}
	return id, true
}

// sweepHandler is the recurring sweep: one page a run, the key to resume
// after kept in the job's payload.
func sweepHandler(cfg MoveConfig) jobs.Handler {
	svc, log := cfg.Service, cfg.Logger
	return jobs.Handler{Kind: JobSweepRecordings, Every: cfg.SweepEvery, Lease: time.Minute,
		Do: func(ctx context.Context, j *consent.Job) (jobs.Result, error) {
			sw, err := SweepRecordings(ctx, svc, string(j.Payload), cfg.SweepPage)
			if err != nil {
				return jobs.Result{}, err
			}
			if sw.Deleted > 0 {
				log.Info("recordings: objects no session names deleted", "deleted", sw.Deleted, "listed", sw.Listed)
			}
			if sw.Locked > 0 {
				log.Warn("recordings: objects no session names kept until their lock ends", "locked", sw.Locked)
			}
			if len(sw.Unexplained) > 0 {
				log.Warn("recordings: objects no session names kept, their sessions not purged (a database older than its recordings store?)",
					"objects", len(sw.Unexplained), "first", sw.Unexplained[0])
			}
			if sw.Failed > 0 {
				log.Error("recordings: objects no session names not deleted", "failed", sw.Failed, "err", sw.FirstFailure)
			}
			// Non-nil, so that "" (start over) replaces the payload too.
			return jobs.Result{Payload: append([]byte{}, sw.Next...)}, nil
		}}
}
