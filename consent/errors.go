package consent

import (
	"errors"
	"fmt"

	"github.com/consentkit/consentkit/wallet"
)

// Code classifies an error for callers: the HTTP layer maps each code to one
// status, and tests check codes rather than messages.
type Code string

// Error codes.
const (
	Invalid      Code = "invalid"      // the request is malformed; Message names the field
	NotFound     Code = "not_found"    // the thing does not exist, or is not the caller's (D9)
	Conflict     Code = "conflict"     // the thing exists already, or is already in the asked-for state
	Unauthorized Code = "unauthorized" // credentials missing, unknown, expired or revoked (D6)
	Forbidden    Code = "forbidden"    // credentials valid but not allowed (D7, D9)
	OptedOut     Code = "opted_out"    // the certificate was revoked by its consumer (D13)
	TooLarge     Code = "too_large"    // a body or recording exceeds its limit
	Payment      Code = "payment"      // the wallet cannot cover the price (wallet.ErrInsufficientFunds)
	// Unprocessable: the request is well formed but cannot be taken as
	// sent: an idempotency key reused with another request (D40).
	Unprocessable Code = "unprocessable"
	Internal      Code = "internal" // anything else: a bug or a storage failure
)

// Error is an error with a code and a message fit for the caller.
type Error struct {
	Code    Code
	Message string
}

func (e *Error) Error() string {
	if e.Message == "" {
		return string(e.Code)
	}
	return e.Message
}

// Is reports whether target is the sentinel of e's code, so that
// errors.Is(err, consent.ErrNotFound) holds for every not-found error.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == "" && t.Code == e.Code
}

// Sentinels for errors.Is; they match any *Error of their code.
var (
	ErrInvalid      = &Error{Code: Invalid}
	ErrNotFound     = &Error{Code: NotFound}
	ErrConflict     = &Error{Code: Conflict}
	ErrUnauthorized = &Error{Code: Unauthorized}
	ErrForbidden    = &Error{Code: Forbidden}
	ErrOptedOut     = &Error{Code: OptedOut}
	ErrTooLarge     = &Error{Code: TooLarge}
)

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code Code, format string, args ...any) error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of err: that of the first *Error in its chain,
// Payment for insufficient funds, Invalid for an amount over the balance
// limit (wallet.ErrBalanceLimit), and Internal for anything else or "" for
// nil.
func ErrorCode(err error) Code {
	if err == nil {
		return ""
	}
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Code
	}
	if errors.Is(err, wallet.ErrInsufficientFunds) {
		return Payment
	}
	if errors.Is(err, wallet.ErrBalanceLimit) {
		return Invalid
	}
	return Internal
}

// ErrorMessage returns the message of the first *Error in err's chain, the
// wallet's message for insufficient funds or the balance limit, and
// "internal error" otherwise:
// text of uncoded errors (SQL, driver) never reaches a caller.
func ErrorMessage(err error) string {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Error()
	}
	if errors.Is(err, wallet.ErrInsufficientFunds) {
		return wallet.ErrInsufficientFunds.Error()
	}
	if errors.Is(err, wallet.ErrBalanceLimit) {
		return wallet.ErrBalanceLimit.Error()
	}
	return "internal error"
}

// StorageFailure reports err, met by a write that has no reason of its own
// to fail (past a charge, in a batch's flush), as a storage failure (an
// uncoded error, Internal) that what describes: a code err carries, or a
// wallet's refusal, is dropped — so that a batch fails whole instead of
// counting a charged entry as refused — while an uncoded error (the
// driver's) stays in the chain, where a store finds a transaction that the
// database aborted, for a deadlock, to run it again.
func StorageFailure(what string, err error) error {
	if ErrorCode(err) != Internal {
		return fmt.Errorf("%s: %v", what, err) //nolint:errorlint // the code is dropped on purpose
	}
	return fmt.Errorf("%s: %w", what, err)
}
