package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/consentkit/consentkit/consent"
)

func keyRecord(scope, key string, fp byte, at time.Time) *consent.IdempotencyRecord {
	return &consent.IdempotencyRecord{Scope: scope, Key: key, Fingerprint: consent.Digest{fp},
		CreatedAt: at, ExpiresAt: at.Add(consent.IdempotencyTTL)}
}

// claim claims r in a transaction of its own, and with answer non-nil
// answers it there.
func claim(t *testing.T, s consent.Store, r *consent.IdempotencyRecord, now time.Time, answer []byte) *consent.IdempotencyRecord {
	t.Helper()
	var prior *consent.IdempotencyRecord
	update(t, s, func(tx consent.Tx) error {
		var err error
		if prior, err = tx.ClaimIdempotencyKey(ctx, r, now); err != nil || prior != nil || answer == nil {
			return err
		}
		return tx.AnswerIdempotencyKey(ctx, r.Scope, r.Key, 200, answer)
	})
	return prior
}

// The stored answer of a key comes back byte for byte; a released key, a
// claim rolled back and an expired key are free; scopes are apart; pruning
// removes only expired keys, at most limit at a time (D40).
func testIdempotencyKey(t *testing.T, s consent.Store) {
	for i, body := range [][]byte{[]byte("{\"ok\":true}\n\x00\xff\xfe"), {}} {
		key := fmt.Sprint("k", i)
		if prior := claim(t, s, keyRecord("company:acme", key, 1, t0), t0, body); prior != nil {
			t.Fatalf("a fresh key was found: %+v", prior)
		}
		want := keyRecord("company:acme", key, 1, t0)
		want.Status, want.Body = 200, body
		// A later claim, with another fingerprint, finds the first.
		got := claim(t, s, keyRecord("company:acme", key, 2, t0.Add(time.Hour)), t0.Add(time.Hour), nil)
		if d := cmp.Diff(want, got, opts); d != "" || got != nil && !bytes.Equal(got.Body, body) {
			t.Errorf("claim of a used key (-want +got):\n%s", d)
		}
	}
	// Another scope, the same key: another key.
	if prior := claim(t, s, keyRecord("company:other", "k0", 3, t0), t0, []byte("x")); prior != nil {
		t.Errorf("another scope's k0 was found: %+v", prior)
	}

	// Released: free again.
	update(t, s, func(tx consent.Tx) error {
		if _, err := tx.ClaimIdempotencyKey(ctx, keyRecord("company:acme", "rel", 1, t0), t0); err != nil {
			return err
		}
		return tx.ReleaseIdempotencyKey(ctx, "company:acme", "rel")
	})
	if prior := claim(t, s, keyRecord("company:acme", "rel", 1, t0), t0, nil); prior != nil {
		t.Errorf("a released key was found: %+v", prior)
	}
	update(t, s, func(tx consent.Tx) error { return tx.ReleaseIdempotencyKey(ctx, "company:acme", "none") })

	// Rolled back: nothing kept.
	errBack := errors.New("roll back")
	err := s.Update(ctx, func(tx consent.Tx) error {
		if _, err := tx.ClaimIdempotencyKey(ctx, keyRecord("company:acme", "rb", 1, t0), t0); err != nil {
			return err
		}
		if err := tx.AnswerIdempotencyKey(ctx, "company:acme", "rb", 200, []byte("y")); err != nil {
			return err
		}
		return errBack
	})
	if !errors.Is(err, errBack) {
		t.Fatalf("Update = %v", err)
	}
	if prior := claim(t, s, keyRecord("company:acme", "rb", 1, t0), t0, nil); prior != nil {
		t.Errorf("a key claimed in a rolled-back transaction was found: %+v", prior)
	}

	err = s.Update(ctx, func(tx consent.Tx) error {
		return tx.AnswerIdempotencyKey(ctx, "company:acme", "unknown", 200, nil)
	})
	wantCode(t, "AnswerIdempotencyKey(unknown)", err, consent.NotFound)

	// Expired: replaced by the new claim.
	later := t0.Add(consent.IdempotencyTTL)
	if prior := claim(t, s, keyRecord("company:acme", "k0", 9, later), later, []byte("new")); prior != nil {
		t.Errorf("an expired key was found: %+v", prior)
	}
	if got := claim(t, s, keyRecord("company:acme", "k0", 1, later), later, nil); got == nil || got.Fingerprint != (consent.Digest{9}) || string(got.Body) != "new" {
		t.Errorf("after the replacement: %+v; want the new claim", got)
	}

	// Pruning at later: k1, other's k0, rel and rb expire there (acme's
	// k0 was claimed again at later); limit 3 then the rest.
	var n1, n2, n3 int
	update(t, s, func(tx consent.Tx) (err error) { n1, err = tx.PruneIdempotencyKeys(ctx, later, 3); return err })
	update(t, s, func(tx consent.Tx) (err error) { n2, err = tx.PruneIdempotencyKeys(ctx, later, 3); return err })
	update(t, s, func(tx consent.Tx) (err error) { n3, err = tx.PruneIdempotencyKeys(ctx, later, 3); return err })
	if n1 != 3 || n2 != 1 || n3 != 0 {
		t.Errorf("PruneIdempotencyKeys removed %d, %d, %d; want 3, 1, 0", n1, n2, n3)
	}
	if got := claim(t, s, keyRecord("company:acme", "k0", 1, later), later, nil); got == nil {
		t.Errorf("pruning removed a key that had not expired")
	}
}

// Concurrent transactions claiming one key: exactly one claims it, and
// every other one finds its committed answer — on PostgreSQL because a
// claim waits for the transaction that claimed the key first (D40).
func testConcurrentClaims(t *testing.T, s consent.Store) {
	const n = 8
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		winners []int
		seen    = map[string]int{}
	)
	for i := range n {
		wg.Go(func() {
			err := s.Update(ctx, func(tx consent.Tx) error {
				prior, err := tx.ClaimIdempotencyKey(ctx, keyRecord("company:acme", "race", 1, t0), t0)
				if err != nil {
					return err
				}
				mu.Lock()
				defer mu.Unlock()
				if prior != nil {
					seen[fmt.Sprint(prior.Status, " ", string(prior.Body))]++
					return nil
				}
				winners = append(winners, i)
				return tx.AnswerIdempotencyKey(ctx, "company:acme", "race", 201, []byte(fmt.Sprint("winner ", i)))
			})
			if err != nil {
				t.Errorf("claim %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if len(winners) < 1 {
		t.Fatal("nobody claimed the key")
	}
	// A retried transaction may have claimed first and then found the
	// key: the last winner is the one whose claim committed.
	want := fmt.Sprint("201 winner ", winners[len(winners)-1])
	total := 0
	for answer, k := range seen {
		total += k
		if answer != want {
			t.Errorf("%d claims found %q; want %q", k, answer, want)
		}
	}
	if total+1 != n {
		t.Errorf("%d claims found the key and %d claimed it; want %d and 1", total, len(winners), n-1)
	}
}
