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

// withKeys writes the published keys and those of extra to a file, and
// returns its path.
func withKeys(t *testing.T, keysJSON []byte, extra ...signed.SigningKey) string {
	t.Helper()
	var ks signed.KeySet
	if err := json.Unmarshal(keysJSON, &ks); err != nil {
		t.Fatal(err)
	}
	for _, k := range extra {
		ks.Keys = append(ks.Keys, signed.Publish([]signed.PublicKey{k.Public()}).Keys...)
	}
	path := filepath.Join(t.TempDir(), "keys.json")
	kb, _ := json.Marshal(ks)
	if err := os.WriteFile(path, kb, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// check runs the command on answer.
func check(keys string, answer []byte) (int, string) {
	var out, errOut bytes.Buffer
	code := run([]string{"-keys", keys}, bytes.NewReader(answer), &out, &errOut)
	return code, out.String() + errOut.String()
}

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func encode(t *testing.T, m map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// An answer in which one object has two members of one name, in the same
// or another letter case, is refused, naming them: Go would read the last
// and jq the one written in lowercase, whichever one the check compared.
func TestDuplicateNamesRefused(t *testing.T) {
	certJSON, keysJSON := serve(t)
	keys := withKeys(t, keysJSON)
	if code, out := check(keys, certJSON); code != 0 {
		t.Fatalf("untouched answer: exit %d\n%s", code, out)
	}
	var proof signed.Proof
	if err := json.Unmarshal(certJSON, &proof); err != nil {
		t.Fatal(err)
	}

	// consents[0] shows other text first, the signed text last.
	text := `{"text":"I agree to \"calls\"`
	cased := bytes.Replace(certJSON, []byte(text), []byte(`{"text":"I agree to nothing","Text":"I agree to \"calls\"`), 1)
	if bytes.Equal(cased, certJSON) {
		t.Fatal("the edit changed nothing")
	}

	// Other signed content first, the signed one after it as "Signed", and
	// the origin shown as the first states it.
	fake := *proof.Signed
	fake.Origin = "https://evil.example/"
	fakeJSON, _ := json.Marshal(&fake)
	a := decode(t, certJSON)
	a["origin"] = fake.Origin
	rest := bytes.Replace(encode(t, a), []byte(`"signed":{`), []byte(`"Signed":{`), 1)
	swapped := append(append([]byte(`{"signed":`), fakeJSON...), append([]byte(","), rest[1:]...)...)

	// Two of one name in the same case, inside the signed content.
	twice := bytes.Replace(certJSON, []byte(`"signed":{`), []byte(`"signed":{"origin":"https://evil.example/",`), 1)

	for name, c := range map[string]struct {
		answer []byte
		want   string
	}{
		"consent text":   {cased, `the answer's consents[0] has members "text" and "Text"`},
		"signed content": {swapped, `the answer has members "signed" and "Signed"`},
		"twice":          {twice, `the answer's signed has members "origin" and "origin"`},
	} {
		if code, out := check(keys, c.answer); code != 1 || !strings.HasPrefix(out, "NOT VALID: "+c.want) {
			t.Errorf("%s: exit %d\n%s; want 1, NOT VALID: %s", name, code, out, c.want)
		}
	}
}

// resign returns the answer of serve with its content changed by edit and
// signed again by a key of its own, and the keys file that publishes it.
func resign(t *testing.T, edit func(d *signed.Document)) (answer map[string]any, keys string) {
	t.Helper()
	certJSON, keysJSON := serve(t)
	var proof signed.Proof
	if err := json.Unmarshal(certJSON, &proof); err != nil {
		t.Fatal(err)
	}
	key, _ := signed.NewSigningKey("key-re")
	d, err := proof.Signed.Document()
	if err != nil {
		t.Fatal(err)
	}
	edit(&d)
	sig := key.Sign(&d)
	c := d.Content()
	answer = decode(t, certJSON)
	answer["signed"], answer["signature"], answer["key_id"] = c, signed.EncodeSignature(sig), key.ID
	return answer, withKeys(t, keysJSON, key)
}

// A signed fact the answer leaves out is told: one that the API always
// writes is listed as signed but not shown; one that it leaves out when
// empty, which its absence says, is refused. Members the API does not
// write inside the answer's objects are listed as not signed.
func TestSignedFactsLeftOut(t *testing.T) {
	revoked := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	answer, keys := resign(t, func(d *signed.Document) { d.RevokedBefore = revoked })
	answer["revoked_before"] = "2026-11-01T09:00:00Z"
	if code, out := check(keys, encode(t, answer)); code != 0 || !strings.Contains(out, "had opted out before, last at 2026-11-01T09:00:00.000000Z") ||
		strings.Contains(out, "signed but not shown") {
		t.Fatalf("an answer with revoked_before: exit %d\n%s", code, out)
	}
	for _, n := range []string{"revoked_before", "client_ip", "user_agent", "consent_visibility"} {
		a := decode(t, encode(t, answer))
		delete(a, n)
		if code, out := check(keys, encode(t, a)); code != 1 || !strings.Contains(out, "NOT VALID: the signature holds, but the answer's "+n+" is not what it covers") {
			t.Errorf("%s left out: exit %d\n%s; want 1, naming it", n, code, out)
		}
	}
	a := decode(t, encode(t, answer))
	delete(a, "consents")
	delete(a, "session_id")
	delete(a, "consent_types")
	if code, out := check(keys, encode(t, a)); code != 0 ||
		!strings.Contains(out, "\n  signed but not shown: consent_types, consents, session_id\n") ||
		!strings.Contains(out, `consent 1, opted in`) {
		t.Errorf("consents, their types and the session left out: exit %d\n%s; want them listed", code, out)
	}

	a = decode(t, encode(t, answer))
	first := a["consents"].([]any)[0].(map[string]any)
	first["note"] = "pre-checked"
	first["visibility"].(map[string]any)["opacity"] = 1
	first["Text"] = first["text"]
	delete(first, "text")
	if code, out := check(keys, encode(t, a)); code != 0 ||
		!strings.Contains(out, "not signed, shown by the answer: consents[0].Text, consents[0].note, consents[0].visibility.opacity, events_combined") {
		t.Errorf("members the API does not write: exit %d\n%s; want them listed", code, out)
	}
}
