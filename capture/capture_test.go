package capture_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/blob"
	"github.com/consentkit/consentkit/capture"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/store/memstore"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var ctx = context.Background()

const (
	site     = "https://forms.acme.example"
	page     = site + "/quote?step=2"
	evil     = "https://evil.example"
	chunk0   = `[{"type":4,"data":{"href":"https://forms.acme.example/quote","width":800,"height":600},"timestamp":1795301391553}]`
	chunk1   = `[{"type":3,"data":{"source":5,"text":"jane@example.com","id":12},"timestamp":1795301392000}]`
	consent1 = "I agree to be contacted by Acme Insurance at the number I gave."
)

type fixture struct {
	svc *consentkit.Service
	cap *capture.Service
	now *time.Time // the Service's clock, which a test may move
}

func setup(t *testing.T, st consent.Store) fixture { return setupWith(t, st, nil) }

// setupWith is setup with finished recordings moved to blobs (nil: kept
// in the store).
func setupWith(t *testing.T, st consent.Store, blobs blob.Store) fixture {
	t.Helper()
	return setupConfig(t, st, func(cfg *consentkit.Config) {
		if blobs != nil {
			cfg.Recordings = blobs
		}
	})
}

// setupConfig is setup with the Service's configuration as set leaves it.
func setupConfig(t *testing.T, st consent.Store, set func(*consentkit.Config)) fixture {
	t.Helper()
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	f := fixture{now: &now}
	cfg := consentkit.Config{Now: func() time.Time { return *f.now }}
	set(&cfg)
	svc, err := consentkit.NewService(st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.AddProperty(ctx, consentkit.PropertyParams{ID: "acme-web", CompanyID: "acme", Name: "Form",
		AllowedOrigins: []string{"HTTPS://Forms.Acme.Example:443/"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.AddProperty(ctx, consentkit.PropertyParams{ID: "closed-web", CompanyID: "acme", Name: "No capture"}); err != nil {
		t.Fatal(err)
	}
	f.svc, f.cap = svc, capture.New(svc)
	return f
}

func (f fixture) start(t *testing.T) (*capture.Started, capture.Caller) {
	t.Helper()
	s, err := f.cap.Start(ctx, capture.StartRequest{PropertyID: "acme-web", URL: page, Origin: site})
	if err != nil {
		t.Fatal(err)
	}
	return s, capture.Caller{UploadToken: s.UploadToken, Origin: site}
}

func wantCode(t *testing.T, what string, err error, code consent.Code) {
	t.Helper()
	if got := consent.ErrorCode(err); got != code {
		t.Errorf("%s: %v has code %q, want %q", what, err, got, code)
	}
}

// The whole capture of one session, on every store: start, chunks with
// retries, consent, and the certificate it issues.
func TestCapture(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		f := setup(t, open(t))
		s, caller := f.start(t)
		if !strings.HasPrefix(s.UploadToken, capture.UploadTokenPrefix) || s.SessionID == "" || s.CertificateID == "" {
			t.Fatalf("Start = %+v", s)
		}
		for _, c := range []struct {
			seq    int
			events string
			want   int
		}{{0, chunk0, 1}, {0, chunk0, 1}, {1, chunk1, 2}, {1, chunk1, 2}} { // each sent twice, as a retry would
			n, err := f.cap.Append(ctx, caller, capture.Chunk{SessionID: s.SessionID, Seq: c.seq, Events: json.RawMessage(c.events)})
			if err != nil || n != c.want {
				t.Fatalf("Append(seq %d) = %d, %v; want %d", c.seq, n, err, c.want)
			}
		}
		vis := &consent.Visibility{InViewport: true, Visible: true, FontSizePx: 14, TextColor: "rgb(0, 0, 0)",
			BackgroundColor: "rgb(255, 255, 255)", ContrastRatio: 21}
		cert, err := f.cap.Issue(ctx, caller, capture.Consent{
			SessionID: s.SessionID, Records: []consent.Record{{Text: consent1, Types: []string{"tcpa"}}},
			Email: " Jane@Example.com ", Mobile: "(555) 010-2000", URL: page, Visibility: vis,
			ClientIP: "203.0.113.9", UserAgent: "Mozilla/5.0 test",
		})
		if err != nil {
			t.Fatal(err)
		}
		rec, err := f.svc.Recording(ctx, s.SessionID)
		if err != nil {
			t.Fatal(err)
		}
		if cert.ID != s.CertificateID || cert.Origin != page || cert.ClientIP != "203.0.113.9" ||
			cert.RecordingSHA256 != sha256.Sum256(rec) || cert.EmailDigest != consent.DigestOf("jane@example.com") ||
			cert.MobileDigest != consent.DigestOf("+15550102000") || !cmp.Equal(cert.Visibility, vis, cmpopts.EquateEmpty()) ||
			len(cert.Records) != 1 || cert.Records[0].Text != consent1 || !cert.Records[0].OptInAt.Equal(f.svc.Now()) {
			t.Errorf("certificate = %+v", cert)
		}
		err = f.svc.Store().View(ctx, func(tx consent.Tx) error {
			got, err := tx.Certificate(ctx, cert.ID)
			if err == nil && (got.RecordingSHA256 != cert.RecordingSHA256 || got.UserAgent != "Mozilla/5.0 test") {
				t.Errorf("stored certificate = %+v", got)
			}
			ses, err2 := tx.Session(ctx, s.SessionID)
			if err2 == nil && !ses.Closed() {
				t.Errorf("session not closed after consent: %+v", ses)
			}
			return errors.Join(err, err2)
		})
		if err != nil {
			t.Fatal(err)
		}

		// After consent: a re-sent stored chunk is still fine, a new one is
		// refused, and a second consent names the issued certificate.
		if _, err := f.cap.Append(ctx, caller, capture.Chunk{SessionID: s.SessionID, Seq: 1, Events: json.RawMessage(chunk1)}); err != nil {
			t.Errorf("re-sent chunk after consent: %v", err)
		}
		_, err = f.cap.Append(ctx, caller, capture.Chunk{SessionID: s.SessionID, Seq: 2, Events: json.RawMessage(chunk1)})
		wantCode(t, "chunk after consent", err, consent.Conflict)
		_, err = f.cap.Issue(ctx, caller, capture.Consent{SessionID: s.SessionID, Records: []consent.Record{{Text: "again"}}, URL: page})
		var ce *capture.ClosedError
		if !errors.As(err, &ce) || ce.CertificateID != cert.ID {
			t.Errorf("second consent: %v, want a ClosedError naming %s", err, cert.ID)
		}
		wantCode(t, "second consent", err, consent.Conflict)
	})
}

// Hostile capture input gets its documented answer and stores nothing.
func TestHostileInput(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		f := setup(t, open(t))
		s, caller := f.start(t)
		other, otherCaller := f.start(t)
		if _, err := f.cap.Append(ctx, caller, capture.Chunk{SessionID: s.SessionID, Events: json.RawMessage(chunk0)}); err != nil {
			t.Fatal(err)
		}
		append := func(c capture.Caller, id string, seq int, events string) error {
			_, err := f.cap.Append(ctx, c, capture.Chunk{SessionID: id, Seq: seq, Events: json.RawMessage(events)})
			return err
		}
		issue := func(c capture.Caller, id, url string) error {
			_, err := f.cap.Issue(ctx, c, capture.Consent{SessionID: id, Records: []consent.Record{{Text: consent1}}, URL: url})
			return err
		}
		start := func(property, url, origin string) error {
			_, err := f.cap.Start(ctx, capture.StartRequest{PropertyID: property, URL: url, Origin: origin})
			return err
		}
		for _, tc := range []struct {
			name string
			err  error
			code consent.Code
		}{
			{"start from a foreign origin", start("acme-web", page, evil), consent.Forbidden},
			{"start for a foreign page", start("acme-web", evil+"/form", site), consent.Forbidden},
			{"start without an origin", start("acme-web", page, ""), consent.Forbidden},
			{"start where capture is off", start("closed-web", page, site), consent.Forbidden},
			{"start for an unknown property", start("nope", page, site), consent.NotFound},
			{"start with a relative url", start("acme-web", "/quote", site), consent.Invalid},
			{"no token", append(capture.Caller{Origin: site}, s.SessionID, 1, chunk1), consent.Unauthorized},
			{"another session's token", append(otherCaller, s.SessionID, 1, chunk1), consent.Unauthorized},
			{"unknown session", append(caller, "ses_nope", 1, chunk1), consent.Unauthorized},
			{"foreign origin with the right token", append(capture.Caller{UploadToken: caller.UploadToken, Origin: evil}, s.SessionID, 1, chunk1), consent.Forbidden},
			{"gap", append(caller, s.SessionID, 2, chunk1), consent.Conflict},
			{"conflicting re-send", append(caller, s.SessionID, 0, chunk1), consent.Conflict},
			{"negative seq", append(caller, s.SessionID, -1, chunk1), consent.Invalid},
			{"not an array", append(caller, s.SessionID, 1, `{"type":3,"timestamp":1}`), consent.Invalid},
			{"empty array", append(caller, s.SessionID, 1, `[]`), consent.Invalid},
			{"not rrweb: no type", append(caller, s.SessionID, 1, `[{"timestamp":1}]`), consent.Invalid},
			{"not rrweb: fractional type", append(caller, s.SessionID, 1, `[{"type":3.5,"timestamp":1}]`), consent.Invalid},
			{"not rrweb: string timestamp", append(caller, s.SessionID, 1, `[{"type":3,"timestamp":"now"}]`), consent.Invalid},
			{"not rrweb: negative timestamp", append(caller, s.SessionID, 1, `[{"type":3,"timestamp":-5}]`), consent.Invalid},
			{"not rrweb: null event", append(caller, s.SessionID, 1, `[null]`), consent.Invalid},
			{"oversize chunk", append(caller, s.SessionID, 1, `[{"type":3,"timestamp":1,"pad":"`+strings.Repeat("x", 1<<20)+`"}]`), consent.TooLarge},
			{"consent without events", issue(otherCaller, other.SessionID, page), consent.Conflict},
			{"consent from a foreign page", issue(caller, s.SessionID, evil+"/x"), consent.Forbidden},
			{"consent with another session's token", issue(otherCaller, s.SessionID, page), consent.Unauthorized},
		} {
			wantCode(t, tc.name, tc.err, tc.code)
		}
		if err := append(capture.Caller{UploadToken: caller.UploadToken, Origin: evil}, s.SessionID, 1, chunk1); !errors.Is(err, capture.ErrOrigin) {
			t.Errorf("foreign origin: %v, want errors.Is ErrOrigin", err)
		}
		// Nothing partial was stored: one chunk, no certificate, open sessions.
		err := f.svc.Store().View(ctx, func(tx consent.Tx) error {
			for _, id := range []string{s.SessionID, other.SessionID} {
				ses, err := tx.Session(ctx, id)
				if err != nil {
					return err
				}
				if want := map[string]int{s.SessionID: 1, other.SessionID: 0}[id]; ses.EventChunks != want || ses.Closed() {
					t.Errorf("session %s: %d chunks, closed %v; want %d, open", id, ses.EventChunks, ses.Closed(), want)
				}
				if _, err := tx.Certificate(ctx, ses.CertificateID); consent.ErrorCode(err) != consent.NotFound {
					t.Errorf("certificate %s exists after refused consents: %v", ses.CertificateID, err)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

// A preflight learns only whether the origin may call the session.
func TestAllowsOrigin(t *testing.T) {
	f := setup(t, teststore.Memory(t))
	s, _ := f.start(t)
	for _, tc := range []struct {
		session, origin string
		want            bool
	}{
		{s.SessionID, site, true},
		{s.SessionID, evil, false},
		{s.SessionID, "", false},
		{"ses_unknown", site, false},
		{"not an id!", site, false},
	} {
		if got, err := f.cap.AllowsOrigin(ctx, tc.session, tc.origin); err != nil || got != tc.want {
			t.Errorf("AllowsOrigin(%q, %q) = %v, %v; want %v", tc.session, tc.origin, got, err, tc.want)
		}
	}
}

func TestNormalizeOrigin(t *testing.T) {
	for in, want := range map[string]string{
		"https://Example.COM":      "https://example.com",
		"https://example.com:443/": "https://example.com",
		"http://example.com:80":    "http://example.com",
		"http://localhost:8080":    "http://localhost:8080",
		"http://[::1]:8080":        "http://[::1]:8080",
		"https://example.com:8443": "https://example.com:8443",
	} {
		if got, err := consent.NormalizeOrigin(in); err != nil || got != want {
			t.Errorf("NormalizeOrigin(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "example.com", "ftp://example.com", "https://example.com/path", "https://example.com?q",
		"https://user@example.com", "https://", "javascript:alert(1)"} {
		if got, err := consent.NormalizeOrigin(bad); err == nil {
			t.Errorf("NormalizeOrigin(%q) = %q, want an error", bad, got)
		}
	}
}

// The events not yet sent may travel with the consent: stored in the same
// step, counted in the recording's SHA-256; a tail already stored is not
// stored twice, and one with a gap is refused with nothing stored.
func TestConsentWithTail(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		f := setup(t, open(t))
		records := []consent.Record{{Text: consent1}}
		issue := func(c capture.Caller, id string, seq int, events string) (*consent.Certificate, error) {
			return f.cap.Issue(ctx, c, capture.Consent{SessionID: id, Records: records, URL: page,
				Tail: &capture.Chunk{Seq: seq, Events: json.RawMessage(events)}})
		}
		// Only a tail: the recording is that one chunk.
		s, caller := f.start(t)
		cert, err := issue(caller, s.SessionID, 0, chunk0)
		if err != nil {
			t.Fatal(err)
		}
		if want := sha256.Sum256([]byte(chunk0)); cert.RecordingSHA256 != want {
			t.Errorf("RecordingSHA256 of a one-chunk recording = %x, want %x", cert.RecordingSHA256, want)
		}
		// A tail that was already stored (the chunk request arrived first).
		s, caller = f.start(t)
		if _, err := f.cap.Append(ctx, caller, capture.Chunk{SessionID: s.SessionID, Events: json.RawMessage(chunk0)}); err != nil {
			t.Fatal(err)
		}
		if _, err := issue(caller, s.SessionID, 0, chunk0); err != nil {
			t.Fatalf("tail already stored: %v", err)
		}
		rec, _ := f.svc.Recording(ctx, s.SessionID)
		if string(rec) != chunk0 {
			t.Errorf("recording after a re-sent tail = %s, want %s", rec, chunk0)
		}
		// A gap, and a conflicting tail: refused, nothing stored, still open.
		s, caller = f.start(t)
		if _, err := f.cap.Append(ctx, caller, capture.Chunk{SessionID: s.SessionID, Events: json.RawMessage(chunk0)}); err != nil {
			t.Fatal(err)
		}
		_, err = issue(caller, s.SessionID, 2, chunk1)
		wantCode(t, "tail with a gap", err, consent.Conflict)
		_, err = issue(caller, s.SessionID, 0, chunk1)
		wantCode(t, "conflicting tail", err, consent.Conflict)
		_, err = issue(caller, s.SessionID, 1, `[{"type":"x"}]`)
		wantCode(t, "tail that is not rrweb", err, consent.Invalid)
		cert, err = issue(caller, s.SessionID, 1, chunk1)
		if err != nil {
			t.Fatalf("tail after refusals: %v", err)
		}
		rec, _ = f.svc.Recording(ctx, s.SessionID)
		if want := sha256.Sum256(rec); cert.RecordingSHA256 != want || string(rec) != chunk0[:len(chunk0)-1]+","+chunk1[1:] {
			t.Errorf("recording %s with SHA-256 %x; certificate has %x", rec, want, cert.RecordingSHA256)
		}
	})
}

// A consent's tail may be the last chunk stored followed by more events,
// as the snippet sends a chunk still in flight at submit with the events
// after it: the service stores the rest as the next chunk, and the
// recording holds every event once (D34). Extending a chunk that is not
// the last, or a tail that only begins like the chunk, is refused.
func TestConsentTailExtendsTheLastChunk(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		f := setup(t, open(t))
		issue := func(c capture.Caller, id string, seq int, events string) (*consent.Certificate, error) {
			return f.cap.Issue(ctx, c, capture.Consent{SessionID: id, Records: []consent.Record{{Text: consent1}}, URL: page,
				Tail: &capture.Chunk{Seq: seq, Events: json.RawMessage(events)}})
		}
		both := chunk0[:len(chunk0)-1] + "," + chunk1[1:] // chunk0's events, then chunk1's
		s, caller := f.start(t)
		if _, err := f.cap.Append(ctx, caller, capture.Chunk{SessionID: s.SessionID, Events: json.RawMessage(chunk0)}); err != nil {
			t.Fatal(err)
		}
		cert, err := issue(caller, s.SessionID, 0, both)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := f.svc.Recording(ctx, s.SessionID)
		if err != nil || string(rec) != both || cert.RecordingSHA256 != sha256.Sum256(rec) {
			t.Errorf("recording %s (%v), certificate's SHA-256 %x; want %s, its own", rec, err, cert.RecordingSHA256, both)
		}

		// Two chunks stored: the first may not be extended.
		s, caller = f.start(t)
		for seq, c := range []string{chunk0, chunk1} {
			if _, err := f.cap.Append(ctx, caller, capture.Chunk{SessionID: s.SessionID, Seq: seq, Events: json.RawMessage(c)}); err != nil {
				t.Fatal(err)
			}
		}
		_, err = issue(caller, s.SessionID, 0, both)
		wantCode(t, "a tail extending a chunk that is not the last", err, consent.Conflict)
		// A tail that begins as the chunk does, within one of its events.
		cut := chunk1[:len(chunk1)-2] + `,"x":1}]`
		_, err = issue(caller, s.SessionID, 1, cut)
		wantCode(t, "a tail changing the chunk's last event", err, consent.Conflict)
		if rec, _ := f.svc.Recording(ctx, s.SessionID); string(rec) != both {
			t.Errorf("after the refusals, recording %s; want %s", rec, both)
		}
	})
}

// aloneStore records, for each Update, whether its context was marked
// consent.Alone.
type aloneStore struct {
	consent.Store
	alone []bool
}

func (s *aloneStore) Update(ctx context.Context, fn func(consent.Tx) error) error {
	s.alone = append(s.alone, consent.IsAlone(ctx))
	return s.Store.Update(ctx, fn)
}

// Append lets the store run it in a transaction of its own
// (consent.Alone): it locks its session's row and nothing else.
func TestAppendRunsAlone(t *testing.T) {
	st := &aloneStore{Store: memstore.New()}
	f := setup(t, st)
	s, caller := f.start(t)
	st.alone = nil
	if _, err := f.cap.Append(ctx, caller, capture.Chunk{SessionID: s.SessionID, Seq: 0, Events: json.RawMessage(chunk0)}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(st.alone, []bool{true}) {
		t.Errorf("Append's transactions marked Alone: %v, want [true]", st.alone)
	}
}

// A chunk refused for the recording's size stores nothing and spends none
// of the property's byte budget (D52: bytes are counted before they are
// stored); a chunk stored spends its bytes once.
func TestRefusedChunkSpendsNoBudget(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		f := setupConfig(t, open(t), func(cfg *consentkit.Config) {
			cfg.MaxRecordingBytes = int64(len(chunk0) + len(chunk1) - 1)
		})
		spent := 0
		f.cap.Budget = func(_ string, n int) error { spent += n; return nil }
		s, caller := f.start(t)
		if _, err := f.cap.Append(ctx, caller, capture.Chunk{SessionID: s.SessionID, Seq: 0, Events: json.RawMessage(chunk0)}); err != nil {
			t.Fatal(err)
		}
		if spent != len(chunk0) {
			t.Fatalf("a stored chunk of %d bytes spent %d", len(chunk0), spent)
		}
		for range 5 {
			_, err := f.cap.Append(ctx, caller, capture.Chunk{SessionID: s.SessionID, Seq: 1, Events: json.RawMessage(chunk1)})
			wantCode(t, "a chunk past the recording's size", err, consent.TooLarge)
		}
		if spent != len(chunk0) {
			t.Errorf("5 chunks refused as too large spent %d bytes of the property's budget; want none", spent-len(chunk0))
		}
	})
}

// A chunk whose function the store runs again spends its bytes once.
func TestChunkRunAgainSpendsOnce(t *testing.T) {
	st := &teststore.Rerun{Store: teststore.Memory(t)}
	f := setup(t, st)
	spent := 0
	f.cap.Budget = func(_ string, n int) error { spent += n; return nil }
	s, caller := f.start(t)
	st.Between = func() {}
	if _, err := f.cap.Append(ctx, caller, capture.Chunk{SessionID: s.SessionID, Seq: 0, Events: json.RawMessage(chunk0)}); err != nil {
		t.Fatal(err)
	}
	if spent != len(chunk0) {
		t.Errorf("a chunk of %d bytes, its function run twice, spent %d", len(chunk0), spent)
	}
}

// A start whose function the store runs again asks Admit, which spends the
// property's limit on starts, once.
func TestStartRunAgainAdmitsOnce(t *testing.T) {
	st := &teststore.Rerun{Store: teststore.Memory(t)}
	f := setup(t, st)
	asked := 0
	st.Between = func() {}
	_, err := f.cap.Start(ctx, capture.StartRequest{PropertyID: "acme-web", URL: page, Origin: site,
		Admit: func(string) error { asked++; return nil }})
	if err != nil || asked != 1 {
		t.Errorf("Start: %v, Admit asked %d times; want once", err, asked)
	}
}
