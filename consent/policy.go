package consent

import (
	"time"

	"github.com/consentkit/consentkit/wallet"
)

// Policy is what the paid operations share: the price list, the clock and
// the long-term retention period. verify.Config and retain.Config are this
// type, so one Policy configures both alike. Zero values mean the defaults.
type Policy struct {
	Prices *wallet.Prices   // default wallet.DefaultPrices() (D2)
	Now    func() time.Time // default time.Now
	// LongTermRetention is how long retained sessions and certificates are
	// kept, from their retention: default DefaultLongTermYears (D26).
	LongTermRetention time.Duration
}

// WithDefaults returns p with its zero fields set to the defaults.
func (p Policy) WithDefaults() Policy {
	if p.Prices == nil {
		prices := wallet.DefaultPrices()
		p.Prices = &prices
	}
	if p.Now == nil {
		p.Now = time.Now
	}
	return p
}
