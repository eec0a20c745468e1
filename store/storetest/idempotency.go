package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/consentkit/consentkit/consent"
)

// The stored answer of a key comes back byte for byte; a released key, a
// claim rolled back and an expired key are free; scopes are apart; pruning
// removes only expired keys, at most limit at a time (D40).
func testIdempotencyKey(t *testing.T, s consent.Store) {
	// A body that is not UTF-8, and an empty one.
	first := notText()
	for i, body := range [][]byte{first, {}} {
		key := fmt.Sprint("k", i)
		if prior := claim(t, s, keyRecord("company:acme", key, 1, t0), t0, body); prior != nil {
			t.Fatalf("a fresh key was found: %+v", prior)
		}
		want := keyRecord("company:acme", key, 1, t0)
		want.Status, want.Body = 200, body
		// A later claim, with another fingerprint, finds the first.
		got := claim(t, s, keyRecord("company:acme", key, 2, t0.Add(time.Hour)), t0.Add(time.Hour), nil)
		wantSame(t, want, got, opts, "claim of a used key")
		if got != nil && !bytes.Equal(got.Body, body) {
			t.Errorf("claim of a used key: body %q, want %q", got.Body, body)
		}
	}
	// Another scope, the same key: another key.
	if prior := claim(t, s, keyRecord("company:other", "k0", 3, t0), t0, []byte("x")); prior != nil {
		t.Errorf("another scope's k0 was found: %+v", prior)
	}
	for _, w := range []struct {
		scope string
		fp    byte
		body  string
	}{{"company:acme", 1, string(first)}, {"company:other", 3, "x"}} {
		got := claim(t, s, keyRecord(w.scope, "k0", 7, t0), t0, nil)
		if got == nil || got.Scope != w.scope || got.Fingerprint != (consent.Digest{w.fp}) || string(got.Body) != w.body {
			t.Errorf("%s's k0 = %+v; want its own record", w.scope, got)
		}
	}

	// The caller's slices are its own: changing the body it answered with,
	// or the one it got back, changes nothing stored. (Claimed an hour
	// later, this key outlives the pruning below.)
	hour := t0.Add(time.Hour)
	mine := []byte("abc")
	claim(t, s, keyRecord("company:acme", "alias", 1, hour), hour, mine)
	mine[0] = 'X'
	got := claim(t, s, keyRecord("company:acme", "alias", 1, hour), hour, nil)
	if got == nil || string(got.Body) != "abc" {
		t.Fatalf("after changing the answered body: %+v", got)
	}
	got.Body[0] = 'Y'
	if got := claim(t, s, keyRecord("company:acme", "alias", 1, hour), hour, nil); got == nil || string(got.Body) != "abc" {
		t.Errorf("after changing a returned body: %+v", got)
	}

	// A View cannot claim.
	err := s.View(ctx, func(tx consent.Tx) error {
		_, err := tx.ClaimIdempotencyKey(ctx, keyRecord("company:acme", "view", 1, hour), hour)
		return err
	})
	if err == nil {
		t.Error("ClaimIdempotencyKey inside View succeeded")
	}
	if prior := claim(t, s, keyRecord("company:acme", "view", 1, hour), hour, []byte("v")); prior != nil {
		t.Errorf("a key claimed in a View was found: %+v", prior)
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
	err = s.Update(ctx, func(tx consent.Tx) error {
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
	for _, key := range []string{"k0", "alias", "view"} {
		if got := claim(t, s, keyRecord("company:acme", key, 1, later), later, nil); got == nil {
			t.Errorf("pruning removed %s, which had not expired", key)
		}
	}
	if prior := claim(t, s, keyRecord("company:acme", "k1", 1, later), later, nil); prior != nil {
		t.Errorf("a pruned key was found: %+v", prior)
	}
}

// Concurrent transactions claiming one key: exactly one claims it, and
// every other one finds its committed answer — on PostgreSQL because a
// claim waits for the transaction that claimed the key first (D40).
func testConcurrentClaims(t *testing.T, s consent.Store) {
	const n = 8
	var (
		winners []int
		seen    = map[string]int{}
	)
	concurrently(n, func(i int, locked func(func())) {
		err := s.Update(ctx, func(tx consent.Tx) error {
			prior, err := tx.ClaimIdempotencyKey(ctx, keyRecord("company:acme", "race", 1, t0), t0)
			if err != nil {
				return err
			}
			won := false
			locked(func() {
				if prior != nil {
					seen[fmt.Sprint(prior.Status, " ", string(prior.Body))]++
				} else {
					winners, won = append(winners, i), true
				}
			})
			if !won {
				return nil
			}
			return tx.AnswerIdempotencyKey(ctx, "company:acme", "race", 201, []byte(fmt.Sprint("winner ", i)))
		})
		if err != nil {
			t.Errorf("claim %d: %v", i, err)
		}
	})
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
