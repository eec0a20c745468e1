package signed_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/consentkit/consentkit/signed"
)

// Two members whose names encoding/json reads into one field — the same
// name, or one in another letter case — are refused at any depth, naming
// the object and both; names that differ otherwise are not.
func TestCheckNames(t *testing.T) {
	// encoding/json reads the Kelvin sign as k, as it reads "Text" as text.
	var got struct{ Key, Text string }
	if err := json.Unmarshal([]byte(`{"\u212aey":"kelvin","TEXT":"upper"}`), &got); err != nil || got.Key != "kelvin" || got.Text != "upper" {
		t.Fatalf("encoding/json no longer folds names: %+v, %v", got, err)
	}
	for answer, want := range map[string]string{
		`{"text":"a","Text":"b"}`:                                                    `the answer has members "text" and "Text"`,
		`{"signed":{},"valid":true,"Signed":{}}`:                                     `the answer has members "signed" and "Signed"`,
		`{"key_id":"a","\u212aey_id":"b"}`:                                           "the answer has members \"key_id\" and \"\u212aey_id\"",
		`{"origin":"a","origin":"b"}`:                                                `the answer has members "origin" and "origin"`,
		`{"consents":[{"text":"a"},{"opt_in":1,"text":"b","TeXt":"c"}]}`:             `the answer's consents[1] has members "text" and "TeXt"`,
		`{"a":[[],[{"b":{"c":[0,{"x":1,"X":2}]}}]]}`:                                 `the answer's a[1][0].b.c[1] has members "x" and "X"`,
		`{"attestation":{"status":"mismatch","differences":[],"Status":"attested"}}`: `the answer's attestation has members "status" and "Status"`,
	} {
		err := signed.CheckNames([]byte(answer))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want %s", answer, err, want)
		}
	}
	for _, answer := range []string{
		`{"text":"a","texts":"b","t\u00e9xt":"c","consents":[{"text":"a"},{"text":"b"}],"x":{"text":1},"y":[{"x":1},{"x":2}]}`,
		`{"text":`, // not JSON: for the decoder to say
		`[1,"a",{"a":{"b":null}},{"A":{"B":null}}]`,
	} {
		if err := signed.CheckNames([]byte(answer)); err != nil {
			t.Errorf("%s: %v; want no error", answer, err)
		}
	}
}
