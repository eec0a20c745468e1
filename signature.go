package consentkit

import (
	"crypto/ed25519"
	"fmt"
	"slices"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/signed"
)

// DefaultSignatureCacheSize is how many checked signatures a Service
// remembers when Config.SignatureCacheSize is zero: 64 Ki of them, about
// 5 MiB at most.
const DefaultSignatureCacheSize = 1 << 16

// checkKeys refuses keys that cannot be used: a bad id, a key of the wrong
// size, or two keys of one id.
func checkKeys(signing []signed.SigningKey, public []signed.PublicKey) error {
	seen := map[string]bool{}
	for _, k := range signing {
		if err := consent.CheckID("signing key id", k.ID); err != nil {
			return err
		}
		if len(k.Private) != ed25519.PrivateKeySize {
			return fmt.Errorf("consentkit: signing key %s is not an Ed25519 private key", k.ID)
		}
		if seen[k.ID] {
			return fmt.Errorf("consentkit: two keys have the id %s", k.ID)
		}
		seen[k.ID] = true
	}
	for _, k := range public {
		if err := consent.CheckID("public key id", k.ID); err != nil {
			return err
		}
		if len(k.Key) != ed25519.PublicKeySize {
			return fmt.Errorf("consentkit: public key %s is not an Ed25519 public key", k.ID)
		}
		if seen[k.ID] {
			return fmt.Errorf("consentkit: two keys have the id %s", k.ID)
		}
		seen[k.ID] = true
	}
	return nil
}

// PublicKeys returns the keys that verify certificates: those of
// Config.SigningKeys, the first of which signs new certificates, then
// Config.PublicKeys (retired keys whose certificates still verify).
func (s *Service) PublicKeys() []signed.PublicKey {
	return append([]signed.PublicKey{}, s.keys...)
}

// sign sets c's KeyID, Signature and SignatureVersion with the first
// signing key, in the latest version of the canonical encoding
// (signed.Version); without a key, c stays unsigned.
func (s *Service) sign(c *consent.Certificate) {
	if len(s.cfg.SigningKeys) == 0 {
		return
	}
	k := s.cfg.SigningKeys[0]
	c.SignatureVersion = 2
	d := consent.Document(c, nil)
	c.Signature = k.Sign(&d)
	c.KeyID = k.ID
}

// CheckIntegrity reports whether c still is what was issued: its signature
// holds under the key of its KeyID (Config.SigningKeys or PublicKeys) and,
// when recording is not nil, it (the SHA-256 of the session's recording as
// Service.Recording returns it) is c.RecordingSHA256. A service with keys
// refuses an unsigned certificate (unless created before
// Config.UnsignedBefore); one without keys checks only the recording. The
// error wraps ErrIntegrity.
func (s *Service) CheckIntegrity(c *consent.Certificate, recording *consent.Digest) error {
	keys := s.keys
	switch {
	case len(c.Signature) == 0 && len(keys) > 0 && !c.CreatedAt.Before(s.cfg.UnsignedBefore):
		return fmt.Errorf("%w: certificate %s is not signed", consent.ErrIntegrity, c.ID)
	case len(c.Signature) > 0:
		i := slices.IndexFunc(keys, func(k signed.PublicKey) bool { return k.ID == c.KeyID })
		if i < 0 {
			return fmt.Errorf("%w: certificate %s is signed with key %q, which is not configured", consent.ErrIntegrity, c.ID, c.KeyID)
		}
		var consents [4]signed.DocumentConsent // most certificates': no allocation
		d := consent.Document(c, consents[:0])
		if !s.signatures.Verify(keys[i].Key, c.Signature, &d) {
			return fmt.Errorf("%w: the signature of certificate %s does not match its content", consent.ErrIntegrity, c.ID)
		}
	}
	if recording != nil && !c.RecordingSHA256.IsZero() && *recording != c.RecordingSHA256 {
		return fmt.Errorf("%w: the recording of certificate %s no longer has the SHA-256 it was issued with", consent.ErrIntegrity, c.ID)
	}
	return nil
}
