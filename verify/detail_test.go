package verify

import (
	"encoding/json"
	"testing"

	"github.com/consentkit/consentkit/wallet"
)

// The audit details are written with their keys in the order of their
// names, as a map's would be, optional members left out when unset, and
// strings escaped as encoding/json escapes them: the bytes the audit chain
// has always hashed.
func TestDetailsJSON(t *testing.T) {
	yes, no := true, false
	charged, free := wallet.Amount(15_000), wallet.Amount(0)
	for _, tc := range []struct {
		d    any
		want string
	}{
		{&auditDetail{VerificationType: FirstParty}, `{"verification_type":"first_party"}`},
		{&auditDetail{Charged: &charged, Originator: "acme", Valid: &yes, VerificationType: ThirdParty},
			`{"charged":0.015,"originator_company_id":"acme","valid":true,"verification_type":"third_party"}`},
		{&auditDetail{Charged: &free, Valid: &no, VerificationType: FirstParty}, `{"charged":0,"valid":false,"verification_type":"first_party"}`},
		{&auditDetail{Originator: "a\"<b>&\\c"}, `{"originator_company_id":"a\"\u003cb\u003e\u0026\\c","verification_type":""}`},
		{&infoDetail{PropertyID: "web"}, `{"property_id":"web"}`},
		{&infoDetail{Charged: &charged, PropertyID: "\u2028é"}, `{"charged":0.015,"property_id":"\u2028é"}`},
		{(*auditDetail)(nil), `null`},
	} {
		got, err := json.Marshal(tc.d)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.want {
			t.Errorf("%#v: %s, want %s", tc.d, got, tc.want)
		}
	}
}
