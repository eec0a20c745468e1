package httpadapter

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/audit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/profile"
	"github.com/consentkit/consentkit/wallet"
	"github.com/consentkit/consentkit/webhook"
)

// operatorRoutes are the operator API's routes (Handler.Operator):
// companies, their properties and allowed origins (D32), tokens (D6),
// wallets and ledgers (D5), certificates, sessions and revocations (D19),
// webhook endpoints and their delivery logs (D44), and audit logs (D42)
// and the check of their chains. Every change is audited with the actor
// "operator"; lists of things that grow without bound are read page by
// page (consent.Page), and a chain is checked in bounded runs. The types
// of the bodies and answers are exported, so that a client in Go
// (cmd/consentkit) writes and reads what the server reads and writes
// rather than a copy of it; fields tagged path or query come from the
// URL, never from the body.
func (h *Handler) operatorRoutes() []*route {
	const post, get, put, del = http.MethodPost, http.MethodGet, http.MethodPut, http.MethodDelete
	const base = "/operator/companies/{company_id}"
	op := func(method, pattern string, status int) Route {
		return Route{Method: method, Pattern: base + pattern, Group: OperatorGroup, Auth: AuthOperator, Status: status}
	}
	companies := func(method string, status int) Route {
		return Route{Method: method, Pattern: "/operator/companies", Group: OperatorGroup, Auth: AuthOperator, Status: status}
	}
	topUp := op(post, "/wallet/top-ups", http.StatusCreated)
	topUp.RequireKey = true
	return []*route{
		handle(Route{Method: get, Pattern: "/operator/metrics", Group: OperatorGroup, Auth: AuthOperator, ContentType: "text/plain"}, h.metrics),
		handle(companies(post, http.StatusCreated), h.createCompany),
		handle(companies(get, 0), h.listCompanies),
		handle(op(get, "", 0), h.getCompany),
		handle(op(put, "/attestation", 0), h.setAttestation),
		handle(op(put, "/insights-rules", 0), h.setInsightsRules),
		handle(op(get, "/profiles", 0), h.listProfiles),
		handle(op(get, "/profiles/{name}", 0), h.getProfile),
		handle(op(put, "/profiles/{name}", 0), h.putProfile),
		handle(op(del, "/profiles/{name}", 0), h.deleteProfile),
		handle(op(post, "/properties", http.StatusCreated), h.addProperty),
		handle(op(get, "/properties", 0), h.listProperties),
		handle(op(put, "/properties/{property_id}/allowed-origins", 0), h.setAllowedOrigins),
		handle(op(post, "/tokens", http.StatusCreated), h.issueToken),
		handle(op(get, "/tokens", 0), h.listTokens),
		handle(op(post, "/tokens/{token_id}/revoke", 0), h.revokeToken),
		handlePaid(topUp, h.topUp, topUpAnswer),
		handle(op(get, "/wallet", 0), h.balance),
		handle(op(get, "/wallet/ledger", 0), h.ledger),
		handle(op(get, "/certificates", 0), h.listCertificates),
		handle(op(post, "/certificates/search", 0), h.searchCertificates),
		handle(op(get, "/certificates/{certificate_id}", 0), h.getCertificate),
		handle(op(get, "/sessions", 0), h.listSessions),
		handle(op(get, "/sessions/{session_id}", 0), h.getSession),
		handle(op(get, "/revocations", 0), h.listRevocations),
		handle(op(post, "/webhooks", http.StatusCreated), h.addWebhook),
		handle(op(get, "/webhooks", 0), h.listWebhooks),
		handle(op(del, "/webhooks/{endpoint_id}", 0), h.deleteWebhook),
		handle(op(post, "/webhooks/{endpoint_id}/disable", 0), h.disableWebhook),
		handle(op(post, "/webhooks/{endpoint_id}/enable", 0), h.enableWebhook),
		handle(op(get, "/webhooks/{endpoint_id}/deliveries", 0), h.webhookDeliveries),
		handle(op(get, "/audit", 0), h.auditLog),
		handle(op(get, "/audit/verify", 0), h.verifyAudit),
	}
}

// AddWebhookRequest is the body of POST …/webhooks.
type AddWebhookRequest struct {
	CompanyID string   `path:"company_id" json:"-"`
	URL       string   `json:"url"`    // required: http or https
	Events    []string `json:"events"` // required: at least one of consent.EventTypes
	// Secret is optional: a new one is made, and shown once, in the answer.
	Secret string `json:"secret,omitempty"`
}

// WebhookBody is a webhook endpoint (D44) in the operator API's answers.
type WebhookBody struct {
	ID     string   `json:"id"`
	URL    string   `json:"url"`
	Events []string `json:"events"`
	// Secret is shown when the endpoint is added, never again.
	Secret     string   `json:"secret,omitempty"`
	CreatedAt  *RFC3339 `json:"created_at"`
	DisabledAt *RFC3339 `json:"disabled_at"`
}

func newWebhookBody(e *consent.WebhookEndpoint) WebhookBody {
	return WebhookBody{ID: e.ID, URL: e.URL, Events: e.Events, CreatedAt: timestamp(e.CreatedAt), DisabledAt: timestamp(e.DisabledAt)}
}

func (h *Handler) addWebhook(ctx context.Context, _ Caller, req *AddWebhookRequest) (*WebhookBody, error) {
	e, err := h.webhooks.Add(ctx, webhook.Params{CompanyID: req.CompanyID, URL: req.URL, Events: req.Events, Secret: req.Secret})
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

// WebhooksResponse is the answer of GET …/webhooks: the company's
// endpoints, oldest first.
type WebhooksResponse struct {
	Endpoints []WebhookBody `json:"endpoints"`
}

func (h *Handler) listWebhooks(ctx context.Context, _ Caller, req *companyRequest) (*WebhooksResponse, error) {
	if _, err := h.company(ctx, req.CompanyID); err != nil {
		return nil, err
	}
	eps, err := h.webhooks.List(ctx, req.CompanyID)
	if err != nil {
		return nil, err
	}
	out := &WebhooksResponse{Endpoints: []WebhookBody{}}
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

// SuccessResponse is the answer of a change that returns nothing else:
// revoking a token, deleting, disabling or enabling an endpoint.
type SuccessResponse struct {
	Success bool `json:"success"`
}

func (h *Handler) deleteWebhook(ctx context.Context, _ Caller, req *endpointRequest) (*SuccessResponse, error) {
	if err := h.webhooks.Delete(ctx, req.CompanyID, req.EndpointID); err != nil {
		return nil, err
	}
	return &SuccessResponse{Success: true}, nil
}

func (h *Handler) disableWebhook(ctx context.Context, _ Caller, req *endpointRequest) (*SuccessResponse, error) {
	if err := h.webhooks.SetDisabled(ctx, req.CompanyID, req.EndpointID, true); err != nil {
		return nil, err
	}
	return &SuccessResponse{Success: true}, nil
}

func (h *Handler) enableWebhook(ctx context.Context, _ Caller, req *endpointRequest) (*SuccessResponse, error) {
	if err := h.webhooks.SetDisabled(ctx, req.CompanyID, req.EndpointID, false); err != nil {
		return nil, err
	}
	return &SuccessResponse{Success: true}, nil
}

type deliveriesRequest struct {
	CompanyID  string `path:"company_id" json:"-"`
	EndpointID string `path:"endpoint_id" json:"-"`
	Before     int64  `query:"before" json:"-"` // entries with a lower seq; 0: from the newest
	Limit      int    `query:"limit" json:"-"`  // default 50
}

// DeliveryBody is an entry of an endpoint's delivery log (D44).
type DeliveryBody struct {
	Seq        int64    `json:"seq"`
	MessageID  string   `json:"message_id"`
	EventType  string   `json:"event_type"`
	Attempt    int      `json:"attempt"`
	At         *RFC3339 `json:"at"`
	Status     int      `json:"status"`
	Error      string   `json:"error"`
	DurationMS float64  `json:"duration_ms"`
}

// DeliveriesResponse is the answer of GET
// …/webhooks/{endpoint_id}/deliveries: a page of the log, newest first.
type DeliveriesResponse struct {
	Deliveries []DeliveryBody `json:"deliveries"`
	// NextBefore, when set, is the before of the next (older) page.
	NextBefore *int64 `json:"next_before,omitempty"`
}

func (h *Handler) webhookDeliveries(ctx context.Context, _ Caller, req *deliveriesRequest) (*DeliveriesResponse, error) {
	limit := req.Limit
	if limit == 0 {
		limit = 50
	}
	if limit < 1 || limit > 1000 || req.Before < 0 {
		return nil, consent.Errorf(consent.Invalid, "limit must be 1 to 1000 (none, or 0: 50), and before not negative")
	}
	ds, err := h.webhooks.Deliveries(ctx, req.CompanyID, req.EndpointID, req.Before, limit)
	if err != nil {
		return nil, err
	}
	out := &DeliveriesResponse{Deliveries: []DeliveryBody{}}
	for _, d := range ds {
		out.Deliveries = append(out.Deliveries, DeliveryBody{
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
	Before    int64  `query:"before" json:"-"` // entries with a lower seq; 0: no bound
	// Order is "oldest" (the default: oldest first, paged on with after) or
	// "newest" (newest first, paged on with before), for reading the tail
	// of a long log without paging through all of it.
	Order  string `query:"order" json:"-"`
	Limit  int    `query:"limit" json:"-"`  // default 100
	Action string `query:"action" json:"-"` // a prefix, such as "verify." or "webhook.create"
	Target string `query:"target" json:"-"`
	Actor  string `query:"actor" json:"-"`
}

// AuditEntryBody is an entry of a company's audit log (D42).
type AuditEntryBody struct {
	Seq       int64    `json:"seq"`
	At        *RFC3339 `json:"at"`
	Actor     string   `json:"actor"`
	Action    string   `json:"action"`
	Target    string   `json:"target"`
	Outcome   string   `json:"outcome"`
	RequestID string   `json:"request_id"`
	Detail    string   `json:"detail"`
	PrevHash  string   `json:"prev_hash"`
	Hash      string   `json:"hash"`
}

// AuditResponse is the answer of GET …/audit: a page of the audit log.
type AuditResponse struct {
	Entries []AuditEntryBody `json:"entries"`
	// NextAfter, when set, is the after of the next page (oldest first).
	NextAfter *int64 `json:"next_after,omitempty"`
	// NextBefore, when set, is the before of the next page (newest first).
	NextBefore *int64 `json:"next_before,omitempty"`
}

func (h *Handler) auditLog(ctx context.Context, _ Caller, req *auditRequest) (*AuditResponse, error) {
	if _, err := h.company(ctx, req.CompanyID); err != nil {
		return nil, err
	}
	if req.Order != "" && req.Order != "oldest" && req.Order != "newest" {
		return nil, consent.Errorf(consent.Invalid, "order must be oldest or newest")
	}
	q := consent.AuditQuery{CompanyID: req.CompanyID, AfterSeq: req.After, BeforeSeq: req.Before, Newest: req.Order == "newest",
		Limit: req.Limit, ActionPrefix: req.Action, Target: req.Target, Actor: req.Actor}
	entries, err := h.svc.AuditLog(ctx, q)
	if err != nil {
		return nil, err
	}
	out := &AuditResponse{Entries: []AuditEntryBody{}}
	for _, e := range entries {
		out.Entries = append(out.Entries, AuditEntryBody{
			Seq: e.Seq, At: timestamp(e.At), Actor: e.Actor, Action: e.Action, Target: e.Target, Outcome: e.Outcome,
			RequestID: e.RequestID, Detail: e.Detail, PrevHash: e.PrevHash.String(), Hash: e.Hash.String(),
		})
	}
	limit := q.Limit
	if limit == 0 {
		limit = consentkit.DefaultAuditPage
	}
	if len(entries) == limit {
		next := entries[len(entries)-1].Seq
		if q.Newest {
			out.NextBefore = &next
		} else {
			out.NextAfter = &next
		}
	}
	return out, nil
}

// DefaultAuditVerify is the number of entries GET …/audit/verify checks
// when the query sets no limit; at most audit.MaxCheck may be asked.
const DefaultAuditVerify = 10_000

type auditVerifyRequest struct {
	CompanyID string `path:"company_id" json:"-"`
	From      int64  `query:"from" json:"-"`  // the first entry to check; 0 or none: 1
	Limit     int    `query:"limit" json:"-"` // 1 to audit.MaxCheck; 0 or none: DefaultAuditVerify
}

// AuditVerifyResponse is the answer of GET
// /operator/companies/{company_id}/audit/verify: what one bounded run of
// [audit.CheckChain] found. A broken chain is a finding,
// answered 200 with Intact false, not a refusal of the request.
type AuditVerifyResponse struct {
	CompanyID string `json:"company_id"`
	From      int64  `json:"from"`    // the first entry the run checked
	Checked   int64  `json:"checked"` // how many it checked: From to Last
	Last      int64  `json:"last"`    // the last it checked; From-1 when none
	// Head is the number of entries the chain's head recorded when the run
	// began.
	Head int64 `json:"head"`
	// Next is the from of the following run when this one stopped at its
	// limit before the end of the chain; 0 when it reached the end or found
	// the chain broken.
	Next int64 `json:"next"`
	// Intact reports that no entry checked was found wrong. The chain is
	// intact from From-1 to its head when Next is 0 too (from 1: all of it).
	Intact bool `json:"intact"`
	// Broken, set when Intact is false, is the first entry found wrong.
	Broken *AuditBreak `json:"broken,omitempty"`
}

// AuditBreak is where a company's audit chain is broken
// ([audit.ChainError]).
type AuditBreak struct {
	Seq    int64  `json:"seq"`
	Reason string `json:"reason"`
}

// verifyAudit checks a bounded run of the company's audit chain (D42), so
// that an operator can check a long chain request by request. It is a
// read, and like the other reads is not itself audited.
func (h *Handler) verifyAudit(ctx context.Context, _ Caller, req *auditVerifyRequest) (*AuditVerifyResponse, error) {
	if _, err := h.company(ctx, req.CompanyID); err != nil {
		return nil, err
	}
	if req.From < 0 {
		return nil, consent.Errorf(consent.Invalid, "from must be an entry's number, 1 or more (none, or 0: 1)")
	}
	limit := cmp.Or(req.Limit, DefaultAuditVerify)
	if limit < 1 || limit > audit.MaxCheck {
		return nil, consent.Errorf(consent.Invalid, "limit must be 1 to %d (none, or 0: %d)", audit.MaxCheck, DefaultAuditVerify)
	}
	c, err := audit.CheckChain(ctx, h.svc.Store(), req.CompanyID, req.From, limit)
	out := &AuditVerifyResponse{CompanyID: req.CompanyID, From: c.From, Checked: c.Checked, Last: c.Last, Head: c.Head,
		Next: c.Next, Intact: err == nil}
	var broken *audit.ChainError
	if errors.As(err, &broken) {
		out.Broken = &AuditBreak{Seq: broken.Seq, Reason: broken.Reason}
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Companies.

// CreateCompanyRequest is the body of POST /operator/companies.
type CreateCompanyRequest struct {
	ID                            string   `json:"id"`   // required (D29)
	Name                          string   `json:"name"` // required
	ThirdPartyVerificationEnabled bool     `json:"third_party_verification_enabled"`
	AuthorizedThirdParties        []string `json:"authorized_third_parties"`
	// AttestCertificates has every certificate the company issues
	// attested (D49).
	AttestCertificates bool `json:"attest_certificates"`
	// InsightsRules are the thresholds of its certificates' bot verdict
	// (D50); left out, the defaults.
	InsightsRules consent.InsightsRules `json:"insights_rules"`
}

// CompanyBody is a company in the operator API's answers.
type CompanyBody struct {
	ID                            string   `json:"id"`
	Name                          string   `json:"name"`
	ThirdPartyVerificationEnabled bool     `json:"third_party_verification_enabled"`
	AuthorizedThirdParties        []string `json:"authorized_third_parties"`
	AttestCertificates            bool     `json:"attest_certificates"`
	// InsightsRules are the thresholds of its certificates' bot verdict
	// (D50); a threshold left out is its default.
	InsightsRules consent.InsightsRules `json:"insights_rules"`
	CreatedAt     *RFC3339              `json:"created_at"`
}

func newCompanyBody(c *consent.Company) CompanyBody {
	return CompanyBody{ID: c.ID, Name: c.Name, ThirdPartyVerificationEnabled: c.ThirdPartyVerificationEnabled,
		AuthorizedThirdParties: orNone(c.AuthorizedThirdParties), AttestCertificates: c.AttestCertificates,
		InsightsRules: c.InsightsRules, CreatedAt: timestamp(c.CreatedAt)}
}

// orNone returns list, or an empty list for nil: a JSON array, never null.
func orNone[T any](list []T) []T {
	if list == nil {
		return []T{}
	}
	return list
}

// createCompany creates a company with an empty wallet. A retry after a
// lost answer is told by its 409: the id is the caller's.
func (h *Handler) createCompany(ctx context.Context, _ Caller, req *CreateCompanyRequest) (*CompanyBody, error) {
	c, err := h.svc.CreateCompany(ctx, consentkit.CompanyParams{ID: req.ID, Name: req.Name,
		ThirdPartyVerificationEnabled: req.ThirdPartyVerificationEnabled, AuthorizedThirdParties: req.AuthorizedThirdParties,
		AttestCertificates: req.AttestCertificates, InsightsRules: req.InsightsRules})
	if err != nil {
		return nil, err
	}
	body := newCompanyBody(c)
	return &body, nil
}

// AttestationSettingRequest is the body of PUT …/attestation.
type AttestationSettingRequest struct {
	CompanyID string `path:"company_id" json:"-"`
	// AttestCertificates turns on or off the attestation of every
	// certificate the company issues from then on (D49). Required.
	AttestCertificates *bool `json:"attest_certificates"`
}

// setAttestation sets Company.AttestCertificates; setting it as it is
// answers the same.
func (h *Handler) setAttestation(ctx context.Context, _ Caller, req *AttestationSettingRequest) (*CompanyBody, error) {
	if req.AttestCertificates == nil { // an absent setting is no order to turn it off
		return nil, consent.Errorf(consent.Invalid, "attest_certificates is required: true or false")
	}
	if err := consent.CheckID("company_id", req.CompanyID); err != nil {
		return nil, err
	}
	c, err := h.svc.SetAttestCertificates(ctx, req.CompanyID, *req.AttestCertificates)
	if err != nil {
		return nil, err
	}
	body := newCompanyBody(c)
	return &body, nil
}

// InsightsRulesRequest is the body of PUT …/insights-rules: every
// threshold of the company's bot verdict (D50, package insights). It
// replaces them all: a threshold left out or zero is its default, a
// negative one turns its rule off.
type InsightsRulesRequest struct {
	CompanyID string `path:"company_id" json:"-"`
	consent.InsightsRules
}

// setInsightsRules replaces Company.InsightsRules.
func (h *Handler) setInsightsRules(ctx context.Context, _ Caller, req *InsightsRulesRequest) (*CompanyBody, error) {
	if err := consent.CheckID("company_id", req.CompanyID); err != nil {
		return nil, err
	}
	c, err := h.svc.SetInsightsRules(ctx, req.CompanyID, req.InsightsRules)
	if err != nil {
		return nil, err
	}
	body := newCompanyBody(c)
	return &body, nil
}

// ProfileBody is an audit profile (D51) in the operator API's answers.
type ProfileBody struct {
	Name      string        `json:"name"`
	Rules     profile.Rules `json:"rules"`
	CreatedAt *RFC3339      `json:"created_at"`
	UpdatedAt *RFC3339      `json:"updated_at"`
}

func newProfileBody(p *profile.Profile) *ProfileBody {
	return &ProfileBody{Name: p.Name, Rules: p.Rules, CreatedAt: timestamp(p.CreatedAt), UpdatedAt: timestamp(p.UpdatedAt)}
}

// ProfilesResponse is the answer of GET …/profiles: the company's audit
// profiles ordered by name.
type ProfilesResponse struct {
	Profiles []*ProfileBody `json:"profiles"`
}

func (h *Handler) listProfiles(ctx context.Context, _ Caller, req *companyRequest) (*ProfilesResponse, error) {
	if err := consent.CheckID("company_id", req.CompanyID); err != nil {
		return nil, err
	}
	list, err := h.profiles.List(ctx, req.CompanyID)
	if err != nil {
		return nil, err
	}
	out := &ProfilesResponse{Profiles: []*ProfileBody{}}
	for _, p := range list {
		out.Profiles = append(out.Profiles, newProfileBody(p))
	}
	return out, nil
}

type profileRequest struct {
	CompanyID string `path:"company_id" json:"-"`
	Name      string `path:"name" json:"-"`
}

func (h *Handler) getProfile(ctx context.Context, _ Caller, req *profileRequest) (*ProfileBody, error) {
	if err := consent.CheckID("company_id", req.CompanyID); err != nil {
		return nil, err
	}
	p, err := h.profiles.Get(ctx, req.CompanyID, req.Name)
	if err != nil {
		return nil, err
	}
	return newProfileBody(p), nil
}

// PutProfileRequest is the body of PUT …/profiles/{name}: the profile's
// rules (profile.Rules), which replace those of the profile of that
// name or make a new one.
type PutProfileRequest struct {
	CompanyID string `path:"company_id" json:"-"`
	Name      string `path:"name" json:"-"`
	profile.Rules
}

func (h *Handler) putProfile(ctx context.Context, _ Caller, req *PutProfileRequest) (*ProfileBody, error) {
	p, err := h.profiles.Put(ctx, req.CompanyID, req.Name, req.Rules)
	if err != nil {
		return nil, err
	}
	return newProfileBody(p), nil
}

func (h *Handler) deleteProfile(ctx context.Context, _ Caller, req *profileRequest) (*SuccessResponse, error) {
	if err := consent.CheckID("company_id", req.CompanyID); err != nil {
		return nil, err
	}
	if err := h.profiles.Delete(ctx, req.CompanyID, req.Name); err != nil {
		return nil, err
	}
	return &SuccessResponse{Success: true}, nil
}

type companiesRequest struct {
	After string `query:"after" json:"-"` // companies with a greater id; "": from the first
	Limit int    `query:"limit" json:"-"` // default consent.DefaultPage
}

// CompaniesResponse is the answer of GET /operator/companies: a page of
// companies by id.
type CompaniesResponse struct {
	Companies []CompanyBody `json:"companies"`
	// NextAfter, when set, is the after of the next page.
	NextAfter *string `json:"next_after,omitempty"`
}

func (h *Handler) listCompanies(ctx context.Context, _ Caller, req *companiesRequest) (*CompaniesResponse, error) {
	cs, err := h.svc.Companies(ctx, req.After, req.Limit)
	if err != nil {
		return nil, err
	}
	out := &CompaniesResponse{Companies: []CompanyBody{}}
	for _, c := range cs {
		out.Companies = append(out.Companies, newCompanyBody(c))
	}
	if len(cs) == cmp.Or(req.Limit, consent.DefaultPage) {
		next := cs[len(cs)-1].ID
		out.NextAfter = &next
	}
	return out, nil
}

func (h *Handler) getCompany(ctx context.Context, _ Caller, req *companyRequest) (*CompanyBody, error) {
	c, err := h.svc.Company(ctx, req.CompanyID)
	if err != nil {
		return nil, err
	}
	body := newCompanyBody(c)
	return &body, nil
}

// Properties and their allowed origins (D32).

// AddPropertyRequest is the body of POST …/properties.
type AddPropertyRequest struct {
	CompanyID string `path:"company_id" json:"-"`
	// ID is optional: a random one is made. Give one to make a retry safe
	// (a second call with it is a 409).
	ID             string   `json:"id"`
	Name           string   `json:"name"` // required
	AllowedOrigins []string `json:"allowed_origins"`
}

// PropertyBody is a property and its allowed origins (D32).
type PropertyBody struct {
	ID             string   `json:"id"`
	Name           string   `json:"name"`
	AllowedOrigins []string `json:"allowed_origins"`
	CreatedAt      *RFC3339 `json:"created_at"`
}

func newPropertyBody(p *consent.Property) PropertyBody {
	return PropertyBody{ID: p.ID, Name: p.Name, AllowedOrigins: orNone(p.AllowedOrigins), CreatedAt: timestamp(p.CreatedAt)}
}

func (h *Handler) addProperty(ctx context.Context, _ Caller, req *AddPropertyRequest) (*PropertyBody, error) {
	if err := consent.CheckID("company_id", req.CompanyID); err != nil {
		return nil, err
	}
	p, err := h.svc.AddProperty(ctx, consentkit.PropertyParams{ID: req.ID, CompanyID: req.CompanyID, Name: req.Name,
		AllowedOrigins: req.AllowedOrigins})
	if err != nil {
		return nil, err
	}
	body := newPropertyBody(p)
	return &body, nil
}

// PropertiesResponse is the answer of GET …/properties.
type PropertiesResponse struct {
	Properties []PropertyBody `json:"properties"`
}

func (h *Handler) listProperties(ctx context.Context, _ Caller, req *companyRequest) (*PropertiesResponse, error) {
	ps, err := h.svc.Properties(ctx, req.CompanyID)
	if err != nil {
		return nil, err
	}
	out := &PropertiesResponse{Properties: []PropertyBody{}}
	for _, p := range ps {
		out.Properties = append(out.Properties, newPropertyBody(p))
	}
	return out, nil
}

// AllowedOriginsRequest is the body of PUT
// …/properties/{property_id}/allowed-origins.
type AllowedOriginsRequest struct {
	CompanyID  string `path:"company_id" json:"-"`
	PropertyID string `path:"property_id" json:"-"`
	// AllowedOrigins replaces the list; [] allows none. Required.
	AllowedOrigins []string `json:"allowed_origins"`
}

func (h *Handler) setAllowedOrigins(ctx context.Context, _ Caller, req *AllowedOriginsRequest) (*PropertyBody, error) {
	if req.AllowedOrigins == nil { // an absent list is no order to clear it
		return nil, consent.Errorf(consent.Invalid, "allowed_origins is required: the full list, [] for none")
	}
	if err := consent.CheckID("company_id", req.CompanyID); err != nil {
		return nil, err
	}
	p, err := h.svc.SetAllowedOrigins(ctx, req.CompanyID, req.PropertyID, req.AllowedOrigins)
	if err != nil {
		return nil, err
	}
	body := newPropertyBody(p)
	return &body, nil
}

// Tokens (D6).

// IssueTokenRequest is the body of POST …/tokens.
type IssueTokenRequest struct {
	CompanyID   string   `path:"company_id" json:"-"`
	Permissions []string `json:"permissions"` // vzew_retention, or none
	ExpiresAt   string   `json:"expires_at"`  // RFC 3339; "": never
}

// TokenBody is a company's token (D6).
type TokenBody struct {
	ID          string   `json:"id"`
	Permissions []string `json:"permissions"`
	ExpiresAt   *RFC3339 `json:"expires_at"`
	RevokedAt   *RFC3339 `json:"revoked_at"`
	CreatedAt   *RFC3339 `json:"created_at"`
	// Active: neither revoked nor expired now.
	Active bool `json:"active"`
	// Secret is shown in the answer that issues the token, never again:
	// only its digest is kept (D6).
	Secret string `json:"secret,omitempty"`
}

func (h *Handler) newTokenBody(t *consent.Token) TokenBody {
	perms := []string{}
	for _, p := range t.Permissions {
		perms = append(perms, string(p))
	}
	return TokenBody{ID: t.ID, Permissions: perms, ExpiresAt: timestamp(t.ExpiresAt), RevokedAt: timestamp(t.RevokedAt),
		CreatedAt: timestamp(t.CreatedAt), Active: t.Active(h.svc.Now())}
}

// issueToken is no idempotent route: its answer holds the secret, which
// is never stored (D6), so it cannot be replayed. A retry after a lost
// answer issues another token; revoke the one never received.
func (h *Handler) issueToken(ctx context.Context, _ Caller, req *IssueTokenRequest) (*TokenBody, error) {
	if err := consent.CheckID("company_id", req.CompanyID); err != nil {
		return nil, err
	}
	expires, err := parseTime("expires_at", req.ExpiresAt)
	if err != nil {
		return nil, err
	}
	// The first instant of the year 1 (UTC) is the zero time, which
	// TokenParams reads as "never expires": given, it is a past time.
	if req.ExpiresAt != "" && expires.IsZero() {
		return nil, consent.Errorf(consent.Invalid, "expires_at must be in the future")
	}
	p := consentkit.TokenParams{CompanyID: req.CompanyID, ExpiresAt: expires}
	for _, perm := range req.Permissions {
		p.Permissions = append(p.Permissions, consent.Permission(perm))
	}
	t, secret, err := h.svc.IssueToken(ctx, p)
	if err != nil {
		return nil, err
	}
	body := h.newTokenBody(t)
	body.Secret = secret
	return &body, nil
}

// parseTime reads an RFC 3339 time of the field; "" is the zero time.
func parseTime(field, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, consent.Errorf(consent.Invalid, "%s must be an RFC 3339 time such as 2027-01-31T00:00:00Z", field)
	}
	return t.UTC(), nil
}

// TokensResponse is the answer of GET …/tokens.
type TokensResponse struct {
	Tokens []TokenBody `json:"tokens"`
}

func (h *Handler) listTokens(ctx context.Context, _ Caller, req *companyRequest) (*TokensResponse, error) {
	ts, err := h.svc.Tokens(ctx, req.CompanyID)
	if err != nil {
		return nil, err
	}
	out := &TokensResponse{Tokens: []TokenBody{}}
	for _, t := range ts {
		out.Tokens = append(out.Tokens, h.newTokenBody(t))
	}
	return out, nil
}

type tokenRequest struct {
	CompanyID string `path:"company_id" json:"-"`
	TokenID   string `path:"token_id" json:"-"`
}

// revokeToken revokes a token of the company; revoking it again answers
// the same.
func (h *Handler) revokeToken(ctx context.Context, _ Caller, req *tokenRequest) (*SuccessResponse, error) {
	if err := consent.CheckID("company_id", req.CompanyID); err != nil {
		return nil, err
	}
	if err := h.svc.RevokeToken(ctx, req.CompanyID, req.TokenID); err != nil {
		return nil, err
	}
	return &SuccessResponse{Success: true}, nil
}

// The wallet (D1, D5).

// TopUpRequest is the body of POST …/wallet/top-ups.
type TopUpRequest struct {
	CompanyID string         `path:"company_id" json:"-"`
	Amount    *wallet.Amount `json:"amount"`    // required: dollars, exact (D1)
	Reference string         `json:"reference"` // the payment's reference; optional
}

func (r *TopUpRequest) company() string { return r.CompanyID }

// TopUpBody is the answer of POST …/wallet/top-ups.
type TopUpBody struct {
	CompanyID string        `json:"company_id"`
	Amount    wallet.Amount `json:"amount"`
	Reference string        `json:"reference"`
	Balance   wallet.Amount `json:"balance"`
}

// topUp credits the wallet. It requires an Idempotency-Key
// (Route.RequireKey): a top-up moves money and charges nothing that a
// retry could fail on, so without a key a retry after a lost answer would
// credit twice. The key is claimed, and the answer stored, in the
// transaction of the credit (D40), scoped to the operator and the company.
func (h *Handler) topUp(ctx context.Context, _ Caller, req *TopUpRequest) (*TopUpBody, error) {
	if req.Amount == nil {
		return nil, consent.Errorf(consent.Invalid, "amount is required: dollars, such as 25 or 12.50")
	}
	return consentkit.Paid(ctx, h.svc, nil, func(tx consent.Tx) (*TopUpBody, error) {
		bal, err := h.svc.TopUpTx(ctx, tx, req.CompanyID, *req.Amount, req.Reference)
		if err != nil {
			return nil, err
		}
		return &TopUpBody{CompanyID: req.CompanyID, Amount: *req.Amount, Reference: req.Reference, Balance: bal}, nil
	})
}

func topUpAnswer(b *TopUpBody) *TopUpBody { return b }

// BalanceBody is the answer of GET …/wallet.
type BalanceBody struct {
	CompanyID string        `json:"company_id"`
	Balance   wallet.Amount `json:"balance"`
}

func (h *Handler) balance(ctx context.Context, _ Caller, req *companyRequest) (*BalanceBody, error) {
	if err := consent.CheckID("company_id", req.CompanyID); err != nil {
		return nil, err
	}
	bal, err := h.svc.Balance(ctx, req.CompanyID)
	if err != nil {
		return nil, err
	}
	return &BalanceBody{CompanyID: req.CompanyID, Balance: bal}, nil
}

// pageRequest reads a page of a company's list (consent.Page), newest
// first.
type pageRequest struct {
	CompanyID string `path:"company_id" json:"-"`
	Since     string `query:"since" json:"-"`  // RFC 3339: created at or after it
	Until     string `query:"until" json:"-"`  // RFC 3339: created before it
	Before    string `query:"before" json:"-"` // the next_before of the previous page
	Limit     int    `query:"limit" json:"-"`  // 1 to consent.MaxPage; default consent.DefaultPage
}

func (r *pageRequest) page() (consent.Page, error) {
	p := consent.Page{CompanyID: r.CompanyID, Limit: cmp.Or(r.Limit, consent.DefaultPage)}
	var err error
	if p.Since, err = parseTime("since", r.Since); err != nil {
		return p, err
	}
	if p.Until, err = parseTime("until", r.Until); err != nil {
		return p, err
	}
	// Every stored time falls in the years 1 to 9999 (the stores refuse a
	// bound outside them): a since before them, or an until after them,
	// bounds nothing.
	if p.Since.Year() < 1 {
		p.Since = time.Time{}
	}
	if p.Until.Year() > 9999 {
		p.Until = time.Time{}
	}
	p.Before, err = consent.ParseCursor("before", r.Before)
	return p, err
}

// readPage reads a page with read and renders its items; the answer's next
// cursor is set when the page is full.
func readPage[T, B any](ctx context.Context, req *pageRequest, read func(context.Context, consent.Page) ([]T, error),
	render func(T) B, key func(T) (time.Time, string)) ([]B, *string, error) {
	p, err := req.page()
	if err != nil {
		return nil, nil, err
	}
	items, err := read(ctx, p)
	if err != nil {
		return nil, nil, err
	}
	out := make([]B, 0, len(items))
	for _, it := range items {
		out = append(out, render(it))
	}
	if len(items) == 0 || len(items) < p.Limit {
		return out, nil, nil
	}
	next := consent.CursorOf(key(items[len(items)-1])).String()
	return out, &next, nil
}

// LedgerEntryBody is an entry of a company's ledger (D5).
type LedgerEntryBody struct {
	ID     string        `json:"id"`
	Kind   string        `json:"kind"`
	Amount wallet.Amount `json:"amount"`
	// Credit: the amount was added to the balance (a top-up); otherwise
	// taken from it.
	Credit    bool     `json:"credit"`
	Reference string   `json:"reference"`
	CreatedAt *RFC3339 `json:"created_at"`
}

// LedgerResponse is the answer of GET …/wallet/ledger: a page of the
// ledger, newest first.
type LedgerResponse struct {
	Entries []LedgerEntryBody `json:"entries"`
	// NextBefore, when set, is the before of the next (older) page.
	NextBefore *string `json:"next_before,omitempty"`
}

func (h *Handler) ledger(ctx context.Context, _ Caller, req *pageRequest) (*LedgerResponse, error) {
	entries, next, err := readPage(ctx, req, h.svc.LedgerPage, func(e *wallet.Entry) LedgerEntryBody {
		return LedgerEntryBody{ID: e.ID, Kind: string(e.Kind), Amount: e.Amount, Credit: e.Kind.IsCredit(), Reference: e.Reference,
			CreatedAt: timestamp(e.CreatedAt)}
	}, func(e *wallet.Entry) (time.Time, string) { return e.CreatedAt, e.ID })
	if err != nil {
		return nil, err
	}
	return &LedgerResponse{Entries: entries, NextBefore: next}, nil
}

// Certificates, sessions and revocations: read only.

// CertificateSummary is a certificate in a list: what it is, not what it
// holds. The consumer's email and mobile are never shown, nor their
// digests (D17): only whether they were given.
type CertificateSummary struct {
	ID              string   `json:"id"`
	PropertyID      string   `json:"property_id"`
	SessionID       string   `json:"session_id"`
	Origin          string   `json:"origin"`
	RetentionStatus string   `json:"retention_status"`
	CreatedAt       *RFC3339 `json:"created_at"`
	ExpiresAt       *RFC3339 `json:"expires_at"`
	RevokedAt       *RFC3339 `json:"revoked_at"`
	EmailGiven      bool     `json:"email_given"`
	MobileGiven     bool     `json:"mobile_given"`
	Signed          bool     `json:"signed"`
}

func newCertificateSummary(c *consent.Certificate) CertificateSummary {
	return CertificateSummary{ID: c.ID, PropertyID: c.PropertyID, SessionID: c.SessionID, Origin: c.Origin,
		RetentionStatus: string(c.RetentionStatus), CreatedAt: timestamp(c.CreatedAt), ExpiresAt: timestamp(c.ExpiresAt),
		RevokedAt: timestamp(c.RevokedAt), EmailGiven: !c.EmailDigest.IsZero(), MobileGiven: !c.MobileDigest.IsZero(),
		Signed: len(c.Signature) > 0}
}

// CertificatesResponse is the answer of GET …/certificates (a page,
// newest first) and of POST …/certificates/search.
type CertificatesResponse struct {
	Certificates []CertificateSummary `json:"certificates"`
	// NextBefore, when set, is the before of the next (older) page.
	NextBefore *string `json:"next_before,omitempty"`
	// Truncated, in a search's answer, says that it holds as many
	// certificates as one search answers (consent.MaxPage), the newest:
	// the consumer may have older ones, which it leaves out.
	Truncated bool `json:"truncated,omitempty"`
}

func certificateKey(c *consent.Certificate) (time.Time, string) { return c.CreatedAt, c.ID }

func (h *Handler) listCertificates(ctx context.Context, _ Caller, req *pageRequest) (*CertificatesResponse, error) {
	list, next, err := readPage(ctx, req, h.svc.CertificatePage, newCertificateSummary, certificateKey)
	if err != nil {
		return nil, err
	}
	return &CertificatesResponse{Certificates: list, NextBefore: next}, nil
}

// SearchRequest finds a consumer's certificates. The email and mobile
// travel in the body, not the URL, so that no access log keeps them.
type SearchRequest struct {
	CompanyID string `path:"company_id" json:"-"`
	Email     string `json:"email"`
	Mobile    string `json:"mobile"`
}

// searchCertificates finds the company's certificates by the digests of
// the normalized email and mobile (D17), newest first.
func (h *Handler) searchCertificates(ctx context.Context, _ Caller, req *SearchRequest) (*CertificatesResponse, error) {
	cs, err := h.svc.FindCertificates(ctx, req.CompanyID, req.Email, req.Mobile)
	if err != nil {
		return nil, err
	}
	out := &CertificatesResponse{Certificates: []CertificateSummary{}}
	for _, c := range cs {
		out.Certificates = append(out.Certificates, newCertificateSummary(c))
	}
	out.Truncated = len(cs) >= consent.MaxPage // FindCertificates answers at most MaxPage, the newest
	return out, nil
}

type certificateRequest struct {
	CompanyID     string `path:"company_id" json:"-"`
	CertificateID string `path:"certificate_id" json:"-"`
}

// ConsentBody is one consent of a certificate: its text, its types and
// when it was given.
type ConsentBody struct {
	Text    string   `json:"text"`
	Types   []string `json:"types"`
	OptInAt *RFC3339 `json:"opt_in_at"`
}

// CertificateBody is a certificate with its content: the consents, where
// and how they were given (D35, D37), and its signature (D41).
type CertificateBody struct {
	CertificateSummary
	Consents        []ConsentBody       `json:"consents"`
	ClientIP        string              `json:"client_ip"`
	UserAgent       string              `json:"user_agent"`
	RecordingSHA256 string              `json:"recording_sha256"`
	Visibility      *consent.Visibility `json:"visibility"`
	KeyID           string              `json:"key_id"`
	Signature       string              `json:"signature"` // base64; "" when unsigned
	EventsCombined  json.RawMessage     `json:"events_combined"`
}

func (h *Handler) getCertificate(ctx context.Context, _ Caller, req *certificateRequest) (*CertificateBody, error) {
	c, err := h.svc.CompanyCertificate(ctx, req.CompanyID, req.CertificateID)
	if err != nil {
		return nil, err
	}
	out := &CertificateBody{
		CertificateSummary: newCertificateSummary(c), Consents: []ConsentBody{},
		ClientIP: c.ClientIP, UserAgent: c.UserAgent, RecordingSHA256: hexDigest(c.RecordingSHA256),
		Visibility: c.Visibility, KeyID: c.KeyID, Signature: base64.StdEncoding.EncodeToString(c.Signature),
		EventsCombined: c.EventsCombined,
	}
	for _, r := range c.Records {
		out.Consents = append(out.Consents, ConsentBody{Text: r.Text, Types: orNone(r.Types), OptInAt: timestamp(r.OptInAt)})
	}
	if len(out.EventsCombined) == 0 {
		out.EventsCombined = json.RawMessage("{}")
	}
	return out, nil
}

// OperatorSessionBody is a session as the operator sees it; its upload
// capability (D33) is never shown.
type OperatorSessionBody struct {
	ID              string   `json:"id"`
	PropertyID      string   `json:"property_id"`
	RetentionStatus string   `json:"retention_status"`
	VideoStatus     string   `json:"rrweb_to_video_status"`
	EventChunks     int      `json:"event_chunks"`
	EventBytes      int64    `json:"event_bytes"`
	CertificateID   string   `json:"certificate_id"`
	URL             string   `json:"url"`
	CreatedAt       *RFC3339 `json:"created_at"`
	ExpiresAt       *RFC3339 `json:"expires_at"`
	ClosedAt        *RFC3339 `json:"closed_at"`
	VideoBytes      int64    `json:"video_bytes"`
	VideoSHA256     string   `json:"video_sha256"`
	VideoDurationMS int64    `json:"video_duration_ms"`
}

func newOpSessionBody(s *consent.Session) OperatorSessionBody {
	return OperatorSessionBody{ID: s.ID, PropertyID: s.PropertyID, RetentionStatus: string(s.RetentionStatus),
		VideoStatus: string(s.VideoStatus), EventChunks: s.EventChunks, EventBytes: s.EventBytes,
		CertificateID: s.CertificateID, URL: s.URL, CreatedAt: timestamp(s.CreatedAt), ExpiresAt: timestamp(s.ExpiresAt),
		ClosedAt: timestamp(s.ClosedAt), VideoBytes: s.Video.Bytes, VideoSHA256: hexDigest(s.Video.SHA256),
		VideoDurationMS: s.Video.Duration.Milliseconds()}
}

// SessionsResponse is the answer of GET …/sessions: a page, newest first.
type SessionsResponse struct {
	Sessions []OperatorSessionBody `json:"sessions"`
	// NextBefore, when set, is the before of the next (older) page.
	NextBefore *string `json:"next_before,omitempty"`
}

func (h *Handler) listSessions(ctx context.Context, _ Caller, req *pageRequest) (*SessionsResponse, error) {
	list, next, err := readPage(ctx, req, h.svc.SessionPage, newOpSessionBody,
		func(s *consent.Session) (time.Time, string) { return s.CreatedAt, s.ID })
	if err != nil {
		return nil, err
	}
	return &SessionsResponse{Sessions: list, NextBefore: next}, nil
}

type opSessionRequest struct {
	CompanyID string `path:"company_id" json:"-"`
	SessionID string `path:"session_id" json:"-"`
}

func (h *Handler) getSession(ctx context.Context, _ Caller, req *opSessionRequest) (*OperatorSessionBody, error) {
	s, err := h.svc.CompanySession(ctx, req.CompanyID, req.SessionID)
	if err != nil {
		return nil, err
	}
	body := newOpSessionBody(s)
	return &body, nil
}

// RevocationBody is a revocation record (D19); like a certificate's, the
// consumer's email and mobile are shown only as given or not.
type RevocationBody struct {
	ID             string   `json:"id"`
	CertificateID  string   `json:"certificate_id"`
	EmailGiven     bool     `json:"email_given"`
	MobileGiven    bool     `json:"mobile_given"`
	Reason         string   `json:"reason"`
	ClientIP       string   `json:"client_ip"`
	CertificateIDs []string `json:"certificate_ids"`
	CreatedAt      *RFC3339 `json:"created_at"`
}

// RevocationsResponse is the answer of GET …/revocations: a page, newest
// first.
type RevocationsResponse struct {
	Revocations []RevocationBody `json:"revocations"`
	// NextBefore, when set, is the before of the next (older) page.
	NextBefore *string `json:"next_before,omitempty"`
}

func (h *Handler) listRevocations(ctx context.Context, _ Caller, req *pageRequest) (*RevocationsResponse, error) {
	list, next, err := readPage(ctx, req, h.svc.RevocationPage, func(r *consent.Revocation) RevocationBody {
		return RevocationBody{ID: r.ID, CertificateID: r.CertificateID, EmailGiven: !r.EmailDigest.IsZero(),
			MobileGiven: !r.MobileDigest.IsZero(), Reason: r.Reason, ClientIP: r.ClientIP,
			CertificateIDs: orNone(r.CertificateIDs), CreatedAt: timestamp(r.CreatedAt)}
	}, func(r *consent.Revocation) (time.Time, string) { return r.CreatedAt, r.ID })
	if err != nil {
		return nil, err
	}
	return &RevocationsResponse{Revocations: list, NextBefore: next}, nil
}

// metricsResponse is the answer of GET /operator/metrics: Config.Metrics'
// own.
type metricsResponse struct{ h http.Handler }

func (m *metricsResponse) stream(w http.ResponseWriter, r *http.Request) { m.h.ServeHTTP(w, r) }

// metrics serves Config.Metrics to the operator; 404 without it.
func (h *Handler) metrics(context.Context, Caller, *struct{}) (*metricsResponse, error) {
	if h.cfg.Metrics == nil {
		return nil, consent.Errorf(consent.NotFound, "metrics are not served: Config.Metrics is not set")
	}
	return &metricsResponse{h.cfg.Metrics}, nil
}
