package consent

import (
	"time"

	"github.com/consentkit/consentkit/internal/ident"
)

// MaxIDLength is the longest identifier accepted (D29).
const MaxIDLength = ident.MaxLength

// ValidID reports whether s is an identifier: 1–128 characters of
// [A-Za-z0-9._:-] (D29).
func ValidID(s string) bool { return ident.Valid(s) }

// CheckID returns an Invalid error naming field when id is not an identifier.
func CheckID(field, id string) error {
	if id == "" {
		return Errorf(Invalid, "%s is required", field)
	}
	if !ValidID(id) {
		return Errorf(Invalid, "%s must be 1 to %d characters of A-Z a-z 0-9 . _ : -", field, MaxIDLength)
	}
	return nil
}

// NewID returns a random identifier with a readable prefix, such as
// "cert_…" (prefix "cert"): 128 random bits.
func NewID(prefix string) string { return ident.New(prefix) }

// UTC returns t in UTC, truncated to the microsecond: the precision that
// every store keeps.
func UTC(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }
