package consent

import (
	"crypto/ed25519"
	"time"
)

// PublishedKey is a public key that verifies certificates, kept in the
// store so that every instance sharing it knows every key by its id, and
// no two instances sign under one id with different keys (D41). A key is
// never changed or deleted once published: certificates depend on it.
type PublishedKey struct {
	ID        string
	Key       []byte // an Ed25519 public key
	CreatedAt time.Time
}

// Check checks k before a store writes it (PublishKey): its id as a key,
// a key of Ed25519's size, and its time.
func (k *PublishedKey) Check() error {
	if err := CheckID("key id", k.ID); err != nil {
		return err
	}
	if len(k.Key) != ed25519.PublicKeySize {
		return Errorf(Invalid, "key %s is not an Ed25519 public key", k.ID)
	}
	return CheckTime("created_at", k.CreatedAt)
}
