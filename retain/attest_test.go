package retain_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/jobs"
	"github.com/consentkit/consentkit/retain"
	"github.com/consentkit/consentkit/retain/mp4"
	"github.com/consentkit/consentkit/signed"
	"github.com/consentkit/consentkit/wallet"
)

// fakeAttester stands in for the browser (mp4.Converter, which
// internal/e2e runs for real): it answers the measure it is given, and
// records what it was asked.
type fakeAttester struct {
	fakeConverter
	measure *mp4.Attestation
	err     error
	asked   []int // the nodes of the last call
	calls   int
}

func (f *fakeAttester) Attest(ctx context.Context, events json.RawMessage, at int64, nodes []int) (*mp4.Attestation, error) {
	f.calls++
	f.asked = nodes
	if f.err != nil {
		return nil, f.err
	}
	m := *f.measure
	return &m, nil
}

const attestText = "I agree to be called by Acme."

var claimed = &consent.Visibility{InViewport: true, Visible: true, FontSizePx: 16, TextColor: "rgb(17, 17, 17)",
	BackgroundColor: "rgb(255, 255, 255)", ContrastRatio: 18.88, HiddenText: []string{}}

// honest is what a replay of an honest page measures of node 7.
func honest() *mp4.Attestation {
	return &mp4.Attestation{Screenshot: []byte("\x89PNG not really"), Unreproducible: []string{}, Consents: []mp4.Measured{{
		NodeID: 7, Found: true, Text: "I agree to be called\n by Acme.", InViewport: true, Visible: true, FontSizePx: 16.2,
		TextColor: "rgb(17, 17, 17)", BackgroundColor: "rgb(255, 255, 255)", ContrastRatio: 18.85, HiddenText: []string{},
	}}}
}

type attestEnv struct {
	svc    *consentkit.Service
	clock  *clock
	key    signed.SigningKey
	videos string
	cert   *consent.Certificate
}

// attestSetup issues a signed certificate of session s1 (consent at node
// 7) with the Service's clock and keys.
func attestSetup(t *testing.T, st consent.Store, queue int) *attestEnv {
	t.Helper()
	key, err := signed.NewSigningKey("k1")
	if err != nil {
		t.Fatal(err)
	}
	e := &attestEnv{clock: &clock{t: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)}, key: key, videos: t.TempDir()}
	e.svc, err = consentkit.NewService(st, consentkit.Config{Now: e.clock.Now, SigningKeys: []signed.SigningKey{key}, AttestationQueue: queue})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"acme", "globex"} {
		if _, err := e.svc.CreateCompany(ctx, consentkit.CompanyParams{ID: id, Name: id}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.AddProperty(ctx, consentkit.PropertyParams{ID: id + "-web", CompanyID: id, Name: "Form"}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.TopUp(ctx, id, wallet.Dollar, ""); err != nil {
			t.Fatal(err)
		}
	}
	e.cert = e.issue(t, "s1", 7)
	return e
}

// issue records a session and issues its certificate, its one consent at
// node.
func (e *attestEnv) issue(t *testing.T, session string, node int) *consent.Certificate {
	t.Helper()
	if _, err := e.svc.StartSession(ctx, consentkit.SessionParams{ID: session, CompanyID: "acme", PropertyID: "acme-web"}); err != nil {
		t.Fatal(err)
	}
	rec := json.RawMessage(`[{"type":4,"data":{"session":"` + session + `"},"timestamp":1}]`)
	if _, err := e.svc.AppendEvents(ctx, session, rec); err != nil {
		t.Fatal(err)
	}
	cert, err := e.svc.IssueCertificate(ctx, consentkit.CertificateParams{CompanyID: "acme", PropertyID: "acme-web", SessionID: session,
		Origin: "https://acme.test/form", RecordingSHA256: consent.DigestOf("[" + string(rec[1:len(rec)-1]) + "]"),
		Records: []consent.Record{{Text: attestText, Types: []string{"calls"}, Visibility: claimed, OptInMethod: consent.OptInManual, NodeID: node}}})
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func (e *attestEnv) worker(t *testing.T, a *fakeAttester, with ...func(*retain.WorkerConfig)) *retain.Worker {
	t.Helper()
	cfg := retain.WorkerConfig{Service: e.svc, Converter: a, Videos: retain.Dir{Root: e.videos},
		TempDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), MaxAttempts: 2}
	for _, f := range with {
		f(&cfg)
	}
	w, err := retain.NewWorker(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// purger returns a Purger of the environment's videos, and a runner of
// its jobs on the environment's clock.
func (e *attestEnv) purger(t *testing.T) (*retain.Purger, *jobs.Runner) {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	purger, err := retain.NewPurger(retain.PurgeConfig{Service: e.svc, Videos: retain.Dir{Root: e.videos}, Pause: -1, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	runner, err := jobs.New(jobs.Config{Store: e.svc.Store(), Handlers: purger.Handlers(), Now: e.svc.Now, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return purger, runner
}

func (e *attestEnv) ask(t *testing.T, c *consent.Certificate) (*consent.Attestation, error) {
	t.Helper()
	var a *consent.Attestation
	err := e.svc.Store().Update(ctx, func(tx consent.Tx) error {
		var err error
		a, err = e.svc.AskAttestation(ctx, tx, c)
		return err
	})
	return a, err
}

// attest runs the certificate's attestation job and returns its
// attestation and parsed statement.
func (e *attestEnv) attest(t *testing.T, a *fakeAttester, c *consent.Certificate) (*consent.Attestation, *signed.StatementProof) {
	t.Helper()
	if ok, err := e.worker(t, a).AttestOnce(ctx); err != nil || !ok {
		t.Fatalf("AttestOnce: %v %v", ok, err)
	}
	att, err := e.svc.Attestation(ctx, "acme", c.ID)
	if err != nil {
		t.Fatal(err)
	}
	p, err := att.Proof()
	if err != nil || p == nil {
		t.Fatalf("the statement: %v %v", p, err)
	}
	return att, p
}

// An honest replay attests the certificate: the statement is signed with
// the certificate keys, verifies offline against the certificate's signed
// content and fails once edited; the screenshot is kept in the video store
// with the SHA-256 the statement states. Retention asks for it by either
// route, once.
func TestAttestationAttested(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e := attestSetup(t, open(t), 0)
		if _, err := retain.New(e.svc).Retain(ctx, "acme", "acme", "s1"); err != nil {
			t.Fatal(err)
		}
		att, err := e.svc.Attestation(ctx, "acme", e.cert.ID)
		if err != nil || att.Status != consent.AttestationPending {
			t.Fatalf("after retention: %+v %v, want pending", att, err)
		}
		if _, err := e.svc.Attestation(ctx, "globex", e.cert.ID); consent.ErrorCode(err) != consent.NotFound {
			t.Errorf("another company reads the attestation: %v", err)
		}
		a := &fakeAttester{measure: honest()}
		att, p := e.attest(t, a, e.cert)
		if len(a.asked) != 1 || a.asked[0] != 7 {
			t.Errorf("the replay was asked for nodes %v, want [7]", a.asked)
		}
		st := p.Statement
		if att.Status != consent.AttestationAttested || st.Status != signed.Attested || len(st.Differences) != 0 || st.Reason != "" {
			t.Fatalf("honest replay: %s %+v", att.Status, st)
		}
		if c := st.Consents[0]; !c.Found || c.NodeID != 7 || c.Visibility == nil || c.Visibility.FontSizePx != "16.2" {
			t.Errorf("stated consent %+v", c)
		}
		keys := signed.Publish([]signed.PublicKey{e.key.Public()})
		content := consent.Signed(e.cert)
		if err := p.Verify(&keys, &content); err != nil {
			t.Fatalf("the statement does not verify offline: %v", err)
		}
		for name, edit := range map[string]func(s *signed.Statement){
			"status":     func(s *signed.Statement) { s.Status = signed.Mismatch },
			"text":       func(s *signed.Statement) { s.Consents[0].Text = "I agree." },
			"screenshot": func(s *signed.Statement) { s.ScreenshotSHA256 = strings.Repeat("0", 64) },
		} {
			edited := *st
			edited.Consents = append([]signed.StatedConsent{}, st.Consents...)
			edit(&edited)
			q := *p
			q.Statement = &edited
			if err := q.Verify(&keys, &content); err == nil {
				t.Errorf("a statement with its %s edited verifies", name)
			}
		}
		other := consent.Signed(e.issue(t, "s2", 7))
		if err := p.Verify(&keys, &other); err == nil {
			t.Error("the statement verifies against another certificate")
		}
		png, err := os.ReadFile(att.Screenshot)
		sum := sha256.Sum256(png)
		if err != nil || !bytes.Equal(png, honest().Screenshot) || st.ScreenshotSHA256 != hex.EncodeToString(sum[:]) || att.Screenshot == "" {
			t.Errorf("the screenshot: %q %v; stated %s, path %q", png, err, st.ScreenshotSHA256, att.Screenshot)
		}
		// Asked again, by the other route: nothing new is queued.
		if _, err := retain.New(e.svc).RetainCertificates(ctx, "acme", "acme", "s1"); err != nil && consent.ErrorCode(err) != consent.Conflict {
			t.Fatal(err)
		}
		if ok, err := e.worker(t, a).AttestOnce(ctx); ok || err != nil || a.calls != 1 {
			t.Errorf("a second attestation ran: %v %v, %d calls", ok, err, a.calls)
		}
	})
}

// A replay that does not find the element, or measures other facts, is a
// mismatch listing each difference; differences that something the replay
// could not load may explain are unavailable, not a mismatch; a consent
// that names no element, a recording changed since issue and one that
// cannot be replayed are unavailable with the reason; a replay that keeps
// failing ends unavailable too. Never attested.
func TestAttestationOutcomes(t *testing.T) {
	e := attestSetup(t, teststore.Memory(t), 0)
	hiddenClause := honest()
	hiddenClause.Consents[0].Visible, hiddenClause.Consents[0].HiddenText = false, []string{"and 500 partners"}
	small := honest()
	small.Consents[0].FontSizePx, small.Consents[0].ContrastRatio = 9, 1.1
	styled := honest()
	styled.Consents[0].FontSizePx = 12
	styled.Unreproducible = []string{"stylesheet https://cdn.test/site.css"}
	gone := honest()
	gone.Consents[0].Found = false
	for _, tc := range []struct {
		name   string
		node   int
		attest *fakeAttester
		change func(t *testing.T, c *consent.Certificate)
		status string
		fields []string // of the differences
		reason string   // in the reason
	}{
		{name: "not found", node: 7, attest: &fakeAttester{measure: gone}, status: signed.Mismatch, fields: []string{"found"}},
		{name: "hidden clause", node: 7, attest: &fakeAttester{measure: hiddenClause}, status: signed.Mismatch,
			fields: []string{"visibility.visible", "visibility.hidden_text"}},
		{name: "smaller", node: 7, attest: &fakeAttester{measure: small}, status: signed.Mismatch,
			fields: []string{"visibility.font_size_px", "visibility.contrast_ratio"}},
		{name: "unloadable stylesheet", node: 7, attest: &fakeAttester{measure: styled}, status: signed.Unavailable,
			fields: []string{"visibility.font_size_px"}, reason: "could not reproduce stylesheet https://cdn.test/site.css"},
		{name: "no node", node: 0, attest: &fakeAttester{measure: honest()}, status: signed.Unavailable, reason: "node_id"},
		{name: "unreplayable", node: 7, attest: &fakeAttester{err: &mp4.RecordingError{Reason: "no full snapshot"}}, status: signed.Unavailable,
			reason: "cannot be replayed"},
		{name: "recording changed", node: 7, attest: &fakeAttester{measure: honest()}, status: signed.Unavailable, reason: "SHA-256",
			change: func(t *testing.T, c *consent.Certificate) {
				if _, err := e.svc.AppendEvents(ctx, c.SessionID, json.RawMessage(`[{"type":3,"timestamp":2}]`)); err != nil {
					t.Fatal(err)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := e.issue(t, "s-"+strings.ReplaceAll(tc.name, " ", "-"), tc.node)
			if tc.change != nil {
				tc.change(t, c)
			}
			if _, err := e.ask(t, c); err != nil {
				t.Fatal(err)
			}
			att, p := e.attest(t, tc.attest, c)
			s := p.Statement
			if att.Status != tc.status || s.Status != tc.status {
				t.Fatalf("status %s (stated %s), want %s: %+v", att.Status, s.Status, tc.status, s)
			}
			var fields []string
			for _, d := range s.Differences {
				fields = append(fields, d.Field)
			}
			if strings.Join(fields, ",") != strings.Join(tc.fields, ",") || !strings.Contains(s.Reason, tc.reason) {
				t.Errorf("differences %v, reason %q; want %v and a reason with %q", fields, s.Reason, tc.fields, tc.reason)
			}
			if tc.status == signed.Attested && len(s.Differences) != 0 {
				t.Errorf("differences stated with attested: %+v", s.Differences)
			}
		})
	}
	t.Run("keeps failing", func(t *testing.T) {
		c := e.issue(t, "s-failing", 7)
		if _, err := e.ask(t, c); err != nil {
			t.Fatal(err)
		}
		a := &fakeAttester{err: errors.New("browser crashed")}
		w := e.worker(t, a) // two attempts, the second after the backoff
		if ok, err := w.AttestOnce(ctx); !ok || err != nil {
			t.Fatal(ok, err)
		}
		if att, _ := e.svc.Attestation(ctx, "acme", c.ID); att.Status != consent.AttestationPending {
			t.Fatalf("after one failure: %s, want pending", att.Status)
		}
		e.clock.Add(time.Hour)
		if ok, err := w.AttestOnce(ctx); !ok || err != nil {
			t.Fatal(ok, err)
		}
		att, err := e.svc.Attestation(ctx, "acme", c.ID)
		p, perr := att.Proof()
		if err != nil || perr != nil || att.Status != consent.AttestationUnavailable || !strings.Contains(p.Statement.Reason, "browser crashed") {
			t.Errorf("after the last attempt: %+v %v %v", att, err, perr)
		}
	})
}

// A recording larger than WorkerConfig.MaxAttested is not replayed: its
// preparation would hold several times its size. Its attestation is
// unavailable, with the reason, and the browser is never asked.
func TestAttestationTooLargeToReplay(t *testing.T) {
	e := attestSetup(t, teststore.Memory(t), 0)
	if _, err := e.ask(t, e.cert); err != nil {
		t.Fatal(err)
	}
	a := &fakeAttester{measure: honest()}
	w := e.worker(t, a, func(c *retain.WorkerConfig) { c.MaxAttested = 16 })
	if ok, err := w.AttestOnce(ctx); !ok || err != nil {
		t.Fatalf("AttestOnce: %v %v", ok, err)
	}
	att, err := e.svc.Attestation(ctx, "acme", e.cert.ID)
	if err != nil {
		t.Fatal(err)
	}
	p, err := att.Proof()
	if err != nil || att.Status != consent.AttestationUnavailable || !strings.Contains(p.Statement.Reason, "more than an attestation replays (16)") || a.calls != 0 {
		t.Errorf("attestation %s, statement %+v (%v), %d replays; want unavailable for its size, none", att.Status, p, err, a.calls)
	}
	if _, err := retain.NewWorker(retain.WorkerConfig{Service: e.svc, Converter: a, Videos: retain.Dir{Root: e.videos}, MaxAttested: -1}); err == nil {
		t.Error("a negative MaxAttested was taken")
	}
}

// The queue is bounded: beyond Config.AttestationQueue waiting jobs an ask
// records nothing and says so; once the queue drains, asking again works.
func TestAttestationQueueBound(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e := attestSetup(t, open(t), 1)
		if a, err := e.ask(t, e.cert); err != nil || a.Status != consent.AttestationPending {
			t.Fatalf("the first ask: %+v %v", a, err)
		}
		second := e.issue(t, "s2", 7)
		if _, err := e.ask(t, second); !errors.Is(err, consentkit.ErrAttestationQueueFull) {
			t.Fatalf("an ask beyond the bound: %v, want ErrAttestationQueueFull", err)
		}
		if _, err := e.svc.Attestation(ctx, "acme", second.ID); consent.ErrorCode(err) != consent.NotFound {
			t.Errorf("a refused ask left an attestation: %v", err)
		}
		// Retention of the session is not refused for it.
		if _, err := retain.New(e.svc).Retain(ctx, "acme", "acme", "s2"); err != nil {
			t.Errorf("retention with the attestation queue full: %v", err)
		}
		e.attest(t, &fakeAttester{measure: honest()}, e.cert)
		if a, err := e.ask(t, second); err != nil || a.Status != consent.AttestationPending {
			t.Errorf("an ask once the queue drained: %+v %v", a, err)
		}
	})
}

// The screenshot stays while its certificate lives, retained or not, and
// is removed from the video store once the purge has taken the
// certificate (D43, D49).
func TestAttestationScreenshotPurged(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e := attestSetup(t, open(t), 0)
		if _, err := e.ask(t, e.cert); err != nil {
			t.Fatal(err)
		}
		att, _ := e.attest(t, &fakeAttester{measure: honest()}, e.cert)
		file := att.Screenshot
		if filepath.Dir(file) != filepath.Join(e.videos, e.cert.ID) {
			t.Fatalf("the screenshot is at %s, not in its certificate's directory of %s", file, e.videos)
		}
		purger, runner := e.purger(t)
		deleteDue := func() bool {
			t.Helper()
			ok, err := runner.RunOnce(ctx, retain.JobDeleteScreenshot)
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		if deleteDue() {
			t.Error("the screenshot's removal was due while its certificate lives")
		}
		e.clock.Add(consentkit.DefaultRetention - time.Hour)
		if _, err := purger.Purge(ctx); err != nil {
			t.Fatal(err)
		}
		if deleteDue() {
			t.Error("the screenshot's removal was due before the certificate expired")
		}
		if _, err := os.Stat(file); err != nil {
			t.Fatalf("the screenshot went before its certificate: %v", err)
		}
		e.clock.Add(2 * time.Hour)
		if n, err := purger.Purge(ctx); err != nil || n.Certificates == 0 {
			t.Fatalf("purge: %+v %v", n, err)
		}
		if !deleteDue() {
			t.Fatal("no removal due once the certificate was purged")
		}
		if _, err := os.Stat(filepath.Dir(file)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the screenshot, or its directory, outlived its purged certificate: %v", err)
		}
	})
}

// issueClaiming records a session and issues its certificate, its one
// consent at node 7 with its own visibility own and the certificate's
// visibility cert (either nil: not claimed).
func (e *attestEnv) issueClaiming(t *testing.T, session string, own, cert *consent.Visibility) *consent.Certificate {
	t.Helper()
	if _, err := e.svc.StartSession(ctx, consentkit.SessionParams{ID: session, CompanyID: "acme", PropertyID: "acme-web"}); err != nil {
		t.Fatal(err)
	}
	rec := json.RawMessage(`[{"type":4,"data":{"session":"` + session + `"},"timestamp":1}]`)
	if _, err := e.svc.AppendEvents(ctx, session, rec); err != nil {
		t.Fatal(err)
	}
	c, err := e.svc.IssueCertificate(ctx, consentkit.CertificateParams{CompanyID: "acme", PropertyID: "acme-web", SessionID: session,
		Origin: "https://acme.test/form", RecordingSHA256: consent.DigestOf(string(rec)), Visibility: cert,
		Records: []consent.Record{{Text: attestText, Types: []string{"calls"}, Visibility: own, OptInMethod: consent.OptInManual, NodeID: 7}}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The certificate's visibility is a claim of consent 0 as much as the
// consent's own (D47, D49), on every store: a body of a snippet cached
// before each consent had its own claims it alone, and a replay that
// measures otherwise is a mismatch; newer bodies claim both, compared
// once when they agree and each when they do not. A consent found with
// no visibility claimed at all is never attested.
func TestAttestationCertificateVisibility(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e := attestSetup(t, open(t), 0)
		lying := *claimed
		lying.InViewport, lying.FontSizePx, lying.ContrastRatio = false, 9, 1.2
		for i, tc := range []struct {
			name      string
			own, cert *consent.Visibility
			status    string
			fields    []string
			reason    string
		}{
			{name: "old body, honest", cert: claimed, status: signed.Attested},
			{name: "old body, forged", cert: &lying, status: signed.Mismatch,
				fields: []string{"visibility.in_viewport", "visibility.font_size_px", "visibility.contrast_ratio"}},
			{name: "both, honest", own: claimed, cert: claimed, status: signed.Attested},
			{name: "both, the certificate's forged", own: claimed, cert: &lying, status: signed.Mismatch,
				fields: []string{"certificate.visibility.in_viewport", "certificate.visibility.font_size_px", "certificate.visibility.contrast_ratio"}},
			{name: "none claimed", status: signed.Unavailable, reason: "claim no visibility"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				c := e.issueClaiming(t, "s-vis-"+strconv.Itoa(i), tc.own, tc.cert)
				if _, err := e.ask(t, c); err != nil {
					t.Fatal(err)
				}
				att, p := e.attest(t, &fakeAttester{measure: honest()}, c)
				s := p.Statement
				var fields []string
				for _, d := range s.Differences {
					fields = append(fields, d.Field)
				}
				if att.Status != tc.status || s.Status != tc.status || strings.Join(fields, ",") != strings.Join(tc.fields, ",") ||
					!strings.Contains(s.Reason, tc.reason) {
					t.Errorf("%s (stated %s), differences %v, reason %q; want %s, %v and a reason with %q",
						att.Status, s.Status, fields, s.Reason, tc.status, tc.fields, tc.reason)
				}
			})
		}
	})
}

// A batch retention asks for the attestations of its sessions'
// certificates as a retention of each would (D49: by any route, D23: what
// its entries one after another would store); an entry refused asks for
// none.
func TestAttestationAskedByBatch(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e := attestSetup(t, open(t), 0)
		second := e.issue(t, "s2", 7)
		res, err := retain.New(e.svc).RetainBatch(ctx, "acme", "acme", []string{"s1", "nope"})
		if err != nil || res.Retained != 1 || res.Failed != 1 {
			t.Fatalf("RetainBatch: %+v %v", res, err)
		}
		if att, err := e.svc.Attestation(ctx, "acme", e.cert.ID); err != nil || att.Status != consent.AttestationPending {
			t.Errorf("after the batch: %+v %v, want pending", att, err)
		}
		if att, err := e.svc.Attestation(ctx, "acme", second.ID); consent.ErrorCode(err) != consent.NotFound {
			t.Errorf("the certificate of a session the batch did not retain: %+v %v", att, err)
		}
	})
}

// lostAnswers is a video store whose PutScreenshot writes the file and
// then fails, as an upload whose answer was lost does: the attempt cannot
// know the path of what it wrote.
type lostAnswers struct{ retain.Dir }

func (l lostAnswers) PutScreenshot(ctx context.Context, certificateID string, png []byte) (consent.Video, error) {
	if _, err := l.Dir.PutScreenshot(ctx, certificateID, png); err != nil {
		return consent.Video{}, err
	}
	return consent.Video{}, errors.New("the store's answer was lost")
}

// A screenshot that an attempt wrote but never recorded (its answer lost),
// whose attestation then ended with none, goes with its certificate all
// the same: its removal was asked before it was written (D49).
func TestUnrecordedScreenshotPurged(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e := attestSetup(t, open(t), 0)
		if _, err := e.ask(t, e.cert); err != nil {
			t.Fatal(err)
		}
		a := &fakeAttester{measure: honest()}
		w := e.worker(t, a, func(c *retain.WorkerConfig) { c.Videos = lostAnswers{retain.Dir{Root: e.videos}} })
		if ok, _ := w.AttestOnce(ctx); !ok {
			t.Fatal("no attestation due")
		}
		a.err = &mp4.RecordingError{Reason: "the replay fails from now on"}
		e.clock.Add(time.Hour)
		if ok, _ := w.AttestOnce(ctx); !ok {
			t.Fatal("no second attempt due")
		}
		if att, err := e.svc.Attestation(ctx, "acme", e.cert.ID); err != nil || att.Status != consent.AttestationUnavailable || att.Screenshot != "" {
			t.Fatalf("after the attempts: %+v, %v; want unavailable, no screenshot", att, err)
		}
		files, _ := filepath.Glob(filepath.Join(e.videos, e.cert.ID, "*.png"))
		if len(files) != 1 {
			t.Fatalf("screenshots written: %v, want the lost one", files)
		}
		purger, runner := e.purger(t)
		e.clock.Add(consentkit.DefaultRetention + time.Hour)
		if n, err := purger.Purge(ctx); err != nil || n.Certificates == 0 {
			t.Fatalf("purge: %+v %v", n, err)
		}
		if ok, err := runner.RunOnce(ctx, retain.JobDeleteScreenshot); !ok || err != nil {
			t.Fatalf("the screenshot's removal: %v %v", ok, err)
		}
		if _, err := os.Stat(files[0]); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the unrecorded screenshot outlived its purged certificate: %v", err)
		}
	})
}

// A recorded attestation that a store writer turned back to pending, its
// statement removed, is attested again once asked: the pending row has no
// job, and asking queues one, so that the edit cannot leave "pending" for
// good in place of a mismatch (D49).
func TestPendingWithoutJobAskedAgain(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e := attestSetup(t, open(t), 0)
		if _, err := e.ask(t, e.cert); err != nil {
			t.Fatal(err)
		}
		hidden := honest()
		hidden.Consents[0].Visible = false
		if att, _ := e.attest(t, &fakeAttester{measure: hidden}, e.cert); att.Status != consent.AttestationMismatch {
			t.Fatalf("attested %s, want mismatch", att.Status)
		}
		if err := e.svc.Store().Update(ctx, func(tx consent.Tx) error {
			a, err := tx.Attestation(ctx, e.cert.ID)
			if err != nil {
				return err
			}
			a.Status, a.Statement, a.Signature, a.KeyID = consent.AttestationPending, nil, nil, ""
			return tx.UpdateAttestation(ctx, a)
		}); err != nil {
			t.Fatal(err)
		}
		if a, err := e.ask(t, e.cert); err != nil || a.Status != consent.AttestationPending {
			t.Fatalf("asked again: %+v, %v", a, err)
		}
		if a, _ := e.attest(t, &fakeAttester{measure: hidden}, e.cert); a.Status != consent.AttestationMismatch {
			t.Errorf("attested again: %s, want mismatch", a.Status)
		}
		if _, err := e.ask(t, e.cert); err != nil {
			t.Fatal(err)
		}
		if ok, err := e.worker(t, &fakeAttester{measure: hidden}).AttestOnce(ctx); ok || err != nil {
			t.Errorf("a recorded attestation asked again was queued again: %v, %v", ok, err)
		}
	})
}

// A waiting attestation job whose row was lost (deleted in the store) is
// not queued twice when asked again: the row is written back, pending,
// and the job that waits does the work. Before, the ask failed on the
// job's taken key, and a paid verification that asked kept its charge
// with a refusal (D3).
func TestJobWithoutRowAskedAgain(t *testing.T) {
	st, db := teststore.SQLiteWithDB(t)
	e := attestSetup(t, st, 0)
	if _, err := e.ask(t, e.cert); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`DELETE FROM attestations WHERE certificate_id = ?`, e.cert.ID); err != nil {
		t.Fatal(err)
	}
	a, err := e.ask(t, e.cert)
	if err != nil || a.Status != consent.AttestationPending {
		t.Fatalf("asked again with its job waiting and its row lost: %+v, %v; want pending", a, err)
	}
	if att, _ := e.attest(t, &fakeAttester{measure: honest()}, e.cert); att.Status != consent.AttestationAttested {
		t.Errorf("attested %s, want attested", att.Status)
	}
}

// Colours are measured facts of a consent's visibility (D47), compared as
// browsers write a computed colour: the replay measuring the text white on
// near-black, where the browser claimed near-black on white, is a mismatch
// naming both colours though the contrast is the same; the same colours
// written another way (rgba, no spaces, a channel off by rounding) are
// the same.
func TestAttestationColoursCompared(t *testing.T) {
	for _, tc := range []struct {
		name         string
		text, back   string
		want         string
		wantMismatch []string
	}{
		{"inverted", "rgb(255, 255, 255)", "rgb(17, 17, 17)", consent.AttestationMismatch, []string{"visibility.text_color", "visibility.background_color"}},
		{"written otherwise", "rgba(18,17,17,1)", "RGB(255 255 255 / 1)", consent.AttestationAttested, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := attestSetup(t, teststore.Memory(t), 0)
			m := honest()
			m.Consents[0].TextColor, m.Consents[0].BackgroundColor = tc.text, tc.back
			if _, err := e.ask(t, e.cert); err != nil {
				t.Fatal(err)
			}
			att, p := e.attest(t, &fakeAttester{measure: m}, e.cert)
			var fields []string
			for _, d := range p.Statement.Differences {
				fields = append(fields, d.Field)
			}
			if att.Status != tc.want || !slices.Equal(fields, tc.wantMismatch) {
				t.Errorf("measured %s on %s against the claimed %s on %s: %s, differences %v; want %s, %v",
					tc.text, tc.back, claimed.TextColor, claimed.BackgroundColor, att.Status, fields, tc.want, tc.wantMismatch)
			}
		})
	}
}
