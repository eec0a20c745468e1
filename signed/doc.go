// Package signed is the signed document of a consent certificate (D41):
// what a certificate's Ed25519 signature covers, its one canonical
// encoding, the keys that sign and verify it, and the JSON in which the API
// shows a signature and publishes its keys, with the members of a
// certificate-info answer signed apart (AttestationAnswer,
// InsightsAnswer). It imports the standard library and the module's rule
// of identifiers (internal/ident) only, so that a program that checks
// certificates offline, such as cmd/consentkit-verify, needs nothing else
// of the module; a test holds it to that.
//
// To check a certificate-info answer saved to cert.json against the keys
// GET /.well-known/consentkit-keys publishes, saved to keys.json:
//
//	var proof signed.Proof // certificate-info's "signature", "key_id" and "signed"
//	var keys signed.KeySet
//	if err := json.Unmarshal(certJSON, &proof); err != nil { … }
//	if err := json.Unmarshal(keysJSON, &keys); err != nil { … }
//	if err := proof.Verify(&keys); err != nil {
//		// not signed, or not by a published key over this content
//	}
//
// A service signs with a [SigningKey]: the Service builds the [Document] of
// each certificate it issues (consent.Document) and signs it with
// [SigningKey.Sign].
//
// # The canonical encoding
//
// A certificate is signed over its canonical encoding, a JSON object
// written by these rules so that anyone can rebuild it from the
// certificate's JSON and check the signature offline with the published
// public key:
//
//   - the members, in this order (which is the sorted order of their
//     names): "company_id", "consents", "created_at", "email_sha256", "id",
//     "key_id", "mobile_sha256", "origin", "property_id",
//     "recording_sha256", "session_id", "v";
//   - "v" is "consentkit-certificate-1" ([Version1]); "key_id" is the id of
//     the signing key; "consents" is an array, in the certificate's order,
//     of objects with the members "opt_in_at", "text", "types" (in that
//     order), where "types" is an array of strings in the certificate's
//     order;
//
// Version 2 ([Version2], "consentkit-certificate-2", what new certificates
// are signed in) adds to those members, still in sorted order at every
// level: "client_ip", "revoked_before", "user_agent" and "visibility" (the
// certificate's own) at the top, and "opt_in_method" and "visibility" in
// each consent, each absent when empty or none (so that RFC 8785 over the
// content's JSON gives the signed bytes). A visibility is an object of "background_color", "contrast_ratio", "font_size_px",
// "hidden_text" (an array of strings), "in_viewport" and "visible" (true
// or false), "text_color"; its two numbers are strings, the shortest
// decimal that reads back as the same 64-bit float ("16", "18.88").
// In both versions:
//
//   - every other value is a string: times in UTC as
//     2006-01-02T15:04:05.000000Z (always six decimals; "" for none),
//     digests as 64 lowercase hex digits ("" for none);
//   - no white space; strings escaped as RFC 8785 (JSON Canonicalization
//     Scheme) escapes them: \" and \\, \b \t \n \f \r, other characters
//     below U+0020 as \u00xx (lowercase hex), everything else as itself in
//     UTF-8.
//
// The signature is the 64 bytes of Ed25519 over those bytes; the API shows
// it in standard base64 with the key id ([Proof]). What is signed is the
// evidence itself — in version 2 every fact the certificate asserts at
// issue — and not what changes by design (retention, expiry, revocation)
// nor what is computed when asked.
//
// # Attestation statements
//
// A [Statement] is what the service states of a certificate after
// replaying its recording to the consent moment and measuring what the
// consumer could see itself (D49): the measured facts, the differences
// from what the browser claimed, what the replay could not reproduce, the
// SHA-256 of a screenshot, and the SHA-256 of the certificate's canonical
// encoding, which links it to the certificate. It is signed with the same
// keys ([SigningKey.SignStatement]) over its own canonical encoding — its
// JSON's members under the rules above, integers as JSON integers — and
// checked offline with [VerifyStatement] or [StatementProof.Verify].
package signed
