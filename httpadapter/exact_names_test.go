package httpadapter_test

import (
	"strings"
	"testing"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/internal/teststore"
)

// Member names match exactly, as the OpenAPI document spells them (D29):
// one that differs from a field's in case only is an unknown member,
// ignored. encoding/json took "Certificate_ID" for certificate_id, so the
// match was made and charged, and a later "CONSENT" overwrote consent.
func TestMemberNamesMatchExactly(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e := setup(t, open(t))
		h := e.handler(t, httpadapter.Config{})
		rec := serve(h, request{path: "/verify/match", token: acmeToken,
			body: `{"Certificate_ID":"cert-1","company_id":"acme","consent":"` + consentText + `"}`})
		if rec.Code != 400 || !strings.Contains(rec.Body.String(), "certificate_id is required") {
			t.Errorf("match naming certificate_id Certificate_ID: %d %s; want 400 certificate_id is required", rec.Code, rec.Body)
		}
		checkBalances(t, e, nil)
		rec = serve(h, request{path: "/verify/match", token: acmeToken,
			body: `{"certificate_id":"cert-1","company_id":"acme","consent":"` + consentText + `","CONSENT":"something else"}`})
		if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"valid":true`) {
			t.Errorf("match with an unknown member CONSENT: %d %s; want valid:true, CONSENT ignored", rec.Code, rec.Body)
		}
	})
}
