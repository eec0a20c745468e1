package mp4

import (
	"fmt"
	"testing"
)

// The replay stops at the last consent moment the snippet marked when it
// is at most momentSlack before the recording's last event — the page's
// submit listeners change the page right after it — and goes to the end
// otherwise, so that a mark of the page's own, made earlier, chooses
// nothing. Events are kept in timestamp order.
func TestEventsUntilConsentMoment(t *testing.T) {
	const head = `{"type":4,"data":{"href":"http://x/","width":100,"height":80},"timestamp":1000}` + "," +
		`{"type":2,"data":{"node":{"type":0,"id":1,"childNodes":[]},"initialOffset":{"top":0,"left":0}},"timestamp":1010}`
	mark := func(ts int) string {
		return fmt.Sprintf(`{"type":5,"data":{"tag":"consentkit/consent","payload":{}},"timestamp":%d}`, ts)
	}
	change := func(ts int) string { return fmt.Sprintf(`{"type":3,"data":{"source":0},"timestamp":%d}`, ts) }
	for _, c := range []struct {
		name   string
		events string
		kept   int
		end    float64
	}{
		{"no mark", head + "," + change(5000), 3, 5000},
		{"a mark, then the listeners' change", head + "," + change(4000) + "," + mark(5000) + "," + change(5000) + "," + change(5003), 4, 5000},
		{"the last of two marks", head + "," + mark(4000) + "," + change(4500) + "," + mark(4600) + "," + change(4700), 5, 4600},
		{"a mark long before the end", head + "," + mark(2000) + "," + change(3500), 4, 3500},
		{"a later event dated earlier", head + "," + change(3000) + "," + change(2000) + "," + mark(3100) + "," + change(3150), 5, 3100},
	} {
		events, err := splitEvents([]byte("[" + c.events + "]"))
		if err != nil {
			t.Fatal(err)
		}
		kept, start, end, _, _, err := eventsUntil(events, 1<<40)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(kept) != c.kept || end != c.end || start != 1000 {
			t.Errorf("%s: %d events from %v to %v; want %d, from 1000 to %v", c.name, len(kept), start, end, c.kept, c.end)
		}
		prev := -1.0
		for _, e := range kept {
			ev, _ := readEvent(e)
			if ev.Timestamp < prev {
				t.Errorf("%s: events out of timestamp order: %v after %v", c.name, ev.Timestamp, prev)
			}
			prev = ev.Timestamp
		}
	}
}
