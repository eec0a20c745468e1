package signed

import (
	"crypto/sha256"
	"fmt"
	"strconv"
	"time"
)

// object writes the members of one JSON object of the canonical encoding;
// its caller gives them in the sorted order of their names.
type object struct {
	b []byte
	n int
}

func (o *object) open()  { o.b = append(o.b, '{'); o.n = 0 }
func (o *object) close() { o.b = append(o.b, '}') }

func (o *object) member(name string) {
	if o.n > 0 {
		o.b = append(o.b, ',')
	}
	o.n++
	o.b = appendJCS(o.b, name)
	o.b = append(o.b, ':')
}

func (o *object) str(name, v string) { o.member(name); o.b = appendJCS(o.b, v) }

// optional writes the string member only when v is not empty.
func (o *object) optional(name, v string) {
	if v != "" {
		o.str(name, v)
	}
}
func (o *object) time(name string, t time.Time) {
	o.member(name)
	o.b = appendTime(o.b, t)
}

func (o *object) digest(name string, d [sha256.Size]byte) {
	o.member(name)
	o.b = appendDigest(o.b, d)
}

func (o *object) boolean(name string, v bool) {
	o.member(name)
	o.b = strconv.AppendBool(o.b, v)
}

func (o *object) strings(name string, list []string) {
	o.member(name)
	o.b = append(o.b, '[')
	for i, s := range list {
		if i > 0 {
			o.b = append(o.b, ',')
		}
		o.b = appendJCS(o.b, s)
	}
	o.b = append(o.b, ']')
}

// objects writes a member whose value is an array of n objects, the i-th
// of whose members each writes.
func (o *object) objects(name string, n int, each func(i int, in *object)) {
	o.member(name)
	o.b = append(o.b, '[')
	for i := range n {
		if i > 0 {
			o.b = append(o.b, ',')
		}
		in := object{b: o.b}
		in.open()
		each(i, &in)
		in.close()
		o.b = in.b
	}
	o.b = append(o.b, ']')
}

// integer writes an integer member.
func (o *object) integer(name string, n int) {
	o.member(name)
	o.b = strconv.AppendInt(o.b, int64(n), 10)
}

// visibility writes v as an object; nothing when v is nil.
func (o *object) visibility(name string, v *Visibility) {
	if v == nil {
		return
	}
	o.member(name)
	in := object{b: o.b}
	in.open()
	in.str("background_color", v.BackgroundColor)
	in.str("contrast_ratio", number(v.ContrastRatio))
	in.str("font_size_px", number(v.FontSizePx))
	in.strings("hidden_text", v.HiddenText)
	in.boolean("in_viewport", v.InViewport)
	in.str("text_color", v.TextColor)
	in.boolean("visible", v.Visible)
	in.close()
	o.b = in.b
}

// number is a measured number as version 2 writes it: a string, the
// shortest decimal that reads back as the same float64 ("16", "18.88").
func number(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// appendV2 appends the version 2 encoding of d to b.
func (d *Document) appendV2(b []byte) []byte {
	o := object{b: b}
	o.open()
	o.optional("client_ip", d.ClientIP)
	o.str("company_id", d.CompanyID)
	o.objects("consents", len(d.Consents), func(i int, in *object) {
		r := d.Consents[i]
		in.time("opt_in_at", r.OptInAt)
		in.optional("opt_in_method", r.OptInMethod)
		in.str("text", r.Text)
		in.strings("types", r.Types)
		in.visibility("visibility", r.Visibility)
	})
	o.time("created_at", d.CreatedAt)
	o.digest("email_sha256", d.EmailSHA256)
	o.str("id", d.ID)
	o.str("key_id", d.KeyID)
	o.digest("mobile_sha256", d.MobileSHA256)
	o.str("origin", d.Origin)
	o.str("property_id", d.PropertyID)
	o.digest("recording_sha256", d.RecordingSHA256)
	if !d.RevokedBefore.IsZero() {
		o.time("revoked_before", d.RevokedBefore)
	}
	o.str("session_id", d.SessionID)
	o.optional("user_agent", d.UserAgent)
	o.str("v", Version2)
	o.visibility("visibility", d.Visibility)
	o.close()
	return o.b
}

// ContentVisibility is a Visibility as Content shows it: its numbers as
// the canonical encoding writes them.
type ContentVisibility struct {
	BackgroundColor string   `json:"background_color"`
	ContrastRatio   string   `json:"contrast_ratio"`
	FontSizePx      string   `json:"font_size_px"`
	HiddenText      []string `json:"hidden_text"`
	InViewport      bool     `json:"in_viewport"`
	TextColor       string   `json:"text_color"`
	Visible         bool     `json:"visible"`
}

func contentVisibility(v *Visibility) *ContentVisibility {
	if v == nil {
		return nil
	}
	hidden := v.HiddenText
	if hidden == nil {
		hidden = []string{}
	}
	return &ContentVisibility{BackgroundColor: v.BackgroundColor, ContrastRatio: number(v.ContrastRatio),
		FontSizePx: number(v.FontSizePx), HiddenText: hidden, InViewport: v.InViewport, TextColor: v.TextColor, Visible: v.Visible}
}

// document reads v back; it fails on a number not written as the
// canonical encoding writes it.
func (v *ContentVisibility) document() (*Visibility, error) {
	if v == nil {
		return nil, nil
	}
	out := &Visibility{BackgroundColor: v.BackgroundColor, HiddenText: v.HiddenText, InViewport: v.InViewport,
		TextColor: v.TextColor, Visible: v.Visible}
	for _, n := range []struct {
		name string
		s    string
		f    *float64
	}{{"contrast_ratio", v.ContrastRatio, &out.ContrastRatio}, {"font_size_px", v.FontSizePx, &out.FontSizePx}} {
		f, err := strconv.ParseFloat(n.s, 64)
		if err != nil || number(f) != n.s {
			return nil, fmt.Errorf("signed: %s %q is not a number of the canonical encoding", n.name, n.s)
		}
		*n.f = f
	}
	return out, nil
}
