package dashboard_test

import (
	"html"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/dashboard"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/wallet"
)

// The companies list shows each company's name and balance; money is
// shown in dollars, exactly, the same way on every page; an audit
// entry's detail reads as its facts, and what it holds stays text.
func TestPagesReadable(t *testing.T) {
	svc, _ := fixture(t, teststore.Memory(t))
	_, err := svc.TopUp(ctx, "acme", 1233*wallet.Dollar+50*wallet.Cent, "invoice <b>9</b>")
	must(t, err)
	must(t, svc.Store().Update(ctx, func(tx consent.Tx) error {
		return svc.Audit(ctx, tx, consentkit.AuditParams{CompanyID: "acme", Action: "test.note", Target: "t-1",
			Detail: map[string]any{"note": `<script>alert("x")</script>`, "<i>key</i>": "v", "nested": map[string]any{"a": []any{1, "<b>"}}}})
	}))
	h, err := dashboard.New(svc, dashboard.Config{OperatorSecret: secret})
	must(t, err)
	b := newBrowser(t, h)
	b.login()

	_, body := b.get("/dashboard/")
	contains(t, "companies", body,
		`<tr data-company="acme"><td><a href="/dashboard/companies/acme">Acme Co</a></td><td><code>acme</code></td><td class="num">$1,234.50</td></tr>`,
		`<tr data-company="other"><td><a href="/dashboard/companies/other">Other Co</a></td><td><code>other</code></td><td class="num">$1.00</td></tr>`)

	_, body = b.get("/dashboard/companies/acme")
	contains(t, "overview", body, `id="balance">$1,234.50<`, "+$1,233.50", "+$1.00", "invoice &lt;b&gt;9&lt;/b&gt;")
	_, body = b.get("/dashboard/companies/acme/ledger")
	contains(t, "ledger", body, "+$1,233.50", "+$1.00")

	_, body = b.get("/dashboard/companies/acme/audit")
	contains(t, "audit", body,
		`<dt>amount</dt> <dd>$1,233.50</dd>`, `<dt>balance</dt> <dd>$1,234.50</dd>`, `<dt>reference</dt> <dd>invoice &lt;b&gt;9&lt;/b&gt;</dd>`,
		`<dt>note</dt> <dd>&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;</dd>`, `<dt>&lt;i&gt;key&lt;/i&gt;</dt> <dd>v</dd>`,
		`<dt>nested</dt> <dd>{&#34;a&#34;:[1,&#34;\u003cb\u003e&#34;]}</dd>`)
	for _, raw := range []string{`<script>alert`, `<i>key`, `<b>9`, `{&#34;amount&#34;`} {
		if strings.Contains(body, raw) {
			t.Errorf("the audit page holds %q: a detail is shown raw", raw)
		}
	}
}

// The company page says whether every certificate the company issues is
// attested (D49).
func TestOverviewAttestCertificates(t *testing.T) {
	svc, _ := fixture(t, teststore.Memory(t))
	h, err := dashboard.New(svc, dashboard.Config{OperatorSecret: secret})
	must(t, err)
	b := newBrowser(t, h)
	b.login()
	_, body := b.get("/dashboard/companies/acme")
	contains(t, "attestation off", body, `id="attest-certificates">off`)
	_, err = svc.SetAttestCertificates(ctx, "acme", true)
	must(t, err)
	_, body = b.get("/dashboard/companies/acme")
	contains(t, "attestation on", body, `id="attest-certificates">on`)
}

// The forms' constraints let through what the Go API accepts, and no more:
// a company id of A-Z a-z 0-9 . _ : - up to consent.MaxIDLength, a top-up
// reference of at most consent.MaxIDLength bytes.
func TestFormsFollowAPILimits(t *testing.T) {
	svc, _ := fixture(t, teststore.Memory(t))
	h, err := dashboard.New(svc, dashboard.Config{OperatorSecret: secret})
	must(t, err)
	b := newBrowser(t, h)
	b.login()
	input := func(body, name string) (pattern string, maxlength int) {
		m := regexp.MustCompile(`<input name="` + name + `"[^>]*>`).FindString(body)
		if p := regexp.MustCompile(`pattern="([^"]*)"`).FindStringSubmatch(m); p != nil {
			pattern = html.UnescapeString(p[1])
		}
		if l := regexp.MustCompile(`maxlength="([0-9]+)"`).FindStringSubmatch(m); l != nil {
			maxlength, _ = strconv.Atoi(l[1])
		}
		return
	}
	id := "acme:eu-" + strings.Repeat("x", 80) // 88 bytes, a valid id
	if !consent.ValidID(id) {
		t.Fatal("setup: not a valid id")
	}
	if _, err := svc.CreateCompany(ctx, consentkit.CompanyParams{ID: id, Name: "EU"}); err != nil {
		t.Fatalf("the Go API refuses company %s: %v", id, err)
	}
	_, body := b.get("/dashboard/")
	pattern, maxlength := input(body, "id")
	if !regexp.MustCompile(`^(?:`+pattern+`)$`).MatchString(id) || maxlength < len(id) {
		t.Errorf("the create-company form refuses the valid id %q (pattern %q, maxlength %d)", id, pattern, maxlength)
	}
	_, body = b.get("/dashboard/companies/acme")
	if _, maxlength := input(body, "reference"); maxlength > consent.MaxIDLength {
		t.Errorf("the top-up form takes a reference of %d characters; the Go API refuses more than %d bytes", maxlength, consent.MaxIDLength)
	}
}
