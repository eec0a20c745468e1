package consent

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
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

// PrivateAddr reports whether a is an address a webhook must not reach by
// default (D44): one in a block of the IANA IPv4 or IPv6 Special-Purpose
// Address Registries (loopback, private, carrier-grade NAT, link-local,
// documentation, benchmarking, reserved, NAT64, 6to4, Teredo, …), the
// deprecated IPv4-compatible (::a.b.c.d), IPv4-translated
// (::ffff:0:a.b.c.d) or site-local ones, multicast, broadcast, IPv6
// outside 2000::/3, or no valid address at all. An IPv4-mapped address
// (::ffff:a.b.c.d) is judged as its IPv4 address; a zone is ignored.
func PrivateAddr(a netip.Addr) bool {
	_, in := webhookAddrBlock(a)
	return in || !a.IsValid()
}

// CheckWebhookAddr reports whether a webhook may connect to a: nil for an
// address that is not a PrivateAddr and, when allowPrivate, for a
// loopback, private (RFC 1918, RFC 4193) or link-local unicast one
// (127.0.0.0/8, ::1, 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16,
// fc00::/7, 169.254.0.0/16, fe80::/10); Invalid, naming the block, for
// any other: allowPrivate never lets through 0.0.0.0/8, 240.0.0.0/4,
// multicast, documentation, NAT64 or 6to4 addresses, nor IPv4 written in
// the deprecated IPv6 forms. Both CheckWebhookURL and the delivery's
// dialer (package webhook) decide by it.
func CheckWebhookAddr(a netip.Addr, allowPrivate bool) error {
	b, in := webhookAddrBlock(a)
	switch {
	case !a.IsValid():
		return Errorf(Invalid, "not an IP address")
	case !in || allowPrivate && b.private:
		return nil
	}
	return Errorf(Invalid, "%s is a loopback, private, link-local or otherwise non-public address (%s: %s)", a, b.prefix, b.name)
}

// webhookAddrBlock returns the most specific block of webhookAddrBlocks
// that holds a, unmapped and without its zone (netip.Prefix.Contains
// never matches a zoned address).
func webhookAddrBlock(a netip.Addr) (addrBlock, bool) {
	a = a.Unmap().WithZone("")
	var found addrBlock
	for _, b := range webhookAddrBlocks {
		if b.prefix.Contains(a) && (found.name == "" || b.prefix.Bits() > found.prefix.Bits()) {
			found = b
		}
	}
	return found, found.name != ""
}

// addrBlock is a block of addresses refused to webhooks.
type addrBlock struct {
	prefix netip.Prefix
	name   string
	// private: allowed when private addresses are (loopback, RFC 1918,
	// RFC 4193 and link-local unicast).
	private bool
}

// webhookAddrBlocks is every block of addresses a webhook may not reach
// by default (D44), the one table of the guard. It holds every entry of
// the IANA IPv4 and IPv6 Special-Purpose Address Registries
// (https://www.iana.org/assignments/iana-ipv4-special-registry and
// https://www.iana.org/assignments/iana-ipv6-special-registry, RFC 6890),
// as updated to 2025, and besides them multicast, the deprecated IPv6
// forms that carry an IPv4 address (IPv4-compatible, IPv4-translated),
// deprecated site-local, and IPv6 outside 2000::/3, the only space IANA
// allocates for global unicast. Entries the registries mark "globally
// reachable" (anycast for PCP, TURN, DNS-SD, AS112 and AMT; the NAT64
// well-known prefix; ORCHIDv2 and DETs) are refused as well: they are
// infrastructure or translate to other addresses, and no webhook
// receiver lives there. The registries' ::ffff:0:0/96 (IPv4-mapped) is
// not listed: a mapped address is judged as the IPv4 address it maps,
// so ::ffff:93.184.215.14 is public and ::ffff:10.0.0.1 private. The most
// specific block that holds an address decides, so ::1 is loopback
// rather than IPv4-compatible.
var webhookAddrBlocks = []addrBlock{
	{mustPrefix("0.0.0.0/8"), "this network", false},
	{mustPrefix("0.0.0.0/32"), "this host", false},
	{mustPrefix("10.0.0.0/8"), "private", true},
	{mustPrefix("100.64.0.0/10"), "shared address space (carrier-grade NAT)", false},
	{mustPrefix("127.0.0.0/8"), "loopback", true},
	{mustPrefix("169.254.0.0/16"), "link-local", true},
	{mustPrefix("172.16.0.0/12"), "private", true},
	{mustPrefix("192.0.0.0/24"), "IETF protocol assignments", false},
	{mustPrefix("192.0.0.0/29"), "IPv4 service continuity (DS-Lite)", false},
	{mustPrefix("192.0.0.8/32"), "IPv4 dummy address", false},
	{mustPrefix("192.0.0.9/32"), "PCP anycast", false},
	{mustPrefix("192.0.0.10/32"), "TURN anycast", false},
	{mustPrefix("192.0.0.170/32"), "NAT64/DNS64 discovery", false},
	{mustPrefix("192.0.0.171/32"), "NAT64/DNS64 discovery", false},
	{mustPrefix("192.0.2.0/24"), "documentation (TEST-NET-1)", false},
	{mustPrefix("192.31.196.0/24"), "AS112", false},
	{mustPrefix("192.52.193.0/24"), "AMT", false},
	{mustPrefix("192.88.99.0/24"), "6to4 relay anycast (deprecated)", false},
	{mustPrefix("192.88.99.2/32"), "6a44 relay anycast", false},
	{mustPrefix("192.168.0.0/16"), "private", true},
	{mustPrefix("192.175.48.0/24"), "AS112 direct delegation", false},
	{mustPrefix("198.18.0.0/15"), "benchmarking", false},
	{mustPrefix("198.51.100.0/24"), "documentation (TEST-NET-2)", false},
	{mustPrefix("203.0.113.0/24"), "documentation (TEST-NET-3)", false},
	{mustPrefix("224.0.0.0/4"), "multicast", false},
	{mustPrefix("240.0.0.0/4"), "reserved", false},
	{mustPrefix("255.255.255.255/32"), "limited broadcast", false},

	{mustPrefix("::/128"), "unspecified", false},
	{mustPrefix("::1/128"), "loopback", true},
	{mustPrefix("::/96"), "IPv4-compatible (deprecated)", false},
	{mustPrefix("::ffff:0:0:0/96"), "IPv4-translated", false},
	{mustPrefix("64:ff9b::/96"), "NAT64", false}, // may translate to any IPv4 address
	{mustPrefix("64:ff9b:1::/48"), "local-use NAT64", false},
	{mustPrefix("100::/64"), "discard-only", false},
	{mustPrefix("100:0:0:1::/64"), "dummy prefix", false},
	{mustPrefix("2001::/23"), "IETF protocol assignments", false},
	{mustPrefix("2001::/32"), "Teredo", false}, // carries an IPv4 address
	{mustPrefix("2001:1::1/128"), "PCP anycast", false},
	{mustPrefix("2001:1::2/128"), "TURN anycast", false},
	{mustPrefix("2001:1::3/128"), "DNS-SD SRP anycast", false},
	{mustPrefix("2001:2::/48"), "benchmarking", false},
	{mustPrefix("2001:3::/32"), "AMT", false},
	{mustPrefix("2001:4:112::/48"), "AS112", false},
	{mustPrefix("2001:10::/28"), "ORCHID (deprecated)", false},
	{mustPrefix("2001:20::/28"), "ORCHIDv2", false},
	{mustPrefix("2001:30::/28"), "drone remote ID (DET)", false},
	{mustPrefix("2001:db8::/32"), "documentation", false},
	{mustPrefix("2002::/16"), "6to4", false}, // carries an IPv4 address
	{mustPrefix("2620:4f:8000::/48"), "AS112 direct delegation", false},
	{mustPrefix("3fff::/20"), "documentation", false},
	{mustPrefix("5f00::/16"), "SRv6 SIDs", false},
	{mustPrefix("fc00::/7"), "unique local (private)", true},
	{mustPrefix("fe80::/10"), "link-local", true},
	{mustPrefix("fec0::/10"), "site-local (deprecated)", false},
	{mustPrefix("ff00::/8"), "multicast", false},
	{mustPrefix("::/3"), "not global unicast (outside 2000::/3)", false},
	{mustPrefix("4000::/2"), "not global unicast (outside 2000::/3)", false},
	{mustPrefix("8000::/1"), "not global unicast (outside 2000::/3)", false},
}

func mustPrefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }

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
// a host, no user name or password, at most 2048 bytes. A host that is an
// IP address must pass CheckWebhookAddr (with allowPrivate), and one that
// is neither a name nor an address in a form net/netip reads — "1.2.3",
// "0x7f.1", "2130706433", which resolvers read as IPv4 — is refused.
// Names are checked when each delivery connects, since what they resolve
// to can change.
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
	host := u.Hostname()
	if a, err := netip.ParseAddr(host); err == nil {
		if err := CheckWebhookAddr(a, allowPrivate); err != nil {
			return Errorf(Invalid, "url: %v", err)
		}
		return nil
	}
	if strings.Contains(host, ":") || looksNumeric(host) {
		return Errorf(Invalid, "url: %s is not a host name or an IP address in standard form", host)
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
// acceptable (see CheckWebhookURL, whose allowPrivate is
// Config.WebhookAllowPrivate) or the company has
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
