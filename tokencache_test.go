package consentkit_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/store/memstore"
)

// countingStore counts read transactions and can hold one open after its
// function ran, as a slow database would.
type countingStore struct {
	consent.Store
	views atomic.Int64
	hold  chan chan struct{} // a View sends a channel here and waits on it
}

func (s *countingStore) View(ctx context.Context, fn func(consent.Tx) error) error {
	s.views.Add(1)
	err := s.Store.View(ctx, fn)
	select {
	case h := <-s.hold:
		<-h
	default:
	}
	return err
}

// services returns two Services on one store, as two instances on one
// database, each with its own clock starting at the same time.
func services(t *testing.T, cfg consentkit.Config) (a, b *consentkit.Service, ca, cb *clock, st *countingStore) {
	t.Helper()
	st = &countingStore{Store: memstore.New(), hold: make(chan chan struct{}, 1)}
	teststore.CloseAtEnd(t, st)
	start := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	ca, cb = &clock{t: start}, &clock{t: start}
	var err error
	cfg.Now = ca.now
	if a, err = consentkit.NewService(st, cfg); err != nil {
		t.Fatal(err)
	}
	cfg.Now = cb.now
	if b, err = consentkit.NewService(st, cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := a.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme"}); err != nil {
		t.Fatal(err)
	}
	return a, b, ca, cb, st
}

// A token that authenticated is not read from the store again within the
// TTL; a revocation through the same Service takes effect at once; one
// through another instance within that instance's TTL, never later.
func TestTokenCache(t *testing.T) {
	a, b, ca, _, st := services(t, consentkit.Config{TokenCacheTTL: 2 * time.Second})
	tok, secret, err := a.IssueToken(ctx, consentkit.TokenParams{CompanyID: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := a.Authenticate(ctx, secret); err != nil {
			t.Fatal(err)
		}
	}
	if n := st.views.Load(); n != 1 {
		t.Errorf("3 authentications read the store %d times, want 1", n)
	}

	// Revoked through b: a trusts its cache for the rest of its TTL …
	if err := b.RevokeToken(ctx, "acme", tok.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Authenticate(ctx, secret); consent.ErrorCode(err) != consent.Unauthorized {
		t.Errorf("b after its own revocation: %v, want Unauthorized", err)
	}
	ca.t = ca.t.Add(1900 * time.Millisecond)
	if _, err := a.Authenticate(ctx, secret); err != nil {
		t.Errorf("a within its TTL of the revocation on b: %v, want its cached token", err)
	}
	// … and not a moment longer.
	ca.t = ca.t.Add(100 * time.Millisecond)
	if _, err := a.Authenticate(ctx, secret); consent.ErrorCode(err) != consent.Unauthorized {
		t.Errorf("a after its TTL: %v, want Unauthorized", err)
	}

	// Revoked through a, after a cached it: refused at once.
	tok2, secret2, err := a.IssueToken(ctx, consentkit.TokenParams{CompanyID: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Authenticate(ctx, secret2); err != nil {
		t.Fatal(err)
	}
	if err := a.RevokeToken(ctx, "acme", tok2.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Authenticate(ctx, secret2); consent.ErrorCode(err) != consent.Unauthorized {
		t.Errorf("a after its own revocation: %v, want Unauthorized at once", err)
	}
}

// A cached token that expires stops authenticating when it expires, not at
// the end of the TTL.
func TestTokenCacheExpiry(t *testing.T) {
	a, _, ca, _, _ := services(t, consentkit.Config{TokenCacheTTL: time.Hour})
	_, secret, err := a.IssueToken(ctx, consentkit.TokenParams{CompanyID: "acme", ExpiresAt: ca.t.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Authenticate(ctx, secret); err != nil {
		t.Fatal(err)
	}
	ca.t = ca.t.Add(time.Minute)
	if _, err := a.Authenticate(ctx, secret); consent.ErrorCode(err) != consent.Unauthorized {
		t.Errorf("after expiry: %v, want Unauthorized", err)
	}
}

// A request that read the token before a revocation on the same Service
// committed may still pass (it began first), but leaves nothing cached:
// the next request is refused.
func TestTokenCacheRevocationDuringRead(t *testing.T) {
	a, _, _, _, st := services(t, consentkit.Config{TokenCacheTTL: time.Hour})
	tok, secret, err := a.IssueToken(ctx, consentkit.TokenParams{CompanyID: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	st.hold <- release
	done := make(chan error)
	go func() { _, err := a.Authenticate(ctx, secret); done <- err }()
	for len(st.hold) > 0 { // the read took the hold: it has the token
		time.Sleep(time.Millisecond)
	}
	if err := a.RevokeToken(ctx, "acme", tok.ID); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Errorf("the read begun before the revocation: %v", err)
	}
	if _, err := a.Authenticate(ctx, secret); consent.ErrorCode(err) != consent.Unauthorized {
		t.Errorf("after the revocation: %v, want Unauthorized (a stale entry was cached)", err)
	}
}

// With the cache off, every authentication reads the store.
func TestTokenCacheOff(t *testing.T) {
	a, _, _, _, st := services(t, consentkit.Config{TokenCacheTTL: -1})
	_, secret, err := a.IssueToken(ctx, consentkit.TokenParams{CompanyID: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := a.Authenticate(ctx, secret); err != nil {
			t.Fatal(err)
		}
	}
	if n := st.views.Load(); n != 3 {
		t.Errorf("3 authentications read the store %d times, want 3", n)
	}
}
