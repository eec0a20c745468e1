// Package webhook tells a company's own servers what happened to its
// consent (D44): it manages the company's webhook endpoints, delivers each
// event to them, and lets a receiver written in Go verify what it got.
//
//	ep, err := webhook.Endpoints{Service: svc}.Add(ctx, webhook.Params{CompanyID: "acme",
//		URL: "https://hooks.acme.example/consent", Events: []string{consent.EventConsentRevoked}})
//	h, err := webhook.Handler(webhook.Config{Service: svc}) // run it in a jobs.Runner
//	…
//	err = webhook.Verify(ep.Secret, r.Header, body, time.Now()) // in the receiver
//
// Deliveries follow the Standard Webhooks specification: each message is
// POSTed with the headers webhook-id
// (the message id, the same on every attempt), webhook-timestamp (Unix
// seconds of the attempt) and webhook-signature ("v1," and the base64 of
// the HMAC-SHA256, keyed with the base64-decoded part of the endpoint's
// "whsec_" secret, of "id.timestamp.body").
//
// Messages are written by consentkit.Service.EmitEvent inside the transaction
// of the change they report, as jobs of kind consent.JobWebhook: the job
// queue is the outbox, so a change that rolls back sends nothing and one
// that commits is delivered at least once, even if the process dies right
// after the commit. Handler returns the jobs.Handler that delivers them: a
// 2xx answer delivers; anything else (another status, a redirect, which is
// never followed, a timeout, a refused address) is retried with
// exponential backoff, the first retry within seconds, for three days.
// Every attempt is written to the endpoint's delivery log
// (consent.Tx.AppendWebhookDelivery) in the transaction that ends or
// reschedules the job.
//
// Receivers must therefore accept a message more than once: the
// webhook-id tells repeats apart.
//
// Deleting or disabling an endpoint drops the messages not yet delivered
// to it: Endpoints.Delete and SetDisabled delete its queued jobs
// (consent.Tx.DeleteLaneJobs) in the transaction of the change, so an
// endpoint enabled again, or added again with the same id (Params.ID), is
// sent none of them. A delivery already under way finds its job gone and
// sends nothing, unless it had read the endpoint before the change: then
// it may still reach the endpoint as it was, and its result is not
// recorded (a lost lease, for the jobs.Runner). A message is also dropped
// when, as it is about to be sent, its endpoint is gone, disabled, another
// company's or not subscribed to its type.
//
// Deliveries are fair (D53): an endpoint gets one at a time, across every
// instance, and a worker coming free takes the next message of the company
// with the fewest deliveries under way, so one company's silent endpoints
// delay another's messages by one attempt's timeout at most.
//
// Endpoints adds a company's endpoints, lists, disables and deletes them,
// and reads their delivery logs, each change audited.
//
// By default a delivery never connects to a loopback, private, link-local,
// unspecified, multicast, reserved or other special-purpose address
// (PrivateAddr: every block of the IANA special-purpose address
// registries): the check runs on the address actually dialled, after DNS
// resolution, so a name that resolves, or later re-resolves, to such an
// address is refused too. Config.AllowPrivate lets deliveries reach
// loopback and private unicast addresses (never link-local), for tests and
// private deployments, and nothing more (CheckAddr).
package webhook

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/jobs"
)

// Config configures a Handler. Service is required; zero values of the rest
// mean their defaults.
type Config struct {
	Service *consentkit.Service // required
	// AllowPrivate lets deliveries connect to loopback and private
	// unicast addresses (127.0.0.0/8, ::1, 10.0.0.0/8, 172.16.0.0/12,
	// 192.168.0.0/16, fc00::/7), never to link-local ones (cloud
	// metadata answers at 169.254.169.254) nor the other special-purpose
	// addresses (CheckAddr). Off by default: a webhook URL is chosen by a customer,
	// and must not reach the service's own network.
	AllowPrivate bool
	// Timeout bounds one attempt, connection and answer included:
	// default 15 s.
	Timeout time.Duration
	// DialTimeout bounds connecting to an endpoint, within Timeout:
	// default 3 s, so an address that drops connections costs a worker
	// little (D53).
	DialTimeout time.Duration
	// Concurrency is how many deliveries this handler runs at once:
	// default 4. An endpoint gets one delivery at a time, and a free worker
	// takes the next message of the company with the fewest deliveries
	// under way (D53). Fairness needs two or more: a single worker takes
	// the due messages in order, every company's, one attempt at a time.
	Concurrency int
	// Backoff is the wait before the first retry, doubled for each further
	// one up to MaxBackoff: defaults 5 s and 10 h.
	Backoff, MaxBackoff time.Duration
	// GiveUpAfter is how long a message is retried: default 3 days (72 h).
	GiveUpAfter time.Duration
	// UserAgent is sent with each delivery: default "consentkit-webhooks".
	UserAgent string
	Logger    *slog.Logger // default slog.Default()
}

// Defaults of Config.
const (
	DefaultTimeout     = 15 * time.Second
	DefaultDialTimeout = 3 * time.Second
	DefaultBackoff     = 5 * time.Second
	DefaultMaxBackoff  = 10 * time.Hour
	DefaultGiveUpAfter = 72 * time.Hour
)

// maxAttempts is high enough that GiveUpAfter, not a count, ends the
// retries of a message.
const maxAttempts = 1000

// ErrPrivateAddress is matched (errors.Is) by the error of a delivery that
// was refused because it would connect to a non-public address.
var ErrPrivateAddress = errors.New("webhook: the address is loopback, private, link-local or otherwise not public")

// Handler returns the jobs.Handler of consent.JobWebhook jobs. Run it in a
// jobs.Runner on the service's store, beside the other handlers.
func Handler(cfg Config) (jobs.Handler, error) {
	if cfg.Service == nil {
		return jobs.Handler{}, errors.New("webhook: Config needs a Service")
	}
	if cfg.Timeout < 0 || cfg.DialTimeout < 0 || cfg.Concurrency < 0 || cfg.Backoff < 0 || cfg.MaxBackoff < 0 || cfg.GiveUpAfter < 0 {
		return jobs.Handler{}, errors.New("webhook: Config values must not be negative (zero means the default)")
	}
	cfg.Timeout = cmp.Or(cfg.Timeout, DefaultTimeout)
	cfg.DialTimeout = cmp.Or(cfg.DialTimeout, DefaultDialTimeout)
	cfg.Concurrency = cmp.Or(cfg.Concurrency, 4)
	cfg.Backoff = cmp.Or(cfg.Backoff, DefaultBackoff)
	cfg.MaxBackoff = cmp.Or(cfg.MaxBackoff, DefaultMaxBackoff)
	cfg.GiveUpAfter = cmp.Or(cfg.GiveUpAfter, DefaultGiveUpAfter)
	cfg.UserAgent = cmp.Or(cfg.UserAgent, "consentkit-webhooks")
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	d := &deliverer{cfg: cfg, client: newClient(cfg.AllowPrivate, cfg.DialTimeout)}
	return jobs.Handler{
		Kind:        consent.JobWebhook,
		Do:          d.do,
		Failed:      d.failed,
		Concurrency: cfg.Concurrency,
		Timeout:     cfg.Timeout,
		Lease:       max(time.Minute, 3*cfg.Timeout),
		MaxAttempts: maxAttempts,
		GiveUpAfter: cfg.GiveUpAfter,
		Backoff:     cfg.Backoff,
		MaxBackoff:  cfg.MaxBackoff,
	}, nil
}

// newClient returns the HTTP client of deliveries: no proxy (a proxy would
// dial for us, past the address check), no redirects, and a dialer that
// gives up after dialTimeout and refuses, as it connects, the addresses
// CheckAddr refuses (with allowPrivate).
func newClient(allowPrivate bool, dialTimeout time.Duration) *http.Client {
	dialer := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second, Control: addressGuard(allowPrivate)}
	return &http.Client{
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           dialer.DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          100,
			MaxIdleConnsPerHost:   2,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   dialTimeout,
			ExpectContinueTimeout: time.Second,
			// The head of an answer is bounded as its body is
			// (maxResponseRead): the status is all a delivery reads.
			MaxResponseHeaderBytes: maxResponseRead,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// addressGuard returns a net.Dialer Control function: it runs for each
// address the dialer is about to connect to, after name resolution, so
// DNS rebinding cannot slip a refused address past it.
func addressGuard(allowPrivate bool) func(network, address string, _ syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("%w: %s", ErrPrivateAddress, address)
		}
		if CheckAddr(ap.Addr(), allowPrivate) != nil {
			return fmt.Errorf("%w: %s", ErrPrivateAddress, ap.Addr())
		}
		return nil
	}
}

// deliverer does webhook jobs.
type deliverer struct {
	cfg    Config
	client *http.Client
}

// attemptError is a failed delivery attempt, with the log entry that Failed
// writes in the transaction that records it.
type attemptError struct {
	entry consent.WebhookDelivery
	err   error
}

func (e *attemptError) Error() string { return e.err.Error() }
func (e *attemptError) Unwrap() error { return e.err }

// permanentError fails a job at once: trying again cannot help.
type permanentError struct{ error }

func (permanentError) Permanent() bool { return true }

func (d *deliverer) do(ctx context.Context, j *consent.Job) (jobs.Result, error) {
	var m consent.WebhookMessage
	if err := json.Unmarshal(j.Payload, &m); err != nil {
		return jobs.Result{}, permanentError{fmt.Errorf("webhook job payload: %w", err)}
	}
	svc := d.cfg.Service
	var (
		ep      *consent.WebhookEndpoint
		dropped bool // the job deleted since it was leased
	)
	err := svc.Store().View(ctx, func(tx consent.Tx) error {
		var err error
		if ep, err = tx.WebhookEndpoint(ctx, m.EndpointID); err != nil {
			return err
		}
		// Read after the endpoint: an endpoint deleted and added again,
		// or disabled and enabled again, after this job was leased is
		// read only once the job is gone (dropMessages), so its messages
		// never reach the new endpoint.
		_, err = tx.Job(ctx, j.Kind, j.Key)
		dropped = consent.ErrorCode(err) == consent.NotFound
		if dropped {
			return nil
		}
		return err
	})
	log := d.cfg.Logger.With("message", m.ID, "type", m.Type, "endpoint", m.EndpointID, "attempt", j.Attempts)
	switch {
	case consent.ErrorCode(err) == consent.NotFound:
		log.Info("webhook endpoint deleted; message dropped")
		return jobs.Result{}, nil
	case err != nil:
		return jobs.Result{}, err
	case dropped:
		log.Info("webhook endpoint deleted or disabled since the delivery began; message dropped")
		return jobs.Result{}, nil
	case ep.Disabled():
		log.Info("webhook endpoint disabled; message dropped")
		return jobs.Result{}, nil
	case ep.CompanyID != j.CompanyID:
		// The message's endpoint was deleted and its id given to an
		// endpoint of another company (Params.ID): the message and its
		// data are not that company's.
		log.Warn("webhook endpoint of another company; message dropped", "company", j.CompanyID)
		return jobs.Result{}, nil
	case !ep.Subscribed(m.Type):
		log.Info("webhook endpoint not subscribed to the message's type; message dropped")
		return jobs.Result{}, nil
	}
	entry := consent.WebhookDelivery{EndpointID: ep.ID, MessageID: m.ID, EventType: m.Type, Attempt: j.Attempts, At: svc.Now()}
	start := time.Now()
	entry.Status, err = d.post(ctx, ep, &m, entry.At)
	entry.Duration = time.Since(start).Truncate(time.Microsecond)
	if err != nil {
		entry.Error = jobs.ErrorText(err)
		return jobs.Result{}, &attemptError{entry, err}
	}
	log.Info("webhook delivered", "status", entry.Status, "duration", entry.Duration)
	return jobs.Result{Commit: func(ctx context.Context, tx consent.Tx) error { return appendLog(ctx, tx, &entry) }}, nil
}

// failed writes the log entry of a failed attempt in the transaction that
// records the failure.
func (d *deliverer) failed(ctx context.Context, tx consent.Tx, j *consent.Job, cause error, final bool) error {
	var entry consent.WebhookDelivery
	if ae := (*attemptError)(nil); errors.As(cause, &ae) {
		entry = ae.entry
	} else { // Do panicked, or failed before it sent anything
		var m consent.WebhookMessage
		if json.Unmarshal(j.Payload, &m) != nil {
			return nil
		}
		entry = consent.WebhookDelivery{EndpointID: m.EndpointID, MessageID: m.ID, EventType: m.Type, Attempt: j.Attempts,
			At: d.cfg.Service.Now(), Error: jobs.ErrorText(cause)}
	}
	if final {
		d.cfg.Logger.Error("webhook not delivered; given up", "message", entry.MessageID, "endpoint", entry.EndpointID,
			"attempts", j.Attempts, "err", entry.Error)
	}
	return appendLog(ctx, tx, &entry)
}

// appendLog writes e to its endpoint's log; an endpoint deleted meanwhile
// has no log to write to. It is looked up first: a failed write would end
// the transaction (consent.Tx), and with it the job's.
func appendLog(ctx context.Context, tx consent.Tx, e *consent.WebhookDelivery) error {
	if _, err := tx.WebhookEndpoint(ctx, e.EndpointID); consent.ErrorCode(err) == consent.NotFound {
		return nil
	} else if err != nil {
		return err
	}
	return tx.AppendWebhookDelivery(ctx, e)
}

// maxResponseRead bounds what is read of a receiver's answer, so that the
// connection can be reused without a receiver making us read forever.
const maxResponseRead = 64 << 10

// post sends m to ep and returns the answer's status: nil error only for a
// 2xx.
func (d *deliverer) post(ctx context.Context, ep *consent.WebhookEndpoint, m *consent.WebhookMessage, at time.Time) (int, error) {
	// A URL refused even with private addresses allowed (malformed, or an
	// IP address no configuration lets through) can never be delivered
	// to; other addresses are the dialer's to judge.
	if err := CheckURL(ep.URL, true); err != nil {
		return 0, permanentError{err}
	}
	key, err := SecretKey(ep.Secret)
	if err != nil {
		return 0, permanentError{err}
	}
	ts := strconv.FormatInt(at.Unix(), 10)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL, strings.NewReader(m.Body))
	if err != nil {
		return 0, permanentError{err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", d.cfg.UserAgent)
	req.Header.Set("webhook-id", m.ID)
	req.Header.Set("webhook-timestamp", ts)
	req.Header.Set("webhook-signature", sign(key, m.ID, ts, []byte(m.Body)))
	resp, err := d.client.Do(req)
	if err != nil {
		return 0, err
	}
	// The status alone says whether the message was delivered; the body
	// is read, up to a bound, only so that the connection serves the next.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseRead))
	_ = resp.Body.Close()
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode <= 299:
		return resp.StatusCode, nil
	case resp.StatusCode >= 300 && resp.StatusCode <= 399:
		return resp.StatusCode, fmt.Errorf("HTTP %d: redirects are not followed", resp.StatusCode)
	}
	return resp.StatusCode, fmt.Errorf("HTTP %d", resp.StatusCode)
}

// sign returns the webhook-signature header's value.
func sign(key []byte, id, ts string, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// Tolerance is how far a webhook-timestamp may be from now for Verify.
const Tolerance = 5 * time.Minute

// ErrSignature is matched (errors.Is) by every error of Verify.
var ErrSignature = errors.New("webhook: signature verification failed")

// Verify checks a received webhook, for a receiver written in Go: the
// webhook-timestamp must be within Tolerance of now, and one of the
// space-separated signatures of webhook-signature must be the v1 signature
// of webhook-id, webhook-timestamp and body under secret. It compares in
// constant time.
func Verify(secret string, h http.Header, body []byte, now time.Time) error {
	key, err := SecretKey(secret)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrSignature, err)
	}
	id, ts := h.Get("webhook-id"), h.Get("webhook-timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if id == "" || err != nil {
		return fmt.Errorf("%w: webhook-id or webhook-timestamp missing or malformed", ErrSignature)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > Tolerance || d < -Tolerance {
		return fmt.Errorf("%w: webhook-timestamp is %s away from now", ErrSignature, d.Round(time.Second))
	}
	want := []byte(sign(key, id, ts, body))
	for _, s := range strings.Fields(h.Get("webhook-signature")) {
		if hmac.Equal([]byte(s), want) {
			return nil
		}
	}
	return fmt.Errorf("%w: no matching v1 signature", ErrSignature)
}
