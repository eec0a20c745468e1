package consent

import (
	"fmt"
	"time"
)

// IdempotencyTTL is how long an idempotency key and its answer are kept.
const IdempotencyTTL = 24 * time.Hour

// MaxIdempotencyKey bounds a key's length, as Stripe does.
const MaxIdempotencyKey = 255

// Idempotency errors.
var (
	// ErrKeyReused refuses a key given before with another request.
	ErrKeyReused = &Error{Code: Unprocessable, Message: "the Idempotency-Key was used with another request; use a new key for a new request"}
	// ErrKeyInFlight refuses a key whose first request still runs.
	ErrKeyInFlight = &Error{Code: Conflict, Message: "a request with this Idempotency-Key is still in progress; retry later"}
	// ErrReplayed is returned by an operation that did nothing because its
	// key was used before: Idempotency.Stored holds the first answer.
	ErrReplayed = fmt.Errorf("consent: the idempotency key was used before; its stored answer stands")
)

// CheckIdempotencyKey checks a client's key: 1 to MaxIdempotencyKey
// printable ASCII characters, no spaces (a UUID is the usual choice).
func CheckIdempotencyKey(key string) error {
	if key == "" || len(key) > MaxIdempotencyKey {
		return Errorf(Invalid, "Idempotency-Key must be 1 to %d characters", MaxIdempotencyKey)
	}
	for i := range len(key) {
		if c := key[i]; c < 0x21 || c > 0x7e {
			return Errorf(Invalid, "Idempotency-Key must be printable ASCII without spaces")
		}
	}
	return nil
}

// IdempotencyRecord is a stored key: whose it is, the request it was first
// used with, and the answer that request got.
type IdempotencyRecord struct {
	Scope string
	Key   string
	// Fingerprint identifies the request the key was first used with.
	Fingerprint Digest
	// Status and Body are the stored answer; Status is 0 while the
	// transaction that claimed the key runs (never seen committed).
	Status    int
	Body      []byte
	CreatedAt time.Time
	ExpiresAt time.Time
}
