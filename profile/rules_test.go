package profile_test

import (
	"math"
	"strings"
	"testing"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/profile"
)

// A profile's rules are checked before they are kept (D51): each refusal
// names its field; a profile of every rule within its bounds passes.
func TestProfileRulesCheck(t *testing.T) {
	ok := profile.Rules{
		ApprovedLanguage: &profile.LanguageRule{Texts: []string{"I agree to {{*}}."}},
		BrandNames:       &profile.BrandNamesRule{Names: []string{"Acme"}, Miss: profile.Miss{OnMiss: profile.MissWarn}},
		Legibility:       &profile.LegibilityRule{MinFontSizePx: 12, MinContrast: 21},
		OptInMethods:     &profile.OptInMethodsRule{Allowed: []string{consent.OptInManual, consent.OptInNone}},
		Attestation:      &profile.AttestationRule{Miss: profile.Miss{OnMiss: profile.MissFail}},
		LeadAge:          &profile.LeadAgeRule{MaxSeconds: 86400},
		Verdicts:         &profile.VerdictsRule{Refused: []string{"bot"}},
	}
	if err := ok.Check(); err != nil {
		t.Fatalf("Check of a valid profile: %v", err)
	}
	tests := []struct {
		field string
		rules profile.Rules
	}{
		{"approved_language.on_miss", profile.Rules{ApprovedLanguage: &profile.LanguageRule{Texts: []string{"x"}, Miss: profile.Miss{OnMiss: "block"}}}},
		{"approved_language.texts", profile.Rules{ApprovedLanguage: &profile.LanguageRule{}}},
		{"approved_language.texts", profile.Rules{ApprovedLanguage: &profile.LanguageRule{Texts: []string{""}}}},
		{"approved_language.texts", profile.Rules{ApprovedLanguage: &profile.LanguageRule{Texts: []string{strings.Repeat("x", profile.MaxApprovedText+1)}}}},
		{"approved_language.texts", profile.Rules{ApprovedLanguage: &profile.LanguageRule{Texts: []string{"a\x00b"}}}},
		{"approved_language.texts", profile.Rules{ApprovedLanguage: &profile.LanguageRule{Texts: make([]string, profile.MaxProfileTexts+1)}}},
		{"approved_language.texts", profile.Rules{ApprovedLanguage: &profile.LanguageRule{Texts: []string{" \t "}}}},
		{"brand_names.names", profile.Rules{BrandNames: &profile.BrandNamesRule{Names: []string{strings.Repeat("x", profile.MaxBrandName+1)}}}},
		{"brand_names.names", profile.Rules{BrandNames: &profile.BrandNamesRule{Names: []string{"Acme", "   "}}}}, // found in every text
		{"legibility.min_font_size_px", profile.Rules{Legibility: &profile.LegibilityRule{MinFontSizePx: math.NaN()}}},
		{"legibility.min_contrast", profile.Rules{Legibility: &profile.LegibilityRule{MinContrast: 22}}},
		{"legibility.min_contrast", profile.Rules{Legibility: &profile.LegibilityRule{MinContrast: -1}}},
		{"opt_in_methods.allowed", profile.Rules{OptInMethods: &profile.OptInMethodsRule{Allowed: []string{"clicked"}}}},
		{"attestation.on_miss", profile.Rules{Attestation: &profile.AttestationRule{Miss: profile.Miss{OnMiss: "Warn"}}}},
		{"lead_age.max_seconds", profile.Rules{LeadAge: &profile.LeadAgeRule{MaxSeconds: -1}}},
		{"verdicts.refused", profile.Rules{Verdicts: &profile.VerdictsRule{Refused: []string{"robot"}}}},
	}
	for _, tc := range tests {
		err := tc.rules.Check()
		if consent.ErrorCode(err) != consent.Invalid || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("Check of a bad %s: %v, want Invalid naming it", tc.field, err)
		}
	}
}
