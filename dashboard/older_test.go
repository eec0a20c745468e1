package dashboard_test

import (
	"fmt"
	"html"
	"regexp"
	"strings"
	"testing"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/dashboard"
	"github.com/consentkit/consentkit/internal/teststore"
)

// The "Older" link of the newest certificates leads to the next page:
// certificates the first page did not show, none it did.
func TestOlderLinkPages(t *testing.T) {
	svc, _ := fixture(t, teststore.Memory(t))
	for i := range 60 {
		sid := fmt.Sprintf("s-page-%02d", i)
		_, err := svc.StartSession(ctx, consentkit.SessionParams{ID: sid, CompanyID: "acme", PropertyID: "acme-web"})
		must(t, err)
		_, err = svc.IssueCertificate(ctx, consentkit.CertificateParams{ID: fmt.Sprintf("page-%02d", i), CompanyID: "acme", PropertyID: "acme-web",
			SessionID: sid, Records: []consent.Record{{Text: consentText}}})
		must(t, err)
	}
	h, err := dashboard.New(svc, dashboard.Config{OperatorSecret: secret})
	must(t, err)
	b := newBrowser(t, h)
	b.login()
	ids := regexp.MustCompile(`/certificates/([^"/]+)"><code>`)
	_, first := b.get("/dashboard/companies/acme/certificates")
	seen := map[string]bool{}
	for _, m := range ids.FindAllStringSubmatch(first, -1) {
		seen[m[1]] = true
	}
	m := regexp.MustCompile(`<a href="\?([^"]*)">Older</a>`).FindStringSubmatch(first)
	if m == nil {
		t.Fatalf("the first page of %d certificates has no Older link", len(seen))
	}
	_, second := b.get("/dashboard/companies/acme/certificates?" + html.UnescapeString(m[1]))
	got := ids.FindAllStringSubmatch(second, -1)
	if len(got) == 0 {
		t.Fatalf("the Older page (?%s) shows no certificate", html.UnescapeString(m[1]))
	}
	var again []string
	for _, g := range got {
		if seen[g[1]] {
			again = append(again, g[1])
		}
	}
	if len(again) > 0 {
		t.Errorf("the Older link (?%s) shows the first page again: %d of its certificates, e.g. %s", html.UnescapeString(m[1]), len(again), strings.Join(again[:min(3, len(again))], ", "))
	}
}
