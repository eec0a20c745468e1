package insights_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/consentkit/consentkit/insights"
)

// fiveMinutes is a recording of a 5-minute session: a page of about 2,000
// nodes with 40 KB of inlined style and 8 fields; the pointer sampled every
// 500 ms (10 positions an event), a scroll every 5 s, a mutation every 2 s
// adding a small subtree, and 8 fields typed at a key every 250 ms, each
// after a click; then the snippet's signals event.
func fiveMinutes() string {
	var b strings.Builder
	now := int64(t0)
	ev := func(typ int, data string) {
		if b.Len() > 1 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, `{"type":%d,"data":%s,"timestamp":%d}`, typ, data, now)
	}
	b.WriteString("[")
	ev(4, `{"href":"https://forms.example/quote","width":1280,"height":720}`)
	id := 10
	var nodes []string
	for i := range 8 {
		nodes = append(nodes, fmt.Sprintf(`{"type":2,"tagName":"input","attributes":{"type":"text","name":"field%d"},"childNodes":[],"id":%d}`, i, id))
		id++
	}
	for range 650 { // paragraphs, each with a span and text: 3 nodes
		nodes = append(nodes, fmt.Sprintf(`{"type":2,"tagName":"p","attributes":{"class":"copy"},"childNodes":[{"type":2,"tagName":"span","attributes":{},"childNodes":[{"type":3,"textContent":"Lorem ipsum dolor sit amet, consectetur adipiscing elit.","id":%d}],"id":%d}],"id":%d}`, id, id+1, id+2))
		id += 3
	}
	style := strings.Repeat(".card { background: rgb(255, 255, 255); border-radius: 8px; padding: 20px 24px; }", 500)
	ev(2, `{"node":{"type":0,"id":1,"childNodes":[{"type":2,"tagName":"html","attributes":{},"id":2,"childNodes":[`+
		`{"type":2,"tagName":"head","attributes":{},"id":3,"childNodes":[{"type":2,"tagName":"style","attributes":{"_cssText":"`+style+`"},"childNodes":[],"id":4}]},`+
		`{"type":2,"tagName":"body","attributes":{},"id":5,"childNodes":[`+strings.Join(nodes, ",")+`]}]}]},"initialOffset":{"left":0,"top":0}}`)
	field := 0
	for ms := int64(0); ms < 300_000; ms += 250 {
		now = t0 + ms
		if ms%500 == 0 {
			pos := make([]string, 10)
			for i := range pos {
				pos[i] = fmt.Sprintf(`{"x":%d,"y":%d,"id":5,"timeOffset":%d}`, 300+i, 200+i, -50*(10-i))
			}
			ev(3, `{"source":1,"positions":[`+strings.Join(pos, ",")+`]}`)
		}
		if ms%5000 == 0 {
			ev(3, fmt.Sprintf(`{"source":3,"id":1,"x":0,"y":%d}`, ms/100))
		}
		if ms%2000 == 0 {
			ev(3, fmt.Sprintf(`{"source":0,"texts":[],"attributes":[{"id":20,"attributes":{"class":"copy seen"}}],"removes":[],`+
				`"adds":[{"parentId":5,"nextId":null,"node":{"type":2,"tagName":"div","attributes":{"class":"toast"},"childNodes":[{"type":3,"textContent":"Saved","id":%d}],"id":%d}}]}`, id, id+1))
			id += 2
		}
		// Each field: a click, then 30 keys, from 10 s in.
		if k := (ms - 10_000) / 250; ms >= 10_000 && field < 8 {
			if k%31 == 0 {
				ev(3, fmt.Sprintf(`{"source":2,"type":2,"id":%d,"x":300,"y":200,"pointerType":0}`, 10+field))
			} else {
				n := int(k%31) - 1
				ev(3, fmt.Sprintf(`{"source":5,"text":%q,"isChecked":false,"userTriggered":true,"id":%d}`, strings.Repeat("a", n+1), 10+field))
				if n == 29 {
					field++
				}
			}
		}
	}
	fields := make([]string, 8)
	for i := range fields {
		fields[i] = fmt.Sprintf(`"field%d":{"keys":30,"pastes":0}`, i)
	}
	ev(5, `{"tag":"consentkit/signals","payload":{"v":1,"fields":{`+strings.Join(fields, ",")+`},"webdriver":false,`+
		`"viewport":{"width":1280,"height":720},"time_zone":"America/Chicago","language":"en-US","framed":false,"parent_origin":""}}`)
	b.WriteString("]")
	return b.String()
}

// BenchmarkExtractFiveMinutes: the signals and the verdict of a 5-minute
// recording, time and memory.
//
//	go test ./insights -run '^$' -bench ExtractFiveMinutes -benchmem
func BenchmarkExtractFiveMinutes(b *testing.B) {
	rec := fiveMinutes()
	s, err := insights.Extract(strings.NewReader(rec), desktopUA, insights.Limits{})
	if err != nil {
		b.Fatal(err)
	}
	if j := (insights.Rules{}).Judge(s, insights.Facts{}); s.Events < 1000 || len(s.Inputs) != 8 || s.SecondsOnPage < 299 || j.Verdict != insights.Human {
		b.Fatalf("the generated recording: %d events, inputs %v, %.0f s, %+v", s.Events, s.Inputs, s.SecondsOnPage, j)
	}
	b.Logf("%d events, %d bytes", s.Events, len(rec))
	b.SetBytes(int64(len(rec)))
	b.ReportAllocs()
	for b.Loop() {
		s, err := insights.Extract(strings.NewReader(rec), desktopUA, insights.Limits{})
		if err != nil {
			b.Fatal(err)
		}
		(insights.Rules{}).Judge(s, insights.Facts{})
	}
}
