package consent

import (
	"context"
	"time"

	"github.com/consentkit/consentkit/wallet"
)

// Charge debits e.Amount from e.CompanyID's wallet inside tx and returns the
// new balance; a price of zero debits nothing and writes no ledger entry. An
// empty e.ID gets a fresh one. A short balance gives a
// *wallet.InsufficientFundsError and changes nothing (D4).
func Charge(ctx context.Context, tx Tx, e *wallet.Entry) (wallet.Amount, error) {
	if e.Amount == 0 {
		return tx.Balance(ctx, e.CompanyID)
	}
	if e.ID == "" {
		e.ID = NewID("le")
	}
	return tx.Debit(ctx, e)
}

// DefaultLongTermYears is how long a retained item is kept by default: five
// years from its retention, past the four-year TCPA limitation period (D26).
const DefaultLongTermYears = 5

// RetainUntil returns when an item retained at now may be purged: now plus
// longTerm, or plus DefaultLongTermYears when longTerm is zero.
func RetainUntil(now time.Time, longTerm time.Duration) time.Time {
	if longTerm <= 0 {
		return now.AddDate(DefaultLongTermYears, 0, 0)
	}
	return now.Add(longTerm)
}

// SessionOf returns the company's session inside tx. Another company's
// session, and one whose recording was purged, is reported as not found, the
// same as an unknown one (D9, D26).
func SessionOf(ctx context.Context, tx Tx, id, companyID string) (*Session, error) {
	ses, err := tx.Session(ctx, id)
	if ErrorCode(err) == NotFound || err == nil && (ses.CompanyID != companyID || ses.RetentionStatus == RetentionExpired) {
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
