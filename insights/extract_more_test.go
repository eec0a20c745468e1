package insights_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/consentkit/consentkit/insights"
)

// A node moved in the page (removed and added back in one mutation, as
// rrweb records a move) keeps the value it had: a prefilled field the page
// moves (a form moved into a modal, a step re-parented) is still
// prefilled, not scripted, and the session is not suspect for it.
func TestMovedPrefilledFieldStaysPrefilled(t *testing.T) {
	for _, tc := range []struct{ name, mutation string }{
		{"the field moved", `{"source":0,"texts":[],"attributes":[],"removes":[{"parentId":5,"id":16}],"adds":[` +
			`{"parentId":4,"nextId":null,"node":{"type":2,"tagName":"input","attributes":{"name":"ref","value":"abc"},"childNodes":[],"id":16}}]}`},
		// rrweb lists the moved subtree's root in removes, and adds the root
		// and each of its descendants, each serialized alone.
		{"its form moved", `{"source":0,"texts":[],"attributes":[],"removes":[{"parentId":4,"id":5}],"adds":[` +
			`{"parentId":4,"nextId":null,"node":{"type":2,"tagName":"form","attributes":{"method":"post"},"childNodes":[],"id":5}},` +
			`{"parentId":5,"nextId":null,"node":{"type":2,"tagName":"input","attributes":{"name":"ref","value":"abc"},"childNodes":[],"id":16}}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRec().at(400).move(6).click(idAgree).at(300).incr(tc.mutation).
				at(900).move(3).click(idButton).signals(nil, false)
			s := extract(t, r.String(), desktopUA)
			if in := s.Inputs["ref"]; in.Method != insights.Prefilled {
				t.Errorf("ref = %+v, want prefilled", in)
			}
			if j := (insights.Rules{}).Judge(s, insights.Facts{}); j.Verdict != insights.Human {
				t.Errorf("Judge = %s %v, want human", j.Verdict, j.Reasons)
			}
		})
	}
}

// The pace of typing counts the key presses the recording saw, and a
// script's echo of a person's change is not another press. A person types
// 12 keys into a React form before the recorder started (the snippet counts
// them, the first snapshot holds the value), then one more once it
// records: React syncs the value attribute, so the recording holds the
// person's input event and, a millisecond later, the attribute mutation.
// One key press was seen: there is no interval to time, and the person is
// not typing at 60,000 keys a minute.
func TestPaceIgnoresScriptEchoOfAKey(t *testing.T) {
	r := newRec().at(300).move(6).click(idRef).
		at(400).input(idRef, "abcd", "true").
		at(1).incr(`{"source":0,"texts":[],"removes":[],"adds":[],"attributes":[{"id":16,"attributes":{"value":"abcd"}}]}`).
		at(800).move(4).click(idAgree).input(idAgree, "on", "true").at(700).move(3).click(idButton)
	r.signalsAged(map[string][2]int{"ref": {13, 0}}, 9000)
	s := extract(t, r.String(), desktopUA)
	if in := s.Inputs["ref"]; in.Method != insights.Typed || in.Keystrokes != 13 {
		t.Errorf("ref = %+v, want typed with 13 keystrokes", in)
	}
	if s.KeysPerMinute > insights.DefaultMaxKeysPerMinute {
		t.Errorf("keys per minute %v: one recorded key press has no pace", s.KeysPerMinute)
	}
	if j := (insights.Rules{}).Judge(s, insights.Facts{}); j.Verdict != insights.Human {
		t.Errorf("Judge = %s %v, want human", j.Verdict, j.Reasons)
	}
}

// A page that draws its form anew keeps within the limits (MaxNodes) when
// its fields have names; one whose fields have neither name nor id (keyed
// "#" and their id in the recording, so a new key at each drawing) must
// not become a recording past the limits either — that is judged as no
// recording at all, a bot.
func TestNamelessFormDrawnAnew(t *testing.T) {
	r := newRec()
	const fields, drawings = 12, 1000 // 12,000 nodes: fewer than MaxNodes
	id := 100
	for d := range drawings {
		var adds, removes []string
		for range fields {
			if d > 0 {
				removes = append(removes, fmt.Sprintf(`{"parentId":5,"id":%d}`, id-fields))
			}
			adds = append(adds, fmt.Sprintf(`{"parentId":5,"nextId":null,"node":{"type":2,"tagName":"input","attributes":{},"childNodes":[],"id":%d}}`, id))
			id++
		}
		r.at(10).incr(`{"source":0,"texts":[],"attributes":[],"removes":[` + strings.Join(removes, ",") +
			`],"adds":[` + strings.Join(adds, ",") + `]}`)
	}
	key := fmt.Sprintf("#%d", id-fields)
	r.at(500).move(3).typeInto(id-fields, "jane", 200).signals(map[string][2]int{key: {4, 0}}, false)
	s, err := insights.Extract(strings.NewReader(r.String()), desktopUA, insights.Limits{})
	if err != nil {
		t.Fatalf("Extract: %v", err)
	}
	if in := s.Inputs[key]; in.Method != insights.Typed || in.Keystrokes != 4 {
		t.Errorf("%s, typed into as drawn last: %+v", key, in)
	}
}

// A field is keyed by its name as it is when the person types (the
// snippet reads the name at each key press). A script that names a field
// after the recorder started (city, found by its id, becomes "town") must
// not make the person's typing read autofilled, with no keystrokes.
func TestRenamedField(t *testing.T) {
	r := newRec().at(500).move(5).
		incr(`{"source":0,"texts":[],"removes":[],"adds":[],"attributes":[{"id":12,"attributes":{"name":"town"}}]}`).
		click(idCity).typeInto(idCity, "Austin", 200).at(2000).move(3).click(idButton).
		signals(map[string][2]int{"town": {6, 0}}, false)
	s := extract(t, r.String(), desktopUA)
	if in := s.Inputs["town"]; in.Method != insights.Typed || in.Keystrokes != 6 {
		t.Errorf("inputs %+v, want town typed with 6 keystrokes", s.Inputs)
	}
}

// rrweb records a same-origin iframe's document as a mutation that adds it
// (isAttachIframe), right after the full snapshot that holds the iframe
// element: a value in the iframe's page as loaded is prefilled, not a
// value a script set.
func TestIframePageAsLoadedIsPrefilled(t *testing.T) {
	r := newRec().incr(`{"source":0,"texts":[],"attributes":[],"removes":[],"isAttachIframe":true,"adds":[{"parentId":30,"nextId":null,`+
		`"node":{"type":0,"childNodes":[{"type":2,"tagName":"html","attributes":{},"childNodes":[{"type":2,"tagName":"body","attributes":{},"childNodes":[`+
		`{"type":2,"tagName":"input","attributes":{"name":"zip","value":"78701"},"childNodes":[],"id":52}],"id":51}],"id":50}],"id":49}}]}`).
		at(1400).move(6).click(idAgree).at(900).move(3).click(idButton).signals(nil, false)
	s := extract(t, r.String(), desktopUA)
	if in := s.Inputs["zip"]; in.Method != insights.Prefilled {
		t.Errorf("zip = %+v, want prefilled", in)
	}
	if j := (insights.Rules{}).Judge(s, insights.Facts{}); j.Verdict != insights.Human {
		t.Errorf("Judge = %s %v, want human", j.Verdict, j.Reasons)
	}
}
