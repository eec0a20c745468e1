package consent

import (
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
