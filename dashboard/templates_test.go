package dashboard

import (
	"math"
	"testing"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/wallet"
)

func TestMoney(t *testing.T) {
	for a, want := range map[wallet.Amount]string{
		0:                                 "$0.00",
		wallet.Microdollar:                "$0.000001",
		15_000:                            "$0.015",
		wallet.Cent:                       "$0.01",
		25*wallet.Dollar + 500_000:        "$25.50",
		999 * wallet.Dollar:               "$999.00",
		1000 * wallet.Dollar:              "$1,000.00",
		1_234_567*wallet.Dollar + 890_000: "$1,234,567.89",
		wallet.MaxBalance:                 "$1,000,000,000.00",
		-3 * wallet.Dollar:                "-$3.00",
		-15_000:                           "-$0.015",
		math.MinInt64:                     "-$9,223,372,036,854.775808",
		math.MaxInt64:                     "$9,223,372,036,854.775807",
	} {
		if got := money(a); got != want {
			t.Errorf("money(%d) = %q, want %q", int64(a), got, want)
		}
	}
}

func TestDetailFields(t *testing.T) {
	for _, tc := range []struct {
		detail string
		want   string // key=value;… or "raw"
	}{
		{`{"amount":2.5,"reference":"invoice 7","balance":1234.5}`, "amount=$2.50;reference=invoice 7;balance=$1,234.50;"},
		{`{"charged":0.015,"valid":true,"index":3}`, "charged=$0.015;valid=yes;index=3;"},
		{`{"permissions":null,"events":[],"allowed_origins":["https://a.example","https://b.example"]}`, "permissions=none;events=none;allowed origins=https://a.example, https://b.example;"},
		{`{"ids":["a,b","c"],"nested":{"a": [1, {"b": null}]}}`, `ids=["a,b","c"];nested={"a":[1,{"b":null}]};`},
		{`{"amount":"not money","n":1e3}`, "amount=not money;n=1e3;"},
		{`{}`, ""},
		{``, "raw"},
		{`null`, "raw"},
		{`[1,2]`, "raw"},
		{`{"a":1} {"b":2}`, "raw"},
		{`{"a":1`, "raw"},
		{`not json`, "raw"},
	} {
		fields, ok := detailFields(tc.detail)
		got := "raw"
		if ok {
			got = ""
			for _, f := range fields {
				got += f.Key + "=" + f.Value + ";"
			}
		}
		if got != tc.want {
			t.Errorf("detailFields(%s) = %s, want %s", tc.detail, got, tc.want)
		}
	}
}

// A velocity count at consent.MaxVelocity, where counting stops, says it
// may be more.
func TestVelocityCount(t *testing.T) {
	for n, want := range map[int]string{0: "0", 7: "7", consent.MaxVelocity - 1: "999", consent.MaxVelocity: "1000 or more"} {
		if got := velocityCount(n); got != want {
			t.Errorf("velocityCount(%d) = %q, want %q", n, got, want)
		}
	}
}
