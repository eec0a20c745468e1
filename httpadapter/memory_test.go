package httpadapter_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/internal/testmem"
	"github.com/consentkit/consentkit/internal/teststore"
)

// BenchmarkRecordingMemory is the memory a consent and a certificate-info
// take on a 64 MiB recording (64 chunks of 1 MiB) on SQLite, alone and
// eight at once: the recording is hashed as it is read, a chunk at a
// time, so each takes a few MiB above the server's memory, not the
// recording. The peak heap above the baseline is reported as peak-MiB.
//
//	go test -run '^$' -bench RecordingMemory -benchtime 2x ./httpadapter
func BenchmarkRecordingMemory(b *testing.B) {
	_, h := capturing(b, teststore.SQLite(b), httpadapter.Config{CapturePerMinute: -1, CaptureStartsPerMinute: -1,
		CaptureBytesPerMinute: -1, CapturePropertyBytesPerMinute: -1})
	event := `{"type":3,"timestamp":1,"data":{"x":"` + strings.Repeat("a", 1<<20-200) + `"}}`
	record := func() started {
		s := startSession(b, h)
		for seq := range 64 {
			rec := call(h, "POST", "/capture/sessions/"+s.SessionID+"/events", formOrigin, s.UploadToken,
				fmt.Sprintf(`{"seq":%d,"events":[%s]}`, seq, event))
			if rec.Code != 200 {
				b.Fatalf("chunk %d: %d %s", seq, rec.Code, rec.Body)
			}
		}
		return s
	}
	consentBody := `{"consents":[{"text":"I agree.","types":["tcpa"]}],"url":"` + formPage + `"}`
	b.Run("consent", func(b *testing.B) {
		var worst uint64
		for b.Loop() {
			b.StopTimer()
			s := record()
			b.StartTimer()
			peak := testmem.Peak(func() {
				if rec := call(h, "POST", "/capture/sessions/"+s.SessionID+"/consent", formOrigin, s.UploadToken, consentBody); rec.Code != 201 {
					b.Fatalf("consent: %d %s", rec.Code, rec.Body)
				}
			})
			worst = max(worst, peak)
		}
		b.ReportMetric(float64(worst)/(1<<20), "peak-MiB")
	})
	s := record()
	if rec := call(h, "POST", "/capture/sessions/"+s.SessionID+"/consent", formOrigin, s.UploadToken, consentBody); rec.Code != 201 {
		b.Fatalf("consent: %d %s", rec.Code, rec.Body)
	}
	info := func() {
		rec := serve(h, request{path: "/verify/certificate-info", token: acmeToken,
			body: `{"certificate_id":"` + s.CertificateID + `","company_id":"acme","property_id":"acme-form"}`})
		if rec.Code != 200 {
			b.Fatalf("certificate-info: %d %s", rec.Code, rec.Body)
		}
	}
	for _, n := range []int{1, 8} {
		b.Run(fmt.Sprintf("certificate-info/%d-at-once", n), func(b *testing.B) {
			var worst uint64
			for b.Loop() {
				peak := testmem.Peak(func() {
					var wg sync.WaitGroup
					for range n {
						wg.Go(info)
					}
					wg.Wait()
				})
				worst = max(worst, peak)
			}
			b.ReportMetric(float64(worst)/(1<<20), "peak-MiB")
		})
	}
}
