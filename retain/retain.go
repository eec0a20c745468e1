package retain

import (
	"context"
	"fmt"
	"time"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/wallet"
)

// Config tunes a Service: prices, clock and long-term retention period.
type Config = consent.Policy

// Service runs the Retain API. It is safe for concurrent use.
type Service struct {
	store  consent.Store
	policy consent.Policy // with defaults
}

// New returns a Service over store.
func New(store consent.Store, cfg Config) *Service {
	return &Service{store: store, policy: cfg.WithDefaults()}
}

// StatusQueued is the status of a successful retention (§4.8).
const StatusQueued = "queued_for_conversion"

// MaxBatch is the most sessions one batch may name (§4.9, D23).
const MaxBatch = 100

// Result is the answer to a single retention.
type Result struct {
	SessionID string
	Status    string // StatusQueued
	Charged   wallet.Amount
	Balance   wallet.Amount // after the charge
}

// Retain retains one session of the caller's company and queues it for
// conversion (D22). Forbidden when caller is not companyID; NotFound,
// Conflict or a *wallet.InsufficientFundsError as the package comment says.
func (s *Service) Retain(ctx context.Context, caller, companyID, sessionID string) (*Result, error) {
	if err := checkCaller(caller, companyID); err != nil {
		return nil, err
	}
	if err := consent.CheckID("sessionId", sessionID); err != nil {
		return nil, err
	}
	var res *Result
	err := s.store.Update(ctx, func(tx consent.Tx) error {
		now := consent.UTC(s.policy.Now())
		bal, err := s.retain(ctx, tx, companyID, sessionID, s.policy.Prices.RetainSingle, wallet.RetainSingle, now)
		if err != nil {
			return err
		}
		res = &Result{SessionID: sessionID, Status: StatusQueued, Charged: s.policy.Prices.RetainSingle, Balance: bal}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

func checkCaller(caller, companyID string) error {
	if err := consent.CheckID("companyId", companyID); err != nil {
		return err
	}
	if caller != companyID {
		return consent.Errorf(consent.Forbidden, "the token is not one of company %s", companyID)
	}
	return nil
}

// retain is one retention inside tx: ownership, not yet retained, charge,
// status change and the conversion job.
func (s *Service) retain(ctx context.Context, tx consent.Tx, companyID, sessionID string,
	price wallet.Amount, kind wallet.EntryKind, now time.Time) (wallet.Amount, error) {
	ses, err := consent.SessionOf(ctx, tx, sessionID, companyID)
	if err != nil {
		return 0, err
	}
	if ses.RetentionStatus == consent.RetentionRetained {
		return 0, consent.Errorf(consent.Conflict, "session already retained")
	}
	bal, err := consent.Charge(ctx, tx, &wallet.Entry{
		CompanyID: companyID, Kind: kind, Amount: price, Reference: sessionID, CreatedAt: now,
	})
	if err != nil {
		return 0, err
	}
	// Past the charge every error is a storage failure: %v drops any code,
	// so a batch fails whole instead of counting a charged entry as failed.
	ses.RetentionStatus, ses.VideoStatus = consent.RetentionRetained, consent.VideoPending
	ses.ExpiresAt = consent.RetainUntil(now, s.policy.LongTermRetention)
	if err := tx.UpdateSession(ctx, ses); err != nil {
		return 0, fmt.Errorf("retain %s: %v", sessionID, err)
	}
	if err := tx.EnqueueConversion(ctx, &consent.ConversionJob{SessionID: sessionID, RunAfter: now, CreatedAt: now}); err != nil {
		return 0, fmt.Errorf("retain %s: enqueue conversion: %v", sessionID, err)
	}
	return bal, nil
}

// BatchEntry is the outcome for one session of a batch.
type BatchEntry struct {
	SessionID string
	Status    string // StatusQueued on success
	Err       error  // nil on success; coded like Retain's errors
}

// BatchResult is the answer to a batch (§4.9).
type BatchResult struct {
	Retained, Failed int
	TotalCost        wallet.Amount
	Balance          wallet.Amount // after all charges
	Results          []BatchEntry  // one per requested session, in order
}

// RetainBatch retains up to MaxBatch sessions in order, each charged
// Prices.RetainBatch only when it succeeds (D23). A repeated id fails as
// already retained; once the balance cannot cover an entry it fails with
// insufficient balance. All successes commit together. Invalid when the list
// is empty or longer than MaxBatch; an entry that is not an identifier
// fails by itself.
func (s *Service) RetainBatch(ctx context.Context, caller, companyID string, sessionIDs []string) (*BatchResult, error) {
	if err := checkCaller(caller, companyID); err != nil {
		return nil, err
	}
	if len(sessionIDs) == 0 || len(sessionIDs) > MaxBatch {
		return nil, consent.Errorf(consent.Invalid, "session_ids must list 1 to %d sessions", MaxBatch)
	}
	var res *BatchResult
	err := s.store.Update(ctx, func(tx consent.Tx) error {
		res = &BatchResult{Results: make([]BatchEntry, len(sessionIDs))}
		now := consent.UTC(s.policy.Now())
		for i, id := range sessionIDs {
			e := BatchEntry{SessionID: id}
			if e.Err = consent.CheckID("session_id", id); e.Err == nil {
				_, e.Err = s.retain(ctx, tx, companyID, id, s.policy.Prices.RetainBatch, wallet.RetainBatch, now)
			}
			switch code := consent.ErrorCode(e.Err); code {
			case "":
				e.Status = StatusQueued
				res.Retained++
				res.TotalCost += s.policy.Prices.RetainBatch
			case consent.Internal:
				return e.Err // a storage failure fails the whole batch
			default:
				res.Failed++
			}
			res.Results[i] = e
		}
		var err error
		res.Balance, err = tx.Balance(ctx, companyID)
		return err
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// Status returns a session of the caller's company, with its retention and
// conversion status and, once converted, its video. NotFound when the
// session is unknown or not the company's.
func (s *Service) Status(ctx context.Context, caller, companyID, sessionID string) (*consent.Session, error) {
	if err := checkCaller(caller, companyID); err != nil {
		return nil, err
	}
	if err := consent.CheckID("sessionId", sessionID); err != nil {
		return nil, err
	}
	var ses *consent.Session
	err := s.store.View(ctx, func(tx consent.Tx) error {
		var err error
		ses, err = consent.SessionOf(ctx, tx, sessionID, companyID)
		return err
	})
	return ses, err
}
