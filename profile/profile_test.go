package profile_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/profile"
)

func TestMatch(t *testing.T) {
	tests := []struct {
		pattern, text string
		want          bool
	}{
		{"I agree.", "I agree.", true},
		{"I agree.", "I agree", false},
		{"  I agree.\n", "\tI agree. ", true}, // ends trimmed, as exact match trims
		{"I agree.", "I  agree.", false},      // inner white space compares exactly
		{"I agree to be called by {{*}}.", "I agree to be called by Acme, Inc. and its partners.", true},
		{"I agree to be called by {{*}}.", "I agree to be called by Acme", false},
		{"I agree to be called by {{*}}.", "I agree to be called by .", true}, // the empty run
		{"{{*}}", "anything at all", true},
		{"{{*}}", "", true},
		{"By clicking, I agree ({{*}}) to {{*}} calls.", "By clicking, I agree (TCPA) to autodialed calls.", true},
		{"By clicking, I agree ({{*}}) to {{*}} calls.", "By clicking, I agree (TCPA) to autodialed texts.", false},
		{"Call me at {{*}}: {{*}}!", "Call me at home: 555-0100!", true},
		{"ab{{*}}ba", "aba", false}, // the literal ends may not overlap
		{"ab{{*}}ba", "abba", true},
		{"a{{*}}b{{*}}c", "a-c-b", false},
		{"{{*}}{{*}}", "x", true},
		{"I agree {{ * }}.", "I agree {{ * }}.", true}, // only {{*}} is a wildcard
		{"I agree {{ * }}.", "I agree Acme.", false},
		{"Acme", "acme", false}, // case counts, as exact match
		// An end wildcard matching nothing leaves the white space beside
		// it at an end, where exact match trims it.
		{"I agree. {{*}}", "I agree.", true},
		{"{{*}} I agree.", "I agree.", true},
		{"{{*}}\t{{*}} I agree. {{*}}", "I agree.", true},
		{"I agree. {{*}}", "I agree. Acme", true},
		{"I agree. {{*}}", "I agree.x", false}, // the space is not optional inside
		{"{{*}} I agree.", "xI agree.", false},
	}
	for _, tc := range tests {
		if got := profile.Match(tc.pattern, tc.text); got != tc.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tc.pattern, tc.text, got, tc.want)
		}
	}
}

// TestMatchAgreesWithSubstitution holds Match to its definition on every
// pattern and text of up to four bytes over a small alphabet: text
// matches when some substitution of the wildcards, trimmed as exact match
// trims, equals text trimmed. With ' ' the only white space, such a
// substitution is text trimmed with runs of spaces added at its ends.
func TestMatchAgreesWithSubstitution(t *testing.T) {
	var words func(alphabet []string, n int) []string
	words = func(alphabet []string, n int) []string {
		if n == 0 {
			return []string{""}
		}
		shorter := words(alphabet, n-1)
		all := shorter
		for _, w := range shorter {
			if len(strings.ReplaceAll(w, profile.Wildcard, "*")) == n-1 {
				for _, a := range alphabet {
					all = append(all, w+a)
				}
			}
		}
		return all
	}
	texts := words([]string{"a", "b", " "}, 4)
	for _, pattern := range words([]string{"a", "b", " ", profile.Wildcard}, 4) {
		quoted := strings.Split(strings.TrimSpace(pattern), profile.Wildcard)
		for i, q := range quoted {
			quoted[i] = regexp.QuoteMeta(q)
		}
		re := regexp.MustCompile(`^(?:` + strings.Join(quoted, `.*`) + `)$`)
		for _, text := range texts {
			want := false
			trimmed := strings.TrimSpace(text)
			for a := 0; a <= 4 && !want; a++ {
				for b := 0; b <= 4 && !want; b++ {
					want = re.MatchString(strings.Repeat(" ", a) + trimmed + strings.Repeat(" ", b))
				}
			}
			if got := profile.Match(pattern, text); got != want {
				t.Errorf("Match(%q, %q) = %v, want %v", pattern, text, got, want)
			}
		}
	}
}

func record(text, method string, v *consent.Visibility) consent.Record {
	return consent.Record{Text: text, OptInMethod: method, Visibility: v}
}

func visible(px, contrast float64) *consent.Visibility {
	return &consent.Visibility{Visible: true, InViewport: true, FontSizePx: px, ContrastRatio: contrast}
}

// Each rule passes and misses on a case of its own; a miss is a warning or
// a failure as the rule says, and a fact not known yet is pending.
func TestGradeRules(t *testing.T) {
	warn, fail := profile.Miss{OnMiss: profile.MissWarn}, profile.Miss{}
	good := profile.Facts{
		Records: []consent.Record{record("I agree to be called by Acme Insurance at 555-0100.", consent.OptInManual, visible(16, 12.5)),
			record("I accept the privacy policy.", consent.OptInManual, visible(14, 7))},
		Attestation: consent.AttestationAttested, LeadAgeSeconds: 600,
		Insights: consent.InsightsDone, Verdict: "human", Reasons: []string{},
	}
	tests := []struct {
		name   string
		rules  profile.Rules
		facts  func(f *profile.Facts)
		result string
		found  profile.Found
	}{
		{"approved language", profile.Rules{ApprovedLanguage: &profile.LanguageRule{
			Texts: []string{"I agree to be texted.", "I agree to be called by {{*}} at {{*}}."}, Miss: fail}},
			nil, profile.Pass, profile.Found{Consent: ptr(0), Approved: ptr(1)}},
		{"language not approved", profile.Rules{ApprovedLanguage: &profile.LanguageRule{
			Texts: []string{"I agree to be texted by {{*}}."}, Miss: fail}}, nil, profile.Fail, profile.Found{}},
		{"brand names", profile.Rules{BrandNames: &profile.BrandNamesRule{Names: []string{"ACME insurance", "Privacy"}, Miss: fail}},
			nil, profile.Pass, profile.Found{}},
		{"a brand name missing", profile.Rules{BrandNames: &profile.BrandNamesRule{Names: []string{"Acme", "Beta Leads"}, Miss: warn}},
			nil, profile.Warn, profile.Found{Missing: []string{"Beta Leads"}}},
		{"legible", profile.Rules{Legibility: &profile.LegibilityRule{MinFontSizePx: 12, MinContrast: 4.5, Miss: fail}},
			nil, profile.Pass, profile.Found{FontSizePx: ptr(14.0), Contrast: ptr(7.0)}},
		{"too small", profile.Rules{Legibility: &profile.LegibilityRule{MinFontSizePx: 15, Miss: fail}},
			nil, profile.Fail, profile.Found{FontSizePx: ptr(14.0), Contrast: ptr(7.0)}},
		{"too faint", profile.Rules{Legibility: &profile.LegibilityRule{MinContrast: 7.5, Miss: warn}},
			nil, profile.Warn, profile.Found{FontSizePx: ptr(14.0), Contrast: ptr(7.0)}},
		{"hidden text", profile.Rules{Legibility: &profile.LegibilityRule{Miss: fail}},
			func(f *profile.Facts) { f.Records[1].Visibility.Visible = false }, profile.Fail,
			profile.Found{FontSizePx: ptr(14.0), Contrast: ptr(7.0), Invisible: []int{1}}},
		{"not measured", profile.Rules{Legibility: &profile.LegibilityRule{Miss: fail}},
			func(f *profile.Facts) { f.Records[0].Visibility = nil }, profile.Fail,
			profile.Found{FontSizePx: ptr(14.0), Contrast: ptr(7.0), Unmeasured: []int{0}}},
		{"opt-in methods", profile.Rules{OptInMethods: &profile.OptInMethodsRule{Allowed: []string{consent.OptInManual}, Miss: fail}},
			nil, profile.Pass, profile.Found{Methods: []string{"manual", "manual"}}},
		{"pre-selected", profile.Rules{OptInMethods: &profile.OptInMethodsRule{Allowed: []string{consent.OptInManual}, Miss: fail}},
			func(f *profile.Facts) { f.Records[1].OptInMethod = consent.OptInPreSelected }, profile.Fail,
			profile.Found{Methods: []string{"manual", "pre_selected"}}},
		{"attested", profile.Rules{Attestation: &profile.AttestationRule{Miss: fail}}, nil, profile.Pass,
			profile.Found{Status: "attested"}},
		{"attestation pending", profile.Rules{Attestation: &profile.AttestationRule{Miss: fail}},
			func(f *profile.Facts) { f.Attestation = consent.AttestationPending }, profile.Pending, profile.Found{Status: "pending"}},
		{"attestation mismatch", profile.Rules{Attestation: &profile.AttestationRule{Miss: fail}},
			func(f *profile.Facts) { f.Attestation = consent.AttestationMismatch }, profile.Fail, profile.Found{Status: "mismatch"}},
		{"attestation unavailable", profile.Rules{Attestation: &profile.AttestationRule{Miss: fail}},
			func(f *profile.Facts) {
				f.Attestation, f.AttestationReason = consent.AttestationUnavailable, "no node_id"
			}, profile.Fail,
			profile.Found{Status: "unavailable", Reason: "no node_id"}},
		{"attestation queue full", profile.Rules{Attestation: &profile.AttestationRule{Miss: fail}},
			func(f *profile.Facts) {
				f.Attestation, f.AttestationReason, f.AttestationUnrecorded = consent.AttestationUnavailable, "the queue is full", true
			}, profile.Pending, profile.Found{Status: "unavailable", Reason: "the queue is full"}},
		{"no attestation", profile.Rules{Attestation: &profile.AttestationRule{Miss: warn}},
			func(f *profile.Facts) { f.Attestation = "" }, profile.Warn, profile.Found{}},
		{"young lead", profile.Rules{LeadAge: &profile.LeadAgeRule{MaxSeconds: 600, Miss: fail}}, nil, profile.Pass,
			profile.Found{LeadAgeSeconds: ptr(int64(600))}},
		{"old lead", profile.Rules{LeadAge: &profile.LeadAgeRule{MaxSeconds: 599, Miss: fail}}, nil, profile.Fail,
			profile.Found{LeadAgeSeconds: ptr(int64(600))}},
		{"a person", profile.Rules{Verdicts: &profile.VerdictsRule{Refused: []string{"bot"}, Miss: fail}}, nil, profile.Pass,
			profile.Found{Status: "done", Verdict: "human", Reasons: []string{}}},
		{"a bot", profile.Rules{Verdicts: &profile.VerdictsRule{Refused: []string{"suspect", "bot"}, Miss: fail}},
			func(f *profile.Facts) { f.Verdict, f.Reasons = "bot", []string{"webdriver"} }, profile.Fail,
			profile.Found{Status: "done", Verdict: "bot", Reasons: []string{"webdriver"}}},
		{"verdict pending", profile.Rules{Verdicts: &profile.VerdictsRule{Refused: []string{"bot"}, Miss: fail}},
			func(f *profile.Facts) { f.Insights, f.Verdict, f.Reasons = consent.InsightsPending, "", nil }, profile.Pending,
			profile.Found{Status: "pending"}},
		{"no verdict", profile.Rules{Verdicts: &profile.VerdictsRule{Refused: []string{"bot"}, Miss: warn}},
			func(f *profile.Facts) { f.Insights, f.Verdict, f.Reasons = "", "", nil }, profile.Warn, profile.Found{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := good
			f.Records = []consent.Record{good.Records[0], good.Records[1]}
			for i := range f.Records {
				if v := f.Records[i].Visibility; v != nil {
					c := *v
					f.Records[i].Visibility = &c
				}
			}
			if tc.facts != nil {
				tc.facts(&f)
			}
			g := profile.Grade(&tc.rules, f)
			if len(g.Rules) != 1 {
				t.Fatalf("Grade: %d rules graded, want 1: %+v", len(g.Rules), g)
			}
			r := g.Rules[0]
			want := tc.result
			if want == profile.Pending {
				want = profile.Warn // a pending rule makes the grade warn at best
			}
			if r.Result != tc.result || g.Result != want {
				t.Errorf("rule %s: %s, grade %s; want %s, %s", r.Rule, r.Result, g.Result, tc.result, want)
			}
			if diff := cmp.Diff(tc.found, r.Found); diff != "" {
				t.Errorf("found (-want +got):\n%s", diff)
			}
		})
	}
}

// The grade is the worst of its rules': a failure beats a warning, a
// warning or a pending rule beats passes; rules come in the profile's
// order.
func TestGradeResult(t *testing.T) {
	f := profile.Facts{Records: []consent.Record{record("I agree to Acme.", consent.OptInManual, visible(16, 21))},
		Attestation: consent.AttestationPending, LeadAgeSeconds: 10}
	rules := profile.Rules{
		ApprovedLanguage: &profile.LanguageRule{Texts: []string{"I agree to {{*}}."}},
		Attestation:      &profile.AttestationRule{},
		LeadAge:          &profile.LeadAgeRule{MaxSeconds: 5, Miss: profile.Miss{OnMiss: profile.MissWarn}},
	}
	g := profile.Grade(&rules, f)
	var got []string
	for _, r := range g.Rules {
		got = append(got, r.Rule+":"+r.Result)
	}
	if fmt.Sprint(got) != "[approved_language:pass attestation:pending lead_age:warn]" || g.Result != profile.Warn {
		t.Errorf("grade %s of %v, want warn of [approved_language:pass attestation:pending lead_age:warn]", g.Result, got)
	}
	rules.LeadAge.OnMiss = profile.MissFail
	if g := profile.Grade(&rules, f); g.Result != profile.Fail {
		t.Errorf("with a failing rule: %s, want fail", g.Result)
	}
	if g := profile.Grade(&profile.Rules{}, f); g.Result != profile.Pass || len(g.Rules) != 0 || g.Rules == nil {
		t.Errorf("an empty profile: %+v, want pass with no rules", g)
	}
}

func ptr[T any](v T) *T { return &v }

// Grading by approved texts makes each text once and copies no consent a
// pair: its allocations do not grow with the consents graded. A
// certificate holds up to 100 consents of 64 KiB, and a profile 50
// texts: a copy a pair was 330 MiB a grade, inside the verification's
// transaction.
func TestGradeAllocationsDoNotGrowWithConsents(t *testing.T) {
	text := strings.Repeat("I agree to be called by Acme about things. ", 100)
	var texts []string
	for i := range profile.MaxProfileTexts {
		texts = append(texts, fmt.Sprintf("{{*}} I agree to be called by {{*}} about offer %02d.", i))
	}
	r := &profile.Rules{ApprovedLanguage: &profile.LanguageRule{Texts: texts}}
	allocs := func(consents int) float64 {
		recs := make([]consent.Record, consents)
		for i := range recs {
			recs[i].Text = text
		}
		return testing.AllocsPerRun(5, func() {
			if g := profile.Grade(r, profile.Facts{Records: recs}); g.Result != profile.Fail {
				t.Fatalf("graded %s, want fail: no text approves the consents", g.Result)
			}
		})
	}
	if one, many := allocs(1), allocs(32); many > one+4 {
		t.Errorf("a grade of 32 consents by %d texts took %.0f allocations, of 1 consent %.0f: want no more a consent", len(texts), many, one)
	}
}
