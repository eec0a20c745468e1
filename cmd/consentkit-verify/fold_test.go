package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// A top-level member renamed in another letter case, or with a character
// that folds to one of its name (U+017F, ſ, to s), is what a Go reader of
// the answer reads as that member: another value under it is refused as
// any other is, and the signed value under it is listed as shown unsigned.
func TestTopLevelCaseVariantChecked(t *testing.T) {
	certJSON, keysJSON := serve(t)
	keys := withKeys(t, keysJSON)
	for _, c := range []struct {
		name, as string
		value    any
	}{
		{"origin", "Origin", "https://evil.example/"},
		{"session_id", "\u017fession_id", "s-evil"},
		{"certificate_id", "CERTIFICATE_ID", "cert-evil"},
		{"revoked_before", "Revoked_Before", "2026-01-01T00:00:00Z"},
	} {
		a := decode(t, certJSON)
		delete(a, c.name)
		a[c.as] = c.value
		b := encode(t, a)
		var fields struct {
			Origin    string `json:"origin"`
			SessionID string `json:"session_id"`
		}
		if json.Unmarshal(b, &fields) != nil {
			t.Fatal("no JSON")
		}
		code, out := check(keys, b)
		if code != 1 || !strings.Contains(out, "the answer's "+c.as+" is not what it covers") {
			t.Errorf("%s %v in place of %s (a Go reader reads origin %q, session %q): exit %d\n%s",
				c.as, c.value, c.name, fields.Origin, fields.SessionID, code, out)
		}
	}
	a := decode(t, certJSON)
	a["Origin"] = a["origin"]
	delete(a, "origin")
	if code, out := check(keys, encode(t, a)); code != 0 || !strings.Contains(out, "not signed, shown by the answer: events_combined, insights, Origin, valid") {
		t.Errorf("the signed origin as Origin: exit %d\n%s", code, out)
	}
}
