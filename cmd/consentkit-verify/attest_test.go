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
