package consent

import (
	"context"

	"github.com/consentkit/consentkit/wallet"
)

// Charge debits the price of kind (Config.Prices, D2) from the company's
// wallet inside tx, with a ledger entry referring to reference (D5), and
// returns the amount charged and the new balance. A price of zero debits
// nothing and writes no entry. A charge that takes the balance below
// Config.LowBalanceThreshold emits EventWalletLowBalance. A short balance gives a
// *wallet.InsufficientFundsError and changes nothing (D4).
func (s *Service) Charge(ctx context.Context, tx Tx, companyID string, kind wallet.EntryKind, reference string) (charged, balance wallet.Amount, err error) {
	price := s.cfg.Prices.Of(kind)
	if price == 0 {
		balance, err = tx.Balance(ctx, companyID)
		return 0, balance, err
	}
	now := s.Now()
	balance, err = tx.Debit(ctx, &wallet.Entry{
		ID: newEntryID(now), CompanyID: companyID, Kind: kind, Amount: price, Reference: reference, CreatedAt: now,
	})
	if err != nil {
		return 0, 0, err
	}
	if low := s.cfg.LowBalanceThreshold; low > 0 && balance < low && balance+price >= low {
		err = s.EmitEvent(ctx, tx, companyID, EventWalletLowBalance, map[string]any{
			"company_id": companyID, "balance": balance, "threshold": low, "reference": reference,
		})
		if err != nil {
			return 0, 0, err
		}
	}
	return price, balance, nil
}

// SessionOf returns the company's session inside tx. Another company's
// session is reported as not found, the same as an unknown one (D9). A
// purged session is returned, with RetentionStatus expired (D26, D43).
func SessionOf(ctx context.Context, tx Tx, id, companyID string) (*Session, error) {
	ses, err := tx.Session(ctx, id)
	if ErrorCode(err) == NotFound || err == nil && ses.CompanyID != companyID {
		return nil, Errorf(NotFound, "session not found")
	}
	return ses, err
}

// CheckProperty returns nil when the property exists and is the company's.
// Another company's property is reported as not found, the same as an
// unknown one (D9, D15).
func CheckProperty(ctx context.Context, tx Tx, companyID, propertyID string) error {
	prop, err := tx.Property(ctx, propertyID)
	if ErrorCode(err) == NotFound || err == nil && prop.CompanyID != companyID {
		return Errorf(NotFound, "property not found")
	}
	return err
}
