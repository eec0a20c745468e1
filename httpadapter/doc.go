// Package httpadapter serves every documented endpoint of consentkit as one
// http.Handler that a host application mounts on its own mux, under any
// prefix, behind its own middleware:
//
//	h, err := httpadapter.New(httpadapter.Config{Store: st})
//	mux.Handle("/consent/", http.StripPrefix("/consent", h))
//
// It never registers anything on http.DefaultServeMux.
//
// Endpoints (service.md §4); every /verify/ path is also served under /api
// (D30):
//
//	POST /verify/match                          exact match, 0.015
//	POST /verify/partial-match                  partial match, 0.015
//	POST /verify/certificate-info               certificate metadata, free
//	POST /verify/session/{company_id}           long-term session retention, 0.10
//	POST /verify/certificate/{company_id}       long-term certificate retention, 0.10
//	POST /opt-out                               revocation, free, no authentication
//	POST /api/integrations/{companyId}/retain/{sessionId}   Retain API, 0.10
//	POST /api/integrations/{companyId}/retain/batch         Retain API batch, 0.10 each
//
// A session whose id is "batch" cannot be retained singly: the batch path
// takes precedence.
//
// One route goes beyond the documented contract, with the Retain API's
// authentication: GET /api/integrations/{companyId}/sessions/{sessionId}
// answers the session's retention_status, rrweb_to_video_status (D21),
// retained_until and, once converted, its video's size, SHA-256 and length.
//
// Authentication: Verification API requests carry "Authorization: Bearer
// <token>" of the company named in the body's company_id (or the path's
// company_id); a token of another company gets 403 (D6, D7). When
// Config.PropertyCredentials is on, a request without an Authorization
// header may identify itself by company_id and property_id instead, which
// must name a property of that company, else 401 (D8). The Retain API
// needs a token of :companyId with the permission vzew_retention; a valid
// token without it gets 403.
//
// Errors: the Verification API and opt-out answer
// {"status":<code>,"error":"<message>"} (D14); the Retain API answers
// {"success":false,"error":"<message>"}; a 402 adds required and
// current_balance (D4). Bodies over 1 MiB get 413, malformed JSON or a wrong
// type 400 naming the field, unknown fields are ignored, and identifiers
// must be 1–128 characters of [A-Za-z0-9._:-] (D29). Internal errors are
// logged with log/slog and answered with a generic 500 body.
//
// Rate limits are token buckets of capacity N refilled at N per minute
// (D20, D28): opt-out 10 per client IP, the Retain API 500 per company
// (single and batch together), the other verification endpoints none unless
// configured. A refused request gets 429 with Retry-After. Limiter memory is
// bounded: idle keys are evicted and the number of keys is capped. The
// client IP is the connection's peer; X-Forwarded-For is read only when the
// peer is a configured trusted proxy (see ClientIP).
package httpadapter
