package main

import (
	"strings"
	"testing"
)

// A certificate signed without revoked_before stays signed without it: the
// zero time written out, added to the signed content and beside it, is no
// time the signature covers (the encoding writes that time as nothing),
// and the report does not say the consumer had opted out before.
func TestZeroTimeRevokedBeforeRefused(t *testing.T) {
	certJSON, keysJSON := serve(t)
	keys := withKeys(t, keysJSON)
	if code, out := check(keys, certJSON); code != 0 {
		t.Fatalf("the answer as the API writes it: exit %d\n%s", code, out)
	}
	for _, shown := range []string{"0001-01-01T00:00:00Z", "0001-01-01T00:00:00.000000Z"} {
		a := decode(t, certJSON)
		if _, ok := a["revoked_before"]; ok {
			t.Fatal("the honest answer has revoked_before")
		}
		a["signed"].(map[string]any)["revoked_before"] = "0001-01-01T00:00:00.000000Z"
		a["revoked_before"] = shown
		code, out := check(keys, encode(t, a))
		if code != 1 || strings.Contains(out, "opted out before") || !strings.Contains(out, "NOT VALID") {
			t.Errorf("revoked_before %q added, none signed: exit %d\n%s", shown, code, out)
		}
	}
	// Beside the signed content as it is, the zero time shown is not none.
	a := decode(t, certJSON)
	a["revoked_before"] = "0001-01-01T00:00:00Z"
	if code, out := check(keys, encode(t, a)); code != 1 || !strings.Contains(out, "revoked_before is not what it covers") {
		t.Errorf("revoked_before shown as the zero time, none signed: exit %d\n%s", code, out)
	}
}
