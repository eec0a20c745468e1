package httpadapter_test

import (
	"encoding/json"
	"testing"

	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/internal/teststore"
)

// Whatever the body and Idempotency-Key, every endpoint answers a
// documented status with a JSON body of its error shape, and never an
// internal error; a refusal stores nothing but its audit entry and the
// key's own record (D3, D40).
//
// go test -run '^$' -fuzz FuzzRequestBodies ./httpadapter
func FuzzRequestBodies(f *testing.F) {
	for _, s := range []string{
		matchBody("cert-1", "acme", consentText), termBody("cert-1", "acme", "agree"),
		`{"certificate_id":"cert-1","company_id":"acme","property_id":"acme-web"}`, `{"session_id":"s2"}`,
		`{"company_id":"acme","email":"jane@example.com"}`, batchBody("s1", "s2"), `{"session_ids":[1,"x"]}`,
		``, `null`, `[]`, `{"consent":{"a":1}}`, `{"certificate_id":"\u0000"}`, `{"company_id":"acme","mobile":"+"}`,
	} {
		f.Add(s, "")
		f.Add(s, "key-1")
	}
	f.Add(`{}`, "a b")
	f.Add(`{}`, "\x00")
	j := &journal{Store: teststore.Memory(f)}
	e := setup(f, j)
	h := e.handler(f, httpadapter.Config{OptOutPerMinute: -1, RetainPerMinute: -1})
	paths := []string{
		"/verify/match", "/verify/partial-match", "/verify/certificate-info", "/verify/session/acme",
		"/verify/certificate/acme", "/opt-out", "/api/integrations/acme/retain/batch",
	}
	// 422: a key the fuzzer gave before with another body (D40).
	allowed := map[int]bool{200: true, 400: true, 401: true, 402: true, 403: true, 404: true, 409: true, 413: true, 422: true}
	f.Fuzz(func(t *testing.T, body, key string) {
		for _, path := range paths {
			r := request{path: path, token: acmeToken, body: body}
			if key != "" {
				r = keyed(r, key)
			}
			mark := j.mark()
			rec := serve(h, r)
			if !allowed[rec.Code] {
				t.Fatalf("%s %q: status %d: %s", path, body, rec.Code, rec.Body)
			}
			var v map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
				t.Fatalf("%s %q: body is not a JSON object: %s", path, body, rec.Body)
			}
			if _, ok := v["error"]; rec.Code != 200 && !ok {
				t.Fatalf("%s %q: error body without an error: %s", path, body, rec.Body)
			}
			writes := j.since(mark, "AppendAudit", "ClaimIdempotencyKey", "AnswerIdempotencyKey", "ReleaseIdempotencyKey")
			if rec.Code != 200 && len(writes) > 0 {
				t.Fatalf("%s %q: %d %s stored %v", path, body, rec.Code, rec.Body, writes)
			}
		}
	})
}
