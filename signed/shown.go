package signed

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"
)

// Shown is what a certificate-info answer shows beside its signature,
// compared with the content the signature covers ([CheckShown]).
type Shown struct {
	// Differs names the first member of the answer, in the order of their
	// names, whose value is not what is signed; "" when none is.
	Differs string
	// Unsigned lists the members the answer shows that no signature
	// covers, in the order of their names: "valid" and "events_combined"
	// always; in version 1 content, the facts version 2 added.
	Unsigned []string
}

// CheckShown compares the members of a certificate-info answer with its
// "signed" content: the certificate's id and times, session, origin, the
// consents and what is derived from them (consent_types, consent_opt_in,
// has_consents, consent_count), the recording's digest and, as far as its
// version covers them, the client's address and user agent, the
// visibilities, the opt-in methods and revoked_before. It does not check
// the signature ([Proof.Verify] does). It fails when answer is not a JSON
// object with signed content.
func CheckShown(answer []byte) (Shown, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(answer, &members); err != nil {
		return Shown{}, fmt.Errorf("signed: the answer is not a JSON object: %w", err)
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
	names := make([]string, 0, len(members))
	for n := range members {
		names = append(names, n)
	}
	sort.Strings(names)
	var out Shown
	for _, n := range names {
		raw := members[n]
		same, signed := true, true
		switch n {
		case "signed", "signature", "key_id": // the proof, which Proof.Verify checks
			continue
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
			var earliest time.Time
			for i, r := range d.Consents {
				if i == 0 || r.OptInAt.Before(earliest) {
					earliest = r.OptInAt
				}
			}
			same = sameTime(raw, earliest)
		case "consent_types":
			var all []string
			for _, r := range d.Consents {
				all = append(all, r.Types...)
			}
			slices.Sort(all)
			same = sameStrings(raw, slices.Compact(all))
		case "has_consents":
			same = sameJSON(raw, len(d.Consents) > 0)
		case "consent_count":
			same = sameJSON(raw, len(d.Consents))
		case "consents":
			var shown []struct {
				Text        string           `json:"text"`
				Types       []string         `json:"types"`
				OptIn       json.RawMessage  `json:"opt_in"`
				OptInMethod string           `json:"opt_in_method"`
				Visibility  *json.RawMessage `json:"visibility"`
			}
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
		case "consent_visibility": // the first consent's, or the certificate's own
			want := d.Visibility
			if want == nil && len(d.Consents) > 0 {
				want = d.Consents[0].Visibility
			}
			same, signed = sameVisibility(&raw, want), v2
		default: // valid, events_combined, and anything else
			signed = false
		}
		if !signed {
			out.Unsigned = append(out.Unsigned, n)
		} else if !same && out.Differs == "" {
			out.Differs = n
		}
	}
	return out, nil
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

// sameTime: raw is an RFC 3339 time equal to t, or null for the zero time.
func sameTime(raw json.RawMessage, t time.Time) bool {
	var got *string
	if json.Unmarshal(raw, &got) != nil {
		return false
	}
	if got == nil || *got == "" {
		return t.IsZero()
	}
	at, err := time.Parse(time.RFC3339Nano, *got)
	return err == nil && at.Equal(t)
}

// sameVisibility: raw (absent or null for none) shows v, its numbers as
// JSON numbers.
func sameVisibility(raw *json.RawMessage, v *Visibility) bool {
	if raw == nil || bytes.Equal(bytes.TrimSpace(*raw), []byte("null")) {
		return v == nil
	}
	var got struct {
		InViewport      bool        `json:"in_viewport"`
		Visible         bool        `json:"visible"`
		FontSizePx      json.Number `json:"font_size_px"`
		TextColor       string      `json:"text_color"`
		BackgroundColor string      `json:"background_color"`
		ContrastRatio   json.Number `json:"contrast_ratio"`
		HiddenText      []string    `json:"hidden_text"`
	}
	if v == nil || json.Unmarshal(*raw, &got) != nil {
		return false
	}
	num := func(n json.Number, f float64) bool {
		g, err := strconv.ParseFloat(string(n), 64)
		return err == nil && g == f
	}
	return got.InViewport == v.InViewport && got.Visible == v.Visible && num(got.FontSizePx, v.FontSizePx) &&
		num(got.ContrastRatio, v.ContrastRatio) && got.TextColor == v.TextColor && got.BackgroundColor == v.BackgroundColor &&
		len(got.HiddenText) == len(v.HiddenText) && (len(v.HiddenText) == 0 || slices.Equal(got.HiddenText, v.HiddenText))
}
