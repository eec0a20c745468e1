package signed_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/consentkit/consentkit/signed"
)

// weakKeys are the encodings of the Ed25519 points of small order: the y
// of each (little-endian), with either sign bit, and the non-canonical
// encodings of y = 0 and y = 1 (p and p+1).
func weakKeys(t *testing.T) map[string][]byte {
	t.Helper()
	keys := map[string][]byte{}
	for name, y := range map[string]string{
		"y=0 (order 4)":   "0000000000000000000000000000000000000000000000000000000000000000",
		"identity":        "0100000000000000000000000000000000000000000000000000000000000000",
		"order 8 (a)":     "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
		"order 8 (b)":     "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
		"y=p-1 (order 2)": "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
		"y=p (= 0)":       "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
		"y=p+1 (= 1)":     "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
	} {
		b, err := hex.DecodeString(y)
		if err != nil {
			t.Fatal(err)
		}
		keys[name] = b
		neg := append([]byte{}, b...)
		neg[31] |= 0x80
		keys[name+", sign bit set"] = neg
	}
	return keys
}

// A key of small order verifies a forged signature — R the identity, S
// zero — over one content in 8 or fewer (over any content for the
// identity), as crypto/ed25519 itself shows here: KeySet.Find,
// Proof.Verify and Verify refuse every such key.
func TestSmallOrderKeysRefused(t *testing.T) {
	forgery := make([]byte, ed25519.SignatureSize)
	forgery[0] = 1 // R = the identity, S = 0
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for name, key := range weakKeys(t) {
		ks := signed.KeySet{Keys: []signed.PublishedKey{{KeyID: "k", Algorithm: "Ed25519", PublicKey: base64.StdEncoding.EncodeToString(key)}}}
		if _, err := ks.Find("k"); err == nil {
			t.Errorf("%s %x: KeySet.Find accepted it", name, key)
		}
		forged := 0
		for i := range 64 {
			d := signed.Document{V: signed.Version2, ID: fmt.Sprint("cert-forged-", i), CompanyID: "acme", PropertyID: "web",
				SessionID: "s", CreatedAt: created, KeyID: "k", Origin: "https://evil.example/",
				Consents: []signed.DocumentConsent{{Text: "anything at all", Types: []string{"tcpa"}, OptInAt: created}}}
			if !ed25519.Verify(key, d.Encoding(), forgery) {
				continue
			}
			forged++
			c := d.Content()
			p := signed.Proof{Signature: signed.EncodeSignature(forgery), KeyID: "k", Signed: &c}
			if err := p.Verify(&ks); err == nil {
				t.Errorf("%s %x: Proof.Verify accepted a forged certificate", name, key)
			}
			if err := signed.Verify(&c, signed.PublicKey{ID: "k", Key: key}, forgery); err == nil {
				t.Errorf("%s %x: Verify accepted a forged certificate", name, key)
			}
		}
		if forged == 0 {
			t.Errorf("%s %x: crypto/ed25519 verifies the forgery over none of 64 contents: no weak key", name, key)
		}
	}
}

// PublicKey.Check refuses every key of small order, and a key not 32
// bytes long, and accepts the keys NewSigningKey makes.
func TestPublicKeyCheck(t *testing.T) {
	for name, key := range weakKeys(t) {
		if err := (signed.PublicKey{ID: "k", Key: key}).Check(); err == nil {
			t.Errorf("%s %x: PublicKey.Check accepted it", name, key)
		}
	}
	for range 32 {
		k, err := signed.NewSigningKey("k")
		if err != nil {
			t.Fatal(err)
		}
		if err := k.Public().Check(); err != nil {
			t.Fatalf("a key of NewSigningKey: %v", err)
		}
		ks := signed.Publish([]signed.PublicKey{k.Public()})
		if _, err := ks.Find("k"); err != nil {
			t.Fatalf("a key of NewSigningKey: %v", err)
		}
	}
	var short signed.PublicKey
	if err := short.Check(); err == nil || !strings.Contains(err.Error(), "not an Ed25519 public key") {
		t.Errorf("a key of no bytes: %v", err)
	}
}
