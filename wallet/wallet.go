// Package wallet holds the money of consentkit: an exact Amount in integer
// micro-dollars (D1), the price list (D2), the kinds of ledger entry (D5) and
// the error returned when a wallet cannot cover a charge (D4).
//
//	amount, err := wallet.ParseAmount("25.50") // 25_500_000 micro-dollars
//	fmt.Println(amount, 3*wallet.Cent)         // 25.5 0.03
//	price := wallet.DefaultPrices().ExactMatch // 0.015
//
// No float ever holds money here: amounts are parsed from and printed to
// decimal text digit by digit.
package wallet

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Amount is a sum of money in micro-dollars: 1 USD = 1,000,000 (D1).
type Amount int64

// Common amounts.
const (
	Microdollar Amount = 1
	Cent        Amount = 10_000
	Dollar      Amount = 1_000_000
)

// MaxBalance is the most a wallet holds, and so the largest amount of one
// ledger entry: a billion dollars. Every store refuses a credit that would
// take a balance over it, and an entry or a debit of several entries that
// is over it (ErrBalanceLimit), so that no balance or sum of amounts can
// overflow.
const MaxBalance Amount = 1_000_000_000 * Dollar

// ErrBalanceLimit refuses an amount over MaxBalance: a credit that would
// take a balance over it, an entry of more, a debit of entries whose sum is
// more (no wallet could cover it). consent reports it as Invalid.
var ErrBalanceLimit = errors.New("a wallet holds at most " + MaxBalance.String() + " dollars")

// Add returns a+b, two amounts of 0 to MaxBalance, or ErrBalanceLimit when
// the sum is over MaxBalance: how a balance or a sum grows without
// overflowing.
func Add(a, b Amount) (Amount, error) {
	if b > MaxBalance-a { // not a+b, which could overflow
		return 0, ErrBalanceLimit
	}
	return a + b, nil
}

// Sum returns the sum of the entries' amounts (each 0 to MaxBalance), or
// ErrBalanceLimit when it is over MaxBalance. No entries sum to 0.
func Sum(entries []*Entry) (Amount, error) {
	var sum Amount
	for _, e := range entries {
		var err error
		if sum, err = Add(sum, e.Amount); err != nil {
			return 0, err
		}
	}
	return sum, nil
}

// maxFraction is the number of decimal places an Amount can hold.
const maxFraction = 6

// ParseAmount parses a decimal number of dollars such as "0.015", "24.985",
// "-3", "1.5e-2" or "100.000000" exactly. More than six decimal places
// (after applying any exponent) is an error, as is a value outside the
// range of an Amount. No float arithmetic is involved.
func ParseAmount(s string) (Amount, error) {
	a, err := parseAmount(s)
	if err != nil {
		return 0, fmt.Errorf("wallet: invalid amount %q: %w", s, err)
	}
	return a, nil
}

var (
	errSyntax    = errors.New("not a decimal number")
	errPrecision = errors.New("more than 6 decimal places")
	errRange     = errors.New("out of range")
)

func parseAmount(s string) (Amount, error) {
	neg := false
	switch {
	case strings.HasPrefix(s, "-"):
		neg, s = true, s[1:]
	case strings.HasPrefix(s, "+"):
		s = s[1:]
	}
	mant, exp := s, 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant = s[:i]
		e, err := strconv.Atoi(s[i+1:])
		if err != nil || s[i+1:] == "" || e > 100 || e < -100 {
			return 0, errSyntax
		}
		exp = e
	}
	intPart, frac, hasDot := strings.Cut(mant, ".")
	if intPart == "" && frac == "" || hasDot && frac == "" || !allDigits(intPart) || !allDigits(frac) {
		return 0, errSyntax
	}
	// The value is digits × 10^(exp − len(frac)); we want it × 10^6.
	digits := strings.TrimLeft(intPart+frac, "0")
	shift := exp - len(frac) + maxFraction
	if shift < 0 {
		// Dropping digits is only exact when they are zeros.
		cut := -shift
		if cut > len(digits) {
			cut = len(digits)
		}
		if strings.Trim(digits[len(digits)-cut:], "0") != "" {
			return 0, errPrecision
		}
		digits, shift = digits[:len(digits)-cut], 0
	}
	if digits == "" {
		return 0, nil
	}
	if len(digits)+shift > 19 {
		return 0, errRange
	}
	v, err := strconv.ParseUint(digits+strings.Repeat("0", shift), 10, 64)
	if err != nil {
		return 0, errRange
	}
	if neg {
		if v > uint64(math.MaxInt64)+1 {
			return 0, errRange
		}
		return Amount(-int64(v)), nil // -MaxInt64-1 wraps to itself, as wanted
	}
	if v > math.MaxInt64 {
		return 0, errRange
	}
	return Amount(v), nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// String prints the amount in dollars with as few decimals as are exact:
// 15000 → "0.015", 100000 → "0.1", 24985000 → "24.985", 0 → "0".
func (a Amount) String() string {
	var buf [24]byte // "-9223372036854.775808"
	return string(a.append(buf[:0]))
}

// AppendText appends the amount as String prints it
// (encoding.TextAppender).
func (a Amount) AppendText(b []byte) ([]byte, error) { return a.append(b), nil }

func (a Amount) append(b []byte) []byte {
	u := uint64(a)
	if a < 0 {
		b, u = append(b, '-'), uint64(-(a+1))+1
	}
	whole, frac := u/uint64(Dollar), u%uint64(Dollar)
	b = strconv.AppendUint(b, whole, 10)
	if frac == 0 {
		return b
	}
	b = append(b, '.')
	for d := uint64(Dollar) / 10; frac > 0; d /= 10 { // the digits of frac, six wide, without trailing zeros
		b = append(b, byte('0'+frac/d))
		frac %= d
	}
	return b
}

// MarshalJSON writes the amount as an exact JSON number of dollars.
func (a Amount) MarshalJSON() ([]byte, error) {
	return a.append(make([]byte, 0, 24)), nil
}

// UnmarshalJSON reads a JSON number or a JSON string holding a decimal number
// of dollars, exactly: both 24.985 and "24.985" give 24,985,000 micro-dollars.
func (a *Amount) UnmarshalJSON(b []byte) error {
	s := string(b)
	if s == "null" {
		return nil
	}
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	v, err := ParseAmount(s)
	if err != nil {
		return err
	}
	*a = v
	return nil
}

// Prices is the price list of paid actions (D2). Every field is
// configurable. Opt-out has no price: it is unauthenticated, so a price on
// it would let anyone spend a company's wallet.
type Prices struct {
	ExactMatch           Amount // POST /verify/match
	PartialMatch         Amount // POST /verify/partial-match
	CertificateInfo      Amount // POST /verify/certificate-info
	RetainSingle         Amount // Retain API, one session
	RetainBatch          Amount // Retain API batch, per successful session
	SessionRetention     Amount // POST /verify/session/:company_id
	CertificateRetention Amount // POST /verify/certificate/:company_id
}

// DefaultPrices returns the default price list (D2).
func DefaultPrices() Prices {
	return Prices{
		ExactMatch:           15 * Cent / 10, // 0.015
		PartialMatch:         15 * Cent / 10, // 0.015
		CertificateInfo:      0,
		RetainSingle:         10 * Cent,
		RetainBatch:          10 * Cent,
		SessionRetention:     10 * Cent,
		CertificateRetention: 10 * Cent,
	}
}

// Of returns the price of an action of the given kind; zero for a kind
// that is not a paid action (a top-up, say).
func (p *Prices) Of(kind EntryKind) Amount {
	switch kind {
	case ExactMatch:
		return p.ExactMatch
	case PartialMatch:
		return p.PartialMatch
	case CertificateInfo:
		return p.CertificateInfo
	case RetainSingle:
		return p.RetainSingle
	case RetainBatch:
		return p.RetainBatch
	case SessionRetention:
		return p.SessionRetention
	case CertificateRetention:
		return p.CertificateRetention
	}
	return 0
}

// Check returns an error when a price is negative.
func (p *Prices) Check() error {
	for _, a := range [...]Amount{p.ExactMatch, p.PartialMatch, p.CertificateInfo, p.RetainSingle,
		p.RetainBatch, p.SessionRetention, p.CertificateRetention} {
		if a < 0 {
			return errors.New("wallet: a price must not be negative")
		}
	}
	return nil
}

// EntryKind names what a ledger entry was for. Every kind is either a credit
// or a debit (D5).
type EntryKind string

// Ledger entry kinds.
const (
	TopUp                EntryKind = "top_up"
	ExactMatch           EntryKind = "exact_match"
	PartialMatch         EntryKind = "partial_match"
	CertificateInfo      EntryKind = "certificate_info"
	RetainSingle         EntryKind = "retain_single"
	RetainBatch          EntryKind = "retain_batch"
	SessionRetention     EntryKind = "session_retention"
	CertificateRetention EntryKind = "certificate_retention"
)

// IsCredit reports whether entries of this kind add to a balance.
func (k EntryKind) IsCredit() bool { return k == TopUp }

// Valid reports whether k is one of the kinds above.
func (k EntryKind) Valid() bool {
	switch k {
	case TopUp, ExactMatch, PartialMatch, CertificateInfo, RetainSingle, RetainBatch,
		SessionRetention, CertificateRetention:
		return true
	}
	return false
}

// ErrInsufficientFunds is matched (errors.Is) by every *InsufficientFundsError.
var ErrInsufficientFunds = errors.New("insufficient balance")

// InsufficientFundsError reports a charge the wallet could not cover. The
// wallet is left unchanged (D4).
type InsufficientFundsError struct {
	Required Amount // the price of the refused action
	Balance  Amount // the wallet's balance when it was refused
}

func (e *InsufficientFundsError) Error() string {
	return fmt.Sprintf("insufficient balance: required %s, current balance %s", e.Required, e.Balance)
}

// Is makes errors.Is(err, ErrInsufficientFunds) true.
func (e *InsufficientFundsError) Is(target error) bool { return target == ErrInsufficientFunds }

// Entry is one line of a company's ledger (D5). Amount is always positive;
// Kind says whether it was a credit or a debit. For every wallet at every
// moment, balance = Σ credits − Σ debits.
type Entry struct {
	ID        string
	CompanyID string
	Kind      EntryKind
	Amount    Amount
	// Reference names what the entry paid for or came from: a certificate
	// or session id, a payment reference.
	Reference string
	CreatedAt time.Time
}
