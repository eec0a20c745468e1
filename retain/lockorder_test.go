package retain_test

import (
	"errors"
	"testing"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/blob"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/retain"
)

// A retained session's object is locked only after the commit that
// records it (D52): a move cut short between the object and its commit
// leaves the object unlocked — it can be deleted, and the next move writes
// it again and finishes; only then does the lock job lock it.
func TestRetainedMoveCutShortLocksAfterCommit(t *testing.T) {
	eachBlob(t, func(t *testing.T, st consent.Store, blobs blob.Store) {
		e := newMoveEnv(t, st, cutShort{blobs})
		e.record(t, "s1")
		check(t)(retain.New(e.svc).Retain(ctx, "acme", "acme", "s1"))
		e.clock.Add(consentkit.DefaultRecordingIdle)
		if _, err := e.svc.MoveRecordings(ctx, 10); !errors.Is(err, errCut) {
			t.Fatalf("MoveRecordings: %v; want the cut", err)
		}
		if ok, err := e.runner.RunOnce(ctx, consent.JobLockRecording); ok || err != nil {
			t.Fatalf("RunOnce(%s) before any commit = %v, %v; want no job", consent.JobLockRecording, ok, err)
		}
		if err := blobs.Delete(ctx, consentkit.RecordingKey("s1")); err != nil {
			t.Fatalf("Delete of the object whose commit never came: %v; want it unlocked", err)
		}
		again := newMoveEnvOn(t, e, blobs)
		again.move(t, 1) // writes the object again
		if ok, err := e.runner.RunOnce(ctx, consent.JobLockRecording); !ok || err != nil {
			t.Fatalf("RunOnce(%s) after the commit = %v, %v", consent.JobLockRecording, ok, err)
		}
		if err := blobs.Delete(ctx, consentkit.RecordingKey("s1")); !errors.Is(err, blob.ErrLocked) {
			t.Errorf("Delete of the retained recording once committed: %v; want ErrLocked", err)
		}
		again.wantRecording(t, "s1")
	})
}
