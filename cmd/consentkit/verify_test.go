package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/internal/teststore"
)

// cancelOn is a writer that cancels a context once what it was written
// holds a text: an interruption at a known point of a command's run.
type cancelOn struct {
	syncBuffer
	text   string
	cancel context.CancelFunc
	once   sync.Once
}

func (w *cancelOn) Write(p []byte) (int, error) {
	n, err := w.syncBuffer.Write(p)
	if strings.Contains(w.String(), w.text) {
		w.once.Do(w.cancel)
	}
	return n, err
}

// TestAuditVerify checks a company's audit chain through both backends
// over one SQLite file: in one run, in bounded runs resumed with the
// -from each prints, and with -all; then, once an entry is edited in the
// file behind the store's back, each backend names the first broken entry
// and exits 1. The check is no change: both backends print the same.
func TestAuditVerify(t *testing.T) {
	direct := directBackend(t, "sqlite")
	remote := httpBackend(t, direct.store)
	remote.clock = direct.clock
	remote.env[CompanyEnv], direct.env[CompanyEnv] = "acme", "acme"
	direct.ok(t, "companies", "create", "-id", "acme", "-name", "Acme")
	for i := range 3 {
		direct.ok(t, "wallet", "topup", "-amount", "1", "-key", fmt.Sprintf("k%d", i))
		direct.ok(t, "tokens", "issue")
	}
	const n = 7 // the company, 3 top-ups, 3 tokens
	backends := []*backend{direct, remote}
	// each runs args through both backends, which must print the same.
	each := func(wantCode int, args ...string) (stdout, stderr string) {
		t.Helper()
		var outs [2]string
		for i, b := range backends {
			code, out, errs := b.run(t, args...)
			if code != wantCode {
				t.Errorf("%s: consentkit %s: exit %d, want %d\n%s%s", b.name, strings.Join(args, " "), code, wantCode, out, errs)
			}
			outs[i] = out + "\x00" + errs
		}
		if outs[0] != outs[1] {
			t.Errorf("consentkit %s: the backends differ:\ndirect:\n%s\nhttp:\n%s", strings.Join(args, " "), outs[0], outs[1])
		}
		stdout, stderr, _ = strings.Cut(outs[0], "\x00")
		return stdout, stderr
	}
	want := func(what, got string, lines ...string) {
		t.Helper()
		for _, l := range lines {
			if !strings.Contains(got, l) {
				t.Errorf("%s: no %q in\n%s", what, l, got)
			}
		}
	}

	// Intact: in one run, in runs of 3 resumed by hand, and with -all.
	out, _ := each(0, "audit", "verify")
	want("one run", out, "company  acme\n", "entries  1 to 7\n", "checked  7\n", "head     7\n", "intact   yes, to the end of the chain\n")
	if strings.Contains(out, "next run") {
		t.Errorf("a run to the end says where to resume:\n%s", out)
	}
	out, _ = each(0, "audit", "verify", "-limit", "3")
	want("-limit 3", out, "entries  1 to 3\n", "checked  3\n", "intact   yes, up to entry 3\n", "next run: -from 4\n")
	out, _ = each(0, "audit", "verify", "-limit", "3", "-from", "4")
	want("-limit 3 -from 4", out, "entries  4 to 6\n", "next run: -from 7\n")
	out, _ = each(0, "audit", "verify", "-limit", "3", "-from", "7")
	want("-limit 3 -from 7", out, "entries  7 to 7\n", "checked  1\n", "intact   yes, to the end of the chain\n")
	out, errs := each(0, "audit", "verify", "-limit", "3", "-all")
	want("-all", out, "entries  1 to 7\n", "checked  7\n", "intact   yes, to the end of the chain\n")
	want("-all's progress", errs, "checked entries 1 to 3 of 7: intact; going on from 4\n", "checked entries 4 to 6 of 7: intact; going on from 7\n")
	if strings.Count(errs, "\n") != 2 {
		t.Errorf("-all -limit 3 told its progress in %q; want two lines", errs)
	}
	out, _ = each(0, "audit", "verify", "-limit", "3", "-all", "-json")
	var runs []httpadapter.AuditVerifyResponse
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var v httpadapter.AuditVerifyResponse
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("-all -json line %q: %v", line, err)
		}
		runs = append(runs, v)
	}
	if len(runs) != 3 || runs[0].Next != 4 || runs[2].From != 7 || runs[2].Next != 0 || !runs[2].Intact {
		t.Errorf("-all -limit 3 -json: %+v", runs)
	}
	if a, err := direct.svc.AuditLog(context.Background(), consent.AuditQuery{CompanyID: "acme", Newest: true, Limit: 1}); err != nil || a[0].Seq != n {
		t.Errorf("the checks changed the audit log: %v %v", a, err)
	}

	// Interrupted between two runs of -all: where to resume is told.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &cancelOn{text: "going on from 4", cancel: cancel}
	c := &cli{stdout: &syncBuffer{}, stderr: stderr, getenv: func(k string) string { return direct.env[k] }, openStore: direct.openStore}
	if code := c.run(ctx, []string{"audit", "verify", "-limit", "3", "-all"}); code != 1 || !strings.Contains(stderr.String(), "interrupted after entry 3; resume with -from 4") {
		t.Errorf("-all interrupted: exit %d\n%s", code, stderr.String())
	}

	// Mistakes.
	for _, args := range [][]string{{"-from", "-1"}, {"-limit", "-1"}, {"-limit", "100001"}, {"-from", "x"}} {
		if code, out, errs := direct.run(t, append([]string{"audit", "verify"}, args...)...); code != 2 || out != "" || !strings.Contains(errs, args[0]) {
			t.Errorf("audit verify %q: exit %d %q %q; want 2 naming %s", args, code, out, errs, args[0])
		}
	}
	_, errs = each(1, "audit", "verify", "-from", "9")
	want("-from past the end", errs, "from 9 is past the end of the audit log of acme (7 entries) (HTTP 400)")
	_, errs = each(1, "audit", "verify", "-company", "nobody")
	want("an unknown company", errs, "(HTTP 404)")

	// Entry 5 edited in the file, as its owner could.
	db, err := sql.Open("sqlite3", "file:"+direct.env[DSNEnv]+"?_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	teststore.CloseAtEnd(t, db)
	for _, stmt := range []string{`DROP TRIGGER audit_log_no_update`,
		`UPDATE audit_log SET outcome = 'forged' WHERE company_id = 'acme' AND seq = 5`} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	const broken = "audit log of acme is broken at entry 5: its content does not match its hash"
	out, errs = each(1, "audit", "verify")
	want("tampered", out, "entries  1 to 4\n", "checked  4\n", "intact   no\n", "broken   entry 5: its content does not match its hash\n")
	if errs != "consentkit audit verify: "+broken+"\n" {
		t.Errorf("tampered: stderr %q; want one line naming entry 5", errs)
	}
	out, errs = each(1, "audit", "verify", "-limit", "2", "-all")
	want("tampered, -all", out, "entries  1 to 4\n", "checked  4\n", "intact   no\n", "broken   entry 5")
	want("tampered, -all's progress", errs, "going on from 3\n", broken)
	out, _ = each(0, "audit", "verify", "-limit", "2")
	want("tampered, before the edit", out, "intact   yes, up to entry 2\n", "next run: -from 3\n")
	// A run from 6 re-checks entry 5 against its own hash; from 7 on, the
	// entries after it are intact.
	each(1, "audit", "verify", "-from", "6")
	out, _ = each(0, "audit", "verify", "-from", "7")
	want("tampered, after the edit", out, "entries  7 to 7\n", "intact   yes, to the end of the chain\n")
	out, _ = each(1, "audit", "verify", "-json")
	var v httpadapter.AuditVerifyResponse
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.Intact || v.Broken == nil || v.Broken.Seq != 5 || v.Checked != 4 {
		t.Errorf("tampered, -json: %v %s", err, out)
	}
}
