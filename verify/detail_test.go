package verify

import (
	"encoding/json"
	"testing"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/wallet"
)

// The audit details that append themselves write what encoding/json
// writes for them, in every combination of their optional fields.
func TestDetailsAppendAsJSON(t *testing.T) {
	yes, no := true, false
	var ds []consent.DetailAppender
	for _, charged := range []*wallet.Amount{nil, new(wallet.Amount(15_000)), new(wallet.Amount(0))} {
		for _, originator := range []string{"", "acme", "a\"<b>&\\c"} {
			for _, valid := range []*bool{nil, &yes, &no} {
				for _, vtype := range []string{FirstParty, ThirdParty, ""} {
					ds = append(ds, &auditDetail{Charged: charged, Originator: originator, Valid: valid, VerificationType: vtype})
				}
			}
		}
		for _, property := range []string{"", "web", "\u2028é"} {
			ds = append(ds, &infoDetail{Charged: charged, PropertyID: property})
		}
	}
	ds = append(ds, (*auditDetail)(nil), (*infoDetail)(nil))
	for _, d := range ds {
		want, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.AppendDetail([]byte("x")); string(got) != "x"+string(want) {
			t.Errorf("%#v appends %s, want x%s", d, got, want)
		}
	}
}
