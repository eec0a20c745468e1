package httpadapter_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/internal/teststore"
)

// budgetEnv is a capture handler on a service whose chunks hold at most
// 8 KiB, on the fixture's clock.
func budgetEnv(t *testing.T, cfg httpadapter.Config) (*env, http.Handler) {
	t.Helper()
	e, _ := capturing(t, teststore.Memory(t), httpadapter.Config{})
	var err error
	e.svc, err = consentkit.NewService(e.store, consentkit.Config{Now: e.clock.Now, MaxChunkBytes: 8 << 10})
	must(t, err)
	return e, e.handler(t, cfg)
}

// from sends a capture request from a client address.
func from(h http.Handler, ip, path, token, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("POST", path, strings.NewReader(body))
	req.Header.Set("Origin", formOrigin)
	req.Header.Set("Content-Type", "text/plain;charset=UTF-8")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.RemoteAddr = net.JoinHostPort(ip, "1000")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// startFrom starts a session of the property from a client address.
func startFrom(t *testing.T, h http.Handler, ip, property string) started {
	t.Helper()
	rec := from(h, ip, "/capture/sessions", "", `{"property_id":"`+property+`","url":"`+formPage+`"}`)
	if rec.Code != 201 {
		t.Fatalf("start from %s: %d %s", ip, rec.Code, rec.Body)
	}
	var s started
	must(t, json.Unmarshal(rec.Body.Bytes(), &s))
	return s
}

// chunkBody is a chunk of seq holding about 7 KiB of events.
func chunkBody(seq int) string {
	return fmt.Sprintf(`{"seq":%d,"events":[{"type":3,"data":{"source":5,"text":"%s"},"timestamp":%d}]}`, seq, strings.Repeat("x", 7<<10), 1000+seq)
}

// A client address spends its byte budget with the bodies it sends,
// counted before they are parsed, so that malformed bodies spend it too;
// over what it may spend at once, an eighth of its budget, 429 with
// Retry-After and nothing stored; another address has its own; an eighth
// of a minute later that much is back (D52).
func TestCaptureClientByteBudget(t *testing.T) {
	e, h := budgetEnv(t, httpadapter.Config{CaptureBytesPerMinute: 320 << 10, CapturePropertyBytesPerMinute: -1})
	// Started from another address: a start's body spends its address's
	// budget too, and these count the chunks alone.
	s := startFrom(t, h, "198.51.100.1", "acme-form")
	events := "/capture/sessions/" + s.SessionID + "/events"
	var codes []int
	for seq := range 6 {
		codes = append(codes, from(h, "203.0.113.1", events, s.UploadToken, chunkBody(seq)).Code)
	}
	if fmt.Sprint(codes) != "[200 200 200 200 200 429]" {
		t.Fatalf("chunks of 8 KiB on a budget of 320 KiB a minute, 40 KiB at once: %v, want five 200 then 429", codes)
	}
	rec := from(h, "203.0.113.1", events, s.UploadToken, chunkBody(5))
	if rec.Code != 429 || rec.Header().Get("Retry-After") == "" {
		t.Errorf("over the budget: %d, Retry-After %q", rec.Code, rec.Header().Get("Retry-After"))
	}
	var ses *consent.Session
	must(t, e.store.View(ctx, func(tx consent.Tx) error {
		var err error
		ses, err = tx.Session(ctx, s.SessionID)
		return err
	}))
	if ses.EventChunks != 5 {
		t.Errorf("the session holds %d chunks, want the 5 allowed", ses.EventChunks)
	}

	// Another address: a budget of its own, spent by malformed bodies too.
	other := startFrom(t, h, "198.51.100.2", "acme-form")
	otherEvents := "/capture/sessions/" + other.SessionID + "/events"
	for range 5 {
		if rec := from(h, "203.0.113.2", otherEvents, other.UploadToken, `{"seq":0,"events":[`+strings.Repeat(" ", 7<<10)); rec.Code != 400 {
			t.Fatalf("a malformed body: %d, want 400", rec.Code)
		}
	}
	if rec := from(h, "203.0.113.2", otherEvents, other.UploadToken, chunkBody(0)); rec.Code != 429 {
		t.Errorf("after 40 KiB of malformed bodies: %d, want 429", rec.Code)
	}

	// A body larger than what the client may spend at once — a consent
	// may hold a chunk and 1 MiB of its own — spends all of it, once the
	// client has it, rather than being refused for good.
	third := startFrom(t, h, "198.51.100.3", "acme-form")
	big := `{"pad":"` + strings.Repeat("x", 60<<10) + `","consents":[{"text":"I agree."}],"url":"` + formPage + `","seq":0,"events":[{"type":4,"data":{},"timestamp":1}]}`
	if rec := from(h, "203.0.113.3", "/capture/sessions/"+third.SessionID+"/consent", third.UploadToken, big); rec.Code != 201 {
		t.Errorf("a consent of 60 KiB, over the 40 KiB at once, from a client that spent nothing: %d %s, want 201", rec.Code, rec.Body)
	}
	third = startFrom(t, h, "198.51.100.3", "acme-form")
	if rec := from(h, "203.0.113.3", "/capture/sessions/"+third.SessionID+"/events", third.UploadToken, chunkBody(1)); rec.Code != 429 || rec.Header().Get("Retry-After") == "" {
		t.Errorf("then a chunk: %d, Retry-After %q; want 429, the whole budget spent", rec.Code, rec.Header().Get("Retry-After"))
	}

	e.clock.t = e.clock.t.Add(time.Minute / 8)
	for seq := 5; seq < 10; seq++ {
		if rec := from(h, "203.0.113.1", events, s.UploadToken, chunkBody(seq)); rec.Code != 200 {
			t.Errorf("an eighth of a minute later, chunk %d: %d %s, want 200", seq, rec.Code, rec.Body)
		}
	}
	if rec := from(h, "203.0.113.1", events, s.UploadToken, chunkBody(10)); rec.Code != 429 {
		t.Errorf("then: %d, want 429", rec.Code)
	}
}

// IPv6 clients spend their byte budget by /64, as D28 keys their rate
// limits: two addresses of one /64 share one budget, and an address of
// another /64 has its own (D52).
func TestCaptureClientByteBudgetIPv6(t *testing.T) {
	_, h := budgetEnv(t, httpadapter.Config{CaptureBytesPerMinute: 320 << 10, CapturePropertyBytesPerMinute: -1})
	const a, b, other = "2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:fffe", "2001:db8:1:3::1"
	s := startFrom(t, h, "2001:db8:9::1", "acme-form") // another /64: these count the chunks alone
	events := "/capture/sessions/" + s.SessionID + "/events"
	var codes []int
	for seq := range 6 {
		ip := a
		if seq%2 == 1 {
			ip = b
		}
		codes = append(codes, from(h, ip, events, s.UploadToken, chunkBody(seq)).Code)
	}
	if fmt.Sprint(codes) != "[200 200 200 200 200 429]" {
		t.Fatalf("chunks of 8 KiB from two addresses of one /64, 40 KiB at once: %v, want five 200 then 429", codes)
	}
	for _, ip := range []string{a, b} {
		if rec := from(h, ip, events, s.UploadToken, chunkBody(5)); rec.Code != 429 || rec.Header().Get("Retry-After") == "" {
			t.Errorf("%s, over its /64's budget: %d, Retry-After %q; want 429", ip, rec.Code, rec.Header().Get("Retry-After"))
		}
	}
	o := startFrom(t, h, "2001:db8:9::1", "acme-form")
	for seq := range 5 {
		if rec := from(h, other, "/capture/sessions/"+o.SessionID+"/events", o.UploadToken, chunkBody(seq)); rec.Code != 200 {
			t.Errorf("another /64, chunk %d: %d %s; want 200", seq, rec.Code, rec.Body)
		}
	}
}

// Every byte read of a capture body is charged to the client's budget,
// whatever comes of the body: one over the route's limit (413), one cut
// short by its client (400), and a session start's (D52). Else a client
// sending bodies just over the limit could have the server read them
// without end.
func TestCaptureBudgetChargesEveryBodyRead(t *testing.T) {
	_, h := budgetEnv(t, httpadapter.Config{CaptureBytesPerMinute: 320 << 10, CapturePropertyBytesPerMinute: -1,
		CaptureStartsPerMinute: 1000})

	// Over the limit: 12 KiB of a 13 KiB body read, 40 KiB at once. The
	// sessions are started from another address, whose budget their
	// bodies spend.
	s := startFrom(t, h, "198.51.100.1", "acme-form")
	events := "/capture/sessions/" + s.SessionID + "/events"
	over := `{"seq":0,"events":[{"type":3,"timestamp":1,"x":"` + strings.Repeat("x", 13<<10) + `"}]}`
	var codes []int
	for range 3 {
		codes = append(codes, from(h, "203.0.113.1", events, s.UploadToken, over).Code)
	}
	if rec := from(h, "203.0.113.1", events, s.UploadToken, chunkBody(0)); fmt.Sprint(codes) != "[413 413 413]" || rec.Code != 429 {
		t.Errorf("bodies over the limit %v, then a chunk of 8 KiB: %d %s; want three 413 then 429", codes, rec.Code, rec.Body)
	}

	// Cut short: 7 KiB read, then the client's connection fails (of
	// undeclared length, the body is charged 8 KiB at a time, as read).
	s = startFrom(t, h, "198.51.100.1", "acme-form")
	events = "/capture/sessions/" + s.SessionID + "/events"
	for i := range 5 {
		req := httptest.NewRequest("POST", events, io.MultiReader(strings.NewReader(chunkBody(0)[:7<<10]), iotest.ErrReader(io.ErrUnexpectedEOF)))
		req.Header.Set("Origin", formOrigin)
		req.Header.Set("Authorization", "Bearer "+s.UploadToken)
		req.RemoteAddr = "203.0.113.2:1000"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 400 {
			t.Fatalf("body cut short %d: %d %s; want 400", i, rec.Code, rec.Body)
		}
	}
	if rec := from(h, "203.0.113.2", events, s.UploadToken, chunkBody(0)); rec.Code != 429 {
		t.Errorf("after 5 bodies cut short at 7 KiB, a chunk: %d %s; want 429", rec.Code, rec.Body)
	}

	// Session starts: 8 KiB each (a member the route ignores).
	start := `{"property_id":"acme-form","url":"` + formPage + `","pad":"` + strings.Repeat("x", 8<<10-100) + `"}`
	for i := range 5 {
		if rec := from(h, "203.0.113.3", "/capture/sessions", "", start); rec.Code != 201 {
			t.Fatalf("start %d: %d %s", i, rec.Code, rec.Body)
		}
	}
	if rec := from(h, "203.0.113.3", "/capture/sessions", "", start); rec.Code != 429 {
		t.Errorf("after 40 KiB of session starts, another: %d %s; want 429", rec.Code, rec.Body)
	}
}

// A property spends its byte budget with the events stored for it, from
// every address; over it, 429 for every client of the property and
// nothing stored, while another property keeps its own (D52).
func TestCapturePropertyByteBudget(t *testing.T) {
	e, h := budgetEnv(t, httpadapter.Config{CaptureBytesPerMinute: -1, CapturePropertyBytesPerMinute: 32 << 10})
	_, err := e.svc.AddProperty(ctx, consentkit.PropertyParams{ID: "acme-form2", CompanyID: "acme", Name: "Second form",
		AllowedOrigins: []string{formOrigin}})
	must(t, err)
	var codes []int
	for i := range 5 {
		ip := fmt.Sprintf("203.0.113.%d", 10+i)
		s := startFrom(t, h, ip, "acme-form")
		codes = append(codes, from(h, ip, "/capture/sessions/"+s.SessionID+"/events", s.UploadToken, chunkBody(0)).Code)
	}
	if fmt.Sprint(codes) != "[200 200 200 200 429]" {
		t.Errorf("one chunk of 8 KiB from each of five addresses, 32 KiB a property: %v, want four 200 then 429", codes)
	}
	s := startFrom(t, h, "203.0.113.50", "acme-form2")
	if rec := from(h, "203.0.113.50", "/capture/sessions/"+s.SessionID+"/events", s.UploadToken, chunkBody(0)); rec.Code != 200 {
		t.Errorf("another property: %d %s, want 200", rec.Code, rec.Body)
	}
}

// A budget that cannot hold the largest capture body is refused when the
// handler is made.
func TestCaptureByteBudgetTooSmall(t *testing.T) {
	e, _ := budgetEnv(t, httpadapter.Config{})
	for _, cfg := range []httpadapter.Config{{CaptureBytesPerMinute: 8 << 10}, {CapturePropertyBytesPerMinute: 1}} {
		cfg.Service = e.svc
		if _, err := httpadapter.New(cfg); err == nil {
			t.Errorf("New(%+v) accepted a budget under the largest body", cfg)
		}
	}
}

// A request refused by its address's limit is held before its 429, for
// at least the hold; at most MaxHeldRefusals at once, the rest answered at
// once; a held one ends when its client goes (D52).
func TestRefusalHold(t *testing.T) {
	e, _ := capturing(t, teststore.Memory(t), httpadapter.Config{})
	start := func(h http.Handler, ctx context.Context) *httptest.ResponseRecorder {
		req := httptest.NewRequestWithContext(ctx, "POST", "/capture/sessions", strings.NewReader(`{"property_id":"acme-form","url":"`+formPage+`"}`))
		req.Header.Set("Origin", formOrigin)
		req.Header.Set("Content-Type", "text/plain;charset=UTF-8")
		req.RemoteAddr = "203.0.113.9:1000"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}

	short := e.handler(t, httpadapter.Config{CaptureStartsPerMinute: 1, RefusalHold: 50 * time.Millisecond})
	if rec := start(short, ctx); rec.Code != 201 {
		t.Fatalf("first start: %d %s", rec.Code, rec.Body)
	}
	began := time.Now()
	if rec := start(short, ctx); rec.Code != 429 || time.Since(began) < 50*time.Millisecond {
		t.Errorf("refused: %d after %v; want 429 after the hold of 50ms", rec.Code, time.Since(began))
	}

	long := e.handler(t, httpadapter.Config{CaptureStartsPerMinute: 1, RefusalHold: time.Hour})
	if rec := start(long, ctx); rec.Code != 201 {
		t.Fatalf("first start: %d %s", rec.Code, rec.Body)
	}
	const n, extra = httpadapter.MaxHeldRefusals + 44, 44
	gone, leave := context.WithCancel(ctx)
	codes := make(chan int, n)
	for range n {
		go func() { codes <- start(long, gone).Code }()
	}
	for range extra { // those that found every slot taken: at once
		if code := <-codes; code != 429 {
			t.Errorf("refused beyond the held: %d, want 429", code)
		}
	}
	select {
	case code := <-codes:
		t.Errorf("a %d came back while every slot is held", code)
	default:
	}
	leave()
	for range n - extra {
		if code := <-codes; code != 429 {
			t.Errorf("a held refusal whose client went: %d, want 429", code)
		}
	}
}

// A client whose byte budget is spent has no more of its bodies read: one
// that declares its length is refused before its first byte is read, one
// that does not before the first block it cannot pay for, and the
// connection is closed rather than the rest read (D52). Else a client
// could have the server read its bodies at the request rate, its budget
// spent or not, with no session of its own.
func TestCaptureBudgetRefusesBeforeReading(t *testing.T) {
	_, h := budgetEnv(t, httpadapter.Config{CaptureBytesPerMinute: 320 << 10, CapturePropertyBytesPerMinute: -1,
		CaptureStartsPerMinute: 1000})
	body := strings.Repeat(" ", 1<<20)
	for i, declared := range []bool{true, false} {
		var read int64
		var codes []int
		for range 10 {
			req := httptest.NewRequest("POST", "/capture/sessions/nosuch/consent", &countingReader{r: strings.NewReader(body), n: &read})
			req.ContentLength = -1
			if declared {
				req.ContentLength = int64(len(body))
			}
			req.Header.Set("Origin", formOrigin)
			req.Header.Set("Authorization", "Bearer bogus")
			req.RemoteAddr = fmt.Sprintf("203.0.113.%d:1000", 20+i)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			codes = append(codes, rec.Code)
			if rec.Code == 429 && rec.Header().Get("Connection") != "close" {
				t.Errorf("declared %v: refused, Connection %q; want close", declared, rec.Header().Get("Connection"))
			}
		}
		// The budget holds 40 KiB at once: a declared body over it spends
		// the whole of it, and is read; one of undeclared length is read
		// 8 KiB at a time, until the fifth block.
		want, wantCodes := int64(len(body)), "[400 429 429 429 429 429 429 429 429 429]"
		if !declared {
			want, wantCodes = 40<<10, "[429 429 429 429 429 429 429 429 429 429]"
		}
		if read > want || fmt.Sprint(codes) != wantCodes {
			t.Errorf("declared %v: %d bytes read of 10 bodies of 1 MiB, answered %v; want at most %d, %s", declared, read, codes, want, wantCodes)
		}
	}
}

// countingReader counts the bytes read from r into n.
type countingReader struct {
	r io.Reader
	n *int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	*c.n += int64(k)
	return k, err
}
