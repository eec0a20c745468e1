package insights

// Verdict is the bot verdict: human, suspect or bot.
type Verdict string

// The verdicts.
const (
	Human   Verdict = "human"
	Suspect Verdict = "suspect"
	Bot     Verdict = "bot"
)

// Reason is a documented code for one finding that led to a verdict; the
// package documentation lists them.
type Reason string

// The reasons, in the order Judge lists them.
const (
	ReasonNoRecording       Reason = "no_recording"
	ReasonNoSnapshot        Reason = "no_snapshot"
	ReasonNotABrowser       Reason = "not_a_browser"
	ReasonHeadlessUserAgent Reason = "headless_user_agent"
	ReasonWebdriver         Reason = "webdriver"
	ReasonSubmittedTooFast  Reason = "submitted_too_fast"
	ReasonTypingTooFast     Reason = "typing_too_fast"
	ReasonNoSignals         Reason = "no_signals"
	ReasonNoPointerOrTouch  Reason = "no_pointer_or_touch"
	ReasonScriptedInput     Reason = "scripted_input"
)

// Verdict returns the verdict that the reason alone leads to: Bot or
// Suspect.
func (r Reason) Verdict() Verdict {
	switch r {
	case ReasonNoSignals, ReasonNoPointerOrTouch, ReasonScriptedInput:
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

// Rules are the thresholds of the verdict. The zero value holds the
// defaults; a negative threshold turns its rule off.
type Rules struct {
	// MinSecondsOnPage: a consent given sooner after the recording began
	// is submitted_too_fast (default 1.5 s: a person must see the page,
	// tick and press).
	MinSecondsOnPage float64
	// MaxKeysPerMinute: typing faster is typing_too_fast (default 1,500,
	// 25 keys a second; fast typists keep under 1,000).
	MaxKeysPerMinute float64
	// MinKeystrokes is the fewest key presses whose pace is judged
	// (default 10; 0 or less means the default).
	MinKeystrokes int
	// SuspectsForBot is how many suspect reasons together make the verdict
	// bot (default 2).
	SuspectsForBot int
}

// The defaults of Rules.
const (
	DefaultMinSecondsOnPage = 1.5
	DefaultMaxKeysPerMinute = 1500
	DefaultMinKeystrokes    = 10
	DefaultSuspectsForBot   = 2
)

func (r Rules) withDefaults() Rules {
	if r.MinSecondsOnPage == 0 {
		r.MinSecondsOnPage = DefaultMinSecondsOnPage
	}
	if r.MaxKeysPerMinute == 0 {
		r.MaxKeysPerMinute = DefaultMaxKeysPerMinute
	}
	if r.MinKeystrokes <= 0 {
		r.MinKeystrokes = DefaultMinKeystrokes
	}
	if r.SuspectsForBot == 0 {
		r.SuspectsForBot = DefaultSuspectsForBot
	}
	return r
}

// Judge returns the verdict on the signals, with its reasons in the order
// of the Reason constants. It is a pure function of s and r. nil signals
// are those of a session with no recording and no user agent.
func (r Rules) Judge(s *Signals) Judgement {
	if s == nil {
		s = &Signals{Client: ParseUserAgent("")}
	}
	r = r.withDefaults()
	reasons := []Reason{}
	add := func(on bool, reason Reason) {
		if on {
			reasons = append(reasons, reason)
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
		add(r.MaxKeysPerMinute > 0 && s.Keystrokes >= r.MinKeystrokes && s.KeysPerMinute > r.MaxKeysPerMinute, ReasonTypingTooFast)
		add(s.Reported == nil, ReasonNoSignals)
		add(s.Pointer.Moves == 0 && s.Pointer.Touches == 0, ReasonNoPointerOrTouch)
		scripted := false
		for _, in := range s.Inputs {
			scripted = scripted || in.Method == Scripted
		}
		add(scripted, ReasonScriptedInput)
	}
	j := Judgement{Verdict: Human, Reasons: reasons}
	suspects := 0
	for _, reason := range reasons {
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
