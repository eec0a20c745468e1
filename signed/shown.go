package signed

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/consentkit/consentkit/internal/ident"
)

// Shown is what a certificate-info answer shows beside its signature,
// compared with the content the signature covers ([CheckShown]).
type Shown struct {
	// Differs names the first member of the answer, in the order of their
	// names, whose value is not what is signed; "" when none is. It names
	// the member as the answer writes it ("Origin" for origin). A member
	// the API leaves out when it is empty (client_ip, user_agent,
	// recording_sha256, consent_visibility, revoked_before) reads as none
	// when it is missing: missing while its signed value is not empty, it
	// is named here.
	Differs string
	// Unsigned lists the members the answer shows that no signature
	// covers, in the order of their names: "valid" and "events_combined"
	// always; in version 1 content, the facts version 2 added; the
	// attestation and insights, statements signed apart; and, by their
	// path, the members inside consents, visibilities, the signed content,
	// the attestation and the insights that the API does not write, such
	// as "consents[0].note" (a name matches only as written), and the
	// top-level members whose names the API writes otherwise, such as
	// "Origin" (compared all the same: see CheckShown).
	Unsigned []string
	// NotShown lists the members the API always writes that the answer
	// leaves out while the signature covers a value for them, in the order
	// of their names: the answer says nothing of them, and its reader
	// should read them in the signed content.
	NotShown []string
}

// The members of a certificate-info answer that the API writes inside
// those CheckShown reads, by the names it writes: any other is listed as
// unsigned.
type (
	shownConsent struct {
		Text        string           `json:"text"`
		Types       []string         `json:"types"`
		OptIn       json.RawMessage  `json:"opt_in"`
		OptInMethod string           `json:"opt_in_method"`
		Visibility  *shownVisibility `json:"visibility"`
	}
	shownVisibility struct {
		InViewport      bool        `json:"in_viewport"`
		Visible         bool        `json:"visible"`
		FontSizePx      json.Number `json:"font_size_px"`
		TextColor       string      `json:"text_color"`
		BackgroundColor string      `json:"background_color"`
		ContrastRatio   json.Number `json:"contrast_ratio"`
		HiddenText      []string    `json:"hidden_text"`
	}
)

// answerMembers are the members of a certificate-info answer that
// CheckShown reads, by the fold of their names (ident.Fold): a member
// whose name folds to one of them is read as that member, as encoding/json
// reads it.
var answerMembers = func() map[string]string {
	m := map[string]string{}
	for _, n := range []string{"attestation", "certificate_id", "client_ip", "consent_count", "consent_opt_in", "consent_types",
		"consent_visibility", "consents", "created_timestamp", "events_combined", "has_consents", "insights", "key_id", "origin",
		"recording_sha256", "revoked_before", "session_id", "signature", "signed", "user_agent", "valid"} {
		m[ident.Fold(n)] = n
	}
	return m
}()

// shapes are the members whose insides CheckShown lists by name.
var shapes = map[string]reflect.Type{
	"attestation":        reflect.TypeFor[AttestationAnswer](),
	"consent_visibility": reflect.TypeFor[shownVisibility](),
	"consents":           reflect.TypeFor[[]shownConsent](),
	"insights":           reflect.TypeFor[InsightsAnswer](),
	"signed":             reflect.TypeFor[Content](),
}

// CheckShown compares the members of a certificate-info answer with its
// "signed" content: the certificate's id and times, session, origin, the
// consents and what is derived from them (consent_types, consent_opt_in,
// has_consents, consent_count), the recording's digest and, as far as its
// version covers them, the client's address and user agent, the
// visibilities, the opt-in methods and revoked_before. It lists the
// members that no certificate signature covers, and those the signature
// covers that the answer leaves out. It does not check the signature
// ([Proof.Verify] does), nor the statements signed apart (attestation,
// insights).
//
// It reads each member, at the top level as inside consents and
// visibilities, as encoding/json reads it into a field: by its name under
// simple case folding, so that "Origin", "ORIGIN" or "ſession_id" (U+017F,
// which folds to s) is compared as origin or session_id, since that is
// what a Go reader of the answer takes it for; a name not written as the
// API writes it is listed as unsigned besides. It fails when answer is
// not a JSON object with signed content, or when an object in it has two
// members of one name ([CheckNames]).
func CheckShown(answer []byte) (Shown, error) {
	if err := CheckNames(answer); err != nil {
		return Shown{}, err
	}
	return CompareShown(answer)
}

// CompareShown is CheckShown for an answer that CheckNames has passed: a
// caller that runs CheckNames before it reads the answer otherwise, as
// consentkit-verify does, reads the names once. Of the names twice that
// CheckNames refuses, it refuses only two top-level members whose names
// fold to one the API writes ("origin" and "Origin"): given others, it
// compares the value encoding/json keeps, the last, which other readers
// need not read. Call CheckNames first.
func CompareShown(answer []byte) (Shown, error) {
	var asWritten map[string]json.RawMessage
	if err := json.Unmarshal(answer, &asWritten); err != nil {
		return Shown{}, fmt.Errorf("signed: the answer is not a JSON object: %w", err)
	}
	// The members by the name Go reads each as: one whose name folds to
	// a name the API writes is that member, as encoding/json reads it
	// into that field; written keeps each name as written.
	members := make(map[string]json.RawMessage, len(asWritten))
	written := make(map[string]string, len(asWritten))
	for n, raw := range asWritten {
		key := n
		if k, ok := answerMembers[ident.Fold(n)]; ok {
			key = k
		}
		if first, ok := written[key]; ok { // not when CheckNames has passed the answer
			first, n = min(first, n), max(first, n)
			return Shown{}, fmt.Errorf("signed: the answer has members %q and %q, one name twice to a reader that ignores case", first, n)
		}
		written[key], members[key] = n, raw
	}
	var c Content
	if raw, ok := members["signed"]; !ok || json.Unmarshal(raw, &c) != nil {
		return Shown{}, fmt.Errorf("signed: the answer has no signed content")
	}
	d, err := c.Document()
	if err != nil {
		return Shown{}, err
	}
	v2 := d.V == Version2
	var earliest time.Time
	var types []string
	for i, r := range d.Consents {
		if i == 0 || r.OptInAt.Before(earliest) {
			earliest = r.OptInAt
		}
		types = append(types, r.Types...)
	}
	slices.Sort(types)
	types = slices.Compact(types)
	visibility := d.Visibility // the certificate's own, or the first consent's
	if visibility == nil && len(d.Consents) > 0 {
		visibility = d.Consents[0].Visibility
	}
	names := make([]string, 0, len(members))
	for n := range members {
		names = append(names, n)
	}
	sort.Strings(names)
	var out Shown
	differs := "" // the member out.Differs names, as the API writes its name
	for _, n := range names {
		raw := members[n]
		shownAs := written[n]
		same, signed := true, true
		switch n {
		case "signed", "signature", "key_id": // the proof, which Proof.Verify checks
		case "certificate_id":
			same = sameString(raw, d.ID)
		case "session_id":
			same = sameString(raw, d.SessionID)
		case "origin":
			same = sameString(raw, d.Origin)
		case "recording_sha256":
			same = sameString(raw, digestString(d.RecordingSHA256))
		case "created_timestamp":
			same = sameTime(raw, d.CreatedAt)
		case "consent_opt_in":
			same = sameTime(raw, earliest)
		case "consent_types":
			same = sameStrings(raw, types)
		case "has_consents":
			same = sameJSON(raw, len(d.Consents) > 0)
		case "consent_count":
			same = sameJSON(raw, len(d.Consents))
		case "consents":
			var shown []shownConsent
			same = json.Unmarshal(raw, &shown) == nil && len(shown) == len(d.Consents)
			for i := 0; same && i < len(shown); i++ {
				s, r := shown[i], d.Consents[i]
				same = s.Text == r.Text && slices.Equal(s.Types, r.Types) && (s.Types != nil || len(r.Types) == 0) && sameTime(s.OptIn, r.OptInAt)
				if v2 {
					same = same && s.OptInMethod == r.OptInMethod && sameVisibility(s.Visibility, r.Visibility)
				} else if s.OptInMethod != "" || s.Visibility != nil {
					out.Unsigned = append(out.Unsigned, fmt.Sprintf("consents[%d].opt_in_method/visibility", i))
				}
			}
		case "client_ip":
			same, signed = sameString(raw, d.ClientIP), v2
		case "user_agent":
			same, signed = sameString(raw, d.UserAgent), v2
		case "revoked_before":
			same, signed = sameTime(raw, d.RevokedBefore), v2
		case "consent_visibility":
			var got *shownVisibility
			same, signed = json.Unmarshal(raw, &got) == nil && sameVisibility(got, visibility), v2
		default: // valid, events_combined, attestation, insights, and anything else
			signed = false
		}
		if !signed || shownAs != n { // a name not written as the API writes it is compared all the same
			out.Unsigned = append(out.Unsigned, shownAs)
		}
		if signed && !same && out.Differs == "" {
			out.Differs, differs = shownAs, n
		}
		if t, ok := shapes[n]; ok {
			out.Unsigned = unrecognised(out.Unsigned, raw, t, shownAs)
		}
	}
	// What the signature covers and the answer leaves out, in the order
	// of their names. The API leaves these out when empty, so that one
	// missing reads as none: not what is signed.
	for _, m := range []struct {
		name   string
		signed bool
	}{
		{"client_ip", v2 && d.ClientIP != ""},
		{"consent_visibility", v2 && visibility != nil},
		{"recording_sha256", d.RecordingSHA256 != [sha256.Size]byte{}},
		{"revoked_before", v2 && !d.RevokedBefore.IsZero()},
		{"user_agent", v2 && d.UserAgent != ""},
	} {
		if _, shown := members[m.name]; m.signed && !shown && (differs == "" || m.name < differs) {
			out.Differs, differs = m.name, m.name
		}
	}
	// These it always writes: one missing says nothing, and is listed.
	for _, m := range []struct {
		name   string
		signed bool
	}{
		{"certificate_id", d.ID != ""},
		{"consent_count", len(d.Consents) > 0},
		{"consent_opt_in", !earliest.IsZero()},
		{"consent_types", len(types) > 0},
		{"consents", len(d.Consents) > 0},
		{"created_timestamp", !d.CreatedAt.IsZero()},
		{"has_consents", len(d.Consents) > 0},
		{"origin", d.Origin != ""},
		{"session_id", d.SessionID != ""},
	} {
		if _, shown := members[m.name]; m.signed && !shown {
			out.NotShown = append(out.NotShown, m.name)
		}
	}
	return out, nil
}

// unrecognised appends to out the path of each member inside the JSON raw,
// at any depth, whose name is not one of those type t reads, as written:
// encoding/json would read it into a field of another letter case, or not
// at all, so no comparison holds it to what is signed.
func unrecognised(out []string, raw json.RawMessage, t reflect.Type, path string) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t.Kind() == reflect.Struct:
		var members map[string]json.RawMessage
		if json.Unmarshal(raw, &members) != nil {
			return out
		}
		fields := map[string]reflect.Type{}
		jsonFields(t, fields)
		names := make([]string, 0, len(members))
		for n := range members {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			if f, ok := fields[n]; ok {
				out = unrecognised(out, members[n], f, path+"."+n)
			} else {
				out = append(out, path+"."+n)
			}
		}
	case t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8: // not json.RawMessage
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) != nil {
			return out
		}
		for i, item := range items {
			out = unrecognised(out, item, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	}
	return out
}

// jsonFields adds to fields the JSON name and type of each field of the
// struct type t that encoding/json reads, those of embedded structs
// included.
func jsonFields(t reflect.Type, fields map[string]reflect.Type) {
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				jsonFields(ft, fields)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = f.Type
	}
}

func sameJSON(raw json.RawMessage, v any) bool {
	want, err := json.Marshal(v)
	return err == nil && bytes.Equal(bytes.TrimSpace(raw), want)
}

// sameString: raw is the string s, or null or absent for "".
func sameString(raw json.RawMessage, s string) bool {
	var got *string
	if json.Unmarshal(raw, &got) != nil {
		return false
	}
	if got == nil {
		return s == ""
	}
	return *got == s
}

func sameStrings(raw json.RawMessage, list []string) bool {
	var got []string
	return json.Unmarshal(raw, &got) == nil && slices.Equal(got, list)
}

// sameTime: raw is an RFC 3339 time equal to t, which is not the zero
// time; or null, "" or absent (raw empty) for the zero time, which means
// none. A time shown for none, "0001-01-01T00:00:00Z" included, is not the
// same: it reads as a time.
func sameTime(raw json.RawMessage, t time.Time) bool {
	if len(raw) == 0 {
		return t.IsZero()
	}
	var got *string
	if json.Unmarshal(raw, &got) != nil {
		return false
	}
	if got == nil || *got == "" {
		return t.IsZero()
	}
	at, err := time.Parse(time.RFC3339Nano, *got)
	return err == nil && !t.IsZero() && at.Equal(t)
}

// sameVisibility: got (nil for absent or null: none) shows v, its numbers
// as JSON numbers.
func sameVisibility(got *shownVisibility, v *Visibility) bool {
	if got == nil || v == nil {
		return got == nil && v == nil
	}
	num := func(n json.Number, f float64) bool {
		g, err := strconv.ParseFloat(string(n), 64)
		return err == nil && g == f
	}
	return got.InViewport == v.InViewport && got.Visible == v.Visible && num(got.FontSizePx, v.FontSizePx) &&
		num(got.ContrastRatio, v.ContrastRatio) && got.TextColor == v.TextColor && got.BackgroundColor == v.BackgroundColor &&
		len(got.HiddenText) == len(v.HiddenText) && (len(v.HiddenText) == 0 || slices.Equal(got.HiddenText, v.HiddenText))
}
