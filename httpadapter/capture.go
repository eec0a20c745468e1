package httpadapter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/capture"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/byterange"
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// The capture routes (D32–D36): public, called by the snippet from pages of
// a property's allowed origins.

// preflightMaxAge is how long a browser may reuse a preflight's answer.
const preflightMaxAge = "600"

// cors adds the CORS headers of a capture answer (D32): the request's
// origin is echoed only when it is one the property allows, so a page of
// another origin never reads what the service says. A success means the
// capture service accepted the origin; after an error, the session's
// property is asked, and an error of a start (no session yet) is never
// readable across origins. Nor is a 429: a refusal by a limit or budget
// reads nothing of the store, else a client that ignores Retry-After
// would have the store read at every request all the same (the snippet
// retries a 429 as it retries an answer it cannot read).
func (h *Handler) cors(w http.ResponseWriter, r *http.Request, err error) {
	w.Header().Add("Vary", "Origin")
	origin := r.Header.Get("Origin")
	if origin == "" || errors.Is(err, capture.ErrOrigin) {
		return
	}
	if he := (*httpError)(nil); errors.As(err, &he) && he.status == http.StatusTooManyRequests {
		return
	}
	if err != nil {
		id := r.PathValue("session_id")
		if id == "" {
			return
		}
		if ok, lookupErr := h.capture.AllowsOrigin(r.Context(), id, origin); lookupErr != nil || !ok {
			return
		}
	}
	w.Header().Set("Access-Control-Allow-Origin", origin)
}

// preflight answers a CORS preflight of a capture route: 204 with the
// allowed method and headers when allowed(origin), else 403 without CORS
// headers, so the browser sends nothing.
func (h *Handler) preflight(allowed func(r *http.Request, origin string) (bool, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("Vary", "Origin")
		origin := r.Header.Get("Origin")
		var (
			ok  bool
			err error
		)
		if origin != "" && r.Header.Get("Access-Control-Request-Method") == http.MethodPost {
			ok, err = allowed(r, origin)
		}
		if err != nil {
			h.writeError(w, r, VerifyErrors, err)
			return
		}
		if !ok {
			h.writeError(w, r, VerifyErrors, capture.ErrOrigin)
			return
		}
		hd := w.Header()
		hd.Set("Access-Control-Allow-Origin", origin)
		hd.Set("Access-Control-Allow-Methods", http.MethodPost)
		hd.Set("Access-Control-Allow-Headers", "Authorization, Content-Type")
		hd.Set("Access-Control-Max-Age", preflightMaxAge)
		w.WriteHeader(http.StatusNoContent)
	}
}

// startPreflight allows an origin that the property named by the query's
// property_id lists. The snippet starts sessions with a text/plain body,
// which needs no preflight; this is for clients that send JSON.
func (h *Handler) startPreflight(r *http.Request, origin string) (bool, error) {
	return h.capture.PropertyAllowsOrigin(r.Context(), r.URL.Query().Get("property_id"), origin)
}

func (h *Handler) sessionPreflight(r *http.Request, origin string) (bool, error) {
	return h.capture.AllowsOrigin(r.Context(), r.PathValue("session_id"), origin)
}

type startRequest struct {
	PropertyID string `json:"property_id"`
	URL        string `json:"url"`
}

type startResponse struct {
	SessionID     string `json:"session_id"`
	CertificateID string `json:"certificate_id"`
	UploadToken   string `json:"upload_token"`
}

func (h *Handler) startCapture(ctx context.Context, c Caller, req *startRequest) (*startResponse, error) {
	if err := consent.CheckID("property_id", req.PropertyID); err != nil {
		return nil, err
	}
	start := capture.StartRequest{PropertyID: req.PropertyID, URL: req.URL, Origin: c.Origin}
	if lim := h.limits[capturePropertyLimit]; lim != nil {
		// Taken once the property allows both origins: a page of another
		// origin, answered 403, spends none of the property's starts.
		start.Admit = func(propertyID string) error {
			if wait, err := lim.Allow(propertyID); err != nil {
				return limited(wait)
			}
			return nil
		}
	}
	s, err := h.capture.Start(ctx, start)
	if err != nil {
		return nil, err
	}
	return &startResponse{SessionID: s.SessionID, CertificateID: s.CertificateID, UploadToken: s.UploadToken}, nil
}

type eventsRequest struct {
	SessionID string          `path:"session_id" json:"-"`
	Seq       *int            `json:"seq"`
	Events    json.RawMessage `json:"events"`
	plain     *capture.Chunk  // the chunk decodePlain read
}

// decodePlain reads a chunk in its plain form, its events checked in the
// same pass (capture.ParseChunk).
func (r *eventsRequest) decodePlain(data []byte) bool {
	ch, ok := capture.ParseChunk(data)
	if ok {
		r.plain, r.Seq, r.Events = &ch, &ch.Seq, ch.Events
	}
	return ok
}

type eventsResponse struct {
	// NextSeq is the seq the session expects next.
	NextSeq int `json:"next_seq"`
}

func (h *Handler) appendEvents(ctx context.Context, c Caller, req *eventsRequest) (*eventsResponse, error) {
	if req.Seq == nil {
		return nil, consent.Errorf(consent.Invalid, "seq is required")
	}
	ch := capture.Chunk{Seq: *req.Seq, Events: req.Events}
	if req.plain != nil {
		ch = *req.plain // its events checked already
	}
	ch.SessionID = req.SessionID
	n, err := h.capture.Append(ctx, capture.Caller{UploadToken: c.UploadToken, Origin: c.Origin}, ch)
	if err != nil {
		if pb := (*propertyBudgetError)(nil); errors.As(err, &pb) && h.cfg.Observer != nil {
			h.cfg.Observer.ObserveBudgetRefusal(BudgetProperty)
		}
		return nil, err
	}
	return &eventsResponse{NextSeq: n}, nil
}

// propertyBudgetError is the property's byte budget refusing a chunk's
// events (D52), answered as the 429 it wraps.
type propertyBudgetError struct{ error }

func (e *propertyBudgetError) Unwrap() error { return e.error }

type consentRequest struct {
	SessionID string      `path:"session_id" json:"-"`
	Consents  consentList `json:"consents"`
	Email     string      `json:"email"`
	Mobile    string      `json:"mobile"`
	URL       string      `json:"url"`
	// Visibility is the first consent's, which snippets sent alone before
	// each consent had its own; still accepted, and kept as sent.
	Visibility *consent.Visibility `json:"visibility"`
	// Seq and Events, when given, are the session's last chunk, stored with
	// the consent (capture.Consent.Tail).
	Seq    *int            `json:"seq"`
	Events json.RawMessage `json:"events"`
}

// consentItem is one consent of a consent request.
type consentItem struct {
	Text  string   `json:"text"`
	Types []string `json:"types"`
	// Visibility and OptInMethod are what the snippet measured of this
	// consent (D47, D48); snippets cached before sent neither.
	Visibility  *consent.Visibility `json:"visibility"`
	OptInMethod string              `json:"opt_in_method"`
	// NodeID is the recorder's id of the consent's element, by which a
	// replay finds it.
	NodeID int `json:"node_id"`
}

// consentList is the consents of a consent request: a list longer than
// consentkit.MaxRecords is refused as it is read, so that a body of "{},"
// items does not cost a hundred times its size in memory.
type consentList []consentItem

func (l *consentList) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	switch dec.PeekKind() {
	case 'n':
		_, err := dec.ReadToken()
		*l = nil
		return err
	case '[':
	default: // the general decoder says what is wrong
		return jsonv2.UnmarshalDecode(dec, (*[]consentItem)(l))
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	out := consentList{}
	for dec.PeekKind() != ']' {
		if len(out) == consentkit.MaxRecords {
			return consentkit.ErrTooManyRecords
		}
		var item consentItem
		if err := jsonv2.UnmarshalDecode(dec, &item); err != nil {
			return err
		}
		out = append(out, item)
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	*l = out
	return nil
}

type consentResponse struct {
	CertificateID    string   `json:"certificate_id"`
	CreatedTimestamp *RFC3339 `json:"created_timestamp"`
}

func (h *Handler) giveConsent(ctx context.Context, c Caller, req *consentRequest) (*consentResponse, error) {
	in := capture.Consent{
		SessionID: req.SessionID, Email: req.Email, Mobile: req.Mobile, URL: req.URL, Visibility: req.Visibility,
		UserAgent: c.UserAgent,
	}
	if c.ClientIP.IsValid() {
		in.ClientIP = c.ClientIP.String()
	}
	for _, r := range req.Consents {
		in.Records = append(in.Records, consent.Record{Text: r.Text, Types: r.Types, Visibility: r.Visibility, OptInMethod: r.OptInMethod, NodeID: r.NodeID})
	}
	switch {
	case req.Seq != nil && len(req.Events) > 0:
		in.Tail = &capture.Chunk{Seq: *req.Seq, Events: req.Events}
	case req.Seq != nil || len(req.Events) > 0:
		return nil, consent.Errorf(consent.Invalid, "seq and events go together")
	}
	cert, err := h.capture.Issue(ctx, capture.Caller{UploadToken: c.UploadToken, Origin: c.Origin}, in)
	if err != nil {
		return nil, err
	}
	return &consentResponse{CertificateID: cert.ID, CreatedTimestamp: timestamp(cert.CreatedAt)}, nil
}

// script serves a JavaScript file that pages load from other origins.
func script(w http.ResponseWriter, r *http.Request, body []byte, modified time.Time) {
	hd := w.Header()
	hd.Set("Content-Type", "text/javascript; charset=utf-8")
	hd.Set("Cache-Control", "public, max-age=300")
	hd.Set("Access-Control-Allow-Origin", "*")
	hd.Set("X-Content-Type-Options", "nosniff")
	byterange.ServeContent(w, r, "", modified, bytes.NewReader(body))
}

// missingRecorderLogEvery is how often a missing recorder is logged: the
// pages of a form load it on every view, and each must not add a line.
const missingRecorderLogEvery = time.Minute

// logMissingRecorder logs that the recorder is not installed, at most once
// every missingRecorderLogEvery.
func (h *Handler) logMissingRecorder(r *http.Request, err error) {
	now, last := h.svc.Now().UnixNano(), h.recorderLogged.Load()
	if last != 0 && now-last < int64(missingRecorderLogEvery) || !h.recorderLogged.CompareAndSwap(last, now) {
		return
	}
	h.log.ErrorContext(r.Context(), "consentkit: rrweb's recorder is not installed: run "+capture.RecorderInstall,
		"file", h.rrweb.Path(), "err", err)
}

// started is when this process started: the Last-Modified of the scripts
// it serves, which change only with the binary or the npm install.
var started = time.Now()

func (h *Handler) snippet(w http.ResponseWriter, r *http.Request) {
	script(w, r, capture.Snippet, started)
}

func (h *Handler) recorder(w http.ResponseWriter, r *http.Request) {
	body, modified, err := h.rrweb.Script()
	if err != nil {
		// Looked for again at the next request: a bundle installed while
		// the server runs is served without a restart.
		h.logMissingRecorder(r, err)
		h.writeError(w, r, VerifyErrors, &httpError{status: http.StatusServiceUnavailable,
			msg: "the session recorder is not installed on this server: run " + capture.RecorderInstall})
		return
	}
	script(w, r, body, modified)
}
