package httpadapter

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/insights"
	"github.com/consentkit/consentkit/internal/byterange"
	"github.com/consentkit/consentkit/optout"
	"github.com/consentkit/consentkit/profile"
	"github.com/consentkit/consentkit/retain"
	"github.com/consentkit/consentkit/signed"
	"github.com/consentkit/consentkit/verify"
	"github.com/consentkit/consentkit/wallet"
)

// table is the route table: one entry per route, each bound to its typed
// function below.
func (h *Handler) table() []*route {
	const post, get, options = http.MethodPost, http.MethodGet, http.MethodOptions
	var rs []*route
	for _, p := range []string{"", "/api"} { // both spellings (D30)
		rs = append(rs,
			handlePaid(Route{Method: post, Pattern: p + "/verify/match", Group: VerifyGroup, Auth: AuthToken, Limit: VerifyLimit, Price: wallet.ExactMatch}, h.match, matchAnswer),
			handlePaid(Route{Method: post, Pattern: p + "/verify/partial-match", Group: VerifyGroup, Auth: AuthToken, Limit: VerifyLimit, Price: wallet.PartialMatch}, h.partialMatch, partialMatchAnswer),
			handlePaid(Route{Method: post, Pattern: p + "/verify/certificate-info", Group: VerifyGroup, Auth: AuthToken, Limit: VerifyLimit, Price: wallet.CertificateInfo}, h.certificateInfo, infoAnswer),
			handlePaid(Route{Method: post, Pattern: p + "/verify/session/{company_id}", Group: VerifyGroup, Auth: AuthToken, Limit: VerifyLimit, Price: wallet.SessionRetention}, h.retainSession, retention),
			handlePaid(Route{Method: post, Pattern: p + "/verify/certificate/{company_id}", Group: VerifyGroup, Auth: AuthToken, Limit: VerifyLimit, Price: wallet.CertificateRetention}, h.retainCertificate, certificateRetention),
		)
	}
	return append(append(rs,
		handlePaid(Route{Method: post, Pattern: "/opt-out", Group: OptOutGroup, Auth: AuthNone, Limit: OptOutLimit}, h.optOut, optOutAnswer),
		handlePaid(Route{Method: post, Pattern: "/api/integrations/{companyId}/retain/{sessionId}", Group: RetainGroup, Auth: AuthRetention, Limit: RetainLimit, Price: wallet.RetainSingle, Errors: RetainErrors}, h.retainOne, retainAnswer),
		handlePaid(Route{Method: post, Pattern: "/api/integrations/{companyId}/retain/batch", Group: RetainGroup, Auth: AuthRetention, Limit: RetainLimit, Price: wallet.RetainBatch, Errors: RetainErrors}, h.retainBatch, batchAnswer),
		// Reads spend none of the retentions' budget (D28): a client that
		// polls a conversion, or plays a video in ranges, can still retain.
		handle(Route{Method: get, Pattern: "/api/integrations/{companyId}/sessions/{sessionId}", Group: RetainGroup, Auth: AuthRetention, Errors: RetainErrors}, h.sessionStatus),
		handle(Route{Method: get, Pattern: "/api/integrations/{companyId}/sessions/{sessionId}/video", Group: RetainGroup, Auth: AuthRetention, Errors: RetainErrors, ContentType: "video/mp4"}, h.video),
		handle(Route{Method: get, Pattern: "/api/integrations/{companyId}/certificates/{certificateId}/screenshot", Group: RetainGroup, Auth: AuthRetention, Errors: RetainErrors, ContentType: "image/png"}, h.screenshot),

		// Browser capture (D32–D36).
		handle(Route{Method: post, Pattern: "/capture/sessions", Group: CaptureGroup, Auth: AuthNone, Limit: CaptureStartLimit, CORS: true, Status: http.StatusCreated}, h.startCapture),
		handle(Route{Method: post, Pattern: "/capture/sessions/{session_id}/events", Group: CaptureGroup, Auth: AuthUpload, Limit: CaptureLimit, CORS: true, MaxBody: h.captureBodyBytes()}, h.appendEvents),
		handle(Route{Method: post, Pattern: "/capture/sessions/{session_id}/consent", Group: CaptureGroup, Auth: AuthUpload, Limit: CaptureLimit, CORS: true, Status: http.StatusCreated, MaxBody: h.captureBodyBytes() + MaxBodyBytes}, h.giveConsent),
		handleRaw(Route{Method: options, Pattern: "/capture/sessions", Group: CaptureGroup, Limit: CaptureLimit, CORS: true, Status: http.StatusNoContent}, h.preflight(h.startPreflight)),
		handleRaw(Route{Method: options, Pattern: "/capture/sessions/{session_id}/events", Group: CaptureGroup, Limit: CaptureLimit, CORS: true, Status: http.StatusNoContent}, h.preflight(h.sessionPreflight)),
		handleRaw(Route{Method: options, Pattern: "/capture/sessions/{session_id}/consent", Group: CaptureGroup, Limit: CaptureLimit, CORS: true, Status: http.StatusNoContent}, h.preflight(h.sessionPreflight)),
		handleRaw(Route{Method: get, Pattern: "/capture/capture.js", Group: CaptureGroup, ContentType: "text/javascript"}, h.snippet),
		handleRaw(Route{Method: get, Pattern: "/capture/rrweb.js", Group: CaptureGroup, ContentType: "text/javascript"}, h.recorder),

		// The public keys of signed certificates (D41).
		handle(Route{Method: get, Pattern: "/.well-known/consentkit-keys", Group: VerifyGroup, Auth: AuthNone}, h.keys),

		// The OpenAPI document of this table (openapi.go).
		handle(Route{Method: get, Pattern: "/openapi.json", Group: DocGroup, Auth: AuthNone}, h.openAPI),
	), h.operatorRoutes()...)
}

type keysRequest struct{}

// keys publishes the public keys that verify certificates here
// (Service.PublishedKeys: the signing key first, then the other keys the
// service was given, and with Config.TrustPublishedKeys those of the other
// instances sharing the store; D41), so that anyone can check a
// certificate offline.
func (h *Handler) keys(ctx context.Context, _ Caller, _ *keysRequest) (*signed.KeySet, error) {
	keys, err := h.svc.PublishedKeys(ctx)
	if err != nil {
		return nil, err
	}
	ks := signed.Publish(keys)
	return &ks, nil
}

// captureBodyBytes is the largest body of a chunk of events: the service's
// chunk limit and room for the JSON around it. A chunk over the limit with
// a body under this is refused by the service with the same 413.
func (h *Handler) captureBodyBytes() int64 {
	return int64(h.svc.MaxChunkBytes()) + 4096
}

type matchRequest struct {
	CertificateID       string `json:"certificate_id"`
	CompanyID           string `json:"company_id"`
	Consent             string `json:"consent"`
	OriginatorCompanyID string `json:"originator_company_id"`
	PropertyID          string `json:"property_id"`
	Email               string `json:"email"`    // optional lead matching (D38)
	Mobile              string `json:"mobile"`   // likewise
	Attest              bool   `json:"attest"`   // optional: ask for the attestation (D49)
	Insights            bool   `json:"insights"` // optional: ask for the bot verdict (D50)
	Profile             string `json:"profile"`  // optional: the caller's audit profile to grade by (D51)
}

func (r *matchRequest) credentials() (string, string) { return r.CompanyID, r.PropertyID }

type matchResponse struct {
	Valid            bool     `json:"valid"`
	ConsentOptIn     *RFC3339 `json:"consent_opt_in"`
	Origin           string   `json:"origin"`
	ConsentTypes     []string `json:"consent_types"`
	VerificationType string   `json:"verification_type"`
	EmailMatched     *bool    `json:"email_matched,omitempty"`
	MobileMatched    *bool    `json:"mobile_matched,omitempty"`
	// RevokedBefore: the consumer had opted out before this consent.
	RevokedBefore *RFC3339 `json:"revoked_before,omitempty"`
	// Attestation: where the certificate's attestation stands (D49).
	Attestation *attestationStatus `json:"attestation,omitempty"`
	// Insights: the certificate's bot verdict, when asked for (D50).
	Insights *insightsStatus `json:"insights,omitempty"`
	// Audit: the certificate's grade by the profile asked for (D51).
	Audit *profile.Graded `json:"audit,omitempty"`
}

// insightsStatus is a certificate's bot verdict in a match answer: its
// status, and once computed the verdict at the verification (human,
// suspect or bot) with the code of every reason that led to it, and which
// of them were found then rather than signed at issue.
type insightsStatus struct {
	Status       string   `json:"status"`
	Verdict      string   `json:"verdict,omitempty"`
	Reasons      []string `json:"reasons"`
	AskedReasons []string `json:"asked_reasons"`
}

func insightsOf(in *verify.Insights) *insightsStatus {
	if in == nil {
		return nil
	}
	return &insightsStatus{Status: in.Status, Verdict: in.Verdict, Reasons: in.Reasons, AskedReasons: in.AskedReasons}
}

// attestationStatus is a certificate's attestation in a match answer.
type attestationStatus struct {
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
}

func attestationOf(a *verify.Attestation) *attestationStatus {
	if a == nil {
		return nil
	}
	return &attestationStatus{Status: a.Status, Reason: a.Reason}
}

func (h *Handler) match(ctx context.Context, c Caller, req *matchRequest) (*verify.Result, error) {
	return h.verify.Match(ctx, c.CompanyID, verify.MatchRequest{
		CertificateID: req.CertificateID, CompanyID: req.CompanyID, Consent: req.Consent,
		OriginatorCompanyID: req.OriginatorCompanyID, PropertyID: req.PropertyID,
		Lead: verify.Lead{Email: req.Email, Mobile: req.Mobile}, Attest: req.Attest, Insights: req.Insights,
		Profile: req.Profile,
	})
}

func matchAnswer(res *verify.Result) *matchResponse {
	return &matchResponse{
		Valid: res.Valid, ConsentOptIn: timestamp(res.ConsentOptIn), Origin: res.Origin,
		ConsentTypes: res.ConsentTypes, VerificationType: res.VerificationType,
		EmailMatched: res.EmailMatched, MobileMatched: res.MobileMatched, RevokedBefore: timestamp(res.RevokedBefore),
		Attestation: attestationOf(res.Attestation), Insights: insightsOf(res.Insights), Audit: res.Audit,
	}
}

type partialMatchRequest struct {
	CertificateID       string `json:"certificate_id"`
	CompanyID           string `json:"company_id"`
	Term                string `json:"term"`
	OriginatorCompanyID string `json:"originator_company_id"`
	PropertyID          string `json:"property_id"`
	Email               string `json:"email"`    // optional lead matching (D38)
	Mobile              string `json:"mobile"`   // likewise
	Attest              bool   `json:"attest"`   // optional: ask for the attestation (D49)
	Insights            bool   `json:"insights"` // optional: ask for the bot verdict (D50)
	Profile             string `json:"profile"`  // optional: the caller's audit profile to grade by (D51)
}

func (r *partialMatchRequest) credentials() (string, string) { return r.CompanyID, r.PropertyID }

type partialMatchResponse struct {
	Valid            bool               `json:"valid"`
	ConsentOptIn     *RFC3339           `json:"consent_opt_in"`
	Origin           string             `json:"origin"`
	VerificationType string             `json:"verification_type"`
	EmailMatched     *bool              `json:"email_matched,omitempty"`
	MobileMatched    *bool              `json:"mobile_matched,omitempty"`
	RevokedBefore    *RFC3339           `json:"revoked_before,omitempty"`
	Attestation      *attestationStatus `json:"attestation,omitempty"`
	Insights         *insightsStatus    `json:"insights,omitempty"`
	Audit            *profile.Graded    `json:"audit,omitempty"`
}

func (h *Handler) partialMatch(ctx context.Context, c Caller, req *partialMatchRequest) (*verify.Result, error) {
	return h.verify.PartialMatch(ctx, c.CompanyID, verify.PartialMatchRequest{
		CertificateID: req.CertificateID, CompanyID: req.CompanyID, Term: req.Term,
		OriginatorCompanyID: req.OriginatorCompanyID, PropertyID: req.PropertyID,
		Lead: verify.Lead{Email: req.Email, Mobile: req.Mobile}, Attest: req.Attest, Insights: req.Insights,
		Profile: req.Profile,
	})
}

func partialMatchAnswer(res *verify.Result) *partialMatchResponse {
	return &partialMatchResponse{
		Valid: res.Valid, ConsentOptIn: timestamp(res.ConsentOptIn), Origin: res.Origin,
		VerificationType: res.VerificationType, EmailMatched: res.EmailMatched, MobileMatched: res.MobileMatched,
		RevokedBefore: timestamp(res.RevokedBefore), Attestation: attestationOf(res.Attestation),
		Insights: insightsOf(res.Insights), Audit: res.Audit,
	}
}

type infoRequest struct {
	CertificateID string `json:"certificate_id"`
	CompanyID     string `json:"company_id"`
	PropertyID    string `json:"property_id"`
}

func (r *infoRequest) credentials() (string, string) { return r.CompanyID, r.PropertyID }

type infoResponse struct {
	Valid            bool            `json:"valid"`
	CertificateID    string          `json:"certificate_id"`
	CreatedTimestamp *RFC3339        `json:"created_timestamp"`
	HasConsents      bool            `json:"has_consents"`
	ConsentCount     int             `json:"consent_count"`
	EventsCombined   json.RawMessage `json:"events_combined"`
	// Beyond the documented fields: what a buyer of the lead needs (D35,
	// D37). The browser's facts are there for captured certificates only.
	SessionID       string   `json:"session_id"`
	Origin          string   `json:"origin"`
	ConsentOptIn    *RFC3339 `json:"consent_opt_in"`
	ConsentTypes    []string `json:"consent_types"`
	ClientIP        string   `json:"client_ip,omitempty"`
	UserAgent       string   `json:"user_agent,omitempty"`
	RecordingSHA256 string   `json:"recording_sha256,omitempty"`
	// ConsentVisibility is the first consent's visibility, kept for
	// integrations written before each consent had its own (Consents).
	ConsentVisibility *consent.Visibility `json:"consent_visibility,omitempty"`
	Consents          []consentAnswer     `json:"consents"`
	RevokedBefore     *RFC3339            `json:"revoked_before,omitempty"`
	// The certificate's signature (D41): "signature", "key_id" and
	// "signed", as cmd/consentkit-verify reads them.
	signed.Proof
	// Attestation: the certificate's attestation and its signed statement
	// (D49), which cmd/consentkit-verify checks too.
	Attestation *signed.AttestationAnswer `json:"attestation,omitempty"`
	// Insights: the certificate's behaviour signals and bot verdict, and
	// their signed statement (D50), which an offline check verifies.
	Insights *signed.InsightsAnswer `json:"insights,omitempty"`
}

// insightsAnswerOf is in's answer with what asked found
// (signed.InsightsAnswer); nil for none. A statement that cannot be read
// (a changed row) is left out, as an attestation's is.
func insightsAnswerOf(in *consent.Insights, asked *insights.Asked) *signed.InsightsAnswer {
	if in == nil || asked == nil {
		return nil
	}
	a := &signed.InsightsAnswer{Status: in.Status, LeadAgeSeconds: &asked.LeadAgeSeconds, Velocity: &asked.Velocity}
	if at := timestamp(asked.At); at != nil {
		a.AskedAt = string(*at)
	}
	p, err := in.Proof()
	if err != nil || p == nil || asked.Bot == nil {
		return a
	}
	a.Bot = &signed.AskedBot{Verdict: string(asked.Bot.Verdict), Reasons: insights.Codes(asked.Bot.Reasons), AskedReasons: insights.Codes(asked.AskedReasons)}
	a.InsightsSignals, a.InsightsProof = &p.Statement.Signals, p
	return a
}

// attestationAnswerOf is a's answer; nil for none. a was checked
// (consentkit.Service.CheckAttestation, in verify.CertificateInfo): its
// status is pending with no statement, or its signed statement's, which
// the answer shows; a changed row never gets here, certificate-info
// refuses it.
func attestationAnswerOf(a *consent.Attestation) *signed.AttestationAnswer {
	if a == nil {
		return nil
	}
	p, err := a.Proof()
	if err != nil || p == nil {
		return &signed.AttestationAnswer{Status: a.Status}
	}
	return &signed.AttestationAnswer{Status: p.Statement.Status, Reason: p.Statement.Reason, ScreenshotSHA256: p.Statement.ScreenshotSHA256,
		Differences: p.Statement.Differences, StatementProof: p}
}

// consentAnswer is one consent of a certificate-info answer: the text as
// the consumer could read it, its types and opt-in time, and what the
// snippet measured of it (D47, D48).
type consentAnswer struct {
	Text        string              `json:"text"`
	Types       []string            `json:"types"`
	OptIn       *RFC3339            `json:"opt_in"`
	OptInMethod string              `json:"opt_in_method,omitempty"`
	Visibility  *consent.Visibility `json:"visibility,omitempty"`
}

func (h *Handler) certificateInfo(ctx context.Context, c Caller, req *infoRequest) (*verify.Info, error) {
	return h.verify.CertificateInfo(ctx, c.CompanyID, verify.InfoRequest{
		CertificateID: req.CertificateID, CompanyID: req.CompanyID, PropertyID: req.PropertyID,
	})
}

func infoAnswer(info *verify.Info) *infoResponse {
	resp := &infoResponse{
		Valid: true, CertificateID: info.CertificateID, CreatedTimestamp: timestamp(info.CreatedAt),
		HasConsents: info.ConsentCount > 0, ConsentCount: info.ConsentCount, EventsCombined: info.EventsCombined,
		SessionID: info.SessionID, Origin: info.Origin, ConsentOptIn: timestamp(info.ConsentOptIn),
		ConsentTypes: info.ConsentTypes, ClientIP: info.ClientIP, UserAgent: info.UserAgent,
		RecordingSHA256: hexDigest(info.RecordingSHA256), ConsentVisibility: info.Visibility,
		Consents: make([]consentAnswer, len(info.Records)), RevokedBefore: timestamp(info.RevokedBefore),
	}
	for i, r := range info.Records {
		types := r.Types
		if types == nil {
			types = []string{}
		}
		resp.Consents[i] = consentAnswer{Text: r.Text, Types: types, OptIn: timestamp(r.OptInAt), OptInMethod: r.OptInMethod, Visibility: r.Visibility}
		if resp.ConsentVisibility == nil && i == 0 {
			resp.ConsentVisibility = r.Visibility
		}
	}
	resp.Attestation = attestationAnswerOf(info.Attestation)
	resp.Insights = insightsAnswerOf(info.Insights, info.InsightsAsked)
	if len(info.Signature) > 0 {
		resp.Proof = signed.Proof{Signature: signed.EncodeSignature(info.Signature), KeyID: info.KeyID, Signed: &info.Signed}
	}
	return resp
}

// hexDigest is d in hex, or "" for none.
func hexDigest(d consent.Digest) string {
	if d.IsZero() {
		return ""
	}
	return d.String()
}

type sessionRequest struct {
	CompanyID  string `path:"company_id" json:"-"`
	SessionID  string `json:"session_id"`
	PropertyID string `json:"property_id"` // company-and-property credentials; with a token, 404 unless the company's (D8)
}

func (r *sessionRequest) credentials() (string, string) { return r.CompanyID, r.PropertyID }

type retentionResponse struct {
	Success          bool          `json:"success"`
	SessionID        string        `json:"session_id"`
	RetentionStatus  string        `json:"retention_status"`
	RetainedUntil    *RFC3339      `json:"retained_until"`
	CostCharged      wallet.Amount `json:"cost_charged"`
	RemainingBalance wallet.Amount `json:"remaining_balance"`
}

func retention(r *retain.Retention) *retentionResponse {
	return &retentionResponse{
		Success: true, SessionID: r.SessionID, RetentionStatus: string(r.RetentionStatus),
		RetainedUntil: timestamp(r.RetainedUntil), CostCharged: r.Charged, RemainingBalance: r.Balance,
	}
}

func (h *Handler) retainSession(ctx context.Context, c Caller, req *sessionRequest) (*retain.Retention, error) {
	if err := h.tokenProperty(ctx, c, req.PropertyID); err != nil {
		return nil, err
	}
	return h.retain.RetainSession(ctx, c.CompanyID, req.CompanyID, req.SessionID)
}

// tokenProperty answers 404 when a request authenticated by its token
// names a property_id that is not its company's (D8), as the verification
// routes do in their own transaction. With company-and-property
// credentials the pair was the login. A property never changes company,
// so a read of its own is as good as one in the retention's transaction;
// it is the caller's company's that is asked after, not the path's, so
// that nobody learns whose another property is.
func (h *Handler) tokenProperty(ctx context.Context, c Caller, propertyID string) error {
	if c.Token == nil || propertyID == "" {
		return nil
	}
	return h.svc.Store().View(ctx, func(tx consent.Tx) error { return consent.CheckProperty(ctx, tx, c.CompanyID, propertyID) })
}

type certificateRetentionResponse struct {
	retentionResponse
	CertificateIDs []string `json:"certificate_ids"`
}

func (h *Handler) retainCertificate(ctx context.Context, c Caller, req *sessionRequest) (*retain.Retention, error) {
	if err := h.tokenProperty(ctx, c, req.PropertyID); err != nil {
		return nil, err
	}
	return h.retain.RetainCertificates(ctx, c.CompanyID, req.CompanyID, req.SessionID)
}

func certificateRetention(res *retain.Retention) *certificateRetentionResponse {
	return &certificateRetentionResponse{retentionResponse: *retention(res), CertificateIDs: res.CertificateIDs}
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
	Timestamp    *RFC3339 `json:"timestamp"`
}

// company makes an opt-out's idempotency key the client's and the
// company's (D40).
func (r *optOutRequest) company() string { return r.CompanyID }

func (h *Handler) optOut(ctx context.Context, c Caller, req *optOutRequest) (*optout.Result, error) {
	// Refused before the opt-out is looked up under its Idempotency-Key,
	// so nothing is kept in the scope of an unknown address either.
	if err := h.knownClient(ctx, c, "route", "POST /opt-out"); err != nil {
		return nil, err
	}
	return h.optout.OptOut(ctx, optout.Request{
		CompanyID: req.CompanyID, CertificateID: req.CertificateID, Email: req.Email, Mobile: req.Mobile,
		Reason: req.Reason, ClientIP: c.ClientIP.String(),
	})
}

func optOutAnswer(res *optout.Result) *optOutResponse {
	return &optOutResponse{
		Success: true, Revoked: len(res.CertificateIDs), Certificates: res.CertificateIDs,
		Timestamp: timestamp(res.Timestamp),
	}
}

type retainRequest struct {
	CompanyID string `path:"companyId" json:"-"`
	SessionID string `path:"sessionId" json:"-"`
}

type retainResponse struct {
	Success          bool          `json:"success"`
	SessionID        string        `json:"sessionId"`
	Status           string        `json:"status"`
	CostCharged      wallet.Amount `json:"cost_charged"`
	RemainingBalance wallet.Amount `json:"remaining_balance"`
}

func (h *Handler) retainOne(ctx context.Context, c Caller, req *retainRequest) (*retain.Retention, error) {
	return h.retain.Retain(ctx, c.CompanyID, req.CompanyID, req.SessionID)
}

func retainAnswer(res *retain.Retention) *retainResponse {
	return &retainResponse{
		Success: true, SessionID: res.SessionID, Status: res.Status,
		CostCharged: res.Charged, RemainingBalance: res.Balance,
	}
}

type batchRequest struct {
	CompanyID  string    `path:"companyId" json:"-"`
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

func (h *Handler) retainBatch(ctx context.Context, c Caller, req *batchRequest) (*retain.BatchResult, error) {
	if req.SessionIDs == nil {
		return nil, consent.Errorf(consent.Invalid, "session_ids is required")
	}
	return h.retain.RetainBatch(ctx, c.CompanyID, req.CompanyID, *req.SessionIDs)
}

func batchAnswer(res *retain.BatchResult) *batchResponse {
	body := &batchResponse{
		Success: true, Retained: res.Retained, Failed: res.Failed, TotalCost: res.TotalCost,
		RemainingBalance: res.Balance, Results: make([]batchEntry, len(res.Results)),
	}
	for i, e := range res.Results {
		body.Results[i] = batchEntry{SessionID: e.SessionID, Success: e.Err == nil, Status: e.Status}
		if e.Err != nil {
			body.Results[i].Error = consent.ErrorMessage(e.Err)
		}
	}
	return body
}

type statusRequest struct {
	CompanyID string `path:"companyId" json:"-"`
	SessionID string `path:"sessionId" json:"-"`
}

type videoBody struct {
	Bytes    int64   `json:"bytes"`
	SHA256   string  `json:"sha256"`
	Duration float64 `json:"duration_seconds"` // to the millisecond, as stored
}

type statusResponse struct {
	Success            bool       `json:"success"`
	SessionID          string     `json:"sessionId"`
	RetentionStatus    string     `json:"retention_status"`
	RrwebToVideoStatus string     `json:"rrweb_to_video_status"`
	RetainedUntil      *RFC3339   `json:"retained_until"`
	Video              *videoBody `json:"video,omitempty"`
}

// sessionStatus answers where a session stands (D21). Not part of the
// documented contract: an extension with the Retain API's authentication.
func (h *Handler) sessionStatus(ctx context.Context, c Caller, req *statusRequest) (*statusResponse, error) {
	ses, err := h.retain.Status(ctx, c.CompanyID, req.CompanyID, req.SessionID)
	if err != nil {
		return nil, err
	}
	body := &statusResponse{
		Success: true, SessionID: ses.ID, RetentionStatus: string(ses.RetentionStatus),
		RrwebToVideoStatus: string(ses.VideoStatus),
	}
	if ses.RetentionStatus == consent.RetentionRetained {
		body.RetainedUntil = timestamp(ses.ExpiresAt)
	}
	if ses.VideoStatus == consent.VideoConverted {
		body.Video = &videoBody{Bytes: ses.Video.Bytes, SHA256: ses.Video.SHA256.String(), Duration: float64(ses.Video.Duration.Milliseconds()) / 1000}
	}
	return body, nil
}

// videoResponse streams a session's MP4, or an attestation's PNG.
type videoResponse struct {
	file        io.ReadSeekCloser
	video       consent.Video
	name        string // the file's name: <session>.mp4, <certificate>.png
	contentType string
}

// stream answers with the video, Range requests included (serveContent):
// ETag and X-Content-SHA256 are its SHA-256, so a client can check what it
// got.
func (v *videoResponse) stream(w http.ResponseWriter, r *http.Request) {
	defer func() { _ = v.file.Close() }() // read only: its Close loses nothing
	sum := v.video.SHA256.String()
	hd := w.Header()
	hd.Set("Content-Type", v.contentType)
	hd.Set("Cache-Control", "private, no-cache")
	hd.Set("ETag", `"`+sum+`"`)
	hd.Set("X-Content-SHA256", sum)
	byterange.ServeContent(w, r, v.name, time.Time{}, v.file)
}

// video serves the session's converted MP4 (D45), with the Retain API's
// authentication. Not part of the documented contract.
func (h *Handler) video(ctx context.Context, c Caller, req *statusRequest) (*videoResponse, error) {
	ses, err := h.retain.Video(ctx, c.CompanyID, req.CompanyID, req.SessionID)
	if err != nil {
		return nil, err
	}
	if h.cfg.Videos == nil {
		return nil, &httpError{status: http.StatusServiceUnavailable, msg: "videos are not served here (httpadapter.Config.Videos is not set)"}
	}
	f, err := h.cfg.Videos.Open(ctx, ses.Video)
	if err != nil {
		return nil, fmt.Errorf("open the video of session %s: %w", ses.ID, err)
	}
	return &videoResponse{file: f, video: ses.Video, name: ses.ID + ".mp4", contentType: "video/mp4"}, nil
}

type screenshotRequest struct {
	CompanyID     string `path:"companyId" json:"-"`
	CertificateID string `path:"certificateId" json:"-"`
}

// screenshot serves the PNG of the viewport at a certificate's consent
// moment that its attestation took (D49), with the Retain API's
// authentication: only to the certificate's company. ETag and
// X-Content-SHA256 are its SHA-256, as the signed statement states it. Not
// part of the documented contract.
func (h *Handler) screenshot(ctx context.Context, c Caller, req *screenshotRequest) (*videoResponse, error) {
	a, err := h.retain.Screenshot(ctx, c.CompanyID, req.CompanyID, req.CertificateID)
	if err != nil {
		return nil, err
	}
	if h.cfg.Videos == nil {
		return nil, &httpError{status: http.StatusServiceUnavailable, msg: "screenshots are not served here (httpadapter.Config.Videos is not set)"}
	}
	v := a.ScreenshotFile()
	f, err := h.cfg.Videos.Open(ctx, v)
	if err != nil {
		return nil, fmt.Errorf("open the screenshot of certificate %s: %w", a.CertificateID, err)
	}
	return &videoResponse{file: f, video: v, name: a.CertificateID + ".png", contentType: "image/png"}, nil
}
