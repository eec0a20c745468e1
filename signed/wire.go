package signed

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
)

// Proof is a certificate's signature as certificate-info answers it,
// beside the certificate's other facts: the signature, the id of its key
// and the content it covers. All three are absent for a certificate
// issued unsigned. The server writes it and an offline check reads it, so
// both agree on its JSON by construction.
type Proof struct {
	// Signature is Ed25519 by the key of KeyID (GET
	// /.well-known/consentkit-keys) over the canonical encoding of Signed,
	// in standard base64 (EncodeSignature).
	Signature string   `json:"signature,omitempty"`
	KeyID     string   `json:"key_id,omitempty"`
	Signed    *Content `json:"signed,omitempty"`
}

// Verify checks offline that p is signed, by a key of keys, over its
// content.
func (p *Proof) Verify(keys *KeySet) error {
	if p.Signed == nil || p.Signature == "" {
		return errors.New("the certificate carries no signature (issued without a signing key?)")
	}
	sig, err := base64.StdEncoding.DecodeString(p.Signature)
	if err != nil {
		return fmt.Errorf("the signature is not base64: %w", err)
	}
	if p.KeyID != p.Signed.KeyID {
		return fmt.Errorf("key_id %q differs from the signed content's %q", p.KeyID, p.Signed.KeyID)
	}
	key, err := keys.Find(p.KeyID)
	if err != nil {
		return err
	}
	return Verify(p.Signed, key, sig)
}

// KeySet is the public keys of signed certificates as GET
// /.well-known/consentkit-keys publishes them, the signing key first.
type KeySet struct {
	Keys []PublishedKey `json:"keys"`
}

// PublishedKey is one key of a KeySet.
type PublishedKey struct {
	KeyID     string `json:"key_id"`
	Algorithm string `json:"algorithm"`  // "Ed25519"
	PublicKey string `json:"public_key"` // the 32 bytes, standard base64
}

// Publish returns the KeySet of keys, in their order.
func Publish(keys []PublicKey) KeySet {
	out := KeySet{Keys: make([]PublishedKey, 0, len(keys))}
	for _, k := range keys {
		out.Keys = append(out.Keys, PublishedKey{KeyID: k.ID, Algorithm: "Ed25519", PublicKey: base64.StdEncoding.EncodeToString(k.Key)})
	}
	return out
}

// Find returns the key of s whose id is id. It fails when there is none,
// or when that key is not a base64 Ed25519 public key that
// [PublicKey.Check] accepts (a point of small order verifies signatures
// no private key made).
func (s *KeySet) Find(id string) (PublicKey, error) {
	for _, k := range s.Keys {
		if k.KeyID != id {
			continue
		}
		if k.Algorithm != "Ed25519" {
			return PublicKey{}, fmt.Errorf("key %s is %s, not Ed25519", k.KeyID, k.Algorithm)
		}
		pub, err := base64.StdEncoding.DecodeString(k.PublicKey)
		if err != nil || len(pub) != ed25519.PublicKeySize {
			return PublicKey{}, fmt.Errorf("key %s is not a base64 Ed25519 public key", k.KeyID)
		}
		key := PublicKey{ID: k.KeyID, Key: pub}
		if why := key.weakness(); why != "" {
			return PublicKey{}, fmt.Errorf("key %s %s", k.KeyID, why)
		}
		return key, nil
	}
	return PublicKey{}, fmt.Errorf("no published key has the id %q", id)
}

// Marshal returns v as a statement is stored (the attestation's, the
// insights'): encoding/json's JSON without its HTML escaping, which would
// write each "<", ">" and "&" of a page's field names and texts in six
// bytes. The signature covers the canonical encoding, not these bytes.
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
