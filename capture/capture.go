// Package capture records consent in the browser (D32–D38): it starts a
// recording session for a property on a page of an allowed origin, appends
// the rrweb events the snippet sends in numbered chunks, and issues the
// session's reserved certificate when the consumer consents. httpadapter
// serves it to the snippet (POST /capture/sessions, …/events, …/consent).
//
//	c := capture.New(svc)
//	s, err := c.Start(ctx, capture.StartRequest{PropertyID: "acme-web", URL: page, Origin: origin})
//	caller := capture.Caller{UploadToken: s.UploadToken, Origin: origin}
//	n, err := c.Append(ctx, caller, capture.Chunk{SessionID: s.SessionID, Seq: 0, Events: events})
//	cert, err := c.Issue(ctx, caller, capture.Consent{SessionID: s.SessionID, URL: page, Records: records})
//
// Every call is checked the same way: the session's upload token (a random
// capability returned by Start, of which only the SHA-256 is stored) must
// match, else Unauthorized; the browser's Origin must be one of the
// property's allowed origins, else Forbidden (ErrOrigin). The rules are
// written here once, over consentkit.Service's StartSession, AppendEvents and
// IssueCertificate, so the Go API and the HTTP routes behave alike.
package capture

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/jsonscan"
	"github.com/consentkit/consentkit/internal/jsontext"
)

// UploadTokenPrefix starts every upload token, so that one is recognized
// when it turns up in a log.
const UploadTokenPrefix = "ckup_"

// ErrOrigin is the Forbidden error of a request whose Origin is not one of
// the property's allowed origins (D32). errors.Is(err, ErrOrigin) tells it
// from other refusals (the HTTP layer answers it without CORS headers);
// errors.Is(err, consent.ErrForbidden) holds for it too.
var ErrOrigin = consent.Errorf(consent.Forbidden, "this origin may not capture sessions for the property")

// ClosedError is the Conflict of a second consent call on a session: it
// names the certificate the first call issued (D35).
type ClosedError struct {
	CertificateID string
}

func (e *ClosedError) Error() string {
	return "consent was already given in this session"
}

// Unwrap gives the error its consent code.
func (e *ClosedError) Unwrap() error {
	return &consent.Error{Code: consent.Conflict, Message: e.Error()}
}

// Service is browser capture over a consentkit.Service.
type Service struct {
	svc *consentkit.Service
	// Budget, when set, is asked before a chunk of events (a chunk, or
	// the tail a consent carries) is stored, with the session's property
	// and the chunk's size in bytes: its error refuses the request as it
	// is (D52). A chunk sent again, already stored, is not asked about.
	// It is asked inside the store's transaction, so a transaction the
	// store runs again may ask twice. Set it before the Service serves.
	Budget func(propertyID string, bytes int) error
}

// spend asks Budget, when set, for a chunk of n bytes of the property.
func (c *Service) spend(propertyID string, n int) error {
	if c.Budget == nil {
		return nil
	}
	return c.Budget(propertyID, n)
}

// spendOnce returns spend for one call, whose function the store may run
// again (a group commit's retry): its bytes are spent once, by the first
// run that spends them.
func (c *Service) spendOnce() func(propertyID string, n int) error {
	spent := false
	return func(propertyID string, n int) error {
		if spent {
			return nil
		}
		if err := c.spend(propertyID, n); err != nil {
			return err
		}
		spent = true
		return nil
	}
}

// New returns the capture service of svc.
func New(svc *consentkit.Service) *Service { return &Service{svc: svc} }

// StartRequest starts a recording session.
type StartRequest struct {
	PropertyID string // required
	// URL is the page being recorded, required; its origin must be allowed.
	URL string
	// Origin is the browser's Origin header, required: one of the
	// property's allowed origins.
	Origin string
	// Admit, when set, is asked once the property is found and both
	// origins are allowed, before the session is created: its error
	// refuses the start as it is. The HTTP layer takes the property's
	// limit on starts here, so that a start refused for its origin spends
	// none of it. It is asked inside the store's transaction, once a call
	// even when the store runs the transaction again.
	Admit func(propertyID string) error
}

// Started is a new recording session.
type Started struct {
	SessionID     string
	CertificateID string // reserved; issued at consent
	// UploadToken authorizes the session's other calls. It is shown once:
	// only its digest is kept.
	UploadToken string
	CreatedAt   time.Time
}

// Start starts a recording session for the property (D33). NotFound when the
// property does not exist; ErrOrigin when origin or the page's origin is not
// one of its allowed origins.
func (c *Service) Start(ctx context.Context, req StartRequest) (*Started, error) {
	if err := consent.CheckID("property_id", req.PropertyID); err != nil {
		return nil, err
	}
	pageOrigin, ok := consent.OriginOf(req.URL)
	if !ok {
		return nil, consent.Errorf(consent.Invalid, "url must be the absolute http or https URL of the page")
	}
	token := newToken()
	out := &Started{UploadToken: token}
	admitted := false // the store may run the function again (a group commit's retry): Admit is asked once
	err := c.svc.Store().Update(ctx, func(tx consent.Tx) error {
		prop, err := tx.Property(ctx, req.PropertyID)
		if err != nil {
			return err
		}
		if !prop.AllowsOrigin(req.Origin) || !prop.AllowsOrigin(pageOrigin) {
			return ErrOrigin
		}
		if req.Admit != nil && !admitted {
			if err := req.Admit(prop.ID); err != nil {
				return err
			}
			admitted = true
		}
		ses, err := c.svc.StartSessionTx(ctx, tx, consentkit.SessionParams{
			CompanyID: prop.CompanyID, PropertyID: prop.ID, URL: req.URL,
			UploadDigest: consent.DigestOf(token), CertificateID: consent.NewID("cert"),
		})
		if err != nil {
			return err
		}
		out.SessionID, out.CertificateID, out.CreatedAt = ses.ID, ses.CertificateID, ses.CreatedAt
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func newToken() string {
	var b [32]byte
	rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
	return UploadTokenPrefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// Caller is who sends a capture call: the session's upload token and the
// browser's Origin.
type Caller struct {
	UploadToken string
	Origin      string
}

var errToken = consent.Errorf(consent.Unauthorized, "the session's upload token is missing or wrong")

// session loads the session and checks the caller's token and origin.
func (c *Service) session(ctx context.Context, tx consent.Tx, sessionID string, caller Caller) (*consent.Session, *consent.Property, error) {
	if !consent.ValidID(sessionID) {
		return nil, nil, errToken
	}
	ses, err := tx.Session(ctx, sessionID)
	if consent.ErrorCode(err) == consent.NotFound {
		return nil, nil, errToken // an unknown session is told nothing more
	} else if err != nil {
		return nil, nil, err
	}
	d := consent.DigestOf(caller.UploadToken)
	if ses.UploadDigest.IsZero() || subtle.ConstantTimeCompare(d[:], ses.UploadDigest[:]) != 1 {
		return nil, nil, errToken
	}
	prop, err := tx.Property(ctx, ses.PropertyID)
	if err != nil {
		return nil, nil, err
	}
	if !prop.AllowsOrigin(caller.Origin) {
		return nil, nil, ErrOrigin
	}
	return ses, prop, nil
}

// AllowsOrigin reports, for a CORS preflight, whether origin may call the
// session's capture routes. It needs no token (a preflight carries none),
// so it says no more than yes or no.
func (c *Service) AllowsOrigin(ctx context.Context, sessionID, origin string) (bool, error) {
	if !consent.ValidID(sessionID) {
		return false, nil
	}
	var ok bool
	err := c.svc.Store().View(ctx, func(tx consent.Tx) error {
		ses, err := tx.Session(ctx, sessionID)
		if consent.ErrorCode(err) == consent.NotFound {
			return nil
		} else if err != nil {
			return err
		}
		prop, err := tx.Property(ctx, ses.PropertyID)
		if err != nil {
			return err
		}
		ok = !ses.UploadDigest.IsZero() && prop.AllowsOrigin(origin)
		return nil
	})
	return ok, err
}

// PropertyAllowsOrigin reports, for a CORS preflight of a session start,
// whether the property lists origin; false for an unknown property.
func (c *Service) PropertyAllowsOrigin(ctx context.Context, propertyID, origin string) (bool, error) {
	if !consent.ValidID(propertyID) {
		return false, nil
	}
	var ok bool
	err := c.svc.Store().View(ctx, func(tx consent.Tx) error {
		p, err := tx.Property(ctx, propertyID)
		if consent.ErrorCode(err) == consent.NotFound {
			return nil
		}
		ok = err == nil && p.AllowsOrigin(origin)
		return err
	})
	return ok, err
}

// Chunk is one numbered chunk of a session's rrweb events (D34).
type Chunk struct {
	SessionID string
	Seq       int
	Events    json.RawMessage // a JSON array of rrweb events
	// checked says that ParseChunk checked Events, as CheckEvents does,
	// with verdict invalid: Append does not read them again.
	checked bool
	invalid error
}

// ParseChunk reads a chunk's JSON body, {"seq":…,"events":[…]}, in its
// plain form, in one pass that checks the events as CheckEvents does: the
// body valid UTF-8 whose \u escapes pair every surrogate, two members
// named seq and events exactly so, each once, and no other, seq an
// integer. The events are kept as they are in body, not copied, and Append
// does not check them again. ok is false for a body in any other form: the
// caller decodes it as it would any JSON (and Append checks its events),
// so that the two paths give the same answers, every refusal included.
func ParseChunk(body []byte) (ch Chunk, ok bool) {
	if !jsontext.Valid(body) {
		return Chunk{}, false
	}
	var (
		seq    *int
		events []byte
		check  eventsCheck
	)
	err := jsonscan.ObjectValues(body, func(name []byte, v *jsonscan.Value) error {
		switch {
		case string(name) == "seq" && seq == nil:
			raw, err := v.Raw()
			if err != nil {
				return err
			}
			// seq must be an integer (null, a fraction, a string…: the
			// general path says what is wrong).
			i, err := strconv.Atoi(string(raw))
			if err != nil {
				return errNotPlain
			}
			seq = &i
		case string(name) == "events" && events == nil:
			raw, err := v.Objects(check.member, check.end)
			if err != nil {
				return err
			}
			events = raw
		default: // another member, or one named twice
			return errNotPlain
		}
		return nil
	})
	if err != nil || seq == nil || events == nil {
		return Chunk{}, false
	}
	return Chunk{Seq: *seq, Events: events, checked: true, invalid: check.verdict()}, true
}

// errNotPlain stops ParseChunk's reading of a body not in the plain form.
var errNotPlain = errors.New("not a chunk in its plain form")

// Append stores a chunk (D34): seq must be the session's next; a stored seq
// sent again with the same bytes succeeds without storing anything, with
// other bytes it is a Conflict, as is a gap (naming the expected seq) and a
// chunk for a session whose consent was given. Once the recording has
// moved to the blob store (D52), every chunk is refused, a stored seq sent
// again too: closed at consent, or ErrRecordingFinished. Its object is not
// read, so that a chunk costs no more than its own bytes and nothing is
// decompressed while the write transaction holds the database (a resend
// of a late seq would otherwise decompress the recording up to it). Events
// that are not rrweb event objects are Invalid; over the chunk or
// recording limit, TooLarge. It returns the number of chunks the session
// holds.
func (c *Service) Append(ctx context.Context, caller Caller, ch Chunk) (int, error) {
	if ch.Seq < 0 {
		return 0, consent.Errorf(consent.Invalid, "seq must be a non-negative integer")
	}
	if !ch.checked {
		ch.invalid = CheckEvents(ch.Events)
	}
	if ch.invalid != nil {
		return 0, ch.invalid
	}
	var n int
	spend := c.spendOnce()
	// The session's row is the one row this locks (consent.Alone).
	err := c.svc.Store().Update(consent.Alone(ctx), func(tx consent.Tx) error {
		ses, _, err := c.session(ctx, tx, ch.SessionID, caller)
		if err != nil {
			return err
		}
		n = ses.EventChunks
		switch {
		case ch.Seq < ses.EventChunks && !ses.Recording.Moved():
			// The chunk is in the database, and stays there until this
			// transaction ends: the move's last step writes the session's
			// row, which this transaction holds (Store.Update).
			stored, err := tx.EventChunk(ctx, ses.ID, ch.Seq)
			if err != nil {
				return err
			}
			if !bytes.Equal(stored, ch.Events) {
				if ses.Closed() { // the consent's tail took the seq (D35)
					return consentkit.Appendable(ses)
				}
				return consent.Errorf(consent.Conflict, "seq %d was stored with other events", ch.Seq)
			}
			return nil // sent again: already stored
		}
		if err := consentkit.Appendable(ses); err != nil {
			return err
		}
		if ch.Seq > ses.EventChunks {
			return consent.Errorf(consent.Conflict, "seq %d is ahead: expected seq %d", ch.Seq, ses.EventChunks)
		}
		// A chunk refused for its size spends none of the budget: it
		// stores nothing.
		if err := c.svc.CheckChunkSize(ch.Events); err != nil {
			return err
		}
		if err := c.svc.CheckRecordingSize(ses, len(ch.Events)); err != nil {
			return err
		}
		if err := spend(ses.PropertyID, len(ch.Events)); err != nil {
			return err
		}
		ses, err = c.svc.AppendCheckedEventsToTx(ctx, tx, ses, ch.Events) // CheckEvents, above
		if err != nil {
			return err
		}
		n = ses.EventChunks
		return nil
	})
	return n, err
}

// maxEventsPerChunk bounds the events of one chunk, whatever their size.
const maxEventsPerChunk = 100_000

// CheckEvents accepts a non-empty JSON array of rrweb event objects: each
// has an integer "type" and a "timestamp" that is a non-negative number of
// milliseconds (D34). Both are JSON numbers: a string such as "2" is not
// one, and the replayer would not play the event. The names are matched
// exactly, as the replayer reads them: "Type" is not "type" (encoding/json
// would match a struct field's name in any case); a name repeated counts
// as its last value, as JSON.parse keeps it. The events are read in one
// pass (jsonscan), and none is decoded: a chunk costs CPU by its bytes,
// whatever its events hold.
func CheckEvents(events json.RawMessage) error {
	var c eventsCheck
	if err := jsonscan.Objects(events, c.member, c.end); err != nil {
		c.n = 0 // not an array of objects at all
	}
	return c.verdict()
}

// eventsCheck is CheckEvents's reading of the events, an event at a time,
// for jsonscan's Objects and Value.Objects.
type eventsCheck struct {
	typ, ts []byte
	n       int
	first   error // the first event at fault, reported once the whole is known valid
}

func (c *eventsCheck) member(_ int, name, value []byte) error {
	switch {
	case jsonscan.NameIs(name, "type"):
		c.typ = value
	case jsonscan.NameIs(name, "timestamp"):
		c.ts = value
	}
	return nil
}

func (c *eventsCheck) end(i int) error {
	c.n++
	if c.first == nil {
		c.first = checkEvent(i, c.typ, c.ts)
	}
	c.typ, c.ts = nil, nil
	return nil
}

// verdict is CheckEvents's answer once every event was read (n zero when
// the events were not an array of objects).
func (c *eventsCheck) verdict() error {
	switch {
	case c.n == 0:
		return consent.Errorf(consent.Invalid, "events must be a non-empty JSON array of rrweb event objects")
	case c.n > maxEventsPerChunk:
		return consent.Errorf(consent.Invalid, "events: at most %d in a chunk", maxEventsPerChunk)
	}
	return c.first
}

// checkEvent checks the raw values of event i's type and timestamp (nil
// when it has none).
func checkEvent(i int, typ, ts []byte) error {
	if !isInteger(typ) {
		return consent.Errorf(consent.Invalid, "events[%d].type must be an integer", i)
	}
	if !isMillis(ts) {
		return consent.Errorf(consent.Invalid, "events[%d].timestamp must be a number of milliseconds", i)
	}
	return nil
}

// isInteger reports whether the JSON value raw is an integer that fits in
// an int64. The values are JSON already: up to 18 digits and nothing else
// is such an integer (below 10^18) without parsing it.
func isInteger(raw []byte) bool {
	if len(raw) <= 18 && allDigits(raw) {
		return true
	}
	if !isNumber(raw) || bytes.ContainsAny(raw, ".eE") {
		return false
	}
	_, err := strconv.ParseInt(string(raw), 10, 64)
	return err == nil
}

// isMillis reports whether the JSON value raw is a number of milliseconds
// from 0 to 2^53. Up to 15 digits and nothing else is one (below 10^15)
// without parsing it: an event's timestamp nearly always.
func isMillis(raw []byte) bool {
	if len(raw) <= 15 && allDigits(raw) {
		return true
	}
	ms, err := strconv.ParseFloat(string(raw), 64)
	return isNumber(raw) && err == nil && ms >= 0 && ms <= 1<<53
}

// allDigits reports whether raw is one or more ASCII digits.
func allDigits(raw []byte) bool {
	for _, c := range raw {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(raw) > 0
}

// isNumber reports whether the JSON value raw is a number: a JSON number
// starts with a minus sign or a digit; anything else (a string, a null)
// is not.
func isNumber(raw []byte) bool {
	return len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9')
}

// Consent is the consumer's consent, sent when the form is submitted (D35).
type Consent struct {
	SessionID string // required
	// Records are the consents, at least one required: their text, types,
	// and what the snippet measured of each (Visibility, OptInMethod); the
	// opt-in time is the server's.
	Records []consent.Record
	Email   string // optional; only its digest is kept (D17)
	Mobile  string // optional; likewise
	// URL is the page where consent was given, required; its origin must
	// be allowed.
	URL string
	// Visibility is optional: the first consent's, as snippets sent it
	// before each consent had its own (D37).
	Visibility *consent.Visibility
	ClientIP   string
	UserAgent  string
	// Tail, when not nil, is the session's last chunk of events, stored
	// with the consent in one step (Tail.SessionID is ignored). The snippet
	// sends the events not yet sent this way when the form is submitted, so
	// that one request that outlives the page carries both. It is dropped,
	// unread, when the session's recording is finished (D52): the
	// certificate then covers the recording as stored.
	Tail *Chunk
}

// maxAttempts bounds how often Issue rereads a recording that was moved
// (D52) while it was being hashed.
const maxAttempts = 3

// Issue issues the session's reserved certificate (D35) and closes the
// session. The certificate keeps the SHA-256 of the recording as stored at
// this moment (consent.JoinChunks of its chunks, the tail included),
// hashed as it is read, never held whole. For a session whose recording
// was finished for idleness (moved, or being moved, to the blob store:
// D52) the tail is dropped and the certificate is issued over the
// recording as stored, its digest that of the moved object: Issue answers
// as for any other consent. A *ClosedError (Conflict) when consent was
// given already; a Conflict when the session recorded no events.
//
// Whatever refuses a consent and leaves its session open is found before
// the recording is read (D52: a request costs by its own bytes): what the
// certificate would hold, and a tail that is ahead, holds other events
// than a chunk stored, or adds more than a chunk. Once the recording is
// hashed, a tail is stored if it still can be, or dropped: chunks stored
// meanwhile that it no longer follows, the recording's size, or the
// property's byte budget (Budget) spent. The certificate then covers the
// recording as stored, as for a finished one.
func (c *Service) Issue(ctx context.Context, caller Caller, req Consent) (*consent.Certificate, error) {
	pageOrigin, ok := consent.OriginOf(req.URL)
	if !ok {
		return nil, consent.Errorf(consent.Invalid, "url must be the absolute http or https URL of the page")
	}
	if len(req.Records) == 0 {
		return nil, consent.Errorf(consent.Invalid, "consents must hold at least one consent text")
	}
	if req.Tail != nil {
		if req.Tail.Seq < 0 {
			return nil, consent.Errorf(consent.Invalid, "seq must be a non-negative integer")
		}
		if err := CheckEvents(req.Tail.Events); err != nil {
			return nil, err
		}
	}
	spend := c.spendOnce()
	for attempt := 0; ; attempt++ {
		// The recording is hashed outside the write transaction, a chunk at
		// a time; the write adds the chunks stored meanwhile.
		stored, n, err := c.recording(ctx, caller, req, pageOrigin)
		if err != nil {
			return nil, err
		}
		var cert *consent.Certificate
		err = c.svc.Store().Update(ctx, func(tx consent.Tx) error {
			ses, prop, err := c.session(ctx, tx, req.SessionID, caller)
			switch {
			case err != nil:
				return err
			case ses.Closed():
				return &ClosedError{CertificateID: ses.CertificateID}
			case ses.EventChunks != n && ses.Finished():
				// Moved meanwhile: its chunks are read from the object again,
				// once, since a finished recording takes no more.
				return errMoved
			case !prop.AllowsOrigin(pageOrigin):
				return ErrOrigin
			}
			recording := stored.Clone() // the store may run this again
			// Chunks stored while the recording was hashed, each paid for by
			// the request that sent it; this transaction holds the session.
			for seq := n; seq < ses.EventChunks; seq++ {
				chunk, err := tx.EventChunk(ctx, ses.ID, seq)
				if err != nil {
					return err
				}
				recording.Add(chunk)
			}
			if err := c.storeTail(ctx, tx, ses, req.Tail, recording, spend); err != nil {
				return err
			}
			if ses.EventChunks == 0 {
				return consent.Errorf(consent.Conflict, "the session recorded no events: the recording must come before consent")
			}
			now := c.svc.Now()
			p := certificate(ses, req, now)
			p.RecordingSHA256 = recording.Sum()
			cert, err = c.svc.IssueCertificateTx(ctx, tx, p)
			if err != nil {
				return err
			}
			ses.ClosedAt = now
			return tx.UpdateSession(ctx, ses)
		})
		if errors.Is(err, errMoved) && attempt+1 < maxAttempts {
			continue
		}
		if errors.Is(err, errMoved) {
			return nil, consent.Errorf(consent.Conflict, "the recording kept changing; send consent again")
		}
		return cert, err
	}
}

// tailEvents returns the events that t, a consent's tail, adds to ses's
// recording, read through tx (D34, D35): all of them at the next seq;
// nothing when t is a stored chunk sent again; for the last chunk stored,
// the events after it when t begins with it, byte for byte (the chunk in
// flight at submit and the rest), as a JSON array of their own. Nothing
// for a finished recording (D52), which takes no tail. A Conflict when t
// is ahead or holds other events than the chunk stored at its seq, and
// TooLarge when it adds more than a chunk may hold.
func (c *Service) tailEvents(ctx context.Context, tx consent.Tx, ses *consent.Session, t *Chunk) ([]byte, error) {
	n := ses.EventChunks
	if t == nil || ses.Finished() {
		return nil, nil
	}
	rest := t.Events
	switch {
	case t.Seq > n:
		return nil, consent.Errorf(consent.Conflict, "seq %d is ahead: expected seq %d", t.Seq, n)
	case t.Seq < n:
		was, err := tx.EventChunk(ctx, ses.ID, t.Seq)
		if err != nil {
			return nil, err
		}
		var ok bool
		rest, ok = extension(was, t.Events)
		if !ok || len(rest) > 0 && t.Seq != n-1 {
			return nil, consent.Errorf(consent.Conflict, "seq %d was stored with other events", t.Seq)
		}
	}
	if err := c.svc.CheckChunkSize(rest); err != nil {
		return nil, err
	}
	return rest, nil
}

// storeTail stores what t adds to ses's recording (tailEvents) as its next
// chunk, adding it to recording, or drops it: when it no longer follows
// the chunks stored (recording's read refused it otherwise, before the
// hash), would take the recording past its size, or the property's byte
// budget is spent. A consent is issued over the recording as stored
// rather than refused after its hash, which a refused caller could ask
// for again and again. The budget is asked through spend (spendOnce).
func (c *Service) storeTail(ctx context.Context, tx consent.Tx, ses *consent.Session, t *Chunk, recording *consent.RecordingHash, spend func(string, int) error) error {
	events, err := c.tailEvents(ctx, tx, ses, t)
	switch code := consent.ErrorCode(err); {
	case code == consent.Conflict || code == consent.TooLarge:
		return nil
	case err != nil || len(events) == 0:
		return err
	case c.svc.CheckRecordingSize(ses, len(events)) != nil:
		return nil
	case spend(ses.PropertyID, len(events)) != nil:
		return nil
	}
	if _, err := c.svc.AppendCheckedEventsToTx(ctx, tx, ses, events); err != nil { // CheckEvents, in Issue
		return err
	}
	recording.Add(events)
	return nil
}

var errMoved = errors.New("capture: the recording was moved while it was hashed")

// certificate is what consent req issues for ses at now, all but the
// recording's digest.
func certificate(ses *consent.Session, req Consent, now time.Time) consentkit.CertificateParams {
	records := make([]consent.Record, len(req.Records))
	for i, r := range req.Records {
		records[i] = consent.Record{Text: r.Text, Types: r.Types, OptInAt: now, Visibility: r.Visibility, OptInMethod: r.OptInMethod, NodeID: r.NodeID}
	}
	return consentkit.CertificateParams{
		ID: ses.CertificateID, CompanyID: ses.CompanyID, PropertyID: ses.PropertyID, SessionID: ses.ID,
		Origin: req.URL, Email: req.Email, Mobile: req.Mobile, Records: records, CreatedAt: now,
		ClientIP: req.ClientIP, UserAgent: req.UserAgent, Visibility: req.Visibility,
	}
}

// recording checks the caller and hashes the session's recording as
// stored, a chunk at a time, returning the hash and the number of chunks;
// nothing for a closed session, which the write answers. A consent that
// would be refused for what it holds — a page of another origin, what
// IssueCertificate checks of the certificate itself (email, mobile,
// consents, user agent…), a tail tailEvents refuses — is refused before
// the recording is read: a caller holding the session's token pays a few
// hundred bytes for such a request, and the recording may be 64 MiB,
// decompressed from its object once moved (D52). The write checks them
// all again.
func (c *Service) recording(ctx context.Context, caller Caller, req Consent, pageOrigin string) (*consent.RecordingHash, int, error) {
	var (
		h *consent.RecordingHash
		n int
	)
	err := c.svc.Store().View(ctx, func(tx consent.Tx) error {
		h, n = consent.NewRecordingHash(), 0
		ses, prop, err := c.session(ctx, tx, req.SessionID, caller)
		if err != nil || ses.Closed() {
			return err
		}
		if !prop.AllowsOrigin(pageOrigin) {
			return ErrOrigin
		}
		if err := c.svc.CheckCertificate(certificate(ses, req, c.svc.Now())); err != nil {
			return err
		}
		if _, err := c.tailEvents(ctx, tx, ses, req.Tail); err != nil {
			return err
		}
		return tx.EachEventChunk(ctx, req.SessionID, func(chunk []byte) error {
			h.Add(chunk)
			n++
			return nil
		})
	})
	return h, n, err
}

// extension reports whether tail, a consent's chunk of a seq stored as
// stored, is that chunk resent (rest empty) or that chunk followed by
// more events, returned as a JSON array of their own: the snippet sends a
// chunk still in flight at submit, and the events after it, as one chunk
// (D34). Both are JSON arrays the snippet wrote, compared byte for byte.
func extension(stored, tail []byte) (rest []byte, ok bool) {
	if bytes.Equal(stored, tail) {
		return nil, true
	}
	n := len(stored) - 1 // stored without its closing bracket
	if n < 1 || stored[n] != ']' || len(tail) <= n+1 || tail[n] != ',' || !bytes.Equal(tail[:n], stored[:n]) {
		return nil, false
	}
	return append([]byte{'['}, tail[n+1:]...), true
}
