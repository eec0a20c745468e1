package signed_test

import (
	"encoding/json"
	"slices"
	"testing"
)

// A top-level member whose name folds to one the API writes ("Origin",
// "Revoked_Before", "ſession_id" with U+017F) is what encoding/json reads
// into that field: it is compared as that member, as the members inside
// consents and visibilities are, and listed as unsigned by its name as
// written.
func TestShownTopLevelFolded(t *testing.T) {
	var goReader struct {
		Origin        string `json:"origin"`
		SessionID     string `json:"session_id"`
		RevokedBefore string `json:"revoked_before"`
	}
	for _, c := range []struct {
		name, as string
		value    any
	}{
		{"origin", "Origin", "https://evil.example/"},
		{"origin", "ORIGIN", "https://evil.example/"},
		{"session_id", "\u017fession_id", "s-evil"},
		{"revoked_before", "Revoked_Before", "2020-01-01T00:00:00Z"},
		{"certificate_id", "Certificate_ID", "cert-evil"},
		{"consent_count", "Consent_Count", 7},
	} {
		a := shownAnswer(t, documentV2())
		delete(a, c.name)
		a[c.as] = c.value
		b, _ := json.Marshal(a)
		if err := json.Unmarshal(b, &goReader); err != nil {
			t.Fatal(err)
		}
		s := checkShown(t, a)
		if s.Differs != c.as || !slices.Contains(s.Unsigned, c.as) {
			t.Errorf("%s %v in place of %s (a Go reader reads origin %q, session %q): %+v; want %s named as differing",
				c.as, c.value, c.name, goReader.Origin, goReader.SessionID, s, c.as)
		}
	}
	// The signed value under another letter case: the same, and not missing.
	a := shownAnswer(t, documentV2())
	a["Revoked_Before"], a["ORIGIN"] = a["revoked_before"], a["origin"]
	delete(a, "revoked_before")
	delete(a, "origin")
	want := []string{"events_combined", "insights", "ORIGIN", "Revoked_Before", "valid"} // in the order of the names read
	if s := checkShown(t, a); s.Differs != "" || len(s.NotShown) > 0 || !slices.Equal(s.Unsigned, want) {
		t.Errorf("origin and revoked_before in another letter case, as signed: %+v; want unsigned %v", s, want)
	}
	// And the members inside one so named are read by their shape.
	a = shownAnswer(t, documentV2())
	a["Consents"] = a["consents"]
	delete(a, "consents")
	a["Consents"].([]any)[0].(map[string]any)["note"] = "x"
	want = []string{"Consents", "Consents[0].note", "events_combined", "insights", "valid"}
	if s := checkShown(t, a); s.Differs != "" || !slices.Equal(s.Unsigned, want) {
		t.Errorf("consents as Consents: %+v; want unsigned %v", s, want)
	}
}
