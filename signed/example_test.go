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

// A new key signs a certificate's document; the signature covers the
// document's canonical encoding, which anyone can rebuild from the JSON
// content and check against the published public key.
func ExampleNewSigningKey() {
	key, err := signed.NewSigningKey("key-2026-11") // keep key.Private.Seed() secret, and backed up
	if err != nil {
		panic(err)
	}
	d := signed.Document{V: signed.Version2, ID: "cert-1", CompanyID: "acme", PropertyID: "web", SessionID: "s1",
		Origin:    "https://acme.example/quote",
		CreatedAt: time.Date(2026, 11, 22, 10, 30, 0, 0, time.UTC),
		Consents: []signed.DocumentConsent{{Text: "I agree.", Types: []string{"tcpa"},
			OptInAt: time.Date(2026, 11, 22, 10, 29, 0, 0, time.UTC)}}}
	sig := key.Sign(&d)
	fmt.Printf("%s\n", d.Encoding())

	content := d.Content() // what certificate-info shows as "signed"
	fmt.Println(signed.Verify(&content, key.Public(), sig))
	content.Origin = "https://elsewhere.example/"
	fmt.Println(signed.Verify(&content, key.Public(), sig))
	// Output:
	// {"company_id":"acme","consents":[{"opt_in_at":"2026-11-22T10:29:00.000000Z","text":"I agree.","types":["tcpa"]}],"created_at":"2026-11-22T10:30:00.000000Z","email_sha256":"","id":"cert-1","key_id":"key-2026-11","mobile_sha256":"","origin":"https://acme.example/quote","property_id":"web","recording_sha256":"","session_id":"s1","v":"consentkit-certificate-2"}
	// <nil>
	// signed: the signature does not match the certificate
}
