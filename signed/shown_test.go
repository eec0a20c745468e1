package signed_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/consentkit/consentkit/signed"
)

// shownAnswer is the certificate-info answer of d, as the API writes it.
func shownAnswer(t *testing.T, d signed.Document) map[string]any {
	t.Helper()
	vis := func(v *signed.Visibility) any {
		if v == nil {
			return nil
		}
		hidden := v.HiddenText
		if hidden == nil {
			hidden = []string{}
		}
		return map[string]any{"in_viewport": v.InViewport, "visible": v.Visible, "font_size_px": v.FontSizePx, "text_color": v.TextColor,
			"background_color": v.BackgroundColor, "contrast_ratio": v.ContrastRatio, "hidden_text": hidden}
	}
	c := d.Content()
	consents := []any{}
	for i, r := range c.Consents {
		m := map[string]any{"text": r.Text, "types": r.Types, "opt_in": r.OptInAt}
		if r.OptInMethod != "" {
			m["opt_in_method"] = r.OptInMethod
		}
		if v := d.Consents[i].Visibility; v != nil {
			m["visibility"] = vis(v)
		}
		consents = append(consents, m)
	}
	b, err := json.Marshal(map[string]any{"valid": true, "certificate_id": d.ID, "created_timestamp": c.CreatedAt,
		"has_consents": true, "consent_count": len(c.Consents), "events_combined": map[string]any{}, "session_id": d.SessionID,
		"origin": d.Origin, "consent_opt_in": c.Consents[0].OptInAt, "consent_types": []string{"marketing", "tcpa"},
		"client_ip": d.ClientIP, "user_agent": d.UserAgent, "consent_visibility": vis(d.Visibility), "consents": consents,
		"revoked_before": c.RevokedBefore, "signature": "c2ln", "key_id": "", "signed": c,
		"insights": map[string]any{"status": "pending", "asked_at": c.CreatedAt, "lead_age_seconds": 0,
			"velocity": map[string]any{"hour": map[string]any{"client_ip": 0, "email": 0, "mobile": 0}, "day": map[string]any{"client_ip": 0}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func checkShown(t *testing.T, answer map[string]any) signed.Shown {
	t.Helper()
	b, err := json.Marshal(answer)
	if err != nil {
		t.Fatal(err)
	}
	shown, err := signed.CheckShown(b)
	if err != nil {
		t.Fatal(err)
	}
	return shown
}

// A signed fact the answer leaves out is told: one the API always writes
// is listed as not shown; one the API leaves out when empty reads as none,
// and is named as differing. Members inside the answer's objects that the
// API does not write, by their names as written, are listed as unsigned.
func TestShownLeftOutAndUnknown(t *testing.T) {
	answer := shownAnswer(t, documentV2())
	if s := checkShown(t, answer); s.Differs != "" || len(s.NotShown) > 0 ||
		!slices.Equal(s.Unsigned, []string{"events_combined", "insights", "valid"}) {
		t.Fatalf("the answer as the API writes it: %+v", s)
	}
	for _, n := range []string{"certificate_id", "consent_count", "consent_opt_in", "consent_types", "consents",
		"created_timestamp", "has_consents", "origin", "session_id"} {
		a := shownAnswer(t, documentV2())
		delete(a, n)
		if s := checkShown(t, a); s.Differs != "" || !slices.Equal(s.NotShown, []string{n}) {
			t.Errorf("%s left out: %+v; want it listed as not shown", n, s)
		}
	}
	for _, n := range []string{"client_ip", "consent_visibility", "revoked_before", "user_agent"} {
		a := shownAnswer(t, documentV2())
		delete(a, n)
		if s := checkShown(t, a); s.Differs != n {
			t.Errorf("%s left out: %+v; want it named as differing", n, s)
		}
	}
	a := shownAnswer(t, documentV2())
	delete(a, "revoked_before")
	delete(a, "client_ip")
	if s := checkShown(t, a); s.Differs != "client_ip" {
		t.Errorf("client_ip and revoked_before left out: %+v; want the first named", s)
	}

	a = shownAnswer(t, documentV2())
	first := a["consents"].([]any)[0].(map[string]any)
	first["note"] = "x"
	first["visibility"].(map[string]any)["opacity"] = 0
	first["Types"] = first["types"]
	delete(first, "types")
	cv := a["consent_visibility"].(map[string]any)
	cv["Visible"] = cv["visible"]
	delete(cv, "visible")
	a["signed"].(map[string]any)["comment"] = "x"
	a["insights"].(map[string]any)["velocity"].(map[string]any)["week"] = 9
	s := checkShown(t, a)
	want := []string{"consent_visibility.Visible", "consents[0].Types", "consents[0].note", "consents[0].visibility.opacity",
		"events_combined", "insights", "insights.velocity.week", "signed.comment", "valid"}
	if s.Differs != "" || !slices.Equal(s.Unsigned, want) {
		t.Errorf("members the API does not write: %+v; want unsigned %v", s, want)
	}
}
