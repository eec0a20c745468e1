package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
)

// TestCertificatesFindSaysWhenCut: a consumer with more certificates than
// one search answers (consent.MaxPage) is not shown a cut list as if it
// were all of them: the output says that more exist.
func TestCertificatesFindSaysWhenCut(t *testing.T) {
	b := acmeSession(t)
	ctx := context.Background()
	const n = consent.MaxPage + 1
	for i := range n {
		b.clock.tick()
		_, err := b.svc.IssueCertificate(ctx, consentkit.CertificateParams{ID: fmt.Sprintf("c%04d", i), CompanyID: "acme",
			PropertyID: "web", SessionID: "s1", Email: "jane@example.com",
			Records: []consent.Record{{Text: "I agree.", OptInAt: b.clock.Now()}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	out := b.ok(t, "certificates", "find", "-email", "jane@example.com")
	rows := strings.Count(out, "\nc0")
	if rows < n && !strings.Contains(out, "may have older ones") {
		t.Errorf("certificates find listed %d of the consumer's %d certificates and did not say the list is cut:\n...%s",
			rows, n, out[max(0, len(out)-300):])
	}
}
