package httpadapter_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/internal/teststore"
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
		code, audit := opCall(t, op, "GET", "/operator/companies/acme/audit?action=webhook.", operatorSecret, "")
		entries, _ := audit["entries"].([]any)
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
		if _, err := e.svc.VerifyAuditChain(ctx, "acme"); err != nil {
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
