package insights_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/insights"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/jobs"
	"github.com/consentkit/consentkit/optout"
	"github.com/consentkit/consentkit/signed"
	"github.com/consentkit/consentkit/wallet"
)

// jobEnv is a Service with signing keys and one company and property.
type jobEnv struct {
	svc *consentkit.Service
	key signed.SigningKey
	r   *jobs.Runner
}

func jobSetup(t *testing.T, st consent.Store, lim insights.Limits) *jobEnv {
	t.Helper()
	return jobSetupConfig(t, st, consentkit.Config{}, lim)
}

// jobSetupConfig is jobSetup with the service's Config cfg, its clock and
// signing keys set.
func jobSetupConfig(t *testing.T, st consent.Store, cfg consentkit.Config, lim insights.Limits) *jobEnv {
	t.Helper()
	key, err := signed.NewSigningKey("k1")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	e := &jobEnv{key: key}
	cfg.Now, cfg.SigningKeys = func() time.Time { return now }, []signed.SigningKey{key}
	e.svc, err = consentkit.NewService(st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := e.svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.AddProperty(ctx, consentkit.PropertyParams{ID: "acme-web", CompanyID: "acme", Name: "Form"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.TopUp(ctx, "acme", wallet.Dollar, ""); err != nil {
		t.Fatal(err)
	}
	e.r, err = jobs.New(jobs.Config{Store: e.svc.Store(), Handlers: []jobs.Handler{insights.Handler(e.svc, lim)}, Now: e.svc.Now})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// issue records the session's events, chunk by chunk, and issues its
// certificate with the user agent ua and its recording's SHA-256, which
// the job checks.
func (e *jobEnv) issue(t *testing.T, session string, chunks []string, ua string) *consent.Certificate {
	return e.issueWith(t, session, chunks, ua, nil)
}

// issueWith is issue with the recording's SHA-256 that digest returns of
// the real one.
func (e *jobEnv) issueWith(t *testing.T, session string, chunks []string, ua string, digest func(consent.Digest) consent.Digest) *consent.Certificate {
	t.Helper()
	ctx := context.Background()
	if _, err := e.svc.StartSession(ctx, consentkit.SessionParams{ID: session, CompanyID: "acme", PropertyID: "acme-web"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range chunks {
		if _, err := e.svc.AppendEvents(ctx, session, json.RawMessage(c)); err != nil {
			t.Fatal(err)
		}
	}
	inner := make([][]byte, len(chunks))
	for i, c := range chunks {
		inner[i] = []byte(c)
	}
	sum := consent.DigestOf(string(consent.JoinChunks(inner)))
	if digest != nil {
		sum = digest(sum)
	}
	cert, err := e.svc.IssueCertificate(ctx, consentkit.CertificateParams{CompanyID: "acme", PropertyID: "acme-web", SessionID: session,
		Origin: "https://acme.test/form", UserAgent: ua, RecordingSHA256: sum,
		Records: []consent.Record{{Text: "I agree to be called.", Types: []string{"calls"}, OptInMethod: consent.OptInManual}}})
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// run does the certificate's insights job and returns its insights.
func (e *jobEnv) run(t *testing.T, cert *consent.Certificate) *consent.Insights {
	t.Helper()
	ctx := context.Background()
	in, err := e.svc.Insights(ctx, "acme", cert.ID)
	if err != nil || in.Status != consent.InsightsPending || len(in.Statement) != 0 {
		t.Fatalf("before the job: %+v %v, want pending", in, err)
	}
	if ok, err := e.r.RunOnce(ctx, consent.JobInsights); err != nil || !ok {
		t.Fatalf("RunOnce: %v %v", ok, err)
	}
	if in, err = e.svc.Insights(ctx, "acme", cert.ID); err != nil || in.Status != consent.InsightsDone {
		t.Fatalf("after the job: %+v %v, want done", in, err)
	}
	return in
}

// chunked splits a recording's events into chunks of n events, as a
// snippet sends them.
func chunked(r *rec, n int) []string {
	var out []string
	for i := 0; i < len(r.events); i += n {
		out = append(out, "["+strings.Join(r.events[i:min(i+n, len(r.events))], ",")+"]")
	}
	return out
}

// The job of a certificate issued right after consent computes the
// signals of its recording, read chunk by chunk, with the certificate's
// user agent, and records them with the verdict as a signed statement
// that verifies offline against the certificate and fails once edited. On
// every store.
func TestInsightsJob(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e := jobSetup(t, open(t), insights.Limits{})
		r := person()
		cert := e.issue(t, "s1", chunked(r, 7), desktopUA)
		in := e.run(t, cert)
		p, err := in.Proof()
		if err != nil || p == nil {
			t.Fatalf("Proof: %v %v", p, err)
		}
		published, _ := json.Marshal(signed.Publish([]signed.PublicKey{e.key.Public()}))
		var keys signed.KeySet
		if err := json.Unmarshal(published, &keys); err != nil {
			t.Fatal(err)
		}
		content := consent.Signed(cert)
		if err := p.Verify(&keys, &content); err != nil {
			t.Fatalf("the statement does not verify offline: %v", err)
		}
		whole := extract(t, r.String(), desktopUA)
		want, _, err := insights.Statement(e.svc, cert, whole, insights.Rules{}.Judge(whole, insights.Facts{}))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, p.Statement); diff != "" {
			t.Errorf("the statement (-of the whole recording +of the job):\n%s", diff)
		}
		if p.Statement.Bot.Verdict != "human" || len(p.Statement.Signals.Inputs) != 4 || p.Statement.Signals.Inputs[0].Name != "city" {
			t.Errorf("statement %+v: want a human's, its four inputs by name", p.Statement)
		}
		p.Statement.Bot.Verdict = "bot"
		if err := p.Verify(&keys, &content); err == nil {
			t.Error("an edited statement verified")
		}
	})
}

// A consent with no recording and a plain HTTP client's user agent is a
// bot's; a recording past the limits is judged as none; a done job is not
// done again.
func TestInsightsJobNoRecording(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e := jobSetup(t, open(t), insights.Limits{MaxBytes: 2048})
		for _, c := range []struct {
			session string
			chunks  []string
		}{{"s1", nil}, {"s2", chunked(person(), 5)}} {
			cert := e.issue(t, c.session, c.chunks, "curl/8.5.0")
			p, err := e.run(t, cert).Proof()
			if err != nil {
				t.Fatal(err)
			}
			b := p.Statement.Bot
			if b.Verdict != "bot" || !strings.Contains(strings.Join(b.Reasons, ","), "no_recording") ||
				!strings.Contains(strings.Join(b.Reasons, ","), "not_a_browser") {
				t.Errorf("%s: verdict %+v, want bot for no_recording and not_a_browser", c.session, b)
			}
		}
		if ok, err := e.r.RunOnce(context.Background(), consent.JobInsights); err != nil || ok {
			t.Errorf("RunOnce with no job left: %v %v", ok, err)
		}
	})
}

// A service that takes recordings past Limits' default (a higher
// Config.MaxRecordingBytes) has them read whole by a Handler with the
// default limits: a recording the service took is never judged past the
// limits, as none, for its size.
func TestInsightsJobRecordingPastDefaultBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and reads a 65 MiB recording")
	}
	e := jobSetupConfig(t, teststore.Memory(t), consentkit.Config{MaxRecordingBytes: 80 << 20}, insights.Limits{})
	chunks := chunked(person(), 7)
	pad := `[{"type":6,"data":{"plugin":"pad","payload":"` + strings.Repeat("x", 1<<20-200) + `"},"timestamp":1767225600000}]`
	padded := []string{chunks[0]}
	for total := 0; total <= 64<<20; total += len(pad) {
		padded = append(padded, pad)
	}
	padded = append(padded, chunks[1:]...)
	cert := e.issue(t, "s1", padded, desktopUA)
	p, err := e.run(t, cert).Proof()
	if err != nil {
		t.Fatal(err)
	}
	if b := p.Statement.Bot; b.Verdict != "human" || len(p.Statement.Signals.Inputs) != 4 {
		t.Errorf("a recording of %d chunks of about 1 MiB: verdict %+v, inputs %+v; want a human's, four inputs",
			len(padded), b, p.Statement.Signals.Inputs)
	}
}

// A recording that is not the one the certificate was issued with (its
// SHA-256 differs) is judged as none: its signals are no evidence of this
// consent.
func TestInsightsJobOtherRecording(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e := jobSetup(t, open(t), insights.Limits{})
		cert := e.issueWith(t, "s1", chunked(person(), 7), desktopUA, func(d consent.Digest) consent.Digest { d[0] ^= 1; return d })
		p, err := e.run(t, cert).Proof()
		if err != nil {
			t.Fatal(err)
		}
		if b := p.Statement.Bot; b.Verdict != "bot" || !slices.Contains(b.Reasons, "no_recording") || p.Statement.Signals.Events != 0 {
			t.Errorf("verdict %+v, %d events: want bot for no_recording, none read", b, p.Statement.Signals.Events)
		}
	})
}

// The job judges by the company's own rules (Service.SetInsightsRules) and
// signs consent_after_revocation when the consumer had opted out before
// consenting (D50).
func TestInsightsJobCompanyRulesAndRevocation(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		ctx := context.Background()
		e := jobSetup(t, open(t), insights.Limits{})
		if _, err := e.svc.SetInsightsRules(ctx, "acme", consent.InsightsRules{MinSecondsOnPage: 100000}); err != nil {
			t.Fatal(err)
		}
		p, err := e.run(t, e.issue(t, "s1", chunked(person(), 7), desktopUA)).Proof()
		if err != nil {
			t.Fatal(err)
		}
		if b := p.Statement.Bot; b.Verdict != "bot" || !slices.Equal(b.Reasons, []string{"submitted_too_fast"}) {
			t.Errorf("a person's session under a company's minimum of 100,000 s on the page: %+v, want bot for submitted_too_fast", b)
		}

		if _, err := e.svc.SetInsightsRules(ctx, "acme", consent.InsightsRules{}); err != nil {
			t.Fatal(err)
		}
		if _, err := optout.New(e.svc).OptOut(ctx, optout.Request{CompanyID: "acme", Email: "jane@example.com"}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.StartSession(ctx, consentkit.SessionParams{ID: "s2", CompanyID: "acme", PropertyID: "acme-web"}); err != nil {
			t.Fatal(err)
		}
		r := person()
		for _, c := range chunked(r, 7) {
			if _, err := e.svc.AppendEvents(ctx, "s2", json.RawMessage(c)); err != nil {
				t.Fatal(err)
			}
		}
		cert, err := e.svc.IssueCertificate(ctx, consentkit.CertificateParams{CompanyID: "acme", PropertyID: "acme-web", SessionID: "s2",
			Email: "Jane@Example.com", Origin: "https://acme.test/form", UserAgent: desktopUA,
			Records: []consent.Record{{Text: "I agree to be called.", Types: []string{"calls"}, OptInMethod: consent.OptInManual}}})
		if err != nil {
			t.Fatal(err)
		}
		if cert.RevokedBefore.IsZero() {
			t.Fatal("the certificate does not say the consumer had opted out before")
		}
		if p, err = e.run(t, cert).Proof(); err != nil {
			t.Fatal(err)
		}
		if b := p.Statement.Bot; b.Verdict != "suspect" || !slices.Equal(b.Reasons, []string{"consent_after_revocation"}) {
			t.Errorf("a person's consent after an opt-out: %+v, want suspect for consent_after_revocation", b)
		}
	})
}

// A job that fails for good leaves the insights failed, not pending for
// ever; a job that will be tried again leaves them pending.
func TestInsightsJobFailed(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		ctx := context.Background()
		e := jobSetup(t, open(t), insights.Limits{})
		cert := e.issue(t, "s1", nil, desktopUA)
		h := insights.Handler(e.svc, insights.Limits{})
		job := &consent.Job{Kind: consent.JobInsights, Key: cert.ID}
		for _, final := range []bool{false, true} {
			err := e.svc.Store().Update(ctx, func(tx consent.Tx) error {
				return h.Failed(ctx, tx, job, errors.New("the store is down"), final)
			})
			if err != nil {
				t.Fatal(err)
			}
			in, err := e.svc.Insights(ctx, "acme", cert.ID)
			want := consent.InsightsPending
			if final {
				want = consent.InsightsFailed
			}
			if err != nil || in.Status != want || len(in.Statement) != 0 {
				t.Errorf("after a failed attempt (final %t): %+v %v, want %s", final, in, err, want)
			}
		}
	})
}

// What insights say when asked is judged by the asking company's rules: a
// buyer verifying a seller's certificate sees the reasons its own
// thresholds find in the signed signals, whatever thresholds the seller
// judged them by at issue, and never a verdict milder than the signed
// one. On every store.
func TestAskJudgedByTheAsker(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		ctx := context.Background()
		e := jobSetup(t, open(t), insights.Limits{})
		// The seller turns the time on the page off; a buyer asks for more
		// time on the page than any person spends.
		if _, err := e.svc.SetInsightsRules(ctx, "acme", consent.InsightsRules{MinSecondsOnPage: -1}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "buyer", Name: "Buyer"}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.SetInsightsRules(ctx, "buyer", consent.InsightsRules{MinSecondsOnPage: 100000}); err != nil {
			t.Fatal(err)
		}
		cert := e.issue(t, "s1", chunked(person(), 7), desktopUA)
		in := e.run(t, cert)
		p, err := in.Proof()
		if err != nil {
			t.Fatal(err)
		}
		if b := p.Statement.Bot; b.Verdict != "human" {
			t.Fatalf("signed verdict %+v, want human", b)
		}
		ask := func(judge string) *insights.Asked {
			t.Helper()
			var a *insights.Asked
			if err := e.svc.Store().View(ctx, func(tx consent.Tx) error {
				var err error
				a, err = insights.Ask(ctx, e.svc, tx, cert, in, e.svc.Now(), judge)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			return a
		}
		if a := ask("acme"); a.Bot.Verdict != insights.Human || len(a.AskedReasons) != 0 {
			t.Errorf("asked by the seller: %+v, asked reasons %v; want human, none added", a.Bot, a.AskedReasons)
		}
		want := []insights.Reason{insights.ReasonSubmittedTooFast}
		if a := ask("buyer"); a.Bot.Verdict != insights.Bot || !slices.Equal(a.AskedReasons, want) || !slices.Equal(a.Bot.Reasons, want) {
			t.Errorf("asked by the buyer: %+v, asked reasons %v; want bot for submitted_too_fast, found when asked", a.Bot, a.AskedReasons)
		}
	})
}
