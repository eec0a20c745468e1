package retain

import (
	"encoding/json"
	"testing"

	"github.com/consentkit/consentkit/consent"
)

// The audit details that append themselves write what encoding/json
// writes for them.
func TestDetailsAppendAsJSON(t *testing.T) {
	for _, d := range []consent.DetailAppender{
		batchDetail{},
		batchDetail{Charged: 100_000, RetainedUntil: "2027-02-23T10:00:00.123456Z"},
		batchDetail{Charged: -15_000, RetainedUntil: "<\"&>\n é"},
		indexDetail{},
		indexDetail{Index: 99},
		indexDetail{Index: -3},
	} {
		want, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.AppendDetail([]byte("x")); string(got) != "x"+string(want) {
			t.Errorf("%#v appends %s, want x%s", d, got, want)
		}
	}
}
