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

// An answer with an attestation: its signed statement is checked offline
// with the published keys and against the certificate it states of, and
// printed; an edited statement, a status shown otherwise than signed, or a
// statement of another certificate is refused.
func TestAttestationChecked(t *testing.T) {
	certJSON, keysJSON := serve(t)
	var answer map[string]any
	if err := json.Unmarshal(certJSON, &answer); err != nil {
		t.Fatal(err)
	}
	var proof signed.Proof
	if err := json.Unmarshal(certJSON, &proof); err != nil {
		t.Fatal(err)
	}
	key, _ := signed.NewSigningKey("key-att")
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
	statement := func(c *signed.Content) (*signed.Statement, string) {
		st, err := signed.NewStatement(c, time.Date(2026, 11, 27, 2, 0, 0, 0, time.UTC))
		if err != nil {
			t.Fatal(err)
		}
		st.Status = signed.Attested
		st.Consents = []signed.StatedConsent{{Found: true, NodeID: 12, Text: c.Consents[0].Text}}
		sig, err := key.SignStatement(&st)
		if err != nil {
			t.Fatal(err)
		}
		return &st, signed.EncodeSignature(sig)
	}
	run1 := func(att any) (int, string) {
		answer["attestation"] = att
		b, _ := json.Marshal(answer)
		var out, errOut bytes.Buffer
		code := run([]string{"-keys", keysFile}, bytes.NewReader(b), &out, &errOut)
		return code, out.String() + errOut.String()
	}
	st, sig := statement(proof.Signed)
	att := map[string]any{"status": "attested", "statement": st, "signature": sig, "key_id": "key-att"}
	if code, out := run1(att); code != 0 || !strings.Contains(out, "attestation attested, measured 2026-11-27T02:00:00.000000Z, key key-att") {
		t.Fatalf("an answer with an attestation: exit %d\n%s", code, out)
	}
	for name, edit := range map[string]func(a map[string]any){
		"status shown": func(a map[string]any) { a["status"] = "mismatch" },
		"statement": func(a map[string]any) {
			s := *st
			s.Status = signed.Mismatch
			a["statement"] = &s
		},
		"another certificate": func(a map[string]any) {
			other := *proof.Signed
			other.ID = "cert-other"
			s, sig := statement(&other)
			a["statement"], a["signature"] = s, sig
		},
	} {
		a := map[string]any{"status": "attested", "statement": st, "signature": sig, "key_id": "key-att"}
		edit(a)
		if code, out := run1(a); code != 1 || !strings.Contains(out, "NOT VALID") {
			t.Errorf("%s: exit %d\n%s; want 1, NOT VALID", name, code, out)
		}
	}
}

// What the answer shows beside the attestation's statement — status,
// reason, screenshot digest, differences — is what the statement states;
// without a statement it may only say that the attestation is pending. A
// verified statement is no longer listed as unsigned; a member the API
// does not write inside it is.
func TestAttestationShownChecked(t *testing.T) {
	certJSON, keysJSON := serve(t)
	var proof signed.Proof
	if err := json.Unmarshal(certJSON, &proof); err != nil {
		t.Fatal(err)
	}
	key, _ := signed.NewSigningKey("key-att")
	keys := withKeys(t, keysJSON, key)
	// shown is the attestation member as the server writes it, of a
	// statement edited by edit.
	shown := func(edit func(st *signed.Statement)) map[string]any {
		st, err := signed.NewStatement(proof.Signed, time.Date(2026, 11, 27, 2, 0, 0, 0, time.UTC))
		if err != nil {
			t.Fatal(err)
		}
		st.Status, st.ScreenshotSHA256 = signed.Mismatch, strings.Repeat("ab", 32)
		st.Consents = []signed.StatedConsent{{Found: true, NodeID: 12, Text: proof.Signed.Consents[0].Text}}
		st.Differences = []signed.Difference{{Consent: 0, Field: "visibility.visible", Claimed: "false", Measured: "true"}}
		if edit != nil {
			edit(&st)
		}
		sig, err := key.SignStatement(&st)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]any{"status": st.Status, "screenshot_sha256": st.ScreenshotSHA256, "statement": &st,
			"signature": signed.EncodeSignature(sig), "key_id": st.KeyID}
		if st.Reason != "" {
			m["reason"] = st.Reason
		}
		if len(st.Differences) > 0 {
			m["differences"] = st.Differences
		}
		return decode(t, encode(t, m))
	}
	run1 := func(att map[string]any) (int, string) {
		a := decode(t, certJSON)
		a["attestation"] = att
		return check(keys, encode(t, a))
	}
	code, out := run1(shown(nil))
	if code != 0 || !strings.Contains(out, "attestation mismatch") ||
		!strings.Contains(out, "consent 1 visibility.visible: claimed false, measured true") ||
		!strings.Contains(out, "not signed, shown by the answer: events_combined, insights, valid\n") {
		t.Fatalf("an answer with a mismatch: exit %d\n%s", code, out)
	}
	unavailable := func(st *signed.Statement) {
		st.Status, st.Reason, st.Differences, st.ScreenshotSHA256 = signed.Unavailable, "the recording is gone", []signed.Difference{}, ""
	}
	if code, out := run1(shown(unavailable)); code != 0 || !strings.Contains(out, "attestation unavailable") {
		t.Fatalf("an answer with an attestation unavailable: exit %d\n%s", code, out)
	}
	for name, c := range map[string]struct {
		att  map[string]any
		edit func(a map[string]any)
		want string
	}{
		"status":              {shown(nil), func(a map[string]any) { a["status"] = "attested" }, "the attestation's status is not the signed statement's"},
		"status left out":     {shown(nil), func(a map[string]any) { delete(a, "status") }, "the attestation's status is not"},
		"screenshot":          {shown(nil), func(a map[string]any) { a["screenshot_sha256"] = strings.Repeat("cd", 32) }, "the attestation's screenshot_sha256 is not"},
		"screenshot left out": {shown(nil), func(a map[string]any) { delete(a, "screenshot_sha256") }, "the attestation's screenshot_sha256 is not"},
		"differences": {shown(nil), func(a map[string]any) {
			a["differences"].([]any)[0].(map[string]any)["measured"] = "false"
		}, "the attestation's differences is not"},
		"differences left out": {shown(nil), func(a map[string]any) { delete(a, "differences") }, "the attestation's differences is not"},
		"a reason added":       {shown(nil), func(a map[string]any) { a["reason"] = "the page could not load" }, "the attestation's reason is not"},
		"reason":               {shown(unavailable), func(a map[string]any) { a["reason"] = "asked too early" }, "the attestation's reason is not"},
		"no statement": {shown(nil), func(a map[string]any) {
			delete(a, "statement")
		}, `the attestation's status "mismatch" has no signed statement to vouch for it`},
		"no statement, attested": {map[string]any{"status": "attested"}, nil, `the attestation's status "attested" has no signed statement`},
		"pending, a screenshot": {map[string]any{"status": "pending", "screenshot_sha256": strings.Repeat("ab", 32)}, nil,
			"the attestation shows what only a signed statement can, and has none"},
	} {
		if c.edit != nil {
			c.edit(c.att)
		}
		if code, out := run1(c.att); code != 1 || !strings.Contains(out, "NOT VALID: "+c.want) {
			t.Errorf("%s: exit %d\n%s; want 1, NOT VALID: %s", name, code, out, c.want)
		}
	}
	if code, out := run1(map[string]any{"status": "pending"}); code != 0 ||
		!strings.Contains(out, "not signed, shown by the answer: attestation, events_combined") {
		t.Errorf("a pending attestation: exit %d\n%s; want it listed as not signed", code, out)
	}
	att := shown(nil)
	att["note"] = "attested by hand"
	att["statement"].(map[string]any)["comment"] = "x"
	if code, out := run1(att); code != 0 ||
		!strings.Contains(out, "not signed, shown by the answer: attestation.note, attestation.statement.comment, events_combined") {
		t.Errorf("members the API does not write: exit %d\n%s; want them listed", code, out)
	}
	// The status shown to jq as attested, to Go as the statement's.
	whole := encode(t, func() map[string]any { a := decode(t, certJSON); a["attestation"] = shown(nil); return a }())
	i := bytes.LastIndex(whole, []byte(`"status":"mismatch"`))
	whole = append(whole[:i:i], append([]byte(`"status":"attested","Status":"mismatch"`), whole[i+len(`"status":"mismatch"`):]...)...)
	if code, out := check(keys, whole); code != 1 || !strings.Contains(out, `NOT VALID: the answer's attestation has members "status" and "Status"`) {
		t.Errorf("a status shown twice: exit %d\n%s", code, out)
	}
}
