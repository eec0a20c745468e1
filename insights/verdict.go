package insights

import (
	"slices"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/signed"
)

// Verdict is the bot verdict: human, suspect or bot.
type Verdict string

// The verdicts, from the least severe.
const (
	Human   Verdict = "human"
	Suspect Verdict = "suspect"
	Bot     Verdict = "bot"
)

// Severity orders the verdicts: Human 0, Suspect 1, Bot 2; -1 for a word
// that is not a verdict.
func (v Verdict) Severity() int { return signed.Severity(string(v)) }

// Reason is a documented code for one finding that led to a verdict; the
// package documentation lists them.
type Reason string

// Codes returns the codes of rs, as answers and statements write them;
// empty, never nil.
func Codes(rs []Reason) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r)
	}
	return out
}

// The reasons, in the order a Judgement lists them.
const (
	ReasonNoRecording            Reason = "no_recording"
	ReasonNoSnapshot             Reason = "no_snapshot"
	ReasonNotABrowser            Reason = "not_a_browser"
	ReasonHeadlessUserAgent      Reason = "headless_user_agent"
	ReasonWebdriver              Reason = "webdriver"
	ReasonSubmittedTooFast       Reason = "submitted_too_fast"
	ReasonTypingTooFast          Reason = "typing_too_fast"
	ReasonNoSignals              Reason = "no_signals"
	ReasonNoPointerOrTouch       Reason = "no_pointer_or_touch"
	ReasonScriptedInput          Reason = "scripted_input"
	ReasonConsentAfterRevocation Reason = "consent_after_revocation"
	ReasonAttestationMismatch    Reason = "attestation_mismatch"
	ReasonHighVelocity           Reason = "high_velocity"
)

// reasons are all the reasons, in their order.
var reasons = []Reason{
	ReasonNoRecording, ReasonNoSnapshot, ReasonNotABrowser, ReasonHeadlessUserAgent, ReasonWebdriver,
	ReasonSubmittedTooFast, ReasonTypingTooFast, ReasonNoSignals, ReasonNoPointerOrTouch, ReasonScriptedInput,
	ReasonConsentAfterRevocation, ReasonAttestationMismatch, ReasonHighVelocity,
}

// Verdict returns the verdict that the reason alone leads to: Bot or
// Suspect.
func (r Reason) Verdict() Verdict {
	switch r {
	case ReasonNoSignals, ReasonNoPointerOrTouch, ReasonScriptedInput,
		ReasonConsentAfterRevocation, ReasonAttestationMismatch, ReasonHighVelocity:
		return Suspect
	}
	return Bot
}

// Judgement is a verdict with every reason that led to it; Reasons is
// empty, never nil, when the verdict is human.
type Judgement struct {
	Verdict Verdict  `json:"verdict"`
	Reasons []Reason `json:"reasons"`
}

// Rules are the thresholds of the verdict: a company's
// consent.InsightsRules (Service.SetInsightsRules). The zero value holds
// the defaults; a negative threshold turns its rule off.
//
//	MinSecondsOnPage  a consent given sooner after the page loaded is
//	                  submitted_too_fast (default 1.5 s: a person must see
//	                  the page, tick and press); Signals.SecondsOnPage says
//	                  how it is measured
//	MaxKeysPerMinute  typing faster is typing_too_fast (default 1,500, 25
//	                  keys a second; fast typists keep under 1,000)
//	MinKeystrokes     the fewest key presses whose pace is judged
//	                  (default 10); negative, like MaxKeysPerMinute
//	                  negative, turns typing_too_fast off
//	SuspectsForBot    how many suspect reasons together make the verdict
//	                  bot (default 2)
//	MaxPerHour        more of the company's certificates than this from
//	MaxPerDay         the same address, email or mobile in the hour (day)
//	                  before is high_velocity (defaults 5 and 20)
type Rules consent.InsightsRules

// The defaults of Rules.
const (
	DefaultMinSecondsOnPage = 1.5
	DefaultMaxKeysPerMinute = 1500
	DefaultMinKeystrokes    = 10
	DefaultSuspectsForBot   = 2
	DefaultMaxPerHour       = 5
	DefaultMaxPerDay        = 20
)

// WithDefaults returns r with each zero threshold set to its default: the
// rules Judge applies. A negative threshold stays as it is: its rule is
// off.
func (r Rules) WithDefaults() Rules {
	or := func(v *float64, def float64) {
		if *v == 0 {
			*v = def
		}
	}
	orInt := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	or(&r.MinSecondsOnPage, DefaultMinSecondsOnPage)
	or(&r.MaxKeysPerMinute, DefaultMaxKeysPerMinute)
	orInt(&r.MinKeystrokes, DefaultMinKeystrokes)
	orInt(&r.SuspectsForBot, DefaultSuspectsForBot)
	orInt(&r.MaxPerHour, DefaultMaxPerHour)
	orInt(&r.MaxPerDay, DefaultMaxPerDay)
	return r
}

// Facts are what the service knows of a consent beside its recording.
type Facts struct {
	// RevokedBefore: the consumer had opted out of the company before
	// this consent (consent.Certificate.RevokedBefore is set).
	RevokedBefore bool
	// Attestation is the status of the certificate's attestation
	// (consent.Attestation…); empty when there is none.
	Attestation string
	// Velocity counts the company's certificates before this one (Tx.Velocity);
	// nil when not counted.
	Velocity *consent.Velocity
}

// Judge returns the verdict on the signals and the facts, with its
// reasons in the order of the Reason constants. It is a pure function of
// its arguments. nil signals are those of a session with no recording and
// no user agent.
func (r Rules) Judge(s *Signals, f Facts) Judgement {
	if s == nil {
		s = &Signals{Client: ParseUserAgent("")}
	}
	r = r.WithDefaults()
	var found []Reason
	add := func(on bool, reason Reason) {
		if on {
			found = append(found, reason)
		}
	}
	recorded := s.Events > 0
	add(!recorded, ReasonNoRecording)
	add(recorded && !s.Snapshot, ReasonNoSnapshot)
	add(s.Client.NotABrowser, ReasonNotABrowser)
	add(s.Client.Headless, ReasonHeadlessUserAgent)
	add(s.Reported != nil && s.Reported.Webdriver, ReasonWebdriver)
	if recorded {
		add(r.MinSecondsOnPage > 0 && s.SecondsOnPage < r.MinSecondsOnPage, ReasonSubmittedTooFast)
		add(r.MaxKeysPerMinute > 0 && r.MinKeystrokes > 0 && s.Keystrokes >= r.MinKeystrokes && s.KeysPerMinute > r.MaxKeysPerMinute,
			ReasonTypingTooFast)
		add(s.Reported == nil, ReasonNoSignals)
		add(s.Pointer.Moves == 0 && s.Pointer.Touches == 0, ReasonNoPointerOrTouch)
		scripted := false
		for _, in := range s.Inputs {
			scripted = scripted || in.Method == Scripted
		}
		add(scripted, ReasonScriptedInput)
	}
	return r.verdict(append(found, r.factReasons(f)...))
}

// Add returns j, a judgement made earlier (an insights statement's), with
// found, the reasons a judgement now gives, and the reasons j did not hold.
func (r Rules) Add(j Judgement, found []Reason) (now Judgement, added []Reason) {
	r = r.WithDefaults()
	all := slices.Clone(j.Reasons)
	for _, reason := range found {
		if !slices.Contains(all, reason) {
			all = append(all, reason)
			added = append(added, reason)
		}
	}
	now = r.verdict(all)
	if now.Verdict.Severity() < j.Verdict.Severity() {
		now.Verdict = j.Verdict // rules changed since j: never milder than it
	}
	return now, added
}

// factReasons are the reasons of f under r, with defaults.
func (r Rules) factReasons(f Facts) []Reason {
	var found []Reason
	if f.RevokedBefore {
		found = append(found, ReasonConsentAfterRevocation)
	}
	if f.Attestation == consent.AttestationMismatch {
		found = append(found, ReasonAttestationMismatch)
	}
	if v := f.Velocity; v != nil {
		over := func(c consent.VelocityCounts, limit int) bool {
			return limit > 0 && max(c.ClientIP, c.Email, c.Mobile) > limit
		}
		if over(v.Hour, r.MaxPerHour) || over(v.Day, r.MaxPerDay) {
			found = append(found, ReasonHighVelocity)
		}
	}
	return found
}

// verdict returns the judgement of reasons, put in their order, under r
// with defaults.
func (r Rules) verdict(found []Reason) Judgement {
	slices.SortStableFunc(found, func(a, b Reason) int {
		return slices.Index(reasons, a) - slices.Index(reasons, b)
	})
	j := Judgement{Verdict: Human, Reasons: append([]Reason{}, found...)}
	suspects := 0
	for _, reason := range found {
		switch reason.Verdict() {
		case Bot:
			j.Verdict = Bot
		case Suspect:
			suspects++
		}
	}
	if j.Verdict != Bot && suspects > 0 {
		j.Verdict = Suspect
		if r.SuspectsForBot > 0 && suspects >= r.SuspectsForBot {
			j.Verdict = Bot
		}
	}
	return j
}
