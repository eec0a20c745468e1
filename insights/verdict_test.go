package insights_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/insights"
)

// humanSignals are the signals of a person's session: a page, the
// snippet's report, pointer moves, ten seconds on the page.
func humanSignals() *insights.Signals {
	return &insights.Signals{Events: 40, Snapshot: true, SecondsOnPage: 10, SecondsToSubmit: 8,
		Reported: &insights.Reported{}, Pointer: insights.Pointer{Moves: 12, Clicks: 2},
		Client: insights.ParseUserAgent(desktopUA)}
}

func velocity(hourIP, dayEmail int) *consent.Velocity {
	return &consent.Velocity{Hour: consent.VelocityCounts{ClientIP: hourIP}, Day: consent.VelocityCounts{Email: dayEmail}}
}

// The reasons of the facts beside the recording (D50): a consent after an
// opt-out, an attestation that measured otherwise, many certificates from
// one address, email or mobile.
func TestJudgeFacts(t *testing.T) {
	tests := []struct {
		name  string
		rules insights.Rules
		facts insights.Facts
		want  insights.Judgement
	}{
		{"none", insights.Rules{}, insights.Facts{}, insights.Judgement{Verdict: insights.Human, Reasons: []insights.Reason{}}},
		{"consent after revocation", insights.Rules{}, insights.Facts{RevokedBefore: true},
			insights.Judgement{Verdict: insights.Suspect, Reasons: []insights.Reason{insights.ReasonConsentAfterRevocation}}},
		{"attestation mismatch", insights.Rules{}, insights.Facts{Attestation: consent.AttestationMismatch},
			insights.Judgement{Verdict: insights.Suspect, Reasons: []insights.Reason{insights.ReasonAttestationMismatch}}},
		{"attested", insights.Rules{}, insights.Facts{Attestation: consent.AttestationAttested},
			insights.Judgement{Verdict: insights.Human, Reasons: []insights.Reason{}}},
		{"five in the hour is the limit", insights.Rules{}, insights.Facts{Velocity: velocity(insights.DefaultMaxPerHour, 0)},
			insights.Judgement{Verdict: insights.Human, Reasons: []insights.Reason{}}},
		{"six in the hour", insights.Rules{}, insights.Facts{Velocity: velocity(insights.DefaultMaxPerHour+1, 0)},
			insights.Judgement{Verdict: insights.Suspect, Reasons: []insights.Reason{insights.ReasonHighVelocity}}},
		{"21 in the day", insights.Rules{}, insights.Facts{Velocity: velocity(0, insights.DefaultMaxPerDay+1)},
			insights.Judgement{Verdict: insights.Suspect, Reasons: []insights.Reason{insights.ReasonHighVelocity}}},
		{"a company's lower limit", insights.Rules{MaxPerHour: 2}, insights.Facts{Velocity: velocity(3, 0)},
			insights.Judgement{Verdict: insights.Suspect, Reasons: []insights.Reason{insights.ReasonHighVelocity}}},
		{"velocity turned off", insights.Rules{MaxPerHour: -1, MaxPerDay: -1}, insights.Facts{Velocity: velocity(500, 900)},
			insights.Judgement{Verdict: insights.Human, Reasons: []insights.Reason{}}},
		{"two suspicions", insights.Rules{}, insights.Facts{RevokedBefore: true, Velocity: velocity(9, 0)},
			insights.Judgement{Verdict: insights.Bot, Reasons: []insights.Reason{insights.ReasonConsentAfterRevocation, insights.ReasonHighVelocity}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.rules.Judge(humanSignals(), tc.facts)); diff != "" {
				t.Errorf("Judge (-want +got):\n%s", diff)
			}
		})
	}
}

// Add joins the reasons found when asked to a signed judgement: it keeps
// the signed reasons in their order, says which it added, and never makes
// the verdict milder than the signed one, even under rules changed since.
func TestAdd(t *testing.T) {
	scripted := insights.Judgement{Verdict: insights.Bot, Reasons: []insights.Reason{insights.ReasonNoPointerOrTouch, insights.ReasonScriptedInput}}
	revoked := insights.Judgement{Verdict: insights.Suspect, Reasons: []insights.Reason{insights.ReasonConsentAfterRevocation}}
	human := insights.Judgement{Verdict: insights.Human, Reasons: []insights.Reason{}}
	tests := []struct {
		name      string
		rules     insights.Rules
		signed    insights.Judgement
		facts     insights.Facts
		want      insights.Judgement
		wantAdded []insights.Reason
	}{
		{"nothing new", insights.Rules{}, human, insights.Facts{Velocity: velocity(1, 1)}, human, nil},
		{"high velocity", insights.Rules{}, human, insights.Facts{Velocity: velocity(6, 0)},
			insights.Judgement{Verdict: insights.Suspect, Reasons: []insights.Reason{insights.ReasonHighVelocity}},
			[]insights.Reason{insights.ReasonHighVelocity}},
		{"signed reason kept, in order", insights.Rules{}, revoked,
			insights.Facts{RevokedBefore: true, Attestation: consent.AttestationMismatch},
			insights.Judgement{Verdict: insights.Bot, Reasons: []insights.Reason{insights.ReasonConsentAfterRevocation, insights.ReasonAttestationMismatch}},
			[]insights.Reason{insights.ReasonAttestationMismatch}},
		{"an older statement without the revocation", insights.Rules{}, human, insights.Facts{RevokedBefore: true},
			insights.Judgement{Verdict: insights.Suspect, Reasons: []insights.Reason{insights.ReasonConsentAfterRevocation}},
			[]insights.Reason{insights.ReasonConsentAfterRevocation}},
		{"never milder than signed", insights.Rules{SuspectsForBot: 3}, scripted, insights.Facts{},
			insights.Judgement{Verdict: insights.Bot, Reasons: scripted.Reasons}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, added := tc.rules.Add(tc.signed, tc.rules.Judge(humanSignals(), tc.facts).Reasons)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Add judgement (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantAdded, added); diff != "" {
				t.Errorf("Add added (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSeverity(t *testing.T) {
	if !(insights.Human.Severity() < insights.Suspect.Severity() && insights.Suspect.Severity() < insights.Bot.Severity()) {
		t.Errorf("severities human %d, suspect %d, bot %d: want increasing", insights.Human.Severity(), insights.Suspect.Severity(), insights.Bot.Severity())
	}
	if got := insights.Verdict("robot").Severity(); got != -1 {
		t.Errorf(`Verdict("robot").Severity() = %d, want -1`, got)
	}
}

// WithDefaults sets each zero threshold to its default and leaves a
// negative one as it is, its rule off: min_keystrokes too, which the
// dashboard then shows as off.
func TestWithDefaults(t *testing.T) {
	if diff := cmp.Diff(insights.Rules{MinSecondsOnPage: insights.DefaultMinSecondsOnPage, MaxKeysPerMinute: insights.DefaultMaxKeysPerMinute,
		MinKeystrokes: insights.DefaultMinKeystrokes, SuspectsForBot: insights.DefaultSuspectsForBot,
		MaxPerHour: insights.DefaultMaxPerHour, MaxPerDay: insights.DefaultMaxPerDay}, insights.Rules{}.WithDefaults()); diff != "" {
		t.Errorf("Rules{}.WithDefaults() (-want +got):\n%s", diff)
	}
	off := insights.Rules{MinSecondsOnPage: -1, MaxKeysPerMinute: -1, MinKeystrokes: -1, SuspectsForBot: -1, MaxPerHour: -1, MaxPerDay: -1}
	if diff := cmp.Diff(off, off.WithDefaults()); diff != "" {
		t.Errorf("negative thresholds changed (-want +got):\n%s", diff)
	}
	fast := humanSignals()
	fast.Keystrokes, fast.KeysPerMinute = 500, 10*insights.DefaultMaxKeysPerMinute
	for _, tc := range []struct {
		rules insights.Rules
		want  []insights.Reason
	}{
		{insights.Rules{}, []insights.Reason{insights.ReasonTypingTooFast}},
		{insights.Rules{MinKeystrokes: 1}, []insights.Reason{insights.ReasonTypingTooFast}},
		{insights.Rules{MinKeystrokes: -1}, []insights.Reason{}},
		{insights.Rules{MaxKeysPerMinute: -1}, []insights.Reason{}},
	} {
		if got := tc.rules.Judge(fast, insights.Facts{}); !cmp.Equal(got.Reasons, tc.want) {
			t.Errorf("%+v: reasons %v, want %v", tc.rules, got.Reasons, tc.want)
		}
	}
}
