package webhook

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"slices"
	"strings"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
)

// Webhook secrets (Standard Webhooks).
const (
	SecretPrefix   = "whsec_"
	minSecretBytes = 24
	maxSecretBytes = 64
)

// SecretKey returns the HMAC key of a secret: the bytes whose base64
// follows "whsec_". Invalid unless the secret is "whsec_" and the standard
// base64 of 24 to 64 bytes.
func SecretKey(secret string) ([]byte, error) {
	enc, ok := strings.CutPrefix(secret, SecretPrefix)
	key, err := base64.StdEncoding.Strict().DecodeString(enc)
	if !ok || err != nil || len(key) < minSecretBytes || len(key) > maxSecretBytes {
		return nil, consent.Errorf(consent.Invalid, "secret must be %q and the base64 of %d to %d bytes",
			SecretPrefix, minSecretBytes, maxSecretBytes)
	}
	return key, nil
}

// NewSecret returns a new random secret: "whsec_" and the base64 of 32
// random bytes.
func NewSecret() string {
	var b [32]byte
	rand.Read(b[:])
	return SecretPrefix + base64.StdEncoding.EncodeToString(b[:])
}

// MaxEndpoints is how many webhook endpoints a company may have.
const MaxEndpoints = 20

// Params describes a new webhook endpoint.
type Params struct {
	ID        string // optional: a random id when empty
	CompanyID string // required
	URL       string // required: http or https (CheckURL)
	// Secret is "whsec_" and the base64 of 24 to 64 bytes; empty: a new
	// random one (returned in the endpoint).
	Secret string
	Events []string // required: at least one of consent.EventTypes
}

// Endpoints manages the webhook endpoints of the Service's companies and
// reads their delivery logs (D44). Each change is audited, as the
// Service's own changes are.
type Endpoints struct {
	Service *consentkit.Service
}

// Add adds a webhook endpoint to a company (D44) and returns it, with its
// secret. Invalid when the URL, secret or events are not acceptable (see
// CheckURL, whose allowPrivate is consentkit.Config.WebhookAllowPrivate) or
// the company has MaxEndpoints already; NotFound when the company does not
// exist; Conflict when the id is taken.
func (e Endpoints) Add(ctx context.Context, p Params) (*consent.WebhookEndpoint, error) {
	var out *consent.WebhookEndpoint
	err := e.Service.Store().Update(ctx, func(tx consent.Tx) error {
		var err error
		out, err = e.AddTx(ctx, tx, p)
		return err
	})
	return out, err
}

// AddTx is Add inside tx.
func (e Endpoints) AddTx(ctx context.Context, tx consent.Tx, p Params) (*consent.WebhookEndpoint, error) {
	s := e.Service
	if p.ID == "" {
		p.ID = consent.NewID("ep")
	}
	if err := consentkit.CheckNewID("id", p.ID); err != nil {
		return nil, err
	}
	if err := consent.CheckID("company_id", p.CompanyID); err != nil {
		return nil, err
	}
	if err := CheckURL(p.URL, s.WebhookAllowPrivate()); err != nil {
		return nil, err
	}
	if p.Secret == "" {
		p.Secret = NewSecret()
	}
	if _, err := SecretKey(p.Secret); err != nil {
		return nil, err
	}
	if len(p.Events) == 0 {
		return nil, consent.Errorf(consent.Invalid, "events: at least one of %s", strings.Join(consent.EventTypes, ", "))
	}
	events := make([]string, 0, len(p.Events))
	for _, ev := range p.Events {
		if !slices.Contains(consent.EventTypes, ev) {
			return nil, consent.Errorf(consent.Invalid, "events: %q is not one of %s", ev, strings.Join(consent.EventTypes, ", "))
		}
		if !slices.Contains(events, ev) {
			events = append(events, ev)
		}
	}
	slices.Sort(events)
	// Concurrent adds count the company's endpoints in turn.
	if err := tx.LockCompany(ctx, p.CompanyID); err != nil {
		return nil, err
	}
	have, err := tx.WebhookEndpoints(ctx, p.CompanyID)
	if err != nil {
		return nil, err
	}
	if len(have) >= MaxEndpoints {
		return nil, consent.Errorf(consent.Invalid, "a company may have at most %d webhook endpoints", MaxEndpoints)
	}
	ep := &consent.WebhookEndpoint{ID: p.ID, CompanyID: p.CompanyID, URL: p.URL, Secret: p.Secret, Events: events, CreatedAt: s.Now()}
	if err := tx.CreateWebhookEndpoint(ctx, ep); err != nil {
		return nil, err
	}
	// The audit log names the endpoint, its URL and events, never its secret.
	err = s.Audit(ctx, tx, consentkit.AuditParams{CompanyID: ep.CompanyID, Action: consent.AuditWebhookCreate, Target: ep.ID,
		Detail: map[string]any{"url": ep.URL, "events": ep.Events}})
	if err != nil {
		return nil, err
	}
	return ep, nil
}

// List returns the company's webhook endpoints, oldest first.
func (e Endpoints) List(ctx context.Context, companyID string) ([]*consent.WebhookEndpoint, error) {
	var out []*consent.WebhookEndpoint
	err := e.Service.Store().View(ctx, func(tx consent.Tx) error {
		var err error
		out, err = tx.WebhookEndpoints(ctx, companyID)
		return err
	})
	return out, err
}

// Delete deletes the company's endpoint and its delivery log; messages not
// yet delivered to it are dropped, in the same transaction, so that an
// endpoint added later with the same id (Params.ID) is sent none of them.
// NotFound when the company has no such endpoint.
func (e Endpoints) Delete(ctx context.Context, companyID, id string) error {
	if !consent.ValidID(id) {
		return consent.Errorf(consent.NotFound, "webhook endpoint not found")
	}
	p := consentkit.AuditParams{CompanyID: companyID, Action: consent.AuditWebhookDelete, Target: id}
	return e.Service.UpdateAudited(ctx, &p, func(tx consent.Tx) error {
		if err := tx.DeleteWebhookEndpoint(ctx, companyID, id); err != nil {
			return err
		}
		return dropMessages(ctx, tx, companyID, id)
	})
}

// SetDisabled disables the company's endpoint (nothing is sent to it, and
// messages not yet delivered are dropped, in the same transaction: enabled
// again, it is sent only the events that happen from then on) or enables
// it again. NotFound when the company has no such endpoint.
func (e Endpoints) SetDisabled(ctx context.Context, companyID, id string, disabled bool) error {
	var at time.Time
	action := consent.AuditWebhookEnable
	if disabled {
		at, action = e.Service.Now(), consent.AuditWebhookDisable
	}
	if !consent.ValidID(id) {
		return consent.Errorf(consent.NotFound, "webhook endpoint not found")
	}
	p := consentkit.AuditParams{CompanyID: companyID, Action: action, Target: id}
	return e.Service.UpdateAudited(ctx, &p, func(tx consent.Tx) error {
		if err := tx.DisableWebhookEndpoint(ctx, companyID, id, at); err != nil || !disabled {
			return err
		}
		return dropMessages(ctx, tx, companyID, id)
	})
}

// dropMessages deletes, in tx, the messages not yet delivered to the
// company's endpoint id: its queued jobs, which Service.EmitEvent writes as
// consent.JobWebhook jobs of the endpoint's company in the lane of its id.
// A delivery under way meanwhile finds its job gone and sends nothing if it
// has not read the endpoint yet (deliverer.do); one already sending ends as
// a lost lease, nothing recorded.
func dropMessages(ctx context.Context, tx consent.Tx, companyID, id string) error {
	_, err := tx.DeleteLaneJobs(ctx, consent.JobWebhook, companyID, id)
	return err
}

// Deliveries returns up to limit entries (at most 1000) of the delivery
// log of the company's endpoint, newest first, with Seq below before (0:
// from the newest); pass the last entry's Seq to get the next page.
// NotFound when the company has no such endpoint.
func (e Endpoints) Deliveries(ctx context.Context, companyID, endpointID string, before int64, limit int) ([]*consent.WebhookDelivery, error) {
	limit = min(max(limit, 0), 1000)
	var out []*consent.WebhookDelivery
	err := e.Service.Store().View(ctx, func(tx consent.Tx) error {
		ep, err := tx.WebhookEndpoint(ctx, endpointID)
		if consent.ErrorCode(err) == consent.NotFound || err == nil && ep.CompanyID != companyID {
			return consent.Errorf(consent.NotFound, "webhook endpoint not found")
		}
		if err != nil {
			return err
		}
		out, err = tx.WebhookDeliveries(ctx, endpointID, before, limit)
		return err
	})
	return out, err
}
