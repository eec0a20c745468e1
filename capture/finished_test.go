package capture_test

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"testing"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/blob"
	"github.com/consentkit/consentkit/capture"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
)

// A consent that comes after the session's recording was finished for
// idleness — moved, or being moved — is issued over the recording as
// stored, its tail dropped whatever its seq, and its digest that of the
// stored recording (D35, D52): a consumer slow over the form still gets
// the certificate the form posted.
func TestConsentAfterRecordingFinished(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		st := open(t)
		blobs := &countedBlobs{Store: blob.NewMemory()}
		f := setupWith(t, st, blobs)
		svc, c, now := f.svc, f.cap, f.now
		record := func() (*capture.Started, capture.Caller) {
			t.Helper()
			s, err := c.Start(ctx, capture.StartRequest{PropertyID: "acme-web", URL: page, Origin: site})
			if err != nil {
				t.Fatal(err)
			}
			caller := capture.Caller{UploadToken: s.UploadToken, Origin: site}
			if _, err := c.Append(ctx, caller, capture.Chunk{SessionID: s.SessionID, Events: json.RawMessage(chunk0)}); err != nil {
				t.Fatal(err)
			}
			return s, caller
		}
		session := func(id string) *consent.Session {
			t.Helper()
			var ses *consent.Session
			if err := svc.Store().View(ctx, func(tx consent.Tx) error {
				var err error
				ses, err = tx.Session(ctx, id)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			return ses
		}
		stored := consent.Digest(sha256.Sum256([]byte(chunk0)))

		// Sessions idle past Config.RecordingIdle: three moved, one whose
		// move was cut short (its key recorded, its chunks still in the
		// database).
		type idle struct {
			name string
			seq  int
			s    *capture.Started
			c    capture.Caller
		}
		var moved []*idle
		for _, m := range []idle{{name: "tail next", seq: 1}, {name: "tail ahead", seq: 3}, {name: "tail over a stored seq", seq: 0}} {
			m.s, m.c = record()
			moved = append(moved, &m)
		}
		*now = now.Add(consentkit.DefaultRecordingIdle)
		if n, err := svc.MoveRecordings(ctx, 10); n != len(moved) || err != nil {
			t.Fatalf("MoveRecordings = %d, %v; want %d", n, err, len(moved))
		}
		cut := &idle{name: "being moved", seq: 1}
		cut.s, cut.c = record()
		*now = now.Add(consentkit.DefaultRecordingIdle)
		blobs.cut.Store(true)
		if _, err := svc.MoveRecordings(ctx, 10); !errors.Is(err, errCut) {
			t.Fatalf("MoveRecordings cut short: %v", err)
		}
		blobs.cut.Store(false)
		if ses := session(cut.s.SessionID); ses.Recording.Key == "" || ses.Recording.Moved() {
			t.Fatalf("after the cut: recording %+v; want its key alone", ses.Recording)
		}

		for _, m := range append(moved, cut) {
			t.Run(m.name, func(t *testing.T) {
				if _, err := c.Append(ctx, m.c, capture.Chunk{SessionID: m.s.SessionID, Seq: 1, Events: json.RawMessage(chunk1)}); !errors.Is(err, consentkit.ErrRecordingFinished) {
					t.Fatalf("chunk after the recording finished: %v; want ErrRecordingFinished", err)
				}
				cert, err := c.Issue(ctx, m.c, capture.Consent{SessionID: m.s.SessionID, Records: []consent.Record{{Text: consent1}}, URL: page,
					Tail: &capture.Chunk{Seq: m.seq, Events: json.RawMessage(chunk1)}})
				if err != nil {
					t.Fatalf("Issue with a tail after the recording finished: %v; want the certificate", err)
				}
				if cert.ID != m.s.CertificateID || cert.RecordingSHA256 != stored {
					t.Errorf("certificate %s with recording %x; want %s over the stored recording %x", cert.ID, cert.RecordingSHA256, m.s.CertificateID, stored)
				}
				ses := session(m.s.SessionID)
				if !ses.Closed() || ses.EventChunks != 1 || ses.EventBytes != int64(len(chunk0)) {
					t.Errorf("session: closed %v, %d chunks, %d bytes; want closed, the tail dropped", ses.Closed(), ses.EventChunks, ses.EventBytes)
				}
				if rec, err := svc.Recording(ctx, m.s.SessionID); err != nil || string(rec) != chunk0 {
					t.Errorf("Recording = %s, %v; want %s", rec, err, chunk0)
				}
				_, err = c.Issue(ctx, m.c, capture.Consent{SessionID: m.s.SessionID, Records: []consent.Record{{Text: consent1}}, URL: page})
				var closed *capture.ClosedError
				if !errors.As(err, &closed) || closed.CertificateID != m.s.CertificateID {
					t.Errorf("second consent: %v; want closed, naming %s", err, m.s.CertificateID)
				}
			})
		}
		// The cut move finishes; the certificate's digest is the object's.
		if n, err := svc.MoveRecordings(ctx, 10); n != 1 || err != nil {
			t.Fatalf("MoveRecordings after the cut = %d, %v; want 1", n, err)
		}
		for _, m := range append(moved, cut) {
			if ses := session(m.s.SessionID); !ses.Recording.Moved() || ses.Recording.SHA256 != stored {
				t.Errorf("%s: recording %+v; want moved, with the certificate's digest %x", m.name, ses.Recording, stored)
			}
		}
	})
}
