package consent_test

import (
	"math"
	"strings"
	"testing"

	"github.com/consentkit/consentkit/consent"
)

// A profile's rules are checked before they are kept (D51): each refusal
// names its field; a profile of every rule within its bounds passes.
func TestProfileRulesCheck(t *testing.T) {
	ok := consent.ProfileRules{
		ApprovedLanguage: &consent.LanguageRule{Texts: []string{"I agree to {{*}}."}},
		BrandNames:       &consent.BrandNamesRule{Names: []string{"Acme"}, Miss: consent.Miss{OnMiss: consent.MissWarn}},
		Legibility:       &consent.LegibilityRule{MinFontSizePx: 12, MinContrast: 21},
		OptInMethods:     &consent.OptInMethodsRule{Allowed: []string{consent.OptInManual, consent.OptInNone}},
		Attestation:      &consent.AttestationRule{Miss: consent.Miss{OnMiss: consent.MissFail}},
		LeadAge:          &consent.LeadAgeRule{MaxSeconds: 86400},
		Verdicts:         &consent.VerdictsRule{Refused: []string{"bot"}},
	}
	if err := ok.Check(); err != nil {
		t.Fatalf("Check of a valid profile: %v", err)
	}
	tests := []struct {
		field string
		rules consent.ProfileRules
	}{
		{"approved_language.on_miss", consent.ProfileRules{ApprovedLanguage: &consent.LanguageRule{Texts: []string{"x"}, Miss: consent.Miss{OnMiss: "block"}}}},
		{"approved_language.texts", consent.ProfileRules{ApprovedLanguage: &consent.LanguageRule{}}},
		{"approved_language.texts", consent.ProfileRules{ApprovedLanguage: &consent.LanguageRule{Texts: []string{""}}}},
		{"approved_language.texts", consent.ProfileRules{ApprovedLanguage: &consent.LanguageRule{Texts: []string{strings.Repeat("x", consent.MaxApprovedText+1)}}}},
		{"approved_language.texts", consent.ProfileRules{ApprovedLanguage: &consent.LanguageRule{Texts: []string{"a\x00b"}}}},
		{"approved_language.texts", consent.ProfileRules{ApprovedLanguage: &consent.LanguageRule{Texts: make([]string, consent.MaxProfileTexts+1)}}},
		{"brand_names.names", consent.ProfileRules{BrandNames: &consent.BrandNamesRule{Names: []string{strings.Repeat("x", consent.MaxBrandName+1)}}}},
		{"legibility.min_font_size_px", consent.ProfileRules{Legibility: &consent.LegibilityRule{MinFontSizePx: math.NaN()}}},
		{"legibility.min_contrast", consent.ProfileRules{Legibility: &consent.LegibilityRule{MinContrast: 22}}},
		{"legibility.min_contrast", consent.ProfileRules{Legibility: &consent.LegibilityRule{MinContrast: -1}}},
		{"opt_in_methods.allowed", consent.ProfileRules{OptInMethods: &consent.OptInMethodsRule{Allowed: []string{"clicked"}}}},
		{"attestation.on_miss", consent.ProfileRules{Attestation: &consent.AttestationRule{Miss: consent.Miss{OnMiss: "Warn"}}}},
		{"lead_age.max_seconds", consent.ProfileRules{LeadAge: &consent.LeadAgeRule{MaxSeconds: -1}}},
		{"verdicts.refused", consent.ProfileRules{Verdicts: &consent.VerdictsRule{Refused: []string{"robot"}}}},
	}
	for _, tc := range tests {
		err := tc.rules.Check()
		if consent.ErrorCode(err) != consent.Invalid || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("Check of a bad %s: %v, want Invalid naming it", tc.field, err)
		}
	}
}
