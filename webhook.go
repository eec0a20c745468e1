package consentkit

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/consentkit/consentkit/consent"
)

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
func (s *Service) EmitEvent(ctx context.Context, tx consent.Tx, companyID, eventType string, data any) error {
	if !slices.Contains(consent.EventTypes, eventType) {
		return consent.Errorf(consent.Invalid, "unknown webhook event type %q", eventType)
	}
	eps, err := tx.WebhookEndpoints(ctx, companyID)
	if err != nil {
		return err
	}
	jobs, err := s.eventJobs(eps, eventType, func() any { return data }, consent.NewID)
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
func (s *Service) eventJobs(eps []*consent.WebhookEndpoint, eventType string, data func() any, newID func(string) string) ([]*consent.Job, error) {
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
		return nil, consent.Errorf(consent.Invalid, "webhook event data must be a JSON object")
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
	msg := consent.WebhookMessage{ID: newID("msg"), Type: eventType, Body: string(body)}
	jobs := make([]*consent.Job, 0, n)
	for _, e := range eps {
		if e.Disabled() || !e.Subscribed(eventType) {
			continue
		}
		msg.EndpointID = e.ID
		payload, err := json.Marshal(msg)
		if err != nil {
			return nil, err
		}
		// One lane per endpoint, leases spread across companies (D53).
		jobs = append(jobs, &consent.Job{Kind: consent.JobWebhook, Key: msg.ID + ":" + e.ID, Payload: payload,
			RunAfter: now, CreatedAt: now, CompanyID: e.CompanyID, Lane: e.ID})
	}
	return jobs, nil
}
