package retain_test

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/jobs"
	"github.com/consentkit/consentkit/metrics"
	"github.com/consentkit/consentkit/retain"
)

// A purged session whose conversion was under way (no Path recorded) has
// its videos removed by id (VideoSweeper) through metrics.Videos, the
// wrapper examples/server hands the purger: the wrapper is a VideoSweeper
// when the store it wraps is, and the removal job removes the video.
func TestPurgeSweepsThroughMetricsVideos(t *testing.T) {
	st := teststore.Memory(t)
	e := setup(t, st, 1) // s00 retained, conversion pending
	dir := retain.Dir{Root: e.videos}
	videos := metrics.New().Videos(dir)
	if _, ok := videos.(retain.VideoSweeper); !ok {
		t.Errorf("metrics.Videos(retain.Dir) is not a retain.VideoSweeper")
	}
	// A conversion wrote its video, then its commit never came (crash).
	src := filepath.Join(t.TempDir(), "v.mp4")
	if err := os.WriteFile(src, []byte("mp4 of s00"), 0o644); err != nil {
		t.Fatal(err)
	}
	orphan, err := dir.Put(ctx, "s00", src)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Update(ctx, func(tx consent.Tx) error {
		ses, err := tx.Session(ctx, "s00")
		if err != nil {
			return err
		}
		ses.VideoStatus = consent.VideoConverting
		return tx.UpdateSession(ctx, ses)
	}); err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	p, err := retain.NewPurger(retain.PurgeConfig{Service: e.svc, Videos: videos, Pause: -1, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	r, err := jobs.New(jobs.Config{Store: st, Handlers: p.Handlers(), Now: e.clock.Now, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Add(6 * 366 * 24 * time.Hour) // past the retention
	n, err := p.Purge(ctx)
	if err != nil || n.Sessions != 1 || n.Videos != 1 {
		t.Fatalf("Purge = %+v, %v; want the session and its video's removal", n, err)
	}
	if ran, err := r.RunOnce(ctx, retain.JobDeleteVideo); !ran || err != nil {
		t.Fatalf("RunOnce(video.delete) = %v, %v", ran, err)
	}
	if _, err := os.Stat(orphan.Path); err == nil {
		t.Errorf("video %s of a purged session is still there after its removal job ran", orphan.Path)
	}
}

// An attestation asks for the removal of its certificate's screenshots
// with no path; once the certificate is purged the job removes them by id,
// through metrics.Videos too.
func TestScreenshotSweepThroughMetricsVideos(t *testing.T) {
	shot, r, _ := screenshotRemoval(t, func(d retain.Dir) retain.VideoStore { return metrics.New().Videos(d) })
	if ran, err := r.RunOnce(ctx, retain.JobDeleteScreenshot); !ran || err != nil {
		t.Fatalf("RunOnce(screenshot.delete) = %v, %v", ran, err)
	}
	if _, err := os.Stat(shot); err == nil {
		t.Errorf("screenshot %s of a purged certificate is still there after its removal job ran", shot)
	}
}

// noSweep is a video store that cannot remove by id: no DeleteAll.
type noSweep struct{ retain.VideoStore }

// A removal that names no path, through a video store that is no
// VideoSweeper, fails its job (and is tried again) rather than end as
// done with the screenshots left in place.
func TestRemovalByIDNeedsSweeper(t *testing.T) {
	shot, r, st := screenshotRemoval(t, func(d retain.Dir) retain.VideoStore { return noSweep{d} })
	if ran, err := r.RunOnce(ctx, retain.JobDeleteScreenshot); !ran || err != nil {
		t.Fatalf("RunOnce(screenshot.delete) = %v, %v", ran, err)
	}
	if _, err := os.Stat(shot); err != nil {
		t.Fatalf("the screenshot: %v", err)
	}
	var job *consent.Job
	if err := st.View(ctx, func(tx consent.Tx) error {
		var err error
		job, err = tx.Job(ctx, retain.JobDeleteScreenshot, "c-gone")
		return err
	}); err != nil {
		t.Fatalf("the removal job after its failure: %v; want it kept, to be tried again", err)
	}
	if job.Attempts != 1 || !job.FailedAt.IsZero() || !strings.Contains(job.LastError, "VideoSweeper") {
		t.Errorf("the removal job: %d attempts, failed at %v, last error %q; want one failed attempt naming VideoSweeper, to be tried again",
			job.Attempts, job.FailedAt, job.LastError)
	}
}

// screenshotRemoval stores a screenshot of certificate c-gone in a
// directory and queues its removal by id (no path), as an attestation
// does, for a certificate purged since. It returns the screenshot's path,
// a runner of the purge's jobs through the video store that wrap makes of
// the directory, and the store.
func screenshotRemoval(t *testing.T, wrap func(retain.Dir) retain.VideoStore) (string, *jobs.Runner, consent.Store) {
	t.Helper()
	st := teststore.Memory(t)
	e := setup(t, st, 0)
	dir := retain.Dir{Root: e.videos}
	shot, err := dir.PutScreenshot(ctx, "c-gone", []byte("\x89PNG of c-gone"))
	if err != nil {
		t.Fatal(err)
	}
	now := e.clock.Now()
	if err := st.Update(ctx, func(tx consent.Tx) error {
		return tx.EnqueueJob(ctx, &consent.Job{Kind: retain.JobDeleteScreenshot, Key: "c-gone", RunAfter: now, CreatedAt: now, CompanyID: "acme"})
	}); err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	p, err := retain.NewPurger(retain.PurgeConfig{Service: e.svc, Videos: wrap(dir), Pause: -1, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	r, err := jobs.New(jobs.Config{Store: st, Handlers: p.Handlers(), Now: e.clock.Now, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return shot.Path, r, st
}
