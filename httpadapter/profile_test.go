package httpadapter_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/insights"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/jobs"
	"github.com/consentkit/consentkit/signed"
	"github.com/consentkit/consentkit/wallet"
)

// Texts of the graded certificates: one that a buyer's rules accept, one
// that they refuse. The good one holds punctuation and white space that
// the approved language's wildcards must cross.
const (
	goodText = "  I agree to be called by Acme Insurance, Inc. (and its partners) at\n(555) 010-2000 — $0 cost. "
	badText  = "I agree to be called by anyone."
)

// gradedAudit is the "audit" member of a match answer (D51).
type gradedAudit struct {
	Result string `json:"result"`
	Rules  []struct {
		Rule   string         `json:"rule"`
		Result string         `json:"result"`
		Found  map[string]any `json:"found"`
	} `json:"rules"`
}

// profileEnv is the fixture of the profile tests: a service with a
// signing key, two graded certificates of acme, the public handler and
// the operator API.
type profileEnv struct {
	*env
	h, op http.Handler
}

func newProfileEnv(t *testing.T, store consent.Store) *profileEnv {
	t.Helper()
	e := setup(t, store)
	key, err := signed.NewSigningKey("key-1")
	must(t, err)
	e.svc, err = consentkit.NewService(e.store, consentkit.Config{Now: e.clock.Now, SigningKeys: []signed.SigningKey{key}})
	must(t, err)
	h, err := httpadapter.New(httpadapter.Config{Service: e.svc, OperatorSecret: operatorSecret,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	must(t, err)
	legible := &consent.Visibility{InViewport: true, Visible: true, FontSizePx: 16, TextColor: "rgb(0, 0, 0)",
		BackgroundColor: "rgb(255, 255, 255)", ContrastRatio: 21}
	faint := &consent.Visibility{InViewport: true, Visible: true, FontSizePx: 8, TextColor: "rgb(200, 200, 200)",
		BackgroundColor: "rgb(255, 255, 255)", ContrastRatio: 1.5}
	for _, c := range []consentkit.CertificateParams{
		{ID: "cert-good", CreatedAt: now.Add(-time.Hour), Records: []consent.Record{{Text: goodText, Types: []string{"tcpa"},
			OptInAt: now.Add(-time.Hour), Visibility: legible, OptInMethod: consent.OptInManual}}},
		{ID: "cert-bad", CreatedAt: now.Add(-48 * time.Hour), Records: []consent.Record{{Text: badText, Types: []string{"tcpa"},
			OptInAt: now.Add(-48 * time.Hour), Visibility: faint, OptInMethod: consent.OptInPreSelected}}},
	} {
		c.CompanyID, c.PropertyID, c.SessionID, c.Origin = "acme", "acme-web", "s2", "https://acme.example/quote"
		_, err := e.svc.IssueCertificate(ctx, c)
		must(t, err)
	}
	return &profileEnv{env: e, h: h, op: h.Operator()}
}

// putProfile puts a profile through the operator API.
func (p *profileEnv) putProfile(t *testing.T, company, name, rules string) {
	t.Helper()
	if code, out := opCall(t, p.op, "PUT", "/operator/companies/"+company+"/profiles/"+name, operatorSecret, rules); code != 200 {
		t.Fatalf("PUT profile %s of %s: %d %v", name, company, code, out)
	}
}

// grade verifies through HTTP and returns the answer's status, its audit
// and what it cost the caller.
func (p *profileEnv) grade(t *testing.T, token, path, body string) (int, *gradedAudit, wallet.Amount) {
	t.Helper()
	company := map[string]string{acmeToken: "acme", buyerToken: "buyer"}[token]
	before := p.balance(t, company)
	rec := call(p.h, "POST", path, "", token, body)
	var answer struct {
		Audit *gradedAudit `json:"audit"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &answer); err != nil {
		t.Fatalf("%s %s: %d %s", path, body, rec.Code, rec.Body)
	}
	return rec.Code, answer.Audit, before - p.balance(t, company)
}

// Each rule of an audit profile passes on one certificate and misses on
// another, through HTTP, on every store (D51): the grade names each rule's
// result and what it found, a miss is a failure unless the rule says warn,
// and grading adds nothing to the price.
func TestProfileRulesThroughHTTP(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		p := newProfileEnv(t, open(t))
		price := wallet.DefaultPrices().ExactMatch
		for _, tc := range []struct {
			name, rules string
			good, bad   string // the rule's result on each certificate
			found       string // a member of the rule's found on the bad certificate
			want        any    // its value
		}{
			{"language", `{"approved_language":{"texts":["I agree to be called by nobody.",` +
				`"  I agree to be called by {{*}}, Inc. ({{*}}) at\n(555) {{*}} — $0 cost.\t"]}}`, "pass", "fail", "approved", nil},
			{"brands", `{"brand_names":{"names":["ACME insurance","Inc."]}}`, "pass", "fail", "missing", []any{"ACME insurance", "Inc."}},
			{"brands-warn", `{"brand_names":{"names":["acme"],"on_miss":"warn"}}`, "pass", "warn", "missing", []any{"acme"}},
			{"legibility", `{"legibility":{"min_font_size_px":12,"min_contrast":4.5}}`, "pass", "fail", "font_size_px", 8.0},
			{"methods", `{"opt_in_methods":{"allowed":["manual"]}}`, "pass", "fail", "methods", []any{"pre_selected"}},
			{"lead-age", `{"lead_age":{"max_seconds":86400}}`, "pass", "fail", "lead_age_seconds", float64(48 * 3600)},
		} {
			p.putProfile(t, "acme", tc.name, tc.rules)
			for _, cert := range []struct{ id, want string }{{"cert-good", tc.good}, {"cert-bad", tc.bad}} {
				code, audit, cost := p.grade(t, acmeToken, "/verify/match", matchBody(cert.id, "acme", "x", `,"profile":"`+tc.name+`"`))
				if code != 200 || audit == nil || len(audit.Rules) != 1 {
					t.Fatalf("%s on %s: %d %+v", tc.name, cert.id, code, audit)
				}
				if audit.Result != cert.want || audit.Rules[0].Result != cert.want {
					t.Errorf("%s on %s: %+v, want %s", tc.name, cert.id, audit, cert.want)
				}
				if cost != price {
					t.Errorf("%s on %s cost %s, want the price of a match, %s", tc.name, cert.id, cost, price)
				}
				if cert.id == "cert-bad" && tc.want != nil {
					if got := audit.Rules[0].Found[tc.found]; !jsonEqual(got, tc.want) {
						t.Errorf("%s on %s found %s = %v, want %v", tc.name, cert.id, tc.found, got, tc.want)
					}
				}
			}
		}
		// What the approved language found: the consent and the text.
		_, audit, _ := p.grade(t, acmeToken, "/verify/partial-match", termBody("cert-good", "acme", "acme", `,"profile":"language"`))
		if audit == nil || audit.Result != "pass" || audit.Rules[0].Found["consent"] != 0.0 || audit.Rules[0].Found["approved"] != 1.0 {
			t.Errorf("approved language on partial match: %+v, want consent 0 matching approved text 1", audit)
		}
		// No profile named: no audit in the answer.
		if code, audit, _ := p.grade(t, acmeToken, "/verify/match", matchBody("cert-good", "acme", goodText)); code != 200 || audit != nil {
			t.Errorf("match naming no profile: %d %+v", code, audit)
		}
	})
}

// The attestation and verdict rules read facts that come later: pending
// while the attestation or the insights are, a miss when none was asked
// for, then pass or fail on what they say (D49, D50, D51).
func TestProfilePendingFacts(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		p := newProfileEnv(t, open(t))
		p.putProfile(t, "acme", "attested", `{"attestation":{}}`)
		p.putProfile(t, "acme", "no-bots", `{"verdicts":{"refused":["bot"]}}`)
		p.putProfile(t, "acme", "no-suspects", `{"verdicts":{"refused":["suspect"],"on_miss":"warn"}}`)
		result := func(body string) (string, map[string]any) {
			t.Helper()
			code, audit, _ := p.grade(t, acmeToken, "/verify/match", body)
			if code != 200 || audit == nil || len(audit.Rules) != 1 {
				t.Fatalf("%s: %d %+v", body, code, audit)
			}
			if audit.Rules[0].Result == "pending" && audit.Result != "warn" {
				t.Errorf("%s: a pending rule graded %s, want warn", body, audit.Result)
			}
			return audit.Rules[0].Result, audit.Rules[0].Found
		}

		// No attestation asked for: a miss; asked for: pending.
		if got, _ := result(matchBody("cert-good", "acme", "x", `,"profile":"attested"`)); got != "fail" {
			t.Errorf("attestation never asked for: %s, want fail", got)
		}
		if got, found := result(matchBody("cert-good", "acme", "x", `,"profile":"attested","attest":true`)); got != "pending" || found["status"] != "pending" {
			t.Errorf("attestation asked for: %s %v, want pending", got, found)
		}
		if got, _ := result(matchBody("cert-good", "acme", "x", `,"profile":"attested"`)); got != "pending" {
			t.Errorf("attestation asked for before, this request not asking: %s, want pending", got)
		}
		attest(t, p.env, "cert-good", signed.Attested, consent.AttestationAttested)
		if got, _ := result(matchBody("cert-good", "acme", "x", `,"profile":"attested"`)); got != "pass" {
			t.Errorf("attested: %s, want pass", got)
		}

		// The verdict: pending until the insights job has run.
		if got, _ := result(matchBody("cert-good", "acme", "x", `,"profile":"no-bots"`)); got != "pending" {
			t.Errorf("verdict before the insights job: %s, want pending", got)
		}
		r, err := jobs.New(jobs.Config{Store: p.svc.Store(), Handlers: []jobs.Handler{insights.Handler(p.svc, insights.Limits{})}, Now: p.svc.Now})
		must(t, err)
		for {
			ok, err := r.RunOnce(context.Background(), consent.JobInsights)
			must(t, err)
			if !ok {
				break
			}
		}
		// A recording of one viewport event from no browser is a bot's.
		got, found := result(matchBody("cert-good", "acme", "x", `,"profile":"no-bots"`))
		if reasons, _ := found["reasons"].([]any); got != "fail" || found["verdict"] != "bot" || len(reasons) == 0 {
			t.Errorf("bot refused: %s %v, want fail with the verdict and its reasons", got, found)
		}
		if got, _ := result(matchBody("cert-good", "acme", "x", `,"profile":"no-suspects"`)); got != "pass" {
			t.Errorf("only suspects refused, a bot verdict: %s, want pass", got)
		}
	})
}

// An attestation row whose status its signed statement does not say
// (edited in the store to attested over a mismatch) is refused by
// match, its grade and certificate-info with 409 certificate integrity
// check failed, on every store, and costs nothing (D49).
func TestProfileAttestationEdited(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		p := newProfileEnv(t, open(t))
		p.putProfile(t, "acme", "attested", `{"attestation":{}}`)
		if code, _, _ := p.grade(t, acmeToken, "/verify/match", matchBody("cert-good", "acme", "x", `,"attest":true`)); code != 200 {
			t.Fatalf("asking for the attestation: %d", code)
		}
		attest(t, p.env, "cert-good", signed.Mismatch, consent.AttestationAttested)
		before := p.balance(t, "acme")
		for _, req := range []struct{ path, body string }{
			{"/verify/match", matchBody("cert-good", "acme", "x", `,"profile":"attested"`)},
			{"/verify/match", matchBody("cert-good", "acme", "x", `,"attest":true`)},
			{"/verify/partial-match", termBody("cert-good", "acme", "acme")},
			{"/verify/certificate-info", `{"certificate_id":"cert-good","company_id":"acme","property_id":"acme-web"}`},
		} {
			rec := call(p.h, "POST", req.path, "", acmeToken, req.body)
			if rec.Code != http.StatusConflict || !strings.Contains(rec.Body.String(), "certificate integrity check failed") {
				t.Errorf("%s %s: %d %s, want 409 certificate integrity check failed", req.path, req.body, rec.Code, rec.Body)
			}
		}
		if spent := before - p.balance(t, "acme"); spent != 0 {
			t.Errorf("refused verifications cost %s", spent)
		}
	})
}

// attest records the attestation of cert with a signed statement of the
// status, as the attestation job would.
func attest(t *testing.T, e *env, certID, statement, status string) {
	t.Helper()
	must(t, e.store.Update(ctx, func(tx consent.Tx) error {
		cert, err := tx.Certificate(ctx, certID)
		if err != nil {
			return err
		}
		content := consent.Signed(cert)
		st, err := signed.NewStatement(&content, now)
		if err != nil {
			return err
		}
		st.Status = statement
		sig, err := e.svc.SignStatement(&st)
		if err != nil {
			return err
		}
		body, err := json.Marshal(st)
		if err != nil {
			return err
		}
		att, err := tx.Attestation(ctx, certID)
		if err != nil {
			return err
		}
		att.Status, att.Statement, att.Signature, att.KeyID, att.UpdatedAt = status, body, sig, st.KeyID, now
		return tx.UpdateAttestation(ctx, att)
	}))
}

// A profile is the caller's: a third-party buyer's verification is graded
// by the buyer's profile, never the originator's; an unknown profile is a
// 404 that costs nothing; a malformed name a 400 (D51).
func TestProfileOwnerAndUnknown(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		p := newProfileEnv(t, open(t))
		p.putProfile(t, "acme", "strict", `{"lead_age":{"max_seconds":1}}`)
		p.putProfile(t, "buyer", "strict", `{"opt_in_methods":{"allowed":["manual"]}}`)
		p.putProfile(t, "buyer", "buyers-only", `{"brand_names":{"names":["Acme"]}}`)
		third := `,"originator_company_id":"acme","profile":"strict"`
		code, audit, cost := p.grade(t, buyerToken, "/verify/match", matchBody("cert-good", "buyer", "x", third))
		if code != 200 || audit == nil || len(audit.Rules) != 1 || audit.Rules[0].Rule != "opt_in_methods" || audit.Result != "pass" {
			t.Errorf("third party graded: %d %+v, want the buyer's opt_in_methods rule, pass", code, audit)
		}
		if cost != wallet.DefaultPrices().ExactMatch {
			t.Errorf("third party graded cost %s", cost)
		}
		code, audit, _ = p.grade(t, buyerToken, "/verify/partial-match", termBody("cert-good", "buyer", "acme", third))
		if code != 200 || audit == nil || audit.Rules[0].Rule != "opt_in_methods" {
			t.Errorf("third party partial match graded: %d %+v", code, audit)
		}
		// The originator's own profile of another name is not the buyer's.
		for _, tc := range []struct {
			name, token, path, body string
			code                    int
		}{
			{"unknown", acmeToken, "/verify/match", matchBody("cert-good", "acme", "x", `,"profile":"nope"`), 404},
			{"another company's", acmeToken, "/verify/match", matchBody("cert-good", "acme", "x", `,"profile":"buyers-only"`), 404},
			{"unknown, partial", acmeToken, "/verify/partial-match", termBody("cert-good", "acme", "acme", `,"profile":"nope"`), 404},
			{"unknown, third party", buyerToken, "/verify/match", matchBody("cert-good", "buyer", "x", `,"originator_company_id":"acme","profile":"nope"`), 404},
			{"malformed", acmeToken, "/verify/match", matchBody("cert-good", "acme", "x", `,"profile":"a b"`), 400},
		} {
			code, audit, cost := p.grade(t, tc.token, tc.path, tc.body)
			if code != tc.code || audit != nil || cost != 0 {
				t.Errorf("%s profile: %d %+v, cost %s; want %d, nothing charged", tc.name, code, audit, cost, tc.code)
			}
		}
		// The refusal's audit entry names the profile asked for.
		var last *consent.AuditEntry
		must(t, p.store.View(ctx, func(tx consent.Tx) error {
			page, err := tx.AuditEntries(ctx, consent.AuditQuery{CompanyID: "buyer", Limit: consent.MaxAuditPage})
			if len(page) > 0 {
				last = page[len(page)-1]
			}
			return err
		}))
		if last == nil || last.Outcome != "not_found" || !strings.Contains(last.Detail, `"profile":"nope"`) {
			t.Errorf("the unknown profile's refusal, audited: %+v; want not_found naming the profile", last)
		}
	})
}

// Profiles are managed through the operator API on every store: put
// (create or replace, keeping when it was created), read, list by name,
// delete; rules that cannot be graded are a 400, an unknown company or
// profile a 404; each change is in the company's audit log.
func TestProfileOperatorAPI(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		p := newProfileEnv(t, open(t))
		const base = "/operator/companies/acme/profiles"
		code, out := opCall(t, p.op, "PUT", base+"/strict", operatorSecret, `{"lead_age":{"max_seconds":60,"on_miss":"warn"}}`)
		if code != 200 || out["name"] != "strict" || out["created_at"] != out["updated_at"] {
			t.Fatalf("create: %d %v", code, out)
		}
		p.clock.t = now.Add(time.Minute)
		code, out = opCall(t, p.op, "PUT", base+"/strict", operatorSecret, `{"verdicts":{"refused":["bot"]}}`)
		rules, _ := out["rules"].(map[string]any)
		if code != 200 || rules["lead_age"] != nil || rules["verdicts"] == nil || out["created_at"] == out["updated_at"] {
			t.Errorf("replace: %d %v, want the new rules alone, created before updated", code, out)
		}
		p.putProfile(t, "acme", "B.lean_1", `{"attestation":{"on_miss":"warn"}}`)
		code, out = opCall(t, p.op, "GET", base, operatorSecret, "")
		list, _ := out["profiles"].([]any)
		var names []string
		for _, v := range list {
			names = append(names, v.(map[string]any)["name"].(string))
		}
		if code != 200 || !slices.Equal(names, []string{"B.lean_1", "strict"}) {
			t.Errorf("list: %d %v", code, out)
		}
		if code, out := opCall(t, p.op, "GET", base+"/B.lean_1", operatorSecret, ""); code != 200 || out["name"] != "B.lean_1" {
			t.Errorf("get: %d %v", code, out)
		}
		for _, tc := range []struct {
			method, path, body string
			code               int
		}{
			{"PUT", base + "/empty", `{}`, 400},
			{"PUT", base + "/bad-miss", `{"attestation":{"on_miss":"maybe"}}`, 400},
			{"PUT", base + "/bad-method", `{"opt_in_methods":{"allowed":["telepathy"]}}`, 400},
			{"PUT", base + "/bad-number", `{"legibility":{"min_font_size_px":-1}}`, 400},
			{"PUT", base + "/misspelt", `{"lead_agee":{"max_seconds":1}}`, 400}, // unknown members are ignored (D29): no rule
			{"PUT", base + "/a%20b", `{"lead_age":{"max_seconds":1}}`, 400},
			{"PUT", "/operator/companies/nobody/profiles/x", `{"lead_age":{"max_seconds":1}}`, 404},
			{"GET", base + "/none", "", 404},
			{"GET", "/operator/companies/nobody/profiles", "", 404},
			{"DELETE", base + "/none", "", 404},
		} {
			if code, out := opCall(t, p.op, tc.method, tc.path, operatorSecret, tc.body); code != tc.code {
				t.Errorf("%s %s %s: %d %v, want %d", tc.method, tc.path, tc.body, code, out, tc.code)
			}
		}
		if code, out := opCall(t, p.op, "DELETE", base+"/strict", operatorSecret, ""); code != 200 || out["success"] != true {
			t.Errorf("delete: %d %v", code, out)
		}
		if code, _ := opCall(t, p.op, "GET", base+"/strict", operatorSecret, ""); code != 404 {
			t.Errorf("get after delete: %d", code)
		}
		entries, err := p.svc.AuditLog(ctx, consent.AuditQuery{CompanyID: "acme", Actor: consent.ActorOperator})
		must(t, err)
		var actions []string
		for _, e := range entries {
			if e.Outcome == consent.AuditOK && (e.Action == consent.AuditProfilePut || e.Action == consent.AuditProfileDelete) {
				actions = append(actions, e.Action+" "+e.Target)
			}
		}
		if want := []string{"profile.put strict", "profile.put strict", "profile.put B.lean_1", "profile.delete strict"}; !slices.Equal(actions, want) {
			t.Errorf("audited: %v, want %v", actions, want)
		}
	})
}

// jsonEqual compares two values decoded from JSON.
func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// A verification refused for want of money is graded for no one: its
// audit entry names the profile and holds no grade, charge or validity
// (D51, D3).
func TestProfileRefusedVerificationAudited(t *testing.T) {
	e := setup(t, teststore.Memory(t))
	h, err := httpadapter.New(httpadapter.Config{Service: e.svc, OperatorSecret: operatorSecret,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	must(t, err)
	p := &profileEnv{env: e, h: h, op: h.Operator()}
	p.putProfile(t, "poor", "strict", `{"brand_names":{"names":["Acme"]}}`)
	rec := call(p.h, "POST", "/verify/match", "", poorToken, matchBody("cert-poor", "poor", consentText, `,"profile":"strict"`))
	if rec.Code != 402 {
		t.Fatalf("match with an empty wallet: %d %s", rec.Code, rec.Body)
	}
	var entries []*consent.AuditEntry
	must(t, p.store.View(ctx, func(tx consent.Tx) error {
		var err error
		entries, err = tx.AuditEntries(ctx, consent.AuditQuery{CompanyID: "poor", Limit: 100})
		return err
	}))
	var detail map[string]any
	for _, en := range entries {
		if en.Action == consent.AuditVerifyMatch {
			must(t, json.Unmarshal([]byte(en.Detail), &detail))
		}
	}
	_, graded := detail["audit"]
	_, charged := detail["charged"]
	if detail["profile"] != "strict" || graded || charged {
		t.Errorf("the refusal's audit detail %v; want the profile alone", detail)
	}
}
