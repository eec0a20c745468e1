package retain_test

import (
	"errors"
	"testing"

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
