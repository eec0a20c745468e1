package httpadapter_test

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/consentkit/consentkit/audit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/store/sqlitestore"
)

// TestOperatorVerifiesAuditChain checks a company's audit chain (D42)
// through the operator API: in one run or in bounded runs resumed from the
// next entry; a bad from or limit is a 400 naming it, an unknown company a
// 404; the check is not itself audited; and once an entry is edited in the
// database behind the store's back, the run that reaches it answers 200
// with the first broken entry, in the document's shape.
func TestOperatorVerifiesAuditChain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "consent.db")
	st, err := sqlitestore.Open(path, sqlitestore.Config{})
	must(t, err)
	teststore.CloseAtEnd(t, st)
	must(t, st.Migrate(ctx))
	e := setup(t, st)
	h, err := httpadapter.New(httpadapter.Config{Service: e.svc, OperatorSecret: operatorSecret,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	must(t, err)
	op := h.Operator()
	checker := newChecker(openAPIDoc(t, h))
	const verify = "/operator/companies/acme/audit/verify"
	call := func(query string) (int, httpadapter.AuditVerifyResponse, map[string]any) {
		t.Helper()
		req := httptest.NewRequest("GET", verify+query, nil)
		req.Header.Set("Authorization", "Bearer "+operatorSecret)
		rec := httptest.NewRecorder()
		op.ServeHTTP(rec, req)
		body := slices.Clone(rec.Body.Bytes()) // the checker reads rec.Body
		if problems := checker.check(req, rec); len(problems) > 0 {
			t.Errorf("GET %s%s: the answer is not the document's: %v\n%s", verify, query, problems, body)
		}
		var v httpadapter.AuditVerifyResponse
		var raw map[string]any
		if err := json.Unmarshal(body, &raw); err != nil {
			t.Fatalf("GET %s%s: %d, not JSON: %s", verify, query, rec.Code, body)
		}
		if err := json.Unmarshal(body, &v); err != nil {
			t.Fatalf("GET %s%s: %d, not an AuditVerifyResponse: %v", verify, query, rec.Code, err)
		}
		return rec.Code, v, raw
	}
	head, err := e.svc.AuditLog(ctx, consent.AuditQuery{CompanyID: "acme", Newest: true, Limit: 1})
	must(t, err)
	n := head[0].Seq
	if n < 5 {
		t.Fatalf("the fixture left %d audit entries of acme; the test needs 5", n)
	}

	// The whole chain in one run.
	code, got, raw := call("")
	want := httpadapter.AuditVerifyResponse{CompanyID: "acme", From: 1, Checked: n, Last: n, Head: n, Intact: true}
	if diff := cmp.Diff(want, got); code != 200 || diff != "" {
		t.Errorf("one run: %d (-want +got):\n%s", code, diff)
	}
	if _, ok := raw["broken"]; ok || raw["next"] != 0.0 {
		t.Errorf("an intact chain's answer: %v; want next 0 and no broken", raw)
	}

	// Runs of 2, each resumed where the one before stopped.
	var checked int64
	from := int64(1)
	for runs := 0; from != 0; runs++ {
		if runs > int(n) {
			t.Fatalf("runs of 2 never reach the end of %d entries", n)
		}
		code, got, _ := call(fmt.Sprintf("?from=%d&limit=2", from))
		wantNext := from + 2
		if from+1 >= n {
			wantNext = 0
		}
		if code != 200 || !got.Intact || got.From != from || got.Checked != min(2, n-from+1) || got.Next != wantNext || got.Head != n {
			t.Fatalf("run from %d: %d %+v", from, code, got)
		}
		checked += got.Checked
		from = got.Next
	}
	if checked != n {
		t.Errorf("runs of 2 checked %d entries, want %d", checked, n)
	}
	if code, got, _ := call("?limit=0"); code != 200 || got.Checked != n {
		t.Errorf("limit=0 (the default): %d %+v", code, got)
	}
	if code, got, _ := call(fmt.Sprintf("?from=%d", n+1)); code != 200 || !got.Intact || got.Checked != 0 || got.Last != n {
		t.Errorf("from the entry after the last: %d %+v; want nothing to check, intact", code, got)
	}

	// Bad queries name their field; an unknown company is not found.
	for q, field := range map[string]string{
		"?from=-1": "from", "?from=abc": "from", "?from=1.5": "from", fmt.Sprintf("?from=%d", n+2): "from",
		"?limit=-1": "limit", "?limit=0x10": "limit", fmt.Sprintf("?limit=%d", audit.MaxCheck+1): "limit",
	} {
		code, _, raw := call(q)
		if msg, _ := raw["error"].(string); code != 400 || !strings.Contains(msg, field) {
			t.Errorf("GET %s%s: %d %v, want 400 naming %s", verify, q, code, raw, field)
		}
	}
	for path, status := range map[string]int{"/operator/companies/nobody/audit/verify": 404, "/operator/companies/a%20b/audit/verify": 400} {
		if code, out := opCall(t, op, "GET", path, operatorSecret, ""); code != status {
			t.Errorf("GET %s: %d %v, want %d", path, code, out, status)
		}
	}
	if after, err := e.svc.AuditLog(ctx, consent.AuditQuery{CompanyID: "acme", Newest: true, Limit: 1}); err != nil || after[0].Seq != n {
		t.Errorf("the checks were audited: the chain grew from %d entries to %d (%v)", n, after[0].Seq, err)
	}

	// Entry 3 edited in the database, as its owner could.
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=10000")
	must(t, err)
	teststore.CloseAtEnd(t, db)
	for _, stmt := range []string{`DROP TRIGGER audit_log_no_update`,
		`UPDATE audit_log SET outcome = 'forged' WHERE company_id = 'acme' AND seq = 3`} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	broken := &httpadapter.AuditBreak{Seq: 3, Reason: "its content does not match its hash"}
	for _, c := range []struct {
		query string
		want  httpadapter.AuditVerifyResponse
	}{
		{"", httpadapter.AuditVerifyResponse{CompanyID: "acme", From: 1, Checked: 2, Last: 2, Head: n, Broken: broken}},
		// A run that resumes re-checks the entry before its first.
		{"?from=4", httpadapter.AuditVerifyResponse{CompanyID: "acme", From: 4, Checked: 0, Last: 3, Head: n, Broken: broken}},
		{"?from=2&limit=1", httpadapter.AuditVerifyResponse{CompanyID: "acme", From: 2, Checked: 1, Last: 2, Head: n, Next: 3, Intact: true}},
		{"?from=5", httpadapter.AuditVerifyResponse{CompanyID: "acme", From: 5, Checked: n - 4, Last: n, Head: n, Intact: true}},
	} {
		code, got, raw := call(c.query)
		if diff := cmp.Diff(c.want, got); code != 200 || diff != "" {
			t.Errorf("tampered, GET %s%s: %d (-want +got):\n%s", verify, c.query, code, diff)
		}
		if _, ok := raw["broken"]; ok == got.Intact {
			t.Errorf("tampered, GET %s%s: %v; broken wanted exactly when not intact", verify, c.query, raw)
		}
	}
	if code, out := opCall(t, op, "GET", "/operator/companies/other/audit/verify", operatorSecret, ""); code != 200 || out["intact"] != true {
		t.Errorf("another company's chain: %d %v, want intact", code, out)
	}
}
