package dashboard_test

import (
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/dashboard"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/optout"
	"github.com/consentkit/consentkit/profile"
	"github.com/consentkit/consentkit/wallet"
)

// The profiles tab lists a company's audit profiles (D51), adds and
// replaces them from a name and rules as JSON, refuses rules it cannot
// read (a misspelt rule too) with 400 and what was sent, and deletes
// them; on every store.
func TestProfilesTab(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		svc, _ := fixture(t, open(t))
		h, err := dashboard.New(svc, dashboard.Config{OperatorSecret: secret})
		must(t, err)
		b := newBrowser(t, h)
		b.login()
		const tab = "/dashboard/companies/acme/profiles"
		code, body := b.get(tab)
		if code != http.StatusOK || !strings.Contains(body, `id="profiles">No audit profile yet.`) {
			t.Fatalf("empty tab: %d %s", code, body)
		}
		code, body = b.post(tab, url.Values{"name": {"strict"}, "rules": {`{"brand_names":{"names":["Acme"],"on_miss":"warn"}}`}})
		if code != http.StatusOK {
			t.Fatalf("add: %d %s", code, body)
		}
		contains(t, "added", body, "Profile strict saved.", `data-profile="strict"`, `&#34;on_miss&#34;: &#34;warn&#34;`)

		for _, bad := range []struct{ name, rules, says string }{
			{"typo", `{"brand_name":{"names":["Acme"]}}`, "unknown field"},
			{"empty", `{}`, "at least one rule"},
			{"a b", `{"lead_age":{"max_seconds":60}}`, "name must be"},
			{"broken", `{"lead_age":`, "rules:"},
			{"trailing", `{"lead_age":{"max_seconds":60}} {}`, "more than one JSON value"},
		} {
			code, body := b.post(tab, url.Values{"name": {bad.name}, "rules": {bad.rules}})
			if code != http.StatusBadRequest || !strings.Contains(body, bad.says) || !strings.Contains(body, ">"+html.EscapeString(bad.rules)+"</textarea>") {
				t.Errorf("profile %q %s: %d, want 400 saying %q with the rules sent in the form", bad.name, bad.rules, code, bad.says)
			}
			if strings.Contains(body, `data-profile="`+bad.name+`"`) {
				t.Errorf("profile %q was stored though refused", bad.name)
			}
		}
		list, err := profile.Profiles{Service: svc}.List(ctx, "acme")
		if err != nil || len(list) != 1 || list[0].Name != "strict" {
			t.Errorf("profiles after refusals: %v, %v; want strict alone", list, err)
		}

		// Another is listed before it by name; saving strict again
		// replaces its rules.
		if code, body := b.post(tab, url.Values{"name": {"alpha"}, "rules": {`{"lead_age":{"max_seconds":60}}`}}); code != http.StatusOK {
			t.Fatalf("add alpha: %d %s", code, body)
		}
		code, body = b.post(tab, url.Values{"name": {"strict"}, "rules": {`{"opt_in_methods":{"allowed":["manual"]}}`}})
		contains(t, "replaced", body, "Profile strict saved.", `&#34;allowed&#34;: [`)
		if code != http.StatusOK || strings.Contains(body, `&#34;names&#34;: [`) {
			t.Errorf("replace: %d, the old rules still shown: %s", code, body)
		}
		if a, s := strings.Index(body, `data-profile="alpha"`), strings.Index(body, `data-profile="strict"`); a < 0 || s < a {
			t.Errorf("profiles not listed by name: alpha at %d, strict at %d", a, s)
		}
		if _, other := b.get("/dashboard/companies/other/profiles"); !strings.Contains(other, "No audit profile yet.") {
			t.Error("another company's tab lists acme's profiles")
		}

		code, body = b.post(tab+"/strict/delete", nil)
		if code != http.StatusOK || !strings.Contains(body, "Profile strict deleted.") || strings.Contains(body, `data-profile="strict"`) {
			t.Errorf("delete: %d %s", code, body)
		}
		if code, _ := b.post(tab+"/strict/delete", nil); code != http.StatusNotFound {
			t.Errorf("delete again: %d, want 404", code)
		}
		if list, err := (profile.Profiles{Service: svc}).List(ctx, "acme"); err != nil || len(list) != 1 || list[0].Name != "alpha" {
			t.Errorf("profiles after the delete: %v, %v; want alpha alone", list, err)
		}
	})
}

// The certificate page grades the certificate by the profile chosen: each
// rule's result and what it found, at no charge; an unknown profile says
// so; a company without profiles is told how to add one.
func TestCertificateGrade(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		c := newClock()
		svc, _ := fixtureAt(t, open(t), c.now)
		h, err := dashboard.New(svc, dashboard.Config{OperatorSecret: secret})
		must(t, err)
		b := newBrowser(t, h)
		b.login()
		const page = "/dashboard/companies/acme/certificates/cert-acme"
		_, body := b.get(page)
		contains(t, "no profiles", body, `id="grade-error">The company has no audit profile`)

		const tab = "/dashboard/companies/acme/profiles"
		b.get(tab)
		for name, rules := range map[string]string{
			"brands":   `{"brand_names":{"names":["acme insurance","Globex"]}}`,
			"language": `{"approved_language":{"texts":["I agree that {{*}} may call me about my quote."]},"lead_age":{"max_seconds":3600}}`,
			"stale":    `{"lead_age":{"max_seconds":300}}`,
			"warned":   `{"lead_age":{"max_seconds":300,"on_miss":"warn"},"verdicts":{"refused":["bot"]}}`,
		} {
			if code, body := b.post(tab, url.Values{"name": {name}, "rules": {rules}}); code != http.StatusOK {
				t.Fatalf("add %s: %d %s", name, code, body)
			}
		}
		before, err := svc.Balance(ctx, "acme")
		must(t, err)
		// The lead is ten minutes old when graded.
		c.t = c.t.Add(10 * time.Minute)

		_, body = b.get(page + "?profile=brands")
		contains(t, "brands", body, `id="grade-result">fail</span>`,
			`<tr data-rule="brand_names"><td><code>brand_names</code></td><td><span class="bad">fail</span></td><td class="mono">&#34;missing&#34;:[&#34;Globex&#34;]</td></tr>`,
			`<option selected>brands</option>`)
		_, body = b.get(page + "?profile=language")
		contains(t, "language", body, `id="grade-result">pass</span>`,
			`<tr data-rule="approved_language"><td><code>approved_language</code></td><td><span class="ok">pass</span></td><td class="mono">&#34;consent&#34;:0, &#34;approved&#34;:0</td></tr>`,
			`<tr data-rule="lead_age"><td><code>lead_age</code></td><td><span class="ok">pass</span></td><td class="mono">&#34;lead_age_seconds&#34;:600</td></tr>`)
		_, body = b.get(page + "?profile=stale")
		contains(t, "stale", body, `id="grade-result">fail</span>`,
			`<tr data-rule="lead_age"><td><code>lead_age</code></td><td><span class="bad">fail</span></td><td class="mono">&#34;lead_age_seconds&#34;:600</td></tr>`)
		// A miss on_miss warn warns; the verdict is pending until the
		// insights are computed.
		_, body = b.get(page + "?profile=warned")
		contains(t, "warned", body, `id="grade-result">warn</span>`,
			`<tr data-rule="lead_age"><td><code>lead_age</code></td><td><span class="bad">warn</span></td>`,
			`<tr data-rule="verdicts"><td><code>verdicts</code></td><td><span class="muted">pending</span>: its fact is not known yet</td><td class="mono">&#34;status&#34;:&#34;pending&#34;</td></tr>`)
		_, body = b.get(page + "?profile=nope")
		contains(t, "unknown profile", body, `id="grade-error">The company has no profile nope.`)
		if strings.Contains(body, `id="grade-result"`) {
			t.Error("an unknown profile graded the certificate")
		}
		if after, err := svc.Balance(ctx, "acme"); err != nil || after != before {
			t.Errorf("balance after grading: %v, %v; want %v, nothing charged", after, err, before)
		}
	})
}

// A certificate a verification refuses is graded for no one (D51): the
// certificate page grades neither one that fails its integrity check,
// which would be graded by its changed content, nor one revoked, and says
// instead what a verification answers, 409 or 403.
func TestCertificateRefusedNotGraded(t *testing.T) {
	st, db := teststore.SQLiteWithDB(t)
	svc, _ := fixture(t, st)
	h, err := dashboard.New(svc, dashboard.Config{OperatorSecret: secret})
	must(t, err)
	b := newBrowser(t, h)
	b.login()
	for _, c := range []string{"acme", "other"} {
		tab := "/dashboard/companies/" + c + "/profiles"
		b.get(tab)
		if code, body := b.post(tab, url.Values{"name": {"brands"}, "rules": {`{"brand_names":{"names":["Globex"]}}`}}); code != http.StatusOK {
			t.Fatalf("add to %s: %d %s", c, code, body)
		}
	}
	const acme = "/dashboard/companies/acme/certificates/cert-acme?profile=brands"
	_, body := b.get(acme)
	contains(t, "acme before", body, `id="grade-result">fail</span>`)
	// The consent's text changed in the store to name the brand: the
	// signature no longer holds, and the changed text would pass.
	if _, err := db.Exec(`UPDATE certificates SET records = CAST(replace(CAST(records AS TEXT), 'Acme Insurance', 'Globex') AS BLOB) WHERE id = 'cert-acme'`); err != nil {
		t.Fatal(err)
	}
	_, body = b.get(acme)
	contains(t, "changed", body, "does not match its content", `id="grade-refused">409 certificate integrity check failed</span>`)
	if strings.Contains(body, `id="grade-result"`) || strings.Contains(body, `id="grade-rules"`) {
		t.Error("a certificate failing its integrity check is graded")
	}

	const other = "/dashboard/companies/other/certificates/cert-other?profile=brands"
	_, body = b.get(other)
	contains(t, "other before", body, `id="grade-result">fail</span>`)
	if _, err := optout.New(svc).OptOut(ctx, optout.Request{CompanyID: "other", CertificateID: "cert-other"}); err != nil {
		t.Fatal(err)
	}
	_, body = b.get(other)
	contains(t, "revoked", body, `id="grade-refused">403 This session has opted out</span>`)
	if strings.Contains(body, `id="grade-result"`) || strings.Contains(body, "integrity check failed") {
		t.Error("a revoked certificate is graded, or said to fail its integrity check")
	}
}

// The certificate page grades by a profile of any company, as that
// company's verification would (D51): its profile's rules and its bot
// verdict rules, not the certificate company's. A profile named alike in
// both companies grades otherwise by each: its lead age passes under the
// buyer's and fails under the seller's, and the buyer's stricter verdict
// rules make the verdict bot. An unknown or malformed company or an
// unknown profile is said on the page, escaped; grading charges nothing
// and audits nothing; on every store.
func TestCertificateGradeByAnotherCompany(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		c := newClock()
		svc, _ := fixtureAt(t, open(t), c.now)
		issueRecorded(t, svc, "cert-rec")
		runInsights(t, svc)
		h, err := dashboard.New(svc, dashboard.Config{OperatorSecret: secret})
		must(t, err)
		b := newBrowser(t, h)
		b.login()
		const page = "/dashboard/companies/acme/certificates/cert-rec"

		// other has no profile yet.
		code, body := b.get(page + "?company=other")
		if code != http.StatusOK {
			t.Fatalf("other chosen: %d %s", code, body)
		}
		contains(t, "no profile of other", body, `id="grade-error">Company <code>other</code> has no audit profile`,
			`id="grade-company" value="other"`)

		profiles := profile.Profiles{Service: svc}
		for _, p := range []struct{ company, name, rules string }{
			{"acme", "age", `{"lead_age":{"max_seconds":300}}`},
			{"other", "age", `{"lead_age":{"max_seconds":3600}}`},
			{"acme", "bots", `{"verdicts":{"refused":["bot"]}}`},
			{"other", "bots", `{"verdicts":{"refused":["bot"]}}`},
			{"other", "zeta", `{"lead_age":{"max_seconds":1}}`},
		} {
			var rules profile.Rules
			must(t, json.Unmarshal([]byte(p.rules), &rules))
			_, err := profiles.Put(ctx, p.company, p.name, rules)
			must(t, err)
		}
		// other, the buyer, takes a consent sooner than 10 s after the
		// page loaded for a bot's; acme keeps the default (1.5 s).
		_, err = svc.SetInsightsRules(ctx, "other", consent.InsightsRules{MinSecondsOnPage: 10})
		must(t, err)

		balances := func() [2]wallet.Amount {
			t.Helper()
			var out [2]wallet.Amount
			for i, id := range []string{"acme", "other"} {
				out[i], err = svc.Balance(ctx, id)
				must(t, err)
			}
			return out
		}
		audited := func() [2]int64 {
			t.Helper()
			var out [2]int64
			for i, id := range []string{"acme", "other"} {
				es, err := svc.AuditLog(ctx, consent.AuditQuery{CompanyID: id, Newest: true, Limit: 1})
				must(t, err)
				if len(es) > 0 {
					out[i] = es[0].Seq
				}
			}
			return out
		}
		beforeBalances, beforeAudit := balances(), audited()
		// The lead is ten minutes old when graded.
		c.t = c.t.Add(10 * time.Minute)

		_, body = b.get(page + "?profile=age")
		contains(t, "acme's age", body, `id="grade-result">fail</span>`, `<code id="grade-company-shown">acme</code>`,
			`<tr data-rule="lead_age"><td><code>lead_age</code></td><td><span class="bad">fail</span></td><td class="mono">&#34;lead_age_seconds&#34;:600</td></tr>`)
		code, body = b.get(page + "?company=other&profile=age")
		if code != http.StatusOK {
			t.Fatalf("other's age: %d %s", code, body)
		}
		contains(t, "other's age", body, `id="grade-result">pass</span>`, `<code id="grade-company-shown">other</code>`,
			`<tr data-rule="lead_age"><td><code>lead_age</code></td><td><span class="ok">pass</span></td><td class="mono">&#34;lead_age_seconds&#34;:600</td></tr>`,
			// The profile form names other and lists its profiles.
			`<input type="hidden" name="company" value="other">`, `<option selected>age</option><option>bots</option><option>zeta</option>`,
			`id="grade-unauthorized">`)

		// The verdict: acme's rules find it suspect, other's bot.
		_, body = b.get(page + "?profile=bots")
		contains(t, "acme's verdict", body, `id="grade-result">pass</span>`,
			`<tr data-rule="verdicts"><td><code>verdicts</code></td><td><span class="ok">pass</span></td><td class="mono">&#34;status&#34;:&#34;done&#34;, &#34;verdict&#34;:&#34;suspect&#34;`)
		_, body = b.get(page + "?company=other&profile=bots")
		contains(t, "other's verdict", body, `id="grade-result">fail</span>`,
			`<tr data-rule="verdicts"><td><code>verdicts</code></td><td><span class="bad">fail</span></td><td class="mono">&#34;status&#34;:&#34;done&#34;, &#34;verdict&#34;:&#34;bot&#34;`,
			`&#34;submitted_too_fast&#34;`)
		// The insights section stays acme's view.
		contains(t, "acme's insights", section(t, body), `id="insights-verdict"><span class="bad">suspect</span>`)

		// Once acme authorizes other, the chooser suggests it and the
		// grade says nothing of a refusal.
		if got := audited(); got != beforeAudit {
			t.Errorf("last audit entries after grading: %v, want %v: nothing audited", got, beforeAudit)
		}
		_, err = svc.SetThirdParty(ctx, "acme", true, []string{"other"})
		must(t, err)
		beforeAudit = audited() // the change is audited; grading is not
		_, body = b.get(page + "?company=other&profile=age")
		contains(t, "authorized", body, `id="grade-result">pass</span>`, `<option value="acme"></option><option value="other"></option>`)
		if strings.Contains(body, `id="grade-unauthorized"`) {
			t.Error("a grade by an authorized buyer says its verification is refused")
		}

		// What cannot be graded is said, escaped, answered 200.
		for _, bad := range []struct{ query, says string }{
			{"?company=nobody&profile=age", `id="grade-error">There is no company nobody.`},
			{"?company=nobody", `id="grade-error">There is no company nobody.`},
			{"?company=" + url.QueryEscape(`"><script>alert(1)</script>`) + "&profile=age", `id="grade-error">company must be`},
			{"?company=other&profile=nope", `id="grade-error">Company other has no profile nope.`},
			{"?company=other&profile=" + url.QueryEscape("<b>x</b>"), `id="grade-error">Company other has no profile &lt;b&gt;x&lt;/b&gt;.`},
		} {
			code, body := b.get(page + bad.query)
			if code != http.StatusOK {
				t.Errorf("%s: %d, want 200", bad.query, code)
			}
			contains(t, bad.query, body, bad.says)
			if strings.Contains(body, `id="grade-result"`) {
				t.Errorf("%s graded the certificate", bad.query)
			}
			if strings.Contains(body, "<script>alert") || strings.Contains(body, "<b>x</b>") {
				t.Errorf("%s reaches the page unescaped", bad.query)
			}
		}

		if got := balances(); got != beforeBalances {
			t.Errorf("balances after grading: %v, want %v: nothing charged", got, beforeBalances)
		}
		if got := audited(); got != beforeAudit {
			t.Errorf("last audit entries after grading: %v, want %v: nothing audited", got, beforeAudit)
		}
	})
}

// A profile that the Go API accepts (profile.MaxApprovedText bytes a text,
// profile.MaxProfileTexts texts) can be saved from the profiles tab; at
// the least it is never refused as a forged form.
func TestProfilesTabLargeProfile(t *testing.T) {
	svc, _ := fixture(t, teststore.Memory(t))
	h, err := dashboard.New(svc, dashboard.Config{OperatorSecret: secret})
	must(t, err)
	b := newBrowser(t, h)
	b.login()
	const tab = "/dashboard/companies/acme/profiles"
	b.get(tab)
	texts := make([]string, 10)
	for i := range texts {
		texts[i] = fmt.Sprintf("Text %d: I agree that Acme may call me. %s", i, strings.Repeat("Terms apply. ", 600)) // ~8 KB each
	}
	rules, err := json.Marshal(map[string]any{"approved_language": map[string]any{"texts": texts}})
	must(t, err)
	if _, err := (profile.Profiles{Service: svc}).Put(ctx, "other", "big", mustRules(t, rules)); err != nil {
		t.Fatalf("the Go API refuses the same rules: %v", err)
	}
	code, body := b.post(tab, url.Values{"name": {"big"}, "rules": {string(rules)}})
	if code != http.StatusOK || !strings.Contains(body, `data-profile="big"`) {
		t.Errorf("save a profile of %d bytes of rules: %d, want it saved: %.300s", len(rules), code, body[max(strings.Index(body, "<main"), 0):])
	}
}

func mustRules(t *testing.T, b []byte) profile.Rules {
	t.Helper()
	r, err := profile.ParseRules(b)
	must(t, err)
	return r
}

// A form larger than the dashboard takes is answered 413 and changes
// nothing, never refused as a forged form (403): an ordinary form over
// 64 KB, and a profile's over what rules of consent.MaxProfileRules bytes
// can take, URL-encoded.
func TestFormTooLarge(t *testing.T) {
	svc, _ := fixture(t, teststore.Memory(t))
	h, err := dashboard.New(svc, dashboard.Config{OperatorSecret: secret})
	must(t, err)
	b := newBrowser(t, h)
	b.login()
	b.get("/dashboard/companies/acme")
	code, body := b.post("/dashboard/companies/acme/topup", url.Values{"amount": {"1"}, "reference": {strings.Repeat("x", 70<<10)}})
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(body, "too large") {
		t.Errorf("a top-up form of 70 KB: %d, want 413 and why: %.300s", code, body[max(strings.Index(body, "<main"), 0):])
	}
	const tab = "/dashboard/companies/acme/profiles"
	b.get(tab)
	huge := strings.Repeat("{", consent.MaxProfileRules*11/10) // 3.3 MB URL-encoded
	code, body = b.post(tab, url.Values{"name": {"huge"}, "rules": {huge}})
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(body, "too large") {
		t.Errorf("a profile form of %d bytes of rules, each URL-encoded in 3: %d, want 413 and why: %.300s", len(huge), code, body[max(strings.Index(body, "<main"), 0):])
	}
	if _, body := b.get(tab); strings.Contains(body, `data-profile="huge"`) {
		t.Error("the profile too large was saved")
	}
}
