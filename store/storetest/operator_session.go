package storetest

import (
	"bytes"
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/consentkit/consentkit/consent"
)

// opSession is the operator session of secret, created three hours before
// t0 and expiring at expires.
func opSession(secret string, expires time.Time) *consent.OperatorSession {
	return &consent.OperatorSession{Digest: consent.DigestOf(secret), CreatedAt: t0.Add(-3 * time.Hour), ExpiresAt: expires}
}

// operatorSession reads the session of secret in a View: nil when there
// is none (NotFound), failing t on any other error.
func operatorSession(t *testing.T, s consent.Store, secret string) *consent.OperatorSession {
	t.Helper()
	var got *consent.OperatorSession
	err := s.View(ctx, func(tx consent.Tx) error {
		var err error
		got, err = tx.OperatorSession(ctx, consent.DigestOf(secret))
		return err
	})
	switch {
	case consent.ErrorCode(err) == consent.NotFound:
		return nil
	case err != nil:
		t.Fatalf("OperatorSession(%q): %v", secret, err)
	}
	return got
}

// testOperatorSession: a session reads back as it was created, in UTC and
// to the microsecond, expired or not, until it is deleted; a taken digest
// is a conflict that changes nothing; an unknown digest, the zero one
// included, is NotFound, and deleting it is no error.
func testOperatorSession(t *testing.T, s consent.Store) {
	zone := time.FixedZone("UTC+5:30", 5*3600+1800)
	in := &consent.OperatorSession{
		Digest:    consent.DigestOf("secret-1"),
		CreatedAt: t0.Add(700 * time.Nanosecond).In(zone),
		ExpiresAt: t0.Add(12*time.Hour + 999*time.Nanosecond).In(zone),
	}
	want := &consent.OperatorSession{Digest: in.Digest, CreatedAt: t0, ExpiresAt: t0.Add(12 * time.Hour)}
	update(t, s, func(tx consent.Tx) error {
		if err := tx.CreateOperatorSession(ctx, in); err != nil {
			return err
		}
		// Read back in the transaction that wrote it.
		got, err := tx.OperatorSession(ctx, in.Digest)
		if err != nil {
			return err
		}
		wantSame(t, want, got, exact, "OperatorSession in the creating transaction")
		return nil
	})
	// The caller's value is its own: changing it changes nothing stored.
	in.ExpiresAt = t0.Add(time.Minute)
	got := operatorSession(t, s, "secret-1")
	wantSame(t, want, got, exact, "OperatorSession")
	if got != nil && (got.CreatedAt.Location() != time.UTC || got.ExpiresAt.Location() != time.UTC) {
		t.Errorf("OperatorSession's times are in %v and %v; want UTC", got.CreatedAt.Location(), got.ExpiresAt.Location())
	}
	// And so is the value returned.
	if got != nil {
		got.ExpiresAt = t0.Add(time.Minute)
	}
	wantSame(t, want, operatorSession(t, s, "secret-1"), exact, "OperatorSession after changing a returned value")

	// A taken digest, even with other times: Conflict, and the first
	// session stays as it was.
	err := s.Update(ctx, func(tx consent.Tx) error {
		return tx.CreateOperatorSession(ctx, opSession("secret-1", t0.Add(48*time.Hour)))
	})
	wantCode(t, "CreateOperatorSession of a taken digest", err, consent.Conflict)
	wantSame(t, want, operatorSession(t, s, "secret-1"), exact, "OperatorSession after the conflict")

	// An expired session is still returned: the caller compares times.
	expired := opSession("secret-old", t0.Add(-time.Hour))
	update(t, s, func(tx consent.Tx) error { return tx.CreateOperatorSession(ctx, expired) })
	wantSame(t, expired, operatorSession(t, s, "secret-old"), exact, "an expired OperatorSession")

	// Unknown digests, the zero one included: NotFound, in View and Update.
	for name, d := range map[string]consent.Digest{"unknown": consent.DigestOf("none"), "zero": {}} {
		for _, run := range []func(context.Context, func(consent.Tx) error) error{s.View, s.Update} {
			err := run(ctx, func(tx consent.Tx) error {
				_, err := tx.OperatorSession(ctx, d)
				return err
			})
			wantCode(t, "OperatorSession of the "+name+" digest", err, consent.NotFound)
		}
	}

	// Deleted: gone; the other session stays. Deleting it again, an
	// unknown digest or the zero one is no error.
	update(t, s, func(tx consent.Tx) error {
		if err := tx.DeleteOperatorSession(ctx, consent.DigestOf("secret-1")); err != nil {
			return err
		}
		if _, err := tx.OperatorSession(ctx, consent.DigestOf("secret-1")); consent.ErrorCode(err) != consent.NotFound {
			t.Errorf("OperatorSession after its deletion, in the deleting transaction: %v; want NotFound", err)
		}
		return nil
	})
	if got := operatorSession(t, s, "secret-1"); got != nil {
		t.Errorf("a deleted session was found: %+v", got)
	}
	if got := operatorSession(t, s, "secret-old"); got == nil {
		t.Error("deleting one session deleted another")
	}
	for name, d := range map[string]consent.Digest{"again": consent.DigestOf("secret-1"), "unknown": consent.DigestOf("none"), "zero": {}} {
		err := s.Update(ctx, func(tx consent.Tx) error { return tx.DeleteOperatorSession(ctx, d) })
		if err != nil {
			t.Errorf("DeleteOperatorSession (%s): %v; want nil", name, err)
		}
	}

	// A deleted digest can be used again.
	update(t, s, func(tx consent.Tx) error {
		return tx.CreateOperatorSession(ctx, opSession("secret-1", t0.Add(time.Hour)))
	})
	wantSame(t, opSession("secret-1", t0.Add(time.Hour)), operatorSession(t, s, "secret-1"), exact, "a session created again after its deletion")
}

// testPruneOperatorSessions: pruning deletes only sessions whose ExpiresAt
// is at or before now (compared to the microsecond), at most limit at a
// time, earliest first, and returns how many; a limit of 0 or less deletes
// nothing, as PruneIdempotencyKeys' does.
func testPruneOperatorSessions(t *testing.T, s consent.Store) {
	expiries := map[string]time.Time{
		"two hours ago":          t0.Add(-2 * time.Hour),
		"an hour ago":            t0.Add(-time.Hour),
		"now":                    t0,
		"a microsecond from now": t0.Add(time.Microsecond),
		"in an hour":             t0.Add(time.Hour),
	}
	update(t, s, func(tx consent.Tx) error {
		for secret, at := range expiries {
			if err := tx.CreateOperatorSession(ctx, opSession(secret, at)); err != nil {
				return err
			}
		}
		return nil
	})
	prune := func(now time.Time, limit int) int {
		t.Helper()
		var n int
		update(t, s, func(tx consent.Tx) (err error) { n, err = tx.PruneOperatorSessions(ctx, now, limit); return err })
		return n
	}
	left := func() []string {
		t.Helper()
		var out []string
		for _, secret := range []string{"two hours ago", "an hour ago", "now", "a microsecond from now", "in an hour"} {
			if operatorSession(t, s, secret) != nil {
				out = append(out, secret)
			}
		}
		return out
	}

	for _, limit := range []int{0, -1, math.MinInt} {
		if n := prune(t0, limit); n != 0 {
			t.Errorf("PruneOperatorSessions(t0, %d) = %d; want 0", limit, n)
		}
	}
	if got := left(); len(got) != 5 {
		t.Errorf("after prunes of limit 0 or less, the sessions left are %q; want all 5", got)
	}
	// now is t0 and 999 ns, kept as t0: the session expiring a
	// microsecond after t0 has not expired. Three have; the earliest two
	// go first.
	now := t0.Add(999 * time.Nanosecond)
	if n := prune(now, 2); n != 2 {
		t.Errorf("the first PruneOperatorSessions(t0+999ns, 2) = %d; want 2", n)
	}
	wantSame(t, []string{"now", "a microsecond from now", "in an hour"}, left(), exact, "after the first prune, the sessions left")
	if n := prune(now, 2); n != 1 {
		t.Errorf("the second PruneOperatorSessions(t0+999ns, 2) = %d; want 1 (the one expiring at t0)", n)
	}
	if n := prune(now, 2); n != 0 {
		t.Errorf("the third PruneOperatorSessions(t0+999ns, 2) = %d; want 0", n)
	}
	wantSame(t, []string{"a microsecond from now", "in an hour"}, left(), exact, "after pruning at t0+999ns, the sessions left")
	// A limit as high as an int goes is no limit.
	if n := prune(t0.Add(time.Hour), math.MaxInt); n != 2 {
		t.Errorf("PruneOperatorSessions(t0+1h, MaxInt) = %d; want 2", n)
	}
	if got := left(); len(got) != 0 {
		t.Errorf("after pruning at t0+1h, the sessions left are %q; want none", got)
	}
}

// testOperatorSessionTimes: the ends of the years 1 to 9999 are kept on
// every store, a session may expire a microsecond after it was created,
// and a prune at the end of the year 9999 takes every session. (A session
// beyond those years, or expiring at or before its creation, is refused by
// the checked Tx before a store sees it: consent's tests.)
func testOperatorSessionTimes(t *testing.T, s consent.Store) {
	taken := opSession("taken", t0.Add(-time.Hour)) // expired
	update(t, s, func(tx consent.Tx) error { return tx.CreateOperatorSession(ctx, taken) })
	// The ends of the years 1 to 9999 are kept, and a session may expire
	// a microsecond after it was created.
	first, last := time.Date(1, 1, 1, 0, 0, 0, 1000, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)
	ends := &consent.OperatorSession{Digest: consent.DigestOf("ends"), CreatedAt: first, ExpiresAt: last}
	short := &consent.OperatorSession{Digest: consent.DigestOf("short"), CreatedAt: t0, ExpiresAt: t0.Add(time.Microsecond)}
	update(t, s, func(tx consent.Tx) error {
		if err := tx.CreateOperatorSession(ctx, ends); err != nil {
			return err
		}
		if err := tx.CreateOperatorSession(ctx, short); err != nil {
			return err
		}
		_, err := tx.PruneOperatorSessions(ctx, first, 10) // nothing expired then
		return err
	})
	wantSame(t, ends, operatorSession(t, s, "ends"), exact, "a session of the years 1 to 9999")
	wantSame(t, short, operatorSession(t, s, "short"), exact, "a session of one microsecond")
	var n int
	update(t, s, func(tx consent.Tx) (err error) { n, err = tx.PruneOperatorSessions(ctx, last, 10); return err })
	if n != 3 {
		t.Errorf("PruneOperatorSessions at the end of the year 9999 = %d; want 3", n)
	}
}

// keptAndExpired creates the operator sessions "kept", which ends in an
// hour, and "expired", which ended an hour ago, and returns them.
func keptAndExpired(t *testing.T, s consent.Store) (kept, expired *consent.OperatorSession) {
	t.Helper()
	kept, expired = opSession("kept", t0.Add(time.Hour)), opSession("expired", t0.Add(-time.Hour))
	update(t, s, func(tx consent.Tx) error {
		if err := tx.CreateOperatorSession(ctx, kept); err != nil {
			return err
		}
		return tx.CreateOperatorSession(ctx, expired)
	})
	return kept, expired
}

// testOperatorSessionRollsBack: what a rolled-back Update did to operator
// sessions — a create, a delete, a prune — is undone.
func testOperatorSessionRollsBack(t *testing.T, s consent.Store) {
	kept, expired := keptAndExpired(t, s)
	errBack := errors.New("roll back")
	err := s.Update(ctx, func(tx consent.Tx) error {
		if err := tx.CreateOperatorSession(ctx, opSession("new", t0.Add(time.Hour))); err != nil {
			return err
		}
		if err := tx.DeleteOperatorSession(ctx, kept.Digest); err != nil {
			return err
		}
		if n, err := tx.PruneOperatorSessions(ctx, t0, 10); err != nil || n != 1 {
			t.Errorf("PruneOperatorSessions in the transaction = %d, %v; want 1", n, err)
		}
		return errBack
	})
	if !errors.Is(err, errBack) {
		t.Fatalf("Update = %v; want its function's error", err)
	}
	if got := operatorSession(t, s, "new"); got != nil {
		t.Errorf("a session created in a rolled-back transaction was kept: %+v", got)
	}
	wantSame(t, kept, operatorSession(t, s, "kept"), exact, "a session deleted in a rolled-back transaction")
	wantSame(t, expired, operatorSession(t, s, "expired"), exact, "a session pruned in a rolled-back transaction")
}

// testOperatorSessionViewIsReadOnly: a View reads operator sessions, and
// refuses to create, delete or prune them, as it refuses every write —
// even a delete or a prune that would find nothing to delete.
func testOperatorSessionViewIsReadOnly(t *testing.T, s consent.Store) {
	kept, _ := keptAndExpired(t, s)
	for name, write := range map[string]func(tx consent.Tx) error{
		"CreateOperatorSession": func(tx consent.Tx) error {
			return tx.CreateOperatorSession(ctx, opSession("ghost", t0.Add(time.Hour)))
		},
		"DeleteOperatorSession": func(tx consent.Tx) error { return tx.DeleteOperatorSession(ctx, kept.Digest) },
		"DeleteOperatorSession of none": func(tx consent.Tx) error {
			return tx.DeleteOperatorSession(ctx, consent.DigestOf("none"))
		},
		"PruneOperatorSessions": func(tx consent.Tx) error {
			_, err := tx.PruneOperatorSessions(ctx, t0, 10)
			return err
		},
		"PruneOperatorSessions with none expired": func(tx consent.Tx) error {
			_, err := tx.PruneOperatorSessions(ctx, t0.Add(-24*time.Hour), 10)
			return err
		},
	} {
		if err := s.View(ctx, write); err == nil {
			t.Errorf("%s inside View succeeded", name)
		}
	}
	view(t, s, func(tx consent.Tx) error {
		if got, err := tx.OperatorSession(ctx, kept.Digest); err != nil || !cmp.Equal(kept, got) {
			t.Errorf("OperatorSession inside View = %+v, %v; want %+v", got, err, kept)
		}
		return nil
	})
	if got := operatorSession(t, s, "ghost"); got != nil {
		t.Errorf("a session created in a View was kept: %+v", got)
	}
	if got := operatorSession(t, s, "expired"); got == nil {
		t.Error("a session pruned in a View is gone")
	}
}

// A published key round-trips, is found by its id, is listed oldest first
// (then by id), and an id is published once: a second key under it, or the
// same key again, is a Conflict.
func testPublishedKeys(t *testing.T, s consent.Store) {
	key := func(id string, b byte, at time.Time) *consent.PublishedKey {
		return &consent.PublishedKey{ID: id, Key: bytes.Repeat([]byte{b}, 32), CreatedAt: at}
	}
	b, a, c := key("key-b", 1, t0), key("key-a", 0, t0), key("key-c", 2, t0.Add(-time.Hour))
	view(t, s, func(tx consent.Tx) error {
		got, err := tx.PublishedKeys(ctx)
		if err != nil || got == nil || len(got) != 0 {
			t.Errorf("PublishedKeys of none: %v, %v; want an empty slice", got, err)
		}
		return nil
	})
	update(t, s, func(tx consent.Tx) error {
		for _, k := range []*consent.PublishedKey{b, a, c} {
			if err := tx.PublishKey(ctx, k); err != nil {
				return err
			}
		}
		return nil
	})
	view(t, s, func(tx consent.Tx) error {
		got, err := tx.PublishedKey(ctx, "key-a")
		wantSame(t, a, got, opts, "PublishedKey(key-a)")
		if err != nil {
			return err
		}
		_, err = tx.PublishedKey(ctx, "key-z")
		wantCode(t, "PublishedKey(unknown)", err, consent.NotFound)
		list, err := tx.PublishedKeys(ctx)
		wantSame(t, []*consent.PublishedKey{c, a, b}, list, opts, "PublishedKeys")
		return err
	})
	for name, k := range map[string]*consent.PublishedKey{"another key": key("key-a", 9, t0), "the same key": a} {
		err := s.Update(ctx, func(tx consent.Tx) error { return tx.PublishKey(ctx, k) })
		wantCode(t, "PublishKey("+name+" under a published id)", err, consent.Conflict)
	}
}
