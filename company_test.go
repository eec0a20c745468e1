package consentkit_test

import (
	"slices"
	"testing"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
)

// SetAllowedOriginsTx writes the normalized origins inside the caller's
// transaction and audits the change with it; it refuses what
// SetAllowedOrigins refuses, and a refusal leaves the origins as they were.
func TestSetAllowedOriginsTx(t *testing.T) {
	svc, _ := newService(t, consentkit.Config{})
	err := svc.Store().Update(ctx, func(tx consent.Tx) error {
		p, err := tx.Property(ctx, "acme-web")
		if err != nil {
			return err
		}
		_, err = svc.SetAllowedOriginsTx(ctx, tx, "acme", "acme-web", append(p.AllowedOrigins, "HTTPS://Acme.Example"))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, company, property string
		origins                 []string
		code                    consent.Code
	}{
		{"another company's property", "beta", "acme-web", nil, consent.NotFound},
		{"no such property", "acme", "acme-nope", nil, consent.NotFound},
		{"a property id that is no id", "acme", "not an id", nil, consent.NotFound},
		{"an origin that is no origin", "acme", "acme-web", []string{"acme.example"}, consent.Invalid},
	} {
		err := svc.Store().Update(ctx, func(tx consent.Tx) error {
			_, err := svc.SetAllowedOriginsTx(ctx, tx, c.company, c.property, c.origins)
			return err
		})
		wantCode(t, "SetAllowedOriginsTx("+c.name+")", err, c.code)
	}
	var got []string
	err = svc.Store().View(ctx, func(tx consent.Tx) error {
		p, err := tx.Property(ctx, "acme-web")
		if err == nil {
			got = p.AllowedOrigins
		}
		return err
	})
	if err != nil || !slices.Equal(got, []string{"https://acme.example"}) {
		t.Errorf("acme-web allows %q, %v; want https://acme.example", got, err)
	}
	log, err := svc.AuditLog(ctx, consent.AuditQuery{CompanyID: "acme", ActionPrefix: consent.AuditPropertyUpdate})
	if err != nil || len(log) != 1 || log[0].Target != "acme-web" || log[0].Detail != `{"allowed_origins":["https://acme.example"]}` {
		t.Errorf("the audit log of the change: %+v, %v; want one entry with the origins", log, err)
	}
}
