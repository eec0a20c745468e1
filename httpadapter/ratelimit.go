package httpadapter

import (
	"time"

	"github.com/consentkit/consentkit/internal/ratelimit"
)

// The rate limits (D20, D28) are ratelimit.Limiter, one per Limit, keyed
// by ratelimit.ClientKey of the client's address or by a company or
// property id.

// retryAfter renders a delay as whole seconds, rounded up, at least 1.
func retryAfter(d time.Duration) int { return ratelimit.RetryAfter(d) }
