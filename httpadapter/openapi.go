package httpadapter

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path"
	"reflect"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/insights"
	"github.com/consentkit/consentkit/profile"
	"github.com/consentkit/consentkit/signed"
	"github.com/consentkit/consentkit/wallet"
)

// The OpenAPI 3.1 document of the route table: generated from
// Handler.Routes by reflection over each route's request and response
// types, so a route cannot be served without being described. Served at
// GET /openapi.json; checked by Redocly CLI in the tests (openapi/).

// object is a JSON object of the document.
type object = map[string]any

// openAPIDocument is the body of GET /openapi.json.
type openAPIDocument map[string]any

// idPattern is what a path parameter must match (D29).
const idPattern = `^[A-Za-z0-9._:-]{1,128}$`

// routeDoc is what the route table does not say about a route: a summary,
// and the statuses its function answers beyond those of the wrapper's
// authentication, rate limit and body rules (statusesOf).
type routeDoc struct {
	summary string
	answers []int
}

// routeDocs is keyed by method and pattern, the /api spelling of a
// verification route under its documented one (D30). Every route has an
// entry (TestOpenAPIDocumentsEveryRoute).
var routeDocs = map[string]routeDoc{
	"POST /verify/match":                                                            {"Exact match of consent text, 0.015", []int{403, 404, 409}},
	"POST /verify/partial-match":                                                    {"Partial match of a term, 0.015", []int{403, 404, 409}},
	"POST /verify/certificate-info":                                                 {"Certificate metadata and signature", []int{404, 409}},
	"POST /verify/session/{company_id}":                                             {"Long-term retention of a session", []int{404, 409}},
	"POST /verify/certificate/{company_id}":                                         {"Long-term retention of a session's certificates", []int{404, 409}},
	"POST /opt-out":                                                                 {"Revocation (opt-out), free, no authentication", nil},
	"POST /api/integrations/{companyId}/retain/{sessionId}":                         {"Retain API: retain one session, 0.10", []int{404, 409}},
	"POST /api/integrations/{companyId}/retain/batch":                               {"Retain API: retain up to 100 sessions, 0.10 each", nil},
	"GET /api/integrations/{companyId}/sessions/{sessionId}":                        {"Retain API: where a session stands", []int{404}},
	"GET /api/integrations/{companyId}/sessions/{sessionId}/video":                  {"Retain API: the session's MP4 video", []int{404, http.StatusServiceUnavailable}},
	"GET /api/integrations/{companyId}/certificates/{certificateId}/screenshot":     {"Retain API: the attestation's screenshot, a PNG (D49)", []int{404, http.StatusServiceUnavailable}},
	"POST /capture/sessions":                                                        {"Capture: start a recording session", []int{403, 404}},
	"POST /capture/sessions/{session_id}/events":                                    {"Capture: one numbered chunk of rrweb events", []int{403, 404, 409}},
	"POST /capture/sessions/{session_id}/consent":                                   {"Capture: give consent and issue the certificate", []int{403, 404, 409}},
	"OPTIONS /capture/sessions":                                                     {"CORS preflight of starting a session", []int{403, 500}},
	"OPTIONS /capture/sessions/{session_id}/events":                                 {"CORS preflight of sending events", []int{403, 500}},
	"OPTIONS /capture/sessions/{session_id}/consent":                                {"CORS preflight of giving consent", []int{403, 500}},
	"GET /capture/capture.js":                                                       {"The capture snippet", nil},
	"GET /capture/rrweb.js":                                                         {"rrweb's recorder", []int{http.StatusServiceUnavailable}},
	"GET /openapi.json":                                                             {"This OpenAPI document", nil},
	"GET /.well-known/consentkit-keys":                                              {"The public keys of signed certificates (D41)", nil},
	"GET /operator/metrics":                                                         {"The service's metrics, in the Prometheus text format (Config.Metrics)", []int{404}},
	"POST /operator/companies":                                                      {"Create a company with an empty wallet", []int{409}},
	"GET /operator/companies":                                                       {"The companies, by id, a page at a time", nil},
	"GET /operator/companies/{company_id}":                                          {"A company", []int{404}},
	"PUT /operator/companies/{company_id}/attestation":                              {"Attest every certificate the company issues, or not (D49)", []int{404}},
	"PUT /operator/companies/{company_id}/insights-rules":                           {"Replace the thresholds of the company's bot verdict (D50)", []int{404}},
	"GET /operator/companies/{company_id}/profiles":                                 {"The company's audit profiles (D51), by name", []int{404}},
	"GET /operator/companies/{company_id}/profiles/{name}":                          {"An audit profile", []int{404}},
	"PUT /operator/companies/{company_id}/profiles/{name}":                          {"Create or replace an audit profile (D51)", []int{404}},
	"DELETE /operator/companies/{company_id}/profiles/{name}":                       {"Delete an audit profile", []int{404}},
	"POST /operator/companies/{company_id}/properties":                              {"Add a property", []int{404, 409}},
	"GET /operator/companies/{company_id}/properties":                               {"The company's properties, oldest first", []int{404}},
	"PUT /operator/companies/{company_id}/properties/{property_id}/allowed-origins": {"Replace a property's allowed origins (D32)", []int{404}},
	"POST /operator/companies/{company_id}/tokens":                                  {"Issue a token; its secret is shown once", []int{404}},
	"GET /operator/companies/{company_id}/tokens":                                   {"The company's tokens, without their secrets", []int{404}},
	"POST /operator/companies/{company_id}/tokens/{token_id}/revoke":                {"Revoke a token", []int{404}},
	"POST /operator/companies/{company_id}/wallet/top-ups":                          {"Credit the wallet; an Idempotency-Key is required", []int{404}},
	"GET /operator/companies/{company_id}/wallet":                                   {"The wallet's balance", []int{404}},
	"GET /operator/companies/{company_id}/wallet/ledger":                            {"The ledger, newest first, a page at a time", []int{404}},
	"GET /operator/companies/{company_id}/certificates":                             {"The company's certificates, newest first, a page at a time", []int{404}},
	"POST /operator/companies/{company_id}/certificates/search":                     {"A consumer's certificates, by email or mobile (D17)", []int{404}},
	"GET /operator/companies/{company_id}/certificates/{certificate_id}":            {"A certificate with its consents and signature", []int{404}},
	"GET /operator/companies/{company_id}/sessions":                                 {"The company's sessions, newest first, a page at a time", []int{404}},
	"GET /operator/companies/{company_id}/sessions/{session_id}":                    {"A session", []int{404}},
	"GET /operator/companies/{company_id}/revocations":                              {"The company's revocations (D19), newest first, a page at a time", []int{404}},
	"POST /operator/companies/{company_id}/webhooks":                                {"Add a webhook endpoint; its secret is shown once", []int{404}},
	"GET /operator/companies/{company_id}/webhooks":                                 {"The company's webhook endpoints", []int{404}},
	"DELETE /operator/companies/{company_id}/webhooks/{endpoint_id}":                {"Delete a webhook endpoint and its delivery log", []int{404}},
	"POST /operator/companies/{company_id}/webhooks/{endpoint_id}/disable":          {"Stop deliveries to a webhook endpoint", []int{404}},
	"POST /operator/companies/{company_id}/webhooks/{endpoint_id}/enable":           {"Resume deliveries to a webhook endpoint", []int{404}},
	"GET /operator/companies/{company_id}/webhooks/{endpoint_id}/deliveries":        {"A webhook endpoint's delivery log, newest first", []int{404}},
	"GET /operator/companies/{company_id}/audit":                                    {"The company's audit log", []int{404}},
	"GET /operator/companies/{company_id}/audit/verify":                             {"Check a bounded run of the company's audit chain (D42)", []int{404}},
}

// docKey is the key of rt in routeDocs.
func docKey(rt Route) string {
	return rt.Method + " " + strings.Replace(rt.Pattern, "/api/verify/", "/verify/", 1)
}

// OpenAPI returns the OpenAPI 3.1 document of every route of h.Routes(),
// operator routes included, ready for json.Marshal. It describes h as
// configured: with Config.PropertyCredentials the Verification API's
// Bearer token is optional.
//
// Its one server is the relative URL ".", which a client resolves against
// the URL it fetched the document from (OpenAPI 3.1, Server Object; RFC
// 3986 §5.2). The document is served at the root of h (GET /openapi.json),
// so "." names that root under whatever prefix the host mounts h at
// (http.StripPrefix, a proxy's path), from what the client itself sent:
// neither the Host header nor the prefix, which h cannot know, is read.
// Tools drop the resolved root's trailing slash before adding a path, as
// swagger-client does. A copy of the document saved elsewhere needs its
// servers set to where the API is.
//
// Its info.version is documentVersion's: the version of this module in the
// build, else APIVersion.
func (h *Handler) OpenAPI() map[string]any {
	paths := object{}
	for _, rt := range h.Routes() {
		item, _ := paths[rt.Pattern].(object)
		if item == nil {
			item = object{}
			paths[rt.Pattern] = item
		}
		item[strings.ToLower(rt.Method)] = h.operation(rt)
	}
	verifyError := errorSchema(VerifyErrors, false)
	verifyError["properties"].(object)["certificate_id"] = object{"type": "string",
		"description": "The certificate already issued, on a 409 of capture consent sent again (D35)."}
	return object{
		"openapi": "3.1.0",
		"info": object{
			"title":   "consentkit",
			"version": documentVersion(debug.ReadBuildInfo()),
			"summary": "Consent verification, retention and revocation with a prepaid wallet.",
			"description": "Generated from the route table of package httpadapter. Amounts are dollars as exact JSON numbers. " +
				"Every answer carries X-Request-Id. A path that is a route's with another method gets 405 with Allow, " +
				"and an unknown path 404, in the error shape of its API (the Retain API's under /api/integrations/).",
			"license": object{"name": "Apache-2.0", "identifier": "Apache-2.0"},
		},
		"servers": []object{{"url": ".", "description": "The URL this document was fetched from, without openapi.json: " +
			"the root the host mounted the handler at. The operator routes are wherever the host mounts Handler.Operator, " +
			"commonly beside the others."}},
		"tags": []object{
			{"name": "verification", "description": "The Verification API, under /verify/ and /api/verify/ (D30)."},
			{"name": "opt-out", "description": "Revocation by the consumer."},
			{"name": "retain", "description": "The Retain API, with a token holding the vzew_retention permission."},
			{"name": "capture", "description": "Browser capture (D32–D36), public, for pages of a property's allowed origins."},
			{"name": "operator", "description": "The operator API (Handler.Operator), mounted where only operators reach it."},
			{"name": "document", "description": "This description of the API."},
		},
		"paths": paths,
		"components": object{
			"securitySchemes": object{
				"companyToken": object{"type": "http", "scheme": "bearer",
					"description": "A Bearer token of the company named by company_id (D6, D7); another company's token gets 403. " +
						"With Config.PropertyCredentials a request may leave it out and name company_id and property_id instead (D8)."},
				"retentionToken": object{"type": "http", "scheme": "bearer",
					"description": "A Bearer integration token of :companyId with the permission vzew_retention; a token without it gets 403."},
				"uploadToken": object{"type": "http", "scheme": "bearer",
					"description": "The upload token that starting the capture session answered (D33)."},
				"operatorSecret": object{"type": "http", "scheme": "bearer",
					"description": "Config.OperatorSecret, which no company's token opens."},
			},
			"schemas": object{
				"VerifyError":        verifyError,
				"VerifyPaymentError": errorSchema(VerifyErrors, true),
				"RetainError":        errorSchema(RetainErrors, false),
				"RetainPaymentError": errorSchema(RetainErrors, true),
			},
			"headers": object{
				"X-Request-Id": object{"description": "The request's id (RequestIDHeader).", "required": true,
					"schema": object{"type": "string"}},
			},
		},
	}
}

// APIVersion is the version of the HTTP API, the info.version of the
// OpenAPI document when the build does not record the version of this
// module (documentVersion). It changes with a route's contract: its major
// number for a change that breaks a client (a field or status removed or
// changed), its minor number for an addition.
const APIVersion = "1.0.0"

// documentVersion is the info.version of the OpenAPI document, given what
// debug.ReadBuildInfo returns: the version of the module of this package as
// the build records it — a release such as v1.4.0, or a pseudo-version
// naming the commit — since the document is generated from that module's
// route table; APIVersion when the build does not know it (a module
// replaced by a directory, a test, go run in a checkout: "(devel)").
func documentVersion(bi *debug.BuildInfo, ok bool) string {
	if !ok || bi == nil {
		return APIVersion
	}
	mod := path.Dir(reflect.TypeFor[Handler]().PkgPath())
	m := &bi.Main
	if m.Path != mod {
		m = nil
		for _, d := range bi.Deps {
			if d.Path == mod {
				m = d
				break
			}
		}
	}
	if m == nil {
		return APIVersion
	}
	if m.Replace != nil {
		m = m.Replace
	}
	if !strings.HasPrefix(m.Version, "v") {
		return APIVersion
	}
	return m.Version
}

// errorSchema is the error body of a shape (D14); payment adds the 402's
// price and balance (D4).
func errorSchema(shape ErrorShape, payment bool) object {
	props := object{"error": object{"type": "string", "description": "What is wrong, naming the field at fault."}}
	required := []string{"error"}
	if shape == RetainErrors {
		props["success"] = object{"const": false}
		required = append(required, "success")
	} else {
		props["status"] = object{"type": "integer", "description": "The HTTP status."}
		required = append(required, "status")
	}
	if payment {
		props["required"] = object{"type": "number", "description": "The price of the action, in dollars."}
		props["current_balance"] = object{"type": "number", "description": "The wallet's balance, in dollars."}
		required = append(required, "required", "current_balance")
	}
	slices.Sort(required)
	return object{"type": "object", "properties": props, "required": required, "additionalProperties": false}
}

var groupTags = map[Group]string{
	VerifyGroup: "verification", OptOutGroup: "opt-out", RetainGroup: "retain", CaptureGroup: "capture",
	OperatorGroup: "operator", DocGroup: "document",
}

func (h *Handler) operation(rt Route) object {
	d, ok := routeDocs[docKey(rt)]
	if !ok {
		d.summary = rt.Method + " " + rt.Pattern // TestOpenAPIDocumentsEveryRoute fails on it
	}
	op := object{
		"operationId": operationID(rt),
		"summary":     d.summary,
		"tags":        []string{groupTags[rt.Group]},
		"security":    h.security(rt.Auth),
		"responses":   h.responses(rt, d),
	}
	if ps := parameters(rt); len(ps) > 0 {
		op["parameters"] = ps
	}
	if rt.Request != nil && hasBody(rt.Request) {
		schema := schemaOf(rt.Request, false)
		content := object{"application/json": object{"schema": schema}}
		if rt.CORS {
			// The body is read as JSON whatever its type: the snippet sends
			// text/plain, which needs no preflight.
			content["text/plain"] = object{"schema": schema}
		}
		op["requestBody"] = object{"required": true, "content": content}
	}
	return op
}

// operationID is the method and the pattern's words in camel case.
func operationID(rt Route) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(rt.Method))
	up := true
	for _, r := range rt.Pattern {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			up = true
			continue
		}
		if up {
			r = unicode.ToUpper(r)
		}
		up = false
		b.WriteRune(r)
	}
	return b.String()
}

func (h *Handler) security(a Auth) []object {
	switch a {
	case AuthToken:
		if h.cfg.PropertyCredentials {
			return []object{{"companyToken": []string{}}, {}}
		}
		return []object{{"companyToken": []string{}}}
	case AuthRetention:
		return []object{{"retentionToken": []string{}}}
	case AuthUpload:
		return []object{{"uploadToken": []string{}}}
	case AuthOperator:
		return []object{{"operatorSecret": []string{}}}
	}
	return []object{} // public
}

// hasBody reports whether a request type has JSON fields, as handle does.
func hasBody(t reflect.Type) bool {
	for i := range t.NumField() {
		f := t.Field(i)
		_, path := f.Tag.Lookup("path")
		_, query := f.Tag.Lookup("query")
		if !path && !query && f.IsExported() && f.Tag.Get("json") != "-" {
			return true
		}
	}
	return false
}

// wildcards are the names of a pattern's {wildcards}.
func wildcards(pattern string) []string {
	var out []string
	for _, part := range strings.Split(pattern, "/") {
		if strings.HasPrefix(part, "{") && strings.HasSuffix(part, "}") {
			out = append(out, strings.TrimSuffix(part[1:], "}"))
		}
	}
	return out
}

func parameters(rt Route) []object {
	var ps []object
	for _, name := range wildcards(rt.Pattern) {
		ps = append(ps, object{"name": name, "in": "path", "required": true,
			"schema": object{"type": "string", "pattern": idPattern}})
	}
	if rt.Request != nil {
		for i := range rt.Request.NumField() {
			f := rt.Request.Field(i)
			name, ok := f.Tag.Lookup("query")
			if !ok {
				continue
			}
			typ := "string"
			if f.Type.Kind() != reflect.String {
				typ = "integer"
			}
			ps = append(ps, object{"name": name, "in": "query", "required": false, "schema": object{"type": typ}})
		}
	}
	if rt.Idempotent {
		desc := "A key of the client's choosing, such as a UUID (D40). Sent again with the same request within 24 hours, " +
			"the call is not done again: the first answer (a success, 409 or 422) is replayed byte for byte with " +
			ReplayedHeader + ": true. The same key with another request is a 422; while the first call runs, a 409."
		if rt.RequireKey {
			desc += " Required here: a call without it gets 400, so that a retry can never take effect twice."
		}
		ps = append(ps, object{"name": IdempotencyHeader, "in": "header", "required": rt.RequireKey,
			"schema":      object{"type": "string", "minLength": 1, "maxLength": consent.MaxIdempotencyKey, "pattern": "^[!-~]+$"},
			"description": desc})
	}
	switch {
	case rt.Method == http.MethodOptions:
		ps = append(ps,
			object{"name": "Origin", "in": "header", "required": false, "schema": object{"type": "string"},
				"description": "The page's origin; a preflight without an allowed one gets 403."},
			object{"name": "Access-Control-Request-Method", "in": "header", "required": false,
				"schema": object{"type": "string", "enum": []string{"POST"}}})
		if len(wildcards(rt.Pattern)) == 0 { // starting a session: no session yet
			ps = append(ps, object{"name": "property_id", "in": "query", "required": false,
				"schema": object{"type": "string"}, "description": "The property whose allowed origins are asked."})
		}
	case isFile(rt):
		desc := "A byte range, such as bytes=0-1023: 206 with Content-Range. Overlapping or adjacent ranges are merged; " +
			"more than 16 after merging, or more than 256 asked, are ignored: 200 with the whole file."
		if storedFile(rt) { // byterange.ServeContent
			desc += " Ranges that no byte satisfies (bytes=-0, a start at or past the end) are left out; " +
				"with none left, or an invalid range (bytes=5-4), 416 with Content-Range: bytes */<size>. " +
				"A unit other than bytes is ignored (RFC 9110 §14.2)."
		}
		ps = append(ps, object{"name": "Range", "in": "header", "required": false, "schema": object{"type": "string"},
			"description": desc})
	}
	return ps
}

// isFile reports whether rt answers a file (a script, a video) through
// http.ServeContent, with ranges and conditional requests.
func isFile(rt Route) bool { return rt.ContentType != "" }

// storedFile reports whether rt answers a file of the video store (a
// video, an attestation's screenshot: videoResponse), whose ETag is its
// SHA-256.
func storedFile(rt Route) bool { return rt.ContentType == "video/mp4" || rt.ContentType == "image/png" }

// statusesOf is every status rt can answer on h as configured: its
// success, those of the wrapper's rules (authentication, a rate limit that
// is on, body, path and query, a price above zero), those d says its
// function answers, and 500.
func (h *Handler) statusesOf(rt Route, d routeDoc) []int {
	success := rt.Status
	if success == 0 {
		success = http.StatusOK
	}
	out := []int{success}
	if isFile(rt) {
		out = append(out, http.StatusPartialContent, http.StatusNotModified, http.StatusPreconditionFailed,
			http.StatusRequestedRangeNotSatisfiable)
	}
	switch rt.Auth {
	case AuthToken, AuthRetention:
		out = append(out, 401, 403)
	case AuthUpload:
		out = append(out, 401)
	case AuthOperator:
		// A client out of wrong secrets is refused on every route (D28).
		out = append(out, 401, http.StatusTooManyRequests)
	}
	// Capture's byte budgets and per-property starts limit its routes
	// beside their own limit.
	if rt.Limit != NoLimit && (h.limits[rt.Limit] != nil || rt.Group == CaptureGroup) {
		out = append(out, http.StatusTooManyRequests)
	}
	if rt.Request != nil {
		if hasBody(rt.Request) {
			out = append(out, http.StatusBadRequest, http.StatusRequestEntityTooLarge)
		}
		if len(wildcards(rt.Pattern)) > 0 || queryFields(rt.Request) {
			out = append(out, http.StatusBadRequest)
		}
		out = append(out, http.StatusInternalServerError)
	}
	// A batch is charged per retained session: a shortfall fails entries,
	// never the request.
	prices := h.svc.Prices()
	if rt.Price != "" && rt.Price != wallet.RetainBatch && prices.Of(rt.Price) > 0 {
		out = append(out, http.StatusPaymentRequired)
	}
	if rt.Idempotent {
		out = append(out, http.StatusBadRequest, http.StatusConflict, http.StatusUnprocessableEntity)
	}
	out = append(out, d.answers...)
	slices.Sort(out)
	return slices.Compact(out)
}

func queryFields(t reflect.Type) bool {
	for i := range t.NumField() {
		if _, ok := t.Field(i).Tag.Lookup("query"); ok {
			return true
		}
	}
	return false
}

var statusText = map[int]string{
	400: "A field is missing, malformed or of the wrong type; the error names it (D29).",
	401: "Credentials are missing, malformed, unknown, expired or revoked.",
	402: "The wallet's balance is below the price (D4).",
	403: "Forbidden: another company's credentials, a missing permission, an opted-out certificate, " +
		"unauthorized third-party verification, or an origin the property does not allow.",
	404: "The certificate, session, property, company or endpoint does not exist, or is not the company's.",
	409: "Conflict with the current state, such as already retained, or a call with the same Idempotency-Key still in progress (D40).",
	422: "The Idempotency-Key was used before with another request (D40).",
	413: "The request body is too large (1 MiB; capture chunks: the service's chunk limit).",
	429: "Rate limited (D20, D28); retry after Retry-After seconds.",
	500: "Internal error, logged; the body says nothing of its cause.",
	503: "Not available on this server (a video store or the recorder bundle is not configured).",
}

func (h *Handler) responses(rt Route, d routeDoc) object {
	out := object{}
	for _, s := range h.statusesOf(rt, d) {
		headers := object{"X-Request-Id": object{"$ref": "#/components/headers/X-Request-Id"}}
		if rt.CORS {
			headers["Access-Control-Allow-Origin"] = object{"schema": object{"type": "string"},
				"description": "The request's Origin, when the property allows it."}
		}
		if rt.Idempotent && (s < 300 || s == http.StatusConflict || s == http.StatusUnprocessableEntity) {
			headers[ReplayedHeader] = object{"schema": object{"type": "string", "enum": []string{"true"}},
				"description": "Present when the answer is the stored answer of an earlier call with the Idempotency-Key (D40)."}
		}
		r := object{"headers": headers}
		switch {
		case s < 300 && rt.Method == http.MethodOptions:
			r["description"] = "The origin may send the request."
			for _, name := range []string{"Access-Control-Allow-Methods", "Access-Control-Allow-Headers", "Access-Control-Max-Age"} {
				headers[name] = object{"schema": object{"type": "string"}, "required": true}
			}
		case s < 400 && isFile(rt):
			r["description"] = "The file, or the requested range of it."
			headers["Accept-Ranges"] = object{"schema": object{"type": "string"}}
			if storedFile(rt) {
				headers["ETag"] = object{"schema": object{"type": "string"}, "description": "The file's SHA-256, quoted."}
				headers["X-Content-SHA256"] = object{"schema": object{"type": "string", "pattern": "^[0-9a-f]{64}$"},
					"description": "The file's SHA-256 in hex, to check what was received.", "required": s != http.StatusNotModified}
			} else {
				headers["Last-Modified"] = object{"schema": object{"type": "string"}}
			}
			if s != http.StatusNotModified {
				r["content"] = object{rt.ContentType: object{"schema": object{"type": "string", "contentMediaType": rt.ContentType}}}
			}
			if s == http.StatusPartialContent {
				// Several ranges are answered in parts, each with its own
				// Content-Range (RFC 9110 §14.6).
				headers["Content-Range"] = object{"schema": object{"type": "string", "pattern": `^bytes [0-9]+-[0-9]+/[0-9]+$`},
					"description": "The range sent, of a single range: bytes <first>-<last>/<size>."}
				r["content"].(object)["multipart/byteranges"] = object{"schema": object{"type": "string"}}
			}
		case s < 400:
			r["description"] = "Success."
			r["content"] = object{"application/json": object{"schema": schemaOf(rt.Response, true)}}
		case isFile(rt) && (s == http.StatusPreconditionFailed || s == http.StatusRequestedRangeNotSatisfiable):
			r["description"] = http.StatusText(s) + " (http.ServeContent)."
			r["content"] = object{"text/plain": object{"schema": object{"type": "string"}}}
			if s == http.StatusRequestedRangeNotSatisfiable && storedFile(rt) {
				headers["Content-Range"] = object{"schema": object{"type": "string", "pattern": `^bytes \*/[0-9]+$`}, "required": true,
					"description": "bytes */<size>: the file's length (RFC 9110 §15.5.17)."}
			}
		default:
			r["description"] = statusText[s]
			r["content"] = object{"application/json": object{"schema": errorRef(rt.Errors, s)}}
			if s == http.StatusTooManyRequests {
				headers["Retry-After"] = object{"required": true, "description": "Seconds to wait.",
					"schema": object{"type": "integer", "minimum": 1}}
			}
		}
		out[strconv.Itoa(s)] = r
	}
	return out
}

// errorRef is the schema of an error body of the shape with status s.
func errorRef(shape ErrorShape, s int) object {
	name := "VerifyError"
	if shape == RetainErrors {
		name = "RetainError"
	}
	if s == http.StatusPaymentRequired {
		name = strings.TrimSuffix(name, "Error") + "PaymentError"
	}
	ref := object{"$ref": "#/components/schemas/" + name}
	if shape == RetainErrors {
		return ref
	}
	return object{"allOf": []object{ref, {"properties": object{"status": object{"const": s}}}}}
}

var (
	amountType  = reflect.TypeFor[wallet.Amount]()
	rawType     = reflect.TypeFor[json.RawMessage]()
	timeType    = reflect.TypeFor[time.Time]()
	rfc3339Type = reflect.TypeFor[RFC3339]()
	marshaler   = reflect.TypeFor[json.Marshaler]()
)

// schemaOf is the JSON Schema of what encoding/json makes of t (response)
// or reads into it (request). A response field without omitempty is always
// present, so required, and a response has no fields beyond its type's; a
// request's unknown fields are ignored (D29), and which fields it needs is
// the service's to say (400 naming the field).
func schemaOf(t reflect.Type, response bool) object {
	if t.Kind() == reflect.Pointer { // nil is null, which fields adds
		return schemaOf(t.Elem(), response)
	}
	switch t {
	case amountType:
		return object{"type": "number", "description": "Dollars, exact (micro-dollars)."}
	case rawType:
		return object{"description": "Any JSON value."}
	case timeType, rfc3339Type:
		return object{"type": "string", "format": "date-time"}
	}
	if t.Implements(marshaler) || reflect.PointerTo(t).Implements(marshaler) {
		panic(fmt.Sprintf("httpadapter: the OpenAPI document does not know the JSON of %v", t))
	}
	switch t.Kind() {
	case reflect.Bool:
		return object{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return object{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return object{"type": "number"}
	case reflect.String:
		return object{"type": "string"}
	case reflect.Slice, reflect.Array:
		return object{"type": "array", "items": schemaOf(t.Elem(), response)}
	case reflect.Map:
		return object{"type": "object", "additionalProperties": schemaOf(t.Elem(), response)}
	case reflect.Interface:
		return object{}
	case reflect.Struct:
		props, required := object{}, []string{}
		fields(t, response, props, &required)
		s := object{"type": "object", "properties": props}
		if response {
			s["required"] = required
			s["additionalProperties"] = false
		}
		return s
	}
	panic(fmt.Sprintf("httpadapter: the OpenAPI document cannot describe %v", t))
}

// fields adds the JSON fields of struct t to props, those of embedded
// structs and struct pointers included as encoding/json promotes them.
func fields(t reflect.Type, response bool, props object, required *[]string) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, hasTag := f.Tag.Lookup("json")
		name, opts, _ := strings.Cut(tag, ",")
		_, path := f.Tag.Lookup("path")
		_, query := f.Tag.Lookup("query")
		switch {
		case path || query || name == "-":
			continue
		case f.Anonymous && !hasTag && f.Type.Kind() == reflect.Struct:
			fields(f.Type, response, props, required)
			continue
		case f.Anonymous && !hasTag && f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.Struct:
			// A nil one leaves all of its fields out: none is required.
			fields(f.Type.Elem(), response, props, new([]string))
			continue
		case !f.IsExported():
			continue
		}
		if name == "" {
			name = f.Name
		}
		omitempty := strings.Contains(","+opts+",", ",omitempty,")
		s := schemaOf(f.Type, response)
		if values, ok := enums[t][name]; ok {
			s["enum"] = values
		}
		k := f.Type.Kind()
		// nil marshals as null; null is read as nothing given.
		if (k == reflect.Pointer || k == reflect.Slice && f.Type != rawType || k == reflect.Map) && !(response && omitempty) {
			s = nullable(s)
		}
		props[name] = s
		if response && !omitempty {
			*required = append(*required, name)
		}
	}
}

// enums are the values a string member of an answer takes, by the struct
// that holds it and its JSON name, taken from the constants the code
// writes: the document lists them, and the validating proxy of the tests
// holds every answer to them.
var enums = func() map[reflect.Type]map[string][]string {
	verdicts := []string{string(insights.Human), string(insights.Suspect), string(insights.Bot)}
	attestation := []string{consent.AttestationPending, consent.AttestationAttested, consent.AttestationMismatch, consent.AttestationUnavailable}
	results := []string{profile.Pass, profile.Warn, profile.Fail}
	return map[reflect.Type]map[string][]string{
		reflect.TypeFor[insightsStatus]():        {"status": {consent.InsightsPending, consent.InsightsDone, consent.InsightsFailed}, "verdict": verdicts},
		reflect.TypeFor[signed.InsightsAnswer](): {"status": {consent.InsightsPending, consent.InsightsDone, consent.InsightsFailed}},
		reflect.TypeFor[signed.AskedBot]():       {"verdict": verdicts},
		reflect.TypeFor[signed.InsightsBot]():    {"verdict": verdicts},
		reflect.TypeFor[signed.InsightsInput](): {"method": {string(insights.Typed), string(insights.Pasted), string(insights.Prefilled),
			string(insights.Scripted), string(insights.Autofilled), string(insights.Unknown)}},
		reflect.TypeFor[attestationStatus]():        {"status": attestation},
		reflect.TypeFor[signed.AttestationAnswer](): {"status": attestation},
		reflect.TypeFor[signed.Statement]():         {"status": attestation[1:]},
		reflect.TypeFor[profile.Graded]():           {"result": results},
		reflect.TypeFor[profile.RuleGrade]():        {"result": append(slices.Clip(results), profile.Pending)},
	}
}()

// nullable lets s be null too (JSON Schema 2020-12 type arrays).
func nullable(s object) object {
	switch typ := s["type"].(type) {
	case string:
		s["type"] = []string{typ, "null"}
	case []string:
		if !slices.Contains(typ, "null") {
			s["type"] = append(typ, "null")
		}
	}
	return s
}

// openAPI serves the document.
func (h *Handler) openAPI(context.Context, Caller, *struct{}) (*openAPIDocument, error) {
	d := openAPIDocument(h.OpenAPI())
	return &d, nil
}
