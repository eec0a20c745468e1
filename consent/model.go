package consent

import (
	"bytes"
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"encoding/json"
	"hash"
	"time"
)

// Company is a customer of the service. Its wallet is created with it, at a
// zero balance.
type Company struct {
	ID   string
	Name string
	// ThirdPartyVerificationEnabled must be on for any other company to
	// verify this company's certificates (D9).
	ThirdPartyVerificationEnabled bool
	// AuthorizedThirdParties lists the companies allowed to do so.
	AuthorizedThirdParties []string
	// AttestCertificates has every certificate the company issues
	// attested (D49), not only those retained or asked for.
	AttestCertificates bool
	// InsightsRules are the thresholds of the bot verdict of its
	// certificates (D50); the zero value holds the defaults.
	InsightsRules InsightsRules
	CreatedAt     time.Time
}

// Authorizes reports whether caller may verify c's certificates as a third
// party (D9).
func (c *Company) Authorizes(caller string) bool {
	if !c.ThirdPartyVerificationEnabled {
		return false
	}
	for _, id := range c.AuthorizedThirdParties {
		if id == caller {
			return true
		}
	}
	return false
}

// Property is a web property (a form, a site) of a company.
type Property struct {
	ID        string
	CompanyID string
	Name      string
	// AllowedOrigins are the origins (scheme://host[:port]) whose pages may
	// capture sessions for this property in the browser (D32); none: no
	// browser capture.
	AllowedOrigins []string
	CreatedAt      time.Time
}

// AllowsOrigin reports whether origin is one of p's allowed origins, compared
// exactly (D32).
func (p *Property) AllowsOrigin(origin string) bool {
	for _, o := range p.AllowedOrigins {
		if o == origin {
			return true
		}
	}
	return false
}

// Permission is a right a token grants beyond the Verification API.
type Permission string

// PermissionRetention lets a token call the Retain API (D7).
const PermissionRetention Permission = "vzew_retention"

// Token is an integration token (D6). Its secret is shown once, when it is
// issued; only its SHA-256 digest is kept.
type Token struct {
	ID          string // public handle, used to revoke it
	CompanyID   string
	Digest      Digest // SHA-256 of the secret
	Permissions []Permission
	ExpiresAt   time.Time // zero: never expires
	RevokedAt   time.Time // zero: not revoked
	CreatedAt   time.Time
}

// Has reports whether t grants p.
func (t *Token) Has(p Permission) bool {
	for _, q := range t.Permissions {
		if q == p {
			return true
		}
	}
	return false
}

// Active reports whether t may be used at now: not revoked and not expired.
func (t *Token) Active(now time.Time) bool {
	return t.RevokedAt.IsZero() && (t.ExpiresAt.IsZero() || now.Before(t.ExpiresAt))
}

// RetentionStatus is where a session or certificate stands in the retention
// lifecycle (D21).
type RetentionStatus string

// Retention statuses.
const (
	RetentionNone     RetentionStatus = "none"
	RetentionRetained RetentionStatus = "retained"
	RetentionExpired  RetentionStatus = "expired"
)

// VideoStatus is where a session's recording stands in its conversion to MP4,
// shown as rrweb_to_video_status (D21).
type VideoStatus string

// Video conversion statuses.
const (
	VideoNone       VideoStatus = "none"
	VideoPending    VideoStatus = "pending"
	VideoConverting VideoStatus = "converting"
	VideoConverted  VideoStatus = "converted"
	VideoFailed     VideoStatus = "failed"
)

// Session is a recorded visit of a consumer to a property. Its recording is
// kept as the chunks of rrweb events it was sent in (see Tx.AppendEvents).
type Session struct {
	ID              string
	CompanyID       string
	PropertyID      string
	RetentionStatus RetentionStatus
	VideoStatus     VideoStatus
	EventChunks     int   // number of event chunks recorded
	EventBytes      int64 // their total size
	CreatedAt       time.Time
	// ExpiresAt is when the recording may be purged: CreatedAt plus the
	// default window, or, once retained, the retention time plus the
	// long-term period (D26).
	ExpiresAt time.Time
	// Video is the MP4 made of the recording; zero until converted.
	Video Video

	// The fields below are set for sessions captured in the browser (D33);
	// they are zero for sessions created through the Go API alone.

	// UploadDigest is the SHA-256 of the session's upload token.
	UploadDigest Digest
	// CertificateID is the certificate reserved for the session, issued at
	// consent (D33, D35).
	CertificateID string
	// URL is the page on which recording started.
	URL string
	// ClosedAt is when consent was given: the recording takes no more events.
	ClosedAt time.Time

	// LastEventAt is when the last chunk was appended; zero before the
	// first. A session idle for long enough is finished (D52).
	LastEventAt time.Time
	// Recording is where the finished recording lives once it has left
	// the database for the recordings blob store (D52); zero while its
	// chunks are in the database.
	Recording Recording
}

// Closed reports whether the session's recording is closed (D35).
func (s *Session) Closed() bool { return !s.ClosedAt.IsZero() }

// Finished reports whether the session's recording takes no more chunks:
// closed at consent, or being moved or moved to the blob store (D52).
func (s *Session) Finished() bool { return s.Closed() || s.Recording.Key != "" }

// Idle reports whether the session took its last chunk at or before
// idleBefore; one that took none is not idle.
func (s *Session) Idle(idleBefore time.Time) bool {
	return !s.LastEventAt.IsZero() && !s.LastEventAt.After(idleBefore)
}

// ToMove reports whether the session's finished recording is still to be
// moved to the blob store (D52, Tx.SessionsToMove): chunks held, not
// purged, not moved, and finished or idle since idleBefore.
func (s *Session) ToMove(idleBefore time.Time) bool {
	return (s.Finished() || s.Idle(idleBefore)) && s.EventChunks > 0 && !s.Recording.Moved() && s.RetentionStatus != RetentionExpired
}

// Recording describes a finished session's recording compacted into one
// object of the recordings blob store (D52). It is set in two steps: Key
// first, before the object is written, so that no object ever exists that
// no row names (the session then takes no more chunks); then, once the
// object is written, Bytes, SHA256 and At, in the transaction that removes
// the chunks from the database (Tx.SetRecording).
type Recording struct {
	Key    string    // the object's key in the recordings store
	Bytes  int64     // the object's size: compressed
	SHA256 Digest    // the recording's SHA-256 as JoinChunks writes it (RecordingDigest)
	At     time.Time // when the object was recorded; zero while it is being written
}

// Moved reports whether the recording is in its object, not the database.
func (r Recording) Moved() bool { return !r.At.IsZero() }

// Video describes a session's recording converted to MP4.
type Video struct {
	Path     string // where the video store keeps it
	Bytes    int64
	SHA256   Digest
	Duration time.Duration // to the millisecond
}

// Job is background work in the store's queue: a recording to convert
// (D21), a purge run (D43), a webhook to deliver (D44). It is enqueued in
// the same transaction as the change that calls for it, so it exists if and
// only if that change committed. A runner leases it, does it and ends it:
// deleted when done, kept with a later RunAfter to retry, or kept with
// FailedAt set when it will not be tried again.
type Job struct {
	Kind       string    // what to do: the name of the runner's handler
	Key        string    // unique among the jobs of its kind (a session id, say)
	Payload    []byte    // the handler's input, stored byte for byte
	Attempts   int       // tries so far, the one under way included
	RunAfter   time.Time // not to be tried before this time
	LastError  string    // why the last try failed
	LeaseOwner string    // the runner doing it; "" when none
	LeaseUntil time.Time // when that runner's lease runs out
	FailedAt   time.Time // set when it will not be tried again
	CreatedAt  time.Time
	// CompanyID is the company the job works for, "" for none. LeaseJob
	// spreads leases across companies (D53): of the due jobs it takes one
	// of the company holding the fewest leases of the kinds asked for.
	CompanyID string
	// Lane, when set, lets at most one job of the lane hold a lease at a
	// time: a webhook endpoint's id, so that its deliveries go one by one
	// (D53).
	Lane string
}

// JobConvert is the kind of the job that converts a retained session's
// recording to MP4 (D21); its key is the session id. The session's
// VideoStatus tells where it stands.
const JobConvert = "convert"

// JobLockRecording is the kind of the job that locks a retained session's
// recording object until the session's ExpiresAt (D52); its key is the
// session id. It is enqueued when a retained session's recording is moved
// and when a moved recording's session is retained, and runs after that
// commit.
const JobLockRecording = "recording.lock"

// JobDeleteRecording is the kind of the job that removes the recording
// object of a purged session (D43, D52); its key is the session id, its
// payload the object's key. The purge enqueues it, and so does a move
// that finds its session purged meanwhile.
const JobDeleteRecording = "recording.delete"

// Record is one consent given in a certificate.
type Record struct {
	// Text is the consent text as the consumer could read it: for a
	// captured certificate, the marked element's visible text (D47).
	Text    string
	Types   []string
	OptInAt time.Time
	// Visibility is what the consumer could see of this consent's element;
	// nil when not measured (certificates captured before per-consent
	// measurement, or issued through the Go API without it).
	Visibility *Visibility
	// OptInMethod is how the consumer opted in (one of the OptIn…
	// constants); "" when not known.
	OptInMethod string
	// NodeID is the recorder's id of the consent's element in the session's
	// recording, by which a replay finds it; 0 when not known. It locates
	// the element in the recording (whose digest is signed) and asserts
	// nothing of its own, so it is not signed.
	NodeID int
}

// How a consumer opted in to one consent, as the capture snippet saw the
// consent's checkbox (D48).
const (
	OptInManual      = "manual"       // ticked by the consumer (a user-triggered event)
	OptInPreSelected = "pre_selected" // ticked when the page loaded, left so
	OptInScripted    = "scripted"     // ticked by a script, with no user-triggered event
	OptInUnchecked   = "unchecked"    // not ticked when the form was submitted
	OptInNone        = "none"         // the form had no checkbox for it
)

// OptInMethods lists the opt-in methods a certificate may record.
var OptInMethods = []string{OptInManual, OptInPreSelected, OptInScripted, OptInUnchecked, OptInNone}

// Certificate is the evidence of consent captured in a session.
type Certificate struct {
	ID         string
	CompanyID  string
	PropertyID string
	SessionID  string
	Records    []Record
	// Origin is where the consent was captured, for example a form URL.
	Origin string
	// EventsCombined is the combined event data of the session: a JSON object.
	EventsCombined json.RawMessage
	// EmailDigest and MobileDigest are the digests of the consumer's
	// normalized email and mobile (D17); zero when not given.
	EmailDigest     Digest
	MobileDigest    Digest
	RetentionStatus RetentionStatus
	CreatedAt       time.Time
	ExpiresAt       time.Time // as for Session
	RevokedAt       time.Time // zero: not revoked

	// The fields below are set for certificates issued by browser capture
	// (D35); they are zero otherwise.

	// ClientIP and UserAgent are those of the consumer's browser.
	// ClientIP is an IP address's text, at most MaxClientIP bytes.
	ClientIP  string
	UserAgent string
	// RecordingSHA256 is the SHA-256 of the session's recording when the
	// certificate was issued, as Service.Recording returns it.
	RecordingSHA256 Digest
	// Visibility is what the consumer could see of the first consent's
	// text (D37), as snippets measured it before each consent had its own
	// (Record.Visibility); nil when not measured.
	Visibility *Visibility
	// RevokedBefore is the time of the company's latest revocation of the
	// consumer's email or mobile before this certificate was issued
	// (Tx.RevokedBefore): the consumer consented again after opting out.
	// Zero when there was none.
	RevokedBefore time.Time

	// KeyID and Signature are the Ed25519 signature of the certificate's
	// canonical encoding (package signed; Signed is what it covers) and the
	// id of the key that made it (D41); empty when issued without a
	// signing key.
	KeyID     string
	Signature []byte
	// SignatureVersion is the version of the canonical encoding the
	// signature covers: 1 or 2 (signed.Version1, signed.Version2); 0 when
	// unsigned.
	SignatureVersion int
}

// Visibility holds the facts the snippet measured on the consent element at
// the moment of consent (D37).
type Visibility struct {
	// InViewport: some of the element was inside the browser's viewport.
	InViewport bool `json:"in_viewport"`
	// Visible: the element's text was rendered where the consumer could
	// see it, none of it hidden (HiddenText is empty). Measurements made
	// before hidden text was kept said only that neither the element nor an
	// ancestor was hidden by display, visibility or opacity.
	Visible bool `json:"visible"`
	// FontSizePx is the computed font size, in CSS pixels.
	FontSizePx float64 `json:"font_size_px"`
	// TextColor and BackgroundColor are computed CSS colours, as the browser
	// wrote them (for example "rgb(17, 17, 17)"); the background is that of
	// the nearest ancestor with one.
	TextColor       string `json:"text_color"`
	BackgroundColor string `json:"background_color"`
	// ContrastRatio is the WCAG contrast ratio of the two colours, 1 to 21.
	ContrastRatio float64 `json:"contrast_ratio"`
	// HiddenText lists the fragments of the element's text the consumer
	// could not see (D47), each apart, in the page's order; Visible is false
	// when there is any. Empty for measurements made before it was kept.
	HiddenText []string `json:"hidden_text"`
}

// Revoked reports whether the consumer opted out of c.
func (c *Certificate) Revoked() bool { return !c.RevokedAt.IsZero() }

// LeadAgeSeconds is the lead's age at now: whole seconds since the
// certificate was issued, never negative (D50, D51).
func (c *Certificate) LeadAgeSeconds(now time.Time) int64 {
	return max(0, int64(now.Sub(c.CreatedAt)/time.Second))
}

// Revocation records one processed opt-out request (D19). It outlives the
// certificates it revoked.
type Revocation struct {
	ID             string
	CompanyID      string
	CertificateID  string // as given; "" when not given
	EmailDigest    Digest // zero when not given
	MobileDigest   Digest // zero when not given
	Reason         string
	ClientIP       string
	CertificateIDs []string // the certificates it matched, sorted
	CreatedAt      time.Time
}

// Digest is a SHA-256 digest. The zero Digest means "none".
type Digest [sha256.Size]byte

// DigestOf returns the SHA-256 digest of s.
func DigestOf(s string) Digest { return sha256.Sum256([]byte(s)) }

// IsZero reports whether d is the zero Digest.
func (d Digest) IsZero() bool { return d == Digest{} }

// String returns d in hex.
func (d Digest) String() string { return hex.EncodeToString(d[:]) }

// JoinChunks joins JSON arrays into one array: the recording of a session
// whose chunks they are.
func JoinChunks(chunks [][]byte) json.RawMessage {
	var j joiner
	for _, c := range chunks {
		j.add(c)
	}
	return j.done()
}

// joiner builds a recording as JoinChunks writes it, a chunk at a time.
type joiner struct {
	buf []byte
	n   int
}

func (j *joiner) add(chunk []byte) {
	if j.buf == nil {
		j.buf = append(j.buf, '[')
	}
	if inner := innerEvents(chunk); len(inner) > 0 {
		if j.n > 0 {
			j.buf = append(j.buf, ',')
		}
		j.buf = append(j.buf, inner...)
		j.n++
	}
}

func (j *joiner) done() json.RawMessage {
	if j.buf == nil {
		j.buf = append(j.buf, '[')
	}
	return append(j.buf, ']')
}

// innerEvents is what a chunk, a JSON array of events, adds to its
// recording: the array's members without its brackets.
func innerEvents(chunk []byte) []byte {
	inner := bytes.TrimSpace(chunk)
	if len(inner) < 2 {
		return nil
	}
	return bytes.TrimSpace(inner[1 : len(inner)-1])
}

// RecordingHash computes the SHA-256 of a recording as JoinChunks writes
// it, from its chunks in order, holding none of them: a 64 MiB recording
// is hashed as it is read, a chunk at a time (Tx.EachEventChunk).
type RecordingHash struct {
	h hash.Hash
	n int
}

// NewRecordingHash starts the hash of a recording.
func NewRecordingHash() *RecordingHash {
	r := &RecordingHash{h: sha256.New()}
	r.h.Write([]byte{'['})
	return r
}

// Add adds the recording's next chunk.
func (r *RecordingHash) Add(chunk []byte) {
	if inner := innerEvents(chunk); len(inner) > 0 {
		if r.n > 0 {
			r.h.Write([]byte{','})
		}
		r.h.Write(inner)
		r.n++
	}
}

// Sum returns the digest of the chunks added so far, which
// sha256.Sum256(JoinChunks(chunks)) equals; the hash may go on after it.
func (r *RecordingHash) Sum() Digest {
	var d Digest
	c := r.Clone()
	c.h.Write([]byte{']'})
	copy(d[:], c.h.Sum(nil))
	return d
}

// Clone returns a hash that goes on from r's state, apart from r.
func (r *RecordingHash) Clone() *RecordingHash {
	state, err := r.h.(encoding.BinaryMarshaler).MarshalBinary()
	h := sha256.New()
	if err == nil {
		err = h.(encoding.BinaryUnmarshaler).UnmarshalBinary(state)
	}
	if err != nil { // crypto/sha256 always marshals its state
		panic("consent: cloning a SHA-256: " + err.Error())
	}
	return &RecordingHash{h: h, n: r.n}
}
