package consentkit_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/audit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/wallet"
	"github.com/consentkit/consentkit/webhook"
)

func log(t *testing.T, svc *consentkit.Service, company string) []*consent.AuditEntry {
	t.Helper()
	out, err := svc.AuditLog(ctx, consent.AuditQuery{CompanyID: company})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

type row struct{ Actor, Action, Target, Outcome, RequestID, Detail string }

func rows(entries []*consent.AuditEntry) []row {
	out := []row{}
	for _, e := range entries {
		out = append(out, row{e.Actor, e.Action, e.Target, e.Outcome, e.RequestID, e.Detail})
	}
	return out
}

// The Go API's changes are recorded with the context's actor and request
// id ("operator" without one); refusals inside the transaction are recorded
// too, and the chain is intact.
func TestAuditServiceActions(t *testing.T) {
	svc, _ := newService(t, consentkit.Config{})
	op := consentkit.WithRequestID(consentkit.WithActor(ctx, "admin:jo"), "req-1")
	if _, err := svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "beta", Name: "Beta"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.AddProperty(op, consentkit.PropertyParams{ID: "beta-web", CompanyID: "beta", Name: "Form"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.SetAllowedOrigins(op, "beta", "beta-web", []string{"https://beta.example"}); err != nil {
		t.Fatal(err)
	}
	_, err := svc.SetAllowedOrigins(op, "beta", "acme-web", nil) // acme's property
	wantCode(t, "SetAllowedOrigins(another company's property)", err, consent.NotFound)
	if _, err := svc.SetThirdParty(op, "beta", true, []string{"acme"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.SetAttestCertificates(op, "beta", true); err != nil {
		t.Fatal(err)
	}
	tok, _, err := svc.IssueToken(op, consentkit.TokenParams{CompanyID: "beta", Permissions: []consent.Permission{consent.PermissionRetention}})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.RevokeToken(op, "beta", tok.ID); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "RevokeToken(unknown)", svc.RevokeToken(op, "beta", "tok_nope"), consent.NotFound)
	if _, err := svc.TopUp(op, "beta", 2*wallet.Dollar, "inv-7"); err != nil {
		t.Fatal(err)
	}
	endpoints := webhook.Endpoints{Service: svc}
	ep, err := endpoints.Add(op, webhook.Params{CompanyID: "beta", URL: "https://hooks.beta.example/in",
		Events: []string{consent.EventConsentRevoked}})
	if err != nil {
		t.Fatal(err)
	}
	if err := endpoints.SetDisabled(op, "beta", ep.ID, true); err != nil {
		t.Fatal(err)
	}
	if err := endpoints.SetDisabled(op, "beta", ep.ID, false); err != nil {
		t.Fatal(err)
	}
	if err := endpoints.Delete(op, "beta", ep.ID); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "Endpoints.Delete(again)", endpoints.Delete(op, "beta", ep.ID), consent.NotFound)
	// Unknown company: refused, nothing to record against.
	_, err = svc.SetThirdParty(op, "nobody", false, nil)
	wantCode(t, "SetThirdParty(nobody)", err, consent.NotFound)
	_, err = svc.SetAttestCertificates(op, "nobody", true)
	wantCode(t, "SetAttestCertificates(nobody)", err, consent.NotFound)

	want := []row{
		{"operator", "company.create", "beta", "ok", "", `{"attest_certificates":false,"authorized_third_parties":[],"insights_rules":{},"third_party_verification_enabled":false}`},
		{"admin:jo", "property.create", "beta-web", "ok", "req-1", `{"allowed_origins":[]}`},
		{"admin:jo", "property.update", "beta-web", "ok", "req-1", `{"allowed_origins":["https://beta.example"]}`},
		{"admin:jo", "property.update", "acme-web", "not_found", "req-1", `{"allowed_origins":[]}`},
		{"admin:jo", "company.update", "beta", "ok", "req-1", `{"authorized_third_parties":["acme"],"third_party_verification_enabled":true}`},
		{"admin:jo", "company.attestation", "beta", "ok", "req-1", `{"attest_certificates":true}`},
		{"admin:jo", "token.issue", tok.ID, "ok", "req-1", `{"permissions":["vzew_retention"]}`},
		{"admin:jo", "token.revoke", tok.ID, "ok", "req-1", ""},
		{"admin:jo", "token.revoke", "tok_nope", "not_found", "req-1", ""},
	}
	hooks := []row{ // after the top-up; the secret is never recorded
		{"admin:jo", "webhook.create", ep.ID, "ok", "req-1", `{"events":["consent.revoked"],"url":"https://hooks.beta.example/in"}`},
		{"admin:jo", "webhook.disable", ep.ID, "ok", "req-1", ""},
		{"admin:jo", "webhook.enable", ep.ID, "ok", "req-1", ""},
		{"admin:jo", "webhook.delete", ep.ID, "ok", "req-1", ""},
		{"admin:jo", "webhook.delete", ep.ID, "not_found", "req-1", ""},
	}
	got := log(t, svc, "beta")
	if len(got) != len(want)+1+len(hooks) {
		t.Fatalf("%d entries, want %d: %+v", len(got), len(want)+1+len(hooks), rows(got))
	}
	if d := cmp.Diff(hooks, rows(got[len(want)+1:])); d != "" {
		t.Errorf("webhook entries (-want +got):\n%s", d)
	}
	for _, e := range got {
		if strings.Contains(e.Detail, ep.Secret) {
			t.Errorf("entry %d holds the webhook secret", e.Seq)
		}
	}
	got = got[:len(want)+1]
	topUp := got[len(got)-1]
	if d := cmp.Diff(want, rows(got[:len(want)])); d != "" {
		t.Errorf("entries (-want +got):\n%s", d)
	}
	if topUp.Action != "wallet.credit" || topUp.Detail != `{"amount":2,"balance":2,"reference":"inv-7"}` || topUp.Target == "" {
		t.Errorf("top-up entry %+v", topUp)
	}
	if n, err := audit.VerifyChain(ctx, svc.Store(), "beta"); err != nil || n != int64(len(want)+1+len(hooks)) {
		t.Errorf("VerifyChain = %d, %v", n, err)
	}
	if _, err := audit.VerifyChain(ctx, svc.Store(), "nobody"); consent.ErrorCode(err) != consent.NotFound {
		t.Errorf("VerifyChain(nobody) = %v, want NotFound", err)
	}
}

// UpdateAudited commits a refusal with its entry, rolls back a failure with
// everything, and commits a success with its entry.
func TestUpdateAudited(t *testing.T) {
	svc, _ := newService(t, consentkit.Config{})
	errDisk := errors.New("disk on fire")
	before := len(log(t, svc, "acme"))
	for _, tc := range []struct {
		name    string
		fnErr   error
		wantErr error
		entry   string // outcome recorded; "" when none
	}{
		{"ok", nil, nil, "ok"},
		{"refused", consent.Errorf(consent.Conflict, "already"), consent.ErrConflict, "conflict"},
		{"payment", &wallet.InsufficientFundsError{Required: 1}, wallet.ErrInsufficientFunds, "payment"},
		{"storage failure", errDisk, errDisk, ""},
	} {
		p := &consentkit.AuditParams{CompanyID: "acme", Action: "test." + tc.name}
		err := svc.UpdateAudited(ctx, p, func(tx consent.Tx) error {
			p.Target = "t-1"
			return tc.fnErr
		})
		if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
			t.Errorf("%s: UpdateAudited = %v, want %v", tc.name, err, tc.wantErr)
		}
		got, err := svc.AuditLog(ctx, consent.AuditQuery{CompanyID: "acme", ActionPrefix: "test." + tc.name})
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case tc.entry == "" && len(got) != 0:
			t.Errorf("%s: recorded %+v, want nothing", tc.name, got[0])
		case tc.entry != "" && (len(got) != 1 || got[0].Outcome != tc.entry || got[0].Target != "t-1"):
			t.Errorf("%s: recorded %+v, want one entry with outcome %s", tc.name, rows(got), tc.entry)
		}
	}
	if n := len(log(t, svc, "acme")); n != before+3 {
		t.Errorf("%d entries, want %d", n, before+3)
	}
}

func TestAuditLogQuery(t *testing.T) {
	svc, _ := newService(t, consentkit.Config{})
	for name, q := range map[string]consent.AuditQuery{
		"no company":    {},
		"limit too big": {CompanyID: "acme", Limit: consent.MaxAuditPage + 1},
		"negative":      {CompanyID: "acme", BeforeSeq: -2},
	} {
		_, err := svc.AuditLog(ctx, q)
		wantCode(t, name, err, consent.Invalid)
	}
	got, err := svc.AuditLog(ctx, consent.AuditQuery{CompanyID: "acme"})
	if err != nil || len(got) != 2 { // the company and its property
		t.Errorf("AuditLog(acme) = %d entries, %v; want 2", len(got), err)
	}
}

func TestContextValues(t *testing.T) {
	if id := consentkit.RequestIDFrom(consentkit.WithRequestID(ctx, "bad id")); id != "" {
		t.Errorf("a request id that is not an identifier was kept: %q", id)
	}
	if a := consentkit.ActorFrom(consentkit.WithActor(ctx, "a\x00b")); a != "" {
		t.Errorf("an actor that is not text was kept: %q", a)
	}
	c := consentkit.WithActor(consentkit.WithRequestID(ctx, "r-1"), "tok_1")
	if consentkit.RequestIDFrom(c) != "r-1" || consentkit.ActorFrom(c) != "tok_1" {
		t.Errorf("context lost its values")
	}
}
