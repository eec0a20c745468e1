package dashboard_test

import (
	"strings"
	"testing"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/dashboard"
	"github.com/consentkit/consentkit/internal/testmem"
	"github.com/consentkit/consentkit/internal/teststore"
)

// BenchmarkCertificatePageMemory is the memory the certificate page takes
// on a certificate of a 64 MiB recording (64 chunks of 1 MiB) on SQLite,
// whose integrity it checks: the recording is hashed as it is read, a
// chunk at a time. The peak heap above the baseline is reported as
// peak-MiB.
//
//	go test -run '^$' -bench CertificatePageMemory -benchtime 3x ./dashboard
func BenchmarkCertificatePageMemory(b *testing.B) {
	svc, _ := fixture(b, teststore.SQLite(b))
	_, err := svc.StartSession(ctx, consentkit.SessionParams{ID: "big", CompanyID: "acme", PropertyID: "acme-web"})
	must(b, err)
	event := `{"type":3,"timestamp":1,"data":{"x":"` + strings.Repeat("a", 1<<20-200) + `"}}`
	for range 64 {
		_, err := svc.AppendEvents(ctx, "big", []byte("["+event+"]"))
		must(b, err)
	}
	rec, err := svc.Recording(ctx, "big")
	must(b, err)
	_, err = svc.IssueCertificate(ctx, consentkit.CertificateParams{ID: "cert-big", CompanyID: "acme", PropertyID: "acme-web",
		SessionID: "big", Records: []consent.Record{{Text: consentText}}, RecordingSHA256: consent.DigestOf(string(rec))})
	must(b, err) // rec is dead from here on: the collector frees its 64 MiB
	h, err := dashboard.New(svc, dashboard.Config{OperatorSecret: secret})
	must(b, err)
	br := newBrowser(b, h)
	br.login()
	var worst uint64
	for b.Loop() {
		peak := testmem.Peak(func() {
			code, body := br.get("/dashboard/companies/acme/certificates/cert-big")
			if code != 200 || strings.Contains(body, "integrity check failed") {
				b.Fatalf("certificate page: %d %s", code, body)
			}
		})
		worst = max(worst, peak)
	}
	b.ReportMetric(float64(worst)/(1<<20), "peak-MiB")
}
