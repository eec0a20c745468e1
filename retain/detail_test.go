package retain

import (
	"encoding/json"
	"testing"
)

// The audit details of a batch's entries are written with their keys in
// the order a map's would be, and strings escaped as encoding/json escapes
// them: the bytes the audit chain has always hashed.
func TestDetailsJSON(t *testing.T) {
	for _, tc := range []struct {
		d    any
		want string
	}{
		{batchDetail{}, `{"charged":0,"retained_until":""}`},
		{batchDetail{Charged: 100_000, RetainedUntil: "2027-02-23T10:00:00.123456Z"}, `{"charged":0.1,"retained_until":"2027-02-23T10:00:00.123456Z"}`},
		{batchDetail{Charged: -15_000, RetainedUntil: "<\"&>\n é"}, `{"charged":-0.015,"retained_until":"\u003c\"\u0026\u003e\n é"}`},
		{indexDetail{}, `{"index":0}`},
		{indexDetail{Index: 99}, `{"index":99}`},
		{indexDetail{Index: -3}, `{"index":-3}`},
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
