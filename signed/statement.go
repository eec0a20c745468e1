package signed

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"time"
)

// StatementVersion is the "v" of an attestation statement's encoding.
const StatementVersion = "consentkit-attestation-1"

// Statement is what the service states of a certificate once it has
// replayed the certificate's recording to the consent moment and measured
// what the consumer could see itself, apart from what the browser claimed
// (D49). It is signed with the certificate keys as a document of its own,
// linked to the certificate by the SHA-256 of the certificate's canonical
// encoding, and checked offline as a certificate is. Its JSON is its
// canonical encoding's members, so RFC 8785 over it gives the signed bytes.
type Statement struct {
	CertificateID string `json:"certificate_id"`
	// CertificateSHA256 is the SHA-256 of the certificate's canonical
	// encoding (Content.Encoding), in lowercase hex.
	CertificateSHA256 string `json:"certificate_sha256"`
	// Consents are the measured facts, one per consent of the certificate.
	Consents []StatedConsent `json:"consents"`
	// Differences are the facts measured otherwise than the browser
	// claimed them: listed with "mismatch", and with "unavailable" when
	// something the replay could not load may explain them; empty with
	// "attested".
	Differences []Difference `json:"differences"`
	KeyID       string       `json:"key_id"`
	// MeasuredAt is when the replay measured, as the encoding writes times.
	MeasuredAt string `json:"measured_at"`
	// Reason says why the status is "unavailable"; absent otherwise.
	Reason string `json:"reason,omitempty"`
	// ScreenshotSHA256 is the SHA-256 of the PNG of the viewport at the
	// consent moment, in lowercase hex; "" when there is none.
	ScreenshotSHA256 string `json:"screenshot_sha256"`
	// Status is "attested", "mismatch" or "unavailable".
	Status string `json:"status"`
	// Unreproducible lists what the replay could not reproduce — resources
	// it could not load, canvas — so that no difference they explain is
	// stated as a mismatch.
	Unreproducible []string `json:"unreproducible"`
	V              string   `json:"v"`
}

// StatedConsent is what the replay measured of one consent's element.
type StatedConsent struct {
	Found      bool               `json:"found"` // the element is in the replayed page
	NodeID     int                `json:"node_id"`
	Text       string             `json:"text"`
	Visibility *ContentVisibility `json:"visibility,omitempty"`
}

// Difference is one fact the browser claimed otherwise than the replay
// measured it.
type Difference struct {
	Claimed  string `json:"claimed"`
	Consent  int    `json:"consent"` // its index in the certificate
	Field    string `json:"field"`   // such as "text", "visibility.visible"
	Measured string `json:"measured"`
}

// Statuses of a Statement.
const (
	Attested    = "attested"
	Mismatch    = "mismatch"
	Unavailable = "unavailable"
)

// Encoding returns the canonical encoding of s: the bytes its signature
// covers. It fails when s is not of StatementVersion, has no status of
// those above, or holds a time, digest or number not written as the
// canonical encoding writes it.
func (s *Statement) Encoding() ([]byte, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	o := object{}
	o.open()
	o.str("certificate_id", s.CertificateID)
	o.str("certificate_sha256", s.CertificateSHA256)
	o.objects("consents", len(s.Consents), func(i int, in *object) {
		c := s.Consents[i]
		in.boolean("found", c.Found)
		in.integer("node_id", c.NodeID)
		in.str("text", c.Text)
		v, _ := c.Visibility.document() // checked
		in.visibility("visibility", v)
	})
	o.objects("differences", len(s.Differences), func(i int, in *object) {
		d := s.Differences[i]
		in.str("claimed", d.Claimed)
		in.integer("consent", d.Consent)
		in.str("field", d.Field)
		in.str("measured", d.Measured)
	})
	o.str("key_id", s.KeyID)
	o.str("measured_at", s.MeasuredAt)
	o.optional("reason", s.Reason)
	o.str("screenshot_sha256", s.ScreenshotSHA256)
	o.str("status", s.Status)
	o.strings("unreproducible", s.Unreproducible)
	o.str("v", s.V)
	o.close()
	return o.b, nil
}

// check refuses a statement whose encoding no signature can cover.
func (s *Statement) check() error {
	switch {
	case s.V != StatementVersion:
		return fmt.Errorf("signed: a statement of version %q, not %q", s.V, StatementVersion)
	case s.Status != Attested && s.Status != Mismatch && s.Status != Unavailable:
		return fmt.Errorf("signed: a statement's status is %q, not attested, mismatch or unavailable", s.Status)
	case s.Consents == nil || s.Differences == nil || s.Unreproducible == nil:
		return errors.New("signed: a statement's consents, differences and unreproducible are lists, empty or not")
	}
	if _, err := parseTime("measured_at", s.MeasuredAt); err != nil {
		return err
	}
	if _, err := parseDigest("certificate_sha256", s.CertificateSHA256); err != nil || s.CertificateSHA256 == "" {
		return fmt.Errorf("signed: certificate_sha256 %q is not a digest of the canonical encoding", s.CertificateSHA256)
	}
	if _, err := parseDigest("screenshot_sha256", s.ScreenshotSHA256); err != nil {
		return err
	}
	for _, c := range s.Consents {
		if _, err := c.Visibility.document(); err != nil {
			return err
		}
	}
	return nil
}

// NewStatement returns a statement of the certificate whose content is c,
// measured at at, with its version, the certificate's digest and its time
// written as the encoding writes them; the caller sets the rest.
func NewStatement(c *Content, at time.Time) (Statement, error) {
	enc, err := c.Encoding()
	if err != nil {
		return Statement{}, err
	}
	return Statement{V: StatementVersion, CertificateID: c.ID, CertificateSHA256: digestString(sha256.Sum256(enc)),
		MeasuredAt: timeString(at), Consents: []StatedConsent{}, Differences: []Difference{}, Unreproducible: []string{}}, nil
}

// StatedVisibility returns v as a statement shows it, a number that is
// negative zero written as "0" (as Number writes it).
func StatedVisibility(v *Visibility) *ContentVisibility {
	if v == nil {
		return nil
	}
	w := *v
	w.FontSizePx, w.ContrastRatio = positiveZero(w.FontSizePx), positiveZero(w.ContrastRatio)
	return contentVisibility(&w)
}

// SignStatement names k in s (s.KeyID is set to k.ID) and returns k's
// Ed25519 signature of s's canonical encoding.
func (k SigningKey) SignStatement(s *Statement) ([]byte, error) {
	s.KeyID = k.ID
	enc, err := s.Encoding()
	if err != nil {
		return nil, err
	}
	return ed25519.Sign(k.Private, enc), nil
}

// VerifyStatement checks offline that signature is key's Ed25519 signature
// of s, and that s states of the certificate whose content is c.
func VerifyStatement(s *Statement, c *Content, key PublicKey, signature []byte) error {
	if c == nil {
		return errors.New("signed: no signed content of the certificate to hold the statement to (the certificate is not signed)")
	}
	if s.KeyID != key.ID {
		return fmt.Errorf("signed: the statement names key %q, not %q", s.KeyID, key.ID)
	}
	enc, err := s.Encoding()
	if err != nil {
		return err
	}
	if !key.verifies(enc, signature) {
		return errors.New("signed: the statement's signature does not match it")
	}
	cert, err := c.Encoding()
	if err != nil {
		return err
	}
	if s.CertificateID != c.ID || s.CertificateSHA256 != digestString(sha256.Sum256(cert)) {
		return fmt.Errorf("signed: the statement is of another certificate than %s as signed", c.ID)
	}
	return nil
}

// StatementProof is an attestation as certificate-info answers it
// ("attestation"): the statement, its signature and the id of its key.
// The server writes it and an offline check reads it.
type StatementProof struct {
	Signature string     `json:"signature"` // standard base64 (EncodeSignature)
	KeyID     string     `json:"key_id"`
	Statement *Statement `json:"statement"`
}

// Verify checks offline that p is signed by a key of keys and states of
// the certificate whose content is c.
func (p *StatementProof) Verify(keys *KeySet, c *Content) error {
	if p.Statement == nil || p.Signature == "" {
		return errors.New("the attestation carries no signed statement")
	}
	sig, err := base64.StdEncoding.DecodeString(p.Signature)
	if err != nil {
		return fmt.Errorf("the attestation's signature is not base64: %w", err)
	}
	if p.KeyID != p.Statement.KeyID {
		return fmt.Errorf("key_id %q differs from the statement's %q", p.KeyID, p.Statement.KeyID)
	}
	key, err := keys.Find(p.KeyID)
	if err != nil {
		return err
	}
	return VerifyStatement(p.Statement, c, key, sig)
}
