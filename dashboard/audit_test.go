package dashboard_test

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/dashboard"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/store/sqlitestore"
)

// tamperedStore is a SQLite store and a connection of its own to its
// file, without the triggers that keep the audit log append-only: what
// someone with access to the database could do.
func tamperedStore(t *testing.T) (*sqlitestore.Store, *sql.DB) {
	path := filepath.Join(t.TempDir(), "consent.db")
	s, err := sqlitestore.Open(path, sqlitestore.Config{})
	must(t, err)
	teststore.CloseAtEnd(t, s)
	must(t, s.Migrate(ctx))
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=10000")
	must(t, err)
	teststore.CloseAtEnd(t, db)
	for _, trigger := range []string{"audit_log_no_update", "audit_log_no_delete"} {
		_, err := db.Exec("DROP TRIGGER " + trigger)
		must(t, err)
	}
	return s, db
}

// chainState is the page's sentence about the chain, tags dropped.
func chainState(t *testing.T, body string) string {
	t.Helper()
	m := regexp.MustCompile(`(?s)<p id="chain-state">(.*?)</p>`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("the audit page says nothing of its chain: %s", body)
	}
	return strings.Join(strings.Fields(regexp.MustCompile(`<[^>]+>`).ReplaceAllString(m[1], "")), " ")
}

// The audit page says whether the company's chain holds, for what it
// checked only: the entries it shows, or a bounded run from an entry,
// run after run to the end. An edited entry is named.
func TestAuditChainMark(t *testing.T) {
	st, db := tamperedStore(t)
	svc, err := consentkit.NewService(st, consentkit.Config{})
	must(t, err)
	_, err = svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme Co"}) // entry 1
	must(t, err)
	must(t, st.Update(ctx, func(tx consent.Tx) error { // entries 2 to 1200
		for i := range 1199 {
			if err := svc.Audit(ctx, tx, consentkit.AuditParams{CompanyID: "acme", Action: "test.note", Detail: map[string]int{"n": i + 2}}); err != nil {
				return err
			}
		}
		return nil
	}))
	h, err := dashboard.New(svc, dashboard.Config{OperatorSecret: secret})
	must(t, err)
	b := newBrowser(t, h)
	b.login()

	_, body := b.get("/dashboard/companies/acme/audit")
	if got, want := chainState(t, body), "Intact: entries 1151–1200 checked, to the end of the chain (1200 entries), which matches its head."; got != want {
		t.Errorf("the newest page says %q, want %q", got, want)
	}
	contains(t, "the newest page", body, "Entries before 1151 were not checked here.", `href="?check=1"`)
	_, body = b.get("/dashboard/companies/acme/audit?before=1151")
	if got, want := chainState(t, body), "Intact: entries 1101–1150 checked."; got != want {
		t.Errorf("the page before says %q, want %q", got, want)
	}
	// The whole chain, in runs of 1,000.
	_, body = b.get("/dashboard/companies/acme/audit?check=1")
	if got, want := chainState(t, body), "Intact: entries 1–1000 checked."; got != want {
		t.Errorf("a run from entry 1 says %q, want %q", got, want)
	}
	contains(t, "a run from entry 1", body, `<a id="chain-next" href="?check=1001">`)
	_, body = b.get("/dashboard/companies/acme/audit?check=1001")
	if got, want := chainState(t, body), "Intact: entries 1001–1200 checked, to the end of the chain (1200 entries), which matches its head."; got != want {
		t.Errorf("a run from entry 1001 says %q, want %q", got, want)
	}

	// Entry 1120's detail is edited behind the store's back.
	r, err := db.Exec(`UPDATE audit_log SET detail = ? WHERE company_id = 'acme' AND seq = 1120`, `{"n":9999}`)
	must(t, err)
	if n, _ := r.RowsAffected(); n != 1 {
		t.Fatalf("%d entries edited", n)
	}
	const broken = "Broken at entry 1120: its content does not match its hash."
	_, body = b.get("/dashboard/companies/acme/audit")
	if got, want := chainState(t, body), "Intact: entries 1151–1200 checked, to the end of the chain (1200 entries), which matches its head."; got != want {
		t.Errorf("the newest page, whose entries hold, says %q, want %q", got, want)
	}
	_, body = b.get("/dashboard/companies/acme/audit?before=1151")
	if got := chainState(t, body); !strings.HasPrefix(got, broken) {
		t.Errorf("the page of the edited entry says %q, want %q", got, broken)
	}
	contains(t, "the page of the edited entry", body, `<tr id="entry-1120" class="broken">`)
	for _, from := range []int{1, 1001} {
		_, body = b.get(fmt.Sprintf("/dashboard/companies/acme/audit?check=%d", from))
		got := chainState(t, body)
		want := map[int]string{1: "Intact: entries 1–1000 checked.", 1001: broken + " Entries 1001–1119, checked before it, hold."}[from]
		if got != want {
			t.Errorf("a run from entry %d says %q, want %q", from, got, want)
		}
	}
}
