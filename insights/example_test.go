package insights_test

import (
	"fmt"
	"strings"

	"github.com/consentkit/consentkit/insights"
)

// A recording of a form with one email field: the person moved the
// pointer, clicked into the field, pasted their address, clicked the
// submit button 4 s after the page loaded; the snippet's signals event
// closes it.
const exampleRecording = `[
{"type":4,"data":{"href":"https://forms.example/quote","width":1280,"height":720},"timestamp":1767225600000},
{"type":2,"data":{"node":{"type":0,"id":1,"childNodes":[
  {"type":2,"tagName":"input","attributes":{"type":"email","name":"email"},"childNodes":[],"id":2},
  {"type":2,"tagName":"button","attributes":{},"childNodes":[],"id":3}]}},"timestamp":1767225600000},
{"type":3,"data":{"source":1,"positions":[{"x":40,"y":30,"id":1,"timeOffset":-40},{"x":42,"y":31,"id":1,"timeOffset":0}]},"timestamp":1767225601000},
{"type":3,"data":{"source":2,"type":2,"id":2,"x":42,"y":31,"pointerType":0},"timestamp":1767225601100},
{"type":3,"data":{"source":5,"text":"jane@example.com","isChecked":false,"userTriggered":true,"id":2},"timestamp":1767225602000},
{"type":3,"data":{"source":2,"type":2,"id":3,"x":60,"y":90,"pointerType":0},"timestamp":1767225604000},
{"type":5,"data":{"tag":"consentkit/signals","payload":{"v":1,"fields":{"email":{"keys":0,"pastes":1}},
  "webdriver":false,"viewport":{"width":1280,"height":720},"time_zone":"America/Chicago","language":"en-US",
  "framed":false,"parent_origin":""}},"timestamp":1767225604000}
]`

func Example() {
	ua := "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15"
	s, err := insights.Extract(strings.NewReader(exampleRecording), ua, insights.Limits{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%.1f s on the page, %.1f s from the first interaction\n", s.SecondsOnPage, s.SecondsToSubmit)
	fmt.Printf("email: %s (%d keys, %d pastes)\n", s.Inputs["email"].Method, s.Inputs["email"].Keystrokes, s.Inputs["email"].Pastes)
	fmt.Printf("pointer: %d moves, %d clicks\n", s.Pointer.Moves, s.Pointer.Clicks)
	fmt.Printf("%s on %s, %s\n", s.Client.Browser, s.Client.OS, s.Client.Device)
	fmt.Println((insights.Rules{}).Judge(s, insights.Facts{}))

	// The same session from a browser that says automation drives it.
	driven := strings.Replace(exampleRecording, `"webdriver":false`, `"webdriver":true`, 1)
	s, _ = insights.Extract(strings.NewReader(driven), ua, insights.Limits{})
	fmt.Println((insights.Rules{}).Judge(s, insights.Facts{}))
	// Output:
	// 4.0 s on the page, 3.0 s from the first interaction
	// email: pasted (0 keys, 1 pastes)
	// pointer: 2 moves, 2 clicks
	// Safari on macOS, desktop
	// {human []}
	// {bot [webdriver]}
}
