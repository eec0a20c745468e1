package dashboard

import (
	_ "embed"
	"encoding/hex"
	"html/template"
	"strconv"
	"strings"
	"time"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/wallet"
)

//go:embed pages.html
var pagesHTML string

var pages = template.Must(template.New("pages").Funcs(template.FuncMap{
	// when shows a time in UTC, to the second.
	"when": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05 UTC")
	},
	// short shows the first 12 hex digits of a digest.
	"short": func(d consent.Digest) string { return hex.EncodeToString(d[:6]) },
	"yes": func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	},
	"money": money,
	// pair passes a page and one of its items to a template.
	"pair": func(p *page, item any) any {
		return struct {
			Page *page
			Item any
		}{p, item}
	},
	"ms": func(d time.Duration) string { return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 1, 64) },
}).Parse(pagesHTML))

// money shows an amount of dollars exactly (D1), with at least three
// decimals so that prices (0.015) and balances line up: 3.500, 0.015,
// 0.000001.
func money(a wallet.Amount) string {
	s := a.String()
	whole, frac, _ := strings.Cut(s, ".")
	for len(frac) < 3 {
		frac += "0"
	}
	return whole + "." + frac
}
