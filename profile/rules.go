package profile

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"

	"github.com/consentkit/consentkit/consent"
)

// What a rule's miss makes the grade: a warning or a failure. An empty
// OnMiss is MissFail.
const (
	MissWarn = "warn"
	MissFail = "fail"
)

// Miss says what a rule's miss makes the grade.
type Miss struct {
	OnMiss string `json:"on_miss,omitempty"` // MissWarn or MissFail; empty: MissFail
}

// Rules are a profile's rules; a nil rule is not part of it. Their JSON
// is what the operator API and the command line read and write.
type Rules struct {
	// ApprovedLanguage: a consent's text matches one of Texts, where each
	// "{{*}}" matches any run of text, the empty one too, and the rest
	// compares as exact match does (both trimmed, byte for byte).
	ApprovedLanguage *LanguageRule `json:"approved_language,omitempty"`
	// BrandNames: each of Names occurs in the text of a consent, ignoring
	// case as partial match does (consent.Fold).
	BrandNames *BrandNamesRule `json:"brand_names,omitempty"`
	// Legibility: every consent was measured visible, with a font size and
	// a contrast ratio at least the minimums.
	Legibility *LegibilityRule `json:"legibility,omitempty"`
	// OptInMethods: every consent's opt-in method is one of Allowed.
	OptInMethods *OptInMethodsRule `json:"opt_in_methods,omitempty"`
	// Attestation: the certificate is attested (D49).
	Attestation *AttestationRule `json:"attestation,omitempty"`
	// LeadAge: the consent is at most MaxSeconds old at the verification.
	LeadAge *LeadAgeRule `json:"lead_age,omitempty"`
	// Verdicts: the bot verdict (D50) is none of Refused.
	Verdicts *VerdictsRule `json:"verdicts,omitempty"`
}

// LanguageRule is Rules.ApprovedLanguage.
type LanguageRule struct {
	Texts []string `json:"texts"`
	Miss
}

// BrandNamesRule is Rules.BrandNames.
type BrandNamesRule struct {
	Names []string `json:"names"`
	Miss
}

// LegibilityRule is Rules.Legibility; a zero minimum is none.
type LegibilityRule struct {
	MinFontSizePx float64 `json:"min_font_size_px"`
	MinContrast   float64 `json:"min_contrast"`
	Miss
}

// OptInMethodsRule is Rules.OptInMethods.
type OptInMethodsRule struct {
	Allowed []string `json:"allowed"`
	Miss
}

// AttestationRule is Rules.Attestation: present, it requires one.
type AttestationRule struct {
	Miss
}

// LeadAgeRule is Rules.LeadAge.
type LeadAgeRule struct {
	MaxSeconds int64 `json:"max_seconds"`
	Miss
}

// VerdictsRule is Rules.Verdicts.
type VerdictsRule struct {
	Refused []string `json:"refused"`
	Miss
}

// Bounds of a profile's rules.
const (
	MaxProfileTexts   = 50                   // approved texts, brand names
	MaxApprovedText   = 10_000               // bytes of one approved text
	MaxBrandName      = 200                  // bytes of one brand name
	maxLeadAgeSeconds = 10 * 366 * 24 * 3600 // ten years
	maxLegibleFontPx  = 1000
	maxContrastRatio  = 21 // WCAG's greatest
)

// ParseRules reads rules written by a person (a form, a command line):
// one JSON object with nothing after it, a member that is no rule refused
// (the operator API ignores one, D29), so that a typo is told, not
// dropped. It does not Check them.
func ParseRules(data []byte) (Rules, error) {
	var r Rules
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	err := d.Decode(&r)
	if _, next := d.Token(); err == nil && next != io.EOF {
		err = errors.New("more than one JSON value")
	}
	return r, err
}

// Check refuses rules that cannot be graded: an unknown on_miss, a list
// empty or past MaxProfileTexts, a text empty or white space alone (a
// brand name found in every text), not ValidText or too long,
// a number out of its range, an opt-in method or a verdict that is none
// (Invalid, naming the field), and rules that hold no rule at all.
func (r *Rules) Check() error {
	if *r == (Rules{}) {
		return consent.Errorf(consent.Invalid, "rules must hold at least one rule")
	}
	checkMiss := func(name string, m Miss) error {
		if m.OnMiss != "" && m.OnMiss != MissWarn && m.OnMiss != MissFail {
			return consent.Errorf(consent.Invalid, "%s.on_miss must be %q or %q", name, MissWarn, MissFail)
		}
		return nil
	}
	checkList := func(field string, list []string, maxBytes int, allowed []string) error {
		if len(list) == 0 || len(list) > MaxProfileTexts {
			return consent.Errorf(consent.Invalid, "%s must hold 1 to %d entries", field, MaxProfileTexts)
		}
		for _, s := range list {
			switch {
			case allowed != nil && !slices.Contains(allowed, s):
				return consent.Errorf(consent.Invalid, "%s: %q is not one of %v", field, s, allowed)
			case strings.TrimSpace(s) == "" || len(s) > maxBytes:
				return consent.Errorf(consent.Invalid, "%s must hold texts of 1 to %d bytes, not white space alone", field, maxBytes)
			case !consent.ValidText(s):
				return consent.Errorf(consent.Invalid, "%s must be valid UTF-8 text without control characters", field)
			}
		}
		return nil
	}
	within := func(field string, v, hi float64) error {
		if !(v >= 0 && v <= hi) { // NaN too
			return consent.Errorf(consent.Invalid, "%s must be a number from 0 to %g", field, hi)
		}
		return nil
	}
	if l := r.ApprovedLanguage; l != nil {
		if err := firstErr(checkMiss("approved_language", l.Miss), checkList("approved_language.texts", l.Texts, MaxApprovedText, nil)); err != nil {
			return err
		}
	}
	if b := r.BrandNames; b != nil {
		if err := firstErr(checkMiss("brand_names", b.Miss), checkList("brand_names.names", b.Names, MaxBrandName, nil)); err != nil {
			return err
		}
	}
	if l := r.Legibility; l != nil {
		if err := firstErr(checkMiss("legibility", l.Miss), within("legibility.min_font_size_px", l.MinFontSizePx, maxLegibleFontPx),
			within("legibility.min_contrast", l.MinContrast, maxContrastRatio)); err != nil {
			return err
		}
	}
	if o := r.OptInMethods; o != nil {
		methods := []string{consent.OptInManual, consent.OptInPreSelected, consent.OptInScripted, consent.OptInNone}
		if err := firstErr(checkMiss("opt_in_methods", o.Miss), checkList("opt_in_methods.allowed", o.Allowed, MaxBrandName, methods)); err != nil {
			return err
		}
	}
	if a := r.Attestation; a != nil {
		if err := checkMiss("attestation", a.Miss); err != nil {
			return err
		}
	}
	if l := r.LeadAge; l != nil {
		if err := firstErr(checkMiss("lead_age", l.Miss), within("lead_age.max_seconds", float64(l.MaxSeconds), maxLeadAgeSeconds)); err != nil {
			return err
		}
	}
	if v := r.Verdicts; v != nil {
		if err := firstErr(checkMiss("verdicts", v.Miss), checkList("verdicts.refused", v.Refused, MaxBrandName, []string{"human", "suspect", "bot"})); err != nil {
			return err
		}
	}
	return nil
}

// firstErr returns the first error that is not nil.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
