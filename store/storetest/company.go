package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/consentkit/consentkit/consent"
)

func testCompany(t *testing.T, s consent.Store) {
	want := &consent.Company{
		ID: "acme", Name: "Acme Insurance", ThirdPartyVerificationEnabled: true,
		AuthorizedThirdParties: []string{"buyer", "broker:2"}, AttestCertificates: true, CreatedAt: t0,
	}
	update(t, s, func(tx consent.Tx) error { return tx.CreateCompany(ctx, want) })

	wantRead(t, s, consent.Tx.Company, "acme", want, "Company")
	wantNotFound(t, s, consent.Tx.Company, "nobody", "Company(nobody)")

	err := s.Update(ctx, func(tx consent.Tx) error {
		return tx.CreateCompany(ctx, &consent.Company{ID: "acme", Name: "again", CreatedAt: t0})
	})
	wantCode(t, "CreateCompany(duplicate)", err, consent.Conflict)
	if !errors.Is(err, consent.ErrConflict) {
		t.Errorf("errors.Is(%v, ErrConflict) = false", err)
	}

	changed := &consent.Company{ID: "acme", Name: "Acme", AuthorizedThirdParties: nil, CreatedAt: t0}
	update(t, s, func(tx consent.Tx) error { return tx.UpdateCompany(ctx, changed) })
	wantRead(t, s, consent.Tx.Company, "acme", changed, "Company after UpdateCompany")
	attesting := &consent.Company{ID: "acme", Name: "Acme", AttestCertificates: true, CreatedAt: t0}
	update(t, s, func(tx consent.Tx) error { return tx.UpdateCompany(ctx, attesting) })
	wantRead(t, s, consent.Tx.Company, "acme", attesting, "Company after UpdateCompany(AttestCertificates)")
	// A company's thresholds of the bot verdict (D50) round-trip exactly,
	// negative and fractional ones too.
	tuned := &consent.Company{ID: "acme", Name: "Acme", CreatedAt: t0, InsightsRules: consent.InsightsRules{
		MinSecondsOnPage: 0.1 + 0.2, MaxKeysPerMinute: -1, MinKeystrokes: 3, SuspectsForBot: -1, MaxPerHour: 1000000, MaxPerDay: -1000000}}
	update(t, s, func(tx consent.Tx) error { return tx.UpdateCompany(ctx, tuned) })
	wantRead(t, s, consent.Tx.Company, "acme", tuned, "Company after UpdateCompany(InsightsRules)")
	update(t, s, func(tx consent.Tx) error {
		return tx.CreateCompany(ctx, &consent.Company{ID: "tuned", Name: "Tuned", CreatedAt: t0, InsightsRules: tuned.InsightsRules})
	})
	wantRead(t, s, consent.Tx.Company, "tuned", &consent.Company{ID: "tuned", Name: "Tuned", AuthorizedThirdParties: []string{},
		CreatedAt: t0, InsightsRules: tuned.InsightsRules}, "Company created with InsightsRules")
	err = s.Update(ctx, func(tx consent.Tx) error {
		return tx.UpdateCompany(ctx, &consent.Company{ID: "nobody", Name: "x"})
	})
	wantCode(t, "UpdateCompany(nobody)", err, consent.NotFound)

	update(t, s, func(tx consent.Tx) error {
		for _, id := range []string{"b", "B", "a-1", "zz"} {
			if err := tx.CreateCompany(ctx, &consent.Company{ID: id, Name: id, CreatedAt: t0}); err != nil {
				return err
			}
		}
		return nil
	})
	view(t, s, func(tx consent.Tx) error {
		for _, page := range []struct {
			after string
			limit int
			want  []string
		}{
			{"", 3, []string{"B", "a-1", "acme"}}, // byte order
			{"acme", 3, []string{"b", "tuned", "zz"}},
			{"zz", 3, nil},
			{"", 0, nil},
		} {
			got, err := tx.CompanyIDs(ctx, page.after, page.limit)
			if err != nil {
				return err
			}
			wantSame(t, page.want, got, opts, "CompanyIDs(%q, %d)", page.after, page.limit)
		}
		return nil
	})
}

// LockCompany answers NotFound for an unknown company, in an Update and in
// a View, and makes the Updates that take it before they count the
// company's rows and add one take turns: none counts past a cap.
func testLockCompany(t *testing.T, s consent.Store) {
	fixture(t, s)
	for _, run := range []struct {
		name string
		run  func(context.Context, func(consent.Tx) error) error
	}{{"Update", s.Update}, {"View", s.View}} {
		if err := run.run(ctx, func(tx consent.Tx) error { return tx.LockCompany(ctx, "acme") }); err != nil {
			t.Errorf("%s: LockCompany(acme) = %v", run.name, err)
		}
		err := run.run(ctx, func(tx consent.Tx) error { return tx.LockCompany(ctx, "nobody") })
		wantCode(t, run.name+": LockCompany(nobody)", err, consent.NotFound)
	}
	have := len(read(t, s, consent.Tx.Properties, "acme"))
	const n, most = 20, 5
	errFull := consent.Errorf(consent.Invalid, "full")
	// Open the store's connections first (a pool opens them as they are
	// needed), so that the adds below run at once.
	concurrently(n, func(int, func(func())) {
		_ = s.View(ctx, func(consent.Tx) error { time.Sleep(20 * time.Millisecond); return nil })
	})
	concurrently(n, func(w int, locked func(func())) {
		err := s.Update(ctx, func(tx consent.Tx) error {
			if err := tx.LockCompany(ctx, "acme"); err != nil {
				return err
			}
			list, err := tx.Properties(ctx, "acme")
			if err != nil {
				return err
			}
			if len(list) >= have+most {
				return errFull
			}
			// Widen the window between the count and the insert, so that
			// a store whose lock does not hold is caught.
			time.Sleep(2 * time.Millisecond)
			return tx.CreateProperty(ctx, &consent.Property{ID: fmt.Sprintf("locked-%02d", w), CompanyID: "acme", Name: "p", CreatedAt: t0})
		})
		if err != nil && !errors.Is(err, errFull) {
			locked(func() { t.Errorf("Update %d: %v", w, err) })
		}
	})
	if got := len(read(t, s, consent.Tx.Properties, "acme")); got != have+most {
		t.Errorf("acme holds %d properties after %d concurrent locked adds; want %d", got, n, have+most)
	}
}

func testProperty(t *testing.T, s consent.Store) {
	update(t, s, func(tx consent.Tx) error {
		return tx.CreateCompany(ctx, &consent.Company{ID: "acme", Name: "Acme", CreatedAt: t0})
	})
	want := &consent.Property{ID: "acme-web", CompanyID: "acme", Name: "Quote form", CreatedAt: t0}
	update(t, s, func(tx consent.Tx) error { return tx.CreateProperty(ctx, want) })
	wantRead(t, s, consent.Tx.Property, "acme-web", want, "Property")
	wantNotFound(t, s, consent.Tx.Property, "nothing", "Property(nothing)")
	err := s.Update(ctx, func(tx consent.Tx) error { return tx.CreateProperty(ctx, want) })
	wantCode(t, "CreateProperty(duplicate)", err, consent.Conflict)
	err = s.Update(ctx, func(tx consent.Tx) error {
		return tx.CreateProperty(ctx, &consent.Property{ID: "p2", CompanyID: "nobody", Name: "x", CreatedAt: t0})
	})
	wantCode(t, "CreateProperty(unknown company)", err, consent.NotFound)
}

func testProperties(t *testing.T, s consent.Store) {
	fixture(t, s) // acme-web and other-web, at t0
	early := &consent.Property{ID: "p-early", CompanyID: "acme", Name: "Early", AllowedOrigins: []string{"https://acme.example"},
		CreatedAt: t0.Add(-time.Hour)}
	tieB := &consent.Property{ID: "acme-B", CompanyID: "acme", Name: "Same time, upper-case id", CreatedAt: t0}
	late := &consent.Property{ID: "a-late", CompanyID: "acme", Name: "Late", CreatedAt: t0.Add(time.Hour)}
	update(t, s, func(tx consent.Tx) error {
		for _, p := range []*consent.Property{late, tieB, early} {
			if err := tx.CreateProperty(ctx, p); err != nil {
				return err
			}
		}
		return nil
	})
	web := &consent.Property{ID: "acme-web", CompanyID: "acme", Name: "Form", CreatedAt: t0}
	view(t, s, func(tx consent.Tx) error {
		got, err := tx.Properties(ctx, "acme")
		if err != nil {
			return err
		}
		// Oldest first; at one time, ids byte by byte ("B" before "w").
		wantSame(t, []*consent.Property{early, tieB, web, late}, got, opts, "Properties(acme)")
		got, err = tx.Properties(ctx, "other")
		if err != nil || len(got) != 1 || got[0].ID != "other-web" {
			t.Errorf("Properties(other) = %v, %v; want other-web alone", got, err)
		}
		got, err = tx.Properties(ctx, "nobody")
		if err != nil || got == nil || len(got) != 0 {
			t.Errorf("Properties(nobody) = %#v, %v; want an empty slice", got, err)
		}
		return nil
	})
}

func testToken(t *testing.T, s consent.Store) {
	fixture(t, s)
	active := &consent.Token{
		ID: "tok_1", CompanyID: "acme", Digest: consent.DigestOf("secret-1"),
		Permissions: []consent.Permission{consent.PermissionRetention}, CreatedAt: t0,
	}
	expired := &consent.Token{
		ID: "tok_2", CompanyID: "acme", Digest: consent.DigestOf("secret-2"),
		ExpiresAt: t0.Add(time.Hour), CreatedAt: t0,
	}
	update(t, s, func(tx consent.Tx) error {
		if err := tx.CreateToken(ctx, active); err != nil {
			return err
		}
		return tx.CreateToken(ctx, expired)
	})
	view(t, s, func(tx consent.Tx) error {
		for _, want := range []*consent.Token{active, expired} {
			got, err := tx.TokenByDigest(ctx, want.Digest)
			if err != nil {
				return err
			}
			wantSame(t, want, got, opts, "TokenByDigest")
		}
		_, err := tx.TokenByDigest(ctx, consent.DigestOf("unknown"))
		wantCode(t, "TokenByDigest(unknown)", err, consent.NotFound)
		return nil
	})

	for name, tok := range map[string]*consent.Token{
		"same id":     {ID: "tok_1", CompanyID: "acme", Digest: consent.DigestOf("secret-3"), CreatedAt: t0},
		"same digest": {ID: "tok_3", CompanyID: "acme", Digest: consent.DigestOf("secret-1"), CreatedAt: t0},
	} {
		err := s.Update(ctx, func(tx consent.Tx) error { return tx.CreateToken(ctx, tok) })
		wantCode(t, "CreateToken("+name+")", err, consent.Conflict)
	}
	err := s.Update(ctx, func(tx consent.Tx) error {
		return tx.CreateToken(ctx, &consent.Token{ID: "tok_4", CompanyID: "nobody", Digest: consent.DigestOf("s4"), CreatedAt: t0})
	})
	wantCode(t, "CreateToken(unknown company)", err, consent.NotFound)

	// Revocation is visible, keeps its first time, and is only by the owner.
	revoked := t0.Add(2 * time.Hour)
	update(t, s, func(tx consent.Tx) error { return tx.RevokeToken(ctx, "acme", "tok_1", revoked) })
	update(t, s, func(tx consent.Tx) error { return tx.RevokeToken(ctx, "acme", "tok_1", revoked.Add(time.Hour)) })
	err = s.Update(ctx, func(tx consent.Tx) error { return tx.RevokeToken(ctx, "other", "tok_2", revoked) })
	wantCode(t, "RevokeToken(other company's token)", err, consent.NotFound)
	err = s.Update(ctx, func(tx consent.Tx) error { return tx.RevokeToken(ctx, "acme", "tok_9", revoked) })
	wantCode(t, "RevokeToken(unknown)", err, consent.NotFound)
	view(t, s, func(tx consent.Tx) error {
		got, err := tx.TokenByDigest(ctx, active.Digest)
		if err != nil {
			return err
		}
		if !got.RevokedAt.Equal(revoked) {
			t.Errorf("RevokedAt = %v, want %v (the first revocation)", got.RevokedAt, revoked)
		}
		if got.Active(revoked) {
			t.Error("revoked token is active")
		}
		other, err := tx.TokenByDigest(ctx, expired.Digest)
		if err != nil {
			return err
		}
		if !other.RevokedAt.IsZero() {
			t.Errorf("token of another company's failed revocation has RevokedAt %v", other.RevokedAt)
		}
		return nil
	})
}

func testTokens(t *testing.T, s consent.Store) {
	fixture(t, s)
	first := &consent.Token{ID: "tok_b", CompanyID: "acme", Digest: consent.DigestOf("secret-b"),
		Permissions: []consent.Permission{consent.PermissionRetention}, CreatedAt: t0}
	tie := &consent.Token{ID: "tok_a", CompanyID: "acme", Digest: consent.DigestOf("secret-a"),
		ExpiresAt: t0.Add(time.Hour), CreatedAt: t0}
	revoked := &consent.Token{ID: "tok_0", CompanyID: "acme", Digest: consent.DigestOf("secret-0"), CreatedAt: t0.Add(time.Minute)}
	others := &consent.Token{ID: "tok_o", CompanyID: "other", Digest: consent.DigestOf("secret-o"), CreatedAt: t0}
	update(t, s, func(tx consent.Tx) error {
		for _, tok := range []*consent.Token{revoked, first, others, tie} {
			if err := tx.CreateToken(ctx, tok); err != nil {
				return err
			}
		}
		return tx.RevokeToken(ctx, "acme", "tok_0", t0.Add(2*time.Minute))
	})
	revoked.RevokedAt = t0.Add(2 * time.Minute)
	wantRead(t, s, consent.Tx.Tokens, "acme", []*consent.Token{tie, first, revoked}, "Tokens(acme)")
	view(t, s, func(tx consent.Tx) error {
		got, err := tx.Tokens(ctx, "nobody")
		if err != nil || got == nil || len(got) != 0 {
			t.Errorf("Tokens(nobody) = %#v, %v; want an empty slice", got, err)
		}
		return nil
	})
}
