package consentkit_test

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/consentkit/consentkit/consent"
)

// TestCheckedInsightsRules: a company's thresholds of the bot verdict (D50)
// that are not finite or beyond ±1,000,000 are Invalid, naming the field,
// on CreateCompany and UpdateCompany, and nothing is written; the bounds
// themselves and negative thresholds (a rule turned off) are kept.
func TestCheckedInsightsRules(t *testing.T) {
	t.Parallel()
	overStores(t, func(t *testing.T, s consent.Store) {
		fixture(t, s)
		for _, c := range []struct {
			field string
			rules consent.InsightsRules
		}{
			{"min_seconds_on_page", consent.InsightsRules{MinSecondsOnPage: math.NaN()}},
			{"min_seconds_on_page", consent.InsightsRules{MinSecondsOnPage: math.Inf(1)}},
			{"max_keys_per_minute", consent.InsightsRules{MaxKeysPerMinute: math.Inf(-1)}},
			{"max_keys_per_minute", consent.InsightsRules{MaxKeysPerMinute: 1e6 + 0.5}},
			{"min_keystrokes", consent.InsightsRules{MinKeystrokes: 1e6 + 1}},
			{"suspects_for_bot", consent.InsightsRules{SuspectsForBot: -1e6 - 1}},
			{"max_per_hour", consent.InsightsRules{MaxPerHour: math.MaxInt}},
			{"max_per_day", consent.InsightsRules{MaxPerDay: math.MinInt}},
		} {
			name := fmt.Sprintf("%s=%+v", c.field, c.rules)
			for what, write := range map[string]func(tx consent.Tx) error{
				"CreateCompany": func(tx consent.Tx) error {
					return tx.CreateCompany(ctx, &consent.Company{ID: "co-bad", Name: "x", CreatedAt: t0, InsightsRules: c.rules})
				},
				"UpdateCompany": func(tx consent.Tx) error {
					return tx.UpdateCompany(ctx, &consent.Company{ID: "acme", Name: "acme", CreatedAt: t0, InsightsRules: c.rules})
				},
			} {
				err := s.Update(ctx, write)
				wantCode(t, what+"("+name+")", err, consent.Invalid)
				if err != nil && !strings.Contains(err.Error(), c.field) {
					t.Errorf("%s(%s) = %v, want it to name %s", what, name, err, c.field)
				}
			}
		}
		mustView(t, s, func(tx consent.Tx) error {
			if _, err := tx.Company(ctx, "co-bad"); err == nil {
				t.Error("a company with refused rules was created")
			}
			c, err := tx.Company(ctx, "acme")
			if err == nil && c.InsightsRules != (consent.InsightsRules{}) {
				t.Errorf("acme's rules = %+v after refused updates, want the defaults", c.InsightsRules)
			}
			return err
		})
		edge := consent.InsightsRules{MinSecondsOnPage: -1e6, MaxKeysPerMinute: 1e6, MinKeystrokes: -1,
			SuspectsForBot: 1e6, MaxPerHour: -1e6, MaxPerDay: 1e6}
		mustUpdate(t, s, func(tx consent.Tx) error {
			return tx.UpdateCompany(ctx, &consent.Company{ID: "acme", Name: "acme", CreatedAt: t0, InsightsRules: edge})
		})
	})
}

// TestCheckedVelocity: a certificate without a creation time, or one whose
// day window leaves the times a store keeps, is Invalid.
func TestCheckedVelocity(t *testing.T) {
	t.Parallel()
	overStores(t, func(t *testing.T, s consent.Store) {
		fixture(t, s)
		for name, at := range map[string]time.Time{
			"zero created_at":   {},
			"created_at year 1": time.Date(1, 1, 1, 12, 0, 0, 0, time.UTC),
		} {
			c := newCertificate("cert-v", "acme", "acme-web", "s1")
			c.CreatedAt = at
			wantCode(t, "Velocity("+name+")", s.View(ctx, func(tx consent.Tx) error {
				_, err := tx.Velocity(ctx, c)
				return err
			}), consent.Invalid)
		}
	})
}
