// Package httpadapter serves every documented endpoint of consentkit as one
// http.Handler that a host application mounts on its own mux, under any
// prefix, behind its own middleware:
//
//	svc, err := consentkit.NewService(st, consentkit.Config{})
//	h, err := httpadapter.New(httpadapter.Config{Service: svc})
//	mux.Handle("/consent/", http.StripPrefix("/consent", h))
//
// It never registers anything on http.DefaultServeMux.
//
// Routes, with their prices in dollars; every /verify/ path is also served
// under /api (D30):
//
//	POST /verify/match                          exact match, 0.015
//	POST /verify/partial-match                  partial match, 0.015
//	POST /verify/certificate-info               certificate metadata, free
//	POST /verify/session/{company_id}           long-term session retention, 0.10
//	POST /verify/certificate/{company_id}       long-term certificate retention, 0.10
//	POST /opt-out                               revocation, free, no authentication
//	POST /api/integrations/{companyId}/retain/{sessionId}   Retain API, 0.10
//	POST /api/integrations/{companyId}/retain/batch         Retain API batch, 0.10 each
//	GET  /api/integrations/{companyId}/sessions/{sessionId} session status
//	GET  /api/integrations/{companyId}/sessions/{sessionId}/video the MP4 (Config.Videos)
//	GET  /api/integrations/{companyId}/certificates/{certificateId}/screenshot the attestation's PNG (D49)
//	GET  /.well-known/consentkit-keys           the public keys of signed certificates (D41), public
//
// Browser capture (D32–D36), public, for pages of a property's allowed
// origins; Handler.Only(CaptureGroup) serves these alone:
//
//	POST /capture/sessions                      start a recording session, 201
//	POST /capture/sessions/{session_id}/events  one numbered chunk of rrweb events
//	POST /capture/sessions/{session_id}/consent issue the reserved certificate, 201
//	OPTIONS /capture/sessions                   CORS preflight (?property_id=…)
//	OPTIONS /capture/sessions/{session_id}/events  CORS preflight
//	OPTIONS /capture/sessions/{session_id}/consent CORS preflight
//	GET  /capture/capture.js                    the snippet
//	GET  /capture/rrweb.js                      rrweb's recorder (Config.RRWebDir)
//
// The description of the API, public:
//
//	GET  /openapi.json                          the OpenAPI 3.1 document of every route (Handler.OpenAPI)
//
// The operator API (Handler.Operator), a handler of its own that the host
// mounts where only its operators reach it, with "Authorization: Bearer
// <Config.OperatorSecret>"; every change it makes is audited as
// "operator" (D42):
//
//	GET  /operator/metrics                                    Config.Metrics, in the Prometheus text format; 404 without
//	POST /operator/companies                                  create a company with an empty wallet, 201
//	GET  /operator/companies                                  the companies by id (?after=&limit=)
//	GET  /operator/companies/{company_id}                     a company
//	PUT  /operator/companies/{company_id}/attestation         attest every certificate it issues, or not (D49)
//	PUT  /operator/companies/{company_id}/insights-rules      the thresholds of its bot verdict (D50)
//	GET  /operator/companies/{company_id}/profiles            its audit profiles (D51), by name
//	GET  /operator/companies/{company_id}/profiles/{name}     one
//	PUT  /operator/companies/{company_id}/profiles/{name}     create or replace one; the body is its rules
//	DELETE /operator/companies/{company_id}/profiles/{name}   delete one
//	POST /operator/companies/{company_id}/properties          add a property, 201
//	GET  /operator/companies/{company_id}/properties          its properties
//	PUT  /operator/companies/{company_id}/properties/{property_id}/allowed-origins replace the allowed origins (D32)
//	POST /operator/companies/{company_id}/tokens              issue a token (D6), 201; its secret shown once
//	GET  /operator/companies/{company_id}/tokens              its tokens, never their secrets or digests
//	POST /operator/companies/{company_id}/tokens/{token_id}/revoke revoke one
//	POST /operator/companies/{company_id}/wallet/top-ups      credit the wallet (D5), 201; Idempotency-Key required
//	GET  /operator/companies/{company_id}/wallet              the balance
//	GET  /operator/companies/{company_id}/wallet/ledger       the ledger (?since=&until=&before=&limit=)
//	GET  /operator/companies/{company_id}/certificates        its certificates (?since=&until=&before=&limit=)
//	POST /operator/companies/{company_id}/certificates/search a consumer's certificates by email or mobile (D17)
//	GET  /operator/companies/{company_id}/certificates/{certificate_id} one, with its consents and signature
//	GET  /operator/companies/{company_id}/sessions            its sessions (?since=&until=&before=&limit=)
//	GET  /operator/companies/{company_id}/sessions/{session_id} one session
//	GET  /operator/companies/{company_id}/revocations         its revocations (D19) (?since=&until=&before=&limit=)
//	POST /operator/companies/{company_id}/webhooks            add a webhook endpoint (D44), 201; its secret shown once
//	GET  /operator/companies/{company_id}/webhooks            the company's endpoints
//	DELETE /operator/companies/{company_id}/webhooks/{endpoint_id} delete one, with its delivery log
//	POST /operator/companies/{company_id}/webhooks/{endpoint_id}/disable stop deliveries to it
//	POST /operator/companies/{company_id}/webhooks/{endpoint_id}/enable  resume them
//	GET  /operator/companies/{company_id}/webhooks/{endpoint_id}/deliveries its delivery log, newest first (?before=&limit=)
//	GET  /operator/companies/{company_id}/audit               the audit log (?after=&limit=&action=&target=&actor=)
//	GET  /operator/companies/{company_id}/audit/verify        checks a bounded run of its chain (?from=&limit=)
//
// The operator's lists that grow without bound (ledger, certificates,
// sessions, revocations) come newest first, by creation time and then id,
// a page at a time: an answer whose page is full carries next_before, an
// opaque cursor to send as ?before= for the next, older page
// (consent.Page); since and until bound the creation time (RFC 3339). A
// company's data is read only under its own path: another company's
// certificate or session is 404 there (D9). A top-up moves money with no
// charge that a retry could fail on, so it requires an Idempotency-Key
// (D40): a retry with the key is answered with the first answer and
// credits nothing; a top-up without one is refused with 400. Issuing a
// token is not idempotent: its answer holds the secret, which is never
// stored, so it cannot be replayed.
//
// A session whose id is "batch" cannot be retained singly: the batch path
// takes precedence. The last route goes beyond the documented contract, with
// the Retain API's authentication: it answers the session's
// retention_status, rrweb_to_video_status (D21), retained_until and, once
// converted, its video's size, SHA-256 and length. Handler.Routes describes
// every route: method, pattern, authentication, rate limit, price, error
// shape, and request and response types.
//
// # One table, one wrapper
//
// Every route is one entry of the route table (handlers.go) bound to a
// typed function. One wrapper serves them all, in this order: it
// authenticates the caller (401, 403), takes a token from the route's rate
// limiter (429), decodes the JSON body and the path's wildcards into the
// request type (400, 413), calls the function, and writes its response as
// JSON or its error through the one error table (respond.go). Adding a
// route is one entry and one function:
//
//	handle(Route{Method: post, Pattern: "/verify/example", Auth: AuthToken, Limit: VerifyLimit}, h.example),
//
//	type exampleRequest struct {
//		CompanyID string `json:"company_id"`
//	}
//
//	type exampleResponse struct {
//		Valid bool `json:"valid"`
//	}
//
//	func (h *Handler) example(ctx context.Context, c Caller, req *exampleRequest) (*exampleResponse, error) {
//		… // c.CompanyID is the authenticated company; return a consent.Error for a 4xx
//	}
//
// A request field tagged `path:"name"` is read from the pattern's {name}.
// The functions know nothing of HTTP and are tested without it.
//
// # Idempotency keys
//
// A paid or state-changing route is bound with handlePaid instead: its
// function returns the operation's result, and a second function renders
// it, so that the answer can be rendered inside the operation's
// transaction (consentkit.Paid) and stored there with the request's
// Idempotency-Key (D40). A call sent again with the key gets that answer
// byte for byte with Idempotent-Replayed: true; the same key with another
// request (route and decoded body) gets 422; a call whose first attempt is
// still running waits for it, then replays it, or gets 409 past
// consentkit.Config.IdempotencyWait. Successes, 409s and 422s are kept; other
// 4xx answers are not, so a retry after a top-up succeeds.
//
// # OpenAPI
//
// Handler.OpenAPI returns an OpenAPI 3.1 document of every route of
// Handler.Routes, the operator routes included, generated from the route
// table: path and query parameters from the request types' path and query
// tags, request bodies and success answers from their JSON fields (a
// pointer, slice or map that may be nil is nullable, wallet.Amount a
// number, times date-time strings), the security scheme of each route's
// authentication, and every status a route can answer with its error shape
// (a 402 with required and current_balance, a 429 with Retry-After). The
// scripts, the video (with Range, 206 and X-Content-SHA256) and the CORS
// preflights are described with their content types. GET /openapi.json
// serves it, with the relative server URL "." (the root h is mounted at,
// as the client resolves it) and the module's version, else APIVersion, as
// info.version. The tests check it against the table in both directions,
// lint it as served with Redocly CLI's recommended rules (npm ci --prefix
// httpadapter/openapi) and validate real answers against its schemas.
//
// # Authentication
//
// Verification API requests carry "Authorization: Bearer <token>" of the
// company named in the body's company_id (or the path's company_id); a token
// of another company gets 403 (D6, D7). Unknown, expired and revoked tokens
// get the same 401; a missing or malformed header is told what is wrong
// with it. When Config.PropertyCredentials is on, a request without an
// Authorization header may identify itself by company_id and property_id
// instead, which must name a property of that company, else 401 (D8). The
// Retain API needs a token of :companyId with the permission vzew_retention;
// a valid token without it gets 403.
//
// # Errors
//
// The Verification API and opt-out answer {"status":<code>,"error":"<message>"}
// (D14); the Retain API answers {"success":false,"error":"<message>"}; a 402
// adds required and current_balance (D4). Bodies over 1 MiB get 413;
// malformed JSON, a wrong type, or text that is not valid UTF-8 get 400
// naming the field (a wrong type with the kind the field must have, as
// "seq must be an integer" or "consents[].text must be a string"); unknown
// fields are ignored; identifiers must be 1–128 characters of
// [A-Za-z0-9._:-] (D29); text must be valid UTF-8 without C0 control
// characters (U+0000–U+001F) other than tab, line feed and carriage return
// (consent.ValidText), never silently cleaned. An unknown path gets 404 and
// a known path with another method 405 with an Allow header, in the same
// shapes (the Retain API's under /api/integrations/). The Handler treats a
// path that is not in clean form (a trailing slash, "//", "..") as unknown
// and never redirects it; mounted under an http.ServeMux, the mux redirects
// a path with "//" or ".." to its clean form (307) before the Handler sees
// it, and a trailing slash still gets 404. Internal errors are logged with
// log/slog and answered with a generic 500 body. A request whose client
// went away is logged at INFO as cancelled and recorded with status
// 499 (StatusClientClosedRequest), never as a server error.
//
// # Request ids and the audit log
//
// Every answer carries X-Request-Id: the request's own when it sent one that
// is an identifier of at most 64 characters, else a generated one. The
// request id and the actor — the authenticating token's id, or
// "property:<id>" for company-and-property credentials — travel in the
// request's context (consentkit.WithRequestID, consentkit.WithActor) to the audit
// entry that the request's transaction writes (D42), and internal errors are
// logged with the request id.
//
// # Rate limits
//
// Rate limits are token buckets of capacity N refilled at N per minute
// (D20, D28): opt-out 10 per client address, the Retain API 500 per company
// (single and batch together), the other verification endpoints none unless
// configured. A refused request gets 429 with Retry-After. The client
// address is the connection's peer; X-Forwarded-For is read only when the
// peer is a trusted proxy (TrustedProxies.ClientIP), and a peer on a Unix
// socket is one only when configured so. An IPv6 client is keyed by its /64
// (Config.IPv6PrefixBits), since one subscriber commonly holds a whole /64.
// A request whose client address cannot be known is refused (500, logged
// with the fix) rather than keyed by an invalid address.
//
// Each limiter holds at most Config.MaxLimiterKeys keys. A key is forgotten
// only when its bucket is full again, so forgetting never gives back spent
// requests; when the cap is reached and no bucket is full, a new client gets
// 429 until one is. Spraying addresses therefore never lifts anyone's
// limit; a spray from more addresses than the cap, kept up, keeps new
// clients out while it lasts and up to a minute after it stops.
package httpadapter
