package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/consentkit/consentkit/internal/testwait"
)

// Recordings come from the public through capture, so a hostile one must
// get a clear result without taking the server down or its memory past a
// bound: a recording with one event dated 198 days after the others is
// refused at once (permanently, with the reason in the log), and one of
// 20,000 events in a second is converted. The memory of the server's whole
// process tree (the server, Chromium's processes and ffmpeg) is sampled
// throughout. The test waits for both results as long as its binary's
// -timeout allows: how long they take depends on the machine, not on
// anything the test checks.
func TestServerSurvivesHostileRecordings(t *testing.T) {
	videos := t.TempDir()
	s := start(t, "-store", "sqlite", "-dsn", filepath.Join(t.TempDir(), "c.db"), "-video-dir", videos, "-replayer", replayer)
	s.needsConversion(t)
	token := s.guideToken(t)

	var (
		mu   sync.Mutex
		peak int64 // KiB
		stop = make(chan struct{})
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			kb := treePSS(s.cmd.Process.Pid)
			mu.Lock()
			peak = max(peak, kb)
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()

	const start = 1795301391553 // ms
	var (
		outlier = []string{
			`{"type":4,"data":{"href":"http://example.test/","width":640,"height":480},"timestamp":1795301391553}`,
			fullSnapshot(start + 10),
			fmt.Sprintf(`{"type":3,"data":{"source":1,"positions":[{"x":5,"y":5,"id":3,"timeOffset":0}]},"timestamp":%d}`, start+500),
			fmt.Sprintf(`{"type":3,"data":{"source":1,"positions":[{"x":9,"y":9,"id":3,"timeOffset":0}]},"timestamp":%d}`, start+198*24*3600*1000),
		}
		many = []string{`{"type":4,"data":{"href":"http://example.test/","width":640,"height":480},"timestamp":1795301391553}`, fullSnapshot(start + 10)}
	)
	// The work of a conversion grows with the events replayed: 100,000
	// took a minute on an idle two-core machine, and more than four on a
	// busy one. 20,000 in one second, 20 events a millisecond, still make
	// every frame replay hundreds of events, at a fifth of the work.
	const events, span = 20_000, 1_000 // 20k mouse moves over 1 s
	for i := range events {
		many = append(many, fmt.Sprintf(`{"type":3,"data":{"source":1,"positions":[{"x":%d,"y":%d,"id":3,"timeOffset":0}]},"timestamp":%d}`,
			i%600, (i/600)%440, start+20+i*span/events))
	}
	outlierID := captureSession(t, s, outlier, token)
	manyID := captureSession(t, s, many, token)

	status := func(id string) (string, map[string]any) {
		_, body := s.call(t, "GET", "/api/integrations/acme/sessions/"+id, token, "")
		st, _ := body["rrweb_to_video_status"].(string)
		return st, body
	}
	began := time.Now()
	var outlierStatus, manyStatus string
	var manyBody map[string]any
	testwait.Until(t, 250*time.Millisecond, func() bool {
		outlierStatus, _ = status(outlierID)
		manyStatus, manyBody = status(manyID)
		return (outlierStatus == "failed" || outlierStatus == "converted") && (manyStatus == "failed" || manyStatus == "converted")
	})
	close(stop)
	<-done
	t.Logf("peak memory of the server's process tree: %d MiB; both settled in %v", peak/1024, time.Since(began).Round(time.Millisecond))

	if outlierStatus != "failed" {
		t.Errorf("the outlier recording: %q, want failed", outlierStatus)
	}
	if !strings.Contains(s.output(), "Config.MaxDuration") {
		t.Errorf("the log does not say why the outlier recording was refused:\n%s", tail(s.output(), 3000))
	}
	if manyStatus != "converted" {
		t.Errorf("the recording of %d events: %q, want converted\n%s", events, manyStatus, tail(s.output(), 3000))
	} else {
		v, _ := manyBody["video"].(map[string]any)
		if d, _ := v["duration_seconds"].(float64); d < 0.95 || d > 1.1 {
			t.Errorf("the video of a 1.02 s recording lasts %v s", v["duration_seconds"])
		}
	}
	// A generous bound: a conversion takes about 600 MiB; the point is that
	// nothing grows with the recording's claimed length or event count.
	if peak > 2<<20 {
		t.Errorf("the server's process tree peaked at %d MiB, more than 2048", peak/1024)
	}
	if code, _ := s.call(t, "GET", "/api/integrations/acme/sessions/"+manyID, token, ""); code != 200 {
		t.Errorf("the server no longer answers: %d", code)
	}
	s.stop(t)
}

// fullSnapshot is a small page: html, body and a paragraph (node 3 is the
// body).
func fullSnapshot(ts int) string {
	return fmt.Sprintf(`{"type":2,"data":{"node":{"type":0,"id":1,"childNodes":[{"type":2,"tagName":"html","id":2,"attributes":{},"childNodes":[`+
		`{"type":2,"tagName":"body","id":3,"attributes":{},"childNodes":[{"type":2,"tagName":"p","id":4,"attributes":{},"childNodes":[`+
		`{"type":3,"textContent":"A form","id":5}]}]}]}]},"initialOffset":{"top":0,"left":0}},"timestamp":%d}`, ts)
}

// captureSession records events through the capture API, gives consent
// and retains the session with token.
func captureSession(t *testing.T, s *running, events []string, token string) string {
	t.Helper()
	id, _ := recordConsent(t, s, events, "")
	if code, v := s.call(t, "POST", "/api/integrations/acme/retain/"+id, token, ""); code != 200 {
		t.Fatalf("retain: %d %v", code, v)
	}
	return id
}

// treePSS sums the proportional set size, in KiB, of pid and all its
// descendants.
func treePSS(pid int) int64 {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The parent is the second field after the command, which is in
		// parentheses and may hold spaces.
		rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
		if f := strings.Fields(rest); len(f) > 1 {
			if ppid, err := strconv.Atoi(f[1]); err == nil {
				children[ppid] = append(children[ppid], p)
			}
		}
	}
	var sum int64
	for queue := []int{pid}; len(queue) > 0; queue = queue[1:] {
		p := queue[0]
		queue = append(queue, children[p]...)
		f, err := os.Open(filepath.Join("/proc", strconv.Itoa(p), "smaps_rollup"))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "Pss:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				sum += kb
				break
			}
		}
		_ = f.Close() // read only: its Close loses nothing
	}
	return sum
}
