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

// idClass is the characters of an identifier (consent.ValidID) as a
// character class of a form input's pattern, which a browser reads as a
// JavaScript regular expression with the v flag (so "-" is escaped).
// Forms render it and consent.MaxIDLength (the funcs idClass and maxID),
// so that they take what the Go API takes; TestIDClass holds it to
// consent.ValidID.
const idClass = `[A-Za-z0-9._:\-]`

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
	"yes":   yesNo,
	"money": money,
	// pair passes a page and one of its items to a template.
	"pair": func(p *page, item any) any {
		return struct {
			Page *page
			Item any
		}{p, item}
	},
	"velocity": velocityCount,
	"idClass":  func() string { return idClass },
	"maxID":    func() int { return consent.MaxIDLength },
	"found":    foundText,
	"ms":       func(d time.Duration) string { return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 1, 64) },
}).Parse(pagesHTML))

// money shows an amount in US dollars (D1), exactly, from its digits and
// never through a float: a sign, "$", the dollars grouped by thousands
// and at least the cents, more decimals when the amount has them (prices
// such as 0.015): $25.50, $1,000.00, $0.015, -$3.00. It is the one way
// the dashboard shows money.
func money(a wallet.Amount) string {
	s := a.String()
	sign := ""
	if s[0] == '-' {
		sign, s = "-", s[1:]
	}
	whole, frac, _ := strings.Cut(s, ".")
	for len(frac) < 2 {
		frac += "0"
	}
	var b strings.Builder
	b.WriteString(sign + "$")
	for i := range len(whole) {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteByte(whole[i])
	}
	b.WriteString("." + frac)
	return b.String()
}
