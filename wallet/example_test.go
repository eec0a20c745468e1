package wallet_test

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/consentkit/consentkit/wallet"
)

// Amounts are exact: parsed from decimal text and printed back digit by
// digit, never through a float.
func ExampleParseAmount() {
	for _, s := range []string{"25.50", "0.015", "1.5e-2", "-3", "0.0000001"} {
		a, err := wallet.ParseAmount(s)
		if err != nil {
			fmt.Println(s, "→", err)
			continue
		}
		fmt.Println(s, "→", int64(a), "micro-dollars, printed", a)
	}
	// Output:
	// 25.50 → 25500000 micro-dollars, printed 25.5
	// 0.015 → 15000 micro-dollars, printed 0.015
	// 1.5e-2 → 15000 micro-dollars, printed 0.015
	// -3 → -3000000 micro-dollars, printed -3
	// 0.0000001 → wallet: invalid amount "0.0000001": more than 6 decimal places
}

// JSON shows amounts as exact numbers of dollars and reads a number or a
// string.
func ExampleAmount_MarshalJSON() {
	b, _ := json.Marshal(map[string]wallet.Amount{"balance": 24*wallet.Dollar + 985*wallet.Cent/10})
	fmt.Println(string(b))

	var in struct{ Amount wallet.Amount }
	json.Unmarshal([]byte(`{"amount":"12.345678"}`), &in)
	fmt.Println(in.Amount)
	// Output:
	// {"balance":24.985}
	// 12.345678
}

// The price list of paid actions (D2); a service may set its own
// (consentkit.Config.Prices).
func ExampleDefaultPrices() {
	p := wallet.DefaultPrices()
	fmt.Println("exact match", p.ExactMatch, "partial match", p.PartialMatch, "certificate info", p.CertificateInfo)
	fmt.Println("retain", p.RetainSingle, "batch, each", p.RetainBatch)
	fmt.Println(p.Of(wallet.ExactMatch), p.Of(wallet.TopUp))

	// A wallet that cannot cover a price refuses the charge and changes
	// nothing (D4).
	var err error = &wallet.InsufficientFundsError{Required: p.ExactMatch, Balance: wallet.Cent}
	fmt.Println(errors.Is(err, wallet.ErrInsufficientFunds), err)
	// Output:
	// exact match 0.015 partial match 0.015 certificate info 0
	// retain 0.1 batch, each 0.1
	// 0.015 0
	// true insufficient balance: required 0.015, current balance 0.01
}
