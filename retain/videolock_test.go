package retain_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/s3test"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/jobs"
	"github.com/consentkit/consentkit/retain"
	"github.com/consentkit/consentkit/retain/s3video"
)

// lockBucket is a bucket with Object Lock on a real S3 server (versitygw)
// and the video store on it.
type lockBucket struct {
	g      *s3test.Gateway
	name   string
	videos *s3video.Store
}

// eachLockBucket runs fn on each store kind, with a new bucket with
// Object Lock each.
func eachLockBucket(t *testing.T, fn func(t *testing.T, open func(testing.TB) consent.Store, b *lockBucket)) {
	g := s3test.Start(t)
	n := 0
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		n++
		b := &lockBucket{g: g, name: fmt.Sprintf("videolock-%d", n)}
		g.Bucket(t, b.name, true)
		var err error
		b.videos, err = s3video.New(ctx, s3video.Config{Client: g.Client, Bucket: b.name, RequireObjectLock: true})
		if err != nil {
			t.Fatal(err)
		}
		fn(t, open, b)
	})
}

// keys lists the objects under videos/<id>/.
func (b *lockBucket) keys(t *testing.T, id string) []string {
	t.Helper()
	out, err := b.g.Client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(b.name), Prefix: aws.String("videos/" + id + "/")})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	return keys
}

// lockedUntil is the compliance-mode lock of the object at path; zero when
// it has none.
func (b *lockBucket) lockedUntil(t *testing.T, path string) time.Time {
	t.Helper()
	key := strings.TrimPrefix(path, "s3://"+b.name+"/")
	head, err := b.g.Client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b.name), Key: &key})
	if err != nil {
		t.Fatal(err)
	}
	if head.ObjectLockRetainUntilDate == nil {
		return time.Time{}
	}
	if head.ObjectLockMode != types.ObjectLockModeCompliance {
		t.Errorf("%s is locked in mode %q, want COMPLIANCE", path, head.ObjectLockMode)
	}
	return *head.ObjectLockRetainUntilDate
}

// wantLockedUntil checks that the object at path is locked until date,
// rounded up to the whole second, and cannot be deleted.
func (b *lockBucket) wantLockedUntil(t *testing.T, path string, date time.Time) {
	t.Helper()
	if got := b.lockedUntil(t, path); got.Before(date) || got.Sub(date) >= time.Second {
		t.Errorf("%s locked until %v, want %v", path, got, date)
	}
	if err := b.videos.Delete(ctx, path); err == nil {
		t.Errorf("Delete removed %s, locked", path)
	}
}

// failingStore fails, while fail is set, the commit of a conversion (an
// update of a converted session) and of an attestation (an update of one
// no longer pending): the store failing when a job's result is recorded.
type failingStore struct {
	consent.Store
	fail atomic.Bool
}

type failingTx struct {
	consent.Tx
	s *failingStore
}

var errCommit = errors.New("the store fails the commit")

func (s *failingStore) Update(ctx context.Context, fn func(consent.Tx) error) error {
	return s.Store.Update(ctx, func(tx consent.Tx) error { return fn(failingTx{tx, s}) })
}

func (t failingTx) UpdateSession(ctx context.Context, ses *consent.Session) error {
	if t.s.fail.Load() && ses.VideoStatus == consent.VideoConverted {
		return errCommit
	}
	return t.Tx.UpdateSession(ctx, ses)
}

func (t failingTx) UpdateAttestation(ctx context.Context, a *consent.Attestation) error {
	if t.s.fail.Load() && a.Status != consent.AttestationPending {
		return errCommit
	}
	return t.Tx.UpdateAttestation(ctx, a)
}

// lockRunner runs the purge's jobs, the locks among them, on e's clock.
func lockRunner(t *testing.T, e *env, videos retain.VideoStore) (*retain.Purger, *jobs.Runner) {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	purger, err := retain.NewPurger(retain.PurgeConfig{Service: e.svc, Videos: videos, Pause: -1, Logger: quiet})
	check(t)(purger, err)
	runner, err := jobs.New(jobs.Config{Store: e.svc.Store(), Handlers: purger.Handlers(), Now: e.clock.Now, Logger: quiet})
	check(t)(runner, err)
	return purger, runner
}

// runLock runs one due job of kind and reports whether there was one.
func runLock(t *testing.T, r *jobs.Runner, kind string) bool {
	t.Helper()
	ok, err := r.RunOnce(ctx, kind)
	if err != nil {
		t.Fatalf("RunOnce(%s): %v", kind, err)
	}
	return ok
}

// A video whose conversion commit fails is not locked, and the worker
// removes it: no object is left locked for years that no row names (D45).
// Nor is its lock asked for.
func TestVideoOfFailedCommitRemoved(t *testing.T) {
	eachLockBucket(t, func(t *testing.T, open func(testing.TB) consent.Store, b *lockBucket) {
		st := &failingStore{Store: open(t)}
		e := setup(t, st, 1)
		_, runner := lockRunner(t, e, b.videos)
		st.fail.Store(true)
		w := e.worker(t, &fakeConverter{}, func(c *retain.WorkerConfig) { c.Videos = b.videos })
		if ok, err := w.RunOnce(ctx); !ok || !errors.Is(err, errCommit) {
			t.Fatalf("RunOnce = %v, %v; want the failed commit", ok, err)
		}
		if keys := b.keys(t, "s00"); len(keys) != 0 {
			for _, k := range keys {
				t.Errorf("left %s, locked until %v", k, b.lockedUntil(t, "s3://"+b.name+"/"+k))
			}
		}
		if s := e.session(t, "s00"); s.Video.Path != "" || s.VideoStatus == consent.VideoConverted {
			t.Errorf("session %+v names a video", s.Video)
		}
		if runLock(t, runner, retain.JobLockVideo) {
			t.Error("a video lock was due though no commit came")
		}
	})
}

// A committed video of a retained session is unlocked until its lock job
// runs, and then locked until the session's ExpiresAt.
func TestVideoLockedAfterCommit(t *testing.T) {
	eachLockBucket(t, func(t *testing.T, open func(testing.TB) consent.Store, b *lockBucket) {
		e := setup(t, open(t), 1)
		_, runner := lockRunner(t, e, b.videos)
		w := e.worker(t, &fakeConverter{}, func(c *retain.WorkerConfig) { c.Videos = b.videos })
		if ok, err := w.RunOnce(ctx); !ok || err != nil {
			t.Fatalf("RunOnce = %v, %v", ok, err)
		}
		ses := e.session(t, "s00")
		if ses.VideoStatus != consent.VideoConverted || ses.RetentionStatus != consent.RetentionRetained {
			t.Fatalf("session %s, %s", ses.VideoStatus, ses.RetentionStatus)
		}
		if until := b.lockedUntil(t, ses.Video.Path); !until.IsZero() {
			t.Errorf("the video was locked (until %v) before its lock job ran", until)
		}
		if !runLock(t, runner, retain.JobLockVideo) {
			t.Fatal("no video lock due after the commit")
		}
		b.wantLockedUntil(t, ses.Video.Path, ses.ExpiresAt)
		if keys := b.keys(t, "s00"); len(keys) != 1 {
			t.Errorf("objects of s00: %q, want the video alone", keys)
		}
	})
}

// A session purged before its video's lock job runs is not locked by it:
// the purge's removal deletes the video.
func TestVideoLockOfPurgedSession(t *testing.T) {
	eachLockBucket(t, func(t *testing.T, open func(testing.TB) consent.Store, b *lockBucket) {
		e := setup(t, open(t), 1)
		purger, runner := lockRunner(t, e, b.videos)
		w := e.worker(t, &fakeConverter{}, func(c *retain.WorkerConfig) { c.Videos = b.videos })
		if ok, err := w.RunOnce(ctx); !ok || err != nil {
			t.Fatalf("RunOnce = %v, %v", ok, err)
		}
		ses := e.session(t, "s00")
		e.clock.Add(ses.ExpiresAt.Sub(e.clock.Now()) + time.Hour)
		if n, err := purger.Purge(ctx); err != nil || n.Sessions != 1 || n.Videos != 1 {
			t.Fatalf("Purge = %+v, %v", n, err)
		}
		if !runLock(t, runner, retain.JobLockVideo) {
			t.Fatal("no video lock job")
		}
		if until := b.lockedUntil(t, ses.Video.Path); !until.IsZero() {
			t.Fatalf("the lock job of a purged session locked its video until %v", until)
		}
		if !runLock(t, runner, retain.JobDeleteVideo) {
			t.Fatal("no video removal due")
		}
		if keys := b.keys(t, "s00"); len(keys) != 0 {
			t.Errorf("objects of s00 after the purge: %q", keys)
		}
	})
}

// An attestation's screenshot is locked by its lock job, until the
// certificate's ExpiresAt, and again until the later date once the
// certificate is retained; one whose commit fails is removed.
func TestScreenshotLock(t *testing.T) {
	eachLockBucket(t, func(t *testing.T, open func(testing.TB) consent.Store, b *lockBucket) {
		st := &failingStore{Store: open(t)}
		e := attestSetup(t, st, 0)
		_, runner := lockRunner(t, &env{svc: e.svc, clock: e.clock}, b.videos)
		w, err := retain.NewWorker(retain.WorkerConfig{Service: e.svc, Converter: &fakeAttester{measure: honest()}, Videos: b.videos,
			TempDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		check(t)(w, err)
		if _, err := e.ask(t, e.cert); err != nil {
			t.Fatal(err)
		}

		st.fail.Store(true)
		if ok, err := w.AttestOnce(ctx); !ok || !errors.Is(err, errCommit) {
			t.Fatalf("AttestOnce = %v, %v; want the failed commit", ok, err)
		}
		if keys := b.keys(t, e.cert.ID); len(keys) != 0 {
			t.Errorf("the screenshot of a failed commit is left: %q", keys)
		}
		if runLock(t, runner, retain.JobLockScreenshot) {
			t.Error("a screenshot lock was due though no commit came")
		}

		st.fail.Store(false)
		e.clock.Add(3 * time.Minute) // the lease of the failed attempt has run out
		if ok, err := w.AttestOnce(ctx); !ok || err != nil {
			t.Fatalf("AttestOnce = %v, %v", ok, err)
		}
		att, err := e.svc.Attestation(ctx, "acme", e.cert.ID)
		check(t)(att, err)
		if att.Screenshot == "" {
			t.Fatal("no screenshot recorded")
		}
		if until := b.lockedUntil(t, att.Screenshot); !until.IsZero() {
			t.Errorf("the screenshot was locked (until %v) before its lock job ran", until)
		}
		if !runLock(t, runner, retain.JobLockScreenshot) {
			t.Fatal("no screenshot lock due after the commit")
		}
		cert := certificate(t, e.svc.Store(), e.cert.ID)
		b.wantLockedUntil(t, att.Screenshot, cert.ExpiresAt)

		// Retaining the certificate moves its date: the lock follows.
		check(t)(retain.New(e.svc).RetainCertificates(ctx, "acme", "acme", e.cert.SessionID))
		retained := certificate(t, e.svc.Store(), e.cert.ID)
		if !retained.ExpiresAt.After(cert.ExpiresAt) {
			t.Fatalf("the retained certificate expires at %v, not after %v", retained.ExpiresAt, cert.ExpiresAt)
		}
		if !runLock(t, runner, retain.JobLockScreenshot) {
			t.Fatal("no screenshot lock due after the retention")
		}
		b.wantLockedUntil(t, att.Screenshot, retained.ExpiresAt)
		if keys := b.keys(t, e.cert.ID); len(keys) != 1 {
			t.Errorf("objects of the certificate: %q, want the screenshot alone", keys)
		}
	})
}

// certificate reads certificate id.
func certificate(t *testing.T, st consent.Store, id string) *consent.Certificate {
	t.Helper()
	var c *consent.Certificate
	if err := st.View(ctx, func(tx consent.Tx) error {
		var err error
		c, err = tx.Certificate(ctx, id)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return c
}

// hookConverter runs during each conversion before it writes the video.
type hookConverter struct {
	fakeConverter
	during func()
}

func (h *hookConverter) Convert(ctx context.Context, events json.RawMessage, dst string) (time.Duration, error) {
	h.during()
	return h.fakeConverter.Convert(ctx, events, dst)
}

// A session purged while its recording is converted gets no video: its
// commit records nothing and asks for no lock, and the video written is
// removed, since the purge's removal found none to remove.
func TestVideoOfSessionPurgedWhileConverting(t *testing.T) {
	eachLockBucket(t, func(t *testing.T, open func(testing.TB) consent.Store, b *lockBucket) {
		e := setup(t, open(t), 1)
		purger, runner := lockRunner(t, e, b.videos)
		conv := &hookConverter{during: func() {
			e.clock.Add(e.session(t, "s00").ExpiresAt.Sub(e.clock.Now()) + time.Hour)
			if n, err := purger.Purge(ctx); err != nil || n.Sessions != 1 {
				t.Errorf("Purge = %+v, %v", n, err)
			}
		}}
		w := e.worker(t, conv, func(c *retain.WorkerConfig) { c.Videos = b.videos })
		if ok, err := w.RunOnce(ctx); !ok || err != nil {
			t.Fatalf("RunOnce = %v, %v", ok, err)
		}
		if keys := b.keys(t, "s00"); len(keys) != 0 {
			t.Errorf("objects of the purged s00: %q", keys)
		}
		if s := e.session(t, "s00"); s.Video.Path != "" || s.RetentionStatus != consent.RetentionExpired {
			t.Errorf("purged session: %s, video %+v", s.RetentionStatus, s.Video)
		}
		if runLock(t, runner, retain.JobLockVideo) {
			t.Error("a video lock was asked for a purged session")
		}
		if _, err := e.job(t, "s00"); consent.ErrorCode(err) != consent.NotFound {
			t.Errorf("the conversion job: %v; want it ended", err)
		}
	})
}
