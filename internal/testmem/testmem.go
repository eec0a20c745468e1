// Package testmem measures the memory an operation takes, for benchmarks
// that report it.
//
//	peak := testmem.Peak(func() { h.ServeHTTP(w, req) })
//	b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
package testmem

import (
	"runtime"
	"sync/atomic"
	"time"
)

// Peak runs fn and returns the most heap in use above what was in use
// before it, sampled every millisecond (after a collection, so that the
// baseline holds live memory only). A sample can miss a peak shorter than
// a millisecond; what it reports was in use.
func Peak(fn func()) uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak atomic.Uint64
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
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
	<-sampled
	return peak.Load()
}
