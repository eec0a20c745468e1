package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/consentkit/consentkit/signed"
)

// An answer with computed insights: their signed statement is checked
// offline with the published keys and against the certificate it states
// of, and printed; an edited statement, a verdict or signals shown
// otherwise than signed, or a statement of another certificate is
// refused (D50).
func TestInsightsChecked(t *testing.T) {
	certJSON, keysJSON := serve(t)
	var answer map[string]any
	if err := json.Unmarshal(certJSON, &answer); err != nil {
		t.Fatal(err)
	}
	var proof signed.Proof
	if err := json.Unmarshal(certJSON, &proof); err != nil {
		t.Fatal(err)
	}
	key, _ := signed.NewSigningKey("key-ins")
	var ks signed.KeySet
	if err := json.Unmarshal(keysJSON, &ks); err != nil {
		t.Fatal(err)
	}
	ks.Keys = append(ks.Keys, signed.Publish([]signed.PublicKey{key.Public()}).Keys...)
	keysFile := filepath.Join(t.TempDir(), "keys.json")
	kb, _ := json.Marshal(ks)
	if err := os.WriteFile(keysFile, kb, 0o644); err != nil {
		t.Fatal(err)
	}
	// shown is the insights member as the server writes it.
	shown := func(c *signed.Content, edit func(st *signed.InsightsStatement)) map[string]any {
		st, err := signed.NewInsightsStatement(c, time.Date(2026, 11, 28, 2, 0, 0, 0, time.UTC))
		if err != nil {
			t.Fatal(err)
		}
		st.Bot = signed.InsightsBot{Verdict: "suspect", Reasons: []string{"no_pointer_or_touch"}}
		st.Signals.Events, st.Signals.Snapshot, st.Signals.SecondsOnPage = 40, true, signed.Number(12.5)
		st.Signals.Inputs = []signed.InsightsInput{{Name: "email", Method: "typed", Keystrokes: 16}}
		sig, err := key.SignInsights(&st)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(struct {
			Status string              `json:"status"`
			Bot    *signed.InsightsBot `json:"bot"`
			*signed.InsightsSignals
			signed.InsightsProof
		}{"done", &st.Bot, &st.Signals, signed.InsightsProof{Statement: &st, KeyID: st.KeyID, Signature: signed.EncodeSignature(sig)}})
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if edit != nil {
			edit(&st)
			m["statement"] = &st
		}
		return m
	}
	run1 := func(in any) (int, string) {
		answer["insights"] = in
		b, _ := json.Marshal(answer)
		var out, errOut bytes.Buffer
		code := run([]string{"-keys", keysFile}, bytes.NewReader(b), &out, &errOut)
		return code, out.String() + errOut.String()
	}
	if code, out := run1(shown(proof.Signed, nil)); code != 0 ||
		!strings.Contains(out, "insights: suspect [no_pointer_or_touch], measured 2026-11-28T02:00:00.000000Z, key key-ins") {
		t.Fatalf("an answer with insights: exit %d\n%s", code, out)
	}
	if code, out := run1(map[string]any{"status": "pending"}); code != 0 || strings.Contains(out, "NOT VALID") {
		t.Fatalf("an answer with pending insights: exit %d\n%s", code, out)
	}
	// What the answer computed when asked, unsigned: reasons added to the
	// signed ones, a verdict made more severe, the lead's age and
	// velocity — accepted and printed as such.
	asked := func(bot map[string]any) map[string]any {
		m := shown(proof.Signed, nil)
		m["bot"], m["lead_age_seconds"] = bot, 3600
		m["velocity"] = map[string]any{"hour": map[string]any{"client_ip": 6}, "day": map[string]any{"client_ip": 9, "email": 1}}
		return m
	}
	code, out := run1(asked(map[string]any{"verdict": "bot", "reasons": []string{"no_pointer_or_touch", "high_velocity"},
		"asked_reasons": []string{"high_velocity"}}))
	if code != 0 || !strings.Contains(out, "computed when asked, not signed: verdict bot, adding [high_velocity]; lead age 3600 s; "+
		"velocity hour address 6 email 0 mobile 0, day address 9 email 1 mobile 0") {
		t.Errorf("an answer with asked reasons: exit %d\n%s", code, out)
	}
	for name, bot := range map[string]map[string]any{
		"a signed reason dropped": {"verdict": "bot", "reasons": []string{"high_velocity"}, "asked_reasons": []string{"high_velocity"}},
		"a reason added unasked":  {"verdict": "bot", "reasons": []string{"no_pointer_or_touch", "high_velocity"}, "asked_reasons": []string{}},
		"milder than signed": {"verdict": "human", "reasons": []string{"no_pointer_or_touch", "high_velocity"},
			"asked_reasons": []string{"high_velocity"}},
		"not a verdict":          {"verdict": "robot", "reasons": []string{"no_pointer_or_touch"}},
		"an asked reason signed": {"verdict": "suspect", "reasons": []string{"no_pointer_or_touch"}, "asked_reasons": []string{"no_pointer_or_touch"}},
		"an asked reason not listed": {"verdict": "suspect", "reasons": []string{"no_pointer_or_touch"},
			"asked_reasons": []string{"high_velocity"}},
	} {
		if code, out := run1(asked(bot)); code != 1 || !strings.Contains(out, "NOT VALID: the insights' verdict") {
			t.Errorf("%s: exit %d\n%s; want 1, NOT VALID", name, code, out)
		}
	}
	for name, in := range map[string]map[string]any{
		"verdict shown": func() map[string]any {
			m := shown(proof.Signed, nil)
			m["bot"] = map[string]any{"verdict": "human", "reasons": []string{}}
			return m
		}(),
		"signals shown": func() map[string]any { m := shown(proof.Signed, nil); m["events"] = 400; return m }(),
		"statement":     shown(proof.Signed, func(st *signed.InsightsStatement) { st.Bot.Verdict = "human" }),
		"another certificate": func() map[string]any {
			other := *proof.Signed
			other.ID = "cert-other"
			return shown(&other, nil)
		}(),
	} {
		if code, out := run1(in); code != 1 || !strings.Contains(out, "NOT VALID") {
			t.Errorf("%s: exit %d\n%s; want 1, NOT VALID", name, code, out)
		}
	}
}

// The insights' status is vouched for by their statement: done beside it,
// and without one only pending or failed, showing no verdict nor signals.
// Verified, the insights are no longer listed as unsigned, and when they
// were asked is told with what was computed then.
func TestInsightsStatusChecked(t *testing.T) {
	certJSON, keysJSON := serve(t)
	var proof signed.Proof
	if err := json.Unmarshal(certJSON, &proof); err != nil {
		t.Fatal(err)
	}
	key, _ := signed.NewSigningKey("key-ins")
	keys := withKeys(t, keysJSON, key)
	done := func() map[string]any {
		st, err := signed.NewInsightsStatement(proof.Signed, time.Date(2026, 11, 28, 2, 0, 0, 0, time.UTC))
		if err != nil {
			t.Fatal(err)
		}
		st.Bot = signed.InsightsBot{Verdict: "human", Reasons: []string{}}
		st.Signals.Events = 40
		sig, err := key.SignInsights(&st)
		if err != nil {
			t.Fatal(err)
		}
		m := decode(t, encode(t, map[string]any{"status": "done", "asked_at": "2026-11-28T03:00:00.000000Z",
			"bot":       map[string]any{"verdict": "human", "reasons": []string{}, "asked_reasons": []string{}},
			"statement": &st, "key_id": st.KeyID, "signature": signed.EncodeSignature(sig)}))
		signals := decode(t, encode(t, map[string]any{"s": st.Signals}))["s"].(map[string]any)
		for k, v := range signals {
			m[k] = v
		}
		return m
	}
	run1 := func(in map[string]any) (int, string) {
		a := decode(t, certJSON)
		a["insights"] = in
		return check(keys, encode(t, a))
	}
	if code, out := run1(done()); code != 0 || !strings.Contains(out, "computed when asked, not signed: asked at 2026-11-28T03:00:00.000000Z\n") ||
		!strings.Contains(out, "not signed, shown by the answer: events_combined, valid\n") {
		t.Fatalf("an answer with insights done: exit %d\n%s", code, out)
	}
	if code, out := run1(map[string]any{"status": "failed", "asked_at": "2026-11-28T03:00:00Z"}); code != 0 ||
		!strings.Contains(out, "not signed, shown by the answer: events_combined, insights, valid\n") {
		t.Errorf("failed insights: exit %d\n%s", code, out)
	}
	for name, c := range map[string]struct {
		in   map[string]any
		want string
	}{
		"pending beside a statement": {func() map[string]any { m := done(); m["status"] = "pending"; return m }(),
			`the insights' status "pending" is not "done", beside a signed statement`},
		"done without a statement": {map[string]any{"status": "done"}, `the insights' status "done" has no signed statement to vouch for it`},
		"a verdict without a statement": {map[string]any{"status": "pending", "bot": map[string]any{"verdict": "human"}},
			"the insights show what only a signed statement can, and have none"},
		"signals without a statement": {map[string]any{"status": "failed", "events": 40},
			"the insights show what only a signed statement can, and have none"},
	} {
		if code, out := run1(c.in); code != 1 || !strings.Contains(out, "NOT VALID: "+c.want) {
			t.Errorf("%s: exit %d\n%s; want 1, NOT VALID: %s", name, code, out, c.want)
		}
	}
}
