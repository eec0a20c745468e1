package insights

import (
	"strings"

	"github.com/mileusna/useragent"
)

// Signals are what a recording and the consent request say about how the
// form was filled (D50): counts and categories, never what was typed.
type Signals struct {
	// Events is the number of events in the recording.
	Events int `json:"events"`
	// Snapshot is whether the recording holds a full snapshot: a page.
	Snapshot bool `json:"snapshot"`
	// SecondsOnPage is the time from the page's load to consent (a
	// captured session ends at consent): the page's age that the snippet
	// reported at submit (its signals event's page_age_ms, since the
	// navigation began) and the time from that event to the last, or the
	// time from the first event to the last if that is longer. A recording
	// without the age (made by an older snippet) gives the time from its
	// first event to its last, which misses the time before the recorder
	// started.
	SecondsOnPage float64 `json:"seconds_on_page"`
	// SecondsToSubmit is the time from the first interaction (a pointer
	// move, a click or other press, a touch, a change the person made) to
	// the last event; 0 when there was none.
	SecondsToSubmit float64 `json:"seconds_to_submit"`
	// Inputs are the text fields that hold a value at consent, by key (the
	// field's name, else its id, else "#" and its id in the recording).
	Inputs map[string]Input `json:"inputs"`
	// Keystrokes is the number of key presses in the fields of Inputs.
	Keystrokes int `json:"keystrokes"`
	// KeysPerMinute is the pace of typing the recording saw: for each
	// field, its key presses the recording can have seen (the fewer of
	// its presses and its recorded changes) less one, summed over the
	// fields, over the time from each field's first recorded change to its
	// last, summed too (at least a millisecond), to the hundredth. 0 when
	// no field had two. Presses before the recorder started (the snippet
	// counts from its own start) are in Keystrokes, not in the pace.
	KeysPerMinute float64 `json:"keys_per_minute"`
	// Pointer counts the pointer's and fingers' acts.
	Pointer Pointer `json:"pointer"`
	// Reported is what the snippet reported at submit, nil when the
	// recording holds no signals event.
	Reported *Reported `json:"reported,omitempty"`
	// Client is the consent request's user agent, parsed.
	Client Client `json:"client"`
}

// Input is how one text field was filled.
type Input struct {
	Method Method `json:"method"`
	// Keystrokes and Pastes are the snippet's counts of the person's key
	// presses and pastes in the field.
	Keystrokes int `json:"keystrokes"`
	Pastes     int `json:"pastes"`
}

// Method is how a field got its value; the package documentation gives
// the rule.
type Method string

// The input methods.
const (
	Typed      Method = "typed"
	Pasted     Method = "pasted"
	Prefilled  Method = "prefilled"
	Scripted   Method = "scripted"
	Autofilled Method = "autofilled"
	Unknown    Method = "unknown"
)

// Pointer counts what the recorder saw of the pointer and of touch.
type Pointer struct {
	// Moves is the number of pointer positions recorded (mouse, pen, drag
	// and touch moves; the recorder samples them).
	Moves int `json:"moves"`
	// Clicks is the number of click events.
	Clicks int `json:"clicks"`
	// Touches is the number of touches begun.
	Touches int `json:"touches"`
	// Scrolls is the number of scroll events.
	Scrolls int `json:"scrolls"`
}

// Reported is what the snippet's signals event says, as the browser
// reported it.
type Reported struct {
	Webdriver    bool     `json:"webdriver"`
	Viewport     Viewport `json:"viewport"`
	TimeZone     string   `json:"time_zone"`
	Language     string   `json:"language"`
	IsFramed     bool     `json:"is_framed"`
	ParentOrigin string   `json:"parent_origin"` // empty when the browser did not tell it
}

// Viewport is a size in CSS pixels.
type Viewport struct {
	Width  int `json:"width"`
	Height int `json:"height"`
}

// Client is a user agent, parsed.
type Client struct {
	Browser        string `json:"browser"`
	BrowserVersion string `json:"browser_version"`
	OS             string `json:"os"`
	OSVersion      string `json:"os_version"`
	// Device is desktop, mobile, tablet or unknown.
	Device string `json:"device"`
	// Headless is whether the agent is a headless browser's.
	Headless bool `json:"headless"`
	// NotABrowser is whether the agent is empty, does not start "Mozilla/"
	// as every browser's does, or is a crawler's.
	NotABrowser bool `json:"not_a_browser"`
}

// ParseUserAgent parses a User-Agent header.
func ParseUserAgent(ua string) Client {
	p := useragent.Parse(ua)
	c := Client{Browser: p.Name, BrowserVersion: p.Version, OS: p.OS, OSVersion: p.OSVersion, Device: "unknown"}
	switch {
	case p.Tablet:
		c.Device = "tablet"
	case p.Mobile:
		c.Device = "mobile"
	case p.Desktop:
		c.Device = "desktop"
	}
	c.Headless = p.Name == useragent.HeadlessChrome || strings.Contains(ua, "PhantomJS/")
	c.NotABrowser = !strings.HasPrefix(ua, "Mozilla/") || p.Bot && !c.Headless
	if c.NotABrowser && p.Name == ua {
		c.Browser = "" // the parser names an agent it does not know by the whole string
	}
	return c
}
