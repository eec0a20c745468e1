package retain_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/audit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/jobs"
	"github.com/consentkit/consentkit/optout"
	"github.com/consentkit/consentkit/retain"
	"github.com/consentkit/consentkit/verify"
	"github.com/consentkit/consentkit/wallet"
)

const consentText = "I agree to be contacted by Acme."

// purgeEnv has company acme and, created at the start of its clock, a
// certificate and session per case: "plain" (never retained), "kept"
// (retained with its certificates, and given a video) and "revoked" (opted
// out by email).
type purgeEnv struct {
	store  consent.Store
	svc    *consentkit.Service
	clock  *clock
	videos retain.Dir
	purger *retain.Purger
	runner *jobs.Runner
}

func newPurgeEnv(t *testing.T, st consent.Store) *purgeEnv {
	t.Helper()
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	base := setup(t, st, 0) // company acme, its property web and 100 dollars, on a settable clock
	svc, clk := base.svc, base.clock
	e := &purgeEnv{store: st, svc: svc, clock: clk, videos: retain.Dir{Root: base.videos}}
	for _, id := range []string{"plain", "kept", "revoked"} {
		must(svc.StartSession(ctx, consentkit.SessionParams{ID: id, CompanyID: "acme", PropertyID: "web", URL: "https://acme.example/quote"}))
		must(svc.AppendEvents(ctx, id, json.RawMessage(`[{"type":4,"data":{"session":"`+id+`"}}]`)))
		must(svc.IssueCertificate(ctx, consentkit.CertificateParams{ID: "c-" + id, CompanyID: "acme", PropertyID: "web", SessionID: id,
			Origin: "https://acme.example/quote", Email: id + "@example.com", Records: []consent.Record{{Text: consentText}}}))
	}
	must(retain.New(svc).RetainCertificates(ctx, "acme", "acme", "kept"))
	// The kept session has a converted video.
	src := filepath.Join(t.TempDir(), "v.mp4")
	if err := os.WriteFile(src, []byte("mp4 of kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	video, err := e.videos.Put(ctx, "kept", src)
	must(video, err)
	must(nil, st.Update(ctx, func(tx consent.Tx) error {
		ses, err := tx.Session(ctx, "kept")
		if err != nil {
			return err
		}
		ses.VideoStatus, ses.Video = consent.VideoConverted, video
		return tx.UpdateSession(ctx, ses)
	}))
	must(optout.New(svc).OptOut(ctx, optout.Request{CompanyID: "acme", Email: "revoked@example.com"}))
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	e.purger, err = retain.NewPurger(retain.PurgeConfig{Service: svc, Videos: e.videos, Batch: 1, Logger: quiet})
	must(e.purger, err)
	e.runner, err = jobs.New(jobs.Config{Store: st, Handlers: e.purger.Handlers(), Now: clk.Now, Logger: quiet})
	must(e.runner, err)
	return e
}

func (e *purgeEnv) match(t *testing.T, id string) error {
	t.Helper()
	res, err := verify.New(e.svc).Match(ctx, "acme", verify.MatchRequest{CertificateID: id, CompanyID: "acme", Consent: consentText})
	if err == nil && !res.Valid {
		t.Fatalf("Match(%s) = invalid; want a match or an error", id)
	}
	return err
}

func (e *purgeEnv) purge(t *testing.T) retain.Purged {
	t.Helper()
	n, err := e.purger.Purge(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPurge runs the purge with a fake clock on every store: nothing before
// the default window ends; then the unretained certificates and recordings
// go (a purged certificate verifies as 404, its session answers expired and
// cannot be retained), retained ones stay and still verify, the revocation
// still refuses the revoked certificate and an opt-out retry; the retained
// items and the video go only once their retention has ended.
func TestPurge(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(tb testing.TB) consent.Store) {
		e := newPurgeEnv(t, open(t))
		if err := e.match(t, "c-plain"); err != nil {
			t.Fatalf("Match before the purge: %v", err)
		}
		auditBefore, err := e.svc.AuditLog(ctx, consent.AuditQuery{CompanyID: "acme", Limit: 1000})
		if err != nil || len(auditBefore) == 0 {
			t.Fatalf("audit log before the purge: %d entries, %v", len(auditBefore), err)
		}
		e.clock.Add(89 * 24 * time.Hour)
		if n := e.purge(t); n != (retain.Purged{}) {
			t.Fatalf("purge within the window removed %+v", n)
		}
		e.clock.Add(24 * time.Hour) // day 90: the default window has ended
		if n := e.purge(t); n != (retain.Purged{Certificates: 2, Sessions: 2}) {
			t.Fatalf("purge after the window = %+v; want 2 certificates and 2 sessions, in batches of 1", n)
		}
		if n := e.purge(t); n != (retain.Purged{}) {
			t.Fatalf("second purge = %+v; want nothing left", n)
		}
		for _, id := range []string{"c-plain", "c-revoked"} {
			if err := e.match(t, id); consent.ErrorCode(err) != consent.NotFound {
				t.Errorf("Match(%s) after the purge: %v; want NotFound (404)", id, err)
			}
		}
		// The audit log keeps every entry, its chain intact, those about the
		// purged certificates included.
		auditAfter, err := e.svc.AuditLog(ctx, consent.AuditQuery{CompanyID: "acme", Limit: 1000})
		if err != nil || len(auditAfter) < len(auditBefore) || auditAfter[len(auditBefore)-1].Hash != auditBefore[len(auditBefore)-1].Hash {
			t.Errorf("audit log after the purge: %d entries (%d before), %v", len(auditAfter), len(auditBefore), err)
		}
		if _, err := audit.VerifyChain(ctx, e.svc.Store(), "acme"); err != nil {
			t.Errorf("audit chain after the purge: %v", err)
		}
		if err := e.match(t, "c-kept"); err != nil {
			t.Errorf("Match of the retained certificate after the purge: %v", err)
		}
		rs := retain.New(e.svc)
		ses, err := rs.Status(ctx, "acme", "acme", "plain")
		if err != nil || ses.RetentionStatus != consent.RetentionExpired || ses.EventChunks != 0 || ses.URL != "" {
			t.Errorf("Status(plain) = %+v, %v; want expired, without recording or URL", ses, err)
		}
		if _, err := e.svc.Recording(ctx, "plain"); consent.ErrorCode(err) != consent.NotFound {
			t.Errorf("Recording of a purged session: %v; want NotFound", err)
		}
		if _, err := rs.Retain(ctx, "acme", "acme", "plain"); consent.ErrorCode(err) != consent.Conflict {
			t.Errorf("Retain of a purged session: %v; want Conflict", err)
		}
		if bal, _ := e.svc.Balance(ctx, "acme"); bal != 100*wallet.Dollar-10*wallet.Cent-2*15*wallet.Cent/10 {
			t.Errorf("balance %v; want the top-up less one retention and two matches (nothing charged for refusals)", bal)
		}
		// The consumer opts out again: the revocation record of the first
		// still stands, and the certificate still does not verify.
		res, err := optout.New(e.svc).OptOut(ctx, optout.Request{CompanyID: "acme", Email: "revoked@example.com"})
		if err != nil || len(res.CertificateIDs) != 0 {
			t.Errorf("opt-out retry = %+v, %v; want it accepted, with no certificate left to revoke", res, err)
		}
		err = e.store.View(ctx, func(tx consent.Tx) error {
			revs, err := tx.Revocations(ctx, "acme")
			if err != nil {
				return err
			}
			if len(revs) != 2 || len(revs[0].CertificateIDs) != 1 || revs[0].CertificateIDs[0] != "c-revoked" {
				t.Errorf("revocations = %+v; want the first naming c-revoked, and the retry", revs)
			}
			ledger, err := tx.Ledger(ctx, "acme")
			if err != nil || len(ledger) != 4 {
				t.Errorf("ledger has %d entries, %v; want all 4 kept", len(ledger), err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.match(t, "c-revoked"); consent.ErrorCode(err) != consent.NotFound {
			t.Errorf("Match(c-revoked) after the retry: %v; want NotFound", err)
		}

		// Five years on, the retention of the kept items has ended too: the
		// certificate, the recording and, through a job, the video go.
		kept, err := rs.Status(ctx, "acme", "acme", "kept")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(kept.Video.Path); err != nil {
			t.Fatalf("the video before its retention ended: %v", err)
		}
		e.clock.Add(5 * 365 * 24 * time.Hour)
		if n := e.purge(t); n != (retain.Purged{Certificates: 1, Sessions: 1, Videos: 1}) {
			t.Fatalf("purge after the long-term window = %+v; want the kept certificate, session and video", n)
		}
		if _, err := os.Stat(kept.Video.Path); err != nil {
			t.Fatalf("the video was removed before the purge committed its job: %v", err)
		}
		if worked, err := e.runner.RunOnce(ctx, retain.JobDeleteVideo); !worked || err != nil {
			t.Fatalf("RunOnce(video.delete) = %v, %v", worked, err)
		}
		if _, err := os.Stat(kept.Video.Path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the video after the job: %v; want it removed", err)
		}
		if ses, err := rs.Status(ctx, "acme", "acme", "kept"); err != nil || ses.RetentionStatus != consent.RetentionExpired || ses.Video.Path != "" {
			t.Errorf("Status(kept) = %+v, %v; want expired without video", ses, err)
		}
	})
}

// The purge is a recurring job of the runner: one run at start, then one
// every PurgeConfig.Every.
func TestPurgeIsScheduled(t *testing.T) {
	e := newPurgeEnv(t, teststore.Memory(t))
	if err := e.runner.Schedule(ctx); err != nil {
		t.Fatal(err)
	}
	e.clock.Add(90 * 24 * time.Hour)
	if worked, err := e.runner.RunOnce(ctx, retain.JobPurge); !worked || err != nil {
		t.Fatalf("RunOnce(purge) = %v, %v", worked, err)
	}
	if err := e.match(t, "c-plain"); consent.ErrorCode(err) != consent.NotFound {
		t.Errorf("Match(c-plain) after the scheduled purge: %v; want NotFound", err)
	}
	if worked, _ := e.runner.RunOnce(ctx, retain.JobPurge); worked {
		t.Error("the purge ran again before its interval")
	}
	e.clock.Add(time.Hour)
	if worked, err := e.runner.RunOnce(ctx, retain.JobPurge); !worked || err != nil {
		t.Errorf("RunOnce(purge) an hour later = %v, %v", worked, err)
	}
}

// Dir.Delete removes a video of the directory, accepts one already gone and
// refuses any other path.
func TestDirDelete(t *testing.T) {
	d := retain.Dir{Root: t.TempDir()}
	src := filepath.Join(t.TempDir(), "v.mp4")
	if err := os.WriteFile(src, []byte("mp4"), 0o644); err != nil {
		t.Fatal(err)
	}
	v, err := d.Put(ctx, "s1", src)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := d.Delete(ctx, v.Path); err != nil {
			t.Fatalf("Delete: %v", err)
		}
	}
	if _, err := os.Stat(v.Path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the video after Delete: %v", err)
	}
	for _, p := range []string{src, filepath.Join(d.Root, "..", "x.mp4"), filepath.Join(d.Root, "notes.txt")} {
		if err := d.Delete(ctx, p); err == nil {
			t.Errorf("Delete(%s) succeeded", p)
		}
	}
	if _, err := os.Stat(src); err != nil {
		t.Errorf("a file outside the directory was removed: %v", err)
	}
}

// Each Put writes a file of its own; Discard removes one alone; Delete
// removes every file of the id and kind, one of the earlier form
// (<Root>/<id>.mp4) too, and then the id's directory, leaving the other
// ids' files.
func TestDirFileOfItsOwn(t *testing.T) {
	d := retain.Dir{Root: t.TempDir()}
	src := filepath.Join(t.TempDir(), "v.mp4")
	if err := os.WriteFile(src, []byte("mp4"), 0o644); err != nil {
		t.Fatal(err)
	}
	var puts []consent.Video
	for range 3 {
		v, err := d.Put(ctx, "s1", src)
		if err != nil {
			t.Fatal(err)
		}
		puts = append(puts, v)
	}
	other, err := d.Put(ctx, "s2", src)
	if err != nil {
		t.Fatal(err)
	}
	shot, err := d.PutScreenshot(ctx, "s1", []byte("png"))
	if err != nil {
		t.Fatal(err)
	}
	earlier := filepath.Join(d.Root, "s1.mp4")
	if err := os.WriteFile(earlier, []byte("mp4 of before"), 0o644); err != nil {
		t.Fatal(err)
	}
	if puts[0].Path == puts[1].Path || filepath.Dir(puts[0].Path) != filepath.Join(d.Root, "s1") {
		t.Fatalf("two Puts wrote %s and %s", puts[0].Path, puts[1].Path)
	}
	if f, err := d.Open(ctx, consent.Video{Path: earlier}); err != nil {
		t.Errorf("a video of the earlier form does not open: %v", err)
	} else {
		_ = f.Close()
	}
	if _, err := d.Open(ctx, consent.Video{Path: puts[0].Path, Bytes: 4}); err == nil {
		t.Error("a video of 3 bytes opened as one of 4")
	}
	if err := d.Discard(ctx, puts[0].Path); err != nil {
		t.Fatal(err)
	}
	if err := d.Discard(ctx, earlier); err == nil {
		t.Error("Discard removed a video of the earlier form, which every Put of its id used to replace")
	}
	for _, p := range []string{puts[0].Path, puts[1].Path, puts[2].Path, earlier, other.Path, shot.Path} {
		_, err := os.Stat(p)
		if gone := errors.Is(err, os.ErrNotExist); gone != (p == puts[0].Path) {
			t.Errorf("after Discard of the first Put, %s: %v", p, err)
		}
	}
	if err := d.Delete(ctx, puts[2].Path); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{puts[1].Path, puts[2].Path, earlier, other.Path, shot.Path} {
		_, err := os.Stat(p)
		if gone := errors.Is(err, os.ErrNotExist); gone != (p != other.Path && p != shot.Path) {
			t.Errorf("after Delete of s1's video, %s: %v", p, err)
		}
	}
	if err := d.Delete(ctx, shot.Path); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(d.Root, "s1")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("s1's directory after its video and screenshot were deleted: %v", err)
	}
}

// downVideos is a video store whose Delete fails its first fails calls.
type downVideos struct {
	retain.Dir
	fails int
}

func (d *downVideos) Delete(ctx context.Context, path string) error {
	if d.fails > 0 {
		d.fails--
		return errors.New("the video store is down")
	}
	return d.Dir.Delete(ctx, path)
}

// A video's removal is tried until it is done, however long the video
// store stays down: 40 failures, a day apart at most, and the video still
// goes.
func TestVideoRemovalTriedUntilDone(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e := newPurgeEnv(t, open(t))
		videos := &downVideos{Dir: e.videos, fails: 40}
		quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
		purger, err := retain.NewPurger(retain.PurgeConfig{Service: e.svc, Videos: videos, Batch: 1, Pause: -1, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		runner, err := jobs.New(jobs.Config{Store: e.store, Handlers: purger.Handlers(), Now: e.clock.Now, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		kept, err := retain.New(e.svc).Status(ctx, "acme", "acme", "kept")
		if err != nil {
			t.Fatal(err)
		}
		e.clock.Add(6 * 365 * 24 * time.Hour)
		if n, err := purger.Purge(ctx); err != nil || n.Videos != 1 {
			t.Fatalf("Purge = %+v, %v", n, err)
		}
		for i := range 41 {
			worked, err := runner.RunOnce(ctx, retain.JobDeleteVideo)
			if !worked {
				t.Fatalf("attempt %d: no removal due (%v)", i+1, err)
			}
			e.clock.Add(25 * time.Hour)
		}
		if _, err := os.Stat(kept.Video.Path); !errors.Is(err, os.ErrNotExist) || videos.fails != 0 {
			t.Errorf("the video after 40 failed removals and one more: %v", err)
		}
	})
}

// A video that a conversion wrote but never recorded (a crash before its
// commit), of a session whose conversion then failed for good, goes with
// the session all the same: the purge asks for the removal of every video
// of a session whose recording was ever converted (D45).
func TestUnrecordedVideoPurged(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e := newPurgeEnv(t, open(t))
		src := filepath.Join(t.TempDir(), "v.mp4")
		if err := os.WriteFile(src, []byte("mp4 of a crashed attempt"), 0o644); err != nil {
			t.Fatal(err)
		}
		lost, err := e.videos.Put(ctx, "plain", src)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.store.Update(ctx, func(tx consent.Tx) error {
			ses, err := tx.Session(ctx, "plain")
			if err != nil {
				return err
			}
			ses.VideoStatus = consent.VideoFailed // and no path: the write was never recorded
			return tx.UpdateSession(ctx, ses)
		}); err != nil {
			t.Fatal(err)
		}
		e.clock.Add(consentkit.DefaultRetention + time.Hour)
		if n := e.purge(t); n.Videos != 1 {
			t.Fatalf("purge = %+v; want the removal of plain's videos asked", n)
		}
		for {
			worked, err := e.runner.RunOnce(ctx, retain.JobDeleteVideo)
			if err != nil {
				t.Fatal(err)
			}
			if !worked {
				break
			}
		}
		if _, err := os.Stat(lost.Path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the unrecorded video outlived its purged session: %v", err)
		}
	})
}

// TestRevokedBeforeAfterPurge holds D43's word on what a revocation keeps:
// an opt-out by email keeps its digest, so a later certificate of that
// consumer still shows revoked_before once the revoked certificate is
// purged; an opt-out by certificate id alone keeps the id, and the purge of
// the certificate takes its email digest with it.
func TestRevokedBeforeAfterPurge(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(tb testing.TB) consent.Store) {
		e := newPurgeEnv(t, open(t)) // c-revoked opted out by email at the start
		byID := e.clock.Now()
		if _, err := optout.New(e.svc).OptOut(ctx, optout.Request{CompanyID: "acme", CertificateID: "c-plain"}); err != nil {
			t.Fatal(err)
		}
		revokedBefore := func(email string) time.Time {
			t.Helper()
			var at time.Time
			err := e.store.View(ctx, func(tx consent.Tx) (err error) {
				at, err = tx.RevokedBefore(ctx, "acme", consent.DigestOf(email), consent.Digest{})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			return at
		}
		if at := revokedBefore("plain@example.com"); !at.Equal(byID) {
			t.Fatalf("before the purge, revoked before %v; want the opt-out by certificate id, %v", at, byID)
		}
		e.clock.Add(90 * 24 * time.Hour)
		if n := e.purge(t); n.Certificates != 2 {
			t.Fatalf("purge = %+v; want c-plain and c-revoked purged", n)
		}
		if at := revokedBefore("revoked@example.com"); at.IsZero() {
			t.Error("after the purge, the opt-out by email no longer shows; want its time")
		}
		if at := revokedBefore("plain@example.com"); !at.IsZero() {
			t.Errorf("after the purge, revoked before %v for the consumer opted out by certificate id; want none (the purge took the digest)", at)
		}
	})
}
