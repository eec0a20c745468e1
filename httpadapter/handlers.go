package httpadapter

import (
	"encoding/json"
	"net/http"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/optout"
	"github.com/consentkit/consentkit/verify"
	"github.com/consentkit/consentkit/wallet"
)

// begin authenticates a Verification API request (401), decodes its body
// into req (400, 413) and applies the verification rate limit (429). ids
// returns the company and property that the request names, for
// company-and-property credentials (D8). It returns the caller's company,
// or false after answering.
func (a *adapter) begin(w http.ResponseWriter, r *http.Request, req any, ids func() (string, string)) (string, bool) {
	secret, present, err := bearer(r)
	var tok *consent.Token
	switch {
	case err != nil:
	case present:
		tok, err = a.consent.Authenticate(r.Context(), secret)
	case !a.d8:
		err = consent.Errorf(consent.Unauthorized, "an Authorization: Bearer token is required")
	}
	if err == nil {
		err = decode(w, r, req)
	}
	var caller string
	if err == nil && tok != nil {
		caller = tok.CompanyID
	} else if err == nil {
		company, property := ids()
		caller, err = a.propertyCaller(r.Context(), company, property)
	}
	if err != nil {
		a.writeError(w, r, verifyStyle, err)
		return "", false
	}
	return caller, limit(w, a.verifyLimit, caller, verifyStyle)
}

type matchRequest struct {
	CertificateID       string `json:"certificate_id"`
	CompanyID           string `json:"company_id"`
	Consent             string `json:"consent"`
	Term                string `json:"term"`
	OriginatorCompanyID string `json:"originator_company_id"`
	PropertyID          string `json:"property_id"`
}

type matchResponse struct {
	Valid            bool      `json:"valid"`
	ConsentOptIn     *string   `json:"consent_opt_in"`
	Origin           string    `json:"origin"`
	ConsentTypes     *[]string `json:"consent_types,omitempty"` // match only
	VerificationType string    `json:"verification_type"`
}

func (a *adapter) match(w http.ResponseWriter, r *http.Request) {
	var req matchRequest
	caller, ok := a.begin(w, r, &req, func() (string, string) { return req.CompanyID, req.PropertyID })
	if !ok {
		return
	}
	res, err := a.verify.Match(r.Context(), caller, verify.MatchRequest{
		CertificateID: req.CertificateID, CompanyID: req.CompanyID, Consent: req.Consent,
		OriginatorCompanyID: req.OriginatorCompanyID, PropertyID: req.PropertyID,
	})
	if err != nil {
		a.writeError(w, r, verifyStyle, err)
		return
	}
	writeJSON(w, http.StatusOK, matchResponse{
		Valid: res.Valid, ConsentOptIn: timestamp(res.ConsentOptIn), Origin: res.Origin,
		ConsentTypes: &res.ConsentTypes, VerificationType: res.VerificationType,
	})
}

func (a *adapter) partialMatch(w http.ResponseWriter, r *http.Request) {
	var req matchRequest
	caller, ok := a.begin(w, r, &req, func() (string, string) { return req.CompanyID, req.PropertyID })
	if !ok {
		return
	}
	res, err := a.verify.PartialMatch(r.Context(), caller, verify.PartialMatchRequest{
		CertificateID: req.CertificateID, CompanyID: req.CompanyID, Term: req.Term,
		OriginatorCompanyID: req.OriginatorCompanyID, PropertyID: req.PropertyID,
	})
	if err != nil {
		a.writeError(w, r, verifyStyle, err)
		return
	}
	writeJSON(w, http.StatusOK, matchResponse{
		Valid: res.Valid, ConsentOptIn: timestamp(res.ConsentOptIn), Origin: res.Origin,
		VerificationType: res.VerificationType,
	})
}

type infoResponse struct {
	Valid            bool            `json:"valid"`
	CertificateID    string          `json:"certificate_id"`
	CreatedTimestamp *string         `json:"created_timestamp"`
	HasConsents      bool            `json:"has_consents"`
	ConsentCount     int             `json:"consent_count"`
	EventsCombined   json.RawMessage `json:"events_combined"`
}

func (a *adapter) certificateInfo(w http.ResponseWriter, r *http.Request) {
	var req matchRequest
	caller, ok := a.begin(w, r, &req, func() (string, string) { return req.CompanyID, req.PropertyID })
	if !ok {
		return
	}
	info, err := a.verify.CertificateInfo(r.Context(), caller, verify.InfoRequest{
		CertificateID: req.CertificateID, CompanyID: req.CompanyID, PropertyID: req.PropertyID,
	})
	if err != nil {
		a.writeError(w, r, verifyStyle, err)
		return
	}
	writeJSON(w, http.StatusOK, infoResponse{
		Valid: true, CertificateID: info.CertificateID, CreatedTimestamp: timestamp(info.CreatedAt),
		HasConsents: info.ConsentCount > 0, ConsentCount: info.ConsentCount, EventsCombined: info.EventsCombined,
	})
}

type sessionRequest struct {
	SessionID  string `json:"session_id"`
	PropertyID string `json:"property_id"` // for company-and-property credentials only
}

type retentionResponse struct {
	Success          bool          `json:"success"`
	SessionID        string        `json:"session_id"`
	RetentionStatus  string        `json:"retention_status"`
	RetainedUntil    *string       `json:"retained_until"`
	CostCharged      wallet.Amount `json:"cost_charged"`
	RemainingBalance wallet.Amount `json:"remaining_balance"`
	CertificateIDs   *[]string     `json:"certificate_ids,omitempty"`
}

func retention(r *verify.SessionRetention) retentionResponse {
	return retentionResponse{
		Success: true, SessionID: r.SessionID, RetentionStatus: string(r.RetentionStatus),
		RetainedUntil: timestamp(r.RetainedUntil), CostCharged: r.Charged, RemainingBalance: r.Balance,
	}
}

func (a *adapter) retainSession(w http.ResponseWriter, r *http.Request) {
	var req sessionRequest
	company := r.PathValue("company_id")
	caller, ok := a.begin(w, r, &req, func() (string, string) { return company, req.PropertyID })
	if !ok {
		return
	}
	res, err := a.verify.RetainSession(r.Context(), caller, company, req.SessionID)
	if err != nil {
		a.writeError(w, r, verifyStyle, err)
		return
	}
	writeJSON(w, http.StatusOK, retention(res))
}

func (a *adapter) retainCertificate(w http.ResponseWriter, r *http.Request) {
	var req sessionRequest
	company := r.PathValue("company_id")
	caller, ok := a.begin(w, r, &req, func() (string, string) { return company, req.PropertyID })
	if !ok {
		return
	}
	res, err := a.verify.RetainCertificate(r.Context(), caller, company, req.SessionID)
	if err != nil {
		a.writeError(w, r, verifyStyle, err)
		return
	}
	body := retention(&res.SessionRetention)
	body.CertificateIDs = &res.CertificateIDs
	writeJSON(w, http.StatusOK, body)
}

type optOutRequest struct {
	CompanyID     string `json:"company_id"`
	CertificateID string `json:"certificate_id"`
	Email         string `json:"email"`
	Mobile        string `json:"mobile"`
	Reason        string `json:"reason"`
}

type optOutResponse struct {
	Success      bool     `json:"success"`
	Revoked      int      `json:"revoked"`
	Certificates []string `json:"certificates"`
	Timestamp    *string  `json:"timestamp"`
}

func (a *adapter) optOut(w http.ResponseWriter, r *http.Request) {
	ip := ClientIP(r, a.trusted)
	if !limit(w, a.optoutLimit, ip.String(), verifyStyle) {
		return
	}
	var req optOutRequest
	if err := decode(w, r, &req); err != nil {
		a.writeError(w, r, verifyStyle, err)
		return
	}
	res, err := a.optout.OptOut(r.Context(), optout.Request{
		CompanyID: req.CompanyID, CertificateID: req.CertificateID, Email: req.Email, Mobile: req.Mobile,
		Reason: req.Reason, ClientIP: ip.String(),
	})
	if err != nil {
		a.writeError(w, r, verifyStyle, err)
		return
	}
	writeJSON(w, http.StatusOK, optOutResponse{
		Success: true, Revoked: len(res.CertificateIDs), Certificates: res.CertificateIDs,
		Timestamp: timestamp(res.Timestamp),
	})
}

// retainCaller authenticates a Retain API request: a token (401) with the
// retention permission (403) of the path's company (403), then the
// company's rate limit (429).
func (a *adapter) retainCaller(w http.ResponseWriter, r *http.Request) (string, bool) {
	tok, err := a.token(r)
	if err == nil && !tok.Has(consent.PermissionRetention) {
		err = consent.Errorf(consent.Forbidden, "the token lacks the %s permission", consent.PermissionRetention)
	}
	if err == nil && tok.CompanyID != r.PathValue("companyId") {
		err = consent.Errorf(consent.Forbidden, "the token is not one of company %s", r.PathValue("companyId"))
	}
	if err != nil {
		a.writeError(w, r, retainStyle, err)
		return "", false
	}
	return tok.CompanyID, limit(w, a.retainLimit, tok.CompanyID, retainStyle)
}

type retainResponse struct {
	Success          bool          `json:"success"`
	SessionID        string        `json:"sessionId"`
	Status           string        `json:"status"`
	CostCharged      wallet.Amount `json:"cost_charged"`
	RemainingBalance wallet.Amount `json:"remaining_balance"`
}

func (a *adapter) retainOne(w http.ResponseWriter, r *http.Request) {
	caller, ok := a.retainCaller(w, r)
	if !ok {
		return
	}
	res, err := a.retain.Retain(r.Context(), caller, r.PathValue("companyId"), r.PathValue("sessionId"))
	if err != nil {
		a.writeError(w, r, retainStyle, err)
		return
	}
	writeJSON(w, http.StatusOK, retainResponse{
		Success: true, SessionID: res.SessionID, Status: res.Status,
		CostCharged: res.Charged, RemainingBalance: res.Balance,
	})
}

type batchRequest struct {
	SessionIDs *[]string `json:"session_ids"`
}

type batchEntry struct {
	SessionID string `json:"sessionId"`
	Success   bool   `json:"success"`
	Status    string `json:"status,omitempty"`
	Error     string `json:"error,omitempty"`
}

type batchResponse struct {
	Success          bool          `json:"success"`
	Retained         int           `json:"retained"`
	Failed           int           `json:"failed"`
	TotalCost        wallet.Amount `json:"total_cost"`
	RemainingBalance wallet.Amount `json:"remaining_balance"`
	Results          []batchEntry  `json:"results"`
}

func (a *adapter) retainBatch(w http.ResponseWriter, r *http.Request) {
	caller, ok := a.retainCaller(w, r)
	if !ok {
		return
	}
	var req batchRequest
	err := decode(w, r, &req)
	if err == nil && req.SessionIDs == nil {
		err = consent.Errorf(consent.Invalid, "session_ids is required")
	}
	if err != nil {
		a.writeError(w, r, retainStyle, err)
		return
	}
	res, err := a.retain.RetainBatch(r.Context(), caller, r.PathValue("companyId"), *req.SessionIDs)
	if err != nil {
		a.writeError(w, r, retainStyle, err)
		return
	}
	body := batchResponse{
		Success: true, Retained: res.Retained, Failed: res.Failed, TotalCost: res.TotalCost,
		RemainingBalance: res.Balance, Results: make([]batchEntry, len(res.Results)),
	}
	for i, e := range res.Results {
		body.Results[i] = batchEntry{SessionID: e.SessionID, Success: e.Err == nil, Status: e.Status}
		if e.Err != nil {
			body.Results[i].Error = consent.ErrorMessage(e.Err)
		}
	}
	writeJSON(w, http.StatusOK, body)
}

type videoBody struct {
	Bytes    int64   `json:"bytes"`
	SHA256   string  `json:"sha256"`
	Duration float64 `json:"duration_seconds"`
}

type statusResponse struct {
	Success            bool       `json:"success"`
	SessionID          string     `json:"sessionId"`
	RetentionStatus    string     `json:"retention_status"`
	RrwebToVideoStatus string     `json:"rrweb_to_video_status"`
	RetainedUntil      *string    `json:"retained_until"`
	Video              *videoBody `json:"video,omitempty"`
}

// sessionStatus answers where a session stands (D21). Not part of the
// documented contract: an extension with the Retain API's authentication.
func (a *adapter) sessionStatus(w http.ResponseWriter, r *http.Request) {
	caller, ok := a.retainCaller(w, r)
	if !ok {
		return
	}
	ses, err := a.retain.Status(r.Context(), caller, r.PathValue("companyId"), r.PathValue("sessionId"))
	if err != nil {
		a.writeError(w, r, retainStyle, err)
		return
	}
	body := statusResponse{
		Success: true, SessionID: ses.ID, RetentionStatus: string(ses.RetentionStatus),
		RrwebToVideoStatus: string(ses.VideoStatus),
	}
	if ses.RetentionStatus == consent.RetentionRetained {
		body.RetainedUntil = timestamp(ses.ExpiresAt)
	}
	if ses.VideoStatus == consent.VideoConverted {
		body.Video = &videoBody{Bytes: ses.Video.Bytes, SHA256: ses.Video.SHA256.String(), Duration: ses.Video.Duration.Seconds()}
	}
	writeJSON(w, http.StatusOK, body)
}
