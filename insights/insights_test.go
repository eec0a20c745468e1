package insights_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/consentkit/consentkit/insights"
)

const desktopUA = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/140.0.0.0 Safari/537.36"

func extract(t *testing.T, recording string, ua string) *insights.Signals {
	t.Helper()
	s, err := insights.Extract(strings.NewReader(recording), ua, insights.Limits{})
	if err != nil {
		t.Fatalf("Extract: %v", err)
	}
	return s
}

// A person's session: every signal as the recording says it.
func TestExtractPerson(t *testing.T) {
	s := extract(t, person().String(), desktopUA)
	want := &insights.Signals{
		Events:          len(person().events),
		Snapshot:        true,
		SecondsOnPage:   8,
		SecondsToSubmit: 7.2,
		Inputs: map[string]insights.Input{
			"email":  {Method: insights.Typed, Keystrokes: 16},
			"mobile": {Method: insights.Pasted, Pastes: 1},
			"city":   {Method: insights.Typed, Keystrokes: 6},
			"ref":    {Method: insights.Prefilled},
		},
		Keystrokes: 22,
		// (16-1 + 6-1) key presses over 15×200 ms + 5×250 ms: 282.352…
		KeysPerMinute: 282.35,
		Pointer:       insights.Pointer{Moves: 8 + 5 + 4 + 6 + 3, Clicks: 5},
		Reported: &insights.Reported{Viewport: insights.Viewport{Width: 1280, Height: 720},
			TimeZone: "America/Chicago", Language: "en-US"},
		Client: insights.Client{Browser: "Chrome", BrowserVersion: "140.0.0.0", OS: "Windows", OSVersion: "10.0", Device: "desktop"},
	}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("signals (-want +got):\n%s", diff)
	}
	if j := (insights.Rules{}).Judge(s, insights.Facts{}); j.Verdict != insights.Human || len(j.Reasons) != 0 || j.Reasons == nil {
		t.Errorf("Judge = %+v, want human with no reasons (an empty list)", j)
	}
}

// Each input method, by the rule of the package documentation.
func TestInputMethods(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rec    func() *rec
		key    string
		want   insights.Input
		absent bool // the key is not among the inputs
	}{
		{name: "typed", key: "email", want: insights.Input{Method: insights.Typed, Keystrokes: 3},
			rec: func() *rec {
				return newRec().typeInto(idEmail, "abc", 150).signals(map[string][2]int{"email": {3, 0}}, false)
			}},
		{name: "pasted", key: "email", want: insights.Input{Method: insights.Pasted, Pastes: 1},
			rec: func() *rec {
				return newRec().input(idEmail, "jane@example.com", "true").signals(map[string][2]int{"email": {0, 1}}, false)
			}},
		// Typed, then a paste: the paste is what the buyer needs to know.
		{name: "typed and pasted", key: "email", want: insights.Input{Method: insights.Pasted, Keystrokes: 4, Pastes: 1},
			rec: func() *rec {
				return newRec().typeInto(idEmail, "jane", 150).input(idEmail, "jane@example.com", "true").
					signals(map[string][2]int{"email": {4, 1}}, false)
			}},
		{name: "prefilled", key: "ref", want: insights.Input{Method: insights.Prefilled},
			rec: func() *rec { return newRec().signals(nil, false) }},
		// Typed or pasted into after the snippet started but before the
		// recorder did: the first snapshot holds the value, the snippet's
		// counts say whose it is.
		{name: "typed before the recorder started", key: "ref", want: insights.Input{Method: insights.Typed, Keystrokes: 3},
			rec: func() *rec { return newRec().signals(map[string][2]int{"ref": {3, 0}}, false) }},
		{name: "pasted before the recorder started", key: "ref", want: insights.Input{Method: insights.Pasted, Pastes: 1},
			rec: func() *rec { return newRec().signals(map[string][2]int{"ref": {0, 1}}, false) }},
		// A prefilled value the person then edits is theirs.
		{name: "prefilled then typed", key: "ref", want: insights.Input{Method: insights.Typed, Keystrokes: 1},
			rec: func() *rec {
				return newRec().input(idRef, "abcd", "true").signals(map[string][2]int{"ref": {1, 0}}, false)
			}},
		{name: "scripted", key: "city", want: insights.Input{Method: insights.Scripted},
			rec: func() *rec { return newRec().input(idCity, "Austin", "false").signals(nil, false) }},
		{name: "prefilled then scripted", key: "ref", want: insights.Input{Method: insights.Scripted},
			rec: func() *rec { return newRec().input(idRef, "xyz", "false").signals(nil, false) }},
		// setAttribute("value", …) on a field no one has changed shows the
		// value: a script's.
		{name: "value attribute set", key: "email", want: insights.Input{Method: insights.Scripted},
			rec: func() *rec {
				return newRec().incr(`{"source":0,"texts":[],"removes":[],"adds":[],"attributes":[{"id":10,"attributes":{"value":"bot@example.com"}}]}`).
					signals(nil, false)
			}},
		// A field added to the page with its value is the page's script's.
		{name: "added with a value", key: "promo", want: insights.Input{Method: insights.Scripted},
			rec: func() *rec {
				return newRec().incr(`{"source":0,"texts":[],"removes":[],"attributes":[],"adds":[{"parentId":5,"nextId":null,`+
					`"node":{"type":2,"tagName":"input","attributes":{"name":"promo","value":"SAVE"},"childNodes":[],"id":40}}]}`).
					signals(nil, false)
			}},
		// A field added empty and typed into is typed.
		{name: "added then typed", key: "promo", want: insights.Input{Method: insights.Typed, Keystrokes: 2},
			rec: func() *rec {
				return newRec().incr(`{"source":0,"texts":[],"removes":[],"attributes":[],"adds":[{"parentId":5,"nextId":null,`+
					`"node":{"type":2,"tagName":"input","attributes":{"name":"promo"},"childNodes":[],"id":40}}]}`).
					typeInto(40, "ab", 100).signals(map[string][2]int{"promo": {2, 0}}, false)
			}},
		{name: "autofilled", key: "msg", want: insights.Input{Method: insights.Autofilled},
			rec: func() *rec { return newRec().input(idMsg, "Hello", "true").signals(nil, false) }},
		// An input mask rewrites what the person types by script: the
		// person's key presses decide.
		{name: "typed through a mask", key: "mobile", want: insights.Input{Method: insights.Typed, Keystrokes: 3},
			rec: func() *rec {
				return newRec().input(idMobile, "(5", "false").input(idMobile, "(55", "false").input(idMobile, "(555)", "false").
					signals(map[string][2]int{"mobile": {3, 0}}, false)
			}},
		// Without the snippet's counts, typing cannot be told from autofill.
		{name: "no signals event", key: "email", want: insights.Input{Method: insights.Unknown},
			rec: func() *rec { return newRec().typeInto(idEmail, "abc", 150) }},
		// A recording made before input events said who caused them.
		{name: "not said who", key: "email", want: insights.Input{Method: insights.Unknown},
			rec: func() *rec { return newRec().input(idEmail, "a", "").signals(nil, false) }},
		// Key presses in the field tell it, whoever the recording says
		// changed it.
		{name: "not said who, typed", key: "email", want: insights.Input{Method: insights.Typed, Keystrokes: 1},
			rec: func() *rec {
				return newRec().input(idEmail, "a", "").signals(map[string][2]int{"email": {1, 0}}, false)
			}},
		{name: "no name, no id", key: "#17", want: insights.Input{Method: insights.Typed, Keystrokes: 1},
			rec: func() *rec {
				return newRec().input(idBare, "x", "true").signals(map[string][2]int{"#17": {1, 0}}, false)
			}},
		{name: "emptied", key: "email", absent: true,
			rec: func() *rec {
				return newRec().typeInto(idEmail, "a", 100).input(idEmail, "", "true").signals(map[string][2]int{"email": {2, 0}}, false)
			}},
		{name: "hidden", key: "consent_certificate_id", absent: true,
			rec: func() *rec { return newRec().input(idHidden, "c_123", "false").signals(nil, false) }},
		{name: "checkbox", key: "agree", absent: true,
			rec: func() *rec { return newRec().input(idAgree, "yes", "true").signals(nil, false) }},
		// A field the page's script added with a value and removed
		// before consent holds none.
		{name: "added, then removed", key: "promo", absent: true,
			rec: func() *rec {
				return newRec().incr(`{"source":0,"texts":[],"removes":[],"attributes":[],"adds":[{"parentId":5,"nextId":null,`+
					`"node":{"type":2,"tagName":"input","attributes":{"name":"promo","value":"SAVE"},"childNodes":[],"id":40}}]}`).
					at(100).incr(`{"source":0,"texts":[],"attributes":[],"adds":[],"removes":[{"parentId":5,"id":40}]}`).
					signals(nil, false)
			}},
		{name: "prefilled, then removed", key: "ref", absent: true,
			rec: func() *rec {
				return newRec().incr(`{"source":0,"texts":[],"attributes":[],"adds":[],"removes":[{"parentId":5,"id":16}]}`).
					signals(nil, false)
			}},
		// A node moved is removed and added back in one mutation (the
		// replayer removes first): it still holds its value.
		{name: "typed, then moved", key: "email", want: insights.Input{Method: insights.Typed, Keystrokes: 3},
			rec: func() *rec {
				return newRec().typeInto(idEmail, "abc", 150).
					incr(`{"source":0,"texts":[],"attributes":[],"adds":[{"parentId":4,"nextId":null,`+
						`"node":{"type":2,"tagName":"input","attributes":{"type":"email","name":"email","value":"abc"},"childNodes":[],"id":10}}],`+
						`"removes":[{"parentId":5,"id":10}]}`).
					signals(map[string][2]int{"email": {3, 0}}, false)
			}},
		// Removed and added again later: it holds a value again.
		{name: "removed, then added back", key: "ref", want: insights.Input{Method: insights.Scripted},
			rec: func() *rec {
				return newRec().incr(`{"source":0,"texts":[],"attributes":[],"adds":[],"removes":[{"parentId":5,"id":16}]}`).
					at(100).incr(`{"source":0,"texts":[],"removes":[],"attributes":[],"adds":[{"parentId":5,"nextId":null,`+
					`"node":{"type":2,"tagName":"input","attributes":{"name":"ref","value":"abc"},"childNodes":[],"id":16}}]}`).
					signals(nil, false)
			}},
		// A later full snapshot rebuilds the page: a field it does not
		// hold is gone; one it holds keeps what was done to it.
		{name: "added, then a full snapshot without it", key: "promo", absent: true,
			rec: func() *rec {
				return newRec().incr(`{"source":0,"texts":[],"removes":[],"attributes":[],"adds":[{"parentId":5,"nextId":null,`+
					`"node":{"type":2,"tagName":"input","attributes":{"name":"promo","value":"SAVE"},"childNodes":[],"id":40}}]}`).
					at(100).add(2, `{"node":`+page+`,"initialOffset":{"left":0,"top":0}}`).
					signals(nil, false)
			}},
		{name: "typed, then a full snapshot with it", key: "email", want: insights.Input{Method: insights.Typed, Keystrokes: 3},
			rec: func() *rec {
				return newRec().typeInto(idEmail, "abc", 150).
					at(100).add(2, `{"node":`+strings.Replace(page, `"name":"email"}`, `"name":"email","value":"abc"}`, 1)+`,"initialOffset":{"left":0,"top":0}}`).
					signals(map[string][2]int{"email": {3, 0}}, false)
			}},
		{name: "never filled", key: "msg", absent: true,
			rec: func() *rec { return newRec().signals(map[string][2]int{"msg": {3, 0}}, false) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := extract(t, tc.rec().String(), desktopUA)
			got, ok := s.Inputs[tc.key]
			if tc.absent {
				if ok {
					t.Errorf("inputs[%q] = %+v, want none", tc.key, got)
				}
				return
			}
			if !ok || got != tc.want {
				t.Errorf("inputs[%q] = %+v (listed %v), want %+v; all: %+v", tc.key, got, ok, tc.want, s.Inputs)
			}
			if j := (insights.Rules{}).Judge(s, insights.Facts{}); (got.Method == insights.Scripted) != hasReason(j, insights.ReasonScriptedInput) {
				t.Errorf("method %s, reasons %v", got.Method, j.Reasons)
			}
		})
	}
}

func hasReason(j insights.Judgement, r insights.Reason) bool {
	for _, x := range j.Reasons {
		if x == r {
			return true
		}
	}
	return false
}

// Each reason code, from a change to a person's session; the verdict
// follows the reasons' weights.
func TestReasons(t *testing.T) {
	scripted := func() *rec {
		// A script: the fields set with no event of a person's, the form
		// sent 3 s after load, no pointer.
		return newRec().at(1000).input(idEmail, "bot@example.com", "false").input(idMobile, "5550102000", "false").
			at(2000).incr(`{"source":2,"type":2,"id":18,"x":0,"y":0}`).signals(nil, false)
	}
	for _, tc := range []struct {
		name    string
		rec     string
		ua      string
		rules   insights.Rules
		verdict insights.Verdict
		reasons []insights.Reason
	}{
		{"person", person().String(), desktopUA, insights.Rules{}, insights.Human, []insights.Reason{}},
		{"no recording", "[]", desktopUA, insights.Rules{}, insights.Bot, []insights.Reason{insights.ReasonNoRecording}},
		{"no snapshot", `[{"type":3,"data":{"source":1,"positions":[{"x":1,"y":1,"id":1,"timeOffset":0}]},"timestamp":1000},` +
			`{"type":5,"data":{"tag":"consentkit/signals","payload":{"fields":{}}},"timestamp":9000}]`,
			desktopUA, insights.Rules{}, insights.Bot, []insights.Reason{insights.ReasonNoSnapshot}},
		{"plain HTTP client", person().String(), "Go-http-client/1.1", insights.Rules{}, insights.Bot,
			[]insights.Reason{insights.ReasonNotABrowser}},
		{"no user agent", person().String(), "", insights.Rules{}, insights.Bot, []insights.Reason{insights.ReasonNotABrowser}},
		{"crawler", person().String(), "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
			insights.Rules{}, insights.Bot, []insights.Reason{insights.ReasonNotABrowser}},
		{"headless", person().String(), "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/140.0.0.0 Safari/537.36",
			insights.Rules{}, insights.Bot, []insights.Reason{insights.ReasonHeadlessUserAgent}},
		{"webdriver", strings.Replace(person().String(), `"webdriver":false`, `"webdriver":true`, 1), desktopUA,
			insights.Rules{}, insights.Bot, []insights.Reason{insights.ReasonWebdriver}},
		{"submitted too fast", newRec().at(300).move(3).at(200).input(idMsg, "x", "true").at(500).click(idButton).
			signals(map[string][2]int{"msg": {1, 0}}, false).String(), desktopUA,
			insights.Rules{}, insights.Bot, []insights.Reason{insights.ReasonSubmittedTooFast}},
		{"submitted too fast, rule off", newRec().at(300).move(3).at(500).click(idButton).signals(nil, false).String(), desktopUA,
			insights.Rules{MinSecondsOnPage: -1}, insights.Human, []insights.Reason{}},
		{"typing too fast", newRec().at(2000).move(4).typeInto(idEmail, "jane@example.com", 20).at(3000).click(idButton).
			signals(map[string][2]int{"email": {16, 0}}, false).String(), desktopUA,
			insights.Rules{}, insights.Bot, []insights.Reason{insights.ReasonTypingTooFast}},
		// The same pace over fewer keys than MinKeystrokes is not judged.
		{"a short burst", newRec().at(2000).move(4).typeInto(idEmail, "jane", 20).at(3000).click(idButton).
			signals(map[string][2]int{"email": {4, 0}}, false).String(), desktopUA,
			insights.Rules{}, insights.Human, []insights.Reason{}},
		// Keys pressed before the recorder started are the snippet's count,
		// not the recording's: a bot's pace over what was recorded stands.
		{"typing too fast, some keys before the recorder started", newRec().at(2000).move(4).typeInto(idEmail, "jane@example.com", 20).
			at(3000).click(idButton).signals(map[string][2]int{"email": {20, 0}}, false).String(), desktopUA,
			insights.Rules{}, insights.Bot, []insights.Reason{insights.ReasonTypingTooFast}},
		{"typing too fast, min_keystrokes negative", newRec().at(2000).move(4).typeInto(idEmail, "jane@example.com", 20).at(3000).click(idButton).
			signals(map[string][2]int{"email": {16, 0}}, false).String(), desktopUA,
			insights.Rules{MinKeystrokes: -1}, insights.Human, []insights.Reason{}},
		{"typing fast, a higher limit", newRec().at(2000).move(4).typeInto(idEmail, "jane@example.com", 20).at(3000).click(idButton).
			signals(map[string][2]int{"email": {16, 0}}, false).String(), desktopUA,
			insights.Rules{MaxKeysPerMinute: 5000}, insights.Human, []insights.Reason{}},
		{"no signals", strings.Replace(person().String(), `"tag":"consentkit/signals"`, `"tag":"shop/cart"`, 1), desktopUA,
			insights.Rules{}, insights.Suspect, []insights.Reason{insights.ReasonNoSignals}},
		{"no pointer", newRec().at(2000).input(idMsg, "Hello", "true").at(1000).signals(nil, false).String(), desktopUA,
			insights.Rules{}, insights.Suspect, []insights.Reason{insights.ReasonNoPointerOrTouch}},
		{"touch", newRec().at(2000).incr(`{"source":2,"type":7,"id":13,"x":5,"y":5,"pointerType":2}`).input(idMsg, "Hello", "true").
			at(1000).signals(nil, false).String(), desktopUA, insights.Rules{}, insights.Human, []insights.Reason{}},
		{"scripted input", newRec().at(2000).move(5).input(idCity, "Austin", "false").at(1000).click(idButton).signals(nil, false).String(),
			desktopUA, insights.Rules{}, insights.Suspect, []insights.Reason{insights.ReasonScriptedInput}},
		{"two suspicions", scripted().String(), desktopUA, insights.Rules{}, insights.Bot,
			[]insights.Reason{insights.ReasonNoPointerOrTouch, insights.ReasonScriptedInput}},
		{"two suspicions, three needed", scripted().String(), desktopUA, insights.Rules{SuspectsForBot: 3}, insights.Suspect,
			[]insights.Reason{insights.ReasonNoPointerOrTouch, insights.ReasonScriptedInput}},
		{"suspicions never bot", scripted().String(), desktopUA, insights.Rules{SuspectsForBot: -1}, insights.Suspect,
			[]insights.Reason{insights.ReasonNoPointerOrTouch, insights.ReasonScriptedInput}},
		// A plain HTTP client's made-up events: every rule it fails.
		{"made up", `[{"type":3,"data":{"source":5,"text":"bot@example.com","id":10},"timestamp":1000},` +
			`{"type":3,"data":{"source":2,"type":2,"id":18},"timestamp":1100}]`, "Go-http-client/1.1", insights.Rules{}, insights.Bot,
			[]insights.Reason{insights.ReasonNoSnapshot, insights.ReasonNotABrowser, insights.ReasonSubmittedTooFast,
				insights.ReasonNoSignals, insights.ReasonNoPointerOrTouch}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := extract(t, tc.rec, tc.ua)
			got := tc.rules.Judge(s, insights.Facts{})
			want := insights.Judgement{Verdict: tc.verdict, Reasons: tc.reasons}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Judge (-want +got):\n%s\nsignals: %+v", diff, s)
			}
		})
	}
}

// SecondsOnPage runs from the page's load: the page's age the snippet
// reported, and the time from its report to the last event; without it
// (an older snippet, or an age that is none), or when the recording is
// longer, from the first event.
func TestSecondsOnPage(t *testing.T) {
	// The recorder started late: its first event is 4 s after the page
	// began loading, the person ticked and sent within a second of it.
	late := func(age any) *rec {
		return newRec().at(300).move(3).at(400).click(idAgree).at(200).click(idButton).signalsAged(nil, age).at(100).move(1)
	}
	for _, tc := range []struct {
		name    string
		rec     *rec
		seconds float64
		fast    bool // submitted_too_fast
	}{
		{"page age", late(4000), 4.1, false},
		{"page age, fractional", late(1234.5), 1.3345, true},
		// An age shorter than the recording is none the browser measured:
		// the recording's span stands.
		{"page age zero", late(0), 1, true},
		{"older snippet", newRec().at(300).move(3).at(400).click(idAgree).at(200).click(idButton).signals(nil, false).at(100).move(1), 1, true},
		{"negative age", late(-5000), 1, true},
		{"age past a year", late(1e12), 1, true},
		{"age as text", late("4000"), 1, true},
		{"age null", late(nil), 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := extract(t, tc.rec.String(), desktopUA)
			if d := s.SecondsOnPage - tc.seconds; d < -1e-9 || d > 1e-9 {
				t.Errorf("SecondsOnPage = %v, want %v", s.SecondsOnPage, tc.seconds)
			}
			if s.SecondsToSubmit > s.SecondsOnPage {
				t.Errorf("SecondsToSubmit %v > SecondsOnPage %v", s.SecondsToSubmit, s.SecondsOnPage)
			}
			j := (insights.Rules{}).Judge(s, insights.Facts{})
			if got := hasReason(j, insights.ReasonSubmittedTooFast); got != tc.fast {
				t.Errorf("reasons %v: submitted_too_fast %v, want %v", j.Reasons, got, tc.fast)
			}
		})
	}
}

// A scripted session stays caught whichever one flag it masks: behaviour
// rules catch what the flags miss.
func TestMaskingOneFlag(t *testing.T) {
	headless := "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/140.0.0.0 Safari/537.36"
	session := func(webdriver bool) string {
		// Driven at machine pace: fields filled by script or typed at
		// 10 ms a key, one click with no pointer move, sent 1 s in.
		return newRec().at(100).input(idCity, "Austin", "false").typeInto(idEmail, "bot@example.com", 10).
			at(700).incr(`{"source":2,"type":2,"id":18,"x":0,"y":0}`).
			signals(map[string][2]int{"email": {15, 0}}, webdriver).String()
	}
	for _, tc := range []struct {
		name      string
		webdriver bool
		ua        string
	}{
		{"no flag masked", true, headless},
		{"webdriver masked", false, headless},
		{"user agent masked", true, desktopUA},
		{"both masked", false, desktopUA},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := (insights.Rules{}).Judge(extract(t, session(tc.webdriver), tc.ua), insights.Facts{})
			if j.Verdict != insights.Bot {
				t.Errorf("Judge = %+v, want bot", j)
			}
			for _, r := range []insights.Reason{insights.ReasonSubmittedTooFast, insights.ReasonTypingTooFast,
				insights.ReasonNoPointerOrTouch, insights.ReasonScriptedInput} {
				if !hasReason(j, r) {
					t.Errorf("reasons %v lack %s", j.Reasons, r)
				}
			}
		})
	}
}

// nil signals are a session with neither recording nor user agent.
func TestJudgeNil(t *testing.T) {
	want := insights.Judgement{Verdict: insights.Bot, Reasons: []insights.Reason{insights.ReasonNoRecording, insights.ReasonNotABrowser}}
	if diff := cmp.Diff(want, (insights.Rules{}).Judge(nil, insights.Facts{})); diff != "" {
		t.Errorf("Judge(nil) (-want +got):\n%s", diff)
	}
}

// The reasons' weights are as documented.
func TestReasonVerdict(t *testing.T) {
	suspect := map[insights.Reason]bool{insights.ReasonNoSignals: true, insights.ReasonNoPointerOrTouch: true, insights.ReasonScriptedInput: true}
	for _, r := range []insights.Reason{insights.ReasonNoRecording, insights.ReasonNoSnapshot, insights.ReasonNotABrowser,
		insights.ReasonHeadlessUserAgent, insights.ReasonWebdriver, insights.ReasonSubmittedTooFast, insights.ReasonTypingTooFast,
		insights.ReasonNoSignals, insights.ReasonNoPointerOrTouch, insights.ReasonScriptedInput} {
		want := insights.Bot
		if suspect[r] {
			want = insights.Suspect
		}
		if got := r.Verdict(); got != want {
			t.Errorf("%s.Verdict() = %s, want %s", r, got, want)
		}
	}
}

// The snippet's report, as the browser gave it, and pointer counts of
// every kind.
func TestReportedAndPointer(t *testing.T) {
	r := newRec().at(1000).move(3).
		incr(`{"source":6,"positions":[{"x":1,"y":1,"id":4,"timeOffset":0},{"x":2,"y":2,"id":4,"timeOffset":-10}]}`).
		incr(`{"source":12,"positions":[{"x":1,"y":1,"id":4,"timeOffset":0}]}`).
		incr(`{"source":2,"type":7,"id":13,"x":5,"y":5}`).incr(`{"source":2,"type":9,"id":13,"x":5,"y":5}`).
		incr(`{"source":2,"type":4,"id":13,"x":5,"y":5}`).click(idMsg).
		incr(`{"source":3,"id":1,"x":0,"y":120}`).incr(`{"source":3,"id":1,"x":0,"y":240}`).
		add(5, `{"tag":"consentkit/signals","payload":{"v":1,"fields":{},"webdriver":true,"viewport":{"width":390,"height":844},`+
			`"time_zone":"Europe/Paris","language":"fr-FR","framed":true,"parent_origin":"https://publisher.example","later":{"x":[1]}}}`)
	s := extract(t, r.String(), "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1")
	if want := (insights.Pointer{Moves: 3 + 2 + 1, Clicks: 1, Touches: 1, Scrolls: 2}); s.Pointer != want {
		t.Errorf("pointer %+v, want %+v", s.Pointer, want)
	}
	want := &insights.Reported{Webdriver: true, Viewport: insights.Viewport{Width: 390, Height: 844}, TimeZone: "Europe/Paris",
		Language: "fr-FR", IsFramed: true, ParentOrigin: "https://publisher.example"}
	if diff := cmp.Diff(want, s.Reported); diff != "" {
		t.Errorf("reported (-want +got):\n%s", diff)
	}
	if s.Client.Device != "mobile" || s.Client.OS != "iOS" || s.Client.Browser != "Safari" {
		t.Errorf("client %+v, want Safari on iOS, mobile", s.Client)
	}
}

// The recording's members are read as the replayer reads them: in any
// order, names exactly, a repeated name's last value.
func TestMembersAsJSONParseReadsThem(t *testing.T) {
	// data before type; the timestamp first.
	reordered := `[{"timestamp":1000,"data":{"href":"x","width":1,"height":1},"type":4},` +
		`{"data":{"initialOffset":{"left":0,"top":0},"node":` + page + `},"timestamp":1000,"type":2},` +
		`{"data":{"userTriggered":false,"id":12,"text":"Austin","source":5},"timestamp":2000,"type":3},` +
		`{"data":{"payload":{"fields":{}},"tag":"consentkit/signals"},"type":5,"timestamp":3000}]`
	s := extract(t, reordered, desktopUA)
	if s.Inputs["city"].Method != insights.Scripted || s.Reported == nil || s.SecondsOnPage != 2 {
		t.Errorf("reordered members: %+v", s)
	}
	// "Source" is not "source": the replayer would not see an input event.
	s = extract(t, newRec().incr(`{"Source":5,"text":"Austin","userTriggered":false,"id":12}`).signals(nil, false).String(), desktopUA)
	if _, ok := s.Inputs["city"]; ok {
		t.Errorf("an event with \"Source\" counted as an input: %+v", s.Inputs)
	}
	// A repeated member: the last one counts.
	s = extract(t, newRec().incr(`{"source":1,"source":5,"text":"Austin","userTriggered":true,"userTriggered":false,"id":12}`).
		signals(nil, false).String(), desktopUA)
	if s.Inputs["city"].Method != insights.Scripted || s.Pointer.Moves != 0 {
		t.Errorf("repeated members: %+v %+v", s.Inputs, s.Pointer)
	}
	// A repeated attributes list: the last one is read whole, even of a
	// node the first one named.
	s = extract(t, newRec().incr(`{"source":0,"texts":[],"removes":[],"adds":[],`+
		`"attributes":[{"id":16,"attributes":{"value":"abc"}}],"attributes":[{"id":16,"attributes":{"value":"bot"}}]}`).
		signals(nil, false).String(), desktopUA)
	if s.Inputs["ref"].Method != insights.Scripted {
		t.Errorf("a repeated attributes list: ref %+v, want scripted", s.Inputs["ref"])
	}
	s = extract(t, `[{"type":2,"data":{"node":{"type":0,"id":1}},"timestamp":1,"data":{"node":`+page+`}}]`, desktopUA)
	if s.Inputs["ref"].Method != insights.Prefilled {
		t.Errorf("a repeated data member: %+v", s.Inputs)
	}
}

// Anything that is not a JSON array of rrweb events is ErrMalformed,
// never a panic or a partial answer.
func TestMalformed(t *testing.T) {
	for _, in := range []string{
		``, ` `, `{}`, `null`, `"[]"`, `[`, `[{`, `[{"type":3,"timestamp":1}`, `[]]`, `[] []`, `[],`, `[1]`, `[[]]`, `[null]`,
		`[{"timestamp":1}]`, `[{"type":3}]`, `[{"type":"3","timestamp":1}]`, `[{"type":3,"timestamp":"1"}]`,
		`[{"type":3.5,"timestamp":1}]`, `[{"type":3,"timestamp":-1}]`, `[{"Type":3,"timestamp":1}]`,
		`[{"type":3,"timestamp":1,"data":{"source":5,}}]`, `[{"type":3,"timestamp":1e999}]`, `[{"type":1e999,"timestamp":1}]`,
		`[{"type":3,"timestamp":1,"data":{"text":"\x00"}}]`, "[{\"type\":3,\"timestamp\":1,\"data\":{\"text\":\"\xff\"}}] x",
	} {
		s, err := insights.Extract(strings.NewReader(in), desktopUA, insights.Limits{})
		if !errors.Is(err, insights.ErrMalformed) || s != nil {
			t.Errorf("Extract(%q) = %v, %v; want ErrMalformed", in, s, err)
		}
	}
}

// Past a limit, Extract stops with ErrTooLarge; at it, it reads on.
func TestLimits(t *testing.T) {
	rec := person().String()
	for _, tc := range []struct {
		name string
		in   string
		lim  insights.Limits
		ok   bool
	}{
		{"bytes, at the limit", rec, insights.Limits{MaxBytes: int64(len(rec))}, true},
		{"bytes, one over", rec, insights.Limits{MaxBytes: int64(len(rec)) - 1}, false},
		{"depth", rec, insights.Limits{MaxDepth: 9}, false}, // the page's tree is deeper
		{"depth, enough", rec, insights.Limits{MaxDepth: 14}, true},
		{"nesting", strings.Repeat("[", 5000) + strings.Repeat("]", 5000), insights.Limits{}, false},
		{"fields", rec, insights.Limits{MaxInputs: 5}, false}, // the page has 6 text fields
		{"fields, enough", rec, insights.Limits{MaxInputs: 6}, true},
		{"reported fields", newRec().signals(map[string][2]int{"a": {1, 0}, "b": {1, 0}, "c": {1, 0}, "d": {1, 0}}, false).String(),
			insights.Limits{MaxInputs: 6}, true},
		{"reported fields, too many", newRec().signals(map[string][2]int{"a": {1, 0}, "b": {1, 0}, "c": {1, 0}, "d": {1, 0},
			"e": {1, 0}, "f": {1, 0}, "g": {1, 0}}, false).String(), insights.Limits{MaxInputs: 6}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := insights.Extract(strings.NewReader(tc.in), desktopUA, tc.lim)
			if tc.ok && err != nil || !tc.ok && !errors.Is(err, insights.ErrTooLarge) {
				t.Errorf("Extract: %v, want ok %v (else ErrTooLarge)", err, tc.ok)
			}
		})
	}
}

// Another custom event's payload is not the snippet's report: not read,
// nor held to its bounds.
func TestOtherCustomEvents(t *testing.T) {
	var fields []string
	for i := range 20 {
		fields = append(fields, fmt.Sprintf(`"f%d":{"keys":1,"pastes":0}`, i))
	}
	other := `{"tag":"shop/cart","payload":{"fields":{` + strings.Join(fields, ",") + `},"webdriver":true}}`
	r := person().add(5, other).String()
	s, err := insights.Extract(strings.NewReader(r), desktopUA, insights.Limits{MaxInputs: 10})
	if err != nil || s.Reported == nil || s.Reported.Webdriver || s.Inputs["email"].Keystrokes != 16 {
		t.Errorf("Extract = %+v, %v; want the snippet's report alone", s, err)
	}
}

// A reader's own failure is returned as it is, not as a malformed recording.
func TestReaderError(t *testing.T) {
	boom := errors.New("disk on fire")
	_, err := insights.Extract(&failing{data: person().String()[:500], err: boom}, desktopUA, insights.Limits{})
	if !errors.Is(err, boom) || errors.Is(err, insights.ErrMalformed) {
		t.Errorf("Extract = %v, want the reader's error", err)
	}
}

type failing struct {
	data string
	err  error
}

func (f *failing) Read(p []byte) (int, error) {
	if f.data == "" {
		return 0, f.err
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}

// The real recording of a form (testdata), made by rrweb before the
// snippet recorded userTriggered and its signals: the fields are there,
// how they were filled is unknown, and the verdict says why it is unsure.
func TestRealRecording(t *testing.T) {
	f, err := os.Open("../testdata/rrweb-form-recording.json")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	s, err := insights.Extract(f, desktopUA, insights.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	unknown := insights.Input{Method: insights.Unknown}
	want := map[string]insights.Input{"name": unknown, "email": unknown, "msg": unknown}
	if diff := cmp.Diff(want, s.Inputs); diff != "" {
		t.Errorf("inputs (-want +got):\n%s", diff)
	}
	if s.Events != 80 || !s.Snapshot || s.SecondsOnPage != 5.642 || s.Pointer.Moves == 0 || s.Pointer.Clicks == 0 || s.Reported != nil {
		t.Errorf("signals %+v", s)
	}
	want2 := insights.Judgement{Verdict: insights.Suspect, Reasons: []insights.Reason{insights.ReasonNoSignals}}
	if diff := cmp.Diff(want2, (insights.Rules{}).Judge(s, insights.Facts{})); diff != "" {
		t.Errorf("Judge (-want +got):\n%s", diff)
	}
}

// Insights hold counts and categories, never content: nothing typed in
// the recording reaches the signals.
func TestNoContent(t *testing.T) {
	s := extract(t, person().String(), desktopUA)
	b := fmt.Sprintf("%+v %+v %+v", *s, s.Inputs, *s.Reported)
	for _, typed := range []string{"jane", "example.com", "5550102000", "Austin", "abc"} {
		if strings.Contains(b, typed) {
			t.Errorf("the signals hold %q: %s", typed, b)
		}
	}
}

// FuzzExtract: whatever the bytes, Extract answers signals or an error of
// its own kinds (or a reader's: none here), and never panics.
func FuzzExtract(f *testing.F) {
	f.Add(person().String())
	f.Add("[]")
	f.Add(`[{"type":2,"data":{"node":` + page + `},"timestamp":1}]`)
	if b, err := os.ReadFile("../testdata/rrweb-form-recording.json"); err == nil {
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := insights.Extract(strings.NewReader(in), desktopUA, insights.Limits{MaxDepth: 64, MaxInputs: 64})
		if err != nil {
			if s != nil || !errors.Is(err, insights.ErrMalformed) && !errors.Is(err, insights.ErrTooLarge) {
				t.Fatalf("Extract = %v, %v", s, err)
			}
			return
		}
		if s.Events < 0 || s.SecondsOnPage < 0 || s.SecondsToSubmit < 0 || s.KeysPerMinute < 0 || len(s.Inputs) > 64 {
			t.Fatalf("signals %+v", s)
		}
		(insights.Rules{}).Judge(s, insights.Facts{})
	})
}

// events is a recording of n events, written as it is read: a page, then
// pointer moves and a person's input events, a snapshot's worth of bytes
// each. Every mebibyte read, it notes the live heap's peak in peak.
type events struct {
	n, i    int
	pending []byte
	read    int
	peak    *uint64
}

func (r *events) Read(p []byte) (int, error) {
	for len(r.pending) == 0 {
		switch {
		case r.i == 0:
			r.pending = []byte(`[{"type":2,"data":{"node":` + page + `},"timestamp":1000}`)
		case r.i <= r.n:
			r.pending = fmt.Appendf(nil, `,{"type":3,"data":{"source":1,"positions":[{"x":%d,"y":1,"id":4,"timeOffset":0}],"pad":"%s"},"timestamp":%d}`+
				`,{"type":3,"data":{"source":5,"text":"%d","userTriggered":true,"id":10},"timestamp":%d}`,
				r.i, strings.Repeat("x", 400), 1000+r.i, r.i, 1000+r.i)
		case r.i == r.n+1:
			r.pending = []byte("]")
		default:
			return 0, io.EOF
		}
		r.i++
	}
	n := copy(p, r.pending)
	r.pending = r.pending[n:]
	if r.read/(1<<20) != (r.read+n)/(1<<20) {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		*r.peak = max(*r.peak, m.HeapAlloc)
	}
	r.read += n
	return n, nil
}

// Extract's memory does not grow with the recording: 12 MiB of events
// stream through a heap that stays smaller (it holds one event's facts and
// the fields tracked, and what the collector has yet to free: about 4 MiB
// here, the collector's least goal).
func TestMemoryBounded(t *testing.T) {
	var peak uint64
	in := &events{n: 21_000, peak: &peak}
	s, err := insights.Extract(in, desktopUA, insights.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Events != 2*in.n+1 || in.read < 12<<20 || s.Inputs["email"].Method != insights.Unknown {
		t.Fatalf("read %d bytes, %d events, inputs %+v", in.read, s.Events, s.Inputs)
	}
	t.Logf("%d MiB read; the heap's peak was %.1f MiB", in.read>>20, float64(peak)/(1<<20))
	if peak > 8<<20 {
		t.Errorf("the heap reached %d MiB reading a %d MiB recording", peak>>20, in.read>>20)
	}
}

// A page that draws its form anew, with new nodes for the same fields
// (removing the old), keeps its fields by name: a long session of it is
// within the limits (MaxNodes), not a recording past them, and its typing
// is measured on the fields as drawn last. Past MaxNodes, it is too large.
func TestFormDrawnAnew(t *testing.T) {
	r := newRec()
	const fields, drawings = 12, 1000 // 12,000 nodes: more than MaxInputs
	id := 100
	for d := range drawings {
		var adds, removes []string
		for f := range fields {
			if d > 0 {
				removes = append(removes, fmt.Sprintf(`{"parentId":5,"id":%d}`, id-fields))
			}
			adds = append(adds, fmt.Sprintf(`{"parentId":5,"nextId":null,"node":{"type":2,"tagName":"input","attributes":{"name":"f%d"},"childNodes":[],"id":%d}}`, f, id))
			id++
		}
		r.at(10).incr(`{"source":0,"texts":[],"attributes":[],"removes":[` + strings.Join(removes, ",") +
			`],"adds":[` + strings.Join(adds, ",") + `]}`)
	}
	r.at(500).typeInto(id-fields, "jane", 200).signals(map[string][2]int{"f0": {4, 0}}, false)
	s, err := insights.Extract(strings.NewReader(r.String()), desktopUA, insights.Limits{})
	if err != nil {
		t.Fatalf("Extract: %v", err)
	}
	if in := s.Inputs["f0"]; in.Method != insights.Typed || in.Keystrokes != 4 {
		t.Errorf("f0, typed into as drawn last: %+v", in)
	}
	if _, err := insights.Extract(strings.NewReader(r.String()), desktopUA, insights.Limits{MaxNodes: 5000}); !errors.Is(err, insights.ErrTooLarge) {
		t.Errorf("past MaxNodes: %v, want ErrTooLarge", err)
	}
}

// The pace of typing counts what the recording saw. A person types 12
// keys into a field before the recorder started (the snippet counts them,
// the first snapshot holds the value), then 2 more, 250 ms apart, once it
// records: one interval in 250 ms, 240 keys a minute, not 14 presses in
// 250 ms. The keystrokes are all 14.
func TestPaceOfWhatWasRecorded(t *testing.T) {
	r := newRec().at(300).move(6).click(idRef).
		at(250).input(idRef, "abcd", "true").at(250).input(idRef, "abcde", "true").
		at(800).move(4).click(idAgree).input(idAgree, "on", "true").at(700).move(3).click(idButton)
	r.signalsAged(map[string][2]int{"ref": {14, 0}}, 9000)
	s := extract(t, r.String(), desktopUA)
	if in := s.Inputs["ref"]; in.Method != insights.Typed || in.Keystrokes != 14 || s.Keystrokes != 14 || s.KeysPerMinute != 240 {
		t.Errorf("ref %+v, keystrokes %d, keys per minute %v; want typed, 14, 14, 240", in, s.Keystrokes, s.KeysPerMinute)
	}
	if j := (insights.Rules{}).Judge(s, insights.Facts{}); j.Verdict != insights.Human {
		t.Errorf("a person typing 4 keys a second once recorded: %s %v", j.Verdict, j.Reasons)
	}
}

// A field's key is cut to 128 UTF-16 units as the snippet's
// String.prototype.slice cuts it: a character of two units that the cut
// splits leaves its high surrogate, which the snippet's JSON escapes
// (\ud83d) and Go reads as U+FFFD. The counts meet their field.
func TestKeyCutMidSurrogate(t *testing.T) {
	for _, name := range []string{strings.Repeat("a", 127) + "\U0001F600", strings.Repeat("a", 127) + "\U0001F600bc"} {
		r := newRec().incr(`{"source":0,"texts":[],"removes":[],"attributes":[],"adds":[{"parentId":5,"nextId":null,`+
			`"node":{"type":2,"tagName":"input","attributes":{"name":"`+name+`"},"childNodes":[],"id":40}}]}`).
			move(3).typeInto(40, "abc", 200)
		r.add(5, `{"tag":"consentkit/signals","payload":{"v":1,"fields":{"`+strings.Repeat("a", 127)+`\ud83d":{"keys":3,"pastes":0}},"webdriver":false}}`)
		s := extract(t, r.String(), desktopUA)
		key := strings.Repeat("a", 127) + "\uFFFD"
		if in := s.Inputs[key]; len(s.Inputs) != 2 || in.Method != insights.Typed || in.Keystrokes != 3 {
			t.Errorf("%d bytes: inputs %+v, want %q typed with 3 keystrokes", len(name), s.Inputs, key)
		}
	}
	// A character of two units within the limit is kept whole.
	name := strings.Repeat("a", 126) + "\U0001F600"
	r := newRec().incr(`{"source":0,"texts":[],"removes":[],"attributes":[],"adds":[{"parentId":5,"nextId":null,`+
		`"node":{"type":2,"tagName":"input","attributes":{"name":"`+name+`x"},"childNodes":[],"id":40}}]}`).
		move(3).typeInto(40, "abc", 200).signals(map[string][2]int{name: {3, 0}}, false)
	if in := extract(t, r.String(), desktopUA).Inputs[name]; in.Method != insights.Typed || in.Keystrokes != 3 {
		t.Errorf("a key of 128 units ending in a pair: %+v, want typed with 3 keystrokes", in)
	}
}

// longNames is a recording whose mutations each add one text field with a
// name of size bytes: the longest JSON string is one name. Every mebibyte
// read, it notes the live heap's peak after a collection in peak.
type longNames struct {
	n, i, size int
	pending    []byte
	peak       *uint64
	read       int
}

func (r *longNames) Read(p []byte) (int, error) {
	for len(r.pending) == 0 {
		switch {
		case r.i == 0:
			r.pending = []byte(`[{"type":2,"data":{"node":` + page + `},"timestamp":1000}`)
		case r.i <= r.n:
			name := fmt.Sprintf("f%06d", r.i) + strings.Repeat("x", r.size)
			r.pending = fmt.Appendf(nil, `,{"type":3,"data":{"source":0,"texts":[],"removes":[],"attributes":[],"adds":[{"parentId":5,"nextId":null,`+
				`"node":{"type":2,"tagName":"input","attributes":{"name":"%s"},"childNodes":[],"id":%d}}]},"timestamp":%d}`, name, 1000+r.i, 1000+r.i)
		case r.i == r.n+1:
			r.pending = []byte("]")
		default:
			return 0, io.EOF
		}
		r.i++
	}
	n := copy(p, r.pending)
	r.pending = r.pending[n:]
	if r.read/(1<<20) != (r.read+n)/(1<<20) {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		*r.peak = max(*r.peak, m.HeapAlloc)
	}
	r.read += n
	return n, nil
}

// A field's key, cut from a long name, is a copy: the fields tracked do
// not keep their whole names, and the heap stays bounded by the longest
// string, not the sum of the names (the package documentation's Bounds).
func TestLongNamesNotKept(t *testing.T) {
	var peak uint64
	in := &longNames{n: 24, size: 1 << 20, peak: &peak}
	if _, err := insights.Extract(in, desktopUA, insights.Limits{}); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d MiB read, longest string 1 MiB; the live heap's peak was %.1f MiB", in.read>>20, float64(peak)/(1<<20))
	if peak > 8<<20 {
		t.Errorf("the live heap reached %d MiB reading %d MiB whose longest string is 1 MiB", peak>>20, in.read>>20)
	}
}
