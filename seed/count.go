package seed

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The most elements a seed file's lists hold, all lists of a kind
// together; Parse refuses a file that holds more before decoding it. A
// file's size alone does not bound the memory decoding takes: each "{},"
// of companies (3 bytes) becomes a Company of a few hundred, so that a
// file of MaxFileBytes could take some 9 GiB. With these bounds the values
// Parse builds take at most a few hundred MiB beyond the file's own bytes.
const (
	// MaxItems bounds the companies, properties, tokens, webhooks,
	// profiles, sessions, certificates and consents of a file, together.
	MaxItems = 100_000
	// MaxEvents bounds the events of a file's sessions, together.
	MaxEvents = 4_000_000
	// MaxValues bounds the elements of every other list, together: the
	// strings of authorized_third_parties, allowed_origins, permissions,
	// a webhook's events, a consent's types and a profile's rules.
	MaxValues = 1_000_000
)

// maxDepth is encoding/json's limit on nesting: a deeper file is refused
// by the decoder, and counted no further here.
const maxDepth = 10000

// itemLists are the members whose arrays hold items, matched as
// encoding/json matches a member to a field.
var itemLists = []string{"companies", "properties", "tokens", "webhooks", "sessions", "certificates", "consents"}

// names are the member names checkCounts tells apart.
var names = append(slices.Clone(itemLists), "events", "events_combined", "profiles")

// Kinds of the elements of a list.
const (
	kindValue = iota
	kindItem
	kindEvent
	kindRaw // within an event or events_combined: kept as text, not counted
)

// frame is an array or object open at a point of the text.
type frame struct {
	array bool
	name  string // the member that holds it ("" for the top or an element)
	index int    // the elements of an array so far; for an object, its members
	kind  int    // the kind of its elements (members, for profiles)
	want  bool   // an array's next element, or an object's next name, is due
	in    string // for an element of a top list, the list: "sessions"…
}

// checkCounts counts the elements of data's lists by kind, without
// building any value, and refuses data past MaxItems, MaxEvents or
// MaxValues, naming the list that goes past. Text that is not JSON is
// counted as far as it goes: the decoder says what is wrong with it.
func checkCounts(data []byte) error {
	var (
		stack  []frame
		counts [3]int
		name   string // the last object member's name read
	)
	limits := [3]int{kindValue: MaxValues, kindItem: MaxItems, kindEvent: MaxEvents}
	what := [3]string{kindValue: "list elements other than items and events", kindItem: "items (companies, properties, tokens, webhooks, profiles, sessions, certificates and consents)", kindEvent: "events"}
	// element counts a new element (or member) of the top frame.
	element := func() error {
		top := &stack[len(stack)-1]
		top.index++
		if top.kind == kindRaw || (!top.array && top.kind != kindItem) {
			return nil
		}
		counts[top.kind]++
		if counts[top.kind] > limits[top.kind] {
			return fmt.Errorf("seed: %s: the file holds more than %d %s", path(stack), limits[top.kind], what[top.kind])
		}
		return nil
	}
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch c {
		case ' ', '\t', '\n', '\r', ':':
			continue
		case ',':
			if len(stack) > 0 {
				stack[len(stack)-1].want = true
			}
			continue
		case ']', '}':
			if len(stack) == 0 {
				return nil
			}
			stack = stack[:len(stack)-1]
			continue
		}
		// The start of a value, or of an object's member name.
		if len(stack) > 0 {
			top := &stack[len(stack)-1]
			if !top.array && top.want && c == '"' {
				end := stringEnd(data, i)
				name = memberName(data[i:end])
				top.want = false
				if err := element(); err != nil {
					return err
				}
				i = end - 1
				continue
			}
			if top.array && top.want {
				top.want = false
				if err := element(); err != nil {
					return err
				}
			}
		}
		switch c {
		case '"':
			i = stringEnd(data, i) - 1
		case '[', '{':
			if len(stack) == maxDepth {
				return nil
			}
			f := frame{array: c == '[', want: true}
			if len(stack) > 0 {
				parent := stack[len(stack)-1]
				if !parent.array {
					f.name = canonical(name)
				}
				f.kind = listKind(parent, f)
				if !f.array && len(stack) == 2 {
					f.in = parent.name
				}
			}
			stack = append(stack, f)
		}
	}
	return nil
}

// listKind is the kind of the elements (or members) of f, opened within
// parent.
func listKind(parent, f frame) int {
	switch {
	case parent.kind == kindRaw || parent.kind == kindEvent && parent.array:
		return kindRaw
	case f.name == "events_combined" && parent.in == "certificates":
		return kindRaw
	case !f.array:
		if f.name == "profiles" && parent.in == "companies" {
			return kindItem // a map of profiles, each an item
		}
		return kindValue
	case f.name == "events" && parent.in == "sessions":
		return kindEvent
	}
	if slices.Contains(itemLists, f.name) {
		return kindItem
	}
	return kindValue
}

// canonical is the member name of the seed format that encoding/json
// matches name to (it ignores case), or name.
func canonical(name string) string {
	for _, n := range names {
		if strings.EqualFold(name, n) {
			return n
		}
	}
	return name
}

// stringEnd is the index just past the string that starts at data[i],
// or len(data) when it does not end.
func stringEnd(data []byte, i int) int {
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(data)
}

// memberName is the name a quoted member name stands for.
func memberName(quoted []byte) string {
	if !strings.Contains(string(quoted), `\`) {
		return strings.Trim(string(quoted), `"`)
	}
	var s string
	if json.Unmarshal(quoted, &s) != nil {
		return ""
	}
	return s
}

// path names the list at the top of stack and its element, as in
// companies[3].properties[100000].
func path(stack []frame) string {
	var b strings.Builder
	for i, f := range stack {
		if i > 0 && f.name != "" {
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(f.name)
		}
		if f.array {
			b.WriteString("[" + strconv.Itoa(f.index-1) + "]")
		}
	}
	return b.String()
}
