package signed

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/consentkit/consentkit/internal/ident"
)

// SigningKey is an Ed25519 private key with the id it is published under.
type SigningKey struct {
	ID      string
	Private ed25519.PrivateKey
}

// PublicKey is a published Ed25519 public key.
type PublicKey struct {
	ID  string
	Key ed25519.PublicKey
}

// NewSigningKey returns a new random key with the given id: 1–128
// characters of A-Z a-z 0-9 . _ : -, as every identifier (D29).
func NewSigningKey(id string) (SigningKey, error) {
	if !ident.Valid(id) {
		return SigningKey{}, fmt.Errorf("signed: key id %q must be 1 to 128 characters of A-Z a-z 0-9 . _ : -", id)
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return SigningKey{}, err
	}
	return SigningKey{ID: id, Private: priv}, nil
}

// Public returns k's public key.
func (k SigningKey) Public() PublicKey {
	return PublicKey{ID: k.ID, Key: k.Private.Public().(ed25519.PublicKey)}
}

// Sign names k in d (d.KeyID is set to k.ID) and returns k's Ed25519
// signature of d's canonical encoding.
func (k SigningKey) Sign(d *Document) []byte {
	d.KeyID = k.ID
	return ed25519.Sign(k.Private, d.Encoding())
}

// Verify checks offline that signature is key's Ed25519 signature of c, as
// certificate-info shows them ("signed", "signature" decoded, "key_id"):
// c must name the key and be of a version this package knows.
func Verify(c *Content, key PublicKey, signature []byte) error {
	switch {
	case c.KeyID != key.ID:
		return fmt.Errorf("signed: certificate %s names key %q, not %q", c.ID, c.KeyID, key.ID)
	}
	d, err := c.Document()
	if err != nil {
		return err
	}
	if len(key.Key) != ed25519.PublicKeySize || !ed25519.Verify(key.Key, d.Encoding(), signature) {
		return errors.New("signed: the signature does not match the certificate")
	}
	return nil
}

// EncodeSignature returns a signature as the API shows it: standard base64.
func EncodeSignature(sig []byte) string { return base64.StdEncoding.EncodeToString(sig) }
