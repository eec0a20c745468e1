package capture_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/blob"
	"github.com/consentkit/consentkit/capture"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
)

// countedBlobs counts the reads of a recordings store and, while cut is
// set, fails each write after the object is written, as a move cut short
// between the object and its commit would.
type countedBlobs struct {
	blob.Store
	reads atomic.Int64
	cut   atomic.Bool
}

var errCut = errors.New("cut short after the object")

func (b *countedBlobs) Put(ctx context.Context, key string, r io.Reader) (blob.Info, error) {
	info, err := b.Store.Put(ctx, key, r)
	if err == nil && b.cut.Load() {
		return blob.Info{}, errCut
	}
	return info, err
}

func (b *countedBlobs) Open(ctx context.Context, key string) (io.ReadCloser, blob.Info, error) {
	b.reads.Add(1)
	return b.Store.Open(ctx, key)
}

func (b *countedBlobs) OpenRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, blob.Info, error) {
	b.reads.Add(1)
	return b.Store.OpenRange(ctx, key, offset, length)
}

// A chunk sent again once its recording has moved to the blob store is
// refused as finished, or as closed at consent, whatever its bytes, and
// the object is not read (D34, D52): a resend costs its own bytes, never
// a decompression inside the write transaction. While the chunks are
// still in the database — the object's key recorded but the move not
// committed — a resend is compared with them as before.
func TestResendAfterMoveReadsNoObject(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		st := open(t)
		blobs := &countedBlobs{Store: blob.NewMemory()}
		f := setupWith(t, st, blobs)
		svc, c, now := f.svc, f.cap, f.now
		record := func() (string, capture.Caller) {
			t.Helper()
			s, err := c.Start(ctx, capture.StartRequest{PropertyID: "acme-web", URL: page, Origin: site})
			if err != nil {
				t.Fatal(err)
			}
			caller := capture.Caller{UploadToken: s.UploadToken, Origin: site}
			for seq, ev := range []string{chunk0, chunk1} {
				if _, err := c.Append(ctx, caller, capture.Chunk{SessionID: s.SessionID, Seq: seq, Events: json.RawMessage(ev)}); err != nil {
					t.Fatalf("chunk %d: %v", seq, err)
				}
			}
			return s.SessionID, caller
		}
		resend := func(id string, caller capture.Caller, seq int, ev string) (int, error) {
			return c.Append(ctx, caller, capture.Chunk{SessionID: id, Seq: seq, Events: json.RawMessage(ev)})
		}

		// Being moved: the key is recorded, the chunks are still in the
		// database. A resend is compared with them.
		cutID, cutCaller := record()
		*now = now.Add(consentkit.DefaultRecordingIdle)
		blobs.cut.Store(true)
		if _, err := svc.MoveRecordings(ctx, 10); !errors.Is(err, errCut) {
			t.Fatalf("MoveRecordings cut short: %v", err)
		}
		blobs.cut.Store(false)
		before := blobs.reads.Load()
		if n, err := resend(cutID, cutCaller, 1, chunk1); err != nil || n != 2 {
			t.Errorf("resend while being moved: %d, %v; want 2 chunks", n, err)
		}
		_, err := resend(cutID, cutCaller, 0, chunk1)
		wantCode(t, "changed resend while being moved", err, consent.Conflict)
		if errors.Is(err, consentkit.ErrRecordingFinished) {
			t.Errorf("changed resend while being moved: %v; want compared with the database", err)
		}
		if _, err := resend(cutID, cutCaller, 2, chunk1); !errors.Is(err, consentkit.ErrRecordingFinished) {
			t.Errorf("new chunk while being moved: %v; want ErrRecordingFinished", err)
		}
		if n := blobs.reads.Load() - before; n != 0 {
			t.Errorf("resends while being moved read the blob store %d times; want none", n)
		}

		// Moved: idle, and closed at consent.
		idleID, idleCaller := record()
		closedID, closedCaller := record()
		_, err = c.Issue(ctx, closedCaller, capture.Consent{SessionID: closedID, Records: []consent.Record{{Text: consent1}}, URL: page})
		if err != nil {
			t.Fatal(err)
		}
		*now = now.Add(consentkit.DefaultRecordingIdle)
		if moved, err := svc.MoveRecordings(ctx, 10); moved != 3 || err != nil {
			t.Fatalf("MoveRecordings = %d, %v; want 3", moved, err)
		}
		before = blobs.reads.Load()
		for _, seq := range []int{0, 1, 2} {
			for _, ev := range []string{chunk0, chunk1} {
				if _, err := resend(idleID, idleCaller, seq, ev); !errors.Is(err, consentkit.ErrRecordingFinished) {
					t.Errorf("idle, moved: seq %d: %v; want ErrRecordingFinished", seq, err)
				}
				_, err := resend(closedID, closedCaller, seq, ev)
				if err == nil || !strings.Contains(err.Error(), "closed") {
					t.Errorf("closed, moved: seq %d: %v; want closed", seq, err)
				}
				wantCode(t, "closed, moved", err, consent.Conflict)
			}
		}
		if n := blobs.reads.Load() - before; n != 0 {
			t.Errorf("resends to moved recordings read the blob store %d times; want none", n)
		}
		// The object is still what the readers read.
		if _, err := svc.Recording(ctx, closedID); err != nil || blobs.reads.Load() == before {
			t.Errorf("Recording of a moved session: %v (reads %d)", err, blobs.reads.Load()-before)
		}
	})
}

// A consent refused for what it holds itself — a page of another origin,
// or anything IssueCertificate refuses of the certificate (email, mobile,
// consent text, opt-in method, visibility, user agent) — is refused before
// the recording is read: a moved recording's object is never opened for
// it. Else a caller holding the session's token, sending a few hundred
// bytes again and again (the session stays open), would have the whole
// recording decompressed and hashed each time.
func TestRefusedConsentReadsNoRecording(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		blobs := &countedBlobs{Store: blob.NewMemory()}
		f := setupWith(t, open(t), blobs)
		s, caller := f.start(t)
		for seq, ev := range []string{chunk0, chunk1} {
			if _, err := f.cap.Append(ctx, caller, capture.Chunk{SessionID: s.SessionID, Seq: seq, Events: json.RawMessage(ev)}); err != nil {
				t.Fatal(err)
			}
		}
		*f.now = f.now.Add(consentkit.DefaultRecordingIdle)
		if n, err := f.svc.MoveRecordings(ctx, 10); n != 1 || err != nil {
			t.Fatalf("MoveRecordings = %d, %v; want 1", n, err)
		}
		good := func() capture.Consent {
			return capture.Consent{SessionID: s.SessionID, URL: page, Records: []consent.Record{{Text: consent1, Types: []string{"tcpa"}}},
				Email: "jane@example.com", Mobile: "(555) 010-2000", UserAgent: "Mozilla/5.0 test"}
		}
		for _, tc := range []struct {
			name string
			bad  func(*capture.Consent)
			code consent.Code
		}{
			{"page of another origin", func(c *capture.Consent) { c.URL = evil + "/form" }, consent.Forbidden},
			{"email", func(c *capture.Consent) { c.Email = "not-an-email" }, consent.Invalid},
			{"mobile", func(c *capture.Consent) { c.Mobile = "12" }, consent.Invalid},
			{"empty text", func(c *capture.Consent) { c.Records[0].Text = " " }, consent.Invalid},
			{"opt-in method", func(c *capture.Consent) { c.Records[0].OptInMethod = "telepathy" }, consent.Invalid},
			{"consent's visibility", func(c *capture.Consent) {
				c.Records[0].Visibility = &consent.Visibility{FontSizePx: 14, ContrastRatio: 40}
			}, consent.Invalid},
			{"first visibility", func(c *capture.Consent) { c.Visibility = &consent.Visibility{FontSizePx: -1, ContrastRatio: 2} }, consent.Invalid},
			{"user agent", func(c *capture.Consent) { c.UserAgent = strings.Repeat("M", 2000) }, consent.Invalid},
			{"client address", func(c *capture.Consent) { c.ClientIP = strings.Repeat("1", 100) }, consent.Invalid},
		} {
			req := good()
			tc.bad(&req)
			before := blobs.reads.Load()
			_, err := f.cap.Issue(ctx, caller, req)
			wantCode(t, tc.name, err, tc.code)
			if n := blobs.reads.Load() - before; n != 0 {
				t.Errorf("%s: the refused consent opened the recording's object %d times; want none", tc.name, n)
			}
		}
		// The session is still open, and a consent it can issue reads the
		// recording, moved, as the certificate's digest needs.
		before := blobs.reads.Load()
		cert, err := f.cap.Issue(ctx, caller, good())
		if err != nil {
			t.Fatal(err)
		}
		if blobs.reads.Load() == before || cert.RecordingSHA256 != sha256.Sum256([]byte(consent.JoinChunks([][]byte{[]byte(chunk0), []byte(chunk1)}))) {
			t.Errorf("the consent issued read the object %d times, digest %x", blobs.reads.Load()-before, cert.RecordingSHA256)
		}
	})
}
