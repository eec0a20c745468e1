package consentkit_test

import (
	"slices"
	"testing"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/signed"
)

// Instances sharing a store never sign under one key id with two keys, and
// each verifies what the others sign (D41): a key is published in the
// store at start (PublishKeys) or with the first certificate it signs; a
// second key under a published id is refused at start and at signing; a
// key rotates by signing with a new one while the old one still verifies,
// on every instance.
func TestKeysSharedStore(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		st := open(t)
		instance := func(keys ...signed.SigningKey) *consentkit.Service {
			t.Helper()
			svc, err := consentkit.NewService(st, consentkit.Config{SigningKeys: keys})
			if err != nil {
				t.Fatal(err)
			}
			return svc
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
		keyA := newKey("key-a")
		a := instance(keyA)
		mustDo(t, a)
		if err := a.PublishKeys(ctx); err != nil {
			t.Fatalf("PublishKeys: %v", err)
		}
		if err := a.PublishKeys(ctx); err != nil {
			t.Fatalf("PublishKeys again, the same keys: %v", err)
		}

		// Another key under a published id: refused at start, and at signing.
		impostor := instance(newKey("key-a"))
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
		// certificate publishes it, and the other instance verifies it.
		c := instance(newKey("key-c"))
		if err := issue(c, "cert-c"); err != nil {
			t.Fatal(err)
		}
		if err := checkIntegrity(a, certificate(t, a, "cert-c"), nil); err != nil {
			t.Errorf("instance a checking instance c's certificate: %v", err)
		}
		keys, err := a.PublishedKeys(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, k := range keys {
			ids = append(ids, k.ID)
		}
		if !slices.Equal(ids, []string{"key-a", "key-c"}) {
			t.Errorf("PublishedKeys = %v, want key-a (its own) then key-c", ids)
		}

		// Rotation: a new key signs, the old one still verifies, also on an
		// instance that was configured with the new key alone.
		if err := issue(a, "cert-a"); err != nil {
			t.Fatal(err)
		}
		rotated := instance(newKey("key-a2"), keyA)
		if err := rotated.PublishKeys(ctx); err != nil {
			t.Fatalf("PublishKeys after rotation: %v", err)
		}
		if err := issue(rotated, "cert-a2"); err != nil {
			t.Fatal(err)
		}
		if got := certificate(t, a, "cert-a2").KeyID; got != "key-a2" {
			t.Errorf("after rotation, signed with %q; want key-a2", got)
		}
		newOnly := instance(newKey("key-n"))
		for _, id := range []string{"cert-a", "cert-a2", "cert-c"} {
			if err := checkIntegrity(newOnly, certificate(t, a, id), nil); err != nil {
				t.Errorf("an instance of another key checking %s: %v", id, err)
			}
		}
	})
}
