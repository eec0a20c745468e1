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
	if !key.verifies(d.Encoding(), signature) {
		return errors.New("signed: the signature does not match the certificate")
	}
	return nil
}

// Check fails when k's key is not one an Ed25519 signature can be checked
// with: not 32 bytes, not the canonical encoding of a point (its y not
// below 2^255-19), or a point of small order. A key of small order — the
// identity 01 00…00 is one — is no one's: it verifies signatures that no
// private key made, such as 01 00…00 followed by 32 zero bytes over any
// content, and crypto/ed25519 takes it all the same. KeySet.Find and every
// Verify of this package refuse such a key, and so does the server of the
// keys it is given.
func (k PublicKey) Check() error {
	if why := k.weakness(); why != "" {
		return fmt.Errorf("signed: key %s %s", k.ID, why)
	}
	return nil
}

// weakness says why Check refuses k, after its id; "" when it does not.
func (k PublicKey) weakness() string {
	if len(k.Key) != ed25519.PublicKeySize {
		return fmt.Sprintf("is not an Ed25519 public key (%d bytes, not %d)", len(k.Key), ed25519.PublicKeySize)
	}
	var y [ed25519.PublicKeySize]byte
	copy(y[:], k.Key)
	y[31] &= 0x7f // the sign of x
	if !below(y, fieldPrime) {
		return "is not an Ed25519 public key: not a canonical encoding"
	}
	for _, small := range smallOrder {
		if y == small {
			return "is a point of small order, which verifies signatures no private key made"
		}
	}
	return ""
}

// verifies reports whether signature is k's Ed25519 signature of msg, k
// being a key Check accepts.
func (k PublicKey) verifies(msg, signature []byte) bool {
	return k.Check() == nil && ed25519.Verify(k.Key, msg, signature)
}

// fieldPrime is 2^255-19, little-endian: a canonical encoding's y is below it.
var fieldPrime = [32]byte{0xed, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}

// smallOrder is the y of each point of order 1, 2, 4 or 8 (libsodium's
// list, which is the same): with either sign of x they are the 8 points of
// small order, in their canonical encodings and those whose x is -0. The
// non-canonical encodings of small-order points (y = p, p+1) are refused
// as not canonical.
var smallOrder = [...][32]byte{
	{0x00}, // y = 0: order 4
	{0x01}, // y = 1: the identity, order 1
	{0x26, 0xe8, 0x95, 0x8f, 0xc2, 0xb2, 0x27, 0xb0, 0x45, 0xc3, 0xf4, 0x89, 0xf2, 0xef, 0x98, 0xf0, // order 8
		0xd5, 0xdf, 0xac, 0x05, 0xd3, 0xc6, 0x33, 0x39, 0xb1, 0x38, 0x02, 0x88, 0x6d, 0x53, 0xfc, 0x05},
	{0xc7, 0x17, 0x6a, 0x70, 0x3d, 0x4d, 0xd8, 0x4f, 0xba, 0x3c, 0x0b, 0x76, 0x0d, 0x10, 0x67, 0x0f, // order 8
		0x2a, 0x20, 0x53, 0xfa, 0x2c, 0x39, 0xcc, 0xc6, 0x4e, 0xc7, 0xfd, 0x77, 0x92, 0xac, 0x03, 0x7a},
	{0xec, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // y = p-1: order 2
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
}

// below reports whether a < b, both little-endian.
func below(a, b [32]byte) bool {
	for i := len(a) - 1; i >= 0; i-- {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// EncodeSignature returns a signature as the API shows it: standard base64.
func EncodeSignature(sig []byte) string { return base64.StdEncoding.EncodeToString(sig) }
