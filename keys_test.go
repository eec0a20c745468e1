package consentkit_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/signed"
)

// Instances sharing a store never sign under one key id with two keys, and
// trust only the keys they were given (D41): a key is published in the
// store at start (PublishKeys) or with the first certificate it signs; a
// second key under a published id is refused at start and at signing; a
// key in the store that an instance was not given verifies nothing there
// and refuses its start, unless it trusts published keys; a key rotates by
// signing with a new one while the old one still verifies.
func TestKeysSharedStore(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		st := open(t)
		instance := func(cfg consentkit.Config) *consentkit.Service {
			t.Helper()
			svc, err := consentkit.NewService(st, cfg)
			if err != nil {
				t.Fatal(err)
			}
			return svc
		}
		signing := func(keys ...signed.SigningKey) *consentkit.Service {
			return instance(consentkit.Config{SigningKeys: keys})
		}
		newKey := func(id string) signed.SigningKey {
			t.Helper()
			k, err := signed.NewSigningKey(id)
			if err != nil {
				t.Fatal(err)
			}
			return k
		}
		issue := func(svc *consentkit.Service, id string) error {
			_, err := svc.IssueCertificate(ctx, consentkit.CertificateParams{ID: id, CompanyID: "acme", PropertyID: "web", SessionID: "s1",
				Records: []consent.Record{{Text: "I agree."}}})
			return err
		}
		ids := func(svc *consentkit.Service) []string {
			t.Helper()
			keys, err := svc.PublishedKeys(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, k := range keys {
				out = append(out, k.ID)
			}
			return out
		}
		keyA := newKey("key-a")
		a := signing(keyA)
		mustDo(t, a)
		if err := a.PublishKeys(ctx); err != nil {
			t.Fatalf("PublishKeys: %v", err)
		}
		if err := a.PublishKeys(ctx); err != nil {
			t.Fatalf("PublishKeys again, the same keys: %v", err)
		}

		// Another key under a published id: refused at start, and at signing.
		impostor := signing(newKey("key-a"))
		if err := impostor.PublishKeys(ctx); consent.ErrorCode(err) != consent.Conflict {
			t.Errorf("PublishKeys of another key under key-a: %v; want Conflict", err)
		}
		if err := issue(impostor, "cert-x"); consent.ErrorCode(err) != consent.Conflict {
			t.Errorf("signing under key-a with another key: %v; want Conflict", err)
		}
		if err := st.View(ctx, func(tx consent.Tx) error { _, err := tx.Certificate(ctx, "cert-x"); return err }); consent.ErrorCode(err) != consent.NotFound {
			t.Errorf("the refused certificate: %v; want none stored", err)
		}

		// An instance of its own key, never told to publish: its first
		// certificate publishes it. The first instance was not given it:
		// the certificate fails its integrity check there, and a restart
		// of the first instance is refused, naming the key, publishing
		// nothing.
		keyC := newKey("key-c")
		c := signing(keyC)
		if err := issue(c, "cert-c"); err != nil {
			t.Fatal(err)
		}
		if err := checkIntegrity(a, certificate(t, a, "cert-c"), nil); !errors.Is(err, consent.ErrIntegrity) || !strings.Contains(err.Error(), `"key-c"`) {
			t.Errorf("instance a checking instance c's certificate: %v; want an integrity error naming key-c", err)
		}
		keyB := newKey("key-b")
		if err := signing(keyB, keyA).PublishKeys(ctx); consent.ErrorCode(err) != consent.Conflict || !strings.Contains(err.Error(), "key-c") {
			t.Errorf("PublishKeys with key-c in the store, not given: %v; want a Conflict naming key-c", err)
		}
		if got := ids(a); !slices.Equal(got, []string{"key-a"}) {
			t.Errorf("PublishedKeys = %v, want key-a alone (key-b refused, key-c not given)", got)
		}
		// Given key-c's public half, it verifies and starts.
		given := instance(consentkit.Config{SigningKeys: []signed.SigningKey{keyA}, PublicKeys: []signed.PublicKey{keyC.Public()}})
		if err := given.PublishKeys(ctx); err != nil {
			t.Errorf("PublishKeys given key-c: %v", err)
		}
		if err := checkIntegrity(given, certificate(t, a, "cert-c"), nil); err != nil {
			t.Errorf("an instance given key-c checking cert-c: %v", err)
		}
		// Trusting the store, it verifies with key-c, and publishes it.
		trusting := instance(consentkit.Config{SigningKeys: []signed.SigningKey{keyA}, TrustPublishedKeys: true})
		if err := trusting.PublishKeys(ctx); err != nil {
			t.Errorf("PublishKeys trusting the store: %v", err)
		}
		if err := checkIntegrity(trusting, certificate(t, a, "cert-c"), nil); err != nil {
			t.Errorf("an instance trusting the store checking cert-c: %v", err)
		}
		if got := ids(trusting); !slices.Equal(got, []string{"key-a", "key-c"}) {
			t.Errorf("PublishedKeys trusting the store = %v, want key-a (its own) then key-c", got)
		}

		// A certificate changed and signed again with a key put into the
		// store: refused where only the given keys verify, and the key is
		// not published there.
		if err := issue(a, "cert-a"); err != nil {
			t.Fatal(err)
		}
		forged := certificate(t, a, "cert-a")
		forged.Records[0].Text = "I agree to calls from 500 partners."
		evil := newKey("key-evil")
		d := consent.Document(forged, nil)
		forged.Signature, forged.KeyID = evil.Sign(&d), evil.ID
		if err := st.Update(ctx, func(tx consent.Tx) error {
			return tx.PublishKey(ctx, &consent.PublishedKey{ID: evil.ID, Key: evil.Public().Key, CreatedAt: time.Now()})
		}); err != nil {
			t.Fatal(err)
		}
		if err := checkIntegrity(a, forged, nil); !errors.Is(err, consent.ErrIntegrity) {
			t.Errorf("a certificate signed again with a key put into the store: %v; want an integrity error", err)
		}
		if got := ids(given); slices.Contains(got, "key-evil") {
			t.Errorf("PublishedKeys = %v: publishes a key it was not given", got)
		}

		// Rotation: a new key signs, the old one still verifies, on an
		// instance given the new key and the old one's public half.
		rotated := instance(consentkit.Config{SigningKeys: []signed.SigningKey{newKey("key-a2"), keyA}, TrustPublishedKeys: true})
		if err := rotated.PublishKeys(ctx); err != nil {
			t.Fatalf("PublishKeys after rotation: %v", err)
		}
		if err := issue(rotated, "cert-a2"); err != nil {
			t.Fatal(err)
		}
		if got := certificate(t, a, "cert-a2").KeyID; got != "key-a2" {
			t.Errorf("after rotation, signed with %q; want key-a2", got)
		}
		newOnly := instance(consentkit.Config{SigningKeys: []signed.SigningKey{newKey("key-n")},
			PublicKeys: append(rotated.PublicKeys(), keyC.Public())})
		for _, id := range []string{"cert-a", "cert-a2", "cert-c"} {
			if err := checkIntegrity(newOnly, certificate(t, a, id), nil); err != nil {
				t.Errorf("an instance given the rotated keys checking %s: %v", id, err)
			}
		}

		// Revocation: key-c, found compromised, verifies nothing on an
		// instance that revokes it, though the store publishes it and the
		// instance trusts the store; its start takes key-c as known; and it
		// is not published. A key both given and revoked is refused.
		distrusting := instance(consentkit.Config{SigningKeys: []signed.SigningKey{keyA}, TrustPublishedKeys: true, RevokedKeys: []string{"key-c", "key-evil"}})
		if err := checkIntegrity(distrusting, certificate(t, a, "cert-c"), nil); !errors.Is(err, consent.ErrIntegrity) {
			t.Errorf("a certificate signed with a revoked key: %v; want an integrity error", err)
		}
		if err := checkIntegrity(distrusting, certificate(t, a, "cert-a"), nil); err != nil {
			t.Errorf("a certificate of a key not revoked: %v", err)
		}
		if got := ids(distrusting); slices.Contains(got, "key-c") || slices.Contains(got, "key-evil") {
			t.Errorf("PublishedKeys = %v: publishes a revoked key", got)
		}
		strict := instance(consentkit.Config{SigningKeys: []signed.SigningKey{keyA}, PublicKeys: []signed.PublicKey{{ID: "key-a2", Key: rotated.PublicKeys()[0].Key}},
			RevokedKeys: []string{"key-c", "key-evil", "key-b"}})
		if err := strict.PublishKeys(ctx); err != nil {
			t.Errorf("PublishKeys with the store's other keys revoked: %v", err)
		}
		if _, err := consentkit.NewService(st, consentkit.Config{SigningKeys: []signed.SigningKey{keyA}, RevokedKeys: []string{"key-a"}}); err == nil {
			t.Error("a key both given and revoked was taken")
		}
	})
}
