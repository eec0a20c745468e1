package signed

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"time"
)

// The versions of the canonical encoding, its "v". Version 1 covers the
// ids, times, consents' text, types and opt-in times, the origin and the
// digests; version 2 also covers everything else a certificate asserts at
// issue: each consent's visibility and opt-in method, the certificate's
// own visibility, the client's address and user agent, and RevokedBefore.
// Certificates are signed in Version (D46); those signed in version 1
// keep verifying for what it covered.
const (
	Version1 = "consentkit-certificate-1"
	Version2 = "consentkit-certificate-2"
	Version  = Version2
)

// Document is what a certificate's signature covers, in the types its
// issuer holds them: the one thing the canonical encoding is written from
// ([Document.AppendEncoding]). [Content] is its JSON form.
type Document struct {
	// V is the version the document is encoded in: Version1 or Version2
	// ("" is Version1). The fields marked "version 2" are covered by
	// Version2 only, and must be zero in a version 1 document.
	V               string
	ID              string
	CompanyID       string
	PropertyID      string
	SessionID       string
	Consents        []DocumentConsent
	Origin          string
	CreatedAt       time.Time         // zero: none
	EmailSHA256     [sha256.Size]byte // zero: none
	MobileSHA256    [sha256.Size]byte // zero: none
	RecordingSHA256 [sha256.Size]byte // zero: none
	KeyID           string

	// Version 2.
	ClientIP      string
	UserAgent     string
	Visibility    *Visibility // of the certificate as a whole; nil: none
	RevokedBefore time.Time   // zero: none
}

// Visibility is what the consumer could see of a consent's text, as the
// capture snippet measured it (version 2).
type Visibility struct {
	InViewport      bool
	Visible         bool
	FontSizePx      float64
	TextColor       string
	BackgroundColor string
	ContrastRatio   float64
	HiddenText      []string
}

// DocumentConsent is one consent of a Document.
type DocumentConsent struct {
	Text    string
	Types   []string
	OptInAt time.Time // zero: none

	// Version 2.
	OptInMethod string
	Visibility  *Visibility // nil: none
}

// Encoding returns the canonical encoding of d: the bytes its signature
// covers.
func (d *Document) Encoding() []byte { return d.AppendEncoding(nil) }

// AppendEncoding appends the canonical encoding of d to b. It writes d's
// times and digests straight into b, without making strings of them, and
// grows b at most once when no text needs an escape: every verification
// encodes its certificate to check the signature.
func (d *Document) AppendEncoding(b []byte) []byte {
	if d.V == Version2 {
		return d.appendV2(b)
	}
	b = slices.Grow(b, d.size())
	b = append(b, `{"company_id":`...)
	b = appendJCS(b, d.CompanyID)
	b = append(b, `,"consents":[`...)
	for i, r := range d.Consents {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"opt_in_at":`...)
		b = appendTime(b, r.OptInAt)
		b = append(b, `,"text":`...)
		b = appendJCS(b, r.Text)
		b = append(b, `,"types":[`...)
		for j, t := range r.Types {
			if j > 0 {
				b = append(b, ',')
			}
			b = appendJCS(b, t)
		}
		b = append(b, "]}"...)
	}
	b = append(b, `],"created_at":`...)
	b = appendTime(b, d.CreatedAt)
	b = append(b, `,"email_sha256":`...)
	b = appendDigest(b, d.EmailSHA256)
	b = append(b, `,"id":`...)
	b = appendJCS(b, d.ID)
	b = append(b, `,"key_id":`...)
	b = appendJCS(b, d.KeyID)
	b = append(b, `,"mobile_sha256":`...)
	b = appendDigest(b, d.MobileSHA256)
	b = append(b, `,"origin":`...)
	b = appendJCS(b, d.Origin)
	b = append(b, `,"property_id":`...)
	b = appendJCS(b, d.PropertyID)
	b = append(b, `,"recording_sha256":`...)
	b = appendDigest(b, d.RecordingSHA256)
	b = append(b, `,"session_id":`...)
	b = appendJCS(b, d.SessionID)
	b = append(b, `,"v":"`+Version1+`"}`...)
	return b
}

// size is the length of d's canonical encoding when every time and digest
// is set and no character of its text needs an escape: the members' names
// and punctuation (the constants below count them), its strings quoted,
// its times and digests.
func (d *Document) size() int {
	const (
		members  = len(`{"company_id":,"consents":[],"created_at":,"email_sha256":,"id":,"key_id":,"mobile_sha256":,"origin":,"property_id":,"recording_sha256":,"session_id":,"v":}`)
		quotes   = 11 * 2 // of the values other than the consents'
		record   = len(`{"opt_in_at":,"text":,"types":[]}`) + 2*2
		timeSize = len(timeLayout)
	)
	n := members + quotes + len(d.CompanyID) + timeSize + 3*2*sha256.Size + len(d.ID) + len(d.KeyID) +
		len(d.Origin) + len(d.PropertyID) + len(d.SessionID) + len(Version1)
	for i, r := range d.Consents {
		n += record + timeSize + len(r.Text)
		if i > 0 {
			n++ // the comma before it
		}
		for j, t := range r.Types {
			n += len(t) + 2
			if j > 0 {
				n++
			}
		}
	}
	return n
}

// Content is what a certificate's signature covers as the API shows it
// (certificate-info's "signed"), beside the signature, so that anyone can
// check the signature offline and see what it vouches for: a [Document]
// with its times, digests and numbers written as the canonical encoding
// writes them. Its JSON holds the canonical encoding's members, with their
// values as the encoding writes them, so RFC 8785 over it gives the signed
// bytes: version 2's members are absent when empty, in the JSON as in the
// encoding, and always absent from version 1 content.
type Content struct {
	ClientIP        string             `json:"client_ip,omitempty"`
	CompanyID       string             `json:"company_id"`
	Consents        []Consent          `json:"consents"`
	CreatedAt       string             `json:"created_at"`
	EmailSHA256     string             `json:"email_sha256"`
	ID              string             `json:"id"`
	KeyID           string             `json:"key_id"`
	MobileSHA256    string             `json:"mobile_sha256"`
	Origin          string             `json:"origin"`
	PropertyID      string             `json:"property_id"`
	RecordingSHA256 string             `json:"recording_sha256"`
	RevokedBefore   string             `json:"revoked_before,omitempty"`
	SessionID       string             `json:"session_id"`
	UserAgent       string             `json:"user_agent,omitempty"`
	V               string             `json:"v"`
	Visibility      *ContentVisibility `json:"visibility,omitempty"`
}

// Consent is one consent of Content.
type Consent struct {
	OptInAt     string             `json:"opt_in_at"`
	OptInMethod string             `json:"opt_in_method,omitempty"`
	Text        string             `json:"text"`
	Types       []string           `json:"types"`
	Visibility  *ContentVisibility `json:"visibility,omitempty"`
}

// Content returns d as the API shows it.
func (d *Document) Content() Content {
	out := Content{
		CompanyID: d.CompanyID, Consents: make([]Consent, 0, len(d.Consents)), CreatedAt: timeString(d.CreatedAt),
		EmailSHA256: digestString(d.EmailSHA256), ID: d.ID, KeyID: d.KeyID, MobileSHA256: digestString(d.MobileSHA256),
		Origin: d.Origin, PropertyID: d.PropertyID, RecordingSHA256: digestString(d.RecordingSHA256), SessionID: d.SessionID,
		V: Version1,
	}
	v2 := d.V == Version2
	if v2 {
		out.V, out.ClientIP, out.UserAgent = Version2, d.ClientIP, d.UserAgent
		out.RevokedBefore, out.Visibility = timeString(d.RevokedBefore), contentVisibility(d.Visibility)
	}
	for _, r := range d.Consents {
		types := r.Types
		if types == nil {
			types = []string{}
		}
		c := Consent{OptInAt: timeString(r.OptInAt), Text: r.Text, Types: types}
		if v2 {
			c.OptInMethod, c.Visibility = r.OptInMethod, contentVisibility(r.Visibility)
		}
		out.Consents = append(out.Consents, c)
	}
	return out
}

// Document returns the Document that c shows. It fails when c is of no
// version this package knows, shows a member its version does not cover,
// or holds a time, digest or number not written as the canonical encoding
// writes it: no signature covers such content.
func (c *Content) Document() (Document, error) {
	switch c.V {
	case Version1:
		if c.ClientIP != "" || c.UserAgent != "" || c.RevokedBefore != "" || c.Visibility != nil {
			return Document{}, fmt.Errorf("signed: content of version %q shows members of version 2", c.V)
		}
		for _, r := range c.Consents {
			if r.OptInMethod != "" || r.Visibility != nil {
				return Document{}, fmt.Errorf("signed: content of version %q shows members of version 2", c.V)
			}
		}
	case Version2:
	default:
		return Document{}, fmt.Errorf("signed: signed content of version %q, not %q or %q", c.V, Version1, Version2)
	}
	d := Document{V: c.V, ID: c.ID, CompanyID: c.CompanyID, PropertyID: c.PropertyID, SessionID: c.SessionID, Origin: c.Origin,
		KeyID: c.KeyID, ClientIP: c.ClientIP, UserAgent: c.UserAgent}
	var err error
	d.CreatedAt, err = parseTime("created_at", c.CreatedAt)
	if err == nil {
		d.RevokedBefore, err = parseTime("revoked_before", c.RevokedBefore)
	}
	if err == nil {
		d.Visibility, err = c.Visibility.document()
	}
	for _, p := range []struct {
		name string
		s    string
		d    *[sha256.Size]byte
	}{{"email_sha256", c.EmailSHA256, &d.EmailSHA256}, {"mobile_sha256", c.MobileSHA256, &d.MobileSHA256}, {"recording_sha256", c.RecordingSHA256, &d.RecordingSHA256}} {
		if err == nil {
			*p.d, err = parseDigest(p.name, p.s)
		}
	}
	d.Consents = make([]DocumentConsent, len(c.Consents))
	for i, r := range c.Consents {
		if err == nil {
			d.Consents[i] = DocumentConsent{Text: r.Text, Types: r.Types, OptInMethod: r.OptInMethod}
			d.Consents[i].OptInAt, err = parseTime("opt_in_at", r.OptInAt)
		}
		if err == nil {
			d.Consents[i].Visibility, err = r.Visibility.document()
		}
	}
	if err != nil {
		return Document{}, err
	}
	return d, nil
}

// Encoding returns the canonical encoding of c: the bytes its signature
// covers. It fails as [Content.Document] does.
func (c *Content) Encoding() ([]byte, error) {
	d, err := c.Document()
	if err != nil {
		return nil, err
	}
	return d.Encoding(), nil
}

// parseTime reads a time as the canonical encoding writes it: "" for
// none, the zero time. It refuses "0001-01-01T00:00:00.000000Z", the zero
// time written out, which the encoding writes as "" (or, for version 2's
// revoked_before, leaves out): accepted, content showing it would read as
// none and verify under the signature of content without it, while
// showing a time, as parseDigest refuses the all-zero digest. Each time
// has one spelling.
func parseTime(name, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	var buf [len(timeLayout)]byte
	t, err := time.Parse(timeLayout, s)
	if err != nil || t.IsZero() || string(appendMicroTime(buf[:0], t)) != s {
		return time.Time{}, fmt.Errorf("signed: %s %q is not a time of the canonical encoding (%s)", name, s, timeLayout)
	}
	return t, nil
}

// parseDigest reads a digest as the canonical encoding writes it.
func parseDigest(name, s string) ([sha256.Size]byte, error) {
	var d, none [sha256.Size]byte
	if s == "" {
		return none, nil
	}
	var buf [2 * sha256.Size]byte
	if len(s) == len(buf) {
		if _, err := hex.Decode(d[:], []byte(s)); err == nil && d != none && string(hex.AppendEncode(buf[:0], d[:])) == s {
			return d, nil
		}
	}
	return none, fmt.Errorf("signed: %s %q is not a digest of the canonical encoding (64 lowercase hex digits)", name, s)
}
