package capture_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/capture"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
)

// readingStore counts the bytes of chunks EachEventChunk hands out (the
// recording read to be hashed), and runs after, when set, once a View
// has ended: a request that lands while a consent's recording is hashed.
type readingStore struct {
	consent.Store
	read  *atomic.Int64
	after func()
}

type readingTx struct {
	consent.Tx
	read *atomic.Int64
}

func (t readingTx) EachEventChunk(ctx context.Context, id string, fn func([]byte) error) error {
	return t.Tx.EachEventChunk(ctx, id, func(c []byte) error {
		t.read.Add(int64(len(c)))
		return fn(c)
	})
}

func (s *readingStore) View(ctx context.Context, fn func(consent.Tx) error) error {
	err := s.Store.View(ctx, func(tx consent.Tx) error { return fn(readingTx{tx, s.read}) })
	if after := s.after; after != nil {
		s.after = nil
		after()
	}
	return err
}

func (s *readingStore) Update(ctx context.Context, fn func(consent.Tx) error) error {
	return s.Store.Update(ctx, func(tx consent.Tx) error { return fn(readingTx{tx, s.read}) })
}

// events is a JSON array of n rrweb events of about 100 bytes each.
func events(n int) string {
	e := `{"type":3,"timestamp":1795301392000,"data":{"source":5,"text":"` + strings.Repeat("a", 40) + `","id":12}}`
	return "[" + strings.Repeat(e+",", n-1) + e + "]"
}

// A consent whose tail is refused, which leaves its session open to be
// asked again, is refused before the recording is read (D52: a request
// costs by its own bytes): a tail ahead, one holding other events than
// the chunk stored at its seq, one extending a chunk that is not the
// last, and one adding more than a chunk may hold.
func TestRefusedTailReadsNoRecording(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		var read atomic.Int64
		f := setup(t, &readingStore{Store: open(t), read: &read})
		s, caller := f.start(t)
		big := events(5000) // about 500 kB
		for seq := range 3 {
			if _, err := f.cap.Append(ctx, caller, capture.Chunk{SessionID: s.SessionID, Seq: seq, Events: json.RawMessage(big)}); err != nil {
				t.Fatal(err)
			}
		}
		extended := big[:len(big)-1] + "," + events(12000)[1:] // the last chunk, and more than a chunk after it
		for _, tc := range []struct {
			name string
			tail capture.Chunk
			code consent.Code
		}{
			{"seq ahead", capture.Chunk{Seq: 1 << 30, Events: json.RawMessage(chunk1)}, consent.Conflict},
			{"seq stored with other events", capture.Chunk{Seq: 0, Events: json.RawMessage(chunk1)}, consent.Conflict},
			{"a chunk not the last, extended", capture.Chunk{Seq: 1, Events: json.RawMessage(big[:len(big)-1] + "," + chunk1[1:])}, consent.Conflict},
			{"more than a chunk after the last", capture.Chunk{Seq: 2, Events: json.RawMessage(extended)}, consent.TooLarge},
		} {
			before := read.Load()
			_, err := f.cap.Issue(ctx, caller, capture.Consent{SessionID: s.SessionID, URL: page,
				Records: []consent.Record{{Text: consent1}}, Tail: &tc.tail})
			wantCode(t, tc.name, err, tc.code)
			if n := read.Load() - before; n != 0 {
				t.Errorf("%s: the refused consent read %d bytes of the recording; want none", tc.name, n)
			}
		}
		cert, err := f.cap.Issue(ctx, caller, capture.Consent{SessionID: s.SessionID, URL: page,
			Records: []consent.Record{{Text: consent1}}, Tail: &capture.Chunk{Seq: 3, Events: json.RawMessage(chunk1)}})
		if err != nil {
			t.Fatalf("the consent after the refusals: %v", err)
		}
		rec, err := f.svc.Recording(ctx, s.SessionID)
		if err != nil || cert.RecordingSHA256 != sha256.Sum256(rec) || len(rec) != 3*len(big)-2+len(chunk1)-1 {
			t.Errorf("recording of %d bytes (%v), certificate's digest %x", len(rec), err, cert.RecordingSHA256)
		}
	})
}

// Once the recording is hashed, a tail that cannot be stored — the
// property's byte budget spent, the recording full — is dropped and the
// certificate issued over the recording as stored, never refused: a
// refusal there would leave the session open for a caller to make the
// service hash it again and again, and would cost the consumer the
// certificate the form posted.
func TestTailDroppedWhenItCannotBeStored(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		f := setupConfig(t, open(t), func(cfg *consentkit.Config) {
			cfg.MaxRecordingBytes = int64(len(chunk0) + len(chunk1) + 10)
		})
		issue := func(budget error, tail string) {
			t.Helper()
			s, caller := f.start(t)
			f.cap.Budget = nil
			if _, err := f.cap.Append(ctx, caller, capture.Chunk{SessionID: s.SessionID, Events: json.RawMessage(chunk0)}); err != nil {
				t.Fatal(err)
			}
			var asked int
			f.cap.Budget = func(string, int) error { asked++; return budget }
			cert, err := f.cap.Issue(ctx, caller, capture.Consent{SessionID: s.SessionID, URL: page,
				Records: []consent.Record{{Text: consent1}}, Tail: &capture.Chunk{Seq: 1, Events: json.RawMessage(tail)}})
			if err != nil {
				t.Fatalf("consent with a tail that cannot be stored (budget %v, %d bytes): %v", budget, len(tail), err)
			}
			rec, err := f.svc.Recording(ctx, s.SessionID)
			if err != nil || string(rec) != chunk0 || cert.RecordingSHA256 != sha256.Sum256([]byte(chunk0)) {
				t.Errorf("recording %s (%v), digest %x; want the chunk stored alone, its digest", rec, err, cert.RecordingSHA256)
			}
			if budget != nil && asked == 0 {
				t.Error("the property's budget was not asked")
			}
		}
		issue(consent.Errorf(consent.TooLarge, "the property's budget is spent"), chunk1)
		issue(nil, `[`+strings.Repeat(`{"type":3,"timestamp":1},`, 10)+`{"type":3,"timestamp":1}]`) // past MaxRecordingBytes
	})
}

// Chunks stored while a consent's recording is hashed are added by the
// write, read once, not by hashing the recording again; a tail that then
// extends the chunk stored meanwhile (the chunk in flight at submit,
// arriving first) stores only the events after it. The chunk in flight,
// arriving after the tail took its seq, is refused as closed (D35).
func TestChunksStoredWhileHashed(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		var read atomic.Int64
		st := &readingStore{Store: open(t), read: &read}
		f := setup(t, st)
		s, caller := f.start(t)
		if _, err := f.cap.Append(ctx, caller, capture.Chunk{SessionID: s.SessionID, Seq: 0, Events: json.RawMessage(chunk0)}); err != nil {
			t.Fatal(err)
		}
		inFlight := chunk1
		after := `[{"type":3,"data":{"source":2,"type":2,"id":14},"timestamp":1795301392500}]`
		both := inFlight[:len(inFlight)-1] + "," + after[1:]
		st.after = func() { // the chunk in flight lands once chunk 0 is hashed
			if _, err := f.cap.Append(ctx, caller, capture.Chunk{SessionID: s.SessionID, Seq: 1, Events: json.RawMessage(inFlight)}); err != nil {
				t.Errorf("the chunk in flight: %v", err)
			}
		}
		read.Store(0)
		cert, err := f.cap.Issue(ctx, caller, capture.Consent{SessionID: s.SessionID, URL: page,
			Records: []consent.Record{{Text: consent1}}, Tail: &capture.Chunk{Seq: 1, Events: json.RawMessage(both)}})
		if err != nil {
			t.Fatal(err)
		}
		if n := read.Load(); n != int64(len(chunk0)) {
			t.Errorf("the recording was read %d bytes to be hashed; want %d, once", n, len(chunk0))
		}
		rec, err := f.svc.Recording(ctx, s.SessionID)
		want := consent.JoinChunks([][]byte{[]byte(chunk0), []byte(inFlight), []byte(after)})
		if err != nil || string(rec) != string(want) || cert.RecordingSHA256 != sha256.Sum256(want) {
			t.Errorf("recording %s (%v), digest %x; want %s, its own", rec, err, cert.RecordingSHA256, want)
		}

		// A consent whose tail holds the chunk in flight whole takes its seq.
		s, caller = f.start(t)
		if _, err := f.cap.Issue(ctx, caller, capture.Consent{SessionID: s.SessionID, URL: page,
			Records: []consent.Record{{Text: consent1}}, Tail: &capture.Chunk{Seq: 0, Events: json.RawMessage(both)}}); err != nil {
			t.Fatal(err)
		}
		_, err = f.cap.Append(ctx, caller, capture.Chunk{SessionID: s.SessionID, Seq: 0, Events: json.RawMessage(inFlight)})
		if consent.ErrorCode(err) != consent.Conflict || !strings.Contains(err.Error(), "closed") {
			t.Errorf("the chunk in flight after the consent: %v; want a Conflict saying the session is closed", err)
		}
	})
}

// A consent whose write the store runs again spends its tail's bytes
// once.
func TestTailRunAgainSpendsOnce(t *testing.T) {
	st := &teststore.Rerun{Store: teststore.Memory(t)}
	f := setup(t, st)
	s, caller := f.start(t)
	if _, err := f.cap.Append(ctx, caller, capture.Chunk{SessionID: s.SessionID, Events: json.RawMessage(chunk0)}); err != nil {
		t.Fatal(err)
	}
	spent := 0
	f.cap.Budget = func(_ string, n int) error { spent += n; return nil }
	st.Between = func() {}
	if _, err := f.cap.Issue(ctx, caller, capture.Consent{SessionID: s.SessionID, URL: page,
		Records: []consent.Record{{Text: consent1}}, Tail: &capture.Chunk{Seq: 1, Events: json.RawMessage(chunk1)}}); err != nil {
		t.Fatal(err)
	}
	if spent != len(chunk1) {
		t.Errorf("a tail of %d bytes, its write run twice, spent %d", len(chunk1), spent)
	}
}
