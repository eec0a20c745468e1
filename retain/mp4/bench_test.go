package mp4_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/consentkit/consentkit/retain/mp4"
)

// BenchmarkConvert converts recordings with a warm browser and reports
//   - x-realtime: seconds of recording converted per second of wall time
//     (above 1 is faster than real time),
//   - peak-MiB/conv: the highest total PSS of the conversions' processes
//     (Chromium's whole process tree and ffmpeg), sampled every 200 ms,
//     divided by the conversions running at once.
//
// form is the project's form recording (5.642 s) at the default 25 frames
// per second; form-15fps is the same at Config.FPS 15 (fewer frames, the
// cheaper setting for long recordings); short is its first half second
// after the full snapshot, converted back to back, and short-idle the same
// with a second's pause before each conversion; parallel2 converts the form
// recording twice at once (Config.Parallel 2), for throughput.
//
// go test -run '^$' -bench Convert -benchtime 10x ./retain/mp4
func BenchmarkConvert(b *testing.B) {
	raw := testRecording(b)
	short := firstHalfSecond(b, raw)
	b.Run("form", func(b *testing.B) { benchConvert(b, raw, 5.642, mp4.Config{}) })
	b.Run("form-15fps", func(b *testing.B) { benchConvert(b, raw, 5.642, mp4.Config{FPS: 15}) })
	b.Run("short", func(b *testing.B) { benchConvert(b, short, 0.5, mp4.Config{}) })
	b.Run("short-idle", func(b *testing.B) { benchConvertIdle(b, short, 0.5) })
	b.Run("parallel2", func(b *testing.B) { benchConvert(b, raw, 5.642, mp4.Config{Parallel: 2}) })
}

// recordingsVar names a directory of recordings (*.json) that
// BenchmarkConvertFiles converts, one sub-benchmark per file: TestFixtures
// writes its recordings there with CONSENTKIT_FIXTURES_DIR, and a host can
// put its own.
const recordingsVar = "CONSENTKIT_BENCH_RECORDINGS"

// BenchmarkConvertFiles converts each recording of the directory that
// CONSENTKIT_BENCH_RECORDINGS names, as BenchmarkConvert does the form
// recording, so that other converters can be measured on the same files:
//
//	CONSENTKIT_FIXTURES_DIR=/tmp/rec go test -run TestFixtures ./retain/mp4
//	CONSENTKIT_BENCH_RECORDINGS=/tmp/rec go test -run '^$' -bench ConvertFiles -benchtime 5x ./retain/mp4
func BenchmarkConvertFiles(b *testing.B) {
	dir := os.Getenv(recordingsVar)
	if dir == "" {
		b.Skipf("%s names no directory of recordings to convert", recordingsVar)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		b.Fatalf("no recordings (*.json) in %s: %v", dir, err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		b.Run(name, func(b *testing.B) { benchConvert(b, raw, span(b, raw), mp4.Config{}) })
	}
}

// span returns the seconds from a recording's first event to its last.
func span(b *testing.B, raw []byte) float64 {
	var events []struct{ Timestamp float64 }
	if err := json.Unmarshal(raw, &events); err != nil || len(events) < 2 {
		b.Fatalf("not a recording: %v", err)
	}
	return (events[len(events)-1].Timestamp - events[0].Timestamp) / 1000
}

func benchConvert(b *testing.B, raw []byte, seconds float64, cfg mp4.Config) {
	parallel := max(cfg.Parallel, 1)
	c, tmp := converter(b, cfg)
	out := filepath.Join(tmp, "bench-out") // under tmp, so ffmpeg's command line is matched too
	if err := os.MkdirAll(out, 0o755); err != nil {
		b.Fatal(err)
	}
	// Warm up: the browsers start once, outside the measurement.
	convertN(b, c, raw, out, parallel)
	var (
		mu   sync.Mutex
		peak int64
		stop = make(chan struct{})
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		t := time.NewTicker(200 * time.Millisecond)
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
	start := time.Now()
	for b.Loop() {
		convertN(b, c, raw, out, parallel)
	}
	took := time.Since(start)
	close(stop)
	<-done
	b.ReportMetric(seconds*float64(b.N*parallel)/took.Seconds(), "x-realtime")
	b.ReportMetric(float64(peak)/1024/float64(parallel), "peak-MiB/conv")
}

// benchConvertIdle converts raw one at a time with a pause of a second
// between conversions, as a server that is not saturated does, and reports
// x-realtime over the conversions alone: the latency of one conversion
// when its browser had time to prepare the tab (see Converter).
func benchConvertIdle(b *testing.B, raw []byte, seconds float64) {
	c, tmp := converter(b, mp4.Config{})
	dst := filepath.Join(tmp, "idle.mp4")
	if _, err := c.Convert(context.Background(), raw, dst); err != nil {
		b.Fatal(err)
	}
	var took time.Duration
	for b.Loop() {
		b.StopTimer()
		time.Sleep(time.Second)
		b.StartTimer()
		start := time.Now()
		if _, err := c.Convert(context.Background(), raw, dst); err != nil {
			b.Fatal(err)
		}
		took += time.Since(start)
	}
	b.ReportMetric(seconds*float64(b.N)/took.Seconds(), "x-realtime")
}

// convertN converts raw n times at once.
func convertN(b *testing.B, c *mp4.Converter, raw []byte, out string, n int) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Convert(context.Background(), raw, filepath.Join(out, fmt.Sprint(i, ".mp4"))); err != nil {
				b.Error(err)
			}
		}()
	}
	wg.Wait()
}

// firstHalfSecond cuts a recording to its meta event, its first full
// snapshot and the events of the half second after it.
func firstHalfSecond(b *testing.B, raw []byte) []byte {
	var events []json.RawMessage
	if err := json.Unmarshal(raw, &events); err != nil {
		b.Fatal(err)
	}
	var cut []json.RawMessage
	snapshotAt := -1.0
	for _, e := range events {
		var h struct {
			Type      int
			Timestamp float64
		}
		if err := json.Unmarshal(e, &h); err != nil {
			b.Fatal(err)
		}
		switch {
		case snapshotAt < 0 && h.Type == 4:
			cut = append(cut, e)
		case snapshotAt < 0 && h.Type == 2:
			snapshotAt = h.Timestamp
			cut = append(cut, e)
		case snapshotAt >= 0 && h.Timestamp <= snapshotAt+500:
			cut = append(cut, e)
		}
	}
	// The last event may come before the half second ends: a final one
	// marks it, so the recording spans exactly 0.5 s after the snapshot.
	first := 0.0
	if err := json.Unmarshal(cut[0], &struct{ Timestamp *float64 }{&first}); err != nil {
		b.Fatal(err)
	}
	end := fmt.Sprintf(`{"type":5,"data":{"tag":"end","payload":{}},"timestamp":%v}`, first+(snapshotAt-first)+500)
	cut = append(cut, json.RawMessage(end))
	out, err := json.Marshal(cut)
	if err != nil {
		b.Fatal(err)
	}
	return out
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
		_ = f.Close() // read only: its Close loses nothing
	}
	return sum
}

// BenchmarkConvertHeap converts a generated recording of about 16 MiB — a
// full snapshot of 900 KiB of paragraphs, then a second of mutations of
// about 1 KiB each — and reports go-heap-x: the most this process's Go heap
// held above its level before the conversion (runtime/metrics, sampled
// every millisecond), divided by the recording's size. The collector runs
// at GOGC 5 meanwhile, so that the figure is what the conversion holds
// rather than garbage the collector has not reached. Chromium's memory is
// not counted.
//
// go test -run '^$' -bench ConvertHeap -benchtime 3x ./retain/mp4
func BenchmarkConvertHeap(b *testing.B) {
	raw := largeRecording(16 << 20)
	c, tmp := converter(b, mp4.Config{})
	dst := filepath.Join(tmp, "heap.mp4")
	var peak float64
	defer debug.SetGCPercent(debug.SetGCPercent(5))
	for b.Loop() {
		runtime.GC()
		before := heapObjects()
		stop := make(chan struct{})
		done := make(chan uint64)
		go func() {
			var most uint64
			t := time.NewTicker(time.Millisecond)
			defer t.Stop()
			for {
				most = max(most, heapObjects())
				select {
				case <-stop:
					done <- most
					return
				case <-t.C:
				}
			}
		}()
		if _, err := c.Convert(context.Background(), raw, dst); err != nil {
			b.Fatal(err)
		}
		close(stop)
		most := <-done
		peak = max(peak, float64(most-min(most, before))/float64(len(raw)))
	}
	b.ReportMetric(peak, "go-heap-x")
	b.ReportMetric(float64(len(raw))/(1<<20), "recording-MiB")
}

// heapObjects returns the bytes of the Go heap's objects, live or not yet
// swept.
func heapObjects() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// largeRecording returns a recording of about size bytes: a meta event, a
// full snapshot of 900 KiB of paragraphs (a captured event is at most a
// chunk, 1 MiB by default), and a second of attribute mutations of about
// 1 KiB each.
func largeRecording(size int) []byte {
	var b bytes.Buffer
	b.WriteString(`[{"type":4,"data":{"href":"https://forms.example/","width":1024,"height":768},"timestamp":1000},`)
	b.WriteString(`{"type":2,"timestamp":1001,"data":{"initialOffset":{"left":0,"top":0},"node":{"type":0,"id":1,"childNodes":[{"type":2,"id":2,"tagName":"html","attributes":{},"childNodes":[{"type":2,"id":3,"tagName":"body","attributes":{},"childNodes":[`)
	para := strings.Repeat("Lorem ipsum dolor sit amet, consectetur adipiscing elit. ", 16)
	id := 10
	for i := 0; b.Len() < 900<<10; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"type":2,"id":%d,"tagName":"p","attributes":{"class":"c%d"},"childNodes":[{"type":3,"id":%d,"textContent":%q}]}`, id, i%7, id+1, para)
		id += 2
	}
	b.WriteString(`]}]}]}}}`)
	pad := strings.Repeat("x", 900)
	n := (size - b.Len()) / 1000
	for k := range n {
		fmt.Fprintf(&b, `,{"type":3,"data":{"source":0,"texts":[],"attributes":[{"id":3,"attributes":{"data-pad":"%s%d"}}],"removes":[],"adds":[]},"timestamp":%d}`, pad, k, 1002+k*998/n)
	}
	b.WriteString(`,{"type":5,"data":{"tag":"end","payload":{}},"timestamp":2001}]`)
	return b.Bytes()
}
