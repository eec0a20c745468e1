package wallet_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/consentkit/consentkit/wallet"
)

func TestParseAmount(t *testing.T) {
	tests := []struct {
		in   string
		want wallet.Amount
	}{
		{"0.015", 15000},
		{"24.985", 24_985_000},
		{"0.1", 100_000},
		{"0.10", 100_000},
		{"1", 1_000_000},
		{"100.000000", 100_000_000},
		{"0", 0},
		{"-0", 0},
		{"0.000001", 1},
		{"0.0000010", 1},
		{"-3.5", -3_500_000},
		{"+2", 2_000_000},
		{"1.5e-2", 15000},
		{"15E-3", 15000},
		{"2.5e3", 2_500_000_000},
		{"1e-6", 1},
		{"007.5", 7_500_000},
		{"9223372036854.775807", math.MaxInt64},
		{"-9223372036854.775808", math.MinInt64},
	}
	for _, tt := range tests {
		got, err := wallet.ParseAmount(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseAmount(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
}

func TestParseAmountErrors(t *testing.T) {
	for _, in := range []string{
		"", "-", ".", "1.", "abc", "1,5", "0.0000001", "0.1234567", "1e-7", "1e", "1e+",
		"9223372036854.775808", "-9223372036854.775809", "99999999999999999999", "1e200",
		"0x10", " 1", "1 ", "NaN", "Inf", "1.2.3", "--1",
	} {
		if got, err := wallet.ParseAmount(in); err == nil {
			t.Errorf("ParseAmount(%q) = %d, want an error", in, got)
		}
	}
}

func TestAmountString(t *testing.T) {
	tests := []struct {
		in   wallet.Amount
		want string
	}{
		{15000, "0.015"},
		{100_000, "0.1"},
		{24_985_000, "24.985"},
		{0, "0"},
		{1, "0.000001"},
		{10_000, "0.01"},
		{25_500_000, "25.5"},
		{-15000, "-0.015"},
		{-2_000_000, "-2"},
		{math.MaxInt64, "9223372036854.775807"},
		{math.MinInt64, "-9223372036854.775808"},
	}
	for _, tt := range tests {
		if got := tt.in.String(); got != tt.want {
			t.Errorf("Amount(%d).String() = %q, want %q", int64(tt.in), got, tt.want)
		}
		if got, err := tt.in.AppendText([]byte("x=")); string(got) != "x="+tt.want || err != nil {
			t.Errorf("Amount(%d).AppendText(x=) = %q, %v; want %q", int64(tt.in), got, err, "x="+tt.want)
		}
	}
}

func TestAmountJSON(t *testing.T) {
	type body struct {
		Required wallet.Amount `json:"required"`
	}
	for _, in := range []string{`{"required":24.985}`, `{"required":"24.985"}`} {
		var b body
		if err := json.Unmarshal([]byte(in), &b); err != nil {
			t.Fatalf("Unmarshal(%s): %v", in, err)
		}
		if b.Required != 24_985_000 {
			t.Errorf("Unmarshal(%s) = %d, want 24985000", in, b.Required)
		}
	}
	out, err := json.Marshal(body{Required: 15000})
	if err != nil || string(out) != `{"required":0.015}` {
		t.Errorf("Marshal = %s, %v", out, err)
	}
	var b body
	if err := json.Unmarshal([]byte(`{"required":0.0150001}`), &b); err == nil {
		t.Errorf("7 decimals accepted as %d", b.Required)
	}
	if err := json.Unmarshal([]byte(`{"required":true}`), &b); err == nil {
		t.Errorf("a boolean was accepted as an amount")
	}
}

// Every amount printed must parse back to itself.
func FuzzAmountRoundTrip(f *testing.F) {
	for _, v := range []int64{0, 1, 15000, -15000, 24_985_000, math.MaxInt64, math.MinInt64} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v int64) {
		s := wallet.Amount(v).String()
		got, err := wallet.ParseAmount(s)
		if err != nil || got != wallet.Amount(v) {
			t.Fatalf("ParseAmount(%q) = %d, %v; want %d", s, got, err, v)
		}
	})
}

// Parsing never panics, and what parses prints back to the same value.
func FuzzParseAmount(f *testing.F) {
	for _, s := range []string{"0.015", "1e-6", "-3", "1.", "9223372036854.775807"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := wallet.ParseAmount(s)
		if err != nil {
			return
		}
		if b, err := wallet.ParseAmount(a.String()); err != nil || a != b {
			t.Fatalf("%q parsed to %d, which printed as %q parses to %d, %v", s, a, a.String(), b, err)
		}
	})
}

func TestDefaultPrices(t *testing.T) {
	p := wallet.DefaultPrices()
	if p.ExactMatch.String() != "0.015" || p.PartialMatch.String() != "0.015" ||
		p.RetainSingle.String() != "0.1" || p.RetainBatch.String() != "0.1" ||
		p.SessionRetention.String() != "0.1" || p.CertificateRetention.String() != "0.1" ||
		p.CertificateInfo != 0 {
		t.Errorf("DefaultPrices() = %+v, not D2", p)
	}
}

// Of answers every debit kind with its own field, and top-ups with zero.
func TestPricesOf(t *testing.T) {
	p := wallet.Prices{ExactMatch: 1, PartialMatch: 2, CertificateInfo: 3, RetainSingle: 4, RetainBatch: 5,
		SessionRetention: 6, CertificateRetention: 7}
	for kind, want := range map[wallet.EntryKind]wallet.Amount{
		wallet.ExactMatch: 1, wallet.PartialMatch: 2, wallet.CertificateInfo: 3, wallet.RetainSingle: 4,
		wallet.RetainBatch: 5, wallet.SessionRetention: 6, wallet.CertificateRetention: 7, wallet.TopUp: 0,
	} {
		if got := p.Of(kind); got != want {
			t.Errorf("Of(%s) = %d, want %d", kind, got, want)
		}
	}
	if err := p.Check(); err != nil {
		t.Errorf("Check of positive prices: %v", err)
	}
	p.RetainBatch = -1
	if err := p.Check(); err == nil {
		t.Error("Check accepted a negative price")
	}
}

func TestInsufficientFundsError(t *testing.T) {
	err := fmt.Errorf("charge: %w", &wallet.InsufficientFundsError{Required: 15000, Balance: 10000})
	if !errors.Is(err, wallet.ErrInsufficientFunds) {
		t.Fatal("errors.Is(err, ErrInsufficientFunds) = false")
	}
	var e *wallet.InsufficientFundsError
	if !errors.As(err, &e) || e.Required != 15000 || e.Balance != 10000 {
		t.Fatalf("errors.As gave %+v", e)
	}
	if got, want := err.Error(), "charge: insufficient balance: required 0.015, current balance 0.01"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// Add and Sum refuse a total over MaxBalance, even one that would overflow
// an int64, and add anything else exactly.
func TestAddAndSum(t *testing.T) {
	for _, c := range []struct {
		a, b wallet.Amount
		ok   bool
	}{
		{1, 2, true},
		{wallet.MaxBalance - 1, 1, true},
		{wallet.MaxBalance, 1, false},
		{10 * wallet.Dollar, math.MaxInt64, false},
		{wallet.MaxBalance, wallet.MaxBalance, false},
	} {
		got, err := wallet.Add(c.a, c.b)
		switch {
		case c.ok && (err != nil || got != c.a+c.b):
			t.Errorf("wallet.Add(%d, %d) = %d, %v; want %d", c.a, c.b, got, err, c.a+c.b)
		case !c.ok && !errors.Is(err, wallet.ErrBalanceLimit):
			t.Errorf("wallet.Add(%d, %d) = %d, %v; want wallet.ErrBalanceLimit", c.a, c.b, got, err)
		}
	}
	es := []*wallet.Entry{{Amount: wallet.MaxBalance - 2}, {Amount: 1}, {Amount: 1}}
	if sum, err := wallet.Sum(es); err != nil || sum != wallet.MaxBalance {
		t.Errorf("wallet.Sum = %d, %v; want wallet.MaxBalance", sum, err)
	}
	if _, err := wallet.Sum(append(es, &wallet.Entry{Amount: 1})); !errors.Is(err, wallet.ErrBalanceLimit) {
		t.Errorf("wallet.Sum over wallet.MaxBalance = %v, want wallet.ErrBalanceLimit", err)
	}
	if sum, err := wallet.Sum(nil); sum != 0 || err != nil {
		t.Errorf("wallet.Sum(nil) = %d, %v", sum, err)
	}
}
