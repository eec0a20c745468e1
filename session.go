package consentkit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/consentkit/consentkit/blob"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/contact"
	"github.com/consentkit/consentkit/internal/jsonscan"
)

// Recorded sessions and the certificates issued for them.

// SessionParams describes a new recorded session.
type SessionParams struct {
	ID         string    // optional: a random id when empty; none starting with "."
	CompanyID  string    // required
	PropertyID string    // required: a property of CompanyID
	CreatedAt  time.Time // optional: now when zero

	// Browser capture (D33) sets these; see package capture.
	UploadDigest  consent.Digest // the SHA-256 of the session's upload token
	CertificateID string         // the certificate reserved for the session
	URL           string         // the page on which recording started
}

// StartSession creates a session with an empty recording. NotFound when the
// property does not exist or is not the company's.
func (s *Service) StartSession(ctx context.Context, p SessionParams) (*consent.Session, error) {
	return update(ctx, s, func(tx consent.Tx) (*consent.Session, error) { return s.StartSessionTx(ctx, tx, p) })
}

// StartSessionTx is StartSession inside tx.
func (s *Service) StartSessionTx(ctx context.Context, tx consent.Tx, p SessionParams) (*consent.Session, error) {
	if p.ID == "" {
		p.ID = consent.NewID("ses")
	}
	for _, f := range [...]struct{ name, v string }{{"id", p.ID}, {"company_id", p.CompanyID}, {"property_id", p.PropertyID}} {
		if err := consent.CheckID(f.name, f.v); err != nil {
			return nil, err
		}
	}
	if blob.ValidKey(RecordingKey(p.ID)) != nil {
		// Its recording could never be moved (D52), nor its video kept.
		return nil, consent.Errorf(consent.Invalid, "id: a session id may not start with \".\": it names the session's recording and video files")
	}
	if p.ID == "batch" {
		// POST /api/integrations/{companyId}/retain/batch is the batch
		// route: a session so named could not be retained alone.
		return nil, consent.Errorf(consent.Invalid, "id: \"batch\" is reserved: the Retain API's batch route has that name")
	}
	created := s.Now()
	if !p.CreatedAt.IsZero() {
		created = consent.UTC(p.CreatedAt)
	}
	if p.CertificateID != "" {
		if err := consent.CheckID("certificate_id", p.CertificateID); err != nil {
			return nil, err
		}
	}
	if err := checkURL("url", p.URL); err != nil {
		return nil, err
	}
	ses := &consent.Session{
		ID: p.ID, CompanyID: p.CompanyID, PropertyID: p.PropertyID,
		RetentionStatus: consent.RetentionNone, VideoStatus: consent.VideoNone,
		CreatedAt: created, ExpiresAt: created.Add(s.cfg.DefaultRetention),
		UploadDigest: p.UploadDigest, CertificateID: p.CertificateID, URL: p.URL,
	}
	if err := consent.CheckProperty(ctx, tx, p.CompanyID, p.PropertyID); err != nil {
		return nil, err
	}
	if err := tx.CreateSession(ctx, ses); err != nil {
		return nil, err
	}
	return ses, nil
}

// AppendEvents adds a chunk of the session's rrweb recording: a JSON array
// of event objects, kept byte for byte. TooLarge when the chunk is over
// MaxChunkBytes or the recording would pass MaxRecordingBytes; NotFound when
// the session does not exist.
func (s *Service) AppendEvents(ctx context.Context, sessionID string, events json.RawMessage) (*consent.Session, error) {
	return update(ctx, s, func(tx consent.Tx) (*consent.Session, error) { return s.AppendEventsTx(ctx, tx, sessionID, events) })
}

// AppendEventsTx is AppendEvents inside tx.
func (s *Service) AppendEventsTx(ctx context.Context, tx consent.Tx, sessionID string, events json.RawMessage) (*consent.Session, error) {
	ses, err := tx.Session(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	return s.AppendEventsToTx(ctx, tx, ses, events)
}

// AppendEventsToTx is AppendEventsTx for ses, the session as read in tx
// by a caller that had to read it anyway: it appends the chunk under the
// same rules and returns ses with its counts updated.
func (s *Service) AppendEventsToTx(ctx context.Context, tx consent.Tx, ses *consent.Session, events json.RawMessage) (*consent.Session, error) {
	if err := s.CheckChunkSize(events); err != nil {
		return nil, err
	}
	if err := checkEvents(events); err != nil {
		return nil, err
	}
	return s.AppendCheckedEventsToTx(ctx, tx, ses, events)
}

// CheckChunkSize refuses, TooLarge, a chunk over Config.MaxChunkBytes,
// before it is read: the rule AppendEvents applies.
func (s *Service) CheckChunkSize(events json.RawMessage) error {
	if len(events) > s.cfg.MaxChunkBytes {
		return consent.Errorf(consent.TooLarge, "events: a chunk may hold at most %d bytes", s.cfg.MaxChunkBytes)
	}
	return nil
}

// CheckRecordingSize refuses, TooLarge, a chunk of n bytes that would take
// ses's recording past Config.MaxRecordingBytes: the rule AppendEvents
// applies.
func (s *Service) CheckRecordingSize(ses *consent.Session, n int) error {
	if ses.EventBytes+int64(n) > s.cfg.MaxRecordingBytes {
		return consent.Errorf(consent.TooLarge, "events: a recording may hold at most %d bytes", s.cfg.MaxRecordingBytes)
	}
	return nil
}

// AppendCheckedEventsToTx is AppendEventsToTx for a chunk that its caller
// has checked already, outside the transaction, with a check at least as
// strict as AppendEvents's — a non-empty JSON array of JSON objects —
// such as capture's check of rrweb events (capture.CheckEvents): the
// chunk is then read once, not again inside the write transaction. Every
// other rule (its size, the recording's, a finished recording) applies.
func (s *Service) AppendCheckedEventsToTx(ctx context.Context, tx consent.Tx, ses *consent.Session, events json.RawMessage) (*consent.Session, error) {
	if err := s.CheckChunkSize(events); err != nil {
		return nil, err
	}
	if err := Appendable(ses); err != nil {
		return nil, err
	}
	if err := s.CheckRecordingSize(ses, len(events)); err != nil {
		return nil, err
	}
	now := s.Now()
	if err := tx.AppendEvents(ctx, ses.ID, events, now); err != nil {
		return nil, err
	}
	ses.EventChunks++
	ses.EventBytes += int64(len(events))
	ses.LastEventAt = now
	return ses, nil
}

// ErrRecordingFinished refuses a chunk for a session whose recording is
// finished and moved, or being moved, to the blob store (D52): it was
// idle for Config.RecordingIdle. Its code is Conflict.
var ErrRecordingFinished = consent.Errorf(consent.Conflict, "events: the recording is finished: the session took no events for too long")

// Appendable refuses a chunk for ses, a Conflict, when its recording takes
// no more: purged (D43: a chunk kept then would never be moved or purged),
// closed at consent (D35: the certificate's recording digest covers what
// was recorded before), or finished for idleness (ErrRecordingFinished,
// D52). AppendCheckedEventsToTx applies it; a caller that must refuse
// before other work calls it first.
func Appendable(ses *consent.Session) error {
	switch {
	case ses.RetentionStatus == consent.RetentionExpired:
		return consent.Errorf(consent.Conflict, "events: the session expired: its recording was purged")
	case ses.Closed():
		return consent.Errorf(consent.Conflict, "the session is closed: consent was given")
	case ses.Finished():
		return ErrRecordingFinished
	}
	return nil
}

// checkEvents accepts a non-empty JSON array of objects, read in one pass
// (jsonscan) without decoding them.
func checkEvents(events json.RawMessage) error {
	n := 0
	err := jsonscan.Objects(events, func(int, []byte, []byte) error { return nil }, func(int) error { n++; return nil })
	if err != nil || n == 0 {
		return consent.Errorf(consent.Invalid, "events must be a non-empty JSON array of event objects")
	}
	return nil
}

// Recording returns the session's events as one JSON array: the chunks
// joined in the order they were appended. NotFound when the session does
// not exist or its recording was purged (D43).
func (s *Service) Recording(ctx context.Context, sessionID string) (json.RawMessage, error) {
	var rec json.RawMessage
	err := s.store.View(ctx, func(tx consent.Tx) error {
		ses, err := tx.Session(ctx, sessionID)
		if err != nil {
			return err
		}
		if ses.RetentionStatus == consent.RetentionExpired {
			return consent.Errorf(consent.NotFound, "the session's recording was purged: its retention window ended")
		}
		rec, err = consent.ReadRecording(ctx, tx, sessionID)
		return err
	})
	return rec, err
}

// CertificateParams describes a new certificate.
type CertificateParams struct {
	// ID is optional: a random id when empty. A given id must be new for
	// good: a purged certificate's id is free again (D43), and a new
	// certificate under it would not carry the old one's revocation.
	ID         string
	CompanyID  string // required
	PropertyID string // required: a property of CompanyID
	SessionID  string // required: a session of that property
	Origin     string // optional: where consent was captured, e.g. a form URL
	Email      string // optional; only its normalized digest is kept (D17)
	Mobile     string // optional; likewise
	// Records are the consents given, at most MaxRecords, each with a non-empty
	// text. None is allowed, but such a certificate matches nothing.
	Records []consent.Record
	// EventsCombined is a JSON object; optional ({} when empty).
	EventsCombined json.RawMessage
	CreatedAt      time.Time // optional: now when zero

	// Browser capture (D35) sets these; see package capture. ClientIP is
	// the text of an IP address, at most consent.MaxClientIP bytes.
	ClientIP        string
	UserAgent       string
	RecordingSHA256 consent.Digest
	Visibility      *consent.Visibility
}

// MaxRecords is the most consents a certificate holds (CertificateParams.Records).
const MaxRecords = 100

// ErrTooManyRecords refuses, Invalid, more than MaxRecords consents.
var ErrTooManyRecords = consent.Errorf(consent.Invalid, "consents: at most %d records", MaxRecords)

// Limits of a certificate's content.
const (
	maxTextLength = 64 << 10
	// maxPageURL bounds a page URL (a session's, a certificate's origin).
	// Landing pages carry long tracking queries; 8 KiB is the longest
	// request line common web servers (nginx, Apache) accept, so no page a
	// consumer could load is refused.
	maxPageURL   = 8 << 10
	maxTypes     = 32
	maxUserAgent = 1024
	maxColor     = 64
)

// checkURL refuses a URL or origin over maxPageURL bytes or that is not text.
func checkURL(field, u string) error {
	if len(u) > maxPageURL {
		return consent.Errorf(consent.Invalid, "%s must be at most %d bytes", field, maxPageURL)
	}
	return consent.CheckText(field, u)
}

// maxHiddenFragments bounds the hidden fragments of one visibility.
const maxHiddenFragments = 100

// visibility returns a copy of v checked: Invalid for facts no browser
// measures (D47), with field naming it; its hidden text an empty list when
// there is none; a number that is negative zero (which JSON may write,
// "-0", and which passes the bounds) +0, the one zero every store keeps
// (PostgreSQL's jsonb has no negative zero) and the certificate signs.
func visibility(field string, v *consent.Visibility) (*consent.Visibility, error) {
	switch {
	case v == nil:
		return nil, nil
	case !(v.FontSizePx >= 0 && v.FontSizePx <= 10_000):
		return nil, consent.Errorf(consent.Invalid, "%s.font_size_px must be between 0 and 10000", field)
	case !(v.ContrastRatio >= 1 && v.ContrastRatio <= 21):
		return nil, consent.Errorf(consent.Invalid, "%s.contrast_ratio must be between 1 and 21", field)
	case len(v.TextColor) > maxColor || len(v.BackgroundColor) > maxColor:
		return nil, consent.Errorf(consent.Invalid, "%s colours must be at most %d bytes", field, maxColor)
	case len(v.HiddenText) > maxHiddenFragments:
		return nil, consent.Errorf(consent.Invalid, "%s.hidden_text: at most %d fragments", field, maxHiddenFragments)
	case v.Visible && len(v.HiddenText) > 0: // D47: one hidden fragment makes a consent not visible
		return nil, consent.Errorf(consent.Invalid, "%s.visible must be false when hidden_text lists hidden text", field)
	}
	if err := consent.CheckText(field+".text_color", v.TextColor); err != nil {
		return nil, err
	}
	if err := consent.CheckText(field+".background_color", v.BackgroundColor); err != nil {
		return nil, err
	}
	out := *v
	out.FontSizePx, out.ContrastRatio = positiveZero(v.FontSizePx), positiveZero(v.ContrastRatio)
	out.HiddenText = make([]string, 0, len(v.HiddenText))
	size := 0
	for _, h := range v.HiddenText {
		if size += len(h); size > maxTextLength {
			return nil, consent.Errorf(consent.Invalid, "%s.hidden_text must be at most %d bytes in all", field, maxTextLength)
		}
		if err := consent.CheckText(field+".hidden_text", h); err != nil {
			return nil, err
		}
		out.HiddenText = append(out.HiddenText, h)
	}
	return &out, nil
}

// positiveZero returns f, or +0 when f is negative zero.
func positiveZero(f float64) float64 {
	if f == 0 {
		return 0
	}
	return f
}

// IssueCertificate issues a certificate for a session of the company.
// NotFound when the property or session does not exist, is not the
// company's, or the session is not of that property.
func (s *Service) IssueCertificate(ctx context.Context, p CertificateParams) (*consent.Certificate, error) {
	return update(ctx, s, func(tx consent.Tx) (*consent.Certificate, error) { return s.IssueCertificateTx(ctx, tx, p) })
}

// IssueCertificateTx is IssueCertificate inside tx.
func (s *Service) IssueCertificateTx(ctx context.Context, tx consent.Tx, p CertificateParams) (*consent.Certificate, error) {
	if p.ID == "" {
		p.ID = consent.NewID("cert")
	}
	c, err := s.newCertificate(p)
	if err != nil {
		return nil, err
	}
	if err := consent.CheckProperty(ctx, tx, c.CompanyID, c.PropertyID); err != nil {
		return nil, err
	}
	// The consumer may consent again after opting out; the certificate
	// says so, signed (D41). The company is locked first, as an opt-out
	// locks it, so that an opt-out running meanwhile either sees this
	// certificate once it commits or is seen here (D18).
	if !c.EmailDigest.IsZero() || !c.MobileDigest.IsZero() {
		if err := tx.LockCompany(ctx, c.CompanyID); err != nil {
			return nil, err
		}
	}
	if c.RevokedBefore, err = tx.RevokedBefore(ctx, c.CompanyID, c.EmailDigest, c.MobileDigest); err != nil {
		return nil, err
	}
	if err := s.CheckSigningKey(ctx, tx); err != nil {
		return nil, err
	}
	s.sign(c)
	ses, err := tx.Session(ctx, c.SessionID)
	if consent.ErrorCode(err) == consent.NotFound || err == nil && (ses.CompanyID != c.CompanyID || ses.PropertyID != c.PropertyID) {
		return nil, consent.Errorf(consent.NotFound, "session not found")
	} else if err != nil {
		return nil, err
	}
	if ses.RetentionStatus == consent.RetentionExpired {
		// The purge emptied it (D26): a certificate would vouch for a
		// recording that is gone.
		return nil, consent.Errorf(consent.Conflict, "the session expired: its recording was purged")
	}
	if err := tx.CreateCertificate(ctx, c); err != nil {
		return nil, err
	}
	if err := s.attestIssued(ctx, tx, c); err != nil {
		return nil, err
	}
	if err := s.insightsIssued(ctx, tx, c); err != nil {
		return nil, err
	}
	err = s.EmitEvent(ctx, tx, c.CompanyID, consent.EventCertificateIssued, map[string]any{
		"certificate_id": c.ID, "company_id": c.CompanyID, "property_id": c.PropertyID,
		"session_id": c.SessionID, "created_timestamp": c.CreatedAt,
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// CheckCertificate refuses p, as IssueCertificate would, for what p
// holds itself — its ids, origin, email, mobile, consents (text, types,
// opt-in method, visibility), client address and user agent — without
// reading the store: the same checks, which IssueCertificate makes again.
// A caller with costly work to do before it issues (capture hashes the
// session's recording) refuses a request that could never be issued
// before doing it. An empty ID is one IssueCertificate would choose.
func (s *Service) CheckCertificate(p CertificateParams) error {
	if p.ID == "" {
		p.ID = consent.NewID("cert")
	}
	_, err := s.newCertificate(p)
	return err
}

func (s *Service) newCertificate(p CertificateParams) (*consent.Certificate, error) {
	if err := CheckNewID("id", p.ID); err != nil {
		return nil, err
	}
	if blob.ValidKey(p.ID+"/screenshot.png") != nil {
		// Its attestation's screenshots could never be kept (D49).
		return nil, consent.Errorf(consent.Invalid, "id: a certificate id may not start with \".\": it names the certificate's screenshot files")
	}
	for _, f := range [...]struct{ name, v string }{
		{"id", p.ID}, {"company_id", p.CompanyID}, {"property_id", p.PropertyID}, {"session_id", p.SessionID},
	} {
		if err := consent.CheckID(f.name, f.v); err != nil {
			return nil, err
		}
	}
	if err := checkURL("origin", p.Origin); err != nil {
		return nil, err
	}
	if len(p.UserAgent) > maxUserAgent {
		return nil, consent.Errorf(consent.Invalid, "user_agent must be at most %d bytes", maxUserAgent)
	}
	if err := consent.CheckClientIP("client_ip", p.ClientIP); err != nil {
		return nil, err
	}
	if err := consent.CheckText("user_agent", p.UserAgent); err != nil {
		return nil, err
	}
	vis, err := visibility("visibility", p.Visibility)
	if err != nil {
		return nil, err
	}
	created := s.Now()
	if !p.CreatedAt.IsZero() {
		created = consent.UTC(p.CreatedAt)
	}
	c := &consent.Certificate{
		ID: p.ID, CompanyID: p.CompanyID, PropertyID: p.PropertyID, SessionID: p.SessionID,
		Origin: p.Origin, RetentionStatus: consent.RetentionNone,
		CreatedAt: created, ExpiresAt: created.Add(s.cfg.DefaultRetention),
		EventsCombined: json.RawMessage("{}"),
		ClientIP:       p.ClientIP, UserAgent: p.UserAgent, RecordingSHA256: p.RecordingSHA256, Visibility: vis,
	}
	if strings.TrimSpace(p.Email) != "" {
		if c.EmailDigest, err = contact.EmailDigest(p.Email); err != nil {
			return nil, err
		}
	}
	if strings.TrimSpace(p.Mobile) != "" {
		if c.MobileDigest, err = contact.MobileDigest(p.Mobile); err != nil {
			return nil, err
		}
	}
	if ec := bytes.TrimSpace(p.EventsCombined); len(ec) > 0 && !bytes.Equal(ec, []byte("null")) {
		var obj map[string]json.RawMessage
		if !utf8.Valid(p.EventsCombined) {
			return nil, consent.Errorf(consent.Invalid, "events_combined must be valid UTF-8")
		}
		if err := json.Unmarshal(p.EventsCombined, &obj); err != nil || obj == nil {
			return nil, consent.Errorf(consent.Invalid, "events_combined must be a JSON object")
		}
		c.EventsCombined = append(json.RawMessage(nil), p.EventsCombined...)
	}
	if len(p.Records) > MaxRecords {
		return nil, ErrTooManyRecords
	}
	for i, r := range p.Records {
		// A consent the consumer could not see at all has no text: what was
		// hidden is its visibility's hidden_text (D47).
		allHidden := r.Visibility != nil && len(r.Visibility.HiddenText) > 0
		if strings.TrimSpace(r.Text) == "" && !allHidden || len(r.Text) > maxTextLength {
			return nil, consent.Errorf(consent.Invalid, "consents[%d].text must be non-empty (unless all of it was hidden) and at most %d bytes", i, maxTextLength)
		}
		if err := consent.CheckText(fmt.Sprintf("consents[%d].text", i), r.Text); err != nil {
			return nil, err
		}
		if len(r.Types) > maxTypes {
			return nil, consent.Errorf(consent.Invalid, "consents[%d].types: at most %d", i, maxTypes)
		}
		rec := consent.Record{Text: r.Text, Types: make([]string, 0, len(r.Types)), OptInAt: created}
		for _, ty := range r.Types {
			if strings.TrimSpace(ty) == "" || len(ty) > consent.MaxIDLength {
				return nil, consent.Errorf(consent.Invalid, "consents[%d].types must be non-empty labels of at most %d bytes", i, consent.MaxIDLength)
			}
			if err := consent.CheckText(fmt.Sprintf("consents[%d].types", i), ty); err != nil {
				return nil, err
			}
			rec.Types = append(rec.Types, ty)
		}
		if !r.OptInAt.IsZero() {
			rec.OptInAt = consent.UTC(r.OptInAt)
		}
		if r.OptInMethod != "" && !slices.Contains(consent.OptInMethods, r.OptInMethod) {
			return nil, consent.Errorf(consent.Invalid, "consents[%d].opt_in_method must be one of %s", i, strings.Join(consent.OptInMethods, ", "))
		}
		rec.OptInMethod = r.OptInMethod
		if r.NodeID < 0 || r.NodeID > math.MaxInt32 {
			return nil, consent.Errorf(consent.Invalid, "consents[%d].node_id must be a node id of the recording", i)
		}
		rec.NodeID = r.NodeID
		if rec.Visibility, err = visibility(fmt.Sprintf("consents[%d].visibility", i), r.Visibility); err != nil {
			return nil, err
		}
		c.Records = append(c.Records, rec)
	}
	return c, nil
}
