package consent

import (
	"crypto/ed25519"
	"fmt"
	"slices"

	"github.com/consentkit/consentkit/signed"
)

// Signed certificates (D41): package signed holds the signed document, its
// canonical encoding and the keys; this file signs the certificates the
// Service issues and checks them.

// DefaultSignatureCacheSize is how many checked signatures a Service
// remembers when Config.SignatureCacheSize is zero: 64 Ki of them, about
// 5 MiB at most.
const DefaultSignatureCacheSize = 1 << 16

// checkKeys refuses keys that cannot be used: a bad id, a key of the wrong
// size, or two keys of one id.
func checkKeys(signing []signed.SigningKey, public []signed.PublicKey) error {
	seen := map[string]bool{}
	for _, k := range signing {
		if err := CheckID("signing key id", k.ID); err != nil {
			return err
		}
		if len(k.Private) != ed25519.PrivateKeySize {
			return fmt.Errorf("consent: signing key %s is not an Ed25519 private key", k.ID)
		}
		if seen[k.ID] {
			return fmt.Errorf("consent: two keys have the id %s", k.ID)
		}
		seen[k.ID] = true
	}
	for _, k := range public {
		if err := CheckID("public key id", k.ID); err != nil {
			return err
		}
		if len(k.Key) != ed25519.PublicKeySize {
			return fmt.Errorf("consent: public key %s is not an Ed25519 public key", k.ID)
		}
		if seen[k.ID] {
			return fmt.Errorf("consent: two keys have the id %s", k.ID)
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

// sign sets c's KeyID and Signature with the first signing key; without
// one, c stays unsigned.
func (s *Service) sign(c *Certificate) {
	if len(s.cfg.SigningKeys) == 0 {
		return
	}
	k := s.cfg.SigningKeys[0]
	d := document(c, nil)
	c.Signature = k.Sign(&d)
	c.KeyID = k.ID
}

// ErrIntegrity is the refusal of a certificate whose content, or whose
// session's recording, no longer matches what was signed or hashed when it
// was issued (D41): code Conflict, so the API answers 409.
var ErrIntegrity = Errorf(Conflict, "certificate integrity check failed")

// CheckIntegrity reports whether c still is what was issued: its signature
// holds under the key of its KeyID (Config.SigningKeys or PublicKeys) and,
// when recording is not nil, it (the SHA-256 of the session's recording as
// Service.Recording returns it) is c.RecordingSHA256. A service with keys
// refuses an unsigned certificate (unless created before
// Config.UnsignedBefore); one without keys checks only the recording. The
// error wraps ErrIntegrity.
func (s *Service) CheckIntegrity(c *Certificate, recording *Digest) error {
	keys := s.keys
	switch {
	case len(c.Signature) == 0 && len(keys) > 0 && !c.CreatedAt.Before(s.cfg.UnsignedBefore):
		return fmt.Errorf("%w: certificate %s is not signed", ErrIntegrity, c.ID)
	case len(c.Signature) > 0:
		i := slices.IndexFunc(keys, func(k signed.PublicKey) bool { return k.ID == c.KeyID })
		if i < 0 {
			return fmt.Errorf("%w: certificate %s is signed with key %q, which is not configured", ErrIntegrity, c.ID, c.KeyID)
		}
		var consents [4]signed.DocumentConsent // most certificates': no allocation
		d := document(c, consents[:0])
		if !s.signatures.Verify(keys[i].Key, c.Signature, &d) {
			return fmt.Errorf("%w: the signature of certificate %s does not match its content", ErrIntegrity, c.ID)
		}
	}
	if recording != nil && !c.RecordingSHA256.IsZero() && *recording != c.RecordingSHA256 {
		return fmt.Errorf("%w: the recording of certificate %s no longer has the SHA-256 it was issued with", ErrIntegrity, c.ID)
	}
	return nil
}

// Signed returns what c's signature covers, as the API shows it.
func Signed(c *Certificate) signed.Content {
	d := document(c, nil)
	return d.Content()
}

// document returns the signed document of c; its consents are appended
// to consents.
func document(c *Certificate, consents []signed.DocumentConsent) signed.Document {
	for _, r := range c.Records {
		consents = append(consents, signed.DocumentConsent{Text: r.Text, Types: r.Types, OptInAt: r.OptInAt})
	}
	return signed.Document{ID: c.ID, CompanyID: c.CompanyID, PropertyID: c.PropertyID, SessionID: c.SessionID,
		Consents: consents, Origin: c.Origin, CreatedAt: c.CreatedAt, EmailSHA256: c.EmailDigest,
		MobileSHA256: c.MobileDigest, RecordingSHA256: c.RecordingSHA256, KeyID: c.KeyID}
}
