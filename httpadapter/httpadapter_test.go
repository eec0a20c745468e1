package httpadapter_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/wallet"
)

// httpCase is one request against a fresh fixture (fixture_test.go), with the
// status, the whole body and the charges it must produce. Companies not named
// in charged must keep their balance.
type httpCase struct {
	name    string
	req     request
	status  int
	want    string
	charged map[string]string
}

const idRule = "must be 1 to 128 characters of A-Z a-z 0-9 . _ : -"

// badToken is the one answer to unknown, expired and revoked tokens (D6).
const badToken = "the token is unknown, expired or revoked"

func matchBody(cert, company, consent string, extra ...string) string {
	return fmt.Sprintf(`{"certificate_id":%q,"company_id":%q,"consent":%q%s}`, cert, company, consent, strings.Join(extra, ""))
}

func termBody(cert, company, term string, extra ...string) string {
	return fmt.Sprintf(`{"certificate_id":%q,"company_id":%q,"term":%q%s}`, cert, company, term, strings.Join(extra, ""))
}

var verificationCases = []httpCase{
	// /verify/match (D10, D12)
	{name: "match/200 valid", req: request{path: "/verify/match", token: acmeToken, body: matchBody("cert-1", "acme", consentText)},
		status: 200, charged: map[string]string{"acme": "0.015"},
		want: `{"valid":true,"consent_opt_in":"2026-11-20T10:00:05Z","origin":"https://acme.example/quote","consent_types":["marketing","privacy","tcpa"],"verification_type":"first_party"}`},
	// Lead matching (D38): by digest after D17's normalization; same price.
	{name: "match/200 lead matched", req: request{path: "/verify/match", token: acmeToken, body: matchBody("cert-1", "acme", consentText, `,"email":" JANE@example.com","mobile":"+1 555 010 2000"`)},
		status: 200, charged: map[string]string{"acme": "0.015"},
		want: `{"valid":true,"consent_opt_in":"2026-11-20T10:00:05Z","origin":"https://acme.example/quote","consent_types":["marketing","privacy","tcpa"],"verification_type":"first_party","email_matched":true,"mobile_matched":true}`},
	{name: "match/200 lead not matched", req: request{path: "/verify/match", token: acmeToken, body: matchBody("cert-1", "acme", consentText, `,"email":"john@example.com"`)},
		status: 200, charged: map[string]string{"acme": "0.015"},
		want: `{"valid":true,"consent_opt_in":"2026-11-20T10:00:05Z","origin":"https://acme.example/quote","consent_types":["marketing","privacy","tcpa"],"verification_type":"first_party","email_matched":false}`},
	{name: "partial/200 lead mobile on a certificate without one", req: request{path: "/verify/partial-match", token: acmeToken, body: termBody("cert-2", "acme", "agree", `,"mobile":"5550102000"`)},
		status: 200, charged: map[string]string{"acme": "0.015"},
		want: `{"valid":true,"consent_opt_in":"2026-11-20T10:00:05Z","origin":"https://acme.example/quote","verification_type":"first_party","mobile_matched":false}`},
	{name: "match/400 lead email malformed", req: request{path: "/verify/match", token: acmeToken, body: matchBody("cert-1", "acme", consentText, `,"email":"not an email"`)},
		status: 400, want: `{"status":400,"error":"email is not an email address"}`},
	{name: "match/200 trimmed on both sides", req: request{path: "/verify/match", token: acmeToken, body: matchBody("cert-1", "acme", "\n  "+privacyText+"\t")},
		status: 200, charged: map[string]string{"acme": "0.015"},
		want: `{"valid":true,"consent_opt_in":"2026-11-20T10:00:03Z","origin":"https://acme.example/quote","consent_types":["marketing","privacy","tcpa"],"verification_type":"first_party"}`},
	{name: "match/200 not valid: case differs", req: request{path: "/verify/match", token: acmeToken, body: matchBody("cert-1", "acme", strings.ToLower(consentText))},
		status: 200, charged: map[string]string{"acme": "0.015"},
		want: `{"valid":false,"consent_opt_in":"2026-11-20T10:00:03Z","origin":"https://acme.example/quote","consent_types":["marketing","privacy","tcpa"],"verification_type":"first_party"}`},
	{name: "match/200 no consents", req: request{path: "/verify/match", token: acmeToken, body: matchBody("cert-empty", "acme", consentText)},
		status: 200, charged: map[string]string{"acme": "0.015"},
		want: `{"valid":false,"consent_opt_in":null,"origin":"https://acme.example/quote","consent_types":[],"verification_type":"first_party"}`},
	{name: "match/200 /api spelling", req: request{path: "/api/verify/match", token: acmeToken, body: matchBody("cert-1", "acme", consentText)},
		status: 200, charged: map[string]string{"acme": "0.015"},
		want: `{"valid":true,"consent_opt_in":"2026-11-20T10:00:05Z","origin":"https://acme.example/quote","consent_types":["marketing","privacy","tcpa"],"verification_type":"first_party"}`},
	{name: "match/200 own property", req: request{path: "/verify/match", token: acmeToken, body: matchBody("cert-1", "acme", consentText, `,"property_id":"acme-web"`)},
		status: 200, charged: map[string]string{"acme": "0.015"},
		want: `{"valid":true,"consent_opt_in":"2026-11-20T10:00:05Z","origin":"https://acme.example/quote","consent_types":["marketing","privacy","tcpa"],"verification_type":"first_party"}`},
	{name: "match/200 originator is the caller", req: request{path: "/verify/match", token: acmeToken, body: matchBody("cert-1", "acme", consentText, `,"originator_company_id":"acme"`)},
		status: 200, charged: map[string]string{"acme": "0.015"},
		want: `{"valid":true,"consent_opt_in":"2026-11-20T10:00:05Z","origin":"https://acme.example/quote","consent_types":["marketing","privacy","tcpa"],"verification_type":"first_party"}`},
	{name: "match/200 third party, caller pays", req: request{path: "/verify/match", token: buyerToken, body: matchBody("cert-1", "buyer", consentText, `,"originator_company_id":"acme"`)},
		status: 200, charged: map[string]string{"buyer": "0.015"},
		want: `{"valid":true,"consent_opt_in":"2026-11-20T10:00:05Z","origin":"https://acme.example/quote","consent_types":["marketing","privacy","tcpa"],"verification_type":"third_party"}`},
	{name: "match/400 certificate_id missing", req: request{path: "/verify/match", token: acmeToken, body: `{"company_id":"acme","consent":"x"}`},
		status: 400, want: `{"status":400,"error":"certificate_id is required"}`},
	{name: "match/400 company_id missing", req: request{path: "/verify/match", token: acmeToken, body: `{"certificate_id":"cert-1","consent":"x"}`},
		status: 400, want: `{"status":400,"error":"company_id is required"}`},
	{name: "match/400 consent missing", req: request{path: "/verify/match", token: acmeToken, body: `{"certificate_id":"cert-1","company_id":"acme"}`},
		status: 400, want: `{"status":400,"error":"consent is required"}`},
	{name: "match/400 consent not a string", req: request{path: "/verify/match", token: acmeToken, body: `{"certificate_id":"cert-1","company_id":"acme","consent":5}`},
		status: 400, want: `{"status":400,"error":"consent must be a string"}`},
	{name: "match/400 malformed certificate_id", req: request{path: "/verify/match", token: acmeToken, body: matchBody("cert 1", "acme", "x")},
		status: 400, want: `{"status":400,"error":"certificate_id ` + idRule + `"}`},
	{name: "match/400 malformed JSON", req: request{path: "/verify/match", token: acmeToken, body: `{"certificate_id":`},
		status: 400, want: `{"status":400,"error":"request body is not valid JSON"}`},
	{name: "match/400 not an object", req: request{path: "/verify/match", token: acmeToken, body: `["cert-1"]`},
		status: 400, want: `{"status":400,"error":"request body must be a JSON object"}`},
	{name: "match/400 empty body", req: request{path: "/verify/match", token: acmeToken},
		status: 400, want: `{"status":400,"error":"request body must be a JSON object"}`},
	{name: "match/400 unknown fields ignored, trailing data not", req: request{path: "/verify/match", token: acmeToken, body: matchBody("cert-1", "acme", "x", `,"extra":1`) + `{}`},
		status: 400, want: `{"status":400,"error":"request body is not valid JSON"}`},
	{name: "match/401 no credentials", req: request{path: "/verify/match", body: matchBody("cert-1", "acme", consentText)},
		status: 401, want: `{"status":401,"error":"an Authorization: Bearer token is required"}`},
	{name: "match/401 not Bearer", req: request{path: "/verify/match", auth: "Basic YWNtZTpzZWNyZXQ=", body: matchBody("cert-1", "acme", consentText)},
		status: 401, want: `{"status":401,"error":"the Authorization header must be Bearer <token>"}`},
	{name: "match/401 unknown token", req: request{path: "/verify/match", token: "ck_unknown-token-value", body: matchBody("cert-1", "acme", consentText)},
		status: 401, want: `{"status":401,"error":"` + badToken + `"}`},
	{name: "match/401 expired token", req: request{path: "/verify/match", token: acmeExpired, body: matchBody("cert-1", "acme", consentText)},
		status: 401, want: `{"status":401,"error":"` + badToken + `"}`},
	{name: "match/401 revoked token", req: request{path: "/verify/match", token: acmeRevoked, body: matchBody("cert-1", "acme", consentText)},
		status: 401, want: `{"status":401,"error":"` + badToken + `"}`},
	{name: "match/401 before 400", req: request{path: "/verify/match", token: "ck_unknown-token-value", body: `{`},
		status: 401, want: `{"status":401,"error":"` + badToken + `"}`},
	{name: "match/403 token of another company", req: request{path: "/verify/match", token: otherToken, body: matchBody("cert-1", "acme", consentText)},
		status: 403, want: `{"status":403,"error":"the credentials are not those of company_id"}`},
	{name: "match/403 third party not authorized", req: request{path: "/verify/match", token: otherToken, body: matchBody("cert-1", "other", consentText, `,"originator_company_id":"acme"`)},
		status: 403, want: `{"status":403,"error":"third-party verification is not authorized by the originating company"}`},
	{name: "match/403 third party before lookup", req: request{path: "/verify/match", token: otherToken, body: matchBody("cert-nope", "other", consentText, `,"originator_company_id":"acme"`)},
		status: 403, want: `{"status":403,"error":"third-party verification is not authorized by the originating company"}`},
	{name: "match/403 originator has third party off", req: request{path: "/verify/match", token: buyerToken, body: matchBody("cert-closed", "buyer", consentText, `,"originator_company_id":"closed"`)},
		status: 403, want: `{"status":403,"error":"third-party verification is not authorized by the originating company"}`},
	{name: "match/403 originator unknown", req: request{path: "/verify/match", token: buyerToken, body: matchBody("cert-1", "buyer", consentText, `,"originator_company_id":"nobody"`)},
		status: 403, want: `{"status":403,"error":"third-party verification is not authorized by the originating company"}`},
	{name: "match/403 opted out", req: request{path: "/verify/match", token: acmeToken, body: matchBody("cert-revoked", "acme", consentText)},
		status: 403, want: `{"status":403,"error":"This session has opted out"}`},
	{name: "match/403 opted out, third party", req: request{path: "/verify/match", token: buyerToken, body: matchBody("cert-revoked", "buyer", consentText, `,"originator_company_id":"acme"`)},
		status: 403, want: `{"status":403,"error":"This session has opted out"}`},
	{name: "match/404 unknown certificate", req: request{path: "/verify/match", token: acmeToken, body: matchBody("cert-nope", "acme", consentText)},
		status: 404, want: `{"status":404,"error":"certificate not found"}`},
	{name: "match/404 another company's certificate", req: request{path: "/verify/match", token: otherToken, body: matchBody("cert-1", "other", consentText)},
		status: 404, want: `{"status":404,"error":"certificate not found"}`},
	{name: "match/404 not the originator's certificate", req: request{path: "/verify/match", token: buyerToken, body: matchBody("cert-other", "buyer", consentText, `,"originator_company_id":"acme"`)},
		status: 404, want: `{"status":404,"error":"certificate not found"}`},
	{name: "match/404 property not the company's", req: request{path: "/verify/match", token: acmeToken, body: matchBody("cert-1", "acme", consentText, `,"property_id":"other-web"`)},
		status: 404, want: `{"status":404,"error":"property not found"}`},
	{name: "match/402 insufficient balance", req: request{path: "/verify/match", token: poorToken, body: matchBody("cert-poor", "poor", consentText)},
		status: 402, want: `{"status":402,"error":"insufficient balance","required":0.015,"current_balance":0.01}`},
	{name: "match/413 body over 1 MiB", req: request{path: "/verify/match", token: acmeToken, body: matchBody("cert-1", "acme", strings.Repeat("x", 1<<20))},
		status: 413, want: `{"status":413,"error":"request body over 1048576 bytes"}`},

	// /verify/partial-match (D11)
	{name: "partial/200 found, case folded", req: request{path: "/verify/partial-match", token: acmeToken, body: termBody("cert-1", "acme", " PRIVACY Policy ")},
		status: 200, charged: map[string]string{"acme": "0.015"},
		want: `{"valid":true,"consent_opt_in":"2026-11-20T10:00:03Z","origin":"https://acme.example/quote","verification_type":"first_party"}`},
	{name: "partial/200 not found", req: request{path: "/verify/partial-match", token: acmeToken, body: termBody("cert-1", "acme", "newsletter")},
		status: 200, charged: map[string]string{"acme": "0.015"},
		want: `{"valid":false,"consent_opt_in":"2026-11-20T10:00:03Z","origin":"https://acme.example/quote","verification_type":"first_party"}`},
	{name: "partial/200 /api spelling, third party", req: request{path: "/api/verify/partial-match", token: buyerToken, body: termBody("cert-1", "buyer", "contacted", `,"originator_company_id":"acme"`)},
		status: 200, charged: map[string]string{"buyer": "0.015"},
		want: `{"valid":true,"consent_opt_in":"2026-11-20T10:00:05Z","origin":"https://acme.example/quote","verification_type":"third_party"}`},
	{name: "partial/400 blank term", req: request{path: "/verify/partial-match", token: acmeToken, body: termBody("cert-1", "acme", "   ")},
		status: 400, want: `{"status":400,"error":"term is required"}`},
	{name: "partial/401", req: request{path: "/verify/partial-match", body: termBody("cert-1", "acme", "agree")},
		status: 401, want: `{"status":401,"error":"an Authorization: Bearer token is required"}`},
	{name: "partial/403 token of another company", req: request{path: "/verify/partial-match", token: otherToken, body: termBody("cert-1", "acme", "agree")},
		status: 403, want: `{"status":403,"error":"the credentials are not those of company_id"}`},
	{name: "partial/403 third party not authorized", req: request{path: "/verify/partial-match", token: otherToken, body: termBody("cert-1", "other", "agree", `,"originator_company_id":"acme"`)},
		status: 403, want: `{"status":403,"error":"third-party verification is not authorized by the originating company"}`},
	{name: "partial/403 opted out", req: request{path: "/verify/partial-match", token: acmeToken, body: termBody("cert-revoked", "acme", "agree")},
		status: 403, want: `{"status":403,"error":"This session has opted out"}`},
	{name: "partial/404", req: request{path: "/verify/partial-match", token: acmeToken, body: termBody("cert-other", "acme", "agree")},
		status: 404, want: `{"status":404,"error":"certificate not found"}`},
	{name: "partial/402", req: request{path: "/verify/partial-match", token: poorToken, body: termBody("cert-poor", "poor", "agree")},
		status: 402, want: `{"status":402,"error":"insufficient balance","required":0.015,"current_balance":0.01}`},

	// /verify/certificate-info (D15): free by default
	{name: "info/200", req: request{path: "/verify/certificate-info", token: acmeToken, body: `{"certificate_id":"cert-1","company_id":"acme","property_id":"acme-web"}`},
		status: 200, want: `{"valid":true,"certificate_id":"cert-1","created_timestamp":"2026-11-20T10:00:00Z","has_consents":true,"consent_count":2,"events_combined":{"fields":2,"submitted":true},` +
			`"session_id":"s1","origin":"https://acme.example/quote","consent_opt_in":"2026-11-20T10:00:03Z","consent_types":["marketing","privacy","tcpa"],` +
			`"consents":[{"text":"I agree to be contacted by Acme Insurance.","types":["tcpa","marketing"],"opt_in":"2026-11-20T10:00:05Z"},` +
			`{"text":"I accept the privacy policy.","types":["privacy","tcpa"],"opt_in":"2026-11-20T10:00:03Z"}],"insights":{"status":"pending","asked_at":"2026-11-21T12:00:00Z","lead_age_seconds":93600,"velocity":{"hour":{"client_ip":0,"email":1,"mobile":0},"day":{"client_ip":0,"email":1,"mobile":0}}}}`},
	{name: "info/200 no consents, /api spelling", req: request{path: "/api/verify/certificate-info", token: acmeToken, body: `{"certificate_id":"cert-empty","company_id":"acme","property_id":"acme-web"}`},
		status: 200, want: `{"valid":true,"certificate_id":"cert-empty","created_timestamp":"2026-11-20T10:00:00Z","has_consents":false,"consent_count":0,"events_combined":{},` +
			`"session_id":"s1","origin":"https://acme.example/quote","consent_opt_in":null,"consent_types":[],"consents":[],"insights":{"status":"pending","asked_at":"2026-11-21T12:00:00Z","lead_age_seconds":93600,"velocity":{"hour":{"client_ip":0,"email":0,"mobile":0},"day":{"client_ip":0,"email":0,"mobile":0}}}}`},
	{name: "info/400 property_id missing", req: request{path: "/verify/certificate-info", token: acmeToken, body: `{"certificate_id":"cert-1","company_id":"acme"}`},
		status: 400, want: `{"status":400,"error":"property_id is required"}`},
	{name: "info/401", req: request{path: "/verify/certificate-info", token: acmeExpired, body: `{"certificate_id":"cert-1","company_id":"acme","property_id":"acme-web"}`},
		status: 401, want: `{"status":401,"error":"` + badToken + `"}`},
	{name: "info/403 token of another company", req: request{path: "/verify/certificate-info", token: otherToken, body: `{"certificate_id":"cert-1","company_id":"acme","property_id":"acme-web"}`},
		status: 403, want: `{"status":403,"error":"the credentials are not those of company_id"}`},
	{name: "info/403 opted out", req: request{path: "/verify/certificate-info", token: acmeToken, body: `{"certificate_id":"cert-revoked","company_id":"acme","property_id":"acme-web"}`},
		status: 403, want: `{"status":403,"error":"This session has opted out"}`},
	{name: "info/404 property of another company", req: request{path: "/verify/certificate-info", token: acmeToken, body: `{"certificate_id":"cert-1","company_id":"acme","property_id":"other-web"}`},
		status: 404, want: `{"status":404,"error":"property not found"}`},
	{name: "info/404 certificate of another company", req: request{path: "/verify/certificate-info", token: acmeToken, body: `{"certificate_id":"cert-other","company_id":"acme","property_id":"acme-web"}`},
		status: 404, want: `{"status":404,"error":"certificate not found"}`},

	// /verify/session/:company_id (D24)
	{name: "session/200", req: request{path: "/verify/session/acme", token: acmeToken, body: `{"session_id":"s2"}`},
		status: 200, charged: map[string]string{"acme": "0.1"},
		want: `{"success":true,"session_id":"s2","retention_status":"retained","retained_until":"2031-11-21T12:00:00Z","cost_charged":0.1,"remaining_balance":0.9}`},
	{name: "session/200 /api spelling", req: request{path: "/api/verify/session/acme", token: acmeToken, body: `{"session_id":"s1"}`},
		status: 200, charged: map[string]string{"acme": "0.1"},
		want: `{"success":true,"session_id":"s1","retention_status":"retained","retained_until":"2031-11-21T12:00:00Z","cost_charged":0.1,"remaining_balance":0.9}`},
	{name: "session/400 session_id missing", req: request{path: "/verify/session/acme", token: acmeToken, body: `{}`},
		status: 400, want: `{"status":400,"error":"session_id is required"}`},
	{name: "session/400 malformed company_id", req: request{path: "/verify/session/ac%20me", token: acmeToken, body: `{"session_id":"s2"}`},
		status: 400, want: `{"status":400,"error":"company_id ` + idRule + `"}`},
	{name: "session/401", req: request{path: "/verify/session/acme", body: `{"session_id":"s2"}`},
		status: 401, want: `{"status":401,"error":"an Authorization: Bearer token is required"}`},
	{name: "session/403", req: request{path: "/verify/session/acme", token: otherToken, body: `{"session_id":"s2"}`},
		status: 403, want: `{"status":403,"error":"the credentials are not those of company_id"}`},
	{name: "session/404 unknown", req: request{path: "/verify/session/acme", token: acmeToken, body: `{"session_id":"s9"}`},
		status: 404, want: `{"status":404,"error":"session not found"}`},
	{name: "session/404 another company's", req: request{path: "/verify/session/acme", token: acmeToken, body: `{"session_id":"s-other"}`},
		status: 404, want: `{"status":404,"error":"session not found"}`},
	{name: "session/409 already retained", req: request{path: "/verify/session/acme", token: acmeToken, body: `{"session_id":"s-retained"}`},
		status: 409, want: `{"status":409,"error":"session already retained"}`},
	{name: "session/402", req: request{path: "/verify/session/poor", token: poorToken, body: `{"session_id":"s-poor"}`},
		status: 402, want: `{"status":402,"error":"insufficient balance","required":0.1,"current_balance":0.01}`},

	// /verify/certificate/:company_id (D25, D27)
	{name: "certificate/200 revoked ones too", req: request{path: "/verify/certificate/acme", token: acmeToken, body: `{"session_id":"s1"}`},
		status: 200, charged: map[string]string{"acme": "0.1"},
		want: `{"success":true,"session_id":"s1","retention_status":"retained","retained_until":"2031-11-21T12:00:00Z","cost_charged":0.1,"remaining_balance":0.9,"certificate_ids":["cert-1","cert-2","cert-empty","cert-revoked"]}`},
	{name: "certificate/400", req: request{path: "/verify/certificate/acme", token: acmeToken, body: `{"session_id":7}`},
		status: 400, want: `{"status":400,"error":"session_id must be a string"}`},
	{name: "certificate/401", req: request{path: "/verify/certificate/acme", token: acmeRevoked, body: `{"session_id":"s1"}`},
		status: 401, want: `{"status":401,"error":"` + badToken + `"}`},
	{name: "certificate/403", req: request{path: "/verify/certificate/acme", token: buyerToken, body: `{"session_id":"s1"}`},
		status: 403, want: `{"status":403,"error":"the credentials are not those of company_id"}`},
	{name: "certificate/404 session without certificates", req: request{path: "/verify/certificate/acme", token: acmeToken, body: `{"session_id":"s2"}`},
		status: 404, want: `{"status":404,"error":"no certificate of the company for this session"}`},
	{name: "certificate/404 another company's session", req: request{path: "/verify/certificate/acme", token: acmeToken, body: `{"session_id":"s-other"}`},
		status: 404, want: `{"status":404,"error":"no certificate of the company for this session"}`},
	{name: "certificate/409 all retained", req: request{path: "/verify/certificate/acme", token: acmeToken, body: `{"session_id":"s-kept"}`},
		status: 409, want: `{"status":409,"error":"certificates already retained"}`},
	{name: "certificate/402", req: request{path: "/verify/certificate/poor", token: poorToken, body: `{"session_id":"s-poor"}`},
		status: 402, want: `{"status":402,"error":"insufficient balance","required":0.1,"current_balance":0.01}`},

	// /opt-out (D16–D18): free, unauthenticated
	{name: "opt-out/200 by certificate_id", req: request{path: "/opt-out", body: `{"company_id":"acme","certificate_id":"cert-1","reason":"called us"}`},
		status: 200, want: `{"success":true,"revoked":1,"certificates":["cert-1"],"timestamp":"2026-11-21T12:00:00Z"}`},
	{name: "opt-out/200 by email, any spelling", req: request{path: "/opt-out", body: `{"company_id":"acme","email":"  JANE@example.COM "}`},
		status: 200, want: `{"success":true,"revoked":2,"certificates":["cert-1","cert-2"],"timestamp":"2026-11-21T12:00:00Z"}`},
	{name: "opt-out/200 by mobile, only the company's", req: request{path: "/opt-out", body: `{"company_id":"acme","mobile":"+1 (555) 010-2000"}`},
		status: 200, want: `{"success":true,"revoked":1,"certificates":["cert-1"],"timestamp":"2026-11-21T12:00:00Z"}`},
	{name: "opt-out/200 union of identifiers", req: request{path: "/opt-out", body: `{"company_id":"acme","certificate_id":"cert-empty","email":"jane@example.com","mobile":"5550102000"}`},
		status: 200, want: `{"success":true,"revoked":3,"certificates":["cert-1","cert-2","cert-empty"],"timestamp":"2026-11-21T12:00:00Z"}`},
	{name: "opt-out/200 already revoked is listed", req: request{path: "/opt-out", body: `{"company_id":"acme","certificate_id":"cert-revoked"}`},
		status: 200, want: `{"success":true,"revoked":1,"certificates":["cert-revoked"],"timestamp":"2026-11-21T12:00:00Z"}`},
	{name: "opt-out/200 another company's certificate matches nothing", req: request{path: "/opt-out", body: `{"company_id":"acme","certificate_id":"cert-other"}`},
		status: 200, want: `{"success":true,"revoked":0,"certificates":[],"timestamp":"2026-11-21T12:00:00Z"}`},
	{name: "opt-out/200 unknown company matches nothing", req: request{path: "/opt-out", body: `{"company_id":"nobody","email":"jane@example.com"}`},
		status: 200, want: `{"success":true,"revoked":0,"certificates":[],"timestamp":"2026-11-21T12:00:00Z"}`},
	{name: "opt-out/400 no identifier", req: request{path: "/opt-out", body: `{"company_id":"acme","reason":"x"}`},
		status: 400, want: `{"status":400,"error":"one of certificate_id, email or mobile is required"}`},
	{name: "opt-out/400 company_id missing", req: request{path: "/opt-out", body: `{"email":"jane@example.com"}`},
		status: 400, want: `{"status":400,"error":"company_id is required"}`},
	{name: "opt-out/400 bad email", req: request{path: "/opt-out", body: `{"company_id":"acme","email":"jane"}`},
		status: 400, want: `{"status":400,"error":"email is not an email address"}`},
	{name: "opt-out/400 mobile not a string", req: request{path: "/opt-out", body: `{"company_id":"acme","mobile":5550102000}`},
		status: 400, want: `{"status":400,"error":"mobile must be a string"}`},
	{name: "opt-out/413", req: request{path: "/opt-out", body: `{"company_id":"acme","reason":"` + strings.Repeat("x", 1<<20) + `"}`},
		status: 413, want: `{"status":413,"error":"request body over 1048576 bytes"}`},
}

func batchBody(ids ...string) string {
	q := make([]string, len(ids))
	for i, id := range ids {
		q[i] = fmt.Sprintf("%q", id)
	}
	return `{"session_ids":[` + strings.Join(q, ",") + `]}`
}

var retainCases = []httpCase{
	// Retain API single (D22)
	{name: "retain/200", req: request{path: "/api/integrations/acme/retain/s2", token: acmeToken},
		status: 200, charged: map[string]string{"acme": "0.1"},
		want: `{"success":true,"sessionId":"s2","status":"queued_for_conversion","cost_charged":0.1,"remaining_balance":0.9}`},
	{name: "retain/200 body ignored", req: request{path: "/api/integrations/acme/retain/s1", token: acmeToken, body: `not json`},
		status: 200, charged: map[string]string{"acme": "0.1"},
		want: `{"success":true,"sessionId":"s1","status":"queued_for_conversion","cost_charged":0.1,"remaining_balance":0.9}`},
	{name: "retain/401 no token", req: request{path: "/api/integrations/acme/retain/s2"},
		status: 401, want: `{"success":false,"error":"an Authorization: Bearer token is required"}`},
	{name: "retain/401 unknown token", req: request{path: "/api/integrations/acme/retain/s2", token: "ck_unknown-token-value"},
		status: 401, want: `{"success":false,"error":"` + badToken + `"}`},
	{name: "retain/401 expired token", req: request{path: "/api/integrations/acme/retain/s2", token: acmeExpired},
		status: 401, want: `{"success":false,"error":"` + badToken + `"}`},
	{name: "retain/403 no permission", req: request{path: "/api/integrations/acme/retain/s2", token: acmeNoPerm},
		status: 403, want: `{"success":false,"error":"the token lacks the vzew_retention permission"}`},
	{name: "retain/403 another company's token", req: request{path: "/api/integrations/acme/retain/s2", token: otherToken},
		status: 403, want: `{"success":false,"error":"the token is not one of company acme"}`},
	{name: "retain/404 unknown", req: request{path: "/api/integrations/acme/retain/s9", token: acmeToken},
		status: 404, want: `{"success":false,"error":"session not found"}`},
	{name: "retain/404 another company's session", req: request{path: "/api/integrations/acme/retain/s-other", token: acmeToken},
		status: 404, want: `{"success":false,"error":"session not found"}`},
	{name: "retain/409", req: request{path: "/api/integrations/acme/retain/s-retained", token: acmeToken},
		status: 409, want: `{"success":false,"error":"session already retained"}`},
	{name: "retain/402", req: request{path: "/api/integrations/poor/retain/s-poor", token: poorToken},
		status: 402, want: `{"success":false,"error":"insufficient balance","required":0.1,"current_balance":0.01}`},

	// Retain API batch (D23)
	{name: "batch/200 mixed", req: request{path: "/api/integrations/acme/retain/batch", token: acmeToken,
		body: batchBody("s2", "s9", "s2", "s-other", "s-retained", "bad id", "s1")},
		status: 200, charged: map[string]string{"acme": "0.2"},
		want: `{"success":true,"retained":2,"failed":5,"total_cost":0.2,"remaining_balance":0.8,"results":[
			{"sessionId":"s2","success":true,"status":"queued_for_conversion"},
			{"sessionId":"s9","success":false,"error":"session not found"},
			{"sessionId":"s2","success":false,"error":"session already retained"},
			{"sessionId":"s-other","success":false,"error":"session not found"},
			{"sessionId":"s-retained","success":false,"error":"session already retained"},
			{"sessionId":"bad id","success":false,"error":"session_id ` + idRule + `"},
			{"sessionId":"s1","success":true,"status":"queued_for_conversion"}]}`},
	{name: "batch/200 insufficient entries are not charged", req: request{path: "/api/integrations/poor/retain/batch", token: poorToken, body: batchBody("s-poor")},
		status: 200,
		want: `{"success":true,"retained":0,"failed":1,"total_cost":0,"remaining_balance":0.01,"results":[
			{"sessionId":"s-poor","success":false,"error":"insufficient balance"}]}`},
	{name: "batch/400 empty", req: request{path: "/api/integrations/acme/retain/batch", token: acmeToken, body: batchBody()},
		status: 400, want: `{"success":false,"error":"session_ids must list 1 to 100 sessions"}`},
	{name: "batch/400 over 100", req: request{path: "/api/integrations/acme/retain/batch", token: acmeToken, body: batchBody(strings.Split(strings.Repeat("s2,", 101), ",")[:101]...)},
		status: 400, want: `{"success":false,"error":"session_ids must list 1 to 100 sessions"}`},
	{name: "batch/400 not an array", req: request{path: "/api/integrations/acme/retain/batch", token: acmeToken, body: `{"session_ids":"s2"}`},
		status: 400, want: `{"success":false,"error":"session_ids must be an array of strings"}`},
	{name: "batch/400 not strings", req: request{path: "/api/integrations/acme/retain/batch", token: acmeToken, body: `{"session_ids":[1]}`},
		status: 400, want: `{"success":false,"error":"session_ids must be an array of strings"}`},
	{name: "batch/400 missing", req: request{path: "/api/integrations/acme/retain/batch", token: acmeToken, body: `{}`},
		status: 400, want: `{"success":false,"error":"session_ids is required"}`},
	{name: "batch/401", req: request{path: "/api/integrations/acme/retain/batch", body: batchBody("s2")},
		status: 401, want: `{"success":false,"error":"an Authorization: Bearer token is required"}`},
	{name: "batch/403", req: request{path: "/api/integrations/acme/retain/batch", token: acmeNoPerm, body: batchBody("s2")},
		status: 403, want: `{"success":false,"error":"the token lacks the vzew_retention permission"}`},
	{name: "batch/413", req: request{path: "/api/integrations/acme/retain/batch", token: acmeToken, body: `{"session_ids":["` + strings.Repeat("x", 1<<20) + `"]}`},
		status: 413, want: `{"success":false,"error":"request body over 1048576 bytes"}`},
}

// TestEndpoints runs every endpoint × status case on every store, each on a
// fresh fixture, and checks status, body and every wallet afterwards (D3: a
// check is charged only when it returns 200).
func TestEndpoints(t *testing.T) {
	cases := append(append([]httpCase{}, verificationCases...), retainCases...)
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				e := setup(t, open(t))
				h := e.handler(t, httpadapter.Config{})
				rec := serve(h, tc.req)
				if rec.Code != tc.status {
					t.Errorf("status = %d, want %d; body %s", rec.Code, tc.status, rec.Body)
				}
				if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type = %q", ct)
				}
				checkBody(t, rec.Body.Bytes(), tc.want)
				checkBalances(t, e, tc.charged)
			})
		}
	})
}

func checkBalances(t *testing.T, e *env, charged map[string]string) {
	t.Helper()
	for _, c := range companies {
		start := wallet.Dollar
		if c == "poor" {
			start = wallet.Cent
		}
		want := start
		if s, ok := charged[c]; ok {
			amount, err := wallet.ParseAmount(s)
			must(t, err)
			want -= amount
		}
		if got := e.balance(t, c); got != want {
			t.Errorf("balance of %s = %s, want %s", c, got, want)
		}
	}
	for c := range charged {
		if !contains(companies, c) {
			t.Fatalf("charged names unknown company %s", c)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
