package consentkit_test

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/signed"
)

// A public key of small order verifies signatures no private key made
// (the identity, 01 00…00, verifies 01 00…00 || 00…00 over any content):
// NewService refuses one in Config.PublicKeys, as the offline check
// refuses one published, and still takes a key of NewSigningKey.
func TestKeySmallOrderRefused(t *testing.T) {
	for _, y := range []string{
		"0100000000000000000000000000000000000000000000000000000000000000", // the identity
		"0100000000000000000000000000000000000000000000000000000000000080", // the identity, x = -0
		"0000000000000000000000000000000000000000000000000000000000000000", // order 4
		"26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05", // order 8
		"ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", // order 2
		"eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", // p+1: the identity, not canonical
	} {
		key, err := hex.DecodeString(y)
		if err != nil {
			t.Fatal(err)
		}
		cfg := consentkit.Config{PublicKeys: []signed.PublicKey{{ID: "weak", Key: key}}}
		if _, err := consentkit.NewService(teststore.Memory(t), cfg); err == nil || !strings.Contains(err.Error(), "small order") && !strings.Contains(err.Error(), "canonical") {
			t.Errorf("public key %s: NewService: %v; want it refused", y, err)
		}
	}
	good, err := signed.NewSigningKey("good")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := consentkit.NewService(teststore.Memory(t), consentkit.Config{PublicKeys: []signed.PublicKey{good.Public()}}); err != nil {
		t.Errorf("a key of NewSigningKey: %v", err)
	}
}
