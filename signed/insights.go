package signed

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
)

// InsightsVersion is the "v" of an insights statement's encoding.
const InsightsVersion = "consentkit-insights-1"

// InsightsStatement is what the service states of a certificate once it
// has read the certificate's recording and request (D50): the behaviour
// signals and the bot verdict with its reasons. Counts and categories,
// never content. It is signed with the certificate keys as a document of
// its own, linked to the certificate by the SHA-256 of the certificate's
// canonical encoding, and checked offline as a certificate is. Its JSON
// is its canonical encoding's members, so RFC 8785 over it gives the
// signed bytes; its numbers that need not be integers are strings, the
// shortest decimal that reads back as the same float64, as the canonical
// encoding writes measured numbers.
type InsightsStatement struct {
	Bot           InsightsBot `json:"bot"`
	CertificateID string      `json:"certificate_id"`
	// CertificateSHA256 is the SHA-256 of the certificate's canonical
	// encoding (Content.Encoding), in lowercase hex.
	CertificateSHA256 string `json:"certificate_sha256"`
	KeyID             string `json:"key_id"`
	// MeasuredAt is when the signals were computed, as the encoding
	// writes times.
	MeasuredAt string          `json:"measured_at"`
	Signals    InsightsSignals `json:"signals"`
	V          string          `json:"v"`
}

// InsightsBot is the bot verdict — human, suspect or bot — with the code
// of every reason that led to it, in the order insights.Rules.Judge
// lists them.
type InsightsBot struct {
	Reasons []string `json:"reasons"`
	Verdict string   `json:"verdict"`
}

// InsightsSignals are the signals of insights.Signals as a statement
// writes them.
type InsightsSignals struct {
	Client InsightsClient `json:"client"`
	Events int            `json:"events"`
	// Inputs are the filled text fields, in the order of their names.
	Inputs        []InsightsInput `json:"inputs"`
	KeysPerMinute string          `json:"keys_per_minute"`
	Keystrokes    int             `json:"keystrokes"`
	Pointer       InsightsPointer `json:"pointer"`
	// Reported is what the snippet reported at submit; nil when the
	// recording holds no report.
	Reported        *InsightsReported `json:"reported,omitempty"`
	SecondsOnPage   string            `json:"seconds_on_page"`
	SecondsToSubmit string            `json:"seconds_to_submit"`
	Snapshot        bool              `json:"snapshot"`
}

// InsightsClient is the consent request's user agent, parsed.
type InsightsClient struct {
	Browser        string `json:"browser"`
	BrowserVersion string `json:"browser_version"`
	Device         string `json:"device"`
	Headless       bool   `json:"headless"`
	NotABrowser    bool   `json:"not_a_browser"`
	OS             string `json:"os"`
	OSVersion      string `json:"os_version"`
}

// InsightsInput is how one text field, keyed by its name, was filled.
type InsightsInput struct {
	Keystrokes int    `json:"keystrokes"`
	Method     string `json:"method"`
	Name       string `json:"name"`
	Pastes     int    `json:"pastes"`
}

// InsightsPointer counts the pointer's and fingers' acts.
type InsightsPointer struct {
	Clicks  int `json:"clicks"`
	Moves   int `json:"moves"`
	Scrolls int `json:"scrolls"`
	Touches int `json:"touches"`
}

// InsightsReported is what the snippet reported, as the browser reported
// it.
type InsightsReported struct {
	IsFramed     bool             `json:"is_framed"`
	Language     string           `json:"language"`
	ParentOrigin string           `json:"parent_origin"`
	TimeZone     string           `json:"time_zone"`
	Viewport     InsightsViewport `json:"viewport"`
	Webdriver    bool             `json:"webdriver"`
}

// InsightsViewport is a size in CSS pixels.
type InsightsViewport struct {
	Height int `json:"height"`
	Width  int `json:"width"`
}

// Number returns f as an insights statement writes it (and the canonical
// encoding writes measured numbers): the shortest decimal that reads back
// as the same float64; negative zero, which measures nothing a positive
// zero does not, as "0", so that a statement has one zero.
func Number(f float64) string { return number(positiveZero(f)) }

// positiveZero returns f, or +0 when f is negative zero.
func positiveZero(f float64) float64 {
	if f == 0 {
		return 0
	}
	return f
}

// NewInsightsStatement returns an insights statement of the certificate
// whose content is c, measured at at, with its version, the certificate's
// digest and its time written as the encoding writes them, and empty
// lists; the caller sets the rest.
func NewInsightsStatement(c *Content, at time.Time) (InsightsStatement, error) {
	enc, err := c.Encoding()
	if err != nil {
		return InsightsStatement{}, err
	}
	return InsightsStatement{V: InsightsVersion, CertificateID: c.ID, CertificateSHA256: digestString(sha256.Sum256(enc)),
		MeasuredAt: timeString(at), Bot: InsightsBot{Reasons: []string{}}, Signals: InsightsSignals{Inputs: []InsightsInput{},
			KeysPerMinute: "0", SecondsOnPage: "0", SecondsToSubmit: "0"}}, nil
}

// Encoding returns the canonical encoding of s: the bytes its signature
// covers. It fails when s is not of InsightsVersion, or holds a time,
// digest or number not written as the canonical encoding writes it.
func (s *InsightsStatement) Encoding() ([]byte, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	g := &s.Signals
	o := object{}
	o.open()
	o.member("bot")
	bot := object{b: o.b}
	bot.open()
	bot.strings("reasons", s.Bot.Reasons)
	bot.str("verdict", s.Bot.Verdict)
	bot.close()
	o.b = bot.b
	o.str("certificate_id", s.CertificateID)
	o.str("certificate_sha256", s.CertificateSHA256)
	o.str("key_id", s.KeyID)
	o.str("measured_at", s.MeasuredAt)
	o.member("signals")
	in := object{b: o.b}
	in.open()
	in.member("client")
	cl := object{b: in.b}
	cl.open()
	cl.str("browser", g.Client.Browser)
	cl.str("browser_version", g.Client.BrowserVersion)
	cl.str("device", g.Client.Device)
	cl.boolean("headless", g.Client.Headless)
	cl.boolean("not_a_browser", g.Client.NotABrowser)
	cl.str("os", g.Client.OS)
	cl.str("os_version", g.Client.OSVersion)
	cl.close()
	in.b = cl.b
	in.integer("events", g.Events)
	in.objects("inputs", len(g.Inputs), func(i int, f *object) {
		x := g.Inputs[i]
		f.integer("keystrokes", x.Keystrokes)
		f.str("method", x.Method)
		f.str("name", x.Name)
		f.integer("pastes", x.Pastes)
	})
	in.str("keys_per_minute", g.KeysPerMinute)
	in.integer("keystrokes", g.Keystrokes)
	in.member("pointer")
	p := object{b: in.b}
	p.open()
	p.integer("clicks", g.Pointer.Clicks)
	p.integer("moves", g.Pointer.Moves)
	p.integer("scrolls", g.Pointer.Scrolls)
	p.integer("touches", g.Pointer.Touches)
	p.close()
	in.b = p.b
	if r := g.Reported; r != nil {
		in.member("reported")
		rep := object{b: in.b}
		rep.open()
		rep.boolean("is_framed", r.IsFramed)
		rep.str("language", r.Language)
		rep.str("parent_origin", r.ParentOrigin)
		rep.str("time_zone", r.TimeZone)
		rep.member("viewport")
		vp := object{b: rep.b}
		vp.open()
		vp.integer("height", r.Viewport.Height)
		vp.integer("width", r.Viewport.Width)
		vp.close()
		rep.b = vp.b
		rep.boolean("webdriver", r.Webdriver)
		rep.close()
		in.b = rep.b
	}
	in.str("seconds_on_page", g.SecondsOnPage)
	in.str("seconds_to_submit", g.SecondsToSubmit)
	in.boolean("snapshot", g.Snapshot)
	in.close()
	o.b = in.b
	o.str("v", s.V)
	o.close()
	return o.b, nil
}

// check refuses an insights statement whose encoding no signature can
// cover.
func (s *InsightsStatement) check() error {
	switch {
	case s.V != InsightsVersion:
		return fmt.Errorf("signed: an insights statement of version %q, not %q", s.V, InsightsVersion)
	case s.Bot.Verdict == "":
		return errors.New("signed: an insights statement has no verdict")
	case s.Bot.Reasons == nil || s.Signals.Inputs == nil:
		return errors.New("signed: an insights statement's reasons and inputs are lists, empty or not")
	}
	if _, err := parseTime("measured_at", s.MeasuredAt); err != nil || s.MeasuredAt == "" {
		return fmt.Errorf("signed: measured_at %q is not a time of the canonical encoding", s.MeasuredAt)
	}
	if _, err := parseDigest("certificate_sha256", s.CertificateSHA256); err != nil || s.CertificateSHA256 == "" {
		return fmt.Errorf("signed: certificate_sha256 %q is not a digest of the canonical encoding", s.CertificateSHA256)
	}
	for _, n := range []struct{ name, s string }{
		{"keys_per_minute", s.Signals.KeysPerMinute},
		{"seconds_on_page", s.Signals.SecondsOnPage},
		{"seconds_to_submit", s.Signals.SecondsToSubmit},
	} {
		f, err := strconv.ParseFloat(n.s, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) || number(f) != n.s {
			return fmt.Errorf("signed: %s %q is not a number of the canonical encoding", n.name, n.s)
		}
	}
	return nil
}

// SignInsights names k in s (s.KeyID is set to k.ID) and returns k's
// Ed25519 signature of s's canonical encoding.
func (k SigningKey) SignInsights(s *InsightsStatement) ([]byte, error) {
	s.KeyID = k.ID
	enc, err := s.Encoding()
	if err != nil {
		return nil, err
	}
	return ed25519.Sign(k.Private, enc), nil
}

// VerifyInsights checks offline that signature is key's Ed25519 signature
// of s, and that s states of the certificate whose content is c.
func VerifyInsights(s *InsightsStatement, c *Content, key PublicKey, signature []byte) error {
	if c == nil {
		return errors.New("signed: no signed content of the certificate to hold the insights statement to (the certificate is not signed)")
	}
	if s.KeyID != key.ID {
		return fmt.Errorf("signed: the insights statement names key %q, not %q", s.KeyID, key.ID)
	}
	enc, err := s.Encoding()
	if err != nil {
		return err
	}
	if !key.verifies(enc, signature) {
		return errors.New("signed: the insights statement's signature does not match it")
	}
	cert, err := c.Encoding()
	if err != nil {
		return err
	}
	if s.CertificateID != c.ID || s.CertificateSHA256 != digestString(sha256.Sum256(cert)) {
		return fmt.Errorf("signed: the insights statement is of another certificate than %s as signed", c.ID)
	}
	return nil
}

// InsightsProof is an insights statement as certificate-info answers it
// (in "insights"): the statement, its signature and the id of its key.
type InsightsProof struct {
	Signature string             `json:"signature"` // standard base64 (EncodeSignature)
	KeyID     string             `json:"key_id"`
	Statement *InsightsStatement `json:"statement"`
}

// Verify checks offline that p is signed by a key of keys and states of
// the certificate whose content is c.
func (p *InsightsProof) Verify(keys *KeySet, c *Content) error {
	if p.Statement == nil || p.Signature == "" {
		return errors.New("the insights carry no signed statement")
	}
	sig, err := base64.StdEncoding.DecodeString(p.Signature)
	if err != nil {
		return fmt.Errorf("the insights' signature is not base64: %w", err)
	}
	if p.KeyID != p.Statement.KeyID {
		return fmt.Errorf("key_id %q differs from the statement's %q", p.KeyID, p.Statement.KeyID)
	}
	key, err := keys.Find(p.KeyID)
	if err != nil {
		return err
	}
	return VerifyInsights(p.Statement, c, key, sig)
}
