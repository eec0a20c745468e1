package consent

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"
)

// AuditEntry is one record of the audit log (D42): who did what, to what,
// when, with what outcome, under which request. Each company has a chain of
// its own: Seq counts its entries from 1 without a gap, and each entry holds
// the Hash of the one before it (PrevHash; zero for the first), so that an
// edited, inserted or deleted entry breaks the chain (audit.VerifyChain).
type AuditEntry struct {
	CompanyID string
	Seq       int64     // assigned by the store: the company's last Seq plus one
	At        time.Time // UTC, to the microsecond
	// Actor is who acted: a token id, "property:<id>" for company-and-
	// property credentials (D8), ActorOperator, ActorConsumer or ActorSystem.
	Actor string
	// Action is what was done, a short dotted name such as "verify.match"
	// (the Audit… constants).
	Action string
	// Target is what it was done to: a certificate, session, token,
	// property, revocation or ledger entry id; "" when nothing in particular.
	Target string
	// Outcome is "ok" (AuditOK) or the code of the error that refused it,
	// such as "not_found" or "payment".
	Outcome   string
	RequestID string // the request it was part of; "" when none
	// Detail is a short JSON object of facts about the action (never an
	// email, a mobile number or a secret); "" when none.
	Detail   string
	PrevHash Digest // Hash of the entry Seq-1; zero for Seq 1
	Hash     Digest // AuditHash of this entry
}

// AuditHead is the end of a company's chain, kept by the store apart from
// the entries: the Seq and Hash of its last entry (zero when it has none).
// A deleted last entry is found only by comparing the chain with it.
type AuditHead struct {
	CompanyID string
	Seq       int64
	Hash      Digest
}

// Outcome of an entry that was not refused.
const AuditOK = "ok"

// Actors that are not tokens.
const (
	ActorOperator = "operator" // the host application through the Go API
	ActorConsumer = "consumer" // a consumer's opt-out
	ActorSystem   = "system"   // a job of the library
)

// Actions recorded in the audit log.
const (
	AuditVerifyMatch           = "verify.match"
	AuditVerifyPartialMatch    = "verify.partial_match"
	AuditVerifyCertificateInfo = "verify.certificate_info"
	AuditRetainSingle          = "retain.single"      // Retain API, one session
	AuditRetainBatch           = "retain.batch"       // Retain API batch: one entry per session
	AuditRetainSession         = "retain.session"     // /verify/session
	AuditRetainCertificate     = "retain.certificate" // /verify/certificate
	AuditOptOut                = "optout.revoke"
	AuditTokenIssue            = "token.issue"
	AuditTokenRevoke           = "token.revoke"
	AuditWalletCredit          = "wallet.credit"
	AuditCompanyCreate         = "company.create"
	AuditCompanyUpdate         = "company.update"
	AuditPropertyCreate        = "property.create"
	AuditPropertyUpdate        = "property.update"
	AuditWebhookCreate         = "webhook.create"
	AuditWebhookDelete         = "webhook.delete"
	AuditWebhookDisable        = "webhook.disable"
	AuditWebhookEnable         = "webhook.enable"
)

// Limits of an audit entry's text fields, in bytes.
const (
	MaxAuditField  = 256      // Actor, Action, Target, Outcome, RequestID
	MaxAuditDetail = 16 << 10 // Detail
	// MaxAuditPage is the most entries one AuditEntries call returns.
	MaxAuditPage = 1000
)

// auditDomain starts every hashed encoding, so that an audit hash can never
// be mistaken for the hash of anything else.
const auditDomain = "consentkit.audit.v1"

// AuditEncoding returns the canonical encoding of e that AuditHash hashes:
// every field but Hash, PrevHash included, in a fixed order, each
// length-prefixed or of fixed size, so that no two different entries encode
// alike. See the package documentation for the layout.
func AuditEncoding(e *AuditEntry) []byte {
	return appendAuditEncoding(make([]byte, 0, 8*4+len(auditDomain)+len(e.CompanyID)+8+8+len(e.Actor)+len(e.Action)+
		len(e.Target)+len(e.Outcome)+len(e.RequestID)+len(e.Detail)+len(e.PrevHash)), e)
}

// appendAuditEncoding appends AuditEncoding(e) to b.
func appendAuditEncoding(b []byte, e *AuditEntry) []byte {
	str := func(s string) {
		b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
		b = append(b, s...)
	}
	str(auditDomain)
	str(e.CompanyID)
	b = binary.BigEndian.AppendUint64(b, uint64(e.Seq))
	b = binary.BigEndian.AppendUint64(b, uint64(e.At.UnixMicro()))
	str(e.Actor)
	str(e.Action)
	str(e.Target)
	str(e.Outcome)
	str(e.RequestID)
	str(e.Detail)
	b = append(b, e.PrevHash[:]...)
	return b
}

// AuditHash returns the SHA-256 of AuditEncoding(e): the Hash a store gives
// e, and the PrevHash of the entry after it.
func AuditHash(e *AuditEntry) Digest {
	var buf [512]byte // most entries' encoding: no allocation
	return sha256.Sum256(appendAuditEncoding(buf[:0], e))
}

// check checks e's text fields and their lengths, and its time
// (CheckTime).
func (e *AuditEntry) check() error {
	if err := checkTexts("company_id", e.CompanyID, "actor", e.Actor, "action", e.Action, "target", e.Target,
		"outcome", e.Outcome, "request_id", e.RequestID, "detail", e.Detail); err != nil {
		return err
	}
	for _, f := range [...]struct{ name, v string }{
		{"company_id", e.CompanyID}, {"actor", e.Actor}, {"action", e.Action}, {"target", e.Target},
		{"outcome", e.Outcome}, {"request_id", e.RequestID},
	} {
		if len(f.v) > MaxAuditField {
			return Errorf(Invalid, "audit %s must be at most %d bytes", f.name, MaxAuditField)
		}
	}
	if len(e.Detail) > MaxAuditDetail {
		return Errorf(Invalid, "audit detail must be at most %d bytes", MaxAuditDetail)
	}
	if e.CompanyID == "" || e.Action == "" || e.Actor == "" || e.Outcome == "" {
		return Errorf(Invalid, "an audit entry needs a company_id, actor, action and outcome")
	}
	return CheckTime("at", e.At)
}

// AuditQuery selects entries of one company's audit log, one page at a time.
type AuditQuery struct {
	CompanyID string // required
	// ActionPrefix keeps entries whose Action starts with it, such as
	// "verify." or "retain.single"; "" keeps all.
	ActionPrefix string
	Target       string    // keeps entries of this Target; "" keeps all
	Actor        string    // keeps entries of this Actor; "" keeps all
	Since        time.Time // keeps entries at or after it; zero: no bound
	Until        time.Time // keeps entries before it; zero: no bound
	// AfterSeq and BeforeSeq are the keyset: entries with Seq > AfterSeq
	// and, when BeforeSeq > 0, Seq < BeforeSeq.
	AfterSeq, BeforeSeq int64
	// Newest returns the newest entries first (page on with BeforeSeq set
	// to the last Seq returned); otherwise the oldest first (page on with
	// AfterSeq).
	Newest bool
	// Limit is the most entries returned: 1 to MaxAuditPage.
	Limit int
}

// Check returns Invalid when q is not a query a store can run: no company,
// a limit outside 1 to MaxAuditPage, a negative Seq, text that is not
// ValidText, or a time outside the years 1 to 9999 (CheckTime).
func (q *AuditQuery) Check() error {
	if q.CompanyID == "" {
		return Errorf(Invalid, "company_id is required")
	}
	if q.Limit < 1 || q.Limit > MaxAuditPage {
		return Errorf(Invalid, "limit must be 1 to %d", MaxAuditPage)
	}
	if q.AfterSeq < 0 || q.BeforeSeq < 0 {
		return Errorf(Invalid, "after and before must not be negative")
	}
	if err := checkTexts("company_id", q.CompanyID, "action", q.ActionPrefix, "target", q.Target, "actor", q.Actor); err != nil {
		return err
	}
	return checkTimes([]string{"since", "until"}, q.Since, q.Until)
}

// Match reports whether e passes q's filters (not its keyset or limit).
// Stores that filter in memory use it; the SQL stores filter alike.
func (q *AuditQuery) Match(e *AuditEntry) bool {
	return e.CompanyID == q.CompanyID &&
		len(e.Action) >= len(q.ActionPrefix) && e.Action[:len(q.ActionPrefix)] == q.ActionPrefix &&
		(q.Target == "" || e.Target == q.Target) &&
		(q.Actor == "" || e.Actor == q.Actor) &&
		(q.Since.IsZero() || !e.At.Before(UTC(q.Since))) &&
		(q.Until.IsZero() || e.At.Before(UTC(q.Until))) &&
		e.Seq > q.AfterSeq && (q.BeforeSeq == 0 || e.Seq < q.BeforeSeq)
}

// Request ids and actors travel in the context from the layer that knows
// them (httpadapter) to the transaction that records them.
type ctxKey int

const (
	requestIDKey ctxKey = iota
	actorKey
)

// WithRequestID returns ctx carrying the request id, which audit entries
// written under it record. An id that is not an identifier (ValidID) is
// dropped.
func WithRequestID(ctx context.Context, id string) context.Context {
	if !ValidID(id) {
		return ctx
	}
	return context.WithValue(ctx, requestIDKey, id)
}

// RequestIDFrom returns the request id of ctx; "" when none.
func RequestIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey).(string)
	return id
}

// WithActor returns ctx carrying who acts, recorded by the audit entries
// written under it: a token id, or "property:<id>" (D8). An actor that is
// not ValidText or is longer than MaxAuditField is dropped.
func WithActor(ctx context.Context, actor string) context.Context {
	if actor == "" || len(actor) > MaxAuditField || !ValidText(actor) {
		return ctx
	}
	return context.WithValue(ctx, actorKey, actor)
}

// ActorFrom returns the actor of ctx; "" when none.
func ActorFrom(ctx context.Context) string {
	a, _ := ctx.Value(actorKey).(string)
	return a
}

// AuditParams describes an entry for Service.Audit.
type AuditParams struct {
	CompanyID string
	Action    string
	Target    string
	// Err is the outcome: nil is AuditOK, else its ErrorCode.
	Err error
	// Detail is marshalled to JSON (nil: none). Keep it short, and never
	// put an email, a mobile number or a secret in it.
	Detail any
	// Actor, when set, is recorded instead of the context's (ActorFrom),
	// which is recorded instead of ActorOperator.
	Actor string
}

// Audit appends an entry to the audit log of p.CompanyID inside tx, at the
// service clock's time, with the request id of ctx (D42). NotFound when the
// company does not exist.
func (s *Service) Audit(ctx context.Context, tx Tx, p AuditParams) error {
	e, err := s.auditEntry(ctx, p)
	if err != nil {
		return err
	}
	return tx.AppendAudit(ctx, e)
}

// auditEntry is the entry Audit appends, stamped now.
func (s *Service) auditEntry(ctx context.Context, p AuditParams) (*AuditEntry, error) {
	e := &AuditEntry{
		CompanyID: p.CompanyID, At: s.Now(), Actor: p.Actor, Action: p.Action, Target: p.Target,
		Outcome: AuditOK, RequestID: RequestIDFrom(ctx),
	}
	if e.Actor == "" {
		e.Actor = ActorFrom(ctx)
	}
	if e.Actor == "" {
		e.Actor = ActorOperator
	}
	if p.Err != nil {
		e.Outcome = string(ErrorCode(p.Err))
	}
	if p.Detail != nil {
		b, err := json.Marshal(p.Detail)
		if err != nil {
			return nil, fmt.Errorf("audit detail: %w", err)
		}
		e.Detail = string(b)
	}
	return e, nil
}

// Refused reports whether err refuses a request for a reason of its own (a
// coded error other than Internal), as opposed to a failure of storage.
func Refused(err error) bool {
	code := ErrorCode(err)
	return code != "" && code != Internal
}

// UpdateAudited runs fn in one transaction and records its outcome in the
// audit log in that same transaction: p describes the entry, and fn may fill
// in p's Target and Detail as it learns them. When fn succeeds the entry
// commits with its work. When fn refuses (Refused) the refusal is recorded
// and committed — so fn must refuse before it writes anything — and returned;
// when the refusal cannot be recorded (the company does not exist, or p
// holds text a store refuses) it is returned and nothing is recorded. Any
// other failure rolls everything back.
//
// The entry is appended after fn's work, so the lock of the company's chain
// head is always the last lock a transaction takes (after its session,
// certificate and wallet rows) and is held only until the commit: no two
// flows take them in opposite orders.
func (s *Service) UpdateAudited(ctx context.Context, p *AuditParams, fn func(tx Tx) error) error {
	_, err := s.once(ctx, p, func(tx Tx) (any, error) { return nil, fn(tx) })
	return err
}

// DefaultAuditPage is the page size of AuditLog when the query sets none.
const DefaultAuditPage = 100

// AuditLog returns a page of a company's audit log: the entries q selects,
// oldest first unless q.Newest. A zero q.Limit means DefaultAuditPage.
func (s *Service) AuditLog(ctx context.Context, q AuditQuery) ([]*AuditEntry, error) {
	if q.Limit == 0 {
		q.Limit = DefaultAuditPage
	}
	if err := q.Check(); err != nil {
		return nil, err
	}
	var out []*AuditEntry
	err := s.store.View(ctx, func(tx Tx) error {
		var err error
		out, err = tx.AuditEntries(ctx, q)
		return err
	})
	return out, err
}
