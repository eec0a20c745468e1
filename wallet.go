package consentkit

import (
	"context"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/ident"
	"github.com/consentkit/consentkit/wallet"
)

// TopUp credits the company's wallet (D5) and returns the new balance.
// reference names the payment (optional, at most 128 bytes). It runs
// through Paid: when ctx carries an Idempotency (D40), a top-up sent again
// with its key credits nothing more and returns consent.ErrReplayed, the first
// answer being in the Idempotency — the operator API requires a key, so
// that a retried top-up never credits twice.
func (s *Service) TopUp(ctx context.Context, companyID string, amount wallet.Amount, reference string) (wallet.Amount, error) {
	return Paid(ctx, s, nil, func(tx consent.Tx) (wallet.Amount, error) { return s.TopUpTx(ctx, tx, companyID, amount, reference) })
}

// TopUpTx is TopUp inside tx.
func (s *Service) TopUpTx(ctx context.Context, tx consent.Tx, companyID string, amount wallet.Amount, reference string) (wallet.Amount, error) {
	if amount <= 0 {
		return 0, consent.Errorf(consent.Invalid, "amount must be positive")
	}
	if amount > wallet.MaxBalance {
		return 0, wallet.ErrBalanceLimit
	}
	if len(reference) > consent.MaxIDLength {
		return 0, consent.Errorf(consent.Invalid, "reference must be at most %d bytes", consent.MaxIDLength)
	}
	if err := consent.CheckText("reference", reference); err != nil {
		return 0, err
	}
	now := s.Now()
	e := &wallet.Entry{
		ID: ident.Entry(now), CompanyID: companyID, Kind: wallet.TopUp,
		Amount: amount, Reference: reference, CreatedAt: now,
	}
	bal, err := tx.Credit(ctx, e)
	if err != nil {
		return 0, err
	}
	err = s.Audit(ctx, tx, AuditParams{CompanyID: companyID, Action: consent.AuditWalletCredit, Target: e.ID,
		Detail: map[string]any{"amount": amount, "reference": reference, "balance": bal}})
	return bal, err
}

// Balance returns the company's wallet balance.
func (s *Service) Balance(ctx context.Context, companyID string) (wallet.Amount, error) {
	var bal wallet.Amount
	err := s.store.View(ctx, func(tx consent.Tx) error {
		var err error
		bal, err = tx.Balance(ctx, companyID)
		return err
	})
	return bal, err
}

// Charge debits the price of kind (Config.Prices, D2) from the company's
// wallet inside tx, with a ledger entry referring to reference (D5), and
// returns the amount charged and the new balance. A price of zero debits
// nothing and writes no entry. A charge that takes the balance below
// Config.LowBalanceThreshold emits EventWalletLowBalance. A short balance gives a
// *wallet.InsufficientFundsError and changes nothing (D4).
func (s *Service) Charge(ctx context.Context, tx consent.Tx, companyID string, kind wallet.EntryKind, reference string) (charged, balance wallet.Amount, err error) {
	price := s.cfg.Prices.Of(kind)
	if price == 0 {
		balance, err = tx.Balance(ctx, companyID)
		return 0, balance, err
	}
	now := s.Now()
	balance, err = tx.Debit(ctx, &wallet.Entry{
		ID: ident.Entry(now), CompanyID: companyID, Kind: kind, Amount: price, Reference: reference, CreatedAt: now,
	})
	if err != nil {
		return 0, 0, err
	}
	if low := s.cfg.LowBalanceThreshold; low > 0 && balance < low && balance+price >= low {
		err = s.EmitEvent(ctx, tx, companyID, consent.EventWalletLowBalance, map[string]any{
			"company_id": companyID, "balance": balance, "threshold": low, "reference": reference,
		})
		if err != nil {
			// Past the debit every error is a storage failure: a refusal
			// would commit, and the charge with it (D3).
			return 0, 0, consent.StorageFailure("charge "+reference+": low-balance event", err)
		}
	}
	return price, balance, nil
}
