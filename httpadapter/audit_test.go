package httpadapter_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/consentkit/consentkit/audit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/internal/teststore"
)

// auditRow is what TestAuditLog compares of an entry.
type auditRow struct {
	Company, Actor, Action, Target, Outcome, RequestID string
}

// TestAuditLog: every verification, retention and opt-out through the
// handler, answered or refused in its transaction, is recorded in the
// acting company's audit log with the token (or property, or consumer) that
// acted and the request's id (D42); requests refused before any
// transaction are not; the chains stay intact.
func TestAuditLog(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e := setup(t, open(t))
		h := e.handler(t, httpadapter.Config{})
		tokenID := func(secret string) string {
			tok, err := e.svc.Authenticate(ctx, secret)
			must(t, err)
			return tok.ID
		}
		acme, buyer, other, poor := tokenID(acmeToken), tokenID(buyerToken), tokenID(otherToken), tokenID(poorToken)
		heads := map[string]int64{}
		for _, c := range companies {
			n, err := audit.VerifyChain(ctx, e.svc.Store(), c)
			must(t, err)
			if n == 0 {
				t.Fatalf("%s: the fixture's creation, top-up, property and tokens left no audit entry", c)
			}
			heads[c] = n
		}

		steps := []struct {
			req    request
			status int
			want   []auditRow // RequestID is the step's
		}{
			{request{path: "/verify/match", token: acmeToken, body: matchBody("cert-1", "acme", consentText)}, 200,
				[]auditRow{{"acme", acme, "verify.match", "cert-1", "ok", ""}}},
			{request{path: "/api/verify/partial-match", token: acmeToken, body: termBody("cert-revoked", "acme", "agree")}, 403,
				[]auditRow{{"acme", acme, "verify.partial_match", "cert-revoked", "opted_out", ""}}},
			{request{path: "/verify/match", token: acmeToken, body: matchBody("cert-9", "acme", consentText)}, 404,
				[]auditRow{{"acme", acme, "verify.match", "cert-9", "not_found", ""}}},
			{request{path: "/verify/match", token: buyerToken, body: matchBody("cert-1", "buyer", consentText, `,"originator_company_id":"acme"`)}, 200,
				[]auditRow{{"buyer", buyer, "verify.match", "cert-1", "ok", ""}}},
			{request{path: "/verify/match", token: otherToken, body: matchBody("cert-1", "other", consentText, `,"originator_company_id":"acme"`)}, 403,
				[]auditRow{{"other", other, "verify.match", "cert-1", "forbidden", ""}}},
			{request{path: "/verify/match", token: poorToken, body: matchBody("cert-poor", "poor", consentText)}, 402,
				[]auditRow{{"poor", poor, "verify.match", "cert-poor", "payment", ""}}},
			{request{path: "/verify/certificate-info", token: acmeToken, body: `{"certificate_id":"cert-1","company_id":"acme","property_id":"acme-web"}`}, 200,
				[]auditRow{{"acme", acme, "verify.certificate_info", "cert-1", "ok", ""}}},
			{request{path: "/verify/session/acme", token: acmeToken, body: `{"session_id":"s2"}`}, 200,
				[]auditRow{{"acme", acme, "retain.session", "s2", "ok", ""}}},
			{request{path: "/verify/certificate/acme", token: acmeToken, body: `{"session_id":"s-kept"}`}, 409,
				[]auditRow{{"acme", acme, "retain.certificate", "s-kept", "conflict", ""}}},
			{request{path: "/api/integrations/acme/retain/s1", token: acmeToken}, 200,
				[]auditRow{{"acme", acme, "retain.single", "s1", "ok", ""}}},
			{request{path: "/api/integrations/acme/retain/batch", token: acmeToken, body: batchBody("s-retained", "bad id")}, 200,
				[]auditRow{{"acme", acme, "retain.batch", "s-retained", "conflict", ""}, {"acme", acme, "retain.batch", "", "invalid", ""}}},
			{request{path: "/opt-out", body: `{"company_id":"acme","email":"JANE@example.com"}`}, 200,
				[]auditRow{{"acme", "consumer", "optout.revoke", "rev_", "ok", ""}}},
			// Refused before any transaction: not recorded.
			{request{path: "/verify/match", token: acmeToken, body: matchBody("cert-1", "acme", "")}, 400, nil},
			{request{path: "/verify/match", token: otherToken, body: matchBody("cert-1", "acme", consentText)}, 403, nil},
			{request{path: "/verify/match", token: acmeRevoked, body: matchBody("cert-1", "acme", consentText)}, 401, nil},
		}
		var want []auditRow
		for i, st := range steps {
			id := "r-" + string(rune('a'+i))
			st.req.header = http.Header{"X-Request-Id": {id}}
			rec := serve(h, st.req)
			if rec.Code != st.status {
				t.Errorf("step %d: status %d, want %d: %s", i, rec.Code, st.status, rec.Body)
			}
			if got := rec.Header().Get("X-Request-Id"); got != id {
				t.Errorf("step %d: X-Request-Id = %q, want %q echoed", i, got, id)
			}
			for _, w := range st.want {
				w.RequestID = id
				want = append(want, w)
			}
		}

		var got []auditRow
		var optOut *consent.AuditEntry
		for _, c := range companies {
			entries, err := e.svc.AuditLog(ctx, consent.AuditQuery{CompanyID: c, AfterSeq: heads[c]})
			must(t, err)
			for _, en := range entries {
				if !en.At.Equal(now) {
					t.Errorf("%s entry %d at %v, want the service clock's %v", c, en.Seq, en.At, now)
				}
				target := en.Target
				if en.Action == consent.AuditOptOut {
					optOut, target = en, target[:min(4, len(target))]
				}
				got = append(got, auditRow{en.CompanyID, en.Actor, en.Action, target, en.Outcome, en.RequestID})
			}
		}
		order := map[string]int{}
		for i, c := range companies {
			order[c] = i
		}
		byCompany := func(rows []auditRow) []auditRow { // stable: each company's in request order
			out := append([]auditRow(nil), rows...)
			for i := 1; i < len(out); i++ {
				for j := i; j > 0 && order[out[j].Company] < order[out[j-1].Company]; j-- {
					out[j], out[j-1] = out[j-1], out[j]
				}
			}
			return out
		}
		if d := cmp.Diff(byCompany(want), got); d != "" {
			t.Errorf("audit entries (-want +got):\n%s", d)
		}
		if optOut == nil {
			t.Fatal("no opt-out entry")
		}
		var detail map[string]any
		must(t, json.Unmarshal([]byte(optOut.Detail), &detail))
		if d := cmp.Diff(map[string]any{"revoked": 2.0, "by": []any{"email"}}, detail); d != "" {
			t.Errorf("opt-out detail (-want +got):\n%s", d)
		}
		if strings.Contains(strings.ToLower(optOut.Detail), "jane") {
			t.Errorf("opt-out detail holds the email: %s", optOut.Detail)
		}
		match, err := e.svc.AuditLog(ctx, consent.AuditQuery{CompanyID: "buyer", ActionPrefix: "verify.", Newest: true, Limit: 1})
		must(t, err)
		if len(match) != 1 || match[0].Detail != `{"charged":0.015,"originator_company_id":"acme","valid":true,"verification_type":"third_party"}` {
			t.Errorf("third-party match entry: %+v", match)
		}
		if _, err := audit.VerifyChains(ctx, e.svc.Store()); err != nil {
			t.Errorf("VerifyChains: %v", err)
		}
	})
}

// A request without a usable X-Request-Id gets a generated one, echoed and
// recorded; company-and-property credentials are recorded as the property.
func TestRequestID(t *testing.T) {
	e := setup(t, teststore.Memory(t))
	h := e.handler(t, httpadapter.Config{PropertyCredentials: true})
	seen := map[string]bool{}
	for _, sent := range []string{"", "has space", strings.Repeat("x", 65), "a\x01b"} {
		req := request{path: "/verify/match", body: matchBody("cert-2", "acme", consentText, `,"property_id":"acme-web"`)}
		if sent != "" {
			req.header = http.Header{"X-Request-Id": {sent}}
		}
		rec := serve(h, req)
		if rec.Code != 200 {
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
		id := rec.Header().Get("X-Request-Id")
		if !strings.HasPrefix(id, "req_") || seen[id] {
			t.Errorf("sent %q: X-Request-Id = %q, want a new generated id", sent, id)
		}
		seen[id] = true
		last, err := e.svc.AuditLog(ctx, consent.AuditQuery{CompanyID: "acme", Newest: true, Limit: 1})
		must(t, err)
		if len(last) != 1 || last[0].RequestID != id || last[0].Actor != "property:acme-web" || last[0].Target != "cert-2" {
			t.Errorf("sent %q: last entry %+v, want request id %q by property:acme-web", sent, last[0], id)
		}
	}
	// An unknown path still gets its id.
	rec := serve(h, request{path: "/nowhere", header: http.Header{"X-Request-Id": {"abc-123"}}})
	if rec.Code != 404 || rec.Header().Get("X-Request-Id") != "abc-123" {
		t.Errorf("404: status %d, X-Request-Id %q", rec.Code, rec.Header().Get("X-Request-Id"))
	}
}
