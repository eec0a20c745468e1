package httpadapter_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/internal/teststore"
)

// A record of exactly 64 KiB matches when sent with white space around
// it: consent text and terms are trimmed before they are compared (D10,
// D11), and before their 64 KiB limit applies.
func TestLongestRecordMatchesUntrimmed(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e := setup(t, open(t))
		text := strings.Repeat("a", 64<<10)
		_, err := e.svc.IssueCertificate(ctx, consentkit.CertificateParams{ID: "cert-long", CompanyID: "acme", PropertyID: "acme-web",
			SessionID: "s2", Origin: "https://acme.example/quote", Records: []consent.Record{{Text: text, Types: []string{"tcpa"}, OptInAt: created}}})
		must(t, err)
		h := e.handler(t, httpadapter.Config{})
		answer := `{"valid":true,"consent_opt_in":"2026-11-20T10:00:00Z","origin":"https://acme.example/quote",%s"verification_type":"first_party"}`
		for _, c := range []struct {
			r    request
			want string
		}{
			{request{path: "/verify/match", token: acmeToken, body: matchBody("cert-long", "acme", text+"\n")}, fmt.Sprintf(answer, `"consent_types":["tcpa"],`)},
			{request{path: "/verify/partial-match", token: acmeToken, body: termBody("cert-long", "acme", " "+text)}, fmt.Sprintf(answer, "")}, // D12: no types
		} {
			rec := serve(h, c.r)
			if rec.Code != 200 {
				t.Errorf("%s with the 64 KiB record and white space: %d %.200s; want 200", c.r.path, rec.Code, rec.Body)
				continue
			}
			checkBody(t, rec.Body.Bytes(), c.want)
		}
		for _, r := range []request{
			{path: "/verify/match", token: acmeToken, body: matchBody("cert-long", "acme", text+"a\n")},
			{path: "/verify/partial-match", token: acmeToken, body: termBody("cert-long", "acme", "a"+text)},
		} {
			if rec := serve(h, r); rec.Code != 400 {
				t.Errorf("%s with 64 KiB and a byte: %d %.200s; want 400", r.path, rec.Code, rec.Body)
			}
		}
		checkBalances(t, e, map[string]string{"acme": "0.03"})
	})
}
