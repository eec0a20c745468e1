package dashboard_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/dashboard"
	"github.com/consentkit/consentkit/insights"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/jobs"
	"github.com/consentkit/consentkit/profile"
)

// insightsRecording is a form of two fields: the person moved the
// pointer, clicked into the email field and pasted their address; a
// script set the field named <script>; the person clicked the submit
// button 4 s after the page loaded, and the snippet's signals event
// closes it.
const insightsRecording = `[
{"type":4,"data":{"href":"https://forms.acme.example/quote","width":1280,"height":720},"timestamp":1767225600000},
{"type":2,"data":{"node":{"type":0,"id":1,"childNodes":[
  {"type":2,"tagName":"input","attributes":{"type":"email","name":"email"},"childNodes":[],"id":2},
  {"type":2,"tagName":"input","attributes":{"type":"text","name":"<script>"},"childNodes":[],"id":4},
  {"type":2,"tagName":"button","attributes":{},"childNodes":[],"id":3}]}},"timestamp":1767225600000},
{"type":3,"data":{"source":1,"positions":[{"x":40,"y":30,"id":1,"timeOffset":-40},{"x":42,"y":31,"id":1,"timeOffset":0}]},"timestamp":1767225601000},
{"type":3,"data":{"source":2,"type":2,"id":2,"x":42,"y":31,"pointerType":0},"timestamp":1767225601100},
{"type":3,"data":{"source":5,"text":"jane@example.com","isChecked":false,"userTriggered":true,"id":2},"timestamp":1767225602000},
{"type":3,"data":{"source":5,"text":"robot-value-42","isChecked":false,"userTriggered":false,"id":4},"timestamp":1767225602500},
{"type":3,"data":{"source":2,"type":2,"id":3,"x":60,"y":90,"pointerType":0},"timestamp":1767225604000},
{"type":5,"data":{"tag":"consentkit/signals","payload":{"v":1,"fields":{"email":{"keys":0,"pastes":1}},
  "webdriver":false,"viewport":{"width":1280,"height":720},"time_zone":"America/Chicago","language":"en-US",
  "framed":true,"parent_origin":"https://leads.partner.example"}},"timestamp":1767225604000}
]`

const safariUA = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15"

// issueRecorded issues acme's certificate id from a session of
// insightsRecording, as a person's browser would.
func issueRecorded(t testing.TB, svc *consentkit.Service, id string) {
	t.Helper()
	_, err := svc.StartSession(ctx, consentkit.SessionParams{ID: "s-" + id, CompanyID: "acme", PropertyID: "acme-web"})
	must(t, err)
	_, err = svc.AppendEvents(ctx, "s-"+id, json.RawMessage(insightsRecording))
	must(t, err)
	_, err = svc.IssueCertificate(ctx, consentkit.CertificateParams{
		ID: id, CompanyID: "acme", PropertyID: "acme-web", SessionID: "s-" + id, Origin: "https://forms.acme.example/quote",
		Email: email, ClientIP: "203.0.113.7", UserAgent: safariUA,
		Records: []consent.Record{{Text: consentText, Types: []string{"tcpa"}}},
	})
	must(t, err)
}

// runInsights runs the insights jobs until none is left, as the job
// runner does.
func runInsights(t testing.TB, svc *consentkit.Service) {
	t.Helper()
	r, err := jobs.New(jobs.Config{Store: svc.Store(), Handlers: []jobs.Handler{insights.Handler(svc, insights.Limits{})}, Now: svc.Now})
	must(t, err)
	for range 100 {
		ran, err := r.RunOnce(ctx, consent.JobInsights)
		must(t, err)
		if !ran {
			return
		}
	}
	t.Fatal("the insights jobs do not end")
}

// section returns the page's insights section: from its heading to the
// end of the page.
func section(t *testing.T, body string) string {
	t.Helper()
	_, s, ok := strings.Cut(body, `id="insights-title"`)
	if !ok {
		t.Fatalf("no insights section in the page:\n%s", body)
	}
	return s
}

// A certificate's page shows its insights (D50) on every store: pending
// before the job ran; then the status, the verdict now with each reason,
// its meaning and whether it was signed or found when asked, the signed
// signals with their signature checked, and what is computed when asked
// (lead age, velocity), with every text of the recording escaped.
func TestCertificateInsights(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		svc, _ := fixture(t, open(t))
		issueRecorded(t, svc, "cert-rec")
		h, err := dashboard.New(svc, dashboard.Config{OperatorSecret: secret})
		must(t, err)
		b := newBrowser(t, h)
		b.login()
		const path = "/dashboard/companies/acme/certificates/cert-rec"

		code, body := b.get(path)
		if code != http.StatusOK {
			t.Fatalf("the certificate's page: %d %s", code, body)
		}
		s := section(t, body)
		contains(t, "pending insights", s, `id="insights-status"><span class="muted">pending</span>`, `id="lead-age"`, `id="velocity"`)
		if strings.Contains(s, `id="insights-verdict"`) || strings.Contains(s, `id="insights-signals"`) {
			t.Error("pending insights show a verdict or signals")
		}

		runInsights(t, svc)
		// The attestation measured otherwise: a reason found when asked.
		attest(t, svc, nil, "cert-rec", nil, mismatch)
		code, body = b.get(path)
		if code != http.StatusOK {
			t.Fatalf("the certificate's page: %d %s", code, body)
		}
		s = section(t, body)
		contains(t, "insights", s,
			`id="insights-status"><span class="ok">done</span>`,
			`id="insights-signature"><span class="ok">valid</span> (key <code>dashboard-test</code>)`,
			`id="insights-verdict"><span class="bad">bot</span> (signed at issue: suspect)`,
			`<tr data-reason="scripted_input"><td><code>scripted_input</code></td><td>suspect</td><td>a field&#39;s value was set by a script, not by the person</td><td>signed</td></tr>`,
			`<tr data-reason="attestation_mismatch"><td><code>attestation_mismatch</code></td><td>suspect</td><td>the attestation&#39;s replay measured otherwise than the browser claimed</td><td>when asked (not signed)</td></tr>`,
			`id="seconds-on-page">4 s</dd>`, `id="seconds-to-submit">3`, `id="keystrokes">0</dd>`,
			`id="pointer">2 moves, 2 clicks, 0 touches, 0 scrolls</dd>`,
			`id="client">Safari 17.5 · macOS`, `desktop`,
			`id="is-framed">yes, in <span class="mono">https://leads.partner.example</span>`,
			`id="webdriver">no</dd>`, `1280 × 720 px`, `America/Chicago`, `en-US`,
			`<td class="mono">email</td><td>pasted</td><td class="num">0</td><td class="num">1</td>`,
			`<td class="mono">&lt;script&gt;</td><td>scripted</td>`,
			`Computed now, not signed`, `id="lead-age">`,
			// cert-acme, of the same email, came before it.
			`<tr><th scope="row">Hour before</th><td class="num">0</td><td class="num">1</td><td class="num">0</td></tr>`,
		)
		if strings.Contains(body, "<script") {
			t.Error("a text of the recording reaches the page unescaped")
		}
		for _, content := range []string{"jane@example.com", "robot-value-42"} {
			if strings.Contains(body, content) {
				t.Errorf("the page shows a field's content %q", content)
			}
		}
	})
}

// The insights' states: failed says so with no statement; a statement
// whose signature does not hold says why; a certificate issued before
// insights says none.
func TestCertificateInsightsStates(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		svc, _ := fixture(t, open(t))
		issueRecorded(t, svc, "cert-rec")
		runInsights(t, svc)
		_, err := svc.StartSession(ctx, consentkit.SessionParams{ID: "s-old", CompanyID: "acme", PropertyID: "acme-web"})
		must(t, err)
		must(t, svc.Store().Update(ctx, func(tx consent.Tx) error {
			// cert-other's job failed for good.
			in, err := tx.Insights(ctx, "cert-other")
			if err != nil {
				return err
			}
			in.Status, in.Statement, in.Signature, in.KeyID = consent.InsightsFailed, nil, nil, ""
			if err := tx.UpdateInsights(ctx, in); err != nil {
				return err
			}
			// cert-rec's signature was tampered with.
			if in, err = tx.Insights(ctx, "cert-rec"); err != nil {
				return err
			}
			in.Signature[0] ^= 1
			if err := tx.UpdateInsights(ctx, in); err != nil {
				return err
			}
			// cert-old was issued before insights.
			c, err := tx.Certificate(ctx, "cert-acme")
			if err != nil {
				return err
			}
			old := *c
			old.ID, old.SessionID, old.RecordingSHA256, old.Signature, old.KeyID = "cert-old", "s-old", consent.Digest{}, nil, ""
			return tx.CreateCertificate(ctx, &old)
		}))
		h, err := dashboard.New(svc, dashboard.Config{OperatorSecret: secret})
		must(t, err)
		b := newBrowser(t, h)
		b.login()

		_, body := b.get("/dashboard/companies/other/certificates/cert-other")
		contains(t, "failed insights", section(t, body), `id="insights-status"><span class="bad">failed</span>`)
		_, body = b.get("/dashboard/companies/acme/certificates/cert-rec")
		s := section(t, body)
		contains(t, "a tampered statement", s, `id="insights-signature"><span class="bad">`)
		if strings.Contains(s, `id="insights-signature"><span class="ok">`) {
			t.Error("a tampered statement is shown valid")
		}
		code, body := b.get("/dashboard/companies/acme/certificates/cert-old")
		if code != http.StatusOK {
			t.Fatalf("a certificate without insights: %d %s", code, body)
		}
		contains(t, "no insights", section(t, body), `id="insights-status">None: this certificate was issued before insights were computed.`)
	})
}

// ruleRow returns the rules table's row of the rule key.
func ruleRow(t *testing.T, body, key string) string {
	t.Helper()
	m := regexp.MustCompile(`<tr data-rule="` + key + `">.*?</tr>`).FindString(body)
	if m == "" {
		t.Fatalf("no row of rule %s in the page", key)
	}
	return m
}

// The company page shows its verdict rules, each in effect and marked
// when it is the default, and a form that sets them (audited); a bad
// value is refused with the error on the page, 400, and changes nothing;
// so is a form without the CSRF token (403).
func TestInsightsRulesForm(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		svc, _ := fixture(t, open(t))
		h, err := dashboard.New(svc, dashboard.Config{OperatorSecret: secret})
		must(t, err)
		b := newBrowser(t, h)
		b.login()
		rules := func() consent.InsightsRules {
			t.Helper()
			var c *consent.Company
			must(t, svc.Store().View(ctx, func(tx consent.Tx) error {
				var err error
				c, err = tx.Company(ctx, "acme")
				return err
			}))
			return c.InsightsRules
		}

		_, body := b.get("/dashboard/companies/acme")
		contains(t, "the company page", body, `id="attest-certificates">off`, `action="/dashboard/companies/acme/insights-rules"`)
		contains(t, "a default rule", ruleRow(t, body, "min_seconds_on_page"), `1.5 <span class="muted">(default)</span>`)
		contains(t, "a default rule", ruleRow(t, body, "max_per_hour"), `5 <span class="muted">(default)</span>`)

		code, body := b.post("/dashboard/companies/acme/insights-rules", url.Values{
			"min_seconds_on_page": {" 3 "}, "max_keys_per_minute": {""}, "min_keystrokes": {"12"},
			"suspects_for_bot": {""}, "max_per_hour": {"-1"}, "max_per_day": {""},
		})
		if code != http.StatusOK {
			t.Fatalf("set the rules: %d %s", code, body)
		}
		want := consent.InsightsRules{MinSecondsOnPage: 3, MinKeystrokes: 12, MaxPerHour: -1}
		if got := rules(); got != want {
			t.Fatalf("the rules set: %+v, want %+v", got, want)
		}
		contains(t, "the rules set", body, "Verdict rules saved.", `name="min_seconds_on_page" value="3"`)
		if row := ruleRow(t, body, "min_seconds_on_page"); !strings.Contains(row, `<td class="num">3</td>`) {
			t.Errorf("a rule set: %s", row)
		}
		contains(t, "a rule turned off", ruleRow(t, body, "max_per_hour"), `<td class="num">off</td>`)
		contains(t, "a rule left to its default", ruleRow(t, body, "max_per_day"), `20 <span class="muted">(default)</span>`)
		es, err := svc.AuditLog(ctx, consent.AuditQuery{CompanyID: "acme", Newest: true, Limit: 1})
		must(t, err)
		if len(es) != 1 || es[0].Action != consent.AuditCompanyInsightsRules || es[0].Actor != consent.ActorOperator {
			t.Errorf("the change is not audited as the operator's: %+v", es)
		}

		for _, bad := range []url.Values{
			{"min_seconds_on_page": {"soon"}},
			{"max_per_day": {"2.5"}},
			{"max_keys_per_minute": {"1e300"}},
			{"min_seconds_on_page": {"NaN"}},
		} {
			code, body := b.post("/dashboard/companies/acme/insights-rules", bad)
			if code != http.StatusBadRequest || !strings.Contains(body, `class="error" role="alert"`) {
				t.Errorf("%v: %d, want 400 with the error shown", bad, code)
			}
			for k, v := range bad {
				contains(t, "the refused form", body, `name="`+k+`" value="`+v[0]+`"`)
			}
			if got := rules(); got != want {
				t.Errorf("%v changed the rules: %+v", bad, got)
			}
		}
		_, body = b.post("/dashboard/companies/acme/insights-rules", url.Values{"min_seconds_on_page": {"soon"}})
		contains(t, "the error", body, "min_seconds_on_page must be a number")

		code, _ = b.post("/dashboard/companies/acme/insights-rules", url.Values{"csrf": {""}, "min_seconds_on_page": {"9"}})
		if code != http.StatusForbidden {
			t.Errorf("a form without its CSRF token: %d, want 403", code)
		}
		if got := rules(); got != want {
			t.Errorf("a form without its CSRF token changed the rules: %+v", got)
		}
	})
}

// An insights statement whose signature was removed in the store, on a
// service that signs (so Service.CheckInsights refuses it: "the statement
// is not signed"), is shown as not holding, as a stripped attestation is;
// never as a plain unsigned statement with its signals labelled signed.
func TestCertificateInsightsSignatureRemoved(t *testing.T) {
	svc, _ := fixture(t, teststore.Memory(t))
	issueRecorded(t, svc, "cert-rec")
	runInsights(t, svc)
	must(t, svc.Store().Update(ctx, func(tx consent.Tx) error {
		in, err := tx.Insights(ctx, "cert-rec")
		if err != nil {
			return err
		}
		in.Signature, in.KeyID = nil, ""
		return tx.UpdateInsights(ctx, in)
	}))
	must(t, svc.Store().View(ctx, func(tx consent.Tx) error {
		c, err := tx.Certificate(ctx, "cert-rec")
		must(t, err)
		in, err := tx.Insights(ctx, "cert-rec")
		must(t, err)
		if err := svc.CheckInsights(ctx, tx, c, in); err == nil {
			t.Fatal("setup: the service takes the stripped statement")
		}
		return nil
	}))
	h, err := dashboard.New(svc, dashboard.Config{OperatorSecret: secret})
	must(t, err)
	b := newBrowser(t, h)
	b.login()
	_, body := b.get("/dashboard/companies/acme/certificates/cert-rec")
	s := section(t, body)
	if !strings.Contains(s, `id="insights-signature"><span class="bad">`) {
		i := strings.Index(s, `id="insights-signature"`)
		t.Errorf("a statement whose signature was removed is not flagged: %.200s", s[max(i, 0):])
	}
	if strings.Contains(s, "Signals (signed)") {
		t.Error("the signals of a statement that does not hold are labelled signed")
	}
	// A verification by a profile that grades verdicts reads the insights
	// and refuses them (409): the page grades nothing either.
	rules, err := profile.ParseRules([]byte(`{"verdicts":{"refused":["bot"]}}`))
	must(t, err)
	_, err = (profile.Profiles{Service: svc}).Put(ctx, "acme", "bots", rules)
	must(t, err)
	_, body = b.get("/dashboard/companies/acme/certificates/cert-rec?profile=bots")
	contains(t, "the grade by verdicts", body, `id="grade-refused">409 `)
}

// An insights row whose status was changed in the store beside its signed
// statement (Service.CheckInsights: "the status is \"failed\" beside a
// statement") is shown as not holding, never with a valid signature.
func TestCertificateInsightsStatusChanged(t *testing.T) {
	svc, _ := fixture(t, teststore.Memory(t))
	issueRecorded(t, svc, "cert-rec")
	runInsights(t, svc)
	must(t, svc.Store().Update(ctx, func(tx consent.Tx) error {
		in, err := tx.Insights(ctx, "cert-rec")
		if err != nil {
			return err
		}
		in.Status = consent.InsightsFailed
		return tx.UpdateInsights(ctx, in)
	}))
	h, err := dashboard.New(svc, dashboard.Config{OperatorSecret: secret})
	must(t, err)
	b := newBrowser(t, h)
	b.login()
	_, body := b.get("/dashboard/companies/acme/certificates/cert-rec")
	s := section(t, body)
	if !strings.Contains(s, `id="insights-signature"><span class="bad">`) {
		i := strings.Index(s, `id="insights-status"`)
		t.Errorf("a status changed beside its statement is not flagged: %.600s", s[max(i, 0):])
	}
	contains(t, "a status changed beside its statement", s, `id="insights-status"><span class="bad">not verified</span>`)
}
