package httpadapter_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/capture"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/contact"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/internal/teststore"
)

// captureFuzz is the fixture of the capture fuzz targets: the HTTP
// fixture on a journalled memory store, with the property acme-form that
// allows formOrigin and no capture rate limits.
type captureFuzz struct {
	e   *env
	j   *journal
	h   http.Handler
	cap *capture.Service
}

func newCaptureFuzz(f *testing.F) *captureFuzz {
	j := &journal{Store: teststore.Memory(f)}
	e := setup(f, j)
	_, err := e.svc.AddProperty(ctx, consentkit.PropertyParams{ID: "acme-form", CompanyID: "acme", Name: "Quote form",
		AllowedOrigins: []string{formOrigin}})
	must(f, err)
	h := e.handler(f, httpadapter.Config{CaptureStartsPerMinute: -1, CapturePropertyPerMinute: -1, CapturePerMinute: -1,
		CaptureBytesPerMinute: -1, CapturePropertyBytesPerMinute: -1})
	return &captureFuzz{e: e, j: j, h: h, cap: capture.New(e.svc)}
}

// session starts a capture session holding the chunk rrwebChunk.
func (c *captureFuzz) session(t *testing.T) *capture.Started {
	s, err := c.cap.Start(ctx, capture.StartRequest{PropertyID: "acme-form", URL: formPage, Origin: formOrigin})
	must(t, err)
	_, err = c.cap.Append(ctx, capture.Caller{UploadToken: s.UploadToken, Origin: formOrigin},
		capture.Chunk{SessionID: s.SessionID, Seq: 0, Events: json.RawMessage(rrwebChunk)})
	must(t, err)
	return s
}

func (c *captureFuzz) read(t *testing.T, fn func(tx consent.Tx) error) {
	must(t, c.e.store.View(ctx, fn))
}

// isRRWebChunk is the rule of D34, written again: a non-empty JSON array of
// objects, each with an integer type and a timestamp of non-negative
// milliseconds.
func isRRWebChunk(raw []byte) bool {
	var events []map[string]json.RawMessage
	if json.Unmarshal(raw, &events) != nil || len(events) == 0 {
		return false
	}
	for _, e := range events {
		if e == nil {
			return false
		}
		var typ int64
		var ts float64
		if json.Unmarshal(e["type"], &typ) != nil || json.Unmarshal(e["timestamp"], &ts) != nil || ts < 0 {
			return false
		}
	}
	return true
}

// Starting a capture session, whatever the body and Origin: an answer of
// the documented set and shape, never readable across origins when it is
// an error (no Access-Control-Allow-Origin); a 201 only for the property's
// allowed origin and a page of it, with a session stored as answered (its
// upload token's digest, reserved certificate and page) and nothing else;
// nothing stored otherwise.
//
// go test -run '^$' -fuzz FuzzCaptureStart ./httpadapter
func FuzzCaptureStart(f *testing.F) {
	valid := `{"property_id":"acme-form","url":"` + formPage + `"}`
	for _, s := range []struct{ body, origin string }{
		{valid, formOrigin}, {valid, evilOrigin}, {valid, ""}, {valid, "null"}, {valid, formOrigin + "/"}, {valid, "HTTPS://forms.acme.example"},
		{`{"property_id":"acme-form","url":"https://forms.acme.example:443/quote?x=1#y"}`, formOrigin},
		{`{"property_id":"acme-form","url":"https://evil.example/quote"}`, formOrigin},
		{`{"property_id":"acme-form","url":"https://forms.acme.example.evil.example/"}`, formOrigin},
		{`{"property_id":"acme-form","url":"//forms.acme.example/quote"}`, formOrigin},
		{`{"property_id":"acme-form","url":"https://user@forms.acme.example/quote"}`, formOrigin},
		{`{"property_id":"acme-web","url":"` + formPage + `"}`, formOrigin},
		{`{"property_id":"nope","url":"` + formPage + `"}`, formOrigin},
		{`{"property_id":"acme form","url":"` + formPage + `"}`, formOrigin},
		{`{"property_id":"acme-form","url":"` + formPage + "\\u0000" + `"}`, formOrigin},
		{`{"property_id":"acme-form","url":"` + formPage + "\\ud800" + `"}`, formOrigin},
		{`{"property_id":["acme-form"],"url":1}`, formOrigin},
		{`{"property_id":"acme-form"}`, formOrigin}, {``, formOrigin}, {`null`, formOrigin}, {`[]`, formOrigin}, {`{} {}`, formOrigin},
	} {
		f.Add(s.body, s.origin)
	}
	c := newCaptureFuzz(f)
	f.Fuzz(func(t *testing.T, body, origin string) {
		mark := c.j.mark()
		rec := call(c.h, "POST", "/capture/sessions", origin, "", body, "Content-Type", "text/plain;charset=UTF-8")
		got := checkAnswer(t, "start", rec, httpadapter.VerifyErrors, 201, 400, 403, 404, 413)
		acao := rec.Header().Get("Access-Control-Allow-Origin")
		writes := c.j.since(mark, "AppendAudit")
		if rec.Code != 201 {
			if acao != "" {
				t.Fatalf("a refused start is readable by %q: %d %s", acao, rec.Code, rec.Body)
			}
			if len(writes) > 0 {
				t.Fatalf("a refused start (%d %s) stored %v", rec.Code, rec.Body, writes)
			}
			return
		}
		var req struct {
			PropertyID string `json:"property_id"`
			URL        string `json:"url"`
		}
		must(t, json.Unmarshal([]byte(body), &req))
		if origin != formOrigin || acao != formOrigin {
			t.Fatalf("started from Origin %q (Access-Control-Allow-Origin %q): %s", origin, acao, rec.Body)
		}
		if o, ok := consent.OriginOf(req.URL); !ok || o != formOrigin {
			t.Fatalf("started for the page %q, not of %s", req.URL, formOrigin)
		}
		id, _ := got["session_id"].(string)
		token, _ := got["upload_token"].(string)
		certID, _ := got["certificate_id"].(string)
		if !strings.HasPrefix(token, capture.UploadTokenPrefix) || !consent.ValidID(certID) {
			t.Fatalf("start answered %s", rec.Body)
		}
		if !sameWrites(writes, "CreateSession") {
			t.Fatalf("a start stored %v", writes)
		}
		c.read(t, func(tx consent.Tx) error {
			ses, err := tx.Session(ctx, id)
			if err != nil {
				return err
			}
			if ses.CompanyID != "acme" || ses.PropertyID != "acme-form" || ses.URL != req.URL || ses.CertificateID != certID ||
				ses.UploadDigest != consent.DigestOf(token) || ses.EventChunks != 0 || ses.Closed() {
				t.Fatalf("session stored as %+v for %s", ses, rec.Body)
			}
			return nil
		})
	})
}

// sameWrites reports whether got holds exactly want, in order.
func sameWrites(got []string, want ...string) bool {
	return strings.Join(got, ",") == strings.Join(want, ",")
}

// Appending a chunk of events to a session that holds one, whatever the
// body and Authorization header: an answer of the documented set and shape;
// a header that is not the session's upload token never gets past 401 to
// the session's state (no 200, no 409); a 200 only for rrweb events (D34),
// sent again byte for byte as stored chunk 0 or stored as chunk 1 exactly
// as sent, with next_seq the number of chunks; nothing stored otherwise.
//
// go test -run '^$' -fuzz FuzzCaptureEvents ./httpadapter
func FuzzCaptureEvents(f *testing.F) {
	for _, body := range []string{
		`{"seq":0,"events":` + rrwebChunk + `}`, `{"seq":1,"events":` + rrwebChunk + `}`,
		`{"seq":1,"events":[{"type":3,"timestamp":5,"data":{"source":2,"x":1.5}}]}`,
		`{"seq":1,"events": [ {"timestamp":1e3, "type":-1} ] }`, `{"seq":0,"events":[{"type":3,"timestamp":5}]}`,
		`{"seq":2,"events":` + rrwebChunk + `}`, `{"seq":-1,"events":` + rrwebChunk + `}`, `{"seq":1.5,"events":` + rrwebChunk + `}`,
		`{"seq":1,"events":[{"type":"3","timestamp":5}]}`, `{"seq":1,"events":[{"type":3.0,"timestamp":5}]}`,
		`{"seq":1,"events":[{"type":3,"timestamp":-5}]}`, `{"seq":1,"events":[{"type":3,"timestamp":1e300}]}`,
		`{"seq":1,"events":[{"type":3,"timestamp":5},1]}`, `{"seq":1,"events":[]}`, `{"seq":1,"events":{}}`, `{"seq":1,"events":null}`,
		`{"seq":1}`, `{"events":` + rrwebChunk + `}`, `{"seq":1,"events":[{"type":3,"timestamp":5,"t":"\ud800"}]}`,
		`{"seq":1,"events":[{"type":3,"timestamp":5,"t":"` + "\xff" + `"}]}`, `{"seq":1,"events":[{"type":3,"timestamp":5}],"seq":0}`,
		`{"SEQ":1,"Events":[{"type":3,"timestamp":5}]}`, `{"seq":1,"events":[{"type":3,"timestamp":5}]} x`, ``, `null`,
	} {
		f.Add(body, "")
	}
	f.Add(`{"seq":1,"events":`+rrwebChunk+`}`, "Bearer ckup_wrong")
	f.Add(`{"seq":1,"events":`+rrwebChunk+`}`, "Bearer")
	f.Add(`{"seq":1,"events":`+rrwebChunk+`}`, "Basic Y2t1cDp4")
	f.Add(`{"seq":0,"events":[{"type":3,"timestamp":5}]}`, "bearer "+acmeToken)
	f.Add(`{"seq":1,"events":{}}`, "Bearer ckup_wrong")
	c := newCaptureFuzz(f)
	f.Fuzz(func(t *testing.T, body, auth string) {
		s := c.session(t)
		authorized := auth == ""
		if authorized {
			auth = "Bearer " + s.UploadToken
		}
		mark := c.j.mark()
		path := "/capture/sessions/" + s.SessionID + "/events"
		rec := call(c.h, "POST", path, formOrigin, "", body, "Authorization", auth)
		allowed := []int{200, 400, 409, 413}
		if !authorized {
			allowed = []int{400, 401, 413}
		}
		got := checkAnswer(t, "events", rec, httpadapter.VerifyErrors, allowed...)
		// The session allows the origin, so every answer is readable there.
		if acao := rec.Header().Get("Access-Control-Allow-Origin"); acao != formOrigin {
			t.Fatalf("Access-Control-Allow-Origin %q: %d %s", acao, rec.Code, rec.Body)
		}
		writes := c.j.since(mark, "AppendAudit")
		var chunks [][]byte
		c.read(t, func(tx consent.Tx) (err error) {
			chunks, err = tx.Events(ctx, s.SessionID)
			return err
		})
		if rec.Code != 200 {
			if len(writes) > 0 || len(chunks) != 1 {
				t.Fatalf("a refused chunk (%d %s) stored %v; the session holds %d chunks", rec.Code, rec.Body, writes, len(chunks))
			}
			return
		}
		var req struct {
			Seq    *int            `json:"seq"`
			Events json.RawMessage `json:"events"`
		}
		must(t, json.Unmarshal([]byte(body), &req))
		if !isRRWebChunk(req.Events) {
			t.Fatalf("events that are not rrweb events were accepted: %s", req.Events)
		}
		if n, _ := got["next_seq"].(json.Number); n.String() != strconv.Itoa(len(chunks)) {
			t.Fatalf("next_seq %v, the session holds %d chunks", got["next_seq"], len(chunks))
		}
		switch {
		case *req.Seq == 0 && len(chunks) == 1 && len(writes) == 0:
			if !bytes.Equal(chunks[0], req.Events) {
				t.Fatalf("chunk 0 sent again with other events was accepted: %s", req.Events)
			}
		case *req.Seq == 1 && len(chunks) == 2 && sameWrites(writes, "AppendEvents"):
			if !bytes.Equal(chunks[1], req.Events) {
				t.Fatalf("chunk 1 stored as %s, sent as %s", chunks[1], req.Events)
			}
		default:
			t.Fatalf("seq %d accepted; the session holds %d chunks; stored %v", *req.Seq, len(chunks), writes)
		}
	})
}

// errRollback ends a transaction that only checked something.
var errRollback = errors.New("roll back")

// Giving consent in a session that holds a chunk, whatever the body and
// User-Agent: an answer of the documented set and shape; a 201 issues the
// session's reserved certificate holding exactly what was sent (texts and
// types byte for byte, the page as origin, digests of the lead's email and
// mobile, the visibility facts, the SHA-256 of the recording with any tail
// chunk) and closes the session, and the certificate stores and reads back
// the same on SQLite as on the memory store; nothing is stored otherwise.
//
// go test -run '^$' -fuzz FuzzCaptureConsent ./httpadapter
func FuzzCaptureConsent(f *testing.F) {
	vis := `"visibility":{"in_viewport":true,"visible":true,"font_size_px":16.5,"text_color":"rgb(0, 0, 0)","background_color":"rgba(0, 0, 0, 0)","contrast_ratio":21}`
	for _, body := range []string{
		`{"consents":[{"text":"I agree to be called by Acme.","types":["tcpa"]}],"url":"` + formPage + `"}`,
		`{"consents":[{"text":"  I agree 😀\t\n","types":["tcpa","marketing","tcpa"]},{"text":"B"}],"email":" Jane@Example.com ",` +
			`"mobile":"(555) 010-2000","url":"` + formPage + `?step=2",` + vis + `}`,
		`{"consents":[{"text":"I agree","types":[]}],"url":"` + formPage + `","seq":1,"events":[{"type":3,"timestamp":7}]}`,
		`{"consents":[{"text":"I agree"}],"url":"` + formPage + `","seq":0,"events":` + rrwebChunk + `}`,
		`{"consents":[{"text":"I agree"}],"url":"` + formPage + `","seq":0,"events":[{"type":3,"timestamp":7}]}`,
		`{"consents":[{"text":"I agree"}],"url":"` + formPage + `","seq":2,"events":[{"type":3,"timestamp":7}]}`,
		`{"consents":[{"text":"I agree"}],"url":"` + formPage + `","seq":1}`,
		`{"consents":[{"text":"I agree"}],"url":"` + formPage + `","visibility":{"contrast_ratio":0.5}}`,
		`{"consents":[{"text":"I agree"}],"url":"` + formPage + `","visibility":{"contrast_ratio":1,"font_size_px":-1}}`,
		`{"consents":[{"text":"I agree"}],"url":"` + formPage + `","visibility":null,"email":"","mobile":"  "}`,
		`{"consents":[{"text":"I agree"}],"url":"` + formPage + `","email":"not-an-email","mobile":"+"}`,
		`{"consents":[{"text":"I agree"}],"url":"https://evil.example/"}`, `{"consents":[{"text":"I agree"}]}`,
		`{"consents":[{"text":""}],"url":"` + formPage + `"}`, `{"consents":[{"text":"\u0007"}],"url":"` + formPage + `"}`,
		`{"consents":[{"text":"a","types":[""]}],"url":"` + formPage + `"}`, `{"consents":[],"url":"` + formPage + `"}`,
		`{"consents":[{"text":"a","types":["\ud83d\ude00"]}],"url":"` + formPage + `"}`,
		`{"consents":{"text":"a"},"url":"` + formPage + `"}`, `{"consents":[{"text":1}],"url":"` + formPage + `"}`,
		``, `{}`, `null`,
	} {
		f.Add(body, "")
		f.Add(body, "Mozilla/5.0 (X11; Linux x86_64)")
	}
	f.Add(`{"consents":[{"text":"I agree"}],"url":"`+formPage+`"}`, "bad\x01agent")
	f.Add(`{"consents":[{"text":"I agree"}],"url":"`+formPage+`"}`, strings.Repeat("a", 2000))
	c := newCaptureFuzz(f)
	sqlite := teststore.SQLite(f)
	must(f, sqlite.Update(ctx, func(tx consent.Tx) error { // the rows a certificate of acme-form needs
		return c.e.store.View(ctx, func(mem consent.Tx) error {
			co, err := mem.Company(ctx, "acme")
			if err != nil {
				return err
			}
			prop, err := mem.Property(ctx, "acme-form")
			if err != nil {
				return err
			}
			if err := tx.CreateCompany(ctx, co); err != nil {
				return err
			}
			return tx.CreateProperty(ctx, prop)
		})
	}))
	f.Fuzz(func(t *testing.T, body, userAgent string) {
		s := c.session(t)
		mark := c.j.mark()
		path := "/capture/sessions/" + s.SessionID + "/consent"
		var header []string
		if userAgent != "" {
			header = []string{"User-Agent", userAgent}
		}
		rec := call(c.h, "POST", path, formOrigin, s.UploadToken, body, header...)
		got := checkAnswer(t, "consent", rec, httpadapter.VerifyErrors, 201, 400, 403, 409, 413)
		writes := c.j.since(mark, "AppendAudit")
		var (
			ses    *consent.Session
			chunks [][]byte
			cert   *consent.Certificate
		)
		c.read(t, func(tx consent.Tx) (err error) {
			if ses, err = tx.Session(ctx, s.SessionID); err != nil {
				return err
			}
			if chunks, err = tx.Events(ctx, s.SessionID); err != nil {
				return err
			}
			cert, err = tx.Certificate(ctx, s.CertificateID)
			if consent.ErrorCode(err) == consent.NotFound {
				cert, err = nil, nil
			}
			return err
		})
		if rec.Code != 201 {
			if len(writes) > 0 || cert != nil || ses.Closed() || len(chunks) != 1 {
				t.Fatalf("a refused consent (%d %s) stored %v", rec.Code, rec.Body, writes)
			}
			return
		}
		var req struct {
			Consents []struct {
				Text  string   `json:"text"`
				Types []string `json:"types"`
			} `json:"consents"`
			Email      string              `json:"email"`
			Mobile     string              `json:"mobile"`
			URL        string              `json:"url"`
			Visibility *consent.Visibility `json:"visibility"`
			Seq        *int                `json:"seq"`
			Events     json.RawMessage     `json:"events"`
		}
		must(t, json.Unmarshal([]byte(body), &req))
		if got["certificate_id"] != s.CertificateID || cert == nil || !ses.Closed() {
			t.Fatalf("consent answered %s; the session is closed: %v; the certificate: %+v", rec.Body, ses.Closed(), cert)
		}
		if o, ok := consent.OriginOf(req.URL); !ok || o != formOrigin || cert.Origin != req.URL {
			t.Fatalf("consent given on the page %q, stored as %q", req.URL, cert.Origin)
		}
		if len(cert.Records) != len(req.Consents) {
			t.Fatalf("%d records stored for %d consents", len(cert.Records), len(req.Consents))
		}
		for i, r := range req.Consents {
			if cert.Records[i].Text != r.Text || !cmp.Equal(cert.Records[i].Types, r.Types, cmpopts.EquateEmpty()) ||
				!cert.Records[i].OptInAt.Equal(now) {
				t.Fatalf("consents[%d] %q %q stored as %+v", i, r.Text, r.Types, cert.Records[i])
			}
		}
		for _, d := range []struct {
			name, value string
			digest      consent.Digest
			of          func(string) (consent.Digest, error)
		}{{"email", req.Email, cert.EmailDigest, contact.EmailDigest}, {"mobile", req.Mobile, cert.MobileDigest, contact.MobileDigest}} {
			want, err := d.of(d.value)
			if strings.TrimSpace(d.value) == "" {
				want, err = consent.Digest{}, nil
			}
			if err != nil || d.digest != want {
				t.Fatalf("%s %q stored as digest %s (%v)", d.name, d.value, d.digest, err)
			}
		}
		if !cmp.Equal(cert.Visibility, req.Visibility, cmpopts.EquateEmpty()) {
			t.Fatalf("visibility %+v stored as %+v", req.Visibility, cert.Visibility)
		}
		if cert.ClientIP != "198.51.100.7" || cert.UserAgent != userAgent {
			t.Fatalf("client %q %q stored as %q %q", "198.51.100.7", userAgent, cert.ClientIP, cert.UserAgent)
		}
		wantChunks := 1
		if req.Seq != nil && *req.Seq == 1 {
			wantChunks = 2
		}
		if len(chunks) != wantChunks || wantChunks == 2 && !bytes.Equal(chunks[1], req.Events) {
			t.Fatalf("seq %v: the session holds %d chunks", req.Seq, len(chunks))
		}
		if cert.RecordingSHA256 != sha256.Sum256(consent.JoinChunks(chunks)) {
			t.Fatal("the certificate's recording SHA-256 is not that of the recording")
		}
		must(t, c.e.svc.Store().View(ctx, func(tx consent.Tx) error { return c.e.svc.CheckIntegrity(ctx, tx, cert, nil) }))

		// What the memory store took, SQLite takes and reads back the same.
		err := sqlite.Update(ctx, func(tx consent.Tx) error {
			row := *ses
			row.EventChunks, row.EventBytes, row.ClosedAt = 0, 0, ses.ClosedAt
			if err := tx.CreateSession(ctx, &row); err != nil {
				return err
			}
			for _, ch := range chunks {
				if err := tx.AppendEvents(ctx, ses.ID, ch, ses.LastEventAt); err != nil {
					return err
				}
			}
			if err := tx.CreateCertificate(ctx, cert); err != nil {
				return err
			}
			back, err := tx.Certificate(ctx, cert.ID)
			if err != nil {
				return err
			}
			if d := cmp.Diff(cert, back, cmpopts.EquateEmpty()); d != "" {
				t.Fatalf("the certificate reads back otherwise from SQLite (-memory +sqlite):\n%s", d)
			}
			backChunks, err := tx.Events(ctx, ses.ID)
			if err != nil {
				return err
			}
			if d := cmp.Diff(chunks, backChunks); d != "" {
				t.Fatalf("the recording reads back otherwise from SQLite (-memory +sqlite):\n%s", d)
			}
			return errRollback
		})
		if !errors.Is(err, errRollback) {
			t.Fatalf("SQLite refuses what the memory store took: %v", err)
		}
	})
}
