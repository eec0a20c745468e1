package httpadapter_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/audit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/contact"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/wallet"
)

const operatorSecret = "operator-secret-for-the-tests-0123456789"

// opCall sends one request and decodes its JSON answer.
func opCall(t *testing.T, h http.Handler, method, path, secret, body string) (int, map[string]any) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.RemoteAddr = "192.0.2.1:1234"
	if secret != "" {
		req.Header.Set("Authorization", "Bearer "+secret)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var out map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatalf("%s %s: %d, not a JSON object: %s", method, path, rec.Code, rec.Body)
	}
	return rec.Code, out
}

// TestOperatorAPI runs the operator API on every store: only the operator
// secret opens it, and it opens nothing else; webhook endpoints are added
// (the secret shown once), listed, disabled, enabled and deleted, their
// delivery logs read page by page, and every change is in the audit log as
// the operator's.
func TestOperatorAPI(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e := setup(t, open(t))
		h, err := httpadapter.New(httpadapter.Config{Service: e.svc, OperatorSecret: operatorSecret,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		must(t, err)
		op := h.Operator()
		const hooks = "/operator/companies/acme/webhooks"

		// Who may call what.
		if code, _ := opCall(t, op, "GET", hooks, acmeToken, ""); code != 401 {
			t.Errorf("a company token on the operator API: %d, want 401", code)
		}
		if code, _ := opCall(t, op, "GET", hooks, "", ""); code != 401 {
			t.Errorf("no credential on the operator API: %d, want 401", code)
		}
		if code, _ := opCall(t, h, "POST", "/verify/match", operatorSecret, matchBody("cert-1", "acme", consentText)); code != 401 {
			t.Errorf("the operator secret on a public route: %d, want 401", code)
		}
		if code, _ := opCall(t, h, "GET", hooks, operatorSecret, ""); code != 404 {
			t.Errorf("the operator API on the public handler: %d, want 404", code)
		}
		if code, _ := opCall(t, op, "POST", "/verify/match", acmeToken, matchBody("cert-1", "acme", consentText)); code != 404 {
			t.Errorf("a public route on the operator handler: %d, want 404", code)
		}

		// Add, list, disable, enable.
		code, added := opCall(t, op, "POST", hooks, operatorSecret, `{"url":"https://hooks.acme.example/in","events":["consent.revoked","session.retained"]}`)
		id, _ := added["id"].(string)
		secret, _ := added["secret"].(string)
		if code != 201 || id == "" || !strings.HasPrefix(secret, "whsec_") {
			t.Fatalf("add: %d %v", code, added)
		}
		if code, body := opCall(t, op, "POST", hooks, operatorSecret, `{"url":"ftp://hooks.acme.example","events":["consent.revoked"]}`); code != 400 {
			t.Errorf("add with an ftp URL: %d %v, want 400", code, body)
		}
		if code, body := opCall(t, op, "POST", "/operator/companies/nobody/webhooks", operatorSecret, `{"url":"https://x.example","events":["consent.revoked"]}`); code != 404 {
			t.Errorf("add to an unknown company: %d %v, want 404", code, body)
		}
		list := func() []any {
			t.Helper()
			code, body := opCall(t, op, "GET", hooks, operatorSecret, "")
			eps, _ := body["endpoints"].([]any)
			if code != 200 || len(eps) != 1 {
				t.Fatalf("list: %d %v", code, body)
			}
			return eps
		}
		ep := list()[0].(map[string]any)
		if ep["id"] != id || ep["url"] != "https://hooks.acme.example/in" || ep["secret"] != nil || ep["disabled_at"] != nil {
			t.Errorf("listed endpoint %v; want it, enabled, without its secret", ep)
		}
		if code, _ := opCall(t, op, "POST", hooks+"/"+id+"/disable", operatorSecret, ""); code != 200 {
			t.Errorf("disable: %d", code)
		}
		if list()[0].(map[string]any)["disabled_at"] == nil {
			t.Error("disabled endpoint listed without disabled_at")
		}
		if code, _ := opCall(t, op, "POST", hooks+"/"+id+"/enable", operatorSecret, ""); code != 200 {
			t.Errorf("enable: %d", code)
		}
		if list()[0].(map[string]any)["disabled_at"] != nil {
			t.Error("enabled endpoint listed with disabled_at")
		}
		if code, _ := opCall(t, op, "GET", "/operator/companies/nobody/webhooks", operatorSecret, ""); code != 404 {
			t.Errorf("list of an unknown company: %d, want 404", code)
		}

		// The delivery log, page by page.
		must(t, e.store.Update(ctx, func(tx consent.Tx) error {
			for i := range 3 {
				err := tx.AppendWebhookDelivery(ctx, &consent.WebhookDelivery{EndpointID: id, MessageID: "msg_" + string(rune('a'+i)),
					EventType: consent.EventConsentRevoked, Attempt: 1, At: time.Date(2026, 11, 22, 10, 0, i, 0, time.UTC), Status: 500 + i,
					Duration: 1500 * time.Microsecond})
				if err != nil {
					return err
				}
			}
			return nil
		}))
		deliveries := hooks + "/" + id + "/deliveries"
		code, page := opCall(t, op, "GET", deliveries+"?limit=2", operatorSecret, "")
		ds, _ := page["deliveries"].([]any)
		if code != 200 || len(ds) != 2 || ds[0].(map[string]any)["message_id"] != "msg_c" || ds[0].(map[string]any)["duration_ms"] != 1.5 {
			t.Fatalf("first page: %d %v", code, page)
		}
		next, ok := page["next_before"].(float64)
		if !ok {
			t.Fatalf("first page without next_before: %v", page)
		}
		code, page = opCall(t, op, "GET", deliveries+"?limit=2&before="+jsonInt(next), operatorSecret, "")
		ds, _ = page["deliveries"].([]any)
		if code != 200 || len(ds) != 1 || ds[0].(map[string]any)["message_id"] != "msg_a" || page["next_before"] != nil {
			t.Errorf("second page: %d %v", code, page)
		}
		for _, q := range []string{"?limit=abc", "?limit=0x10", "?limit=5000", "?before=-1"} {
			if code, body := opCall(t, op, "GET", deliveries+q, operatorSecret, ""); code != 400 {
				t.Errorf("deliveries%s: %d %v, want 400", q, code, body)
			}
		}
		if code, _ := opCall(t, op, "GET", "/operator/companies/other/webhooks/"+id+"/deliveries", operatorSecret, ""); code != 404 {
			t.Errorf("another company's endpoint's log: %d, want 404", code)
		}

		// Delete, and the audit log of it all.
		if code, _ := opCall(t, op, "DELETE", hooks+"/"+id, operatorSecret, ""); code != 200 {
			t.Errorf("delete: %d", code)
		}
		if code, _ := opCall(t, op, "DELETE", hooks+"/"+id, operatorSecret, ""); code != 404 {
			t.Errorf("delete again: %d, want 404", code)
		}
		code, log := opCall(t, op, "GET", "/operator/companies/acme/audit?action=webhook.", operatorSecret, "")
		entries, _ := log["entries"].([]any)
		var got []string
		for _, x := range entries {
			en := x.(map[string]any)
			if en["actor"] != consent.ActorOperator || en["target"] != id || strings.Contains(en["detail"].(string), secret) {
				t.Errorf("audit entry %v; want the operator's, about the endpoint, without its secret", en)
			}
			got = append(got, en["action"].(string)+":"+en["outcome"].(string))
		}
		want := "webhook.create:ok webhook.disable:ok webhook.enable:ok webhook.delete:ok webhook.delete:not_found"
		if code != 200 || strings.Join(got, " ") != want {
			t.Errorf("audit log: %d %v; want %s", code, got, want)
		}
		if code, page := opCall(t, op, "GET", "/operator/companies/acme/audit?limit=1", operatorSecret, ""); code != 200 ||
			len(page["entries"].([]any)) != 1 || page["next_after"] == nil {
			t.Errorf("audit page of one: %d %v", code, page)
		}
		if _, err := audit.VerifyChain(ctx, e.svc.Store(), "acme"); err != nil {
			t.Errorf("audit chain: %v", err)
		}
	})
}

func jsonInt(f float64) string {
	b, _ := json.Marshal(int64(f))
	return string(b)
}

// Without an operator secret the operator API refuses everyone; a short
// secret is refused by New.
func TestOperatorAPIOff(t *testing.T) {
	e := setup(t, teststore.Memory(t))
	h, err := httpadapter.New(httpadapter.Config{Service: e.svc, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	must(t, err)
	for _, secret := range []string{"", operatorSecret, acmeToken} {
		if code, _ := opCall(t, h.Operator(), "GET", "/operator/companies/acme/webhooks", secret, ""); code != 401 {
			t.Errorf("operator API without a configured secret, credential %q: %d, want 401", secret, code)
		}
	}
	if _, err := httpadapter.New(httpadapter.Config{Service: e.svc, OperatorSecret: "short"}); err == nil {
		t.Error("New accepted an operator secret of 5 bytes")
	}
}

// opDo sends one request with headers and decodes its JSON answer.
func opDo(t *testing.T, h http.Handler, method, path, secret, body string, header http.Header) (int, map[string]any, http.Header) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.RemoteAddr = "192.0.2.1:1234"
	if secret != "" {
		req.Header.Set("Authorization", "Bearer "+secret)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var out map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatalf("%s %s: %d, not a JSON object: %s", method, path, rec.Code, rec.Body)
	}
	return rec.Code, out, rec.Header()
}

// operatorRequests call every operator route but the webhooks', in an order
// that works on a fresh fixture, with the status each gets. Beside
// TestOperatorAPI, the validators of the OpenAPI document
// (TestOpenAPIValidatesRecordedAnswers, TestPrismValidatesAnswers) check
// their answers.
var operatorRequests = []struct {
	method, path, body, key string
	status                  int
}{
	{"POST", "/operator/companies", `{"id":"newco","name":"New Co","authorized_third_parties":["acme"]}`, "", 201},
	{"POST", "/operator/companies", `{"id":"newco","name":"New Co"}`, "", 409},
	{"GET", "/operator/companies?limit=2", "", "", 200},
	{"GET", "/operator/companies/newco", "", "", 200},
	{"GET", "/operator/companies/nobody", "", "", 404},
	{"PUT", "/operator/companies/newco/attestation", `{"attest_certificates":true}`, "", 200},
	{"PUT", "/operator/companies/newco/attestation", `{}`, "", 400},
	{"PUT", "/operator/companies/nobody/attestation", `{"attest_certificates":false}`, "", 404},
	{"PUT", "/operator/companies/newco/insights-rules", `{"max_per_hour":2,"min_seconds_on_page":3.5}`, "", 200},
	{"PUT", "/operator/companies/newco/insights-rules", `{"max_per_hour":"2"}`, "", 400},
	{"PUT", "/operator/companies/nobody/insights-rules", `{}`, "", 404},
	{"POST", "/operator/companies/newco/properties", `{"id":"newco-web","name":"Web","allowed_origins":["https://newco.example"]}`, "", 201},
	{"GET", "/operator/companies/newco/properties", "", "", 200},
	{"PUT", "/operator/companies/newco/properties/newco-web/allowed-origins", `{"allowed_origins":[]}`, "", 200},
	{"PUT", "/operator/companies/newco/properties/newco-web/allowed-origins", `{}`, "", 400},
	{"POST", "/operator/companies/newco/tokens", `{"permissions":["vzew_retention"],"expires_at":"2030-01-01T00:00:00Z"}`, "", 201},
	{"GET", "/operator/companies/newco/tokens", "", "", 200},
	{"POST", "/operator/companies/newco/tokens/tok_none/revoke", "", "", 404},
	{"POST", "/operator/companies/newco/wallet/top-ups", `{"amount":25.5,"reference":"inv-1"}`, "", 400},
	{"POST", "/operator/companies/newco/wallet/top-ups", `{"amount":25.5,"reference":"inv-1"}`, "topup-1", 201},
	{"POST", "/operator/companies/newco/wallet/top-ups", `{"amount":25.5,"reference":"inv-1"}`, "topup-1", 201},
	{"POST", "/operator/companies/newco/wallet/top-ups", `{"amount":1,"reference":"inv-1"}`, "topup-1", 422},
	// Up to a billion dollars a wallet (wallet.MaxBalance), and no further.
	{"POST", "/operator/companies/newco/wallet/top-ups", `{"amount":999999974.5,"reference":"inv-2"}`, "topup-2", 201},
	{"POST", "/operator/companies/newco/wallet/top-ups", `{"amount":0.000001,"reference":"inv-3"}`, "topup-3", 400},
	{"GET", "/operator/companies/newco/wallet", "", "", 200},
	{"GET", "/operator/companies/acme/wallet/ledger?limit=1", "", "", 200},
	{"GET", "/operator/companies/acme/certificates?limit=2", "", "", 200},
	{"POST", "/operator/companies/acme/certificates/search", `{"email":"jane@example.com"}`, "", 200},
	{"GET", "/operator/companies/acme/certificates/cert-1", "", "", 200},
	{"GET", "/operator/companies/acme/certificates/cert-other", "", "", 404},
	{"GET", "/operator/companies/acme/sessions?limit=2", "", "", 200},
	{"GET", "/operator/companies/acme/sessions/s1", "", "", 200},
	{"GET", "/operator/companies/acme/revocations", "", "", 200},
	{"GET", "/operator/companies/acme/revocations?before=zzz", "", "", 400},
	{"GET", "/operator/companies/acme/audit/verify", "", "", 200},
	{"GET", "/operator/companies/acme/audit/verify?from=2&limit=2", "", "", 200},
	{"GET", "/operator/companies/acme/audit/verify?limit=100001", "", "", 400},
	{"GET", "/operator/companies/nobody/audit/verify", "", "", 404},
}

// wildcard matches a pattern's {wildcards}.
var wildcard = regexp.MustCompile(`\{[^}]+\}`)

// TestOperatorManagesCompanies runs the operator API's routes for
// companies, properties, tokens, wallets and what companies hold, on every
// store: only the operator secret opens them and it opens nothing else;
// each company's data is read under its own path only (D9); lists come a
// page at a time; a top-up needs an Idempotency-Key and credits once
// (D40); every change is in the company's audit log as the operator's
// (D42).
func TestOperatorManagesCompanies(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e := setup(t, open(t))
		h, err := httpadapter.New(httpadapter.Config{Service: e.svc, OperatorSecret: operatorSecret,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		must(t, err)
		op := h.Operator()
		call := func(method, path, body string) (int, map[string]any) {
			t.Helper()
			code, out, _ := opDo(t, op, method, path, operatorSecret, body, nil)
			return code, out
		}

		t.Run("Credentials", func(t *testing.T) {
			var clients uint32
			for _, rt := range h.Routes() {
				path := wildcard.ReplaceAllString(rt.Pattern, "acme")
				if rt.Group != httpadapter.OperatorGroup {
					if (rt.Auth == httpadapter.AuthToken || rt.Auth == httpadapter.AuthRetention) && rt.Method == "POST" {
						if code, _, _ := opDo(t, h, rt.Method, path, operatorSecret, `{}`, nil); code != 401 {
							t.Errorf("the operator secret on %s %s: %d, want 401", rt.Method, rt.Pattern, code)
						}
					}
					continue
				}
				// Each from an address of its own: so many wrong secrets from
				// one would be limited (OperatorFailuresPerMinute), 429.
				for _, secret := range []string{acmeToken, buyerToken, ""} {
					clients++
					req := httptest.NewRequest(rt.Method, path, strings.NewReader(`{}`))
					req.RemoteAddr = nthClient(clients)
					if secret != "" {
						req.Header.Set("Authorization", "Bearer "+secret)
					}
					rec := httptest.NewRecorder()
					op.ServeHTTP(rec, req)
					if rec.Code != 401 {
						t.Errorf("credential %q on %s %s: %d, want 401", secret, rt.Method, rt.Pattern, rec.Code)
					}
				}
				if code, _, _ := opDo(t, h, rt.Method, path, operatorSecret, `{}`, nil); code != 404 && code != 405 {
					t.Errorf("%s %s on the public handler: %d, want 404 or 405", rt.Method, rt.Pattern, code)
				}
			}
		})

		t.Run("Companies", func(t *testing.T) {
			code, c := call("POST", "/operator/companies", `{"id":"newco","name":"New Co","authorized_third_parties":["acme","acme"]}`)
			if code != 201 || c["id"] != "newco" || c["name"] != "New Co" || c["created_at"] != "2026-11-21T12:00:00Z" ||
				fmt.Sprint(c["authorized_third_parties"]) != "[acme]" || c["attest_certificates"] != false {
				t.Fatalf("create: %d %v", code, c)
			}
			for body, want := range map[string]int{
				`{"id":"newco","name":"Again"}`: 409,
				`{"id":"new co","name":"x"}`:    400,
				`{"id":"x2"}`:                   400,
				`{"id":"x3","name":"X3","authorized_third_parties":"acme"}`: 400,
				`{"id":"x4","name":"X4","attest_certificates":"yes"}`:       400,
			} {
				if code, out := call("POST", "/operator/companies", body); code != want {
					t.Errorf("create %s: %d %v, want %d", body, code, out, want)
				}
			}
			if code, c := call("GET", "/operator/companies/newco", ""); code != 200 || c["id"] != "newco" {
				t.Errorf("get: %d %v", code, c)
			}
			if code, _ := call("GET", "/operator/companies/nobody", ""); code != 404 {
				t.Errorf("get an unknown company: %d, want 404", code)
			}
			var ids []string
			next := ""
			for range 10 {
				code, page := call("GET", "/operator/companies?limit=4&after="+next, "")
				if code != 200 {
					t.Fatalf("list: %d %v", code, page)
				}
				for _, c := range page["companies"].([]any) {
					ids = append(ids, c.(map[string]any)["id"].(string))
				}
				n, ok := page["next_after"].(string)
				if !ok {
					break
				}
				next = n
			}
			if got := strings.Join(ids, " "); got != "acme buyer closed newco other poor" {
				t.Errorf("companies page by page: %s", got)
			}
			if code, _ := call("GET", "/operator/companies?limit=501", ""); code != 400 {
				t.Errorf("a page of 501: %d, want 400", code)
			}
		})

		// Attestation of every certificate (D49): set at creation or later,
		// only by an explicit true or false.
		t.Run("Attestation", func(t *testing.T) {
			const newco = "/operator/companies/newco"
			for _, on := range []bool{true, false, false} {
				body := fmt.Sprintf(`{"attest_certificates":%t}`, on)
				if code, c := call("PUT", newco+"/attestation", body); code != 200 || c["id"] != "newco" || c["attest_certificates"] != on ||
					fmt.Sprint(c["authorized_third_parties"]) != "[acme]" {
					t.Errorf("PUT attestation %s: %d %v", body, code, c)
				}
				if code, c := call("GET", newco, ""); code != 200 || c["attest_certificates"] != on {
					t.Errorf("get after PUT attestation %s: %d %v", body, code, c)
				}
			}
			for _, r := range []struct {
				path, body string
				status     int
			}{
				{newco + "/attestation", `{}`, 400},
				{newco + "/attestation", `{"attest_certificates":null}`, 400},
				{newco + "/attestation", `{"attest_certificates":"true"}`, 400},
				{"/operator/companies/nobody/attestation", `{"attest_certificates":true}`, 404},
				{"/operator/companies/no%20b/attestation", `{"attest_certificates":true}`, 400},
			} {
				if code, out := call("PUT", r.path, r.body); code != r.status {
					t.Errorf("PUT %s %s: %d %v, want %d", r.path, r.body, code, out, r.status)
				}
			}
			if code, c := call("GET", newco, ""); code != 200 || c["attest_certificates"] != false {
				t.Errorf("refused PUTs changed the setting: %d %v", code, c)
			}
			code, c := call("POST", "/operator/companies", `{"id":"attests","name":"Attests","attest_certificates":true}`)
			if code != 201 || c["attest_certificates"] != true {
				t.Errorf("create attesting: %d %v", code, c)
			}
			if code, c := call("GET", "/operator/companies/attests", ""); code != 200 || c["attest_certificates"] != true {
				t.Errorf("get a company created attesting: %d %v", code, c)
			}
		})

		// The thresholds of the bot verdict (D50): a PUT replaces them all,
		// a threshold left out is its default; one a store must not keep
		// is refused and changes nothing; the change is audited.
		t.Run("InsightsRules", func(t *testing.T) {
			const path = "/operator/companies/newco/insights-rules"
			code, c := call("PUT", path, `{"max_per_hour":2,"min_seconds_on_page":3.5,"suspects_for_bot":-1}`)
			want := `map[max_per_hour:2 min_seconds_on_page:3.5 suspects_for_bot:-1]`
			if code != 200 || fmt.Sprint(c["insights_rules"]) != want {
				t.Errorf("PUT rules: %d %v, want rules %s", code, c, want)
			}
			if code, c := call("GET", "/operator/companies/newco", ""); code != 200 || fmt.Sprint(c["insights_rules"]) != want {
				t.Errorf("get after PUT rules: %d %v", code, c)
			}
			for _, r := range []struct {
				path, body string
				status     int
			}{
				{path, `{"max_per_hour":10000000}`, 400},
				{path, `{"min_seconds_on_page":1e300}`, 400},
				{path, `{"max_per_day":1.5}`, 400},
				{"/operator/companies/nobody/insights-rules", `{"max_per_hour":2}`, 404},
			} {
				if code, out := call("PUT", r.path, r.body); code != r.status {
					t.Errorf("PUT %s %s: %d %v, want %d", r.path, r.body, code, out, r.status)
				}
			}
			if code, c := call("GET", "/operator/companies/newco", ""); code != 200 || fmt.Sprint(c["insights_rules"]) != want {
				t.Errorf("refused PUTs changed the rules: %d %v", code, c)
			}
			if code, c := call("PUT", path, `{}`); code != 200 || fmt.Sprint(c["insights_rules"]) != "map[]" {
				t.Errorf("PUT {} (the defaults): %d %v", code, c)
			}
			entries, err := e.svc.AuditLog(context.Background(), consent.AuditQuery{CompanyID: "newco", ActionPrefix: consent.AuditCompanyInsightsRules})
			must(t, err)
			n := 0
			for _, a := range entries {
				if a.Action == consent.AuditCompanyInsightsRules {
					n++
				}
			}
			if n != 2 {
				t.Errorf("%d %s audit entries, want 2 (the refused PUTs record none)", n, consent.AuditCompanyInsightsRules)
			}
		})

		t.Run("Properties", func(t *testing.T) {
			const props = "/operator/companies/newco/properties"
			code, p := call("POST", props, `{"id":"newco-web","name":"Web","allowed_origins":["HTTPS://NewCo.Example:443"]}`)
			if code != 201 || p["id"] != "newco-web" || fmt.Sprint(p["allowed_origins"]) != "[https://newco.example]" {
				t.Fatalf("add: %d %v", code, p)
			}
			if code, _ := call("POST", props, `{"id":"newco-web","name":"Web"}`); code != 409 {
				t.Errorf("add the same id: %d, want 409", code)
			}
			if code, _ := call("POST", props, `{"name":"Web","allowed_origins":["ftp://x.example"]}`); code != 400 {
				t.Errorf("add with an ftp origin: %d, want 400", code)
			}
			if code, _ := call("POST", "/operator/companies/nobody/properties", `{"name":"Web"}`); code != 404 {
				t.Errorf("add to an unknown company: %d, want 404", code)
			}
			code, p = call("POST", props, `{"name":"Second"}`)
			second, _ := p["id"].(string)
			if code != 201 || !strings.HasPrefix(second, "prop") || fmt.Sprint(p["allowed_origins"]) != "[]" {
				t.Errorf("add without an id: %d %v", code, p)
			}
			origins := props + "/newco-web/allowed-origins"
			code, p = call("PUT", origins, `{"allowed_origins":["https://a.example","http://localhost:8080"]}`)
			if code != 200 || fmt.Sprint(p["allowed_origins"]) != "[https://a.example http://localhost:8080]" {
				t.Errorf("set origins: %d %v", code, p)
			}
			for path, want := range map[string]int{
				props + "/acme-web/allowed-origins":                             404, // another company's property
				props + "/nothing/allowed-origins":                              404,
				"/operator/companies/acme/properties/newco-web/allowed-origins": 404,
			} {
				if code, _ := call("PUT", path, `{"allowed_origins":[]}`); code != want {
					t.Errorf("PUT %s: %d, want %d", path, code, want)
				}
			}
			if code, _ := call("PUT", origins, `{}`); code != 400 {
				t.Errorf("set origins without the list: %d, want 400", code)
			}
			code, list := call("GET", props, "")
			ps, _ := list["properties"].([]any)
			if code != 200 || len(ps) != 2 || ps[0].(map[string]any)["id"] != "newco-web" ||
				fmt.Sprint(ps[0].(map[string]any)["allowed_origins"]) != "[https://a.example http://localhost:8080]" {
				t.Errorf("list: %d %v", code, list)
			}
			if code, list := call("GET", "/operator/companies/acme/properties", ""); code != 200 || len(list["properties"].([]any)) != 1 {
				t.Errorf("acme's properties: %d %v; want acme-web alone", code, list)
			}
		})

		t.Run("Tokens", func(t *testing.T) {
			const tokens = "/operator/companies/newco/tokens"
			code, tok := call("POST", tokens, `{"permissions":["vzew_retention"]}`)
			id, _ := tok["id"].(string)
			secret, _ := tok["secret"].(string)
			if code != 201 || id == "" || !strings.HasPrefix(secret, consentkit.TokenPrefix) || tok["active"] != true {
				t.Fatalf("issue: %d %v", code, tok)
			}
			// The secret works on the public API, and never on the operator's.
			if code, _, _ := opDo(t, h, "GET", "/api/integrations/newco/sessions/s9", secret, "", nil); code != 404 {
				t.Errorf("the issued token on the Retain API: %d, want 404 (authenticated, no such session)", code)
			}
			if code, _, _ := opDo(t, op, "GET", tokens, secret, "", nil); code != 401 {
				t.Errorf("the issued token on the operator API: %d, want 401", code)
			}
			for body, want := range map[string]int{
				`{"permissions":["admin"]}`:                  400,
				`{"expires_at":"tomorrow"}`:                  400,
				`{"expires_at":"2020-01-01T00:00:00Z"}`:      400, // past
				`{"expires_at":"0001-01-01T00:00:00Z"}`:      400, // past, though the zero time
				`{"expires_at":"0001-01-01T01:00:00+01:00"}`: 400, // the same
				`{"expires_at":"2027-01-01T00:00:00+01:00"}`: 201,
				`{"permissions":"vzew_retention"}`:           400,
				`{"permissions":[],"expires_at":""}`:         201,
			} {
				if code, out := call("POST", tokens, body); code != want {
					t.Errorf("issue %s: %d %v, want %d", body, code, out, want)
				}
			}
			if code, _ := call("POST", "/operator/companies/nobody/tokens", `{}`); code != 404 {
				t.Errorf("issue for an unknown company: %d, want 404", code)
			}
			code, list := call("GET", tokens, "")
			ts, _ := list["tokens"].([]any)
			if code != 200 || len(ts) != 3 {
				t.Fatalf("list: %d %v", code, list)
			}
			for _, x := range ts {
				tb := x.(map[string]any)
				if _, ok := tb["secret"]; ok {
					t.Errorf("a listed token shows a secret: %v", tb)
				}
				if _, ok := tb["digest"]; ok {
					t.Errorf("a listed token shows a digest: %v", tb)
				}
			}
			raw := httptest.NewRecorder()
			req := httptest.NewRequest("GET", tokens, nil)
			req.Header.Set("Authorization", "Bearer "+operatorSecret)
			op.ServeHTTP(raw, req)
			if d := consent.DigestOf(secret).String(); strings.Contains(raw.Body.String(), d) || strings.Contains(raw.Body.String(), secret) {
				t.Error("the token list holds a secret or its digest")
			}
			// Revoke: at once, again with the same answer, never another company's.
			if code, _ := call("POST", tokens+"/"+id+"/revoke", ""); code != 200 {
				t.Errorf("revoke: %d", code)
			}
			if code, _ := call("POST", tokens+"/"+id+"/revoke", ""); code != 200 {
				t.Errorf("revoke again: %d", code)
			}
			if code, _, _ := opDo(t, h, "GET", "/api/integrations/newco/sessions/s9", secret, "", nil); code != 401 {
				t.Errorf("the revoked token on the Retain API: %d, want 401", code)
			}
			_, list = call("GET", tokens, "")
			for _, x := range asList(list["tokens"]) {
				if tb := x.(map[string]any); tb["id"] == id && (tb["active"] != false || tb["revoked_at"] != "2026-11-21T12:00:00Z") {
					t.Errorf("the revoked token listed as %v", tb)
				}
			}
			code, acme := call("GET", "/operator/companies/acme/tokens", "")
			acmeTokens, _ := acme["tokens"].([]any)
			if code != 200 || len(acmeTokens) != 4 {
				t.Fatalf("acme's tokens: %d %v", code, acme)
			}
			active := 0
			for _, x := range acmeTokens {
				if x.(map[string]any)["active"] == true {
					active++
				}
			}
			if active != 2 {
				t.Errorf("acme has %d active tokens listed, want 2 (one expired, one revoked)", active)
			}
			acmeID := acmeTokens[0].(map[string]any)["id"].(string)
			if code, _ := call("POST", tokens+"/"+acmeID+"/revoke", ""); code != 404 {
				t.Errorf("revoke acme's token under newco: %d, want 404", code)
			}
		})

		t.Run("Wallet", func(t *testing.T) {
			const topUps = "/operator/companies/newco/wallet/top-ups"
			key := func(k string) http.Header { return http.Header{httpadapter.IdempotencyHeader: {k}} }
			body := `{"amount":25.5,"reference":"inv-1"}`
			if code, out, _ := opDo(t, op, "POST", topUps, operatorSecret, body, nil); code != 400 ||
				!strings.Contains(out["error"].(string), httpadapter.IdempotencyHeader) {
				t.Errorf("top-up without a key: %d %v, want 400 naming the header", code, out)
			}
			code, first, _ := opDo(t, op, "POST", topUps, operatorSecret, body, key("topup-1"))
			if code != 201 || fmt.Sprint(first["balance"]) != "25.5" || first["reference"] != "inv-1" {
				t.Fatalf("top-up: %d %v", code, first)
			}
			code, again, hdr := opDo(t, op, "POST", topUps, operatorSecret, body, key("topup-1"))
			if code != 201 || hdr.Get(httpadapter.ReplayedHeader) != "true" || fmt.Sprint(again) != fmt.Sprint(first) {
				t.Errorf("the top-up sent again: %d %v replayed=%q; want the first answer", code, again, hdr.Get(httpadapter.ReplayedHeader))
			}
			if code, _, _ := opDo(t, op, "POST", topUps, operatorSecret, `{"amount":1}`, key("topup-1")); code != 422 {
				t.Errorf("the key with another top-up: %d, want 422", code)
			}
			// The same key is the company's: on another company it is another key.
			if code, out, _ := opDo(t, op, "POST", "/operator/companies/poor/wallet/top-ups", operatorSecret, body, key("topup-1")); code != 201 ||
				fmt.Sprint(out["balance"]) != "25.51" {
				t.Errorf("the key on another company: %d %v", code, out)
			}
			for b, field := range map[string]string{
				`{"amount":"abc"}`:     "amount",
				`{"amount":0.0000001}`: "amount",
				`{"amount":-5}`:        "amount",
				`{"reference":"x"}`:    "amount",
				`{"amount":true}`:      "amount",
			} {
				code, out, _ := opDo(t, op, "POST", topUps, operatorSecret, b, key("bad-"+b))
				if msg, _ := out["error"].(string); code != 400 || !strings.Contains(msg, field) {
					t.Errorf("top-up %s: %d %v, want 400 naming %s", b, code, out, field)
				}
			}
			if code, _, _ := opDo(t, op, "POST", "/operator/companies/nobody/wallet/top-ups", operatorSecret, body, key("k")); code != 404 {
				t.Errorf("top-up of an unknown company: %d, want 404", code)
			}
			if code, _, _ := opDo(t, op, "POST", topUps, operatorSecret, `{"amount":"0.5","reference":"inv-2"}`, key("topup-2")); code != 201 {
				t.Errorf("a second top-up: %d", code)
			}
			if code, bal := call("GET", "/operator/companies/newco/wallet", ""); code != 200 || fmt.Sprint(bal["balance"]) != "26" {
				t.Errorf("balance: %d %v, want 26 (two top-ups, one of them sent twice)", code, bal)
			}
			if got := e.balance(t, "newco"); got != 26*wallet.Dollar {
				t.Errorf("the wallet holds %v, want 26", got)
			}
			if code, _ := call("GET", "/operator/companies/nobody/wallet", ""); code != 404 {
				t.Errorf("balance of an unknown company: %d, want 404", code)
			}

			// The ledger, newest first, page by page; the two top-ups share
			// one time (the fixture's clock stands still), so the id orders them.
			const ledger = "/operator/companies/newco/wallet/ledger"
			var refs []string
			next := ""
			for range 5 {
				code, page := call("GET", ledger+"?limit=1&before="+next, "")
				if code != 200 {
					t.Fatalf("ledger: %d %v", code, page)
				}
				for _, x := range page["entries"].([]any) {
					en := x.(map[string]any)
					if en["kind"] != "top_up" || en["credit"] != true {
						t.Errorf("ledger entry %v", en)
					}
					refs = append(refs, en["reference"].(string))
				}
				n, ok := page["next_before"].(string)
				if !ok {
					break
				}
				next = n
			}
			slices.Sort(refs)
			if fmt.Sprint(refs) != "[inv-1 inv-2]" {
				t.Errorf("ledger page by page: %v, want each top-up once", refs)
			}
			code, page := call("GET", "/operator/companies/acme/wallet/ledger", "")
			entries, _ := page["entries"].([]any)
			if code != 200 || len(entries) != 1 || fmt.Sprint(entries[0].(map[string]any)["amount"]) != "1" || page["next_before"] != nil {
				t.Errorf("acme's ledger: %d %v", code, page)
			}
			for q, want := range map[string]int{
				"?since=2026-11-21T12:00:00Z": 2, "?until=2026-11-21T12:00:00Z": 0,
				"?since=2026-11-21T11:00:00Z&until=2026-11-21T13:00:00Z": 2,
				// Bounds past the years every store keeps bound nothing.
				"?since=0000-01-01T00:00:00Z": 2, "?since=0001-01-01T00:30:00%2B01:00": 2,
				"?until=9999-12-31T23:00:00-05:00": 2,
			} {
				if code, page := call("GET", ledger+q, ""); code != 200 || len(page["entries"].([]any)) != want {
					t.Errorf("ledger%s: %d %v, want %d entries", q, code, page, want)
				}
			}
			for _, q := range []string{"?since=yesterday", "?until=1", "?before=nope", "?before=" + consent.CursorOf(now, "bad\x00id").String(), "?limit=0x1", "?limit=501", "?limit=-1"} {
				if code, out := call("GET", ledger+q, ""); code != 400 {
					t.Errorf("ledger%s: %d %v, want 400", q, code, out)
				}
			}
		})

		t.Run("Certificates", func(t *testing.T) {
			const certs = "/operator/companies/acme/certificates"
			var ids []string
			next := ""
			for range 10 {
				code, page := call("GET", certs+"?limit=2&before="+next, "")
				if code != 200 {
					t.Fatalf("certificates: %d %v", code, page)
				}
				list := page["certificates"].([]any)
				if len(list) > 2 {
					t.Fatalf("a page of 2 holds %d", len(list))
				}
				for _, x := range list {
					ids = append(ids, x.(map[string]any)["id"].(string))
				}
				n, ok := page["next_before"].(string)
				if !ok {
					break
				}
				next = n
			}
			// All at one time: newest first is by id, descending.
			if got := strings.Join(ids, " "); got != "cert-revoked cert-kept cert-empty cert-2 cert-1" {
				t.Errorf("acme's certificates page by page: %s", got)
			}
			if code, page := call("GET", certs+"?until="+created.Format(time.RFC3339), ""); code != 200 || len(page["certificates"].([]any)) != 0 {
				t.Errorf("certificates created before the fixture's: %d %v", code, page)
			}
			code, c := call("GET", certs+"/cert-1", "")
			consents, _ := c["consents"].([]any)
			if code != 200 || c["session_id"] != "s1" || c["email_given"] != true || c["mobile_given"] != true || len(consents) != 2 ||
				consents[0].(map[string]any)["text"] != consentText || c["revoked_at"] != nil {
				t.Errorf("cert-1: %d %v", code, c)
			}
			if d, _ := contact.EmailDigest("jane@example.com"); strings.Contains(fmt.Sprint(c), d.String()) {
				t.Error("the certificate shows the email's digest")
			}
			if code, c := call("GET", certs+"/cert-revoked", ""); code != 200 || c["revoked_at"] == nil {
				t.Errorf("cert-revoked: %d %v", code, c)
			}
			for _, path := range []string{certs + "/cert-other", certs + "/nothing", "/operator/companies/other/certificates/cert-1",
				"/operator/companies/nobody/certificates/cert-1"} {
				if code, _ := call("GET", path, ""); code != 404 {
					t.Errorf("GET %s: %d, want 404", path, code)
				}
			}
			search := func(company, body string) (int, string) {
				t.Helper()
				code, out := call("POST", "/operator/companies/"+company+"/certificates/search", body)
				var found []string
				for _, x := range asList(out["certificates"]) {
					found = append(found, x.(map[string]any)["id"].(string))
				}
				return code, strings.Join(found, " ")
			}
			for _, tc := range []struct{ company, body, want string }{
				{"acme", `{"email":"  JANE@Example.COM "}`, "cert-2 cert-1"},
				{"acme", `{"mobile":"555.010.2000"}`, "cert-1"},
				{"acme", `{"email":"jane@example.com","mobile":"+1 (555) 010-2000"}`, "cert-2 cert-1"},
				{"other", `{"mobile":"5550102000"}`, "cert-other"},
				{"other", `{"email":"jane@example.com"}`, ""},
				{"acme", `{"email":"nobody@example.com"}`, ""},
			} {
				if code, got := search(tc.company, tc.body); code != 200 || got != tc.want {
					t.Errorf("search %s %s: %d [%s], want [%s]", tc.company, tc.body, code, got, tc.want)
				}
			}
			for body, want := range map[string]int{`{}`: 400, `{"email":"not an email"}`: 400, `{"mobile":"12"}`: 400} {
				if code, _ := search("acme", body); code != want {
					t.Errorf("search %s: %d, want %d", body, code, want)
				}
			}
			if code, _ := search("nobody", `{"email":"jane@example.com"}`); code != 404 {
				t.Errorf("search an unknown company: %d, want 404", code)
			}
		})

		t.Run("Sessions", func(t *testing.T) {
			code, page := call("GET", "/operator/companies/acme/sessions?limit=10", "")
			var ids []string
			for _, x := range asList(page["sessions"]) {
				ids = append(ids, x.(map[string]any)["id"].(string))
			}
			if code != 200 || strings.Join(ids, " ") != "s2 s1 s-retained s-kept" || page["next_before"] != nil {
				t.Errorf("acme's sessions: %d %v", code, ids)
			}
			code, s := call("GET", "/operator/companies/acme/sessions/s-retained", "")
			if code != 200 || s["retention_status"] != "retained" || s["event_chunks"] != 1.0 {
				t.Errorf("s-retained: %d %v", code, s)
			}
			if _, ok := s["upload_digest"]; ok {
				t.Errorf("a session shows its upload capability: %v", s)
			}
			for _, path := range []string{"/operator/companies/acme/sessions/s-other", "/operator/companies/other/sessions/s1"} {
				if code, _ := call("GET", path, ""); code != 404 {
					t.Errorf("GET %s: %d, want 404", path, code)
				}
			}
			if code, page := call("GET", "/operator/companies/acme/sessions?since=2026-11-20T10:00:00.000001Z", ""); code != 200 || len(asList(page["sessions"])) != 0 {
				t.Errorf("sessions created after the fixture's: %d %v", code, page)
			}
		})

		t.Run("Revocations", func(t *testing.T) {
			if code, out := opDo2(t, h, "/opt-out", `{"company_id":"acme","email":"jane@example.com","reason":"asked"}`); code != 200 {
				t.Fatalf("opt-out: %d %v", code, out)
			}
			code, page := call("GET", "/operator/companies/acme/revocations", "")
			revs := asList(page["revocations"])
			if code != 200 || len(revs) != 1 {
				t.Fatalf("acme's revocations: %d %v", code, page)
			}
			r := revs[0].(map[string]any)
			if fmt.Sprint(r["certificate_ids"]) != "[cert-1 cert-2]" || r["email_given"] != true || r["mobile_given"] != false || r["client_ip"] != "192.0.2.1" {
				t.Errorf("revocation %v", r)
			}
			if code, page := call("GET", "/operator/companies/other/revocations", ""); code != 200 || len(asList(page["revocations"])) != 0 {
				t.Errorf("other's revocations: %d %v", code, page)
			}
			if code, _ := call("GET", "/operator/companies/nobody/revocations", ""); code != 404 {
				t.Errorf("revocations of an unknown company: %d, want 404", code)
			}
		})

		t.Run("Audit", func(t *testing.T) {
			code, log := call("GET", "/operator/companies/newco/audit?limit=100", "")
			var got []string
			for _, x := range asList(log["entries"]) {
				en := x.(map[string]any)
				if en["actor"] != consent.ActorOperator {
					t.Errorf("audit entry %v is not the operator's", en)
				}
				got = append(got, en["action"].(string)+":"+en["outcome"].(string))
			}
			// Refusals made in the change's transaction are recorded too.
			want := "company.create:ok company.attestation:ok company.attestation:ok company.attestation:ok " +
				"company.insights_rules:ok company.insights_rules:ok " +
				"property.create:ok property.create:ok property.update:ok " +
				"property.update:not_found property.update:not_found " +
				"token.issue:ok token.issue:ok token.issue:ok token.revoke:ok token.revoke:ok token.revoke:not_found " +
				"wallet.credit:ok wallet.credit:ok"
			if code != 200 || strings.Join(got, " ") != want {
				t.Errorf("newco's audit log: %d\n got %v\nwant %s", code, got, want)
			}
			if strings.Contains(fmt.Sprint(log), "ck_") {
				t.Error("the audit log holds a token secret")
			}
			for _, c := range []string{"newco", "acme", "poor"} {
				if _, err := audit.VerifyChain(ctx, e.svc.Store(), c); err != nil {
					t.Errorf("audit chain of %s: %v", c, err)
				}
			}
		})

		// The calls that the document's validators replay all answer as listed.
		t.Run("Requests", func(t *testing.T) {
			e := setup(t, open(t))
			h, err := httpadapter.New(httpadapter.Config{Service: e.svc, OperatorSecret: operatorSecret,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			must(t, err)
			for _, r := range operatorRequests {
				var hdr http.Header
				if r.key != "" {
					hdr = http.Header{httpadapter.IdempotencyHeader: {r.key}}
				}
				if code, out, _ := opDo(t, h.Operator(), r.method, r.path, operatorSecret, r.body, hdr); code != r.status {
					t.Errorf("%s %s %s: %d %v, want %d", r.method, r.path, r.body, code, out, r.status)
				}
			}
		})
	})
}

// opDo2 posts body to a public route from 192.0.2.1.
func opDo2(t *testing.T, h http.Handler, path, body string) (int, map[string]any) {
	t.Helper()
	code, out, _ := opDo(t, h, "POST", path, "", body, nil)
	return code, out
}

func asList(v any) []any { l, _ := v.([]any); return l }
