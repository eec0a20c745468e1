package consent

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"
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

// CheckText checks e's text fields and its times.
func (e *WebhookEndpoint) CheckText() error {
	if err := checkKeyTexts("id", e.ID, "company_id", e.CompanyID); err != nil {
		return err
	}
	if err := checkTexts("url", e.URL, "secret", e.Secret); err != nil {
		return err
	}
	if err := checkTimes([]string{"created_at", "disabled_at"}, e.CreatedAt, e.DisabledAt); err != nil {
		return err
	}
	return checkList("events", e.Events)
}

// CheckText checks d's text fields, its time, and its Attempt and Status
// (CheckInt32).
func (d *WebhookDelivery) CheckText() error {
	if err := checkKeyTexts("endpoint_id", d.EndpointID); err != nil {
		return err
	}
	if err := checkTexts("message_id", d.MessageID, "event_type", d.EventType, "error", d.Error); err != nil {
		return err
	}
	if err := CheckTime("at", d.At); err != nil {
		return err
	}
	if err := CheckInt32("attempt", d.Attempt); err != nil {
		return err
	}
	return CheckInt32("status", d.Status)
}

// Webhook secrets (Standard Webhooks).
const (
	WebhookSecretPrefix   = "whsec_"
	minWebhookSecretBytes = 24
	maxWebhookSecretBytes = 64
)

// WebhookSecretKey returns the HMAC key of a secret: the bytes whose
// base64 follows "whsec_". Invalid unless the secret is "whsec_" and the
// standard base64 of 24 to 64 bytes.
func WebhookSecretKey(secret string) ([]byte, error) {
	enc, ok := strings.CutPrefix(secret, WebhookSecretPrefix)
	key, err := base64.StdEncoding.Strict().DecodeString(enc)
	if !ok || err != nil || len(key) < minWebhookSecretBytes || len(key) > maxWebhookSecretBytes {
		return nil, Errorf(Invalid, "secret must be %q and the base64 of %d to %d bytes",
			WebhookSecretPrefix, minWebhookSecretBytes, maxWebhookSecretBytes)
	}
	return key, nil
}

// NewWebhookSecret returns a new random secret: "whsec_" and the base64
// of 32 random bytes.
func NewWebhookSecret() string {
	var b [32]byte
	rand.Read(b[:])
	return WebhookSecretPrefix + base64.StdEncoding.EncodeToString(b[:])
}

// PrivateAddr reports whether a is an address a webhook must not reach
// unless private addresses are allowed: loopback, private (RFC 1918, RFC
// 4193), carrier-grade NAT, link-local, unspecified, multicast,
// broadcast, or "this network" (0.0.0.0/8). IPv4 in IPv6 is judged as
// IPv4.
func PrivateAddr(a netip.Addr) bool {
	a = a.Unmap()
	if a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() || !a.IsValid() {
		return true
	}
	for _, p := range privatePrefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

var privatePrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("255.255.255.255/32"),
	netip.MustParsePrefix("64:ff9b::/96"),  // NAT64: may translate to any IPv4 address
	netip.MustParsePrefix("2002::/16"),     // 6to4: likewise
	netip.MustParsePrefix("fec0::/10"),     // deprecated site-local
	netip.MustParsePrefix("::ffff:0:0/96"), // mapped, should Unmap miss one
}

// Limits of webhook endpoints.
const (
	MaxWebhookEndpoints = 20 // per company
	maxWebhookURL       = 2048
)

// WebhookParams describes a new webhook endpoint.
type WebhookParams struct {
	ID        string // optional: a random id when empty
	CompanyID string
	URL       string // http or https
	// Secret is "whsec_" and the base64 of 24 to 64 bytes; empty: a new
	// random one (returned in the endpoint).
	Secret string
	Events []string // at least one of EventTypes
}

// CheckWebhookURL checks a webhook endpoint's URL: absolute http or https,
// a host, no user name or password, at most 2048 bytes. Unless
// allowPrivate, a host that is an IP address must not be a PrivateAddr
// (names are checked when each delivery connects, since what they
// resolve to can change).
func CheckWebhookURL(raw string, allowPrivate bool) error {
	if len(raw) > maxWebhookURL {
		return Errorf(Invalid, "url must be at most %d bytes", maxWebhookURL)
	}
	if err := CheckText("url", raw); err != nil {
		return err
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return Errorf(Invalid, "url is not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return Errorf(Invalid, "url must be http or https")
	case u.Host == "" || u.Hostname() == "" || u.Opaque != "":
		return Errorf(Invalid, "url must have a host")
	case u.User != nil:
		return Errorf(Invalid, "url must not hold a user name or password")
	}
	if allowPrivate {
		return nil
	}
	host := u.Hostname()
	if a, err := netip.ParseAddr(host); err == nil && PrivateAddr(a) {
		return Errorf(Invalid, "url: %s is a loopback, private, link-local or otherwise non-public address", host)
	}
	// "1.2.3" and "0x7f.1" are names to url.Parse, but the resolver reads
	// them as IPv4 addresses.
	if ip := net.ParseIP(host); ip == nil && looksNumeric(host) {
		return Errorf(Invalid, "url: %s is not a host name or a dotted-decimal address", host)
	}
	return nil
}

// looksNumeric reports whether every label of host starts with a digit, as
// in the short and hexadecimal IPv4 forms.
func looksNumeric(host string) bool {
	for _, l := range strings.Split(strings.TrimSuffix(host, "."), ".") {
		if l == "" || l[0] < '0' || l[0] > '9' {
			return false
		}
	}
	return true
}

// AddWebhookEndpoint adds a webhook endpoint to a company (D44) and returns
// it, with its secret. Invalid when the URL, secret or events are not
// acceptable (see CheckWebhookURL; the IP address check is skipped when
// Config.WebhookAllowPrivate is on) or the company has
// MaxWebhookEndpoints already; NotFound when the company does not exist;
// Conflict when the id is taken.
func (s *Service) AddWebhookEndpoint(ctx context.Context, p WebhookParams) (*WebhookEndpoint, error) {
	return update(ctx, s, func(tx Tx) (*WebhookEndpoint, error) { return s.AddWebhookEndpointTx(ctx, tx, p) })
}

// AddWebhookEndpointTx is AddWebhookEndpoint inside tx.
func (s *Service) AddWebhookEndpointTx(ctx context.Context, tx Tx, p WebhookParams) (*WebhookEndpoint, error) {
	if p.ID == "" {
		p.ID = NewID("ep")
	}
	if err := CheckID("id", p.ID); err != nil {
		return nil, err
	}
	if err := CheckID("company_id", p.CompanyID); err != nil {
		return nil, err
	}
	if err := CheckWebhookURL(p.URL, s.cfg.WebhookAllowPrivate); err != nil {
		return nil, err
	}
	if p.Secret == "" {
		p.Secret = NewWebhookSecret()
	}
	if _, err := WebhookSecretKey(p.Secret); err != nil {
		return nil, err
	}
	if len(p.Events) == 0 {
		return nil, Errorf(Invalid, "events: at least one of %s", strings.Join(EventTypes, ", "))
	}
	events := make([]string, 0, len(p.Events))
	for _, e := range p.Events {
		if !slices.Contains(EventTypes, e) {
			return nil, Errorf(Invalid, "events: %q is not one of %s", e, strings.Join(EventTypes, ", "))
		}
		if !slices.Contains(events, e) {
			events = append(events, e)
		}
	}
	slices.Sort(events)
	have, err := tx.WebhookEndpoints(ctx, p.CompanyID)
	if err != nil {
		return nil, err
	}
	if len(have) >= MaxWebhookEndpoints {
		return nil, Errorf(Invalid, "a company may have at most %d webhook endpoints", MaxWebhookEndpoints)
	}
	e := &WebhookEndpoint{ID: p.ID, CompanyID: p.CompanyID, URL: p.URL, Secret: p.Secret, Events: events, CreatedAt: s.Now()}
	if err := tx.CreateWebhookEndpoint(ctx, e); err != nil {
		return nil, err
	}
	// The audit log names the endpoint, its URL and events, never its secret.
	err = s.Audit(ctx, tx, AuditParams{CompanyID: e.CompanyID, Action: AuditWebhookCreate, Target: e.ID,
		Detail: map[string]any{"url": e.URL, "events": e.Events}})
	if err != nil {
		return nil, err
	}
	return e, nil
}

// WebhookEndpoints returns the company's webhook endpoints, oldest first.
func (s *Service) WebhookEndpoints(ctx context.Context, companyID string) ([]*WebhookEndpoint, error) {
	var out []*WebhookEndpoint
	err := s.store.View(ctx, func(tx Tx) error {
		var err error
		out, err = tx.WebhookEndpoints(ctx, companyID)
		return err
	})
	return out, err
}

// DeleteWebhookEndpoint deletes the company's endpoint and its delivery
// log; messages not yet delivered to it are dropped. NotFound when the
// company has no such endpoint.
func (s *Service) DeleteWebhookEndpoint(ctx context.Context, companyID, id string) error {
	if !ValidID(id) {
		return Errorf(NotFound, "webhook endpoint not found")
	}
	p := AuditParams{CompanyID: companyID, Action: AuditWebhookDelete, Target: id}
	return s.UpdateAudited(ctx, &p, func(tx Tx) error { return tx.DeleteWebhookEndpoint(ctx, companyID, id) })
}

// SetWebhookEndpointDisabled disables the company's endpoint (nothing is
// sent to it, and messages not yet delivered are dropped) or enables it
// again. NotFound when the company has no such endpoint.
func (s *Service) SetWebhookEndpointDisabled(ctx context.Context, companyID, id string, disabled bool) error {
	var at time.Time
	action := AuditWebhookEnable
	if disabled {
		at, action = s.Now(), AuditWebhookDisable
	}
	if !ValidID(id) {
		return Errorf(NotFound, "webhook endpoint not found")
	}
	p := AuditParams{CompanyID: companyID, Action: action, Target: id}
	return s.UpdateAudited(ctx, &p, func(tx Tx) error { return tx.DisableWebhookEndpoint(ctx, companyID, id, at) })
}

// WebhookDeliveries returns up to limit entries (at most 1000) of the
// delivery log of the company's endpoint, newest first, with Seq below
// before (0: from the newest); pass the last entry's Seq to get the next
// page. NotFound when the company has no such endpoint.
func (s *Service) WebhookDeliveries(ctx context.Context, companyID, endpointID string, before int64, limit int) ([]*WebhookDelivery, error) {
	limit = min(max(limit, 0), 1000)
	var out []*WebhookDelivery
	err := s.store.View(ctx, func(tx Tx) error {
		e, err := tx.WebhookEndpoint(ctx, endpointID)
		if ErrorCode(err) == NotFound || err == nil && e.CompanyID != companyID {
			return Errorf(NotFound, "webhook endpoint not found")
		}
		if err != nil {
			return err
		}
		out, err = tx.WebhookDeliveries(ctx, endpointID, before, limit)
		return err
	})
	return out, err
}

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
