package audit_test

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/consentkit/consentkit/audit"
	"github.com/consentkit/consentkit/consent"
)

// The canonical encoding is pinned: a change would break every stored chain.
func TestEncoding(t *testing.T) {
	e := &consent.AuditEntry{
		CompanyID: "acme", Seq: 2, At: time.Date(2026, 11, 20, 10, 0, 0, 123456000, time.UTC),
		Actor: "tok_1", Action: "verify.match", Target: "cert-1", Outcome: "ok", RequestID: "r1", Detail: `{"valid":true}`,
	}
	e.PrevHash[0] = 0xab
	want := "00000013" + hex.EncodeToString([]byte("consentkit.audit.v1")) +
		"00000004" + hex.EncodeToString([]byte("acme")) +
		"0000000000000002" + "000660b24ea4aa40" + // 2026-11-20T10:00:00.123456Z in microseconds
		"00000005" + hex.EncodeToString([]byte("tok_1")) +
		"0000000c" + hex.EncodeToString([]byte("verify.match")) +
		"00000006" + hex.EncodeToString([]byte("cert-1")) +
		"00000002" + hex.EncodeToString([]byte("ok")) +
		"00000002" + hex.EncodeToString([]byte("r1")) +
		"0000000e" + hex.EncodeToString([]byte(`{"valid":true}`)) +
		"ab" + hex.EncodeToString(make([]byte, 31))
	if got := hex.EncodeToString(audit.Encoding(e)); got != want {
		t.Errorf("Encoding =\n%s\nwant\n%s", got, want)
	}
	if audit.Hash(e) != consent.Digest(sha256.Sum256(audit.Encoding(e))) {
		t.Errorf("Hash is not the SHA-256 of Encoding")
	}
	// Hash is not encoded; moving a byte between fields changes the hash.
	f := *e
	f.Hash[0] = 1
	if audit.Hash(&f) != audit.Hash(e) {
		t.Errorf("Hash is part of the encoding")
	}
	g := *e
	g.Action, g.Target = "verify.matchc", "ert-1"
	if audit.Hash(&g) == audit.Hash(e) {
		t.Errorf("fields are not delimited")
	}
}
