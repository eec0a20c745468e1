package main

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/signed"
)

// keyFile is how the server keeps its certificate signing key (D41): the
// key's id and the 32-byte Ed25519 seed in base64, in a file only its owner
// may read.
type keyFile struct {
	KeyID      string    `json:"key_id"`
	PrivateKey string    `json:"private_key"`
	CreatedAt  time.Time `json:"created_at"` // when the key was made
	// UnsignedBefore is when signing began in the store, as the store
	// stood when the key was made: certificates created before it carry
	// no signature and still pass the signature check
	// (consentkit.Config.UnsignedBefore). AllSigned instead when the store
	// held no certificate then: none passes unsigned. A file with neither
	// (written before they were kept) counts CreatedAt.
	UnsignedBefore *time.Time `json:"unsigned_before,omitempty"`
	AllSigned      bool       `json:"all_signed,omitempty"`
}

// unsignedBefore is the time before which unsigned certificates pass, as
// the file says; zero: none.
func (f *keyFile) unsignedBefore() time.Time {
	switch {
	case f.AllSigned:
		return time.Time{}
	case f.UnsignedBefore != nil:
		return f.UnsignedBefore.UTC()
	}
	return f.CreatedAt.UTC()
}

// SigningKeyEnv, when set, holds the signing key itself, as the JSON of a
// key file ({"key_id":…,"private_key":…,"created_at":…}): for deployments
// that pass secrets in the environment. It wins over any file, and nothing
// is written.
const SigningKeyEnv = "CONSENTKIT_SIGNING_KEY"

// signingKeyPath is where the signing key is kept: -signing-key, else
// beside the SQLite file, else consentkit-signing.key in the working
// directory (Postgres); "" for the memory store, whose key lives as long as
// its data.
func signingKeyPath(o *options) string {
	switch {
	case o.signingKey != "":
		return o.signingKey
	case o.store == "sqlite":
		return o.dsn + ".signing-key"
	case o.store == "postgres":
		return "consentkit-signing.key"
	}
	return ""
}

// loadSigningKey reads the key at path, or makes one and keeps it there on
// first start (created says so), and returns the time before which
// unsigned certificates pass (zero: none): the file's, or, for a key made
// now, began's, which reads the store. An empty path makes a key kept
// nowhere.
func loadSigningKey(path string, now time.Time, began func() (time.Time, error)) (key signed.SigningKey, since time.Time, created bool, err error) {
	now = now.UTC()
	// The id names the day and a random part: instances that each make a
	// key of their own never make two keys of one id (D41), and each
	// verifies the others' certificates through the keys in the store.
	id := consent.NewID("key-" + now.Format("20060102"))
	if path == "" {
		if key, err = signed.NewSigningKey(id); err != nil {
			return key, since, false, err
		}
		since, err = began()
		return key, since, true, err
	}
	b, err := os.ReadFile(path)
	if err == nil {
		key, since, err = parseKey(b, path)
		return key, since, false, err
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return key, since, false, err
	}
	if key, err = signed.NewSigningKey(id); err != nil {
		return key, since, false, err
	}
	if since, err = began(); err != nil {
		return key, since, false, err
	}
	kf := keyFile{KeyID: key.ID, PrivateKey: base64.StdEncoding.EncodeToString(key.Private.Seed()), CreatedAt: now, AllSigned: since.IsZero()}
	if !since.IsZero() {
		kf.UnsignedBefore = &since
	}
	b, _ = json.MarshalIndent(kf, "", "  ")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return key, since, false, fmt.Errorf("keep the new signing key: %w", err)
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		// A partial key file must not be read as a key; one that cannot be
		// removed is named in the error.
		if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = fmt.Errorf("%w (and removing %s: %w)", err, path, rerr)
		}
		return key, since, false, fmt.Errorf("keep the new signing key: %w", err)
	}
	return key, since, true, nil
}

// parseKey reads a key file's JSON; where names it in errors.
func parseKey(b []byte, where string) (signed.SigningKey, time.Time, error) {
	var f keyFile
	if err := json.Unmarshal(b, &f); err != nil {
		return signed.SigningKey{}, time.Time{}, fmt.Errorf("signing key %s: %w", where, err)
	}
	seed, err := base64.StdEncoding.DecodeString(f.PrivateKey)
	if err != nil || len(seed) != ed25519.SeedSize {
		return signed.SigningKey{}, time.Time{}, fmt.Errorf("signing key %s: private_key is not the base64 of a 32-byte Ed25519 seed", where)
	}
	if !consent.ValidID(f.KeyID) {
		return signed.SigningKey{}, time.Time{}, fmt.Errorf("signing key %s: key_id %q is not an identifier", where, f.KeyID)
	}
	return signed.SigningKey{ID: f.KeyID, Private: ed25519.NewKeyFromSeed(seed)}, f.unsignedBefore(), nil
}

// signingBegan is when certificates began to be signed in st, read when a
// key is made for it: the time of its first published key, or now when it
// has none, when st holds certificates created before then (issued
// unsigned); else zero: none of st's certificates was issued unsigned, and
// none is let pass unsigned.
func signingBegan(ctx context.Context, st *consentkit.Service, now time.Time) (time.Time, error) {
	var began time.Time
	err := st.Store().View(ctx, func(tx consent.Tx) error {
		keys, err := tx.PublishedKeys(ctx) // oldest first
		if err != nil {
			return err
		}
		first := now.UTC()
		if len(keys) > 0 {
			first = keys[0].CreatedAt.UTC()
		}
		for after := ""; ; {
			ids, err := tx.CompanyIDs(ctx, after, consent.MaxPage)
			if err != nil || len(ids) == 0 {
				return err
			}
			for _, id := range ids {
				page, err := tx.CertificatePage(ctx, consent.Page{CompanyID: id, Until: first, Limit: 1})
				if err != nil {
					return err
				}
				if len(page) > 0 {
					began = first
					return nil
				}
			}
			after = ids[len(ids)-1]
		}
	})
	return began, err
}

// notAfterFirstKey returns since, or the time of st's first published key
// when that is earlier: an instance whose key was made after another began
// signing in the store lets pass unsigned only what was created before
// that. Zero (none passes unsigned) stays zero. A key published in the
// store can only make it earlier, never later.
func notAfterFirstKey(ctx context.Context, st *consentkit.Service, since time.Time) (time.Time, error) {
	if since.IsZero() {
		return since, nil
	}
	err := st.Store().View(ctx, func(tx consent.Tx) error {
		keys, err := tx.PublishedKeys(ctx)
		if err == nil && len(keys) > 0 && keys[0].CreatedAt.Before(since) {
			since = keys[0].CreatedAt.UTC()
		}
		return err
	})
	return since, err
}
