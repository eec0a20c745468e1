package retain_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/blob"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/retain"
)

// beforeObject is a recordings store that runs hook between reading an
// object's bytes and writing them: between a move's first step, which
// names the object in the session's row, and its last, which records it.
// The move's read of the database has ended when hook runs.
type beforeObject struct {
	blob.Store
	hook func()
}

func (b *beforeObject) Put(ctx context.Context, key string, r io.Reader) (blob.Info, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return blob.Info{}, err
	}
	if b.hook != nil {
		b.hook()
	}
	return b.Store.Put(ctx, key, bytes.NewReader(data))
}

// A session purged while its object is being written leaves no object:
// the purge's removal may run before the object lands, so the move's last
// step, finding the row no longer names it, asks for its removal (D43,
// D52). On every store, with the purge's removal run before the object is
// written, and still queued.
func TestPurgeDuringMove(t *testing.T) {
	for _, k := range blobKinds(t) {
		t.Run(k.name, func(t *testing.T) {
			teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
				for _, removalFirst := range []bool{true, false} {
					name := "removal queued"
					if removalFirst {
						name = "removal first"
					}
					t.Run(name, func(t *testing.T) {
						blobs, _ := k.open(t)
						w := &beforeObject{Store: blobs}
						e := newMoveEnv(t, open(t), w)
						e.record(t, "s1")
						e.clock.Add(consentkit.DefaultRetention)
						key := consentkit.RecordingKey("s1")
						w.hook = func() {
							w.hook = nil
							purged, err := e.purger.Purge(ctx)
							if err != nil || purged.Sessions != 1 || purged.Recordings != 1 {
								t.Errorf("Purge during the move = %+v, %v; want the session and its recording", purged, err)
							}
							if removalFirst {
								if ok, err := e.runner.RunOnce(ctx, retain.JobDeleteRecording); !ok || err != nil {
									t.Errorf("RunOnce(%s) before the object = %v, %v", retain.JobDeleteRecording, ok, err)
								}
							}
						}
						if n, err := e.svc.MoveRecordings(ctx, 10); n != 0 || err != nil {
							t.Fatalf("MoveRecordings = %d, %v; want 0, nil: the session was purged", n, err)
						}
						if w.hook != nil {
							t.Fatal("the purge did not run during the move")
						}
						if ses := e.session(t, "s1"); ses.RetentionStatus != consent.RetentionExpired || ses.Recording != (consent.Recording{}) {
							t.Errorf("session after the move: %s, recording %+v; want expired, none", ses.RetentionStatus, ses.Recording)
						}
						// The removal the move asked for (or the purge's, still
						// queued) runs; then none is left.
						if ok, err := e.runner.RunOnce(ctx, retain.JobDeleteRecording); !ok || err != nil {
							t.Fatalf("RunOnce(%s) after the move = %v, %v; want the object's removal", retain.JobDeleteRecording, ok, err)
						}
						if ok, err := e.runner.RunOnce(ctx, retain.JobDeleteRecording); ok || err != nil {
							t.Errorf("RunOnce(%s) again = %v, %v; want nothing left", retain.JobDeleteRecording, ok, err)
						}
						if _, _, err := blobs.Open(ctx, key); !errors.Is(err, blob.ErrNotFound) {
							t.Errorf("%s after the purge: %v; want ErrNotFound", key, err)
						}
					})
				}
			})
		})
	}
}
