package consentkit_test

import (
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
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

// With Config.TrustPublishedKeys, a key of small order published in the
// store verifies nothing: a certificate edited and "signed" with the
// identity's forgery (01 00…00 || 00…00) fails its integrity check, and
// the key is not published at /.well-known/consentkit-keys.
func TestKeySmallOrderPublishedRefused(t *testing.T) {
	key, err := signed.NewSigningKey("k1")
	if err != nil {
		t.Fatal(err)
	}
	svc, err := consentkit.NewService(teststore.Memory(t), consentkit.Config{SigningKeys: []signed.SigningKey{key}, TrustPublishedKeys: true})
	if err != nil {
		t.Fatal(err)
	}
	mustDo(t, svc)
	if _, err := svc.IssueCertificate(ctx, consentkit.CertificateParams{ID: "cert-1", CompanyID: "acme", PropertyID: "web", SessionID: "s1",
		Origin: "https://acme.example/", Records: []consent.Record{{Text: "I agree", Types: []string{"tcpa"}}}}); err != nil {
		t.Fatal(err)
	}
	identity := make([]byte, ed25519.PublicKeySize)
	identity[0] = 1
	if err := svc.Store().Update(ctx, func(tx consent.Tx) error {
		return tx.PublishKey(ctx, &consent.PublishedKey{ID: "weak", Key: identity, CreatedAt: time.Now()})
	}); err != nil {
		t.Fatal(err)
	}
	forged := certificate(t, svc, "cert-1")
	forged.Records[0].Text = "I agree to calls from 500 partners."
	forged.KeyID = "weak"
	forged.Signature = make([]byte, ed25519.SignatureSize)
	forged.Signature[0] = 1
	if err := checkIntegrity(svc, forged, nil); !errors.Is(err, consent.ErrIntegrity) {
		t.Errorf("a certificate forged under a small-order key published in the store: %v; want an integrity error", err)
	}
	keys, err := svc.PublishedKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(keys, func(k signed.PublicKey) bool { return k.ID == "weak" }) {
		t.Errorf("PublishedKeys publishes the small-order key: %v", keys)
	}
}
