package httpadapter_test

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/internal/teststore"
)

// peakHeap runs fn and returns the most heap in use above what was in
// use before it, sampled every millisecond (after a collection, so that
// the baseline holds live memory only).
func peakHeap(fn func()) uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak atomic.Uint64
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > base && ms.HeapAlloc-base > peak.Load() {
				peak.Store(ms.HeapAlloc - base)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	fn()
	close(done)
	return peak.Load()
}

// BenchmarkRecordingMemory is the memory a consent and a certificate-info
// take on a 64 MiB recording (64 chunks of 1 MiB) on SQLite, alone and
// eight at once: the recording is hashed as it is read, a chunk at a
// time, so each takes a few MiB above the server's memory, not the
// recording. The peak heap above the baseline is reported as peak-MiB.
//
//	go test -run '^$' -bench RecordingMemory -benchtime 2x ./httpadapter
func BenchmarkRecordingMemory(b *testing.B) {
	e, h := capturing(&testing.T{}, teststore.SQLite(b), httpadapter.Config{CapturePerMinute: -1, CaptureStartsPerMinute: -1})
	_ = e
	event := `{"type":3,"timestamp":1,"data":{"x":"` + strings.Repeat("a", 1<<20-200) + `"}}`
	record := func() started {
		s := startSession(&testing.T{}, h)
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
			peak := peakHeap(func() {
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
				peak := peakHeap(func() {
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
