package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/testwait"
)

// attestPage is one form of the attestation tests: evidencePage with body
// as its consent markup and after after the form; act, when set, runs once
// the recording has started.
type attestPage struct {
	name, body, after string
	act               func(ctx context.Context) error
}

// attestConsent is one consent as the snippet sent it, node_id kept as the
// JSON it was.
type attestConsent struct {
	Text       string             `json:"text"`
	Visibility evidenceVisibility `json:"visibility"`
	NodeID     json.RawMessage    `json:"node_id"`
}

// attested is what one submission left: the consents the snippet sent,
// the certificate issued for them and the session's recording.
type attested struct {
	consents  []attestConsent
	cert      *consent.Certificate
	recording json.RawMessage
}

// attestStack serves the pages, and the service through a proxy that
// keeps the body of each consent request and notes when the service has
// stored a chunk holding a full snapshot.
type attestStack struct {
	base     *stack
	pages    *httptest.Server
	proxy    *httptest.Server
	consents chan []byte
	snapshot atomic.Bool
}

func newAttestStack(t *testing.T, pages []attestPage) *attestStack {
	t.Helper()
	s := &attestStack{base: newStack(t), consents: make(chan []byte, 64)}
	s.proxy = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/capture/sessions/") {
			s.base.api.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		s.base.api.ServeHTTP(sw, r)
		switch {
		case strings.HasSuffix(r.URL.Path, "/consent"):
			select {
			case s.consents <- body:
			default: // nobody waits for so many
			}
		case strings.HasSuffix(r.URL.Path, "/events") && sw.status/100 == 2 && bytes.Contains(body, []byte(`"type":2,`)):
			s.snapshot.Store(true)
		}
	}))
	t.Cleanup(s.proxy.Close)
	served := map[string]string{}
	for _, p := range pages {
		served["/"+p.name] = strings.NewReplacer("{{SERVICE}}", s.proxy.URL, "{{BODY}}", p.body, "{{AFTER}}", p.after).Replace(evidencePage)
	}
	s.pages = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/receive" {
			io.WriteString(w, "<!doctype html><p>Thank you.</p>")
			return
		}
		page, ok := served[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, page)
	}))
	t.Cleanup(s.pages.Close)
	if _, err := s.base.svc.AddProperty(context.Background(), consentkit.PropertyParams{ID: "evidence-form", CompanyID: "acme",
		Name: "Attested forms", AllowedOrigins: []string{s.pages.URL}}); err != nil {
		t.Fatal(err)
	}
	return s
}

// run loads the page, waits until the service holds the recording's full
// snapshot, acts, submits, and returns what the submission left.
func (s *attestStack) run(t *testing.T, ctx context.Context, p attestPage) attested {
	t.Helper()
	s.snapshot.Store(false)
	url := s.pages.URL + "/" + p.name
	if resp, err := chromedp.RunResponse(ctx, chromedp.Navigate(url)); err != nil || resp.Status != http.StatusOK {
		t.Fatalf("loading %s: %v %v", url, err, resp)
	}
	var certID string
	var lastErr error
	if !testwait.Until(t, 20*time.Millisecond, func() bool {
		certID, lastErr = chromedp.Run(ctx, chromedp.Evaluate[string](`new Promise(function (resolve) {
			(function check() {
				var i = document.querySelector('input[name="consent_certificate_id"]');
				if (i && i.value) resolve(i.value); else requestAnimationFrame(check);
			})();
		})`, chromedp.EvalAwaitPromise))
		return lastErr == nil || ctx.Err() != nil
	}) || lastErr != nil {
		t.Fatalf("the snippet never reserved a certificate: %v", lastErr)
	}
	// The recorder runs, and the recording's start is stored, once a chunk
	// with the full snapshot has gone through (one a second).
	if !testwait.Until(t, 20*time.Millisecond, s.snapshot.Load) {
		t.Fatal("no chunk with the full snapshot reached the service")
	}
	if p.act != nil {
		if err := p.act(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.ID("submit"))); err != nil || resp.Status != http.StatusOK {
		t.Fatalf("submitting the form: %v %v", err, resp)
	}
	var out attested
	near := testwait.Near(t)
	for out.consents == nil {
		select {
		case raw := <-s.consents:
			var b struct {
				Consents []attestConsent `json:"consents"`
				URL      string          `json:"url"`
			}
			if err := json.Unmarshal(raw, &b); err != nil {
				t.Fatalf("the consent request is not JSON: %v: %s", err, raw)
			}
			if b.URL == url {
				out.consents = b.Consents
				t.Logf("consent request: %s", bytes.TrimSpace(raw[:min(len(raw), 2000)]))
			}
		case <-near:
			t.Fatal("no consent request reached the service")
		}
	}
	out.cert = waitCertificate(t, s.base.svc, certID)
	var err error
	if out.recording, err = s.base.svc.Recording(context.Background(), out.cert.SessionID); err != nil {
		t.Fatal(err)
	}
	return out
}

// nodeIDOf returns the consent's node_id, failing t unless the snippet sent
// a positive integer.
func nodeIDOf(t *testing.T, c attestConsent) int {
	t.Helper()
	id, err := strconv.Atoi(string(c.NodeID))
	if err != nil || id <= 0 {
		t.Fatalf("node_id %s, want a positive integer", c.NodeID)
	}
	return id
}

// recordedNode returns the node that the recording names id, from its
// full snapshots and the nodes its mutations add (the last one given that
// id), or nil.
func recordedNode(t *testing.T, recording json.RawMessage, id int) map[string]any {
	t.Helper()
	var events []struct {
		Type int `json:"type"`
		Data struct {
			Node   map[string]any `json:"node"`
			Source *int           `json:"source"`
			Adds   []struct {
				Node map[string]any `json:"node"`
			} `json:"adds"`
		} `json:"data"`
	}
	if err := json.Unmarshal(recording, &events); err != nil {
		t.Fatalf("the recording: %v", err)
	}
	var found map[string]any
	var walk func(n map[string]any)
	walk = func(n map[string]any) {
		if n == nil {
			return
		}
		if v, ok := n["id"].(float64); ok && int(v) == id {
			found = n
		}
		kids, _ := n["childNodes"].([]any)
		for _, k := range kids {
			m, _ := k.(map[string]any)
			walk(m)
		}
	}
	for _, e := range events {
		switch {
		case e.Type == 2:
			walk(e.Data.Node)
		case e.Type == 3 && e.Data.Source != nil && *e.Data.Source == 0:
			for _, a := range e.Data.Adds {
				walk(a.Node)
			}
		}
	}
	return found
}

// The snippet sends with each consent its element's id in the recording
// (node_id, rrweb's mirror id), by which a replay finds the element: a
// positive integer that names, in the recording the service keeps, the
// element marked data-consent.
func TestSnippetNodeID(t *testing.T) {
	pages := []attestPage{
		{name: "two", body: withBox("") + `<p data-consent data-consent-types="marketing">I agree to marketing calls.</p>`,
			act: clickOn("agree")},
	}
	s := newAttestStack(t, pages)
	ctx := browser(t)
	got := s.run(t, ctx, pages[0])
	if len(got.consents) != 2 {
		t.Fatalf("%d consents, want 2", len(got.consents))
	}
	seen := map[int]bool{}
	for i, c := range got.consents {
		id := nodeIDOf(t, c)
		if seen[id] {
			t.Errorf("consents[%d] has node_id %d, as an earlier one does", i, id)
		}
		seen[id] = true
		n := recordedNode(t, got.recording, id)
		attrs, _ := n["attributes"].(map[string]any)
		if _, marked := attrs["data-consent"]; n == nil || !marked {
			t.Errorf("consents[%d]: node %d of the recording is %v, not an element marked data-consent", i, id, n)
		}
		if got.cert.Records[i].NodeID != id {
			t.Errorf("the certificate's record %d has node id %d, the snippet sent %d", i, got.cert.Records[i].NodeID, id)
		}
	}
}
