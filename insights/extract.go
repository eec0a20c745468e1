package insights

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// The rrweb event types, incremental sources and mouse interactions that
// the signals read (rrweb 2, @rrweb/types).
const (
	eventFullSnapshot = 2
	eventIncremental  = 3
	eventCustom       = 5

	sourceMutation         = 0
	sourceMouseMove        = 1
	sourceMouseInteraction = 2
	sourceScroll           = 3
	sourceInput            = 5
	sourceTouchMove        = 6
	sourceDrag             = 12

	interactionClick      = 2
	interactionFocus      = 5
	interactionBlur       = 6
	interactionTouchStart = 7

	nodeElement = 2
)

// SignalsTag is the tag of the snippet's custom event (docs/capture.md).
const SignalsTag = "consentkit/signals"

// The longest texts kept of the snippet's report.
const (
	maxReportedText   = 256
	maxReportedOrigin = 512
)

// maxPageAge is the oldest page_age_ms taken, a year in milliseconds;
// past it, or negative, the report's age is not one.
const maxPageAge = 366 * 24 * 3600 * 1000

// Extract reads a recording — a JSON array of rrweb events, as the service
// keeps it — in one pass and returns its signals; userAgent is the consent
// request's User-Agent. A session with no recording is the empty array
// "[]". The error is [ErrMalformed], [ErrTooLarge], or the reader's.
func Extract(r io.Reader, userAgent string, lim Limits) (*Signals, error) {
	lim = lim.withDefaults()
	x := &extractor{w: newWalker(r, lim), lim: lim, nodes: map[int64]*inputNode{}, fields: map[string]*field{}}
	if err := x.run(); err != nil {
		return nil, err
	}
	s := x.signals()
	s.Client = ParseUserAgent(userAgent)
	return s, nil
}

// field is what the recording says of the text fields under one key.
type field struct {
	prefilled bool // a value in the first full snapshot
	// The value changes: the person's (userTriggered true), a script's
	// (userTriggered false, a value attribute set, an input added with a
	// value) and those the recording does not say whose.
	person, script, unknown int
	first, last             float64 // the times of the first and last change
	// The times of the first and last change not a script's (person or
	// unknown): the changes a key press can have made.
	pfirst, plast float64
	keys, pastes  int // the snippet's counts
}

func (f *field) changes() int { return f.person + f.script + f.unknown }

// inputNode is one text field of the page, by its id in the recording.
type inputNode struct {
	field    *field
	valueLen int // the length of its value, as last recorded
	changed  bool
	// removed: a mutation removed the node itself from the page, and none
	// added it back since; removedAt is the event (extractor.n) that did.
	removed   bool
	removedAt int
	// snapshot: the full snapshots before the last that found or added it
	// (extractor.snapshots when it was last found): a full snapshot
	// rebuilds the page, and a node it does not hold is gone.
	snapshot int
	// The last attributes and removes lists (extractor.lists) that
	// counted it, so that each list names it once.
	attrList, removeList int
	// Its name and id attributes, cut as keys are: its key follows them.
	name, elemID string
	id           int64 // its id in the recording
}

// foundInput is a text field found in a node tree, before its event's
// type says what to do with it.
type foundInput struct {
	id           int64
	key          string
	name, elemID string
	valueLen     int
}

// valueAttr is a value attribute set on a tracked field by a mutation.
type valueAttr struct {
	node                         *inputNode
	valueLen                     int
	hasValue, hasName, hasElemID bool
	name, elemID                 string
}

// report is the snippet's signals event's payload.
type report struct {
	Reported
	fields map[string][2]int // keys, pastes
	// pageAge is the page's age in milliseconds when the snippet reported
	// (page_age_ms), when hasAge; at is the event's timestamp.
	pageAge, at float64
	hasAge      bool
}

// event is one event as read so far; its members may come in any order.
type event struct {
	typ, ts       float64
	hasTyp, hasTS bool

	source, kind, id          float64
	hasSource, hasKind, hasID bool
	textLen                   int
	hasText                   bool
	trig                      int8 // userTriggered: 1 true, -1 false, 0 not said
	attachIframe              bool // a mutation that adds an iframe's document as loaded
	positions                 int
	hasTag, signals           bool // data.tag was read; it is SignalsTag
	report                    *report
	snapshot, adds            []foundInput
	attrs                     []valueAttr
	removes                   []*inputNode // tracked nodes removed
}

type extractor struct {
	w     *walker
	lim   Limits
	ev    event
	n     int // events read
	lists int // the attributes and removes lists read

	first, last float64
	interacted  bool
	interaction float64
	snapshots   int
	pointer     Pointer
	nodes       map[int64]*inputNode
	fields      map[string]*field
	report      *report
}

func (x *extractor) run() error {
	w := x.w
	tok, err := w.next()
	if err != nil {
		return err
	}
	if tok != json.Delim('[') {
		return w.malformed("not a JSON array of events")
	}
	for w.dec.More() {
		if err := x.event(); err != nil {
			return err
		}
	}
	if _, err := w.next(); err != nil { // ']'
		return err
	}
	if _, err := w.dec.Token(); !errors.Is(err, io.EOF) {
		if err != nil {
			return w.fail(err)
		}
		return w.malformed("more after the array of events")
	}
	return nil
}

func (x *extractor) event() error {
	w := x.w
	e := &x.ev
	snapshot, adds, attrs, removes := e.snapshot[:0], e.adds[:0], e.attrs[:0], e.removes[:0]
	*e = event{snapshot: snapshot, adds: adds, attrs: attrs, removes: removes}
	found, err := w.object(func(name string) error {
		var err error
		switch name {
		case "type":
			e.typ, e.hasTyp, err = w.number()
		case "timestamp":
			e.ts, e.hasTS, err = w.number()
		case "data":
			// A repeated member counts once, the last, as JSON.parse reads it.
			snapshot, adds, attrs, removes := e.snapshot[:0], e.adds[:0], e.attrs[:0], e.removes[:0]
			typ, ts, hasTyp, hasTS := e.typ, e.ts, e.hasTyp, e.hasTS
			*e = event{typ: typ, ts: ts, hasTyp: hasTyp, hasTS: hasTS, snapshot: snapshot, adds: adds, attrs: attrs, removes: removes}
			_, err = w.object(x.data)
		default:
			err = w.skip()
		}
		return err
	})
	if err != nil {
		return err
	}
	if !found {
		return w.malformed("event %d is not an object", x.n)
	}
	if !e.hasTyp || e.typ != math.Trunc(e.typ) {
		return w.malformed("event %d has no integer type", x.n)
	}
	if !e.hasTS || e.ts < 0 {
		return w.malformed("event %d has no timestamp", x.n)
	}
	return x.apply(e)
}

// data reads one member of an event's data.
func (x *extractor) data(name string) error {
	w, e := x.w, &x.ev
	var err error
	switch name {
	case "source":
		e.source, e.hasSource, err = w.number()
	case "type":
		e.kind, e.hasKind, err = w.number()
	case "id":
		e.id, e.hasID, err = w.number()
	case "text":
		var s string
		s, e.hasText, err = w.str()
		e.textLen = len(s)
	case "isAttachIframe":
		e.attachIframe, _, err = w.boolean()
	case "userTriggered":
		var b, ok bool
		b, ok, err = w.boolean()
		switch {
		case !ok:
			e.trig = 0
		case b:
			e.trig = 1
		default:
			e.trig = -1
		}
	case "positions":
		e.positions, err = w.count()
	case "tag":
		var s string
		s, _, err = w.str()
		e.hasTag, e.signals = true, s == SignalsTag
	case "payload":
		if e.hasTag && !e.signals {
			// Another custom event's (the recorder writes the tag first):
			// whatever it holds is not read, nor bounded as a report.
			e.report = nil
			return w.skip()
		}
		e.report = &report{fields: map[string][2]int{}}
		var found bool
		found, err = w.object(x.payload)
		if !found {
			e.report = nil
		}
	case "node": // a full snapshot's document
		e.snapshot = e.snapshot[:0]
		err = x.node(&e.snapshot)
	case "adds": // a mutation's added nodes
		e.adds = e.adds[:0]
		_, err = w.array(func() error {
			_, err := w.object(func(name string) error {
				if name == "node" {
					return x.node(&e.adds)
				}
				return w.skip()
			})
			return err
		})
	case "attributes": // a mutation's changed attributes
		e.attrs = e.attrs[:0]
		x.lists++
		_, err = w.array(x.attribute)
	case "removes": // a mutation's removed nodes
		e.removes = e.removes[:0]
		x.lists++
		_, err = w.array(x.remove)
	default:
		err = w.skip()
	}
	return err
}

// textTypes are the input types whose value a person types.
var textTypes = map[string]bool{"": true, "text": true, "email": true, "tel": true, "number": true,
	"search": true, "url": true, "password": true}

// node reads a serialized node and its descendants, adding the text
// fields among them to found.
func (x *extractor) node(found *[]foundInput) error {
	w := x.w
	var (
		typ, id                 float64
		hasTyp, hasID           bool
		tag, name, elemID, kind string
		valueLen                int
	)
	_, err := w.object(func(member string) error {
		var err error
		switch member {
		case "type":
			typ, hasTyp, err = w.number()
		case "id":
			id, hasID, err = w.number()
		case "tagName":
			tag, _, err = w.str()
		case "attributes":
			name, elemID, kind, valueLen = "", "", "", 0
			_, err = w.object(func(attr string) error {
				var err error
				switch attr {
				case "name":
					name, _, err = w.str()
				case "id":
					elemID, _, err = w.str()
				case "type":
					kind, _, err = w.str()
				case "value":
					var v string
					v, _, err = w.str()
					valueLen = len(v)
				default:
					err = w.skip()
				}
				return err
			})
		case "childNodes":
			_, err = w.array(func() error { return x.node(found) })
		default:
			err = w.skip()
		}
		return err
	})
	if err != nil || !hasTyp || typ != nodeElement || !hasID {
		return err
	}
	nid, ok := nodeID(id)
	if !ok {
		return nil
	}
	switch {
	case strings.EqualFold(tag, "textarea"):
	case strings.EqualFold(tag, "input") && textTypes[strings.ToLower(strings.TrimSpace(kind))]:
	default:
		return nil
	}
	if len(*found) >= x.lim.MaxInputs {
		return fmt.Errorf("%w: more than %d text fields", ErrTooLarge, x.lim.MaxInputs)
	}
	name, elemID = cutKey(name), cutKey(elemID)
	*found = append(*found, foundInput{id: nid, key: keyOf(name, elemID, nid), name: name, elemID: elemID, valueLen: valueLen})
	return nil
}

// keyOf is a field's key: its name, else its id, else "#" and its id in
// the recording.
func keyOf(name, elemID string, nid int64) string {
	switch {
	case name != "":
		return name
	case elemID != "":
		return elemID
	}
	return "#" + strconv.FormatInt(nid, 10)
}

// attribute reads one entry of a mutation's attributes, noting a value
// attribute set on a tracked field.
func (x *extractor) attribute() error {
	w := x.w
	var (
		id    float64
		hasID bool
		a     valueAttr
	)
	_, err := w.object(func(member string) error {
		var err error
		switch member {
		case "id":
			id, hasID, err = w.number()
		case "attributes":
			a = valueAttr{}
			_, err = w.object(func(attr string) error {
				var v string
				var err error
				switch attr {
				case "value":
					a.hasValue = true
					v, _, err = w.str() // null: the attribute removed
					a.valueLen = len(v)
				case "name":
					a.hasName = true
					v, _, err = w.str()
					a.name = cutKey(v)
				case "id":
					a.hasElemID = true
					v, _, err = w.str()
					a.elemID = cutKey(v)
				default:
					err = w.skip()
				}
				return err
			})
		default:
			err = w.skip()
		}
		return err
	})
	if err != nil || !hasID || !a.hasValue && !a.hasName && !a.hasElemID {
		return err
	}
	nid, ok := nodeID(id)
	if !ok {
		return nil
	}
	n := x.nodes[nid]
	if n == nil || n.attrList == x.lists {
		return nil
	}
	n.attrList = x.lists // once a list, so that the list stays within the nodes tracked
	a.node = n
	x.ev.attrs = append(x.ev.attrs, a)
	return nil
}

// remove reads one entry of a mutation's removes, noting a tracked node
// removed. A node removed with an ancestor is not listed (the recorder
// lists the subtree's root only) and is not seen removed.
func (x *extractor) remove() error {
	w := x.w
	var (
		id    float64
		hasID bool
	)
	_, err := w.object(func(member string) error {
		var err error
		if member == "id" {
			id, hasID, err = w.number()
		} else {
			err = w.skip()
		}
		return err
	})
	if err != nil || !hasID {
		return err
	}
	nid, ok := nodeID(id)
	if !ok {
		return nil
	}
	n := x.nodes[nid]
	if n == nil || n.removeList == x.lists {
		return nil
	}
	n.removeList = x.lists
	x.ev.removes = append(x.ev.removes, n)
	return nil
}

// payload reads one member of a custom event's payload as the snippet's
// report.
func (x *extractor) payload(name string) error {
	w, r := x.w, x.ev.report
	var err error
	switch name {
	case "fields":
		_, err = w.object(func(key string) error {
			var c [2]int
			found, err := w.object(func(member string) error {
				n, ok, err := w.number()
				if !ok {
					return err
				}
				switch member {
				case "keys":
					c[0] = count(n)
				case "pastes":
					c[1] = count(n)
				}
				return err
			})
			if err != nil || !found {
				return err
			}
			key = cutKey(key)
			if _, dup := r.fields[key]; !dup && len(r.fields) >= x.lim.MaxInputs {
				return fmt.Errorf("%w: a report of more than %d fields", ErrTooLarge, x.lim.MaxInputs)
			}
			r.fields[key] = c
			return nil
		})
	case "webdriver":
		r.Webdriver, _, err = w.boolean()
	case "framed":
		r.IsFramed, _, err = w.boolean()
	case "viewport":
		_, err = w.object(func(member string) error {
			n, _, err := w.number()
			switch member {
			case "width":
				r.Viewport.Width = count(n)
			case "height":
				r.Viewport.Height = count(n)
			}
			return err
		})
	case "time_zone":
		var s string
		s, _, err = w.str()
		r.TimeZone = cutText(s, maxReportedText)
	case "language":
		var s string
		s, _, err = w.str()
		r.Language = cutText(s, maxReportedText)
	case "parent_origin":
		var s string
		s, _, err = w.str()
		r.ParentOrigin = cutText(s, maxReportedOrigin)
	case "page_age_ms":
		var n float64
		n, r.hasAge, err = w.number()
		r.pageAge = n
		if !(n >= 0 && n <= maxPageAge) {
			r.hasAge = false // not an age: the span of the events stands
		}
	default:
		err = w.skip()
	}
	return err
}

// count is a reported count: a whole number from 0 to 2³¹−1, anything
// else 0.
func count(n float64) int {
	if n < 0 || n > math.MaxInt32 || n != math.Trunc(n) {
		return 0
	}
	return int(n)
}

// nodeID is a node's id in the recording, when n is one.
func nodeID(n float64) (int64, bool) {
	if n != math.Trunc(n) || n < 0 || n > 1<<53 {
		return 0, false
	}
	return int64(n), true
}

// apply counts a whole event.
func (x *extractor) apply(e *event) error {
	if x.n == 0 {
		x.first = e.ts
	}
	x.n++
	x.last = e.ts
	switch e.typ {
	case eventFullSnapshot:
		x.snapshots++
		for _, in := range e.snapshot {
			n, err := x.track(in)
			if err != nil {
				return err
			}
			if x.snapshots == 1 && in.valueLen > 0 && !n.changed {
				n.field.prefilled = true
			}
			n.valueLen = in.valueLen
		}
	case eventIncremental:
		if e.hasSource {
			return x.incremental(e)
		}
	case eventCustom:
		if e.signals && e.report != nil {
			x.report = e.report
			x.report.at = e.ts
		}
	}
	return nil
}

func (x *extractor) incremental(e *event) error {
	switch e.source {
	case sourceMutation:
		// As the replayer applies a mutation: removes, then adds (a node
		// moved is removed and added back), then attributes.
		for _, n := range e.removes {
			n.removed, n.removedAt = true, x.n
		}
		for _, in := range e.adds {
			old := x.nodes[in.id]
			if e.attachIframe && old == nil {
				// An iframe's page as loaded, as a full snapshot holds the
				// page's: its values are prefilled.
				n, err := x.track(in)
				if err != nil {
					return err
				}
				n.valueLen = in.valueLen
				if in.valueLen > 0 {
					n.field.prefilled = true
				}
				continue
			}
			// A node in the page that this mutation moves (removed in it, or
			// a descendant of the moved root) keeps its value: no change.
			moved := old != nil && (!old.removed || old.removedAt == x.n) && old.snapshot == x.snapshots &&
				old.valueLen == in.valueLen
			n, err := x.track(in)
			if err != nil {
				return err
			}
			n.valueLen = in.valueLen
			if in.valueLen > 0 && !moved {
				x.change(n, -1, in.valueLen, e.ts)
			}
		}
		for _, a := range e.attrs {
			if a.hasName || a.hasElemID {
				if err := x.rename(a); err != nil {
					return err
				}
			}
			if !a.hasValue {
				continue
			}
			if !a.node.changed {
				a.node.valueLen = a.valueLen // the value follows its attribute until changed
			}
			x.change(a.node, -1, a.node.valueLen, e.ts)
		}
	case sourceMouseMove, sourceTouchMove, sourceDrag:
		x.pointer.Moves += e.positions
		x.interact(e.ts)
	case sourceMouseInteraction:
		switch e.kind {
		case interactionClick:
			x.pointer.Clicks++
		case interactionTouchStart:
			x.pointer.Touches++
		}
		if e.kind != interactionFocus && e.kind != interactionBlur { // a script may focus
			x.interact(e.ts)
		}
	case sourceScroll:
		x.pointer.Scrolls++
	case sourceInput:
		if e.trig >= 0 {
			x.interact(e.ts)
		}
		if !e.hasID || !e.hasText {
			return nil
		}
		if id, ok := nodeID(e.id); ok {
			if n := x.nodes[id]; n != nil {
				x.change(n, e.trig, e.textLen, e.ts)
			}
		}
	}
	return nil
}

// track returns the tracked field of a node found in a tree, under the
// key it has now. Nodes stay within MaxNodes; fields within twice
// MaxInputs, and those in the page within MaxInputs (sweep).
func (x *extractor) track(in foundInput) (*inputNode, error) {
	n := x.nodes[in.id]
	if n == nil {
		if len(x.nodes) >= x.lim.MaxNodes {
			return nil, fmt.Errorf("%w: more than %d text-field nodes", ErrTooLarge, x.lim.MaxNodes)
		}
		n = &inputNode{id: in.id}
		x.nodes[in.id] = n
	}
	n.removed, n.snapshot = false, x.snapshots
	n.name, n.elemID = in.name, in.elemID
	f := x.fields[in.key]
	if f == nil {
		if len(x.fields) >= 2*x.lim.MaxInputs {
			// Forget the fields no node in the page holds (a form drawn
			// anew whose fields have no name: a new key at each drawing);
			// at most MaxInputs may be in the page. Every MaxInputs new
			// keys at most, so the sweeps cost O(1) a field, amortized.
			x.sweep()
			if len(x.fields) > x.lim.MaxInputs {
				return nil, fmt.Errorf("%w: more than %d text fields", ErrTooLarge, x.lim.MaxInputs)
			}
		}
		f = &field{}
		x.fields[in.key] = f
	}
	n.field = f
	return n, nil
}

// rename keys a node anew when a mutation sets its name or id, as the
// snippet keys the presses by the name the field has when pressed.
func (x *extractor) rename(a valueAttr) error {
	n := a.node
	if a.hasName {
		n.name = a.name
	}
	if a.hasElemID {
		n.elemID = a.elemID
	}
	removed, snapshot := n.removed, n.snapshot
	if _, err := x.track(foundInput{id: n.id, key: keyOf(n.name, n.elemID, n.id), name: n.name, elemID: n.elemID}); err != nil {
		return err
	}
	n.removed, n.snapshot = removed, snapshot
	return nil
}

// inPage reports whether n is in the page: no mutation removed it since a
// tree last held it, and the last full snapshot did.
func (x *extractor) inPage(n *inputNode) bool { return !n.removed && n.snapshot == x.snapshots }

// sweep forgets the fields that no node in the page holds.
func (x *extractor) sweep() {
	live := map[*field]bool{}
	for _, n := range x.nodes {
		if x.inPage(n) {
			live[n.field] = true
		}
	}
	for key, f := range x.fields {
		if !live[f] {
			delete(x.fields, key)
		}
	}
}

func (x *extractor) change(n *inputNode, trig int8, valueLen int, ts float64) {
	f := n.field
	if f.changes() == 0 || ts < f.first {
		f.first = ts
	}
	if ts > f.last {
		f.last = ts
	}
	if trig >= 0 {
		if f.person+f.unknown == 0 || ts < f.pfirst {
			f.pfirst = ts
		}
		if ts > f.plast {
			f.plast = ts
		}
	}
	switch trig {
	case 1:
		f.person++
	case -1:
		f.script++
	default:
		f.unknown++
	}
	n.valueLen = valueLen
	n.changed = true
}

func (x *extractor) interact(ts float64) {
	if !x.interacted || ts < x.interaction {
		x.interaction = ts
	}
	x.interacted = true
}

func (x *extractor) signals() *Signals {
	s := &Signals{Events: x.n, Snapshot: x.snapshots > 0, Inputs: map[string]Input{}, Pointer: x.pointer}
	if x.n > 0 {
		s.SecondsOnPage = max(0, x.last-x.first) / 1000
		if r := x.report; r != nil && r.hasAge {
			// The page's age at the report, and the time from it to the
			// last event: the time before the recorder started counts.
			// Never less than the recording's own span.
			s.SecondsOnPage = max(s.SecondsOnPage, (r.pageAge+max(0, x.last-r.at))/1000)
		}
		if x.interacted {
			s.SecondsToSubmit = max(0, x.last-x.interaction) / 1000
		}
	}
	if x.report != nil {
		r := x.report.Reported
		s.Reported = &r
		for key, c := range x.report.fields {
			if f := x.fields[key]; f != nil {
				f.keys, f.pastes = c[0], c[1]
			}
		}
	}
	filled := map[*field]bool{}
	for _, n := range x.nodes {
		if n.valueLen > 0 && x.inPage(n) {
			filled[n.field] = true
		}
	}
	var intervals int
	var typing float64
	for key, f := range x.fields {
		if !filled[f] {
			continue
		}
		s.Inputs[key] = Input{Method: f.method(x.report != nil), Keystrokes: f.keys, Pastes: f.pastes}
		s.Keystrokes += f.keys
		// The pace of the key presses the recording saw: the snippet
		// counts from its own start, the recorder from later, so a field
		// typed into before it started has more presses than changes,
		// and the earlier ones took time the recording does not span.
		// A script's change beside the person's (a framework syncing the
		// value attribute, a mask rewriting the value) is no key press:
		// only a field whose every change is a script's (a mask that
		// takes the keys itself) is timed by them.
		seen, first, last := f.person+f.unknown, f.pfirst, f.plast
		if seen == 0 {
			seen, first, last = f.script, f.first, f.last
		}
		if n := min(f.keys, seen); n >= 2 {
			intervals += n - 1
			typing += last - first
		}
	}
	if intervals > 0 {
		s.KeysPerMinute = math.Round(float64(intervals)*6_000_000/max(typing, 1)) / 100
	}
	return s
}

// method is the field's input method (the package documentation gives
// the rule); reported is whether the recording holds the snippet's counts.
func (f *field) method(reported bool) Method {
	switch {
	case f.changes() == 0 && f.prefilled && f.keys == 0 && f.pastes == 0:
		return Prefilled
	case f.changes() == 0 && !f.prefilled:
		return Unknown
	// Unchanged since the first snapshot but typed or pasted into: before
	// the recorder started, after the snippet did.
	case f.pastes > 0:
		return Pasted
	case f.keys > 0:
		return Typed
	case f.person > 0 && f.unknown == 0 && reported:
		return Autofilled
	case f.person > 0 || f.unknown > 0:
		return Unknown
	default:
		return Scripted
	}
}
