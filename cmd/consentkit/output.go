package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/consentkit/consentkit/httpadapter"
)

// show prints an answer: with -json its body as the operator API sent it,
// otherwise text written by text from the body decoded into a T, the
// answer's type as package httpadapter declares and encodes it.
func show[T any](c *call, a *answer, err error, text func(*T)) error {
	if err != nil {
		return err
	}
	if c.json {
		return c.writeAnswer(a)
	}
	v := new(T)
	if err := json.Unmarshal(a.body, v); err != nil {
		return fmt.Errorf("an answer this command cannot read (is the server another version?): %w", err)
	}
	text(v)
	return nil
}

// writeAnswer prints an answer's body as the operator API sent it, on a
// line of its own.
func (c *call) writeAnswer(a *answer) error {
	b := a.body
	if len(b) == 0 || b[len(b)-1] != '\n' {
		b = append(b[:len(b):len(b)], '\n')
	}
	_, err := c.stdout.Write(b)
	return err
}

// writeJSON prints v as one line of JSON: the answers of commands that are
// not the operator API's.
func (c *call) writeJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.stdout, "%s\n", b)
	return err
}

// pairs prints names and values, aligned: name, value, name, value…
func (c *call) pairs(kv ...string) {
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(tw, "%s\t%s\n", kv[i], oneLine(kv[i+1]))
	}
	tw.Flush()
}

// table is aligned columns under a heading.
type table struct{ tw *tabwriter.Writer }

func (c *call) table(heading ...string) *table {
	t := &table{tw: tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)}
	t.row(heading...)
	return t
}

func (t *table) row(cells ...string) {
	for len(cells) > 0 && cells[len(cells)-1] == "" { // no padding at the end of a line
		cells = cells[:len(cells)-1]
	}
	for i, s := range cells {
		cells[i] = oneLine(s)
	}
	fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
}

func (t *table) flush() { t.tw.Flush() }

// oneLine keeps a cell on its line and in its column: stored text may hold
// tabs and line breaks (a reason, a name).
func oneLine(s string) string {
	return strings.NewReplacer("\t", " ", "\n", " ", "\r", " ").Replace(s)
}

// ts is a time of an answer, RFC 3339 in UTC as the API writes it; "-"
// for none.
func ts(s *httpadapter.RFC3339) string {
	if s == nil || *s == "" {
		return "-"
	}
	return string(*s)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func join(l []string) string {
	if len(l) == 0 {
		return "-"
	}
	return strings.Join(l, ",")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func given(b bool) string {
	if b {
		return "given"
	}
	return "-"
}
