package insights_test

import (
	"encoding/json"
	"fmt"
	"strings"
)

// The node ids of the test page's fields (page).
const (
	idEmail  = 10 // <input type="email" name="email">
	idMobile = 11 // <input type="tel" name="mobile">
	idCity   = 12 // <input id="city">: no name
	idMsg    = 13 // <textarea name="msg">
	idHidden = 14 // <input type="hidden" name="consent_certificate_id">
	idAgree  = 15 // <input type="checkbox" name="agree">
	idRef    = 16 // <input name="ref" value="abc">: prefilled
	idBare   = 17 // <input>: no name, no id
	idButton = 18 // <button>
)

// page is the full snapshot's document of the test form, as rrweb
// serializes it.
const page = `{"type":0,"id":1,"childNodes":[{"type":1,"name":"html","publicId":"","systemId":"","id":2},
{"type":2,"tagName":"html","attributes":{},"id":3,"childNodes":[{"type":2,"tagName":"body","attributes":{},"id":4,"childNodes":[
{"type":2,"tagName":"form","attributes":{"method":"post"},"id":5,"childNodes":[
{"type":2,"tagName":"input","attributes":{"type":"email","name":"email"},"childNodes":[],"id":10},
{"type":2,"tagName":"input","attributes":{"type":"tel","name":"mobile"},"childNodes":[],"id":11},
{"type":2,"tagName":"input","attributes":{"id":"city"},"childNodes":[],"id":12},
{"type":2,"tagName":"textarea","attributes":{"name":"msg"},"childNodes":[],"id":13},
{"type":2,"tagName":"input","attributes":{"type":"hidden","name":"consent_certificate_id"},"childNodes":[],"id":14},
{"type":2,"tagName":"input","attributes":{"type":"checkbox","name":"agree","value":"yes"},"childNodes":[],"id":15},
{"type":2,"tagName":"input","attributes":{"name":"ref","value":"abc"},"childNodes":[],"id":16},
{"type":2,"tagName":"input","attributes":{},"childNodes":[],"id":17},
{"type":2,"tagName":"button","attributes":{"type":"submit"},"childNodes":[{"type":3,"textContent":"Send","id":19}],"id":18}
]}]}]}]}`

// rec writes a recording event by event, each at the clock's time, which
// starts at t0 and moves with at.
type rec struct {
	events []string
	now    int64
}

const t0 = 1_767_225_600_000 // 2026-01-01, in milliseconds

// newRec starts a recording of the test page: the meta event and the full
// snapshot.
func newRec() *rec {
	r := &rec{now: t0}
	r.add(4, `{"href":"https://forms.example/quote","width":1280,"height":720}`)
	r.add(2, `{"node":`+page+`,"initialOffset":{"left":0,"top":0}}`)
	return r
}

// at moves the clock ms milliseconds on.
func (r *rec) at(ms int64) *rec { r.now += ms; return r }

func (r *rec) add(typ int, data string) *rec {
	r.events = append(r.events, fmt.Sprintf(`{"type":%d,"data":%s,"timestamp":%d}`, typ, data, r.now))
	return r
}

func (r *rec) incr(data string) *rec { return r.add(3, data) }

// move records n sampled pointer positions.
func (r *rec) move(n int) *rec {
	pos := make([]string, n)
	for i := range pos {
		pos[i] = fmt.Sprintf(`{"x":%d,"y":%d,"id":4,"timeOffset":%d}`, 10*i, 5*i, -20*(n-i))
	}
	return r.incr(`{"source":1,"positions":[` + strings.Join(pos, ",") + `]}`)
}

// click records a pointer's press, release and click on node id.
func (r *rec) click(id int) *rec {
	r.incr(fmt.Sprintf(`{"source":2,"type":1,"id":%d,"x":5,"y":5}`, id))
	r.incr(fmt.Sprintf(`{"source":2,"type":0,"id":%d,"x":5,"y":5}`, id))
	return r.incr(fmt.Sprintf(`{"source":2,"type":2,"id":%d,"x":5,"y":5,"pointerType":0}`, id))
}

// input records node id's new value text; trig is userTriggered, or ""
// to leave it out as recorders before D50 did.
func (r *rec) input(id int, text, trig string) *rec {
	t := ""
	if trig != "" {
		t = `,"userTriggered":` + trig
	}
	return r.incr(fmt.Sprintf(`{"source":5,"text":%q,"isChecked":false%s,"id":%d}`, text, t, id))
}

// typeInto records a person typing text into node id, one key every
// gap milliseconds: one input event a key.
func (r *rec) typeInto(id int, text string, gap int64) *rec {
	for i := range text {
		r.at(gap).input(id, text[:i+1], "true")
	}
	return r
}

// signals records the snippet's report; fields maps a key to its key
// presses and pastes.
func (r *rec) signals(fields map[string][2]int, webdriver bool) *rec {
	return r.signalsWith(fields, webdriver, nil)
}

// signalsAged records the snippet's report with page_age_ms, the page's
// age as the snippet reports it: a number, or any other JSON value.
func (r *rec) signalsAged(fields map[string][2]int, age any) *rec {
	return r.signalsWith(fields, false, map[string]any{"page_age_ms": age})
}

func (r *rec) signalsWith(fields map[string][2]int, webdriver bool, more map[string]any) *rec {
	f := map[string]map[string]int{}
	for k, c := range fields {
		f[k] = map[string]int{"keys": c[0], "pastes": c[1]}
	}
	payload := map[string]any{"v": 1, "fields": f, "webdriver": webdriver,
		"viewport": map[string]int{"width": 1280, "height": 720}, "time_zone": "America/Chicago",
		"language": "en-US", "framed": false, "parent_origin": ""}
	for k, v := range more {
		payload[k] = v
	}
	b, _ := json.Marshal(payload)
	return r.add(5, `{"tag":"consentkit/signals","payload":`+string(b)+`}`)
}

func (r *rec) String() string { return "[" + strings.Join(r.events, ",\n") + "]" }

// person is the recording of a person filling the test form: pointer
// moves before each click, the email typed (16 keys, 200 ms apart), the
// mobile pasted, the city typed (6 keys, 250 ms apart), the box ticked and
// the form sent, 8 s after the recording began (7.2 s after the first
// move).
func person() *rec {
	r := newRec().at(800).move(8).at(200).click(idEmail)
	r.typeInto(idEmail, "jane@example.com", 200) // 16 keys over 3 s
	r.at(500).move(5).click(idMobile).at(300).input(idMobile, "5550102000", "true")
	r.at(400).move(4).click(idCity).typeInto(idCity, "Austin", 250)
	r.at(600).move(6).click(idAgree).input(idAgree, "on", "true")
	r.at(500).move(3).click(idButton)
	return r.signals(map[string][2]int{"email": {16, 0}, "mobile": {0, 1}, "city": {6, 0}}, false)
}
