package retain_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/blob"
	"github.com/consentkit/consentkit/blob/s3blob"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/recfile"
	"github.com/consentkit/consentkit/internal/s3test"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/jobs"
	"github.com/consentkit/consentkit/retain"
	"github.com/consentkit/consentkit/store/sqlitestore"
	"github.com/consentkit/consentkit/wallet"
)

// A blobKind opens a new, empty recordings store of one implementation.
type blobKind struct {
	name string
	// open returns the store and where a process of its own finds it: a
	// directory, or an S3 endpoint and bucket.
	open func(t *testing.T) (blob.Store, string)
}

// blobKinds are memory, a directory and a bucket with Object Lock on a
// real S3 server (versitygw; skipped where it is not installed, except
// under CI=true, which must run it).
func blobKinds(t *testing.T) []blobKind {
	g := s3test.Start(t)
	n := 0
	return []blobKind{
		{"memory", func(*testing.T) (blob.Store, string) { return blob.NewMemory(), "" }},
		{"dir", func(t *testing.T) (blob.Store, string) {
			root := t.TempDir()
			d, err := blob.NewDir(root)
			if err != nil {
				t.Fatal(err)
			}
			return d, root
		}},
		{"s3", func(t *testing.T) (blob.Store, string) {
			n++
			bucket := fmt.Sprintf("recordings-%d", n)
			g.Bucket(t, bucket, true)
			s, err := s3blob.New(ctx, s3blob.Config{Client: g.Client, Bucket: bucket, TempDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			return s, g.Endpoint + " " + bucket
		}},
	}
}

// eachBlob runs fn on each blobKind over SQLite.
func eachBlob(t *testing.T, fn func(t *testing.T, st consent.Store, blobs blob.Store)) {
	for _, k := range blobKinds(t) {
		t.Run(k.name, func(t *testing.T) {
			blobs, _ := k.open(t)
			fn(t, teststore.SQLite(t), blobs)
		})
	}
}

// moveEnv is acme's property web with 100 dollars, on a settable clock,
// and a Service that moves finished recordings to blobs.
type moveEnv struct {
	store  consent.Store
	svc    *consentkit.Service
	clock  *clock
	blobs  blob.Store
	runner *jobs.Runner
	purger *retain.Purger
}

// recChunks are the chunks each test session is recorded in.
var recChunks = []string{
	`[{"type":4,"data":{"href":"https://acme.example/quote"},"timestamp":1}]`,
	`[{"type":2,"data":{"node":{"type":0,"childNodes":[]}},"timestamp":2},{"type":3,"data":{"source":1},"timestamp":3}]`,
	` [ {"type":3,"data":{"source":2,"x":"ü\u2028"},"timestamp":4} ] `,
}

func newMoveEnv(t *testing.T, st consent.Store, blobs blob.Store) *moveEnv {
	t.Helper()
	clk := &clock{t: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)}
	svc, err := consentkit.NewService(st, consentkit.Config{Now: clk.Now, Recordings: blobs})
	if err != nil {
		t.Fatal(err)
	}
	e := &moveEnv{store: st, svc: svc, clock: clk, blobs: blobs}
	check(t)(svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme"}))
	check(t)(svc.AddProperty(ctx, consentkit.PropertyParams{ID: "web", CompanyID: "acme", Name: "Form"}))
	check(t)(svc.TopUp(ctx, "acme", 100*wallet.Dollar, ""))
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	moves, err := retain.MoveHandlers(retain.MoveConfig{Service: svc, Logger: quiet})
	check(t)(moves, err)
	e.purger, err = retain.NewPurger(retain.PurgeConfig{Service: svc, Videos: retain.Dir{Root: t.TempDir()}, Pause: -1, Logger: quiet})
	check(t)(e.purger, err)
	e.runner, err = jobs.New(jobs.Config{Store: svc.Store(), Handlers: append(moves, e.purger.Handlers()...), Now: clk.Now, Logger: quiet})
	check(t)(e.runner, err)
	return e
}

// check returns what fails t on an error.
func check(t *testing.T) func(any, error) {
	t.Helper()
	return func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
}

// record starts session id and appends recChunks.
func (e *moveEnv) record(t *testing.T, id string) {
	t.Helper()
	check(t)(e.svc.StartSession(ctx, consentkit.SessionParams{ID: id, CompanyID: "acme", PropertyID: "web"}))
	for _, c := range recChunks {
		check(t)(e.svc.AppendEvents(ctx, id, json.RawMessage(c)))
	}
}

// close closes session id, as consent does.
func (e *moveEnv) close(t *testing.T, id string) {
	t.Helper()
	check(t)(nil, e.svc.Store().Update(ctx, func(tx consent.Tx) error {
		ses, err := tx.Session(ctx, id)
		if err != nil {
			return err
		}
		ses.ClosedAt = e.clock.Now()
		return tx.UpdateSession(ctx, ses)
	}))
}

func (e *moveEnv) session(t *testing.T, id string) *consent.Session {
	t.Helper()
	var s *consent.Session
	check(t)(nil, e.svc.Store().View(ctx, func(tx consent.Tx) error {
		var err error
		s, err = tx.Session(ctx, id)
		return err
	}))
	return s
}

func (e *moveEnv) move(t *testing.T, want int) {
	t.Helper()
	if n, err := e.svc.MoveRecordings(ctx, 10); n != want || err != nil {
		t.Fatalf("MoveRecordings = %d, %v; want %d", n, err, want)
	}
}

// joined is the recording of recChunks as Service.Recording returns it.
func joined() []byte {
	chunks := make([][]byte, len(recChunks))
	for i, c := range recChunks {
		chunks[i] = []byte(c)
	}
	return consent.JoinChunks(chunks)
}

// wantRecording checks that session id's recording reads back as
// recorded, whole and a chunk at a time, and hashes as its certificate
// would.
func (e *moveEnv) wantRecording(t *testing.T, id string) {
	t.Helper()
	got, err := e.svc.Recording(ctx, id)
	if err != nil || !bytes.Equal(got, joined()) {
		t.Errorf("Recording(%s) = %q, %v; want %q", id, got, err, joined())
	}
	check(t)(nil, e.svc.Store().View(ctx, func(tx consent.Tx) error {
		for seq, want := range recChunks {
			if c, err := tx.EventChunk(ctx, id, seq); err != nil || string(c) != want {
				t.Errorf("EventChunk(%d) = %q, %v; want %q", seq, c, err, want)
			}
		}
		if _, err := tx.EventChunk(ctx, id, len(recChunks)); consent.ErrorCode(err) != consent.NotFound {
			t.Errorf("EventChunk past the end: %v; want NotFound", err)
		}
		d, err := consent.RecordingDigest(ctx, tx, id)
		if err != nil || d != consent.Digest(sha256.Sum256(joined())) {
			t.Errorf("RecordingDigest = %x, %v; want the SHA-256 of the joined recording", d, err)
		}
		return nil
	}))
}

// A recording moves once its session is idle long enough or closed; it
// then reads back the same from its object, smaller than its events, and
// takes no more chunks; one still active stays in the database.
func TestMoveRecordings(t *testing.T) {
	for _, k := range blobKinds(t) {
		t.Run(k.name, func(t *testing.T) {
			teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
				blobs, _ := k.open(t)
				e := newMoveEnv(t, open(t), blobs)
				e.record(t, "idle")
				e.record(t, "closed")
				e.close(t, "closed")
				e.move(t, 1) // the closed one, at once
				if !e.session(t, "closed").Recording.Moved() || e.session(t, "idle").Recording.Key != "" {
					t.Fatal("the closed session's recording did not move alone")
				}
				e.clock.Add(consentkit.DefaultRecordingIdle - time.Second)
				e.move(t, 0)
				e.clock.Add(time.Second)
				e.move(t, 1)
				e.move(t, 0)

				for _, id := range []string{"idle", "closed"} {
					ses := e.session(t, id)
					rec := ses.Recording
					if rec.Key != consentkit.RecordingKey(id) || !rec.Moved() || rec.SHA256 != consent.Digest(sha256.Sum256(joined())) {
						t.Errorf("%s: recording %+v", id, rec)
					}
					if ses.EventChunks != len(recChunks) || ses.EventBytes != int64(len(strings.Join(recChunks, ""))) {
						t.Errorf("%s: %d chunks, %d bytes; want the counts as recorded", id, ses.EventChunks, ses.EventBytes)
					}
					rc, info, err := e.blobs.Open(ctx, rec.Key)
					check(t)(nil, err)
					_ = rc.Close()
					if info.Size != rec.Bytes {
						t.Errorf("%s: object of %d bytes, row says %d", id, info.Size, rec.Bytes)
					}
					e.wantRecording(t, id)
					// Closed at consent, it says so, as capture does.
					_, err = e.svc.AppendEvents(ctx, id, json.RawMessage(`[{"type":3,"timestamp":9}]`))
					if finished := errors.Is(err, consentkit.ErrRecordingFinished); finished != (id == "idle") ||
						consent.ErrorCode(err) != consent.Conflict || !finished && !strings.Contains(err.Error(), "closed") {
						t.Errorf("%s: AppendEvents once moved: %v; want a conflict, ErrRecordingFinished when idle", id, err)
					}
				}
			})
		})
	}
}

// cutShort is a recordings store that writes an object and then fails, as
// a process killed between the object and the commit would.
type cutShort struct{ blob.Store }

var errCut = errors.New("cut short after the object")

func (c cutShort) Put(ctx context.Context, key string, r io.Reader) (blob.Info, error) {
	if _, err := c.Store.Put(ctx, key, r); err != nil {
		return blob.Info{}, err
	}
	return blob.Info{}, errCut
}

// A move cut short between the object and the commit loses nothing: the
// chunks stay in the database and read from there, the session takes no
// more, and the next move finishes it; a session purged in between has
// its object removed.
func TestMoveCutShort(t *testing.T) {
	eachBlob(t, func(t *testing.T, st consent.Store, blobs blob.Store) {
		e := newMoveEnv(t, st, cutShort{blobs})
		e.record(t, "s1")
		e.record(t, "gone")
		e.clock.Add(consentkit.DefaultRecordingIdle)
		if n, err := e.svc.MoveRecordings(ctx, 10); n != 0 || !errors.Is(err, errCut) {
			t.Fatalf("MoveRecordings = %d, %v; want 0, the cut", n, err)
		}
		ses := e.session(t, "s1")
		if ses.Recording.Key == "" || ses.Recording.Moved() {
			t.Fatalf("after the cut: recording %+v; want its key alone", ses.Recording)
		}
		if _, _, err := blobs.Open(ctx, ses.Recording.Key); err != nil {
			t.Fatalf("the object written before the cut: %v", err)
		}
		e.wantRecording(t, "s1") // from the database
		if _, err := e.svc.AppendEvents(ctx, "s1", json.RawMessage(`[{"type":3,"timestamp":9}]`)); !errors.Is(err, consentkit.ErrRecordingFinished) {
			t.Errorf("AppendEvents while being moved: %v; want ErrRecordingFinished", err)
		}

		// "gone" was cut short too, and is purged: its object goes with it.
		gone := e.session(t, "gone").Recording.Key
		if gone == "" {
			t.Fatal("gone: no key recorded")
		}
		e.clock.Add(consentkit.DefaultRetention)
		purged, err := e.purger.Purge(ctx)
		if err != nil || purged.Recordings != 2 {
			t.Fatalf("Purge = %+v, %v; want 2 recordings to remove", purged, err)
		}
		for range 2 {
			if ok, err := e.runner.RunOnce(ctx, retain.JobDeleteRecording); !ok || err != nil {
				t.Fatalf("RunOnce(%s) = %v, %v", retain.JobDeleteRecording, ok, err)
			}
		}
		for _, key := range []string{gone, ses.Recording.Key} {
			if _, _, err := blobs.Open(ctx, key); !errors.Is(err, blob.ErrNotFound) {
				t.Errorf("%s after the purge: %v; want ErrNotFound", key, err)
			}
		}
	})
}

// The next move finishes one cut short.
func TestMoveFinishesCutShort(t *testing.T) {
	eachBlob(t, func(t *testing.T, st consent.Store, blobs blob.Store) {
		e := newMoveEnv(t, st, cutShort{blobs})
		e.record(t, "s1")
		e.clock.Add(consentkit.DefaultRecordingIdle)
		if _, err := e.svc.MoveRecordings(ctx, 10); !errors.Is(err, errCut) {
			t.Fatalf("MoveRecordings: %v; want the cut", err)
		}
		again := newMoveEnvOn(t, e, blobs)
		again.move(t, 1)
		if !again.session(t, "s1").Recording.Moved() {
			t.Fatal("not moved")
		}
		again.wantRecording(t, "s1")
	})
}

// newMoveEnvOn is a second Service on e's store and clock, moving to blobs.
func newMoveEnvOn(t *testing.T, e *moveEnv, blobs blob.Store) *moveEnv {
	t.Helper()
	svc, err := consentkit.NewService(e.store, consentkit.Config{Now: e.clock.Now, Recordings: blobs})
	if err != nil {
		t.Fatal(err)
	}
	return &moveEnv{store: e.store, svc: svc, clock: e.clock, blobs: blobs}
}

// A retained session's object is locked until its retention ends, after
// the commit that moves it (retained first) or that retains it (moved
// first): an earlier Delete is refused on every store.
func TestRetainedRecordingLocked(t *testing.T) {
	eachBlob(t, func(t *testing.T, st consent.Store, blobs blob.Store) {
		e := newMoveEnv(t, st, blobs)
		e.record(t, "first")
		e.record(t, "later")
		check(t)(retain.New(e.svc).Retain(ctx, "acme", "acme", "first"))
		e.clock.Add(consentkit.DefaultRecordingIdle)
		e.move(t, 2)
		check(t)(retain.New(e.svc).Retain(ctx, "acme", "acme", "later"))
		for range 2 {
			if ok, err := e.runner.RunOnce(ctx, consent.JobLockRecording); !ok || err != nil {
				t.Fatalf("RunOnce(%s) = %v, %v", consent.JobLockRecording, ok, err)
			}
		}
		for _, id := range []string{"first", "later"} {
			if err := blobs.Delete(ctx, consentkit.RecordingKey(id)); !errors.Is(err, blob.ErrLocked) {
				t.Errorf("%s: Delete of a retained recording: %v; want ErrLocked", id, err)
			}
			e.wantRecording(t, id)
		}
	})
}

// killChildVar, set, makes the test binary the child of TestMoveKilled:
// it holds the SQLite file, the store kind, and the directory or the S3
// endpoint and bucket.
const killChildVar = "CONSENTKIT_MOVE_KILL_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(killChildVar) != "" {
		os.Exit(killChild())
	}
	os.Exit(m.Run())
}

// hangAfterPut writes the object, says so, and waits to be killed.
type hangAfterPut struct{ blob.Store }

func (h hangAfterPut) Put(ctx context.Context, key string, r io.Reader) (blob.Info, error) {
	info, err := h.Store.Put(ctx, key, r)
	if err != nil {
		return info, err
	}
	fmt.Println("written")
	time.Sleep(time.Minute) // killed long before
	return info, errors.New("not killed")
}

// childBlobs opens the recordings store that the kill child was given.
func childBlobs(kind, where string) (blob.Store, error) {
	if kind == "dir" {
		return blob.NewDir(where)
	}
	endpoint, bucket, _ := strings.Cut(where, " ")
	client := s3.New(s3.Options{Region: "us-east-1", UsePathStyle: true, BaseEndpoint: aws.String(endpoint),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: s3test.AccessKey, SecretAccessKey: s3test.SecretKey}, nil
		})})
	return s3blob.New(ctx, s3blob.Config{Client: client, Bucket: bucket})
}

func killChild() int {
	parts := strings.SplitN(os.Getenv(killChildVar), " ", 3)
	fail := func(err error) int { fmt.Println("error:", err); return 1 }
	st, err := sqlitestore.Open(parts[0], sqlitestore.Config{})
	if err != nil {
		return fail(err)
	}
	blobs, err := childBlobs(parts[1], parts[2])
	if err != nil {
		return fail(err)
	}
	clk := time.Date(2026, 11, 21, 13, 0, 0, 0, time.UTC)
	svc, err := consentkit.NewService(st, consentkit.Config{Now: func() time.Time { return clk }, Recordings: hangAfterPut{blobs}})
	if err != nil {
		return fail(err)
	}
	_, err = svc.MoveRecordings(ctx, 10)
	return fail(err)
}

// A process killed with SIGKILL between writing the object and the
// commit that records it leaves the chunks in the database and an object
// that its row names; the next move finishes it.
func TestMoveKilled(t *testing.T) {
	for _, k := range blobKinds(t)[1:] { // a process's memory dies with it
		t.Run(k.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "consent.db")
			st, err := sqlitestore.Open(db, sqlitestore.Config{})
			if err != nil {
				t.Fatal(err)
			}
			if err := st.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			blobs, where := k.open(t)
			e := newMoveEnv(t, st, blobs)
			e.record(t, "s1")
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}

			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), killChildVar+"="+db+" "+k.name+" "+where)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			line, _ := bufio.NewReader(out).ReadString('\n')
			_ = cmd.Process.Kill() // SIGKILL
			_ = cmd.Wait()
			if strings.TrimSpace(line) != "written" {
				t.Fatalf("child said %q", line)
			}

			st2, err := sqlitestore.Open(db, sqlitestore.Config{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st2.Close() })
			e.store = st2
			again := newMoveEnvOn(t, e, blobs)
			ses := again.session(t, "s1")
			if ses.Recording.Key == "" || ses.Recording.Moved() {
				t.Fatalf("after the kill: recording %+v; want its key alone", ses.Recording)
			}
			again.wantRecording(t, "s1") // from the database
			again.clock.Add(time.Hour)
			again.move(t, 1)
			again.wantRecording(t, "s1") // from the object
		})
	}
}

// onPut is a recordings store that calls before(key) ahead of each Put.
// onPut runs before, when set, as each object is put: once its body is
// read, so that the read of the chunks that streams it, which on the
// memory store holds the store's lock, has ended (a hook that writes to
// the store before would wait for that lock, held by a writer waiting for
// this Put to read).
type onPut struct {
	blob.Store
	before func(key string)
}

func (o *onPut) Put(ctx context.Context, key string, r io.Reader) (blob.Info, error) {
	if o.before == nil {
		return o.Store.Put(ctx, key, r)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return blob.Info{}, err
	}
	o.before(key)
	return o.Store.Put(ctx, key, bytes.NewReader(b))
}

// A session listed as idle that takes a chunk before its turn to move
// comes (another's object is being written) is not finished: it is left
// in the database and takes the chunks after it, as its consumer is back.
func TestMoveSkipsASessionActiveAgain(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		blobs := &onPut{Store: blob.NewMemory()}
		e := newMoveEnv(t, open(t), blobs)
		e.record(t, "a")
		e.record(t, "b")
		e.clock.Add(consentkit.DefaultRecordingIdle)
		blobs.before = func(key string) {
			if key == consentkit.RecordingKey("a") {
				check(t)(e.svc.AppendEvents(ctx, "b", json.RawMessage(`[{"type":3,"timestamp":9}]`)))
			}
		}
		e.move(t, 1)
		blobs.before = nil
		if b := e.session(t, "b"); b.Recording.Key != "" || b.EventChunks != len(recChunks)+1 {
			t.Fatalf("b, active again while a moved: recording %+v, %d chunks; want in the database", b.Recording, b.EventChunks)
		}
		if _, err := e.svc.AppendEvents(ctx, "b", json.RawMessage(`[{"type":3,"timestamp":10}]`)); err != nil {
			t.Errorf("b's next chunk: %v", err)
		}
		if !e.session(t, "a").Recording.Moved() {
			t.Error("a did not move")
		}
	})
}

// A recording moved while chunks could be large reads back after
// Config.MaxChunkBytes was lowered below them: the bound applies to the
// chunks that come, not to those kept.
func TestMovedRecordingReadAfterMaxChunkLowered(t *testing.T) {
	e := newMoveEnv(t, teststore.Memory(t), blob.NewMemory())
	e.record(t, "s1")
	e.clock.Add(consentkit.DefaultRecordingIdle)
	e.move(t, 1)
	svc, err := consentkit.NewService(e.store, consentkit.Config{Now: e.clock.Now, Recordings: e.blobs, MaxChunkBytes: 16})
	check(t)(svc, err)
	lowered := *e
	lowered.svc = svc
	lowered.wantRecording(t, "s1")
}

// A damaged or hostile object in place of a moved recording is an error,
// and hands its readers no more than the recording its row names: one of
// another size than the row's is refused unread, and one of the row's
// size (a row rewritten, say) as soon as it passes the row's chunks or
// bytes, however many it holds.
func TestMovedRecordingHostileObject(t *testing.T) {
	e := newMoveEnv(t, teststore.SQLite(t), blob.NewMemory())
	e.record(t, "s1")
	e.close(t, "s1")
	e.move(t, 1)
	ses := e.session(t, "s1")
	var obj bytes.Buffer
	w := recfile.NewWriter(&obj)
	chunk := bytes.Repeat([]byte("a"), int(min(ses.EventBytes, 200)))
	for range 100_000 {
		check(t)(nil, w.Add(chunk))
	}
	check(t)(w.Close())
	hostile := obj.Bytes()
	check(t)(e.blobs.Put(ctx, ses.Recording.Key, bytes.NewReader(hostile)))

	read := func(t *testing.T) {
		t.Helper()
		var handed int64
		err := e.svc.Store().View(ctx, func(tx consent.Tx) error {
			return tx.EachEventChunk(ctx, "s1", func(c []byte) error { handed += int64(len(c)); return nil })
		})
		if !errors.Is(err, recfile.ErrCorrupt) || handed > ses.EventBytes {
			t.Errorf("EachEventChunk: %v, %d bytes handed on; want ErrCorrupt, at most the row's %d", err, handed, ses.EventBytes)
		}
		if _, err := e.svc.Recording(ctx, "s1"); !errors.Is(err, recfile.ErrCorrupt) {
			t.Errorf("Recording: %v; want ErrCorrupt", err)
		}
	}
	t.Run("size", read)
	t.Run("rows-size", func(t *testing.T) {
		rec := ses.Recording
		rec.Bytes = int64(len(hostile))
		check(t)(nil, e.store.Update(ctx, func(tx consent.Tx) error { return tx.SetRecording(ctx, "s1", rec) }))
		read(t)
	})
}

// The Go API refuses a chunk for a session whose recording takes no more,
// as capture does: closed at consent, or purged (a chunk kept then would
// never be moved or purged); nothing is appended.
func TestAppendEventsRefusedWhenClosedOrPurged(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e := newMoveEnv(t, open(t), blob.NewMemory())
		refused := func(id string) {
			t.Helper()
			before := e.session(t, id).EventChunks
			_, err := e.svc.AppendEvents(ctx, id, json.RawMessage(`[{"type":3,"timestamp":9}]`))
			if consent.ErrorCode(err) != consent.Conflict {
				t.Errorf("%s: AppendEvents = %v, want a conflict", id, err)
			}
			if n := e.session(t, id).EventChunks; n != before {
				t.Errorf("%s: %d chunks after the refusal, want %d", id, n, before)
			}
		}
		e.record(t, "closed")
		e.close(t, "closed")
		refused("closed")
		e.record(t, "purged")
		e.clock.Add(consentkit.DefaultRetention + time.Hour)
		if _, err := e.purger.Purge(ctx); err != nil {
			t.Fatal(err)
		}
		if ses := e.session(t, "purged"); ses.RetentionStatus != consent.RetentionExpired {
			t.Fatalf("purged: %s, want expired", ses.RetentionStatus)
		}
		refused("purged")
	})
}

// versioned is a recordings store that takes a Put over a locked object,
// as S3 takes a new version of one when the Put checked the lock before
// it was set: the bytes are read and dropped (the same bytes, here), the
// object and its lock kept.
type versioned struct{ *onPut }

func (v versioned) Put(ctx context.Context, key string, r io.Reader) (blob.Info, error) {
	c := &counted{r: r}
	info, err := v.onPut.Put(ctx, key, c)
	if errors.Is(err, blob.ErrLocked) {
		_, err := io.Copy(io.Discard, c) // what onPut left unread
		return blob.Info{Key: key, Size: c.n}, err
	}
	return info, err
}

// counted counts the bytes read from r.
type counted struct {
	r io.Reader
	n int64
}

func (c *counted) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// A move that finds the recording moved by another one while it wrote
// its own object asks for a retained session's lock again: on S3 its Put
// left a new current version of the key, which the lock of the other
// move's version does not cover.
func TestMoveOvertakenAsksLockAgain(t *testing.T) {
	mem := &onPut{Store: blob.NewMemory()}
	e := newMoveEnv(t, teststore.SQLite(t), versioned{mem})
	other := newMoveEnvOn(t, e, mem.Store)
	e.record(t, "s")
	check(t)(retain.New(e.svc).Retain(ctx, "acme", "acme", "s"))
	e.clock.Add(consentkit.DefaultRecordingIdle)
	mem.before = func(string) { // the other move runs and its lock is set first
		mem.before = nil
		other.move(t, 1)
		if ok, err := e.runner.RunOnce(ctx, consent.JobLockRecording); !ok || err != nil {
			t.Fatalf("the other move's lock: %v, %v", ok, err)
		}
	}
	e.move(t, 0)
	if ok, err := e.runner.RunOnce(ctx, consent.JobLockRecording); !ok || err != nil {
		t.Errorf("after a move overtaken by another: lock job run %v, %v; want it asked for again", ok, err)
	}
	e.wantRecording(t, "s")
}
