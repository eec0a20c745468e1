package consentkit

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"fmt"
	"slices"
	"strings"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/signed"
)

// DefaultSignatureCacheSize is how many checked signatures a Service
// remembers when Config.SignatureCacheSize is zero: 64 Ki of them, about
// 5 MiB at most.
const DefaultSignatureCacheSize = 1 << 16

// checkKeys refuses keys that cannot be used: a bad id, a key of the wrong
// size, a public key (or a signing key's public half) that
// signed.PublicKey.Check refuses (a point of small order verifies
// signatures no private key made), two keys of one id, or a key both given
// and revoked.
func checkKeys(signing []signed.SigningKey, public []signed.PublicKey, revoked []string) error {
	seen := map[string]bool{}
	for _, k := range signing {
		if err := consent.CheckID("signing key id", k.ID); err != nil {
			return err
		}
		if len(k.Private) != ed25519.PrivateKeySize {
			return fmt.Errorf("consentkit: signing key %s is not an Ed25519 private key", k.ID)
		}
		if err := k.Public().Check(); err != nil { // the public half, which verifies its signatures
			return fmt.Errorf("consentkit: Config.SigningKeys: %w", err)
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
		if err := k.Check(); err != nil { // of the right size, canonical, not of small order
			return fmt.Errorf("consentkit: Config.PublicKeys: %w", err)
		}
		if seen[k.ID] {
			return fmt.Errorf("consentkit: two keys have the id %s", k.ID)
		}
		seen[k.ID] = true
	}
	for _, id := range revoked {
		if err := consent.CheckID("revoked key id", id); err != nil {
			return err
		}
		if seen[id] {
			return fmt.Errorf("consentkit: key %s is both given and revoked (Config.RevokedKeys)", id)
		}
	}
	return nil
}

// revoked reports whether the key id is one of Config.RevokedKeys.
func (s *Service) revoked(id string) bool { return slices.Contains(s.cfg.RevokedKeys, id) }

// PublicKeys returns the keys that verify certificates: those of
// Config.SigningKeys, the first of which signs new certificates, then
// Config.PublicKeys (retired keys, and other instances' keys).
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

// PublishKeys publishes the Service's keys — Config.SigningKeys and
// Config.PublicKeys — in its store, so that no instance sharing the store
// signs under one of their ids with another key (D41). It fails with a
// Conflict, publishing nothing, when a key id is published already with
// another key (instances must share one key, or sign under ids of their
// own) and, unless Config.TrustPublishedKeys, when the store holds a key
// the Service was not given: certificates signed with it would fail their
// integrity check here. Call it at start; a Service that was not told to
// publishes its signing key with the first certificate it signs, and
// refuses to sign under an id that another key holds.
func (s *Service) PublishKeys(ctx context.Context) error {
	err := s.store.Update(ctx, func(tx consent.Tx) error {
		if !s.cfg.TrustPublishedKeys {
			if err := s.refuseForeignKeys(ctx, tx); err != nil {
				return err
			}
		}
		for _, k := range s.keys {
			if err := s.publish(ctx, tx, k); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		s.keysPublished.Store(true)
	}
	return err
}

// refuseForeignKeys is a Conflict naming the keys published in the store
// that the Service does not hold (a key whose id it holds with another key
// is publish's Conflict).
func (s *Service) refuseForeignKeys(ctx context.Context, tx consent.Tx) error {
	list, err := tx.PublishedKeys(ctx)
	if err != nil {
		return err
	}
	var foreign []string
	for _, k := range list {
		if !s.revoked(k.ID) && !slices.ContainsFunc(s.keys, func(o signed.PublicKey) bool { return o.ID == k.ID }) {
			foreign = append(foreign, k.ID)
		}
	}
	if len(foreign) > 0 {
		return consent.Errorf(consent.Conflict, "the store holds keys this service was not given: %s; certificates signed with them would fail "+
			"their integrity check here: give every instance the same keys (Config.SigningKeys, or PublicKeys for another's), or set Config.TrustPublishedKeys",
			strings.Join(foreign, ", "))
	}
	return nil
}

// CheckSigningKey publishes, in tx, the key that signs new certificates
// and statements, unless this Service knows it published already: Conflict
// when its id is published with another key (D46), since every instance
// would refuse what it signs. Whatever records something signed calls it
// in the same transaction: a certificate's issue, an attestation's or
// insights' statement.
func (s *Service) CheckSigningKey(ctx context.Context, tx consent.Tx) error {
	if len(s.cfg.SigningKeys) == 0 || s.keysPublished.Load() {
		return nil
	}
	return s.publish(ctx, tx, s.keys[0])
}

// publish publishes k in tx unless it is published already; a Conflict
// when its id holds another key.
func (s *Service) publish(ctx context.Context, tx consent.Tx, k signed.PublicKey) error {
	got, err := tx.PublishedKey(ctx, k.ID)
	switch {
	case consent.ErrorCode(err) == consent.NotFound:
		return tx.PublishKey(ctx, &consent.PublishedKey{ID: k.ID, Key: k.Key, CreatedAt: s.Now()})
	case err != nil:
		return err
	case !bytes.Equal(got.Key, k.Key):
		return consent.Errorf(consent.Conflict, "key id %s is published already with another key: instances sharing a store must share one key, or sign under ids of their own", k.ID)
	}
	return nil
}

// PublishedKeys returns every key that verifies certificates here — what
// GET /.well-known/consentkit-keys publishes: the Service's own
// (PublicKeys) and, with Config.TrustPublishedKeys, those other instances
// published in the store, oldest first, but for those
// signed.PublicKey.Check refuses.
func (s *Service) PublishedKeys(ctx context.Context) ([]signed.PublicKey, error) {
	out := s.PublicKeys()
	if !s.cfg.TrustPublishedKeys {
		return out, nil
	}
	err := s.store.View(ctx, func(tx consent.Tx) error {
		list, err := tx.PublishedKeys(ctx)
		for _, k := range list {
			pub := signed.PublicKey{ID: k.ID, Key: k.Key}
			if !s.revoked(k.ID) && pub.Check() == nil && !slices.ContainsFunc(out, func(o signed.PublicKey) bool { return o.ID == k.ID }) {
				out = append(out, pub)
			}
		}
		return err
	})
	return out, err
}

// key returns the public key of id: one of the Service's own, else, with
// Config.TrustPublishedKeys, one published in the store (read through tx
// once, then remembered), which fails with ErrIntegrity when
// signed.PublicKey.Check refuses it.
func (s *Service) key(ctx context.Context, tx consent.Tx, id string) (signed.PublicKey, bool, error) {
	if i := slices.IndexFunc(s.keys, func(k signed.PublicKey) bool { return k.ID == id }); i >= 0 {
		return s.keys[i], true, nil
	}
	if !s.cfg.TrustPublishedKeys || s.revoked(id) {
		return signed.PublicKey{}, false, nil
	}
	if k, ok := s.published.Load(id); ok {
		return k.(signed.PublicKey), true, nil
	}
	got, err := tx.PublishedKey(ctx, id)
	if consent.ErrorCode(err) == consent.NotFound {
		return signed.PublicKey{}, false, nil
	}
	if err != nil {
		return signed.PublicKey{}, false, err
	}
	k := signed.PublicKey{ID: got.ID, Key: got.Key}
	if err := k.Check(); err != nil { // of small order, it would verify what no private key signed
		return signed.PublicKey{}, false, fmt.Errorf("%w: the key published in the store: %w", consent.ErrIntegrity, err)
	}
	s.published.Store(id, k)
	return k, true, nil
}

// CheckIntegrity reports whether c still is what was issued: its signature
// holds under the key of its KeyID (Config.SigningKeys or PublicKeys, or
// with Config.TrustPublishedKeys a key another instance published in the
// store, read through tx) and,
// when recording is not nil, it (the SHA-256 of the session's recording as
// Service.Recording returns it) is c.RecordingSHA256. A service with keys
// refuses an unsigned certificate (unless created before
// Config.UnsignedBefore); one without keys checks only the recording. The
// error wraps ErrIntegrity.
func (s *Service) CheckIntegrity(ctx context.Context, tx consent.Tx, c *consent.Certificate, recording *consent.Digest) error {
	switch {
	case len(c.Signature) == 0 && len(s.keys) > 0 && !c.CreatedAt.Before(s.cfg.UnsignedBefore):
		return fmt.Errorf("%w: certificate %s is not signed", consent.ErrIntegrity, c.ID)
	case len(c.Signature) > 0:
		key, ok, err := s.key(ctx, tx, c.KeyID)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: certificate %s is signed with key %q, which this service was not given (Config.SigningKeys, PublicKeys)", consent.ErrIntegrity, c.ID, c.KeyID)
		}
		var consents [4]signed.DocumentConsent // most certificates': no allocation
		d := consent.Document(c, consents[:0])
		if !s.signatures.Verify(key.Key, c.Signature, &d) {
			return fmt.Errorf("%w: the signature of certificate %s does not match its content", consent.ErrIntegrity, c.ID)
		}
	}
	if recording != nil && !c.RecordingSHA256.IsZero() && *recording != c.RecordingSHA256 {
		return fmt.Errorf("%w: the recording of certificate %s no longer has the SHA-256 it was issued with", consent.ErrIntegrity, c.ID)
	}
	return nil
}
