package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/signed"
)

// instance is a service on st with a key file of its own at path, made at
// now if there is none, configured as run() configures it.
func instance(t *testing.T, st consent.Store, path string, now time.Time) *consentkit.Service {
	t.Helper()
	ctx := context.Background()
	reader, err := consentkit.NewService(st, consentkit.Config{})
	if err != nil {
		t.Fatal(err)
	}
	key, since, _, err := loadSigningKey(path, now, func() (time.Time, error) { return signingBegan(ctx, reader, now) })
	if err == nil {
		since, err = notAfterFirstKey(ctx, reader, since)
	}
	if err != nil {
		t.Fatal(err)
	}
	svc, err := consentkit.NewService(st, consentkit.Config{SigningKeys: []signed.SigningKey{key}, UnsignedBefore: since,
		TrustPublishedKeys: true, Now: func() time.Time { return now.Add(time.Minute) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.PublishKeys(ctx); err != nil {
		t.Fatal(err)
	}
	return svc
}

// stripped returns the certificate as a writer of the database could leave
// it: its signature removed, its consent and origin rewritten, and its
// creation time (which no signature covers) moved to at.
func stripped(t *testing.T, st consent.Store, id string, at time.Time) *consent.Certificate {
	t.Helper()
	var c *consent.Certificate
	err := st.View(context.Background(), func(tx consent.Tx) (err error) { c, err = tx.Certificate(context.Background(), id); return err })
	if err != nil || len(c.Signature) == 0 {
		t.Fatalf("certificate %s: %v, signature %x", id, err, c.Signature)
	}
	c.Signature, c.KeyID, c.SignatureVersion = nil, "", 0
	c.Records[0].Text, c.Origin, c.CreatedAt = "I agree to calls and texts from anyone", "https://evil.example/", at
	return c
}

func integrity(svc *consentkit.Service, c *consent.Certificate) error {
	ctx := context.Background()
	var got error
	_ = svc.Store().View(ctx, func(tx consent.Tx) error { got = svc.CheckIntegrity(ctx, tx, c, nil); return nil })
	return got
}

// A certificate that one instance signed, stripped of its signature and
// changed in the store, is refused by every instance sharing the store,
// whatever its creation time is moved to: a key made for a store that held
// no certificate lets none pass unsigned (all_signed in its file), and a
// second instance's key, made a day after the first began signing, lets
// pass unsigned only what was created before the first's key. Its file
// said its own creation, and the second instance took the first's
// certificates of that day, changed, as issued before signing.
func TestStrippedCertificateRefusedByEveryInstance(t *testing.T) {
	st := teststore.Memory(t)
	dir := t.TempDir()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := instance(t, st, filepath.Join(dir, "a.key"), t0)
	ctx := context.Background()
	if _, err := a.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.AddProperty(ctx, consentkit.PropertyParams{ID: "web", CompanyID: "acme", Name: "Form"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.StartSession(ctx, consentkit.SessionParams{ID: "s1", CompanyID: "acme", PropertyID: "web"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.IssueCertificate(ctx, consentkit.CertificateParams{ID: "cert-1", CompanyID: "acme", PropertyID: "web", SessionID: "s1",
		Origin: "https://acme.example/", Records: []consent.Record{{Text: "I agree to calls", Types: []string{"tcpa"}}}}); err != nil {
		t.Fatal(err)
	}
	var f keyFile
	if b, err := os.ReadFile(filepath.Join(dir, "a.key")); err != nil || json.Unmarshal(b, &f) != nil || !f.AllSigned || f.UnsignedBefore != nil {
		t.Fatalf("the first key's file %+v (%v); want all_signed, for a store that held no certificate", f, err)
	}
	b := instance(t, st, filepath.Join(dir, "b.key"), t0.Add(24*time.Hour))
	for name, at := range map[string]time.Time{"as issued": t0.Add(time.Minute), "moved before the first key": t0.Add(-time.Hour)} {
		c := stripped(t, st, "cert-1", at)
		for i, svc := range []*consentkit.Service{a, b} {
			if err := integrity(svc, c); !errors.Is(err, consent.ErrIntegrity) {
				t.Errorf("instance %d, created %s: a stripped, changed certificate: %v; want ErrIntegrity", i+1, name, err)
			}
		}
	}
}

// A key made for a store of certificates issued unsigned lets them pass
// unsigned, those created before the key, and no later one.
func TestKeyForAnUnsignedStore(t *testing.T) {
	ctx := context.Background()
	st := teststore.Memory(t)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	old, err := consentkit.NewService(st, consentkit.Config{Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme"}); err != nil {
		t.Fatal(err)
	}
	if _, err := old.AddProperty(ctx, consentkit.PropertyParams{ID: "web", CompanyID: "acme", Name: "Form"}); err != nil {
		t.Fatal(err)
	}
	if _, err := old.StartSession(ctx, consentkit.SessionParams{ID: "s1", CompanyID: "acme", PropertyID: "web"}); err != nil {
		t.Fatal(err)
	}
	c, err := old.IssueCertificate(ctx, consentkit.CertificateParams{ID: "cert-old", CompanyID: "acme", PropertyID: "web", SessionID: "s1",
		Records: []consent.Record{{Text: "I agree"}}})
	if err != nil || len(c.Signature) != 0 {
		t.Fatalf("an unsigned certificate: %v", err)
	}
	path := filepath.Join(t.TempDir(), "k.key")
	svc := instance(t, st, path, t0.Add(time.Hour))
	var f keyFile
	if b, err := os.ReadFile(path); err != nil || json.Unmarshal(b, &f) != nil || f.AllSigned || f.UnsignedBefore == nil || !f.UnsignedBefore.Equal(t0.Add(time.Hour)) {
		t.Fatalf("the key's file %+v (%v); want unsigned_before its making", f, err)
	}
	if err := integrity(svc, c); err != nil {
		t.Errorf("the certificate issued before signing: %v; want it to pass", err)
	}
	later := *c
	later.CreatedAt = t0.Add(2 * time.Hour)
	if err := integrity(svc, &later); !errors.Is(err, consent.ErrIntegrity) {
		t.Errorf("an unsigned certificate created after signing began: %v; want ErrIntegrity", err)
	}
}
