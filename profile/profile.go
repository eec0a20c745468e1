// Package profile grades a certificate against a buyer's audit profile
// (D51): approved consent language with {{*}} wildcards, required brand
// names, legibility, opt-in methods, attestation, lead age and the bot
// verdict, each rule a pass, or on a miss a warning or a failure as the
// profile says, or pending while its fact is not known yet. [Profiles]
// keeps each company's profiles, by name, auditing every change; [Grade]
// grades; [Match] is the rule of approved language. A match or partial
// match (package verify, or "profile" over HTTP) names the caller's
// profile and answers its grade.
//
// The grade is a pure function of the rules and the facts: the caller
// reads the facts (the certificate, its attestation, its insights when
// asked) and grading adds nothing to a verification's price.
//
//	rules := profile.Rules{ApprovedLanguage: &profile.LanguageRule{Texts: []string{"I agree to be called by {{*}}."}}}
//	g := profile.Grade(&rules, profile.Facts{Records: cert.Records})
//	fmt.Println(g.Result) // pass, warn or fail; g.Rules says what each rule found
package profile

import (
	"bytes"
	"slices"
	"strings"
	"unicode"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/textsearch"
)

// Results of a rule and of a grade.
const (
	Pass    = "pass"
	Warn    = "warn"
	Fail    = "fail"
	Pending = "pending" // a rule's fact is not known yet; the grade is at best warn
)

// Wildcard is what an approved text writes for any run of text.
const Wildcard = "{{*}}"

// Facts are what a grade reads of one certificate at the verification.
type Facts struct {
	Records []consent.Record
	// Attestation is the status of its attestation (consent.Attestation…);
	// empty when none was asked for. AttestationReason says why it is
	// unavailable. AttestationUnrecorded says that nothing was recorded
	// (asked for when the attestation queue was full): asking again may
	// succeed, so the status is not known yet, as a pending one's is not.
	Attestation           string
	AttestationReason     string
	AttestationUnrecorded bool
	// LeadAgeSeconds is the time from the consent to the verification.
	LeadAgeSeconds int64
	// Insights is the status of its insights (consent.Insights…); empty
	// when it has none. Verdict and Reasons are the verdict when asked.
	Insights string
	Verdict  string
	Reasons  []string
	// Text, when set, is the grade of the text rules made beforehand, by
	// GradeText with the same rules and Records: Grade takes it instead of
	// reading the consents again.
	Text *TextGrade
}

// TextGrade is the grade of a profile's text rules, approved language and
// brand names, of a certificate's consents: the part of a grade whose work
// grows with the consents' text (TextWork), which a verification makes
// before its write transaction when it is large, so that the transaction
// does not hold the store while it is made.
type TextGrade struct {
	language, brands *textRule // nil for a rule the profile has not
}

// textRule is a text rule's outcome and what it found.
type textRule struct {
	ok    bool
	found Found
}

// TextWork is about how many bytes grading r's text rules reads: the
// consents' text once for each approved text and brand name, and each
// approved text and brand name once for each consent (a match walks every
// part of an approved text, its wildcards however many, whatever the
// consent's length).
func TextWork(r *Rules, records []consent.Record) int {
	n, rules := 0, 0
	if r.ApprovedLanguage != nil {
		n += len(r.ApprovedLanguage.Texts)
		for _, t := range r.ApprovedLanguage.Texts {
			rules += len(t)
		}
	}
	if r.BrandNames != nil {
		n += len(r.BrandNames.Names)
		for _, name := range r.BrandNames.Names {
			rules += len(name)
		}
	}
	size := 0
	for _, rec := range records {
		size += len(rec.Text)
	}
	return n*size + len(records)*rules
}

// GradeText grades r's text rules, approved language and brand names, of
// records.
func GradeText(r *Rules, records []consent.Record) *TextGrade {
	var g TextGrade
	if l := r.ApprovedLanguage; l != nil {
		var found Found
		texts := make([]approved, len(l.Texts)) // each made once, not once a consent
		for k, t := range l.Texts {
			texts[k] = compile(t)
		}
		var buf []byte
	records:
		for i, rec := range records {
			for j, a := range texts {
				if a.match(rec.Text, &buf) {
					ci, ti := i, j // taken once found, not for every pair
					found.Consent, found.Approved = &ci, &ti
					break records
				}
			}
		}
		g.language = &textRule{ok: found.Consent != nil, found: found}
	}
	if b := r.BrandNames; b != nil {
		var found Found
		folded := make([]string, len(records)) // once each, not once a name
		for i, rec := range records {
			folded[i] = consent.Fold(rec.Text)
		}
		for _, name := range b.Names {
			want := textsearch.New(consent.Fold(strings.TrimSpace(name)))
			if !slices.ContainsFunc(folded, func(text string) bool { return want.Index(text) >= 0 }) {
				found.Missing = append(found.Missing, name)
			}
		}
		g.brands = &textRule{ok: len(found.Missing) == 0, found: found}
	}
	return &g
}

// fits reports whether g was made by rules with r's text rules.
func (g *TextGrade) fits(r *Rules) bool {
	return (g.language != nil) == (r.ApprovedLanguage != nil) && (g.brands != nil) == (r.BrandNames != nil)
}

// Graded is a certificate's grade: the result, and one entry a rule of the
// profile, in the order of Rules' fields.
type Graded struct {
	Result string      `json:"result"`
	Rules  []RuleGrade `json:"rules"`
}

// RuleGrade is one rule's result and what was found.
type RuleGrade struct {
	Rule   string `json:"rule"` // the rule's name in the profile, such as "approved_language"
	Result string `json:"result"`
	Found  Found  `json:"found"`
}

// Found is what a rule found; each rule sets its own fields.
type Found struct {
	// Consent and Approved are the indexes, from 0, of the consent and of
	// the approved text it matched (approved_language).
	Consent  *int `json:"consent,omitempty"`
	Approved *int `json:"approved,omitempty"`
	// Missing are the brand names no consent holds (brand_names).
	Missing []string `json:"missing,omitempty"`
	// FontSizePx and Contrast are the least measured over the consents,
	// Invisible the indexes of consents not measured visible, Unmeasured
	// of those not measured at all (legibility).
	FontSizePx *float64 `json:"font_size_px,omitempty"`
	Contrast   *float64 `json:"contrast,omitempty"`
	Invisible  []int    `json:"invisible,omitempty"`
	Unmeasured []int    `json:"unmeasured,omitempty"`
	// Methods are the consents' opt-in methods, in order, "" where not
	// recorded (opt_in_methods).
	Methods []string `json:"methods,omitempty"`
	// Status is the attestation's or the insights' status.
	Status string `json:"status,omitempty"`
	// Reason says why the attestation is unavailable (attestation).
	Reason string `json:"reason,omitempty"`
	// LeadAgeSeconds is the lead's age (lead_age).
	LeadAgeSeconds *int64 `json:"lead_age_seconds,omitempty"`
	// Verdict and Reasons are the bot verdict (verdicts).
	Verdict string   `json:"verdict,omitempty"`
	Reasons []string `json:"reasons,omitempty"`
}

// Grade grades f against r. The result is fail when a rule failed; else
// warn when a rule warned or is pending; else pass.
func Grade(r *Rules, f Facts) Graded {
	g := Graded{Result: Pass, Rules: []RuleGrade{}}
	add := func(name string, m Miss, ok, pending bool, found Found) {
		res := Pass
		switch {
		case pending:
			res = Pending
		case !ok && m.OnMiss == MissWarn:
			res = Warn
		case !ok:
			res = Fail
		}
		g.Rules = append(g.Rules, RuleGrade{Rule: name, Result: res, Found: found})
		switch {
		case res == Fail:
			g.Result = Fail
		case res != Pass && g.Result == Pass:
			g.Result = Warn
		}
	}
	text := f.Text
	if text == nil || !text.fits(r) {
		text = GradeText(r, f.Records)
	}
	if l := r.ApprovedLanguage; l != nil {
		add("approved_language", l.Miss, text.language.ok, false, text.language.found)
	}
	if b := r.BrandNames; b != nil {
		add("brand_names", b.Miss, text.brands.ok, false, text.brands.found)
	}
	if l := r.Legibility; l != nil {
		found := legibility(f.Records)
		ok := len(f.Records) > 0 && len(found.Invisible) == 0 && len(found.Unmeasured) == 0 &&
			(found.FontSizePx == nil || *found.FontSizePx >= l.MinFontSizePx) && (found.Contrast == nil || *found.Contrast >= l.MinContrast)
		add("legibility", l.Miss, ok, false, found)
	}
	if o := r.OptInMethods; o != nil {
		found := Found{Methods: []string{}}
		ok := len(f.Records) > 0
		for _, rec := range f.Records {
			found.Methods = append(found.Methods, rec.OptInMethod)
			ok = ok && slices.Contains(o.Allowed, rec.OptInMethod)
		}
		add("opt_in_methods", o.Miss, ok, false, found)
	}
	if a := r.Attestation; a != nil {
		pending := f.Attestation == consent.AttestationPending || f.AttestationUnrecorded
		add("attestation", a.Miss, f.Attestation == consent.AttestationAttested, pending,
			Found{Status: f.Attestation, Reason: f.AttestationReason})
	}
	if l := r.LeadAge; l != nil {
		age := f.LeadAgeSeconds
		add("lead_age", l.Miss, age <= l.MaxSeconds, false, Found{LeadAgeSeconds: &age})
	}
	if v := r.Verdicts; v != nil {
		found := Found{Status: f.Insights, Verdict: f.Verdict, Reasons: f.Reasons}
		known := f.Insights == consent.InsightsDone && f.Verdict != ""
		add("verdicts", v.Miss, known && !slices.Contains(v.Refused, f.Verdict), f.Insights == consent.InsightsPending, found)
	}
	return g
}

// legibility finds the least font size and contrast measured over the
// records, and those not measured or not visible.
func legibility(records []consent.Record) Found {
	var found Found
	for i, rec := range records {
		v := rec.Visibility
		switch {
		case v == nil:
			found.Unmeasured = append(found.Unmeasured, i)
			continue
		case !v.Visible:
			found.Invisible = append(found.Invisible, i)
		}
		if found.FontSizePx == nil || v.FontSizePx < *found.FontSizePx {
			found.FontSizePx = &v.FontSizePx
		}
		if found.Contrast == nil || v.ContrastRatio < *found.Contrast {
			found.Contrast = &v.ContrastRatio
		}
	}
	return found
}

// Match reports whether text matches the approved text pattern: each
// Wildcard in pattern matches any run of text (the empty one too), and the
// result compares with text as exact match compares (D51): both trimmed of
// white space at their ends, the rest byte for byte. So a wildcard at an
// end that matches nothing leaves the white space beside it at that end,
// where it is trimmed: "I agree. {{*}}" approves "I agree.". Its work is
// linear in the lengths of both: each literal part is found leftmost
// (textsearch, linear whatever the texts hold), which is enough when the
// only wildcard matches anything.
func Match(pattern, text string) bool {
	return compile(pattern).match(text, new([]byte))
}

// approved is an approved text split at its wildcards, made once for all
// the consents it is matched with (Grade).
type approved struct {
	exact string               // the trimmed text, when it has no wildcard
	parts [][]byte             // else the text split at its wildcards
	mids  []*textsearch.Finder // of parts[1:len(parts)-1]
	// lead and trail are the white space between an end of the text and
	// its first other byte, wildcards aside: what a result trimmed to a
	// consent may have had at that end (an end wildcard takes whatever
	// else it had).
	lead, trail string
}

func compile(pattern string) approved {
	pattern = strings.TrimSpace(pattern)
	parts := strings.Split(pattern, Wildcard)
	if len(parts) == 1 {
		return approved{exact: pattern}
	}
	a := approved{lead: edgeSpace(parts, false), trail: edgeSpace(parts, true)}
	for i, p := range parts {
		a.parts = append(a.parts, []byte(p))
		if i > 0 && i < len(parts)-1 {
			a.mids = append(a.mids, textsearch.New(p))
		}
	}
	return a
}

// match is Match by a compiled pattern. The consent, with the white space
// its ends may have had, is written into *buf, reused from one call to the
// next, so that grading many consents by many approved texts allocates
// nothing a pair.
func (a approved) match(text string, buf *[]byte) bool {
	text = strings.TrimSpace(text)
	if a.parts == nil {
		return a.exact == text
	}
	*buf = append(append(append((*buf)[:0], a.lead...), text...), a.trail...)
	b := *buf
	first, last := a.parts[0], a.parts[len(a.parts)-1]
	if !bytes.HasPrefix(b, first) {
		return false
	}
	b = b[len(first):]
	for k, mid := range a.parts[1 : len(a.parts)-1] {
		i := a.mids[k].IndexBytes(b)
		if i < 0 {
			return false
		}
		b = b[i+len(mid):]
	}
	return bytes.HasSuffix(b, last)
}

// edgeSpace returns the white space a result trimmed to text may have
// had at one end of parts, a pattern split at its wildcards: that of the
// pattern between the end and its first byte that is not white space,
// wildcards aside, in the pattern's order. It is "" when the pattern does
// not begin (end) with a wildcard, since the pattern is trimmed.
func edgeSpace(parts []string, end bool) string {
	var b strings.Builder
	if !end {
		for _, p := range parts {
			rest := strings.TrimLeftFunc(p, unicode.IsSpace)
			b.WriteString(p[:len(p)-len(rest)])
			if rest != "" {
				break
			}
		}
		return b.String()
	}
	i := len(parts) - 1
	for i > 0 && strings.TrimSpace(parts[i]) == "" {
		i--
	}
	b.WriteString(parts[i][len(strings.TrimRightFunc(parts[i], unicode.IsSpace)):])
	for _, p := range parts[i+1:] {
		b.WriteString(p)
	}
	return b.String()
}
