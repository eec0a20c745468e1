package profile_test

import (
	"fmt"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/profile"
)

func ExampleGrade() {
	rules := profile.Rules{
		ApprovedLanguage: &profile.LanguageRule{Texts: []string{"I agree to be called by {{*}} at the number I gave."}},
		Legibility: &profile.LegibilityRule{MinFontSizePx: 12, MinContrast: 4.5,
			Miss: profile.Miss{OnMiss: profile.MissWarn}},
	}
	facts := profile.Facts{Records: []consent.Record{{
		Text:       "I agree to be called by Acme Insurance at the number I gave.",
		Visibility: &consent.Visibility{Visible: true, FontSizePx: 11, ContrastRatio: 9.2},
	}}}
	g := profile.Grade(&rules, facts)
	fmt.Println(g.Result)
	for _, r := range g.Rules {
		fmt.Println(r.Rule, r.Result)
	}
	// Output:
	// warn
	// approved_language pass
	// legibility warn
}
