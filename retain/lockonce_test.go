package retain_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/blob"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/retain"
)

// A retention of a session whose recording has moved asks for its lock
// however many retentions came before the lock job runs — by the
// session's route, then its certificates' — and a batch's retention asks
// for it too; each recording is then locked (D52), on every store. (A
// second insert of the job would end a PostgreSQL transaction.)
func TestRecordingLockAskedOnce(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		blobs := blob.NewMemory()
		e := newMoveEnv(t, open(t), blobs)
		e.record(t, "s1")
		e.record(t, "s2")
		check(t)(e.svc.IssueCertificate(ctx, consentkit.CertificateParams{ID: "cert-1", CompanyID: "acme", PropertyID: "web", SessionID: "s1",
			Records: []consent.Record{{Text: "I agree."}}}))
		e.clock.Add(consentkit.DefaultRecordingIdle)
		e.move(t, 2)
		r := retain.New(e.svc)
		check(t)(r.RetainSession(ctx, "acme", "acme", "s1"))
		check(t)(r.RetainCertificates(ctx, "acme", "acme", "s1"))
		res, err := r.RetainBatch(ctx, "acme", "acme", []string{"s2"})
		if err != nil || res.Retained != 1 {
			t.Fatalf("RetainBatch = %+v, %v; want s2 retained", res, err)
		}
		for range 2 {
			if ok, err := e.runner.RunOnce(ctx, consent.JobLockRecording); !ok || err != nil {
				t.Fatalf("RunOnce(%s) = %v, %v; want a lock job for each session", consent.JobLockRecording, ok, err)
			}
		}
		if ok, err := e.runner.RunOnce(ctx, consent.JobLockRecording); ok || err != nil {
			t.Errorf("RunOnce(%s) = %v, %v; want one lock job a session", consent.JobLockRecording, ok, err)
		}
		for _, id := range []string{"s1", "s2"} {
			if err := blobs.Delete(ctx, consentkit.RecordingKey(id)); !errors.Is(err, blob.ErrLocked) {
				t.Errorf("%s: Delete of a retained recording: %v; want ErrLocked", id, err)
			}
		}
	})
}

// hookedLocks records each Lock, and runs hook once, inside the first:
// a commit made while a lock job runs.
type hookedLocks struct {
	blob.Store
	hook  func()
	locks []time.Time
}

func (h *hookedLocks) Lock(ctx context.Context, key string, until time.Time) error {
	if h.hook != nil {
		hook := h.hook
		h.hook = nil
		hook()
	}
	h.locks = append(h.locks, until)
	return h.Store.Lock(ctx, key, until)
}

// A retention committed while a recording's lock job runs — its ask for
// the lock finding that job still queued — is not lost: the transaction
// that ends the job reads the session again, finds a later date than it
// locked until, and asks for the job again, which locks until then (D52),
// on every store.
func TestRecordingLockFollowsARetentionDuringTheJob(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		blobs := &hookedLocks{Store: blob.NewMemory()}
		e := newMoveEnv(t, open(t), blobs)
		e.record(t, "s1")
		e.clock.Add(consentkit.DefaultRecordingIdle)
		e.move(t, 1)
		check(t)(retain.New(e.svc).RetainSession(ctx, "acme", "acme", "s1"))
		first := e.session(t, "s1").ExpiresAt
		later := first.Add(24 * time.Hour)
		blobs.hook = func() { // as a later retention would, while the job runs
			check(t)(nil, e.svc.Store().Update(ctx, func(tx consent.Tx) error {
				ses, err := tx.Session(ctx, "s1")
				if err != nil {
					return err
				}
				ses.ExpiresAt = later
				if err := tx.UpdateSession(ctx, ses); err != nil {
					return err
				}
				return consentkit.EnqueueRecordingLock(ctx, tx, "s1", e.svc.Now())
			}))
		}
		for range 2 {
			if ok, err := e.runner.RunOnce(ctx, consent.JobLockRecording); !ok || err != nil {
				t.Fatalf("RunOnce(%s) = %v, %v; want the job, then the job asked again", consent.JobLockRecording, ok, err)
			}
		}
		if ok, err := e.runner.RunOnce(ctx, consent.JobLockRecording); ok || err != nil {
			t.Errorf("RunOnce(%s) = %v, %v; want no job left", consent.JobLockRecording, ok, err)
		}
		if len(blobs.locks) != 2 || !blobs.locks[0].Equal(first) || !blobs.locks[1].Equal(later) {
			t.Errorf("locked until %v; want %v, then %v", blobs.locks, first, later)
		}
	})
}

// refusingLocks refuses the first fail Locks, as a store missing the
// permission to lock would until an operator grants it.
type refusingLocks struct {
	blob.Store
	fail int
}

func (r *refusingLocks) Lock(ctx context.Context, key string, until time.Time) error {
	if r.fail > 0 {
		r.fail--
		return errors.New("AccessDenied: s3:PutObjectRetention")
	}
	return r.Store.Lock(ctx, key, until)
}

// A lock job that keeps failing — for longer than any other job is tried
// — is tried again, at most hourly, until the store takes the lock, and
// meanwhile a later retention's ask is not lost to it: the recording ends
// locked until the later date (D52).
func TestRecordingLockNeverGivesUp(t *testing.T) {
	blobs := &refusingLocks{Store: blob.NewMemory(), fail: 40}
	e := newMoveEnv(t, teststore.Memory(t), blobs)
	e.record(t, "s1")
	e.clock.Add(consentkit.DefaultRecordingIdle)
	e.move(t, 1)
	check(t)(retain.New(e.svc).RetainSession(ctx, "acme", "acme", "s1"))
	for i := 0; blobs.fail > 0; i++ {
		if i > 100 {
			t.Fatal("the lock job stopped being tried")
		}
		if ok, _ := e.runner.RunOnce(ctx, consent.JobLockRecording); !ok {
			t.Fatalf("attempt %d: no lock job due; want it tried again", i)
		}
		e.clock.Add(time.Hour)
	}
	check(t)(nil, e.svc.Store().Update(ctx, func(tx consent.Tx) error { // a later retention, while it failed
		ses, err := tx.Session(ctx, "s1")
		if err != nil {
			return err
		}
		ses.ExpiresAt = ses.ExpiresAt.Add(24 * time.Hour)
		if err := tx.UpdateSession(ctx, ses); err != nil {
			return err
		}
		return consentkit.EnqueueRecordingLock(ctx, tx, "s1", e.svc.Now())
	}))
	if ok, err := e.runner.RunOnce(ctx, consent.JobLockRecording); !ok || err != nil {
		t.Fatalf("RunOnce(%s) = %v, %v; want the lock taken", consent.JobLockRecording, ok, err)
	}
	if err := blobs.Delete(ctx, consentkit.RecordingKey("s1")); !errors.Is(err, blob.ErrLocked) {
		t.Errorf("Delete once the store takes locks again: %v; want ErrLocked", err)
	}
}
