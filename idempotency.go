package consentkit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/flight"
)

// Idempotency keys (D40). A client that gives a key with a paid or
// state-changing call may send that call again — after a timeout, a
// dropped connection, a crash of either side — and be sure it happens
// once: the first completed answer is stored with the key, in the
// transaction of the call's effects, and every later call with the key is
// answered with it, byte for byte, without doing anything.
//
// The rules, after Stripe's:
//   - A key is scoped: to the company for authenticated calls, to the
//     client's address and the company for an opt-out. Two companies never
//     share one.
//   - A key reused with another request (another route or body) is refused
//     with consent.ErrKeyReused (HTTP 422) and nothing is done.
//   - While the first call with a key runs, a second waits for it — up to
//     Config.IdempotencyWait on this instance; across instances on
//     PostgreSQL the database makes it wait for the first's commit — and is
//     then answered from the stored answer. One still running after the
//     wait is refused with consent.ErrKeyInFlight (HTTP 409).
//   - Which answers are kept is the caller's choice (Idempotency.Answer):
//     the HTTP layer keeps successes, 409s and 422s, and not other 4xx
//     answers (a 402 or 404 may succeed when retried) nor 5xx ones (their
//     transaction rolled back).
//   - Keys are kept consent.IdempotencyTTL (24 h) from their first use; an expired
//     key is free again. retain.Purger's JobPruneKeys job deletes expired
//     ones.

// DefaultIdempotencyWait is Config.IdempotencyWait's default.
const DefaultIdempotencyWait = 10 * time.Second

// maxIdempotencyScope bounds a scope: an address and an identifier.
const maxIdempotencyScope = 2*consent.MaxIDLength + 64

// Idempotency is a key given with one call (D40), carried to the operation
// by the call's context (WithIdempotency). The operation reads it inside
// its transaction: a key used before makes it do nothing and return
// consent.ErrReplayed (or consent.ErrKeyReused for another request); a fresh key is
// claimed, and Answer's rendering of the outcome is stored with it.
type Idempotency struct {
	// Scope is whose key it is: "company:<id>" for an authenticated call,
	// "optout:<address> <company>" for an opt-out (IdempotencyScope),
	// "operator:<company>" for the operator's (OperatorIdempotencyScope).
	Scope string
	// Key is the client's key (CheckIdempotencyKey).
	Key string
	// Fingerprint identifies the request: the same key with another
	// fingerprint is ErrKeyReused.
	Fingerprint consent.Digest
	// Answer renders the operation's outcome — its result, or the
	// refusal it returns (result is then nil) — as the status and body
	// stored with the key; keep false stores nothing and frees the key. It
	// is called inside the transaction, more than once when the store
	// retries it; the answer of the attempt that commits is the one stored.
	Answer func(result any, err error) (status int, body []byte, keep bool)

	mu       sync.Mutex
	stored   *consent.IdempotencyRecord
	replayed bool
}

// IdempotencyScope returns the scope of a company's keys, or with a client
// address that of an opt-out from it.
func IdempotencyScope(companyID, clientAddr string) string {
	if clientAddr != "" {
		return "optout:" + clientAddr + " " + companyID
	}
	return "company:" + companyID
}

// OperatorIdempotencyScope returns the scope of the operator's keys for
// calls about a company (a top-up through the operator API): apart from
// the company's own keys, so that neither can replay the other's answers.
func OperatorIdempotencyScope(companyID string) string { return "operator:" + companyID }

// Stored returns the answer stored with the key, by this call or by the
// first; ok is false when none is (the call failed, or Answer kept
// nothing).
func (k *Idempotency) Stored() (status int, body []byte, ok bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stored == nil {
		return 0, nil, false
	}
	return k.stored.Status, k.stored.Body, true
}

// Replayed reports whether the stored answer is an earlier call's.
func (k *Idempotency) Replayed() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.replayed
}

func (k *Idempotency) set(r *consent.IdempotencyRecord, replayed bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.stored, k.replayed = r, replayed
}

func (k *Idempotency) check() error {
	if err := consent.CheckIdempotencyKey(k.Key); err != nil {
		return err
	}
	if k.Scope == "" || len(k.Scope) > maxIdempotencyScope || !consent.ValidText(k.Scope) {
		return consent.Errorf(consent.Invalid, "idempotency scope %q is not valid", k.Scope)
	}
	if k.Answer == nil {
		return fmt.Errorf("consentkit: Idempotency.Answer is nil")
	}
	return nil
}

type idempotencyKey struct{}

// WithIdempotency returns ctx carrying k to the paid or state-changing
// operation called with it.
func WithIdempotency(ctx context.Context, k *Idempotency) context.Context {
	return context.WithValue(ctx, idempotencyKey{}, k)
}

// IdempotencyFrom returns the key ctx carries; nil when none.
func IdempotencyFrom(ctx context.Context) *Idempotency {
	k, _ := ctx.Value(idempotencyKey{}).(*Idempotency)
	return k
}

// Paid runs fn as one paid or state-changing operation, in one transaction
// of s's store: the single path on which verification, retention and
// opt-out are charged, audited and made idempotent, so that none of them
// can forget one.
//
// With audit non-nil the outcome is recorded as UpdateAudited records it
// (a refusal of fn commits with its audit entry); with audit nil fn writes
// its own entries and any error of fn rolls everything back.
//
// When ctx carries an Idempotency (D40) the key is claimed first in the
// transaction: a key used before makes Paid do nothing and return
// consent.ErrReplayed (the first answer is in the Idempotency), or
// consent.ErrKeyReused when it came with another request; otherwise the
// Idempotency's Answer renders the outcome, stored with the key in the
// same transaction as fn's effects.
func Paid[T any](ctx context.Context, s *Service, audit *AuditParams, fn func(tx consent.Tx) (T, error)) (T, error) {
	var zero T
	out, err := s.paid(ctx, audit, func(tx consent.Tx) (any, error) { return fn(tx) })
	if out == nil {
		return zero, err
	}
	return out.(T), err
}

func (s *Service) paid(ctx context.Context, audit *AuditParams, fn func(tx consent.Tx) (any, error)) (any, error) {
	k := IdempotencyFrom(ctx)
	if k == nil {
		return s.once(ctx, audit, fn)
	}
	if err := k.check(); err != nil {
		return nil, err
	}
	// A second call with the key on this instance waits for the first
	// here, instead of queueing on the database behind it.
	leave, err := s.flights.Enter(ctx, k.Scope+"\x00"+k.Key, s.cfg.IdempotencyWait)
	if errors.Is(err, flight.ErrBusy) {
		return nil, consent.ErrKeyInFlight
	}
	if err != nil {
		return nil, err
	}
	defer leave()
	k.set(nil, false)
	var (
		out     any
		refusal error
	)
	err = s.store.Update(ctx, func(tx consent.Tx) error {
		out, refusal = nil, nil
		k.set(nil, false)
		now := s.Now()
		rec := &consent.IdempotencyRecord{Scope: k.Scope, Key: k.Key, Fingerprint: k.Fingerprint, CreatedAt: now, ExpiresAt: now.Add(consent.IdempotencyTTL)}
		prior, err := tx.ClaimIdempotencyKey(ctx, rec, now)
		if err != nil {
			return err
		}
		if prior != nil {
			switch {
			case prior.Fingerprint != k.Fingerprint:
				return consent.ErrKeyReused
			case prior.Status == 0:
				return consent.ErrKeyInFlight
			}
			k.set(prior, true)
			return nil
		}
		var err2 error
		out, refusal, err2 = s.step(ctx, tx, audit, fn)
		if err2 != nil {
			return err2
		}
		var result any
		if refusal == nil {
			result = out
		}
		status, body, keep := k.Answer(result, refusal)
		if !keep {
			return tx.ReleaseIdempotencyKey(ctx, k.Scope, k.Key)
		}
		rec.Status, rec.Body = status, body
		if err := tx.AnswerIdempotencyKey(ctx, k.Scope, k.Key, status, body); err != nil {
			return err
		}
		k.set(rec, false)
		return nil
	})
	switch {
	case err != nil:
		k.set(nil, false)
		return nil, err
	case k.Replayed():
		return nil, consent.ErrReplayed
	case refusal != nil:
		return nil, refusal
	}
	return out, nil
}

// once is paid without a key.
func (s *Service) once(ctx context.Context, audit *AuditParams, fn func(tx consent.Tx) (any, error)) (any, error) {
	var r struct { // one allocation for what the closure sets
		out     any
		refusal error
	}
	err := s.store.Update(ctx, func(tx consent.Tx) error {
		var err error
		r.out, r.refusal, err = s.step(ctx, tx, audit, fn)
		return err
	})
	if err != nil {
		return nil, err
	}
	if r.refusal != nil {
		return nil, r.refusal
	}
	return r.out, nil
}

// step runs fn and, with audit, records its outcome (UpdateAudited's
// rules): it returns fn's result, a refusal to commit and return, or an
// error that rolls the transaction back.
func (s *Service) step(ctx context.Context, tx consent.Tx, p *AuditParams, fn func(tx consent.Tx) (any, error)) (out any, refusal, err error) {
	out, err = fn(tx)
	if p == nil {
		return out, nil, err
	}
	if err != nil && !consent.Refused(err) {
		return nil, nil, err
	}
	p.Err = err
	if aerr := s.Audit(ctx, tx, *p); aerr != nil {
		if err != nil && consent.Refused(aerr) {
			// No log to record it in (an unknown company), or nothing
			// recordable (an id that is not text): roll back and refuse.
			return nil, nil, err
		}
		return nil, nil, aerr
	}
	if err != nil {
		return nil, err, nil
	}
	return out, nil, nil
}
