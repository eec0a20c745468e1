package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/consentkit/consentkit/consent"
)

// fullProfile returns a profile of the company holding every rule, its
// texts and numbers chosen to survive a round trip only if kept exactly.
func fullProfile(company, name string, at time.Time) *consent.Profile {
	return &consent.Profile{CompanyID: company, Name: name, CreatedAt: at, UpdatedAt: at, Rules: consent.ProfileRules{
		ApprovedLanguage: &consent.LanguageRule{Texts: []string{"I agree to {{*}} calls from Acme.", "Ja, ich stimme zu – 🙂\tbitte"}},
		BrandNames:       &consent.BrandNamesRule{Names: []string{"Acme"}, Miss: consent.Miss{OnMiss: consent.MissWarn}},
		Legibility:       &consent.LegibilityRule{MinFontSizePx: 12.5, MinContrast: 4.5},
		OptInMethods:     &consent.OptInMethodsRule{Allowed: []string{consent.OptInManual}},
		Attestation:      &consent.AttestationRule{Miss: consent.Miss{OnMiss: consent.MissFail}},
		LeadAge:          &consent.LeadAgeRule{MaxSeconds: 86400},
		Verdicts:         &consent.VerdictsRule{Refused: []string{"bot", "suspect"}},
	}}
}

func profileNames(list []*consent.Profile) []string {
	names := []string{}
	for _, p := range list {
		names = append(names, p.Name)
	}
	return names
}

func testProfile(t *testing.T, s consent.Store) {
	fixture(t, s)
	full := fullProfile("acme", "strict", t0)
	lean := &consent.Profile{CompanyID: "acme", Name: "B-lean", CreatedAt: t0, UpdatedAt: t0,
		Rules: consent.ProfileRules{LeadAge: &consent.LeadAgeRule{MaxSeconds: 60}}}
	theirs := fullProfile("other", "strict", t0.Add(time.Hour))
	update(t, s, func(tx consent.Tx) error {
		for _, p := range []*consent.Profile{full, theirs, lean} {
			if err := tx.PutProfile(ctx, p); err != nil {
				return err
			}
		}
		return nil
	})
	view(t, s, func(tx consent.Tx) error {
		got, err := tx.Profile(ctx, "acme", "strict")
		if err != nil {
			t.Errorf("Profile: %v", err)
		}
		wantSame(t, full, got, opts, "Profile(acme, strict)")
		got, err = tx.Profile(ctx, "other", "strict")
		if err != nil {
			t.Errorf("Profile: %v", err)
		}
		wantSame(t, theirs, got, opts, "Profile(other, strict)")
		list, err := tx.Profiles(ctx, "acme")
		if err != nil {
			t.Errorf("Profiles(acme): %v", err)
		}
		// Byte order: upper case before lower case.
		wantSame(t, []string{"B-lean", "strict"}, profileNames(list), opts, "Profiles(acme) names")
		if list, err := tx.Profiles(ctx, "nobody"); err != nil || list == nil || len(list) != 0 {
			t.Errorf("Profiles(nobody) = %v, %v; want an empty slice", list, err)
		}
		_, err = tx.Profile(ctx, "acme", "none")
		wantCode(t, "Profile(none)", err, consent.NotFound)
		_, err = tx.Profile(ctx, "acme", "STRICT")
		wantCode(t, "Profile(STRICT): names are compared exactly", err, consent.NotFound)
		return nil
	})

	// Put again replaces every field, in the company's profile only.
	replaced := &consent.Profile{CompanyID: "acme", Name: "strict", CreatedAt: t0, UpdatedAt: t0.Add(2 * time.Hour),
		Rules: consent.ProfileRules{OptInMethods: &consent.OptInMethodsRule{Allowed: []string{consent.OptInPreSelected}}}}
	update(t, s, func(tx consent.Tx) error { return tx.PutProfile(ctx, replaced) })
	view(t, s, func(tx consent.Tx) error {
		got, err := tx.Profile(ctx, "acme", "strict")
		if err != nil {
			t.Errorf("Profile: %v", err)
		}
		wantSame(t, replaced, got, opts, "Profile after replacing")
		got, err = tx.Profile(ctx, "other", "strict")
		if err != nil {
			t.Errorf("Profile: %v", err)
		}
		wantSame(t, theirs, got, opts, "another company's profile of the same name")
		return nil
	})
	err := s.Update(ctx, func(tx consent.Tx) error { return tx.PutProfile(ctx, fullProfile("nobody", "x", t0)) })
	wantCode(t, "PutProfile(unknown company)", err, consent.NotFound)

	// Delete, only through the profile's company.
	err = s.Update(ctx, func(tx consent.Tx) error { return tx.DeleteProfile(ctx, "acme", "none") })
	wantCode(t, "DeleteProfile(none)", err, consent.NotFound)
	update(t, s, func(tx consent.Tx) error { return tx.DeleteProfile(ctx, "acme", "strict") })
	view(t, s, func(tx consent.Tx) error {
		list, err := tx.Profiles(ctx, "acme")
		if err != nil {
			t.Errorf("Profiles(acme): %v", err)
		}
		wantSame(t, []string{"B-lean"}, profileNames(list), opts, "Profiles(acme) after delete")
		if _, err := tx.Profile(ctx, "other", "strict"); err != nil {
			t.Errorf("another company's profile after delete: %v", err)
		}
		return nil
	})
}

func testProfileRollsBack(t *testing.T, s consent.Store) {
	fixture(t, s)
	kept := fullProfile("acme", "kept", t0)
	update(t, s, func(tx consent.Tx) error { return tx.PutProfile(ctx, kept) })
	err := s.Update(ctx, func(tx consent.Tx) error {
		if err := tx.PutProfile(ctx, fullProfile("acme", "new", t0)); err != nil {
			return err
		}
		if err := tx.PutProfile(ctx, &consent.Profile{CompanyID: "acme", Name: "kept", CreatedAt: t0, UpdatedAt: t0,
			Rules: consent.ProfileRules{LeadAge: &consent.LeadAgeRule{MaxSeconds: 1}}}); err != nil {
			return err
		}
		if err := tx.DeleteProfile(ctx, "acme", "kept"); err != nil {
			return err
		}
		return errBoom
	})
	if !errors.Is(err, errBoom) {
		t.Fatalf("Update = %v, want boom", err)
	}
	view(t, s, func(tx consent.Tx) error {
		list, err := tx.Profiles(ctx, "acme")
		if err != nil {
			t.Errorf("Profiles: %v", err)
		}
		wantSame(t, []*consent.Profile{kept}, list, opts, "profiles after rollback")
		return nil
	})
}
