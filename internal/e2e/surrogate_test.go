package e2e_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/consentkit/consentkit/internal/testwait"
)

// A page's script that cuts a string in the middle of an emoji (a
// truncated name, a "read more" excerpt) puts a lone surrogate into the
// DOM. JSON.stringify writes it as the escape \ud83d, which the service
// refuses (400) in a chunk; the snippet must not lose the rest of the
// recording over it: the certificate's recording still holds the
// consumer's typing and the checkbox's tick made after it.
func TestSnippetLoneSurrogateKeepsRecording(t *testing.T) {
	s := newStack(t)
	ctx := browser(t)
	s.load(t, ctx)
	// Let the recorder start (its full snapshot is sent), then the page
	// shows a truncated excerpt.
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector('script[src$="/capture/rrweb.js"]') && document.querySelector('script[src$="/capture/rrweb.js"]').consentkitRecorder ? true : null`,
		chromedp.WithPollingTimeout(0))); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Sleep(1500*time.Millisecond)); err != nil { // a flush: the snapshot is stored
		t.Fatal(err)
	}
	if err := runScript(`(function () {
		var p = document.createElement("p");
		p.textContent = "Hi Jane \uD83D\uDE00".slice(0, 9); // "Hi Jane " and half an emoji
		document.body.appendChild(p);
	})()`)(ctx); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Sleep(1500*time.Millisecond), // a flush: the chunk with it is sent
		chromedp.SendKeys(chromedp.ID("email"), typedEmail),
		chromedp.SendKeys(chromedp.ID("mobile"), typedMobile),
		chromedp.Click(chromedp.ID("agree")),
		chromedp.Sleep(1500*time.Millisecond), // a flush
	); err != nil {
		t.Fatal(err)
	}
	form := s.submit(t, ctx)
	cert := waitCertificate(t, s.svc, form.Get("consent_certificate_id"))
	rec, err := s.svc.Recording(context.Background(), cert.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(rec, []byte(`"isChecked":true`)) {
		t.Errorf("the certificate's recording (%d bytes) lacks the checkbox's tick: the recording stopped at the page's lone surrogate", len(rec))
	}
	if !bytes.Contains(rec, []byte(`"text":"`+typedEmail+`"`)) {
		t.Errorf("the certificate's recording lacks the typed email")
	}
}

// A consent text holding a lone surrogate (text cut inside an emoji by
// the page's script) must not cost the consumer the certificate: the
// snippet already makes spaces of the control characters the service
// refuses (cleanText); JSON.stringify writes a lone surrogate as \udXXX,
// which the service refuses too (400), and a 400 is not retried.
func TestSnippetLoneSurrogateInConsentText(t *testing.T) {
	s := newStack(t)
	var consentStatus atomic.Int32
	prev := s.service.Config.Handler
	s.service.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/consent") {
			sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
			prev.ServeHTTP(sw, r)
			consentStatus.CompareAndSwap(0, int32(sw.status))
			return
		}
		prev.ServeHTTP(w, r)
	})
	ctx := browser(t)
	s.fill(t, ctx) // the recording holds events: chunks up to the tick are stored
	if err := runScript(`(function () {
		var span = document.querySelector("[data-consent]");
		span.textContent = span.textContent + " \uD83D\uDC4D".slice(0, 2); // a thumbs-up cut in half
	})()`)(ctx); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Sleep(100*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	s.submit(t, ctx)
	if !testwait.Until(t, 20*time.Millisecond, func() bool { return consentStatus.Load() != 0 }) {
		t.Fatal("no consent request reached the service")
	}
	if st := consentStatus.Load(); st != http.StatusCreated {
		t.Errorf("the consent was answered %d, want 201: a consent text with a lone surrogate loses the certificate", st)
	}
}
