package consentkit

import (
	"context"
	"fmt"
	"slices"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/ident"
	"github.com/consentkit/consentkit/wallet"
)

// Batch gathers the writes of many paid items of one company inside one
// transaction — charges, jobs, webhook events and audit entries — and
// Flush writes each kind with one call of the store (DebitAll,
// EnqueueJobs, AppendAudits), so that n items cost a bounded number of
// statements instead of n times those of one item (the Retain API's batch
// of 100, say).
//
// Its rules are those of Charge, EmitEvent and Audit, applied to the items
// in the order they are added, with the clock read at the same points: the
// same charges and refusals (D4), ledger entries (D5), low-balance and
// other events (D44) and chained audit entries (D42) as that many calls of
// those would make. Nothing is written before Flush, so reads through the
// transaction in between do not see the batch's writes; a Batch is for
// items whose rules the caller checks on what it read before (and keeps
// up to date itself, as the Retain API's batch does with its sessions).
//
// The ids of its ledger entries and webhook messages are random like
// NewID's, in NewID's form, but those of one batch share their first 96
// bits, so that its rows sit together in the indexes on them.
//
// A Batch holds the wallet's balance as it read it, so it must be flushed
// in the transaction that made it, and that transaction must make no other
// charge of the company meanwhile. It is not safe for concurrent use.
type Batch struct {
	s         *Service
	tx        consent.Tx
	companyID string
	balance   wallet.Amount              // after the charges so far
	endpoints []*consent.WebhookEndpoint // read at the first event; nil until then
	read      bool                       // whether endpoints was read
	debits    []*wallet.Entry
	jobs      []*consent.Job
	audits    []*consent.AuditEntry
	ids       map[string]*ident.Run // of its ledger entries and messages, by prefix
}

// NewBatch starts a batch of the company's items inside tx. It reads the
// company's balance, which locks its wallet until tx ends (as the wallet
// operations do). NotFound when the company does not exist.
func (s *Service) NewBatch(ctx context.Context, tx consent.Tx, companyID string) (*Batch, error) {
	bal, err := tx.Balance(ctx, companyID)
	if err != nil {
		return nil, err
	}
	return &Batch{s: s, tx: tx, companyID: companyID, balance: bal}, nil
}

// newID returns the batch's next id of the prefix (see ident.Run).
func (b *Batch) newID(prefix string) string {
	r := b.ids[prefix]
	if r == nil {
		if b.ids == nil {
			b.ids = map[string]*ident.Run{}
		}
		r = ident.NewRun(prefix)
		b.ids[prefix] = r
	}
	return r.Next()
}

// Balance returns the wallet's balance after the batch's charges so far.
func (b *Batch) Balance() wallet.Amount { return b.balance }

// Charge is Service.Charge of one item of the batch: it charges the price
// of kind with a ledger entry whose reference is given, and emits
// EventWalletLowBalance when the charge crosses Config.LowBalanceThreshold.
// When the balance left by the batch's earlier charges is below the price,
// it charges nothing and returns a *wallet.InsufficientFundsError holding
// that balance. A zero price charges nothing and writes no entry.
func (b *Batch) Charge(ctx context.Context, kind wallet.EntryKind, reference string) (charged, balance wallet.Amount, err error) {
	price := b.s.cfg.Prices.Of(kind)
	if price == 0 {
		return 0, b.balance, nil
	}
	e := &wallet.Entry{
		ID: b.newID("le"), CompanyID: b.companyID, Kind: kind, Amount: price, Reference: reference, CreatedAt: b.s.Now(),
	}
	if b.balance < price {
		return 0, 0, &wallet.InsufficientFundsError{Required: price, Balance: b.balance}
	}
	b.debits = append(b.debits, e)
	b.balance -= price
	if low := b.s.cfg.LowBalanceThreshold; low > 0 && b.balance < low && b.balance+price >= low {
		bal := b.balance
		err = b.Emit(ctx, consent.EventWalletLowBalance, func() any {
			return map[string]any{"company_id": b.companyID, "balance": bal, "threshold": low, "reference": reference}
		})
		if err != nil {
			// The debit is gathered already: fail the batch, not the
			// entry, which would be answered failed and charged (D23).
			return 0, 0, consent.StorageFailure("charge "+reference+": low-balance event", err)
		}
	}
	return price, b.balance, nil
}

// Enqueue adds j to the jobs that Flush enqueues. j is not copied: leave
// it alone until then.
func (b *Batch) Enqueue(j *consent.Job) { b.jobs = append(b.jobs, j) }

// Emit is EmitEvent for the batch's company, with the event's data made by
// data() only when an endpoint receives the event: the messages' jobs are
// enqueued by Flush. The company's webhook endpoints are read once, at the
// batch's first event.
func (b *Batch) Emit(ctx context.Context, eventType string, data func() any) error {
	if !slices.Contains(consent.EventTypes, eventType) {
		return consent.Errorf(consent.Invalid, "unknown webhook event type %q", eventType)
	}
	if !b.read {
		eps, err := b.tx.WebhookEndpoints(ctx, b.companyID)
		if err != nil {
			return err
		}
		b.endpoints, b.read = eps, true
	}
	jobs, err := b.s.eventJobs(b.endpoints, eventType, data, b.newID)
	if err != nil {
		return err
	}
	b.jobs = append(b.jobs, jobs...)
	return nil
}

// Audit is Service.Audit of one item: the entry, stamped now, is appended
// by Flush after the entries audited before it. p.CompanyID must be the
// batch's company.
func (b *Batch) Audit(ctx context.Context, p AuditParams) error {
	if p.CompanyID != b.companyID {
		return fmt.Errorf("consentkit: an audit entry of company %q in a batch of %q", p.CompanyID, b.companyID)
	}
	e, err := b.s.auditEntry(ctx, p)
	if err != nil {
		return err
	}
	b.audits = append(b.audits, e)
	return nil
}

// Flush writes what the batch gathered: the charges (DebitAll), the jobs
// (EnqueueJobs), then the audit entries (AppendAudits), whose chain head
// is the last lock a transaction takes (see UpdateAudited), so the caller
// writes its own rows of the items before it. A charge that the wallet
// cannot cover at Flush — which the wallet's lock rules out — fails as a
// storage failure, never as a refusal.
func (b *Batch) Flush(ctx context.Context) error {
	if len(b.debits) > 0 {
		bal, err := b.tx.DebitAll(ctx, b.debits)
		if err != nil {
			return consent.StorageFailure("batch of "+b.companyID+": charge", err)
		}
		if bal != b.balance {
			return fmt.Errorf("batch of %s: the balance after the charges is %s, not %s", b.companyID, bal, b.balance)
		}
	}
	if len(b.jobs) > 0 {
		if err := b.tx.EnqueueJobs(ctx, b.jobs); err != nil {
			return consent.StorageFailure("batch of "+b.companyID+": jobs", err)
		}
	}
	if len(b.audits) > 0 {
		if err := b.tx.AppendAudits(ctx, b.audits); err != nil {
			return err
		}
	}
	b.debits, b.jobs, b.audits = nil, nil, nil
	return nil
}
