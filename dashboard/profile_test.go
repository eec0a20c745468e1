package dashboard_test

import (
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/dashboard"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/profile"
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

		code, body = b.post(tab+"/strict/delete", nil)
		if code != http.StatusOK || !strings.Contains(body, "Profile strict deleted.") || strings.Contains(body, `data-profile="strict"`) {
			t.Errorf("delete: %d %s", code, body)
		}
		if code, _ := b.post(tab+"/strict/delete", nil); code != http.StatusNotFound {
			t.Errorf("delete again: %d, want 404", code)
		}
	})
}

// The certificate page grades the certificate by the profile chosen: each
// rule's result and what it found, at no charge; an unknown profile says
// so; a company without profiles is told how to add one.
func TestCertificateGrade(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		svc, _ := fixture(t, open(t))
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
		} {
			if code, body := b.post(tab, url.Values{"name": {name}, "rules": {rules}}); code != http.StatusOK {
				t.Fatalf("add %s: %d %s", name, code, body)
			}
		}
		before, err := svc.Balance(ctx, "acme")
		must(t, err)

		_, body = b.get(page + "?profile=brands")
		contains(t, "brands", body, `id="grade-result">fail</span>`,
			`<tr data-rule="brand_names"><td><code>brand_names</code></td><td><span class="bad">fail</span></td><td class="mono">&#34;missing&#34;:[&#34;Globex&#34;]</td></tr>`,
			`<option selected>brands</option>`)
		_, body = b.get(page + "?profile=language")
		contains(t, "language", body, `id="grade-result">pass</span>`,
			`<tr data-rule="approved_language"><td><code>approved_language</code></td><td><span class="ok">pass</span></td><td class="mono">&#34;consent&#34;:0, &#34;approved&#34;:0</td></tr>`,
			`<tr data-rule="lead_age">`)
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
