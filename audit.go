package consentkit

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/consentkit/consentkit/consent"
)

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
	if !consent.ValidID(id) {
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
	if actor == "" || len(actor) > consent.MaxAuditField || !consent.ValidText(actor) {
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
	CompanyID string // required: an existing company
	Action    string // required
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
func (s *Service) Audit(ctx context.Context, tx consent.Tx, p AuditParams) error {
	e, err := s.auditEntry(ctx, p)
	if err != nil {
		return err
	}
	return tx.AppendAudit(ctx, e)
}

// auditEntry is the entry Audit appends, stamped now.
func (s *Service) auditEntry(ctx context.Context, p AuditParams) (*consent.AuditEntry, error) {
	e := &consent.AuditEntry{
		CompanyID: p.CompanyID, At: s.Now(), Actor: p.Actor, Action: p.Action, Target: p.Target,
		Outcome: consent.AuditOK, RequestID: RequestIDFrom(ctx),
	}
	if e.Actor == "" {
		e.Actor = ActorFrom(ctx)
	}
	if e.Actor == "" {
		e.Actor = consent.ActorOperator
	}
	if p.Err != nil {
		e.Outcome = string(consent.ErrorCode(p.Err))
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
func (s *Service) UpdateAudited(ctx context.Context, p *AuditParams, fn func(tx consent.Tx) error) error {
	_, err := s.once(ctx, p, func(tx consent.Tx) (any, error) { return nil, fn(tx) })
	return err
}

// DefaultAuditPage is the page size of AuditLog when the query sets none.
const DefaultAuditPage = 100

// AuditLog returns a page of a company's audit log: the entries q selects,
// oldest first unless q.Newest. A zero q.Limit means DefaultAuditPage.
func (s *Service) AuditLog(ctx context.Context, q consent.AuditQuery) ([]*consent.AuditEntry, error) {
	if q.Limit == 0 {
		q.Limit = DefaultAuditPage
	}
	if err := q.Check(); err != nil {
		return nil, err
	}
	var out []*consent.AuditEntry
	err := s.store.View(ctx, func(tx consent.Tx) error {
		var err error
		out, err = tx.AuditEntries(ctx, q)
		return err
	})
	return out, err
}
