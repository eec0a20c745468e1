package consent

import (
	"context"
	"encoding/json"
	"slices"
	"time"
)

// Webhook event types (D44). Each is emitted in the transaction of the
// change it reports, so it is delivered if and only if that change
// committed.
const (
	// EventConsentRevoked: an opt-out matched certificates (D18). Its data
	// holds the revocation id and the certificate ids, never the email or
	// mobile that the consumer gave.
	EventConsentRevoked = "consent.revoked"
	// EventCertificateIssued: a certificate was issued (D35).
	EventCertificateIssued = "certificate.issued"
	// EventSessionRetained: a session was retained (D22–D25).
	EventSessionRetained = "session.retained"
	// EventVideoConverted: a retained recording was converted to MP4.
	EventVideoConverted = "video.converted"
	// EventVideoFailed: a conversion failed for good.
	EventVideoFailed = "video.failed"
	// EventWalletLowBalance: a charge took the wallet below
	// Config.LowBalanceThreshold.
	EventWalletLowBalance = "wallet.low_balance"
)

// EventTypes lists every webhook event type.
var EventTypes = []string{
	EventConsentRevoked, EventCertificateIssued, EventSessionRetained,
	EventVideoConverted, EventVideoFailed, EventWalletLowBalance,
}

// JobWebhook is the kind of the job that delivers one webhook message to
// one endpoint (D44); its key is the message id and the endpoint id joined
// by a colon, and its payload a WebhookMessage.
const JobWebhook = "webhook"

// WebhookEndpoint is a URL of a company that receives webhooks (D44),
// signed with its secret as Standard Webhooks says.
type WebhookEndpoint struct {
	ID        string
	CompanyID string
	URL       string // http or https
	// Secret is "whsec_" and the base64 of 24 to 64 random bytes. It is
	// stored as it is, since every delivery is signed with it.
	Secret string
	// Events are the event types the endpoint receives, sorted.
	Events     []string
	CreatedAt  time.Time
	DisabledAt time.Time // zero: enabled
}

// Disabled reports whether the endpoint receives nothing.
func (e *WebhookEndpoint) Disabled() bool { return !e.DisabledAt.IsZero() }

// Subscribed reports whether the endpoint receives events of the type.
func (e *WebhookEndpoint) Subscribed(eventType string) bool {
	return slices.Contains(e.Events, eventType)
}

// WebhookDelivery is one attempt to deliver a message to an endpoint: an
// entry of the endpoint's delivery log.
type WebhookDelivery struct {
	// Seq orders an endpoint's log; the store assigns it, rising with
	// each entry (AppendWebhookDelivery ignores the value given).
	Seq        int64
	EndpointID string
	MessageID  string // the webhook-id header
	EventType  string
	Attempt    int       // 1 for the first
	At         time.Time // when the attempt started
	// Status is the HTTP status of the response; 0 when there was none
	// (refused address, connection error, timeout).
	Status int
	// Error says why the attempt failed; "" when delivered (a 2xx).
	Error    string
	Duration time.Duration // to the microsecond
}

// Delivered reports whether the attempt delivered the message.
func (d *WebhookDelivery) Delivered() bool { return d.Status >= 200 && d.Status <= 299 }

// WebhookMessage is the payload of a JobWebhook job: one message for one
// endpoint. Body is sent byte for byte and signed.
type WebhookMessage struct {
	EndpointID string `json:"endpoint_id"`
	ID         string `json:"id"` // msg_…, the webhook-id header
	Type       string `json:"type"`
	Body       string `json:"body"` // {"type":…,"timestamp":…,"data":{…}}
}

// WebhookAllowPrivate reports Config.WebhookAllowPrivate: whether a
// webhook endpoint may be added with a URL whose host is a loopback,
// private or link-local IP address (package webhook checks it).
func (s *Service) WebhookAllowPrivate() bool { return s.cfg.WebhookAllowPrivate }

// EmitEvent writes a webhook message of the event type (one of EventTypes)
// inside tx: one JobWebhook job per enabled endpoint of the company
// subscribed to the type, all holding the same message — id "msg_…" and
// body {"type":…,"timestamp":…,"data":data}. The job queue is the outbox:
// the message is delivered if and only if tx commits (D44). A company
// without such endpoints costs one read. data must marshal to a JSON
// object and must never hold an email address or mobile number.
func (s *Service) EmitEvent(ctx context.Context, tx Tx, companyID, eventType string, data any) error {
	if !slices.Contains(EventTypes, eventType) {
		return Errorf(Invalid, "unknown webhook event type %q", eventType)
	}
	eps, err := tx.WebhookEndpoints(ctx, companyID)
	if err != nil {
		return err
	}
	jobs, err := s.eventJobs(eps, eventType, func() any { return data }, NewID)
	if err != nil {
		return err
	}
	for _, j := range jobs {
		if err := tx.EnqueueJob(ctx, j); err != nil {
			return err
		}
	}
	return nil
}

// eventJobs returns the jobs that carry a message of the event, its id
// made by newID("msg") and its data by data(), to each of eps that is
// enabled and subscribed to its type (none: no jobs, and neither the clock,
// newID nor data is called).
func (s *Service) eventJobs(eps []*WebhookEndpoint, eventType string, data func() any, newID func(string) string) ([]*Job, error) {
	n := 0
	for _, e := range eps {
		if !e.Disabled() && e.Subscribed(eventType) {
			n++
		}
	}
	if n == 0 {
		return nil, nil
	}
	raw, err := json.Marshal(data())
	if err != nil {
		return nil, err
	}
	if len(raw) == 0 || raw[0] != '{' {
		return nil, Errorf(Invalid, "webhook event data must be a JSON object")
	}
	now := s.Now()
	body, err := json.Marshal(struct {
		Type      string          `json:"type"`
		Timestamp string          `json:"timestamp"`
		Data      json.RawMessage `json:"data"`
	}{eventType, now.Format(time.RFC3339Nano), raw})
	if err != nil {
		return nil, err
	}
	msg := WebhookMessage{ID: newID("msg"), Type: eventType, Body: string(body)}
	jobs := make([]*Job, 0, n)
	for _, e := range eps {
		if e.Disabled() || !e.Subscribed(eventType) {
			continue
		}
		msg.EndpointID = e.ID
		payload, err := json.Marshal(msg)
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, &Job{Kind: JobWebhook, Key: msg.ID + ":" + e.ID, Payload: payload, RunAfter: now, CreatedAt: now})
	}
	return jobs, nil
}
