package consent

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"
)

// Signed certificates (D41).
//
// A certificate is signed with Ed25519 over its canonical encoding, a JSON
// object written by these rules so that anyone can rebuild it from the
// certificate's JSON and check the signature offline with the published
// public key:
//
//   - the members, in this order (which is the sorted order of their
//     names): "company_id", "consents", "created_at", "email_sha256", "id",
//     "key_id", "mobile_sha256", "origin", "property_id",
//     "recording_sha256", "session_id", "v";
//   - "v" is "consentkit-certificate-1"; "key_id" is the id of the signing
//     key; "consents" is an array, in the certificate's order, of objects
//     with the members "opt_in_at", "text", "types" (in that order), where
//     "types" is an array of strings in the certificate's order;
//   - every other value is a string: times in UTC as
//     2006-01-02T15:04:05.000000Z (always six decimals; "" for none),
//     digests as 64 lowercase hex digits ("" for none);
//   - no white space; strings escaped as RFC 8785 (JSON Canonicalization
//     Scheme) escapes them: \" and \\, \b \t \n \f \r, other characters
//     below U+0020 as \u00xx (lowercase hex), everything else as itself in
//     UTF-8.
//
// The signature is the 64 bytes of Ed25519 over those bytes; the API shows
// it in standard base64 with the key id. What is signed is the evidence
// itself — ids, times, consents, origin, digests, the recording's SHA-256 —
// and not what changes by design (retention, expiry, revocation).

// CertificateEncodingVersion is the "v" of the canonical encoding.
const CertificateEncodingVersion = "consentkit-certificate-1"

// SigningKey is an Ed25519 private key with the id it is published under.
type SigningKey struct {
	ID      string
	Private ed25519.PrivateKey
}

// PublicKey is a published Ed25519 public key.
type PublicKey struct {
	ID  string
	Key ed25519.PublicKey
}

// NewSigningKey returns a new random key with the given id.
func NewSigningKey(id string) (SigningKey, error) {
	if err := CheckID("key_id", id); err != nil {
		return SigningKey{}, err
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return SigningKey{}, err
	}
	return SigningKey{ID: id, Private: priv}, nil
}

// Public returns k's public key.
func (k SigningKey) Public() PublicKey {
	return PublicKey{ID: k.ID, Key: k.Private.Public().(ed25519.PublicKey)}
}

// checkKeys refuses keys that cannot be used: a bad id, a key of the wrong
// size, or two keys of one id.
func checkKeys(signing []SigningKey, public []PublicKey) error {
	seen := map[string]bool{}
	for _, k := range signing {
		if err := CheckID("signing key id", k.ID); err != nil {
			return err
		}
		if len(k.Private) != ed25519.PrivateKeySize {
			return fmt.Errorf("consent: signing key %s is not an Ed25519 private key", k.ID)
		}
		if seen[k.ID] {
			return fmt.Errorf("consent: two keys have the id %s", k.ID)
		}
		seen[k.ID] = true
	}
	for _, k := range public {
		if err := CheckID("public key id", k.ID); err != nil {
			return err
		}
		if len(k.Key) != ed25519.PublicKeySize {
			return fmt.Errorf("consent: public key %s is not an Ed25519 public key", k.ID)
		}
		if seen[k.ID] {
			return fmt.Errorf("consent: two keys have the id %s", k.ID)
		}
		seen[k.ID] = true
	}
	return nil
}

// PublicKeys returns the keys that verify certificates: those of
// Config.SigningKeys, the first of which signs new certificates, then
// Config.PublicKeys (retired keys whose certificates still verify).
func (s *Service) PublicKeys() []PublicKey {
	return append([]PublicKey{}, s.keys...)
}

// sign sets c's KeyID and Signature with the first signing key; without
// one, c stays unsigned.
func (s *Service) sign(c *Certificate) {
	if len(s.cfg.SigningKeys) == 0 {
		return
	}
	k := s.cfg.SigningKeys[0]
	c.KeyID = k.ID
	c.Signature = ed25519.Sign(k.Private, CertificateEncoding(c))
}

// ErrIntegrity is the refusal of a certificate whose content, or whose
// session's recording, no longer matches what was signed or hashed when it
// was issued (D41): code Conflict, so the API answers 409.
var ErrIntegrity = Errorf(Conflict, "certificate integrity check failed")

// CheckIntegrity reports whether c still is what was issued: its signature
// holds under the key of its KeyID (Config.SigningKeys or PublicKeys) and,
// when recording is not nil, it (the SHA-256 of the session's recording as
// Service.Recording returns it) is c.RecordingSHA256. A service with keys
// refuses an unsigned certificate (unless created before
// Config.UnsignedBefore); one without keys checks only the recording. The
// error wraps ErrIntegrity.
func (s *Service) CheckIntegrity(c *Certificate, recording *Digest) error {
	keys := s.keys
	switch {
	case len(c.Signature) == 0 && len(keys) > 0 && !c.CreatedAt.Before(s.cfg.UnsignedBefore):
		return fmt.Errorf("%w: certificate %s is not signed", ErrIntegrity, c.ID)
	case len(c.Signature) > 0:
		i := slices.IndexFunc(keys, func(k PublicKey) bool { return k.ID == c.KeyID })
		if i < 0 {
			return fmt.Errorf("%w: certificate %s is signed with key %q, which is not configured", ErrIntegrity, c.ID, c.KeyID)
		}
		if !s.signatures.verify(keys[i].Key, c.Signature, c) {
			return fmt.Errorf("%w: the signature of certificate %s does not match its content", ErrIntegrity, c.ID)
		}
	}
	if recording != nil && !c.RecordingSHA256.IsZero() && *recording != c.RecordingSHA256 {
		return fmt.Errorf("%w: the recording of certificate %s no longer has the SHA-256 it was issued with", ErrIntegrity, c.ID)
	}
	return nil
}

// VerifyCertificate checks a signature offline: that signature (64 bytes)
// is key's Ed25519 signature of c's canonical encoding, c.KeyID being the
// key's id. It needs no store and no service.
func VerifyCertificate(c *Certificate, key PublicKey, signature []byte) error {
	sc := Signed(c)
	return VerifySigned(&sc, key, signature)
}

// SignedContent is what a certificate's signature covers, as a JSON
// object: its canonical encoding (RFC 8785) is CertificateEncoding. The
// API shows it beside the signature, so that anyone can check the
// signature offline and see what it vouches for.
type SignedContent struct {
	CompanyID       string          `json:"company_id"`
	Consents        []SignedConsent `json:"consents"`
	CreatedAt       string          `json:"created_at"`
	EmailSHA256     string          `json:"email_sha256"`
	ID              string          `json:"id"`
	KeyID           string          `json:"key_id"`
	MobileSHA256    string          `json:"mobile_sha256"`
	Origin          string          `json:"origin"`
	PropertyID      string          `json:"property_id"`
	RecordingSHA256 string          `json:"recording_sha256"`
	SessionID       string          `json:"session_id"`
	V               string          `json:"v"`
}

// SignedConsent is one consent of SignedContent.
type SignedConsent struct {
	OptInAt string   `json:"opt_in_at"`
	Text    string   `json:"text"`
	Types   []string `json:"types"`
}

// Signed returns what c's signature covers.
func Signed(c *Certificate) SignedContent {
	out := SignedContent{
		CompanyID: c.CompanyID, Consents: []SignedConsent{}, CreatedAt: canonicalTime(c.CreatedAt),
		EmailSHA256: canonicalDigest(c.EmailDigest), ID: c.ID, KeyID: c.KeyID, MobileSHA256: canonicalDigest(c.MobileDigest),
		Origin: c.Origin, PropertyID: c.PropertyID, RecordingSHA256: canonicalDigest(c.RecordingSHA256), SessionID: c.SessionID,
		V: CertificateEncodingVersion,
	}
	for _, r := range c.Records {
		types := r.Types
		if types == nil {
			types = []string{}
		}
		out.Consents = append(out.Consents, SignedConsent{OptInAt: canonicalTime(r.OptInAt), Text: r.Text, Types: types})
	}
	return out
}

// CertificateEncoding returns the canonical encoding of c that its
// signature covers (see the package's notes on signed certificates).
func CertificateEncoding(c *Certificate) []byte {
	return appendEncoding(make([]byte, 0, encodingSize(c)), c)
}

// encodingSize is the length of c's canonical encoding when no character
// of its text needs an escape: the members' names and punctuation (the
// constants below count them), its strings quoted, its times and digests.
func encodingSize(c *Certificate) int {
	const (
		members  = len(`{"company_id":,"consents":[],"created_at":,"email_sha256":,"id":,"key_id":,"mobile_sha256":,"origin":,"property_id":,"recording_sha256":,"session_id":,"v":}`)
		quotes   = 11 * 2 // of the values other than the consents'
		record   = len(`{"opt_in_at":,"text":,"types":[]}`) + 2*2
		timeSize = len(canonicalTimeLayout)
	)
	n := members + quotes + len(c.CompanyID) + timeSize + 3*2*len(Digest{}) + len(c.ID) + len(c.KeyID) +
		len(c.Origin) + len(c.PropertyID) + len(c.SessionID) + len(CertificateEncodingVersion)
	for i, r := range c.Records {
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

// appendEncoding appends c's canonical encoding: byte for byte
// Signed(c).Encoding(), written from c's own fields without the strings
// Signed makes of its times and digests (every verification encodes its
// certificate to check the signature).
func appendEncoding(b []byte, c *Certificate) []byte {
	b = append(b, `{"company_id":`...)
	b = appendJCS(b, c.CompanyID)
	b = append(b, `,"consents":[`...)
	for i, r := range c.Records {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"opt_in_at":`...)
		b = appendCanonicalTime(b, r.OptInAt)
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
	b = appendCanonicalTime(b, c.CreatedAt)
	b = append(b, `,"email_sha256":`...)
	b = appendCanonicalDigest(b, c.EmailDigest)
	b = append(b, `,"id":`...)
	b = appendJCS(b, c.ID)
	b = append(b, `,"key_id":`...)
	b = appendJCS(b, c.KeyID)
	b = append(b, `,"mobile_sha256":`...)
	b = appendCanonicalDigest(b, c.MobileDigest)
	b = append(b, `,"origin":`...)
	b = appendJCS(b, c.Origin)
	b = append(b, `,"property_id":`...)
	b = appendJCS(b, c.PropertyID)
	b = append(b, `,"recording_sha256":`...)
	b = appendCanonicalDigest(b, c.RecordingSHA256)
	b = append(b, `,"session_id":`...)
	b = appendJCS(b, c.SessionID)
	b = append(b, `,"v":"`+CertificateEncodingVersion+`"}`...)
	return b
}

// Encoding returns the canonical encoding of the content: the bytes the
// signature covers.
func (sc *SignedContent) Encoding() []byte {
	size := 256 + len(sc.CompanyID) + len(sc.ID) + len(sc.KeyID) + len(sc.Origin) + len(sc.PropertyID) + len(sc.SessionID) +
		len(sc.CreatedAt) + len(sc.EmailSHA256) + len(sc.MobileSHA256) + len(sc.RecordingSHA256) + len(sc.V)
	for _, r := range sc.Consents {
		size += 64 + len(r.OptInAt) + len(r.Text)
		for _, t := range r.Types {
			size += 3 + len(t)
		}
	}
	b := make([]byte, 0, size)
	str := func(name, value string) {
		b = append(b, ',')
		b = appendJCS(b, name)
		b = append(b, ':')
		b = appendJCS(b, value)
	}
	b = append(b, `{"company_id":`...)
	b = appendJCS(b, sc.CompanyID)
	b = append(b, `,"consents":[`...)
	for i, r := range sc.Consents {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"opt_in_at":`...)
		b = appendJCS(b, r.OptInAt)
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
	b = append(b, ']')
	str("created_at", sc.CreatedAt)
	str("email_sha256", sc.EmailSHA256)
	str("id", sc.ID)
	str("key_id", sc.KeyID)
	str("mobile_sha256", sc.MobileSHA256)
	str("origin", sc.Origin)
	str("property_id", sc.PropertyID)
	str("recording_sha256", sc.RecordingSHA256)
	str("session_id", sc.SessionID)
	str("v", sc.V)
	return append(b, '}')
}

// VerifySigned checks offline that signature is key's Ed25519 signature of
// the content, as certificate-info shows them ("signed", "signature",
// "key_id"): the content must name the key and be of this encoding's
// version.
func VerifySigned(sc *SignedContent, key PublicKey, signature []byte) error {
	switch {
	case sc.V != CertificateEncodingVersion:
		return fmt.Errorf("consent: signed content of version %q, not %q", sc.V, CertificateEncodingVersion)
	case sc.KeyID != key.ID:
		return fmt.Errorf("consent: certificate %s names key %q, not %q", sc.ID, sc.KeyID, key.ID)
	case len(key.Key) != ed25519.PublicKeySize || !ed25519.Verify(key.Key, sc.Encoding(), signature):
		return errors.New("consent: the signature does not match the certificate")
	}
	return nil
}

const canonicalTimeLayout = "2006-01-02T15:04:05.000000Z"

func canonicalTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(canonicalTimeLayout)
}

func canonicalDigest(d Digest) string {
	if d.IsZero() {
		return ""
	}
	return hex.EncodeToString(d[:])
}

// appendCanonicalTime appends canonicalTime(t) as a JSON string: the
// layout writes only digits and "-:.TZ", which need no escape.
func appendCanonicalTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	if !t.IsZero() {
		b = appendMicroTime(b, t.UTC())
	}
	return append(b, '"')
}

// appendMicroTime appends t, a UTC time, in canonicalTimeLayout. A time of
// the years 0–9999 (every stored one falls in 1–9999: the Tx contract) is
// written digit by digit, the bytes AppendFormat writes in a fraction of its time (a
// signature check encodes every time of its certificate); others go
// through AppendFormat.
func appendMicroTime(b []byte, t time.Time) []byte {
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(b, canonicalTimeLayout)
	}
	hour, minute, sec := t.Clock()
	b = appendDigits(b, year, 4)
	b = appendDigits(append(b, '-'), int(month), 2)
	b = appendDigits(append(b, '-'), day, 2)
	b = appendDigits(append(b, 'T'), hour, 2)
	b = appendDigits(append(b, ':'), minute, 2)
	b = appendDigits(append(b, ':'), sec, 2)
	b = appendDigits(append(b, '.'), t.Nanosecond()/1000, 6)
	return append(b, 'Z')
}

// appendDigits appends the n last decimal digits of v >= 0, zeros first.
func appendDigits(b []byte, v, n int) []byte {
	b = append(b, make([]byte, n)...) // no allocation: the compiler extends b
	for i := len(b) - 1; i >= len(b)-n; i-- {
		b[i] = byte('0' + v%10)
		v /= 10
	}
	return b
}

// appendCanonicalDigest appends canonicalDigest(d) as a JSON string.
func appendCanonicalDigest(b []byte, d Digest) []byte {
	b = append(b, '"')
	if !d.IsZero() {
		b = hex.AppendEncode(b, d[:])
	}
	return append(b, '"')
}

// appendJCS appends s as RFC 8785 writes a string: quoted, with \" and
// \\, the short escapes \b \t \n \f \r, other characters below U+0020
// as \u00xx, and everything else as itself. Stored text is valid UTF-8
// (ValidText); an invalid byte is written as U+FFFD all the same. Runs of
// characters written as themselves are copied whole.
func appendJCS(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	start := 0 // s[start:i] is still to copy as it is
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b = append(b, s[start:i]...)
				b = utf8.AppendRune(b, utf8.RuneError)
				start = i + 1
			}
			i += size
			continue
		}
		if c >= 0x20 && c != '"' && c != '\\' {
			i++
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\b':
			b = append(b, `\b`...)
		case '\t':
			b = append(b, `\t`...)
		case '\n':
			b = append(b, `\n`...)
		case '\f':
			b = append(b, `\f`...)
		case '\r':
			b = append(b, `\r`...)
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		i++
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// EncodeSignature returns a signature as the API shows it: standard base64.
func EncodeSignature(sig []byte) string { return base64.StdEncoding.EncodeToString(sig) }
