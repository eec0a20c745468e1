package consentkit_test

import (
	"strings"
	"testing"

	"github.com/consentkit/consentkit/consent"
)

// The checked Tx refuses a profile that no store may keep alike — a name
// that is not a profile's, rules that are not a JSON object of bounded
// ValidText — as Invalid, writing nothing; a lookup by a key no row can
// have finds nothing (D51). What the rules say is package profile's.
func TestCheckedProfiles(t *testing.T) {
	overStores(t, func(t *testing.T, s consent.Store) {
		fixture(t, s)
		rules := []byte(`{"lead_age":{"max_seconds":60}}`)
		for _, tc := range []struct {
			name string
			p    consent.Profile
		}{
			{"empty name", consent.Profile{CompanyID: "acme", Rules: rules}},
			{"name with a space", consent.Profile{CompanyID: "acme", Name: "a b", Rules: rules}},
			{"name too long", consent.Profile{CompanyID: "acme", Name: strings.Repeat("n", 65), Rules: rules}},
			{"no rules", consent.Profile{CompanyID: "acme", Name: "p"}},
			{"rules not JSON", consent.Profile{CompanyID: "acme", Name: "p", Rules: []byte(`{"lead_age":`)}},
			{"rules not an object", consent.Profile{CompanyID: "acme", Name: "p", Rules: []byte(`["lead_age"]`)}},
			{"rules null", consent.Profile{CompanyID: "acme", Name: "p", Rules: []byte(`null`)}},
			{"rules with NUL", consent.Profile{CompanyID: "acme", Name: "p", Rules: []byte("{\"a\":\"\x00\"}")}},
			{"rules of invalid UTF-8", consent.Profile{CompanyID: "acme", Name: "p", Rules: []byte("{\"a\":\"\xff\"}")}},
			{"rules too long", consent.Profile{CompanyID: "acme", Name: "p",
				Rules: []byte(`{"a":"` + strings.Repeat("x", consent.MaxProfileRules) + `"}`)}},
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
