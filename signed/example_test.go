package signed_test

import (
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"time"

	"github.com/consentkit/consentkit/signed"
)

// A certificate-info answer and the published keys, checked offline.
func ExampleProof_Verify() {
	// What the server does: sign the certificate's document, answer its
	// content with the signature, publish the key.
	key := signed.SigningKey{ID: "key-1", Private: ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))}
	d := signed.Document{ID: "cert-1", CompanyID: "acme", PropertyID: "web", SessionID: "s1", Origin: "https://acme.example/",
		CreatedAt: time.Date(2026, 11, 22, 10, 30, 0, 0, time.UTC),
		Consents:  []signed.DocumentConsent{{Text: "I agree.", Types: []string{"tcpa"}, OptInAt: time.Date(2026, 11, 22, 10, 29, 0, 0, time.UTC)}}}
	sig := key.Sign(&d)
	content := d.Content()
	answer, _ := json.Marshal(signed.Proof{Signature: signed.EncodeSignature(sig), KeyID: key.ID, Signed: &content})
	published, _ := json.Marshal(signed.Publish([]signed.PublicKey{key.Public()}))

	// What a verifier does with the two JSON documents.
	var proof signed.Proof
	var keys signed.KeySet
	if err := json.Unmarshal(answer, &proof); err != nil {
		fmt.Println(err)
	}
	if err := json.Unmarshal(published, &keys); err != nil {
		fmt.Println(err)
	}
	fmt.Println(proof.Verify(&keys))
	proof.Signed.Consents[0].Text = "I agree to everything."
	fmt.Println(proof.Verify(&keys))
	// Output:
	// <nil>
	// signed: the signature does not match the certificate
}
