package retain_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/blob"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/jobs"
	"github.com/consentkit/consentkit/retain"
)

// stepped is a recordings store whose Put, for the keys it is told of,
// runs before[key] once before the object is written (the move's read of
// the database has ended), runs after[key] once the object is written
// and before Put returns to the move, and fails after writing the keys of
// cut, as a process killed between the object and the move's last commit
// would.
type stepped struct {
	blob.Store
	before, after map[string]func()
	cut           map[string]bool
}

func (s *stepped) Put(ctx context.Context, key string, r io.Reader) (blob.Info, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return blob.Info{}, err
	}
	if f := s.before[key]; f != nil {
		delete(s.before, key)
		f()
	}
	info, err := s.Store.Put(ctx, key, bytes.NewReader(data))
	if err != nil {
		return info, err
	}
	if f := s.after[key]; f != nil {
		delete(s.after, key)
		f()
	}
	if s.cut[key] {
		return blob.Info{}, errCut
	}
	return info, nil
}

// keys lists every key of blobs.
func keys(t *testing.T, blobs blob.Store) []string {
	t.Helper()
	k, err := blobs.ListAfter(ctx, "", "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// putObject puts data, or "left behind", at key.
func putObject(t testing.TB, blobs blob.Store, key string, data ...byte) {
	t.Helper()
	if data == nil {
		data = []byte("left behind")
	}
	if _, err := blobs.Put(ctx, key, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
}

// runSweep runs the recurring sweep of e's runner once, due or not.
func runSweep(t *testing.T, e *moveEnv, r *jobs.Runner) {
	t.Helper()
	if err := r.Schedule(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := r.RunOnce(ctx, retain.JobSweepRecordings); !ok || err != nil {
		t.Fatalf("RunOnce(%s) = %v, %v; want a sweep", retain.JobSweepRecordings, ok, err)
	}
	e.clock.Add(time.Minute) // the next one is due
}

// The case D52 left open, reproduced: a move names the object in its row,
// a purge commits and its removal of the object runs before the object
// lands, the object is written, and the process dies before the move's
// last commit, which would have asked for the removal again. No row names
// the object and no job removes it: the sweep deletes it. It keeps the
// object a row names, the one a move cut short is writing (its row names
// it; the next move finishes it), and what no purge explains: an object
// of no session, of a session not purged, and a key that is no
// recording's.
func TestSweepDeletesWhatAKilledMoveLeft(t *testing.T) {
	for _, k := range blobKinds(t) {
		t.Run(k.name, func(t *testing.T) {
			teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
				blobs, _ := k.open(t)
				w := &stepped{Store: blobs, before: map[string]func(){}, cut: map[string]bool{}}
				e := newMoveEnv(t, open(t), w)
				e.record(t, "orphan")
				e.clock.Add(time.Hour)
				e.record(t, "named")
				e.record(t, "writing")
				e.clock.Add(time.Hour)
				check(t)(e.svc.StartSession(ctx, consentkit.SessionParams{ID: "live", CompanyID: "acme", PropertyID: "web"}))

				orphan, named, writing := consentkit.RecordingKey("orphan"), consentkit.RecordingKey("named"), consentkit.RecordingKey("writing")
				w.cut[orphan], w.cut[writing] = true, true
				w.before[orphan] = func() {
					// "orphan" expires, the others do not.
					e.clock.Add(consentkit.DefaultRetention - 90*time.Minute)
					purged, err := e.purger.Purge(ctx)
					if err != nil || purged.Sessions != 1 || purged.Recordings != 1 {
						t.Errorf("Purge during the move = %+v, %v; want the session and its recording", purged, err)
					}
					if ok, err := e.runner.RunOnce(ctx, retain.JobDeleteRecording); !ok || err != nil {
						t.Errorf("RunOnce(%s) before the object = %v, %v", retain.JobDeleteRecording, ok, err)
					}
				}
				if n, err := e.svc.MoveRecordings(ctx, 10); n != 1 || !errors.Is(err, errCut) {
					t.Fatalf("MoveRecordings = %d, %v; want 1 moved, the others cut short", n, err)
				}
				if len(w.before) != 0 {
					t.Fatal("the purge did not run during the move")
				}
				if ses := e.session(t, "orphan"); ses.RetentionStatus != consent.RetentionExpired || ses.Recording != (consent.Recording{}) {
					t.Fatalf("orphan: %s, recording %+v; want expired, none", ses.RetentionStatus, ses.Recording)
				}
				if ok, err := e.runner.RunOnce(ctx, retain.JobDeleteRecording); ok || err != nil {
					t.Fatalf("RunOnce(%s) = %v, %v; want no removal left: it ran before the object", retain.JobDeleteRecording, ok, err)
				}
				putObject(t, blobs, consentkit.RecordingKey("nobody"))
				putObject(t, blobs, consentkit.RecordingKey("live"))
				putObject(t, blobs, "recordings/not/one")
				before := keys(t, blobs)
				if !slices.Contains(before, orphan) {
					t.Fatalf("objects %q; want %s, which the killed move left", before, orphan)
				}

				runSweep(t, e, e.runner)
				want := slices.DeleteFunc(before, func(k string) bool { return k == orphan })
				if got := keys(t, blobs); !slices.Equal(got, want) {
					t.Errorf("objects after the sweep: %q; want %q", got, want)
				}
				e.wantRecording(t, "named")
				if ses := e.session(t, "writing"); ses.Recording.Key != writing || ses.Recording.Moved() {
					t.Errorf("writing: recording %+v; want its key alone", ses.Recording)
				}
				again := newMoveEnvOn(t, e, blobs)
				again.move(t, 1)
				again.wantRecording(t, "writing")
				if got := keys(t, blobs); !slices.Contains(got, named) || !slices.Contains(got, writing) {
					t.Errorf("objects at the end: %q", got)
				}
			})
		})
	}
}

// Another instance sweeps while a move is under way: before its object
// is written (nothing to list), and once it is written but before the
// move's last commit, when the row names it already. The object is kept
// and the move ends as ever.
func TestSweepDuringMove(t *testing.T) {
	for _, k := range blobKinds(t) {
		t.Run(k.name, func(t *testing.T) {
			teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
				blobs, _ := k.open(t)
				key := consentkit.RecordingKey("s1")
				w := &stepped{Store: blobs, before: map[string]func(){}, after: map[string]func(){}}
				e := newMoveEnv(t, open(t), w)
				other := newMoveEnvOn(t, e, blobs) // the other instance
				e.record(t, "s1")
				e.clock.Add(consentkit.DefaultRecordingIdle)
				sweep := func(when string) {
					sw, err := retain.SweepRecordings(ctx, other.svc, "", 100)
					if err != nil || sw.Deleted != 0 || len(sw.Unexplained) != 0 {
						t.Errorf("sweep %s = %+v, %v; want nothing deleted, nothing unexplained", when, sw, err)
					}
				}
				w.before[key] = func() { sweep("before the object") }
				w.after[key] = func() {
					sweep("after the object, before the commit")
					if _, _, err := blobs.Open(ctx, key); err != nil {
						t.Errorf("the object after the sweep: %v", err)
					}
				}
				e.move(t, 1)
				if len(w.before)+len(w.after) != 0 {
					t.Fatal("the sweeps did not run")
				}
				e.wantRecording(t, "s1")
			})
		})
	}
}

// sweepEnv is a moveEnv whose runner sweeps pages of page objects, with
// orphans — objects of purged sessions, as killed moves leave them —
// among objects that rows name.
func sweepEnv(t *testing.T, st consent.Store, blobs blob.Store, page int, orphans, named []string) (*moveEnv, *jobs.Runner) {
	t.Helper()
	e := newMoveEnv(t, st, blobs)
	for _, id := range orphans {
		e.record(t, id)
	}
	e.clock.Add(consentkit.DefaultRetention)
	if purged, err := e.purger.Purge(ctx); err != nil || purged.Sessions != len(orphans) {
		t.Fatalf("Purge = %+v, %v", purged, err)
	}
	for _, id := range named {
		e.record(t, id)
	}
	e.clock.Add(consentkit.DefaultRecordingIdle)
	e.move(t, len(named))
	for _, id := range orphans {
		putObject(t, blobs, consentkit.RecordingKey(id))
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	h, err := retain.MoveHandlers(retain.MoveConfig{Service: e.svc, SweepPage: page, Logger: quiet})
	check(t)(h, err)
	r, err := jobs.New(jobs.Config{Store: e.svc.Store(), Handlers: h, Now: e.clock.Now, Logger: quiet})
	check(t)(r, err)
	return e, r
}

// Each run sweeps one page and the next resumes after it, the key kept
// in the job; past the last page the sweep starts over.
func TestSweepResumes(t *testing.T) {
	eachBlob(t, func(t *testing.T, st consent.Store, blobs blob.Store) {
		orphans := []string{"s01", "s03", "s05", "s07", "s09", "s11", "s13"}
		named := []string{"s02", "s06", "s10"}
		e, r := sweepEnv(t, st, blobs, 3, orphans, named)
		cursor := func() string {
			var j *consent.Job
			check(t)(nil, e.store.View(ctx, func(tx consent.Tx) error {
				var err error
				j, err = tx.Job(ctx, retain.JobSweepRecordings, jobs.EveryKey)
				return err
			}))
			return string(j.Payload)
		}
		rk := consentkit.RecordingKey
		for i, step := range []struct {
			left   int    // objects left after the run
			cursor string // where the next run starts
		}{
			{8, rk("s03")}, // s01 s02 s03
			{6, rk("s07")}, // s05 s06 s07
			{4, rk("s11")}, // s09 s10 s11
			{3, ""},        // s13, the end
			{3, rk("s10")}, // s02 s06 s10, from the start
			{3, ""},        // none after s10
		} {
			runSweep(t, e, r)
			if got := keys(t, blobs); len(got) != step.left {
				t.Errorf("run %d: %d objects left, %q; want %d", i+1, len(got), got, step.left)
			}
			if c := cursor(); c != step.cursor {
				t.Errorf("run %d: the next starts after %q; want %q", i+1, c, step.cursor)
			}
		}
		want := []string{rk("s02"), rk("s06"), rk("s10")}
		if got := keys(t, blobs); !slices.Equal(got, want) {
			t.Errorf("objects left: %q; want %q", got, want)
		}
		for _, id := range named {
			e.wantRecording(t, id)
		}
	})
}

// A locked orphan cannot be one (a lock follows the commit that names the
// object); met all the same, it is kept and counted, and the sweep goes
// on.
func TestSweepKeepsLockedOrphan(t *testing.T) {
	eachBlob(t, func(t *testing.T, st consent.Store, blobs blob.Store) {
		e, _ := sweepEnv(t, st, blobs, 10, []string{"a", "b"}, nil)
		locked := consentkit.RecordingKey("a")
		check(t)(nil, blobs.Lock(ctx, locked, time.Now().Add(time.Hour)))
		sw, err := retain.SweepRecordings(ctx, e.svc, "", 10)
		if err != nil || sw.Listed != 2 || sw.Deleted != 1 || sw.Locked != 1 || sw.Failed != 0 || sw.Next != "" {
			t.Errorf("SweepRecordings = %+v, %v; want 2 listed, 1 deleted, 1 locked", sw, err)
		}
		if got := keys(t, blobs); !slices.Equal(got, []string{locked}) {
			t.Errorf("objects left: %q; want the locked one", got)
		}
	})
}

// BenchmarkSweep sweeps a directory store of 10,000 recording objects
// on SQLite, a page of 1,000 a run: "pass" is the ten runs of a whole
// pass, deleting the 1,000 orphans (one object in ten; put back, untimed,
// before each pass), "page" one run that deletes none, "list" the
// listing of one page alone.
func BenchmarkSweep(b *testing.B) {
	const objects, page = 10_000, 1000
	st := teststore.SQLite(b)
	clk := &clock{t: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)}
	blobs, err := blob.NewDir(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	svc, err := consentkit.NewService(st, consentkit.Config{Now: clk.Now, Recordings: blobs})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme"}); err != nil {
		b.Fatal(err)
	}
	if _, err := svc.AddProperty(ctx, consentkit.PropertyParams{ID: "web", CompanyID: "acme", Name: "Form"}); err != nil {
		b.Fatal(err)
	}
	// The rows, each naming its object as a move does; every tenth
	// expires first and is purged, its object left: an orphan.
	var orphans []string
	for lo := 0; lo < objects; lo += 500 {
		err := st.Update(ctx, func(tx consent.Tx) error {
			for i := lo; i < lo+500; i++ {
				id, expires := fmt.Sprintf("s%05d", i), clk.Now().AddDate(1, 0, 0)
				if i%10 == 0 {
					orphans, expires = append(orphans, id), clk.Now().Add(time.Hour)
				}
				if err := tx.CreateSession(ctx, &consent.Session{ID: id, CompanyID: "acme", PropertyID: "web",
					RetentionStatus: consent.RetentionNone, CreatedAt: clk.Now(), ExpiresAt: expires}); err != nil {
					return err
				}
				if err := tx.SetRecording(ctx, id, consent.Recording{Key: consentkit.RecordingKey(id)}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	err = st.Update(ctx, func(tx consent.Tx) error {
		purged, err := tx.PurgeSessions(ctx, clk.Now().Add(2*time.Hour), objects)
		if err == nil && len(purged) != len(orphans) {
			err = fmt.Errorf("purged %d sessions, want %d", len(purged), len(orphans))
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	data := bytes.Repeat([]byte("r"), 4096)
	for i := range objects {
		putObject(b, blobs, consentkit.RecordingKey(fmt.Sprintf("s%05d", i)), data...)
	}
	b.Run("pass", func(b *testing.B) {
		for range b.N {
			b.StopTimer()
			for _, id := range orphans {
				putObject(b, blobs, consentkit.RecordingKey(id), data...)
			}
			b.StartTimer()
			after, deleted := "", 0
			for {
				sw, err := retain.SweepRecordings(ctx, svc, after, page)
				if err != nil || sw.Failed != 0 || len(sw.Unexplained) != 0 {
					b.Fatalf("SweepRecordings = %+v, %v", sw, err)
				}
				deleted += sw.Deleted
				if after = sw.Next; after == "" {
					break
				}
			}
			if deleted != len(orphans) {
				b.Fatalf("a pass deleted %d objects, want %d", deleted, len(orphans))
			}
		}
	})
	b.Run("page", func(b *testing.B) {
		// The orphans go first, when "pass" has not run.
		for after := ""; ; {
			sw, err := retain.SweepRecordings(ctx, svc, after, page)
			if err != nil {
				b.Fatal(err)
			}
			if after = sw.Next; after == "" {
				break
			}
		}
		b.ResetTimer()
		for range b.N {
			if sw, err := retain.SweepRecordings(ctx, svc, consentkit.RecordingKey("s05000"), page); err != nil || sw.Listed != page || sw.Deleted != 0 {
				b.Fatalf("SweepRecordings = %+v, %v", sw, err)
			}
		}
	})
	b.Run("list", func(b *testing.B) {
		for range b.N {
			if keys, err := blobs.ListAfter(ctx, consentkit.RecordingKey(""), consentkit.RecordingKey("s05000"), page); err != nil || len(keys) != page {
				b.Fatalf("ListAfter = %d keys, %v", len(keys), err)
			}
		}
	})
}
