package httpadapter_test

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/blob"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/internal/teststore"
)

// finishedEnv is a capture handler on SQLite whose Service moves finished
// recordings to a memory blob store.
type finishedEnv struct {
	svc   *consentkit.Service
	db    *sql.DB
	blobs *blob.Memory
	h     http.Handler
}

func newFinishedEnv(t *testing.T) *finishedEnv {
	t.Helper()
	st, db := teststore.SQLiteWithDB(t)
	blobs := blob.NewMemory()
	svc, err := consentkit.NewService(st, consentkit.Config{Recordings: blobs})
	must(t, err)
	_, err = svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme"})
	must(t, err)
	_, err = svc.AddProperty(ctx, consentkit.PropertyParams{ID: "acme-form", CompanyID: "acme", Name: "Quote form", AllowedOrigins: []string{formOrigin}})
	must(t, err)
	h, err := httpadapter.New(httpadapter.Config{Service: svc, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		CaptureStartsPerMinute: 100_000, CapturePropertyPerMinute: 100_000, CaptureBytesPerMinute: 1 << 30})
	must(t, err)
	return &finishedEnv{svc: svc, db: db, blobs: blobs, h: h}
}

// capture records chunks through the capture API and consents: a
// finished session with its certificate.
func (e *finishedEnv) capture(t *testing.T, chunks []json.RawMessage) {
	t.Helper()
	s := startSession(t, e.h)
	for seq, c := range chunks {
		rec := call(e.h, "POST", "/capture/sessions/"+s.SessionID+"/events", formOrigin, s.UploadToken,
			fmt.Sprintf(`{"seq":%d,"events":%s}`, seq, c))
		if rec.Code != 200 {
			t.Fatalf("chunk %d: %d %s", seq, rec.Code, rec.Body)
		}
	}
	body := `{"consents":[{"text":"I agree to be called by Acme.","types":["tcpa"]}],"email":"jane@example.com",` +
		`"url":"` + formPage + `","visibility":{"in_viewport":true,"visible":true,"font_size_px":16,` +
		`"text_color":"rgb(0, 0, 0)","background_color":"rgb(255, 255, 255)","contrast_ratio":21}}`
	if rec := call(e.h, "POST", "/capture/sessions/"+s.SessionID+"/consent", formOrigin, s.UploadToken, body); rec.Code != 201 {
		t.Fatalf("consent: %d %s", rec.Code, rec.Body)
	}
}

// usedBytes is the size of the SQLite database's pages in use.
func (e *finishedEnv) usedBytes(t *testing.T) int64 {
	t.Helper()
	var pages, free, size int64
	for q, v := range map[string]*int64{"PRAGMA page_count": &pages, "PRAGMA freelist_count": &free, "PRAGMA page_size": &size} {
		must(t, e.db.QueryRow(q).Scan(v))
	}
	return (pages - free) * size
}

// formChunks is the project's form recording cut into chunks of about
// 4 KiB of events, as the snippet sends it.
func formChunks(t *testing.T) ([]json.RawMessage, int64) {
	t.Helper()
	raw, err := os.ReadFile("../testdata/rrweb-form-recording.json")
	must(t, err)
	var events []json.RawMessage
	must(t, json.Unmarshal(raw, &events))
	return chunked(events, 4<<10)
}

// chunked cuts events into JSON arrays of about size bytes each, and
// returns them with their total size.
func chunked(events []json.RawMessage, size int) ([]json.RawMessage, int64) {
	var (
		out   []json.RawMessage
		cur   []json.RawMessage
		n     int
		total int64
	)
	flush := func() {
		if len(cur) > 0 {
			b, _ := json.Marshal(cur)
			out, cur, n = append(out, b), nil, 0
			total += int64(len(b))
		}
	}
	for _, ev := range events {
		cur, n = append(cur, ev), n+len(ev)
		if n >= size {
			flush()
		}
	}
	flush()
	return out, total
}

// landingPage is a full snapshot of a generated landing page of about
// 0.9 MiB — sections of headings, paragraphs, lists, links and images
// with varied classes and text — and a few hundred interactions.
func landingPage() []json.RawMessage {
	rng := rand.New(rand.NewPCG(7, 36))
	words := strings.Fields(`insurance quote coverage home auto life health plan premium deductible agent
		save compare today free fast easy secure trusted partner policy claim family protect budget rate
		monthly annual benefit option choose apply call email phone contact privacy terms consent offer
		discount bundle new customer minutes online estimate review rating support service local national
		the a of and to in for with your our you we is are be get more best`)
	classes := strings.Fields(`hero section card grid col row btn btn-primary btn-lg text-muted lead title
		subtitle container wrapper feature icon list item link nav footer header banner cta badge`)
	text := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[rng.IntN(len(words))])
		}
		return b.String()
	}
	id := 10
	node := func(tag string, attrs map[string]string, children []any) map[string]any {
		id++
		return map[string]any{"type": 2, "tagName": tag, "attributes": attrs, "childNodes": children, "id": id}
	}
	textNode := func(s string) map[string]any {
		id++
		return map[string]any{"type": 3, "textContent": s, "id": id}
	}
	var sections []any
	size := 0
	for size < 900<<10 { // the snapshot fits a chunk of 1 MiB
		cls := classes[rng.IntN(len(classes))] + " " + classes[rng.IntN(len(classes))]
		var items []any
		for range 3 + rng.IntN(6) {
			items = append(items, node("li", map[string]string{"class": "item"}, []any{
				node("a", map[string]string{"href": "/" + words[rng.IntN(len(words))] + "/" + fmt.Sprint(rng.IntN(1000))}, []any{textNode(text(2 + rng.IntN(4)))}),
				textNode(text(8 + rng.IntN(20))),
			}))
		}
		sec := node("section", map[string]string{"class": cls, "id": fmt.Sprintf("s%d", id)}, []any{
			node("h2", map[string]string{"class": "title"}, []any{textNode(text(3 + rng.IntN(6)))}),
			node("p", map[string]string{"class": "lead"}, []any{textNode(text(30 + rng.IntN(60)))}),
			node("img", map[string]string{"src": fmt.Sprintf("https://cdn.acme.example/img/%08x.webp", rng.Uint32()), "alt": text(4), "width": "640", "height": "360"}, []any{}),
			node("ul", map[string]string{"class": "list"}, items),
		})
		b, _ := json.Marshal(sec)
		size += len(b)
		sections = append(sections, sec)
	}
	snapshot, _ := json.Marshal(map[string]any{"type": 2, "timestamp": 1795301391600, "data": map[string]any{
		"node": map[string]any{"type": 0, "id": 1, "childNodes": []any{node("html", map[string]string{}, []any{node("body", map[string]string{}, sections)})}},
	}})
	events := []json.RawMessage{
		json.RawMessage(`{"type":4,"data":{"href":"https://forms.acme.example/quote","width":1280,"height":800},"timestamp":1795301391553}`),
		snapshot,
	}
	for i := range 400 {
		events = append(events, json.RawMessage(fmt.Sprintf(`{"type":3,"data":{"source":1,"positions":[{"x":%d,"y":%d,"id":%d,"timeOffset":0}]},"timestamp":%d}`,
			rng.IntN(1280), rng.IntN(800), 11+rng.IntN(id-10), 1795301392000+i*50)))
	}
	return events
}

// Finished recordings leave the database (D52): a finished session of the
// form recording, captured through the API with its certificate, keeps at
// most 4 kB of the database, and its object is at most 25 % of its events;
// so is the object of a 1 MiB landing page.
func TestFinishedRecordingsLeaveTheDatabase(t *testing.T) {
	e := newFinishedEnv(t)
	chunks, raw := formChunks(t)
	e.capture(t, chunks) // the first pays for the tables' first pages
	if _, err := e.svc.MoveRecordings(ctx, 10); err != nil {
		t.Fatal(err)
	}
	const n = 50
	before := e.usedBytes(t)
	for range n {
		e.capture(t, chunks)
	}
	if moved, err := e.svc.MoveRecordings(ctx, 2*n); moved != n || err != nil {
		t.Fatalf("MoveRecordings = %d, %v; want %d", moved, err, n)
	}
	perSession := (e.usedBytes(t) - before) / n
	t.Logf("form recording: %d chunks, %d bytes of events; the database grew by %d bytes per finished session", len(chunks), raw, perSession)
	if perSession > 4000 {
		t.Errorf("a finished session keeps %d bytes of the database; want at most 4 kB", perSession)
	}

	for _, c := range []struct {
		name   string
		chunks []json.RawMessage
		raw    int64
	}{
		{"form recording", chunks, raw},
		func() struct {
			name   string
			chunks []json.RawMessage
			raw    int64
		} {
			cs, total := chunked(landingPage(), 512<<10)
			return struct {
				name   string
				chunks []json.RawMessage
				raw    int64
			}{"landing page", cs, total}
		}(),
	} {
		e.capture(t, c.chunks)
		if moved, err := e.svc.MoveRecordings(ctx, 10); moved != 1 || err != nil {
			t.Fatalf("%s: MoveRecordings = %d, %v", c.name, moved, err)
		}
		var ses *consent.Session
		must(t, e.svc.Store().View(ctx, func(tx consent.Tx) error {
			page, err := tx.SessionPage(ctx, consent.Page{CompanyID: "acme", Limit: 1})
			if err == nil {
				ses = page[0]
			}
			return err
		}))
		if ses.EventBytes != c.raw || !ses.Recording.Moved() {
			t.Fatalf("%s: the newest session holds %d bytes (moved %v); want %d", c.name, ses.EventBytes, ses.Recording.Moved(), c.raw)
		}
		ratio := float64(ses.Recording.Bytes) / float64(c.raw)
		t.Logf("%s: %d bytes of events in %d chunks, an object of %d bytes (%.1f %%)", c.name, c.raw, len(c.chunks), ses.Recording.Bytes, 100*ratio)
		if ratio > 0.25 {
			t.Errorf("%s: the object is %.1f %% of the events; want at most 25 %%", c.name, 100*ratio)
		}
	}
}

// Once a recording is finished and moved (D52, D34), every chunk is
// refused as finished: a stored one sent again too, the same or changed,
// without reading its object (a resend must not cost a decompression).
func TestResentChunkAfterMove(t *testing.T) {
	e := newFinishedEnv(t)
	s := startSession(t, e.h)
	events := "/capture/sessions/" + s.SessionID + "/events"
	chunk := func(seq int, ev string) string { return fmt.Sprintf(`{"seq":%d,"events":%s}`, seq, ev) }
	for seq, ev := range []string{rrwebChunk, `[{"type":3,"data":{"source":1},"timestamp":1795301391600}]`} {
		if rec := call(e.h, "POST", events, formOrigin, s.UploadToken, chunk(seq, ev)); rec.Code != 200 {
			t.Fatalf("chunk %d: %d %s", seq, rec.Code, rec.Body)
		}
	}
	// An hour later the session is idle, and its recording moves.
	later, err := consentkit.NewService(e.svc.Store(), consentkit.Config{Recordings: e.blobs,
		Now: func() time.Time { return time.Now().Add(time.Hour) }})
	must(t, err)
	if moved, err := later.MoveRecordings(ctx, 10); moved != 1 || err != nil {
		t.Fatalf("MoveRecordings = %d, %v", moved, err)
	}
	for _, c := range []struct {
		name, body string
		code       int
		want       string
	}{
		{"chunk 0 again", chunk(0, rrwebChunk), 409, "finished"},
		{"chunk 1 changed", chunk(1, `[{"type":3,"timestamp":5}]`), 409, "finished"},
		{"chunk 2", chunk(2, rrwebChunk), 409, "finished"},
	} {
		if rec := call(e.h, "POST", events, formOrigin, s.UploadToken, c.body); rec.Code != c.code || !strings.Contains(rec.Body.String(), c.want) {
			t.Errorf("%s: %d %s; want %d with %q", c.name, rec.Code, rec.Body, c.code, c.want)
		}
	}
}
