package httpadapter

import (
	"context"
	"net/http"
	"time"

	"github.com/consentkit/consentkit/consent"
)

// operatorRoutes are the operator API's routes (Handler.Operator): a
// company's webhook endpoints and their delivery logs (D44), and its audit
// log (D42). Every change is audited with the actor "operator".
func (h *Handler) operatorRoutes() []*route {
	const post, get, del = http.MethodPost, http.MethodGet, http.MethodDelete
	const base = "/operator/companies/{company_id}"
	op := func(method, pattern string, status int) Route {
		return Route{Method: method, Pattern: base + pattern, Group: OperatorGroup, Auth: AuthOperator, Status: status}
	}
	return []*route{
		handle(op(post, "/webhooks", http.StatusCreated), h.addWebhook),
		handle(op(get, "/webhooks", 0), h.listWebhooks),
		handle(op(del, "/webhooks/{endpoint_id}", 0), h.deleteWebhook),
		handle(op(post, "/webhooks/{endpoint_id}/disable", 0), h.disableWebhook),
		handle(op(post, "/webhooks/{endpoint_id}/enable", 0), h.enableWebhook),
		handle(op(get, "/webhooks/{endpoint_id}/deliveries", 0), h.webhookDeliveries),
		handle(op(get, "/audit", 0), h.auditLog),
	}
}

type webhookRequest struct {
	CompanyID string   `path:"company_id" json:"-"`
	URL       string   `json:"url"`
	Events    []string `json:"events"`
	// Secret is optional: a new one is made, and shown once, in the answer.
	Secret string `json:"secret"`
}

type webhookBody struct {
	ID     string   `json:"id"`
	URL    string   `json:"url"`
	Events []string `json:"events"`
	// Secret is shown when the endpoint is added, never again.
	Secret     string   `json:"secret,omitempty"`
	CreatedAt  *rfc3339 `json:"created_at"`
	DisabledAt *rfc3339 `json:"disabled_at"`
}

func newWebhookBody(e *consent.WebhookEndpoint) webhookBody {
	return webhookBody{ID: e.ID, URL: e.URL, Events: e.Events, CreatedAt: timestamp(e.CreatedAt), DisabledAt: timestamp(e.DisabledAt)}
}

func (h *Handler) addWebhook(ctx context.Context, _ Caller, req *webhookRequest) (*webhookBody, error) {
	e, err := h.svc.AddWebhookEndpoint(ctx, consent.WebhookParams{CompanyID: req.CompanyID, URL: req.URL, Events: req.Events, Secret: req.Secret})
	if err != nil {
		return nil, err
	}
	body := newWebhookBody(e)
	body.Secret = e.Secret
	return &body, nil
}

type companyRequest struct {
	CompanyID string `path:"company_id" json:"-"`
}

type webhooksResponse struct {
	Endpoints []webhookBody `json:"endpoints"`
}

func (h *Handler) listWebhooks(ctx context.Context, _ Caller, req *companyRequest) (*webhooksResponse, error) {
	if _, err := h.company(ctx, req.CompanyID); err != nil {
		return nil, err
	}
	eps, err := h.svc.WebhookEndpoints(ctx, req.CompanyID)
	if err != nil {
		return nil, err
	}
	out := &webhooksResponse{Endpoints: []webhookBody{}}
	for _, e := range eps {
		out.Endpoints = append(out.Endpoints, newWebhookBody(e))
	}
	return out, nil
}

// company returns the company, NotFound when there is none.
func (h *Handler) company(ctx context.Context, id string) (*consent.Company, error) {
	if err := consent.CheckID("company_id", id); err != nil {
		return nil, err
	}
	var c *consent.Company
	err := h.svc.Store().View(ctx, func(tx consent.Tx) error {
		var err error
		c, err = tx.Company(ctx, id)
		return err
	})
	return c, err
}

type endpointRequest struct {
	CompanyID  string `path:"company_id" json:"-"`
	EndpointID string `path:"endpoint_id" json:"-"`
}

type successResponse struct {
	Success bool `json:"success"`
}

func (h *Handler) deleteWebhook(ctx context.Context, _ Caller, req *endpointRequest) (*successResponse, error) {
	if err := h.svc.DeleteWebhookEndpoint(ctx, req.CompanyID, req.EndpointID); err != nil {
		return nil, err
	}
	return &successResponse{Success: true}, nil
}

func (h *Handler) disableWebhook(ctx context.Context, _ Caller, req *endpointRequest) (*successResponse, error) {
	if err := h.svc.SetWebhookEndpointDisabled(ctx, req.CompanyID, req.EndpointID, true); err != nil {
		return nil, err
	}
	return &successResponse{Success: true}, nil
}

func (h *Handler) enableWebhook(ctx context.Context, _ Caller, req *endpointRequest) (*successResponse, error) {
	if err := h.svc.SetWebhookEndpointDisabled(ctx, req.CompanyID, req.EndpointID, false); err != nil {
		return nil, err
	}
	return &successResponse{Success: true}, nil
}

type deliveriesRequest struct {
	CompanyID  string `path:"company_id" json:"-"`
	EndpointID string `path:"endpoint_id" json:"-"`
	Before     int64  `query:"before" json:"-"` // entries with a lower seq; 0: from the newest
	Limit      int    `query:"limit" json:"-"`  // default 50
}

type deliveryBody struct {
	Seq        int64    `json:"seq"`
	MessageID  string   `json:"message_id"`
	EventType  string   `json:"event_type"`
	Attempt    int      `json:"attempt"`
	At         *rfc3339 `json:"at"`
	Status     int      `json:"status"`
	Error      string   `json:"error"`
	DurationMS float64  `json:"duration_ms"`
}

type deliveriesResponse struct {
	Deliveries []deliveryBody `json:"deliveries"`
	// NextBefore, when set, is the before of the next (older) page.
	NextBefore *int64 `json:"next_before,omitempty"`
}

func (h *Handler) webhookDeliveries(ctx context.Context, _ Caller, req *deliveriesRequest) (*deliveriesResponse, error) {
	limit := req.Limit
	if limit == 0 {
		limit = 50
	}
	if limit < 1 || limit > 1000 || req.Before < 0 {
		return nil, consent.Errorf(consent.Invalid, "limit must be 1 to 1000, and before not negative")
	}
	ds, err := h.svc.WebhookDeliveries(ctx, req.CompanyID, req.EndpointID, req.Before, limit)
	if err != nil {
		return nil, err
	}
	out := &deliveriesResponse{Deliveries: []deliveryBody{}}
	for _, d := range ds {
		out.Deliveries = append(out.Deliveries, deliveryBody{
			Seq: d.Seq, MessageID: d.MessageID, EventType: d.EventType, Attempt: d.Attempt, At: timestamp(d.At),
			Status: d.Status, Error: d.Error, DurationMS: float64(d.Duration) / float64(time.Millisecond),
		})
	}
	if len(ds) == limit {
		next := ds[len(ds)-1].Seq
		out.NextBefore = &next
	}
	return out, nil
}

type auditRequest struct {
	CompanyID string `path:"company_id" json:"-"`
	After     int64  `query:"after" json:"-"`  // entries with a higher seq; 0: from the first
	Limit     int    `query:"limit" json:"-"`  // default 100
	Action    string `query:"action" json:"-"` // a prefix, such as "verify." or "webhook.create"
	Target    string `query:"target" json:"-"`
	Actor     string `query:"actor" json:"-"`
}

type auditBody struct {
	Seq       int64    `json:"seq"`
	At        *rfc3339 `json:"at"`
	Actor     string   `json:"actor"`
	Action    string   `json:"action"`
	Target    string   `json:"target"`
	Outcome   string   `json:"outcome"`
	RequestID string   `json:"request_id"`
	Detail    string   `json:"detail"`
	PrevHash  string   `json:"prev_hash"`
	Hash      string   `json:"hash"`
}

type auditResponse struct {
	Entries []auditBody `json:"entries"`
	// NextAfter, when set, is the after of the next page.
	NextAfter *int64 `json:"next_after,omitempty"`
}

func (h *Handler) auditLog(ctx context.Context, _ Caller, req *auditRequest) (*auditResponse, error) {
	if _, err := h.company(ctx, req.CompanyID); err != nil {
		return nil, err
	}
	q := consent.AuditQuery{CompanyID: req.CompanyID, AfterSeq: req.After, Limit: req.Limit, ActionPrefix: req.Action,
		Target: req.Target, Actor: req.Actor}
	entries, err := h.svc.AuditLog(ctx, q)
	if err != nil {
		return nil, err
	}
	out := &auditResponse{Entries: []auditBody{}}
	for _, e := range entries {
		out.Entries = append(out.Entries, auditBody{
			Seq: e.Seq, At: timestamp(e.At), Actor: e.Actor, Action: e.Action, Target: e.Target, Outcome: e.Outcome,
			RequestID: e.RequestID, Detail: e.Detail, PrevHash: e.PrevHash.String(), Hash: e.Hash.String(),
		})
	}
	limit := q.Limit
	if limit == 0 {
		limit = consent.DefaultAuditPage
	}
	if len(entries) == limit {
		next := entries[len(entries)-1].Seq
		out.NextAfter = &next
	}
	return out, nil
}
