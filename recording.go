package consentkit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/consentkit/consentkit/blob"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/recfile"
)

// DefaultRecordingIdle is how long a session takes no chunk before its
// recording is finished and moved to the recordings blob store (D52).
const DefaultRecordingIdle = 30 * time.Minute

// RecordingKey is the key of a session's recording object (D52).
func RecordingKey(sessionID string) string { return "recordings/" + sessionID }

// recordings reads moved recordings from the blob store (D52).
type recordings struct {
	blobs blob.Store
}

// limits bounds what is read of ses's object by what its row says the
// recording holds: a damaged or hostile object is an error as soon as it
// passes them, before its chunks are handed on, so that it can make a
// reader allocate at most the recording's size (Config.MaxRecordingBytes),
// as the converter and the attestation hold the whole recording anyway.
// What Config.MaxChunkBytes was when the chunks came is not known, and a
// bound lowered since must not make the recordings kept before unreadable:
// so a chunk is bounded by the recording's bytes alone.
func limits(ses *consent.Session) recfile.Limits {
	return recfile.Limits{Chunks: ses.EventChunks, Bytes: ses.EventBytes}
}

var errNoRecordings = errors.New("consentkit: the recording was moved to the recordings blob store, which this store was not given (use the Service's Store)")

// open opens ses's recording object, refusing one whose size is not
// the one its row recorded.
func (r *recordings) open(ctx context.Context, ses *consent.Session) (io.ReadCloser, error) {
	if r == nil {
		return nil, errNoRecordings
	}
	rc, info, err := r.blobs.Open(ctx, ses.Recording.Key)
	if err != nil {
		return nil, fmt.Errorf("consentkit: the recording of session %s: %w", ses.ID, err)
	}
	if info.Size != ses.Recording.Bytes {
		_ = rc.Close() // read only
		return nil, fmt.Errorf("consentkit: the recording of session %s: %w: an object of %d bytes, its session says %d",
			ses.ID, recfile.ErrCorrupt, info.Size, ses.Recording.Bytes)
	}
	return rc, nil
}

// each streams ses's chunks from its object, checking them against what
// the session row says of them.
func (r *recordings) each(ctx context.Context, ses *consent.Session, fn func([]byte) error) error {
	rc, err := r.open(ctx, ses)
	if err != nil {
		return err
	}
	defer func() { _ = rc.Close() }() // read only
	sum, err := recfile.Read(rc, limits(ses), func(_ int, c []byte) error { return fn(c) })
	if err != nil {
		return fmt.Errorf("consentkit: the recording of session %s: %w", ses.ID, err)
	}
	if sum.Chunks != ses.EventChunks || sum.Bytes != ses.EventBytes || sum.SHA256 != ses.Recording.SHA256 {
		return fmt.Errorf("consentkit: the recording of session %s: %w: it is not the recording its session names", ses.ID, recfile.ErrCorrupt)
	}
	return nil
}

// chunk reads one chunk of ses's object.
func (r *recordings) chunk(ctx context.Context, ses *consent.Session, seq int) ([]byte, error) {
	if seq < 0 || seq >= ses.EventChunks {
		return nil, consent.Errorf(consent.NotFound, "event chunk not found")
	}
	rc, err := r.open(ctx, ses)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rc.Close() }() // read only
	c, ok, err := recfile.Chunk(rc, limits(ses), seq)
	if err == nil && !ok {
		err = fmt.Errorf("%w: it has fewer chunks than its session", recfile.ErrCorrupt)
	}
	if err != nil {
		return nil, fmt.Errorf("consentkit: the recording of session %s: %w", ses.ID, err)
	}
	return c, nil
}

// Recordings returns the blob store that finished recordings are moved to
// (Config.Recordings); nil when there is none.
func (s *Service) Recordings() blob.Store {
	if s.recordings == nil {
		return nil
	}
	return s.recordings.blobs
}

// MoveRecordings moves at most limit finished recordings — of sessions
// closed at consent, or that took no chunk for Config.RecordingIdle —
// from the database into one compressed object each in the recordings
// blob store (D52), and returns how many it moved, and the first failure
// (one recording that fails does not stop the others). A job runs it (package
// retain); a program may call it to move the recordings already in the
// database (the consentkit command's "recordings move"). Without
// Config.Recordings it moves none.
//
// Each move is three steps, so that a crash anywhere leaves nothing lost
// and no object is written that no row names: the session's Recording.Key is
// recorded first (from then on the session takes no more chunks); the
// object is written; then one transaction records its size and digest and
// drops the chunks from the database. A move cut short is finished by the
// next run, which writes the same object again; a session purged before
// that has its object deleted by the purge. A session purged while its
// object is being written (between the first step and the last) has the
// object's removal asked for by the last step, in its transaction: the
// purge's own removal may have run before the object landed. A process
// that dies before that step leaves such an object, which no row names
// and no job removes: the sweep (retain.SweepRecordings) deletes it.
func (s *Service) MoveRecordings(ctx context.Context, limit int) (int, error) {
	if s.recordings == nil || limit <= 0 {
		return 0, nil
	}
	var ids []string
	err := s.store.View(ctx, func(tx consent.Tx) error {
		var err error
		ids, err = tx.SessionsToMove(ctx, s.Now().Add(-s.cfg.RecordingIdle), limit)
		return err
	})
	if err != nil {
		return 0, err
	}
	moved, failed := 0, 0
	var first error
	for _, id := range ids {
		ok, err := s.moveRecording(ctx, id)
		if err != nil {
			if ctx.Err() != nil {
				return moved, ctx.Err()
			}
			// One recording that cannot move (its object store refuses
			// it, say) must not hold up the others.
			if failed++; first == nil {
				first = fmt.Errorf("consentkit: move the recording of session %s: %w", id, err)
			}
			continue
		}
		if ok {
			moved++
		}
	}
	if failed > 1 {
		first = fmt.Errorf("%w (and %d more failed)", first, failed-1)
	}
	return moved, first
}

// errMoved stops a move that another one finished first, or that has
// nothing to move: a session purged, or active again since it was listed.
var errMoved = errors.New("moved already")

// moveRecording moves one session's recording; false when there was
// nothing to move.
func (s *Service) moveRecording(ctx context.Context, id string) (bool, error) {
	// 1. Name the object in the row.
	var ses *consent.Session
	err := s.store.Update(ctx, func(tx consent.Tx) error {
		var err error
		if ses, err = tx.Session(ctx, id); err != nil {
			return err
		}
		if !ses.ToMove(s.Now().Add(-s.cfg.RecordingIdle)) {
			return errMoved // moved, purged, or it took a chunk since it was listed
		}
		if ses.Recording.Key != "" {
			return nil
		}
		ses.Recording.Key = RecordingKey(id)
		return tx.SetRecording(ctx, id, ses.Recording)
	})
	if errors.Is(err, errMoved) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	// 2. Write the object, streaming the chunks from the database into it.
	pr, pw := io.Pipe()
	var sum recfile.Summary
	wrote := make(chan error, 1)
	go func() {
		err := s.store.View(ctx, func(tx consent.Tx) error {
			w := recfile.NewWriter(pw)
			err := tx.EachEventChunk(ctx, id, w.Add)
			if err != nil {
				return err
			}
			sum, err = w.Close()
			return err
		})
		_ = pw.CloseWithError(err) // nil closes it with io.EOF
		wrote <- err
	}()
	info, err := s.recordings.blobs.Put(ctx, ses.Recording.Key, pr)
	_ = pr.CloseWithError(errors.New("the object was not written")) // stops the writer if Put stopped reading
	if werr := <-wrote; err == nil {
		err = werr
	}
	if err != nil {
		return false, err
	}
	// 3. Record it and drop the chunks.
	var orphan, deleteNow, already bool
	err = s.store.Update(ctx, func(tx consent.Tx) error {
		orphan, deleteNow, already = false, false, false // the store may run this again
		now, err := tx.Session(ctx, id)
		if err != nil {
			return err
		}
		if now.Recording.Moved() {
			// Another move recorded it first. This one's Put wrote the same
			// bytes under the key: on S3 a new current version, which a
			// lock of the other's version does not cover. A retained
			// session's lock is asked for again (EnqueueOnce: once).
			already = true
			if now.RetentionStatus == consent.RetentionRetained {
				return EnqueueRecordingLock(ctx, tx, id, s.Now())
			}
			return nil
		}
		if now.Recording.Key != ses.Recording.Key {
			// Purged since step 1 (D43): the purge's removal of the object
			// may have run before the object was written, and no row names
			// it now. Its removal is asked for in this transaction. A
			// removal still queued may have deleted before the object
			// landed and be about to end: the object is then deleted at
			// once too, after the commit, and a crash before that delete
			// leaves it to the sweep (retain.SweepRecordings).
			orphan = true
			_, err := tx.Job(ctx, consent.JobDeleteRecording, id)
			switch {
			case err == nil:
				deleteNow = true
				return nil
			case consent.ErrorCode(err) == consent.NotFound:
				return tx.EnqueueJob(ctx, &consent.Job{Kind: consent.JobDeleteRecording, Key: id, Payload: []byte(ses.Recording.Key), RunAfter: s.Now(), CreatedAt: s.Now()})
			}
			return err
		}
		if now.EventChunks != sum.Chunks || now.EventBytes != sum.Bytes {
			return fmt.Errorf("the session changed while its object was written (%d chunks, %d written)", now.EventChunks, sum.Chunks)
		}
		rec := consent.Recording{Key: ses.Recording.Key, Bytes: info.Size, SHA256: sum.SHA256, At: s.Now()}
		if err := tx.SetRecording(ctx, id, rec); err != nil {
			return err
		}
		if now.RetentionStatus == consent.RetentionRetained {
			return EnqueueRecordingLock(ctx, tx, id, s.Now())
		}
		return nil
	})
	if err == nil && already {
		return false, nil
	}
	if err == nil && orphan {
		if deleteNow {
			if err := s.recordings.blobs.Delete(ctx, ses.Recording.Key); err != nil {
				return false, fmt.Errorf("delete the object of a session purged while it was written: %w", err)
			}
		}
		return false, nil
	}
	return err == nil, err
}

// EnqueueRecordingLock asks, in tx, for the lock of a retained session's
// moved recording until its ExpiresAt (consent.JobLockRecording), once tx
// commits. A lock already asked for and not yet done is enough: it reads
// the session when it runs (EnqueueOnce).
func EnqueueRecordingLock(ctx context.Context, tx consent.Tx, sessionID string, now time.Time) error {
	return EnqueueOnce(ctx, tx, &consent.Job{Kind: consent.JobLockRecording, Key: sessionID, RunAfter: now, CreatedAt: now})
}

// EnqueueOnce enqueues j in tx unless a job of its kind and key is queued
// already, for jobs that read what to do when they run (locks). The job
// is looked for first, not inserted and its conflict ignored: a refused
// insert ends a PostgreSQL transaction.
func EnqueueOnce(ctx context.Context, tx consent.Tx, j *consent.Job) error {
	_, err := tx.Job(ctx, j.Kind, j.Key)
	if consent.ErrorCode(err) != consent.NotFound {
		return err
	}
	return tx.EnqueueJob(ctx, j)
}
