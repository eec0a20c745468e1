package consentkit_test

import (
	"strings"
	"testing"

	"github.com/consentkit/consentkit/consent"
)

// The checked Tx refuses a profile that no grade could read — a name that
// is not a profile's, rules empty or out of their bounds, text that is not
// ValidText — as Invalid, writing nothing; a lookup by a key no row can
// have finds nothing (D51).
func TestCheckedProfiles(t *testing.T) {
	overStores(t, func(t *testing.T, s consent.Store) {
		fixture(t, s)
		rules := consent.ProfileRules{LeadAge: &consent.LeadAgeRule{MaxSeconds: 60}}
		for _, tc := range []struct {
			name string
			p    consent.Profile
		}{
			{"empty name", consent.Profile{CompanyID: "acme", Rules: rules}},
			{"name with a space", consent.Profile{CompanyID: "acme", Name: "a b", Rules: rules}},
			{"name too long", consent.Profile{CompanyID: "acme", Name: strings.Repeat("n", 65), Rules: rules}},
			{"no rule", consent.Profile{CompanyID: "acme", Name: "p"}},
			{"approved text with NUL", consent.Profile{CompanyID: "acme", Name: "p", Rules: consent.ProfileRules{
				ApprovedLanguage: &consent.LanguageRule{Texts: []string{"I agree\x00"}}}}},
			{"brand name of invalid UTF-8", consent.Profile{CompanyID: "acme", Name: "p", Rules: consent.ProfileRules{
				BrandNames: &consent.BrandNamesRule{Names: []string{"Acme\xff"}}}}},
			{"negative lead age", consent.Profile{CompanyID: "acme", Name: "p", Rules: consent.ProfileRules{
				LeadAge: &consent.LeadAgeRule{MaxSeconds: -1}}}},
			{"company id with NUL", consent.Profile{CompanyID: "ac\x00me", Name: "p", Rules: rules}},
		} {
			tc.p.CreatedAt, tc.p.UpdatedAt = t0, t0
			err := s.Update(ctx, func(tx consent.Tx) error { return tx.PutProfile(ctx, &tc.p) })
			if consent.ErrorCode(err) != consent.Invalid {
				t.Errorf("%s: %v, want Invalid", tc.name, err)
			}
		}
		mustView(t, s, func(tx consent.Tx) error {
			if list, err := tx.Profiles(ctx, "acme"); err != nil || len(list) != 0 {
				t.Errorf("profiles after refusals: %v, %v; want none", list, err)
			}
			if list, err := tx.Profiles(ctx, "ac\xffme"); err != nil || list == nil || len(list) != 0 {
				t.Errorf("Profiles(invalid key): %v, %v; want an empty slice", list, err)
			}
			_, err := tx.Profile(ctx, "acme", "p\x00")
			if consent.ErrorCode(err) != consent.NotFound {
				t.Errorf("Profile(invalid key): %v, want NotFound", err)
			}
			return nil
		})
		err := s.Update(ctx, func(tx consent.Tx) error { return tx.DeleteProfile(ctx, "acme\xff", "p") })
		if consent.ErrorCode(err) != consent.NotFound {
			t.Errorf("DeleteProfile(invalid key): %v, want NotFound", err)
		}
	})
}
