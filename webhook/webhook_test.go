package webhook_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/jobs"
	"github.com/consentkit/consentkit/optout"
	"github.com/consentkit/consentkit/webhook"
)

var ctx = context.Background()

// quiet is the logger of the tests' handlers and runners: failed attempts
// are the point of several tests, and the delivery log records them.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// secret is an endpoint's secret: "whsec_" and the base64 of 32 bytes.
const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwWdPS0Ci+mjE="

const (
	email  = "Jane.Doe@Example.com"
	mobile = "(555) 010-2000"
)

// received is one request that the receiver got.
type received struct {
	Header http.Header
	Body   []byte
	At     time.Time
}

// receiver is a webhook receiver on a real HTTP server. Each request is
// answered by answer (default 204).
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	got    []received
	answer func(n int, w http.ResponseWriter, r *http.Request) // n counts from 0
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		n := len(rc.got)
		rc.got = append(rc.got, received{Header: r.Header.Clone(), Body: body, At: time.Now()})
		answer := rc.answer
		rc.mu.Unlock()
		if r.Method != http.MethodPost {
			t.Errorf("receiver: method %s, want POST", r.Method)
		}
		if answer != nil {
			answer(n, w, r)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

// checkSignature verifies a request as the Standard Webhooks specification
// says, written here from the specification rather than with the package's
// signer: the key is the base64-decoded part of the secret after "whsec_";
// the signed content is "id.timestamp.body"; the header lists
// space-separated "v1,<base64 HMAC-SHA256>" signatures.
func checkSignature(t *testing.T, secret string, r received) {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		t.Fatal(err)
	}
	id, ts := r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp")
	if !strings.HasPrefix(id, "msg_") || ts == "" {
		t.Fatalf("webhook-id %q, webhook-timestamp %q", id, ts)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "." + string(r.Body)))
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	for _, sig := range strings.Split(r.Header.Get("webhook-signature"), " ") {
		if sig == want {
			return
		}
	}
	t.Errorf("webhook-signature %q; want %q", r.Header.Get("webhook-signature"), want)
}

// event is a message body.
type event struct {
	Type      string         `json:"type"`
	Timestamp time.Time      `json:"timestamp"`
	Data      map[string]any `json:"data"`
}

func decode(t *testing.T, body []byte) event {
	t.Helper()
	var e event
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.UseNumber()
	if err := dec.Decode(&e); err != nil {
		t.Fatalf("body %s: %v", body, err)
	}
	return e
}

// clock is a fake clock for the service and the runner.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// env is a service with company acme: property web, session s1 and, once
// issue is called, certificate cert-1 with the email and mobile above.
type env struct {
	svc    *consentkit.Service
	clock  *clock
	runner *jobs.Runner
}

type envOpts struct {
	cfg     consentkit.Config
	webhook webhook.Config
	// guard keeps the delivery's address guard on; otherwise the receiver
	// on 127.0.0.1 needs AllowPrivate.
	guard bool
	// wrap, when set, changes the handler before the runner gets it.
	wrap func(jobs.Handler) jobs.Handler
}

// patient is the tests' timeout of an attempt, unless a test sets its own:
// only a hang reaches it, however slow the machine. (The default, 15 s,
// is a span a delivery on a busy machine might take.)
const patient = 10 * time.Minute

func newEnv(t *testing.T, st consent.Store, o envOpts) *env {
	t.Helper()
	c := &clock{now: time.Now().UTC().Truncate(time.Second)}
	o.cfg.Now = c.Now
	o.cfg.WebhookAllowPrivate = true // the receiver is on 127.0.0.1
	svc, err := consentkit.NewService(st, o.cfg)
	if err != nil {
		t.Fatal(err)
	}
	o.webhook.Service = svc
	o.webhook.AllowPrivate = !o.guard
	o.webhook.Logger = quiet
	if o.webhook.Timeout == 0 {
		o.webhook.Timeout = patient
	}
	h, err := webhook.Handler(o.webhook)
	if err != nil {
		t.Fatal(err)
	}
	if o.wrap != nil {
		h = o.wrap(h)
	}
	r, err := jobs.New(jobs.Config{Store: st, Handlers: []jobs.Handler{h}, Now: c.Now, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.AddProperty(ctx, consentkit.PropertyParams{ID: "web", CompanyID: "acme", Name: "Form"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.StartSession(ctx, consentkit.SessionParams{ID: "s1", CompanyID: "acme", PropertyID: "web"}); err != nil {
		t.Fatal(err)
	}
	return &env{svc: svc, clock: c, runner: r}
}

func (e *env) issue(t *testing.T, id string) {
	t.Helper()
	_, err := e.svc.IssueCertificate(ctx, consentkit.CertificateParams{
		ID: id, CompanyID: "acme", PropertyID: "web", SessionID: "s1", Origin: "https://acme.example/quote",
		Email: email, Mobile: mobile, Records: []consent.Record{{Text: "I agree.", Types: []string{"tcpa"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (e *env) endpoint(t *testing.T, url string, events ...string) *consent.WebhookEndpoint {
	t.Helper()
	ep, err := webhook.Endpoints{Service: e.svc}.Add(ctx, webhook.Params{CompanyID: "acme", URL: url, Secret: secret, Events: events})
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

// drain runs due webhook jobs until none is left and returns how many ran.
func (e *env) drain(t *testing.T) int {
	t.Helper()
	n := 0
	for {
		ran, err := e.runner.RunOnce(ctx, consent.JobWebhook)
		if err != nil {
			t.Fatal(err)
		}
		if !ran {
			return n
		}
		n++
	}
}

func (e *env) log(t *testing.T, endpointID string) []*consent.WebhookDelivery {
	t.Helper()
	log, err := webhook.Endpoints{Service: e.svc}.Deliveries(ctx, "acme", endpointID, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	return log
}

// job returns the one webhook job for the endpoint, or nil.
func (e *env) job(t *testing.T, msgID, endpointID string) *consent.Job {
	t.Helper()
	var j *consent.Job
	err := e.svc.Store().View(ctx, func(tx consent.Tx) error {
		var err error
		j, err = tx.Job(ctx, consent.JobWebhook, msgID+":"+endpointID)
		return err
	})
	if consent.ErrorCode(err) == consent.NotFound {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// TestConsentRevoked delivers an opt-out's event on every store: signed as
// the specification says, with the certificate ids, never the email or
// mobile; the attempt is logged and the job is gone.
func TestConsentRevoked(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(tb testing.TB) consent.Store) {
		rc := newReceiver(t)
		e := newEnv(t, open(t), envOpts{})
		ep := e.endpoint(t, rc.URL+"/hooks?x=1", consent.EventConsentRevoked)
		e.issue(t, "cert-1")
		e.issue(t, "cert-2")
		res, err := optout.New(e.svc).OptOut(ctx, optout.Request{CompanyID: "acme", Email: email, Mobile: mobile, ClientIP: "192.0.2.1"})
		if err != nil {
			t.Fatal(err)
		}
		if n := e.drain(t); n != 1 {
			t.Fatalf("%d jobs ran; want 1 (certificate.issued is not subscribed)", n)
		}
		got := rc.requests()
		if len(got) != 1 {
			t.Fatalf("receiver got %d requests; want 1", len(got))
		}
		r := got[0]
		checkSignature(t, secret, r)
		if ts := r.Header.Get("webhook-timestamp"); ts != "" && ts != jsonInt(e.clock.Now().Unix()) {
			t.Errorf("webhook-timestamp %s; want %d", ts, e.clock.Now().Unix())
		}
		if ct := r.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type %q", ct)
		}
		ev := decode(t, r.Body)
		if ev.Type != consent.EventConsentRevoked || !ev.Timestamp.Equal(res.Timestamp) {
			t.Errorf("type %q timestamp %v; want %q %v", ev.Type, ev.Timestamp, consent.EventConsentRevoked, res.Timestamp)
		}
		revs, err := revocations(e.svc)
		if err != nil || len(revs) != 1 {
			t.Fatalf("revocations: %v, %v", revs, err)
		}
		want := map[string]any{
			"revocation_id": revs[0].ID, "company_id": "acme", "certificate_ids": []any{"cert-1", "cert-2"},
			"revoked_at": res.Timestamp.Format(time.RFC3339Nano),
		}
		if d := cmp.Diff(want, ev.Data); d != "" {
			t.Errorf("data (-want +got):\n%s", d)
		}
		// Nothing that identifies the consumer: not the email or mobile as
		// given or normalized, nor their digests.
		body := strings.ToLower(string(r.Body))
		for _, s := range []string{"jane", "example.com", "5550102000", "010-2000", "email", "mobile",
			revs[0].EmailDigest.String(), revs[0].MobileDigest.String()} {
			if strings.Contains(body, strings.ToLower(s)) {
				t.Errorf("body holds %q: %s", s, r.Body)
			}
		}
		log := e.log(t, ep.ID)
		wantLog := []*consent.WebhookDelivery{{
			EndpointID: ep.ID, MessageID: r.Header.Get("webhook-id"), EventType: consent.EventConsentRevoked,
			Attempt: 1, At: e.clock.Now(), Status: http.StatusNoContent,
		}}
		if d := cmp.Diff(wantLog, log, cmpopts.IgnoreFields(consent.WebhookDelivery{}, "Seq", "Duration")); d != "" {
			t.Errorf("delivery log (-want +got):\n%s", d)
		}
		if log[0].Duration <= 0 {
			t.Errorf("logged duration %v; want positive", log[0].Duration)
		}
		if j := e.job(t, r.Header.Get("webhook-id"), ep.ID); j != nil {
			t.Errorf("job left after delivery: %+v", j)
		}
	})
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

func revocations(svc *consentkit.Service) ([]*consent.Revocation, error) {
	var out []*consent.Revocation
	err := svc.Store().View(ctx, func(tx consent.Tx) error {
		var err error
		out, err = tx.Revocations(ctx, "acme")
		return err
	})
	return out, err
}

// TestRetries: 500s and a timeout are retried with exponential backoff,
// the first retry within 10 s, each attempt signed anew and logged, until a
// 2xx; the message id and body stay the same.
//
// The attempt that times out has its deadline pass while the receiver
// holds its request, whatever the machine's speed: its context ends with
// the cause context.DeadlineExceeded once the request has arrived, as the
// runner's timeout would end it. That the runner applies Config.Timeout
// is checked here (the handler carries it), and that it ends Do's context
// at that deadline is jobs' TestTimeout. A real timer of a few hundred
// milliseconds would also bound the attempts that should succeed, and
// the timed-out one would race its request to the receiver.
func TestRetries(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(tb testing.TB) consent.Store) {
		rc := newReceiver(t)
		release := make(chan struct{})
		t.Cleanup(func() { close(release) })
		var (
			mu     sync.Mutex
			expire context.CancelCauseFunc // ends the attempt in flight
		)
		rc.answer = func(n int, w http.ResponseWriter, r *http.Request) {
			switch n {
			case 0, 1:
				w.WriteHeader(http.StatusInternalServerError)
			case 2: // held until the attempt's deadline passes
				mu.Lock()
				expire(context.DeadlineExceeded)
				mu.Unlock()
				select {
				case <-release:
				case <-r.Context().Done():
				}
			default:
				w.WriteHeader(http.StatusOK)
			}
		}
		const timeout = 7 * time.Minute
		wrap := func(h jobs.Handler) jobs.Handler {
			if h.Timeout != timeout {
				t.Errorf("the handler's Timeout is %v; want Config.Timeout, %v", h.Timeout, timeout)
			}
			do := h.Do
			h.Do = func(ctx context.Context, j *consent.Job) (jobs.Result, error) {
				ctx, cancel := context.WithCancelCause(ctx)
				defer cancel(nil)
				mu.Lock()
				expire = cancel
				mu.Unlock()
				return do(ctx, j)
			}
			return h
		}
		e := newEnv(t, open(t), envOpts{webhook: webhook.Config{Timeout: timeout}, wrap: wrap})
		ep := e.endpoint(t, rc.URL, consent.EventCertificateIssued)
		start := e.clock.Now()
		e.issue(t, "cert-1")

		wantWaits := []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second}
		var msgID string
		for i, wait := range wantWaits {
			if ran, err := e.runner.RunOnce(ctx, consent.JobWebhook); err != nil || !ran {
				t.Fatalf("attempt %d: ran %v, %v", i+1, ran, err)
			}
			msgID = rc.requests()[0].Header.Get("webhook-id")
			j := e.job(t, msgID, ep.ID)
			if j == nil {
				t.Fatalf("attempt %d: job gone; want it kept for a retry", i+1)
			}
			if got := j.RunAfter.Sub(e.clock.Now()); got != wait {
				t.Errorf("attempt %d: retry after %v; want %v", i+1, got, wait)
			}
			// Not due before then.
			e.clock.Add(wait - time.Second)
			if ran, _ := e.runner.RunOnce(ctx, consent.JobWebhook); ran {
				t.Fatalf("attempt %d: retried before its backoff ran out", i+1)
			}
			e.clock.Add(time.Second)
		}
		if n := e.drain(t); n != 1 {
			t.Fatalf("last attempt: %d jobs ran; want 1", n)
		}
		if j := e.job(t, msgID, ep.ID); j != nil {
			t.Errorf("job left after delivery: %+v", j)
		}
		got := rc.requests()
		if len(got) != 4 {
			t.Fatalf("receiver got %d requests; want 4", len(got))
		}
		for i, r := range got {
			checkSignature(t, secret, r)
			if r.Header.Get("webhook-id") != msgID || string(r.Body) != string(got[0].Body) {
				t.Errorf("request %d: id %s body %s; want the first's", i, r.Header.Get("webhook-id"), r.Body)
			}
		}
		if got[3].Header.Get("webhook-timestamp") == got[0].Header.Get("webhook-timestamp") {
			t.Error("the last attempt carries the first's timestamp; want its own")
		}
		log := e.log(t, ep.ID)
		type row struct {
			Attempt, Status int
			At              time.Time
			Failed          bool
		}
		var rows []row
		for _, d := range log {
			rows = append(rows, row{d.Attempt, d.Status, d.At, d.Error != ""})
		}
		wantRows := []row{
			{4, 200, start.Add(35 * time.Second), false},
			{3, 0, start.Add(15 * time.Second), true},
			{2, 500, start.Add(5 * time.Second), true},
			{1, 500, start, true},
		}
		if d := cmp.Diff(wantRows, rows); d != "" {
			t.Errorf("delivery log (-want +got):\n%s", d)
		}
		if len(log) == 4 {
			if !strings.Contains(log[2].Error, "500") || !strings.Contains(log[1].Error, "deadline exceeded") {
				t.Errorf("logged errors %q, %q; want HTTP 500 and a deadline", log[2].Error, log[1].Error)
			}
			if log[1].Duration <= 0 {
				t.Errorf("timed-out attempt took %v; want its time logged", log[1].Duration)
			}
		}
	})
}

// TestGiveUp: a message that is never accepted is retried for three days,
// then kept as failed.
func TestGiveUp(t *testing.T) {
	rc := newReceiver(t)
	rc.answer = func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }
	e := newEnv(t, teststore.Memory(t), envOpts{})
	ep := e.endpoint(t, rc.URL, consent.EventCertificateIssued)
	created := e.clock.Now()
	e.issue(t, "cert-1")
	var last *consent.Job
	for range 100 {
		if ran, err := e.runner.RunOnce(ctx, consent.JobWebhook); err != nil || !ran {
			t.Fatalf("ran %v, %v", ran, err)
		}
		last = e.job(t, rc.requests()[0].Header.Get("webhook-id"), ep.ID)
		if !last.FailedAt.IsZero() {
			break
		}
		if wait := last.RunAfter.Sub(e.clock.Now()); wait > webhook.DefaultMaxBackoff {
			t.Fatalf("backoff %v over %v", wait, webhook.DefaultMaxBackoff)
		}
		e.clock.Set(last.RunAfter)
	}
	age := last.FailedAt.Sub(created)
	if last.FailedAt.IsZero() || age < 72*time.Hour || age > 72*time.Hour+webhook.DefaultMaxBackoff {
		t.Fatalf("job failed at %v, %v after it was created; want just past 72h", last.FailedAt, age)
	}
	if n := len(rc.requests()); n != last.Attempts || n < 15 || n > 30 {
		t.Errorf("%d requests, %d attempts; want them equal, between 15 and 30", n, last.Attempts)
	}
	if log := e.log(t, ep.ID); len(log) != last.Attempts || log[0].Status != 503 {
		t.Errorf("log of %d entries (newest %+v); want %d, the newest a 503", len(log), log[0], last.Attempts)
	}
	if ran, _ := e.runner.RunOnce(ctx, consent.JobWebhook); ran {
		t.Error("a failed job ran again")
	}
}

// TestRolledBack: a change that rolls back sends nothing.
func TestRolledBack(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(tb testing.TB) consent.Store) {
		rc := newReceiver(t)
		e := newEnv(t, open(t), envOpts{})
		e.endpoint(t, rc.URL, consent.EventTypes...)
		boom := errors.New("boom")
		err := e.svc.Store().Update(ctx, func(tx consent.Tx) error {
			_, err := e.svc.IssueCertificateTx(ctx, tx, consentkit.CertificateParams{
				ID: "cert-1", CompanyID: "acme", PropertyID: "web", SessionID: "s1",
				Records: []consent.Record{{Text: "I agree."}},
			})
			if err != nil {
				return err
			}
			// The event is in the transaction...
			if _, err := tx.LeaseJob(ctx, []string{consent.JobWebhook}, "peek", e.clock.Now(), e.clock.Now()); err != nil {
				t.Errorf("no webhook job inside the transaction: %v", err)
			}
			return boom // ...which rolls back.
		})
		if !errors.Is(err, boom) {
			t.Fatalf("Update = %v; want boom", err)
		}
		if n := e.drain(t); n != 0 {
			t.Errorf("%d jobs ran after a rollback", n)
		}
		if n := len(rc.requests()); n != 0 {
			t.Errorf("receiver got %d requests after a rollback", n)
		}
		// The same change committed is delivered.
		e.issue(t, "cert-1")
		if n := e.drain(t); n != 1 || len(rc.requests()) != 1 {
			t.Errorf("after the commit: %d jobs, %d requests; want 1 and 1", n, len(rc.requests()))
		}
	})
}

// TestEndpointChoice: a message goes to each enabled endpoint of the
// company subscribed to its type, to no other company's.
func TestEndpointChoice(t *testing.T) {
	rcA, rcB, rcC, rcOther := newReceiver(t), newReceiver(t), newReceiver(t), newReceiver(t)
	e := newEnv(t, teststore.SQLite(t), envOpts{})
	hooks := webhook.Endpoints{Service: e.svc}
	e.endpoint(t, rcA.URL, consent.EventCertificateIssued, consent.EventConsentRevoked)
	e.endpoint(t, rcB.URL, consent.EventConsentRevoked)
	c := e.endpoint(t, rcC.URL, consent.EventCertificateIssued)
	if err := hooks.SetDisabled(ctx, "acme", c.ID, true); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "other", Name: "Other"}); err != nil {
		t.Fatal(err)
	}
	if _, err := hooks.Add(ctx, webhook.Params{CompanyID: "other", URL: rcOther.URL, Secret: secret,
		Events: consent.EventTypes}); err != nil {
		t.Fatal(err)
	}
	e.issue(t, "cert-1")
	e.drain(t)
	counts := []int{len(rcA.requests()), len(rcB.requests()), len(rcC.requests()), len(rcOther.requests())}
	if d := cmp.Diff([]int{1, 0, 0, 0}, counts); d != "" {
		t.Errorf("requests at A (subscribed), B (not), C (disabled), other company (-want +got):\n%s", d)
	}

	// Another company can neither read C's log nor delete it.
	if _, err := hooks.Deliveries(ctx, "other", c.ID, 0, 10); !errors.Is(err, consent.ErrNotFound) {
		t.Errorf("another company's log: %v; want NotFound", err)
	}
	if err := hooks.Delete(ctx, "other", c.ID); !errors.Is(err, consent.ErrNotFound) {
		t.Errorf("deleting another company's endpoint: %v; want NotFound", err)
	}
	if err := hooks.Delete(ctx, "acme", c.ID); err != nil {
		t.Fatal(err)
	}
	eps, err := hooks.List(ctx, "acme")
	if err != nil || len(eps) != 2 {
		t.Fatalf("endpoints after a delete: %v, %v; want 2", eps, err)
	}
	// At most MaxEndpoints a company.
	for range webhook.MaxEndpoints - len(eps) {
		e.endpoint(t, rcB.URL, consent.EventVideoFailed)
	}
	_, err = hooks.Add(ctx, webhook.Params{CompanyID: "acme", URL: rcB.URL, Events: []string{consent.EventVideoFailed}})
	if !errors.Is(err, consent.ErrInvalid) {
		t.Errorf("endpoint %d: %v; want Invalid", webhook.MaxEndpoints+1, err)
	}
}

// TestEndpointIDReused: a queued message goes only to an endpoint of the
// company it was written for, subscribed to its type. After acme deletes
// its endpoint, the id may be given again (Params.ID): to another
// company's endpoint, which must not receive acme's message (nor be sent
// it signed with its secret), or to one of acme's subscribed to other
// types only. Either way the message is dropped, with the delete.
func TestEndpointIDReused(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e := newEnv(t, open(t), envOpts{})
		hooks := webhook.Endpoints{Service: e.svc}
		if _, err := e.svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "rival", Name: "Rival"}); err != nil {
			t.Fatal(err)
		}
		e.issue(t, "cert-1")
		for _, reuse := range []struct {
			name, company string
			events        []string
		}{
			{"another company's", "rival", consent.EventTypes},
			{"acme's, not subscribed", "acme", []string{consent.EventCertificateIssued}},
		} {
			first, again := newReceiver(t), newReceiver(t)
			if _, err := hooks.Add(ctx, webhook.Params{ID: "ep-1", CompanyID: "acme", URL: first.URL, Secret: secret,
				Events: []string{consent.EventConsentRevoked}}); err != nil {
				t.Fatal(err)
			}
			if err := e.svc.Store().Update(ctx, func(tx consent.Tx) error {
				return e.svc.EmitEvent(ctx, tx, "acme", consent.EventConsentRevoked, map[string]string{"certificate_id": "cert-1"})
			}); err != nil {
				t.Fatal(err)
			}
			if err := hooks.Delete(ctx, "acme", "ep-1"); err != nil {
				t.Fatal(err)
			}
			if _, err := hooks.Add(ctx, webhook.Params{ID: "ep-1", CompanyID: reuse.company, URL: again.URL, Secret: secret,
				Events: reuse.events}); err != nil {
				t.Fatal(err)
			}
			if n := e.drain(t); n != 0 {
				t.Errorf("%s: %d jobs ran, want none (the delete dropped the message)", reuse.name, n)
			}
			if got := len(first.requests()) + len(again.requests()); got != 0 {
				t.Errorf("%s: the message of the deleted endpoint was sent %d times, want none", reuse.name, got)
			}
			if err := hooks.Delete(ctx, reuse.company, "ep-1"); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestVerify checks Verify against requests signed by the test's own
// implementation of the specification.
func TestVerify(t *testing.T) {
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	now := time.Unix(1_800_000_000, 0)
	signed := func(id string, ts int64, body string) http.Header {
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(id + "." + jsonInt(ts) + "." + body))
		h := http.Header{}
		h.Set("webhook-id", id)
		h.Set("webhook-timestamp", jsonInt(ts))
		h.Set("webhook-signature", "v1,bm90IGl0 v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
		return h
	}
	body := `{"type":"consent.revoked","timestamp":"2027-01-15T08:00:00Z","data":{}}`
	if err := webhook.Verify(secret, signed("msg_1", now.Unix()-60, body), []byte(body), now); err != nil {
		t.Errorf("Verify: %v", err)
	}
	for name, c := range map[string]struct {
		h    http.Header
		body string
	}{
		"other body":      {signed("msg_1", now.Unix(), body), body + " "},
		"other id":        {func() http.Header { h := signed("msg_1", now.Unix(), body); h.Set("webhook-id", "msg_2"); return h }(), body},
		"too old":         {signed("msg_1", now.Unix()-301, body), body},
		"from the future": {signed("msg_1", now.Unix()+301, body), body},
		"no signature":    {func() http.Header { h := signed("msg_1", now.Unix(), body); h.Del("webhook-signature"); return h }(), body},
	} {
		if err := webhook.Verify(secret, c.h, []byte(c.body), now); !errors.Is(err, webhook.ErrSignature) {
			t.Errorf("%s: Verify = %v; want ErrSignature", name, err)
		}
	}
}

func TestMain(m *testing.M) {
	if os.Getenv(crashChildVar) != "" {
		os.Exit(crashChild())
	}
	os.Exit(m.Run())
}
