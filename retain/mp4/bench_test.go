package mp4_test

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/consentkit/consentkit/retain/mp4"
)

// BenchmarkConvert converts the test recording (5.642 s) and reports
//   - x-realtime: recording length / conversion time (above 1 is faster than
//     real time),
//   - peak-MiB: the highest total PSS of the conversion's processes
//     (Chromium's whole process tree and ffmpeg), sampled every 50 ms.
//
// go test -run '^$' -bench Convert -benchtime 5x ./retain/mp4
func BenchmarkConvert(b *testing.B) {
	c, tmp := converter(b, mp4.Config{})
	raw := testRecording(b)
	out := filepath.Join(tmp, "bench-out") // under tmp, so ffmpeg's command line is matched too
	if err := os.MkdirAll(out, 0o755); err != nil {
		b.Fatal(err)
	}
	var (
		mu   sync.Mutex
		peak int64
		stop = make(chan struct{})
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			if kb := pssKB(tmp); kb > 0 {
				mu.Lock()
				peak = max(peak, kb)
				mu.Unlock()
			}
		}
	}()
	var total time.Duration
	for b.Loop() {
		start := time.Now()
		if _, err := c.Convert(context.Background(), raw, filepath.Join(out, "v.mp4")); err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
	}
	close(stop)
	<-done
	perRun := total / time.Duration(b.N)
	b.ReportMetric(5.642/perRun.Seconds(), "x-realtime")
	b.ReportMetric(float64(peak)/1024, "peak-MiB")
}

// pssKB sums the proportional set size of the processes whose command line
// mentions dir.
func pssKB(dir string) int64 {
	var sum int64
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmd, []byte(dir)) {
			continue
		}
		f, err := os.Open(filepath.Join("/proc", e.Name(), "smaps_rollup"))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "Pss:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
				sum += kb
				break
			}
		}
		f.Close()
	}
	return sum
}
