package mp4_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/consentkit/consentkit/internal/testwait"
	"github.com/consentkit/consentkit/retain"
	"github.com/consentkit/consentkit/retain/mp4"
)

var _ retain.Converter = (*mp4.Converter)(nil)

const replayer = "replayer/node_modules/rrweb/dist"

// converter returns a Converter working in its own temporary directory. When
// a tool is missing it skips the test, saying what to install, except in CI
// (CI=true), where these tests must run.
func converter(t testing.TB, opts mp4.Config) (*mp4.Converter, string) {
	t.Helper()
	if opts.TempDir == "" {
		// t.TempDir's paths are too long for Chromium's sockets.
		dir, err := os.MkdirTemp("", "ckt")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(dir) }) // checkClean checks it is empty where it matters
		opts.TempDir = dir
	}
	opts.Replayer = replayer
	c, err := mp4.New(opts)
	var missing *mp4.MissingError
	if errors.As(err, &missing) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI must run the video tests: %v", err)
		}
		t.Skipf("video conversion test skipped: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	if _, err := exec.LookPath("ffprobe"); err != nil {
		t.Fatal("ffprobe (part of ffmpeg) not found")
	}
	return c, opts.TempDir
}

func testRecording(t testing.TB) []byte {
	t.Helper()
	raw, err := os.ReadFile("../../testdata/rrweb-form-recording.json")
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

type probe struct {
	Streams []struct {
		CodecName string `json:"codec_name"`
		PixFmt    string `json:"pix_fmt"`
		Width     int    `json:"width"`
		Height    int    `json:"height"`
	} `json:"streams"`
	Format struct {
		Duration string `json:"duration"`
	} `json:"format"`
}

func ffprobe(t *testing.T, path string) probe {
	t.Helper()
	out, err := exec.Command("ffprobe", "-v", "error", "-select_streams", "v:0",
		"-show_entries", "stream=codec_name,pix_fmt,width,height:format=duration", "-of", "json", path).Output()
	if err != nil {
		t.Fatalf("ffprobe: %v", err)
	}
	var p probe
	if err := json.Unmarshal(out, &p); err != nil || len(p.Streams) != 1 {
		t.Fatalf("ffprobe output %s: %v", out, err)
	}
	return p
}

// grayFrame decodes the frame at the given second as 8-bit gray pixels.
func grayFrame(t *testing.T, path string, at float64) []byte {
	t.Helper()
	out, err := exec.Command("ffmpeg", "-v", "error", "-ss", strconv.FormatFloat(at, 'f', 3, 64), "-i", path,
		"-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "gray", "-").Output()
	if err != nil || len(out) == 0 {
		t.Fatalf("decode frame at %.1fs: %v", at, err)
	}
	return out
}

// leftovers lists processes whose command line mentions dir.
func leftovers(dir string) []string {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmd, []byte(dir)) {
			found = append(found, e.Name()+": "+strings.ReplaceAll(string(cmd), "\x00", " ")[:min(len(cmd), 120)])
		}
	}
	return found
}

// waitGone waits for processes to exit after their parent did, and
// returns those still there when the test's deadline is near.
func waitGone(t *testing.T, dir string) []string {
	var l []string
	testwait.Until(t, 100*time.Millisecond, func() bool { l = leftovers(dir); return len(l) == 0 })
	return l
}

// checkClean closes c and checks that its browsers and their files are
// gone.
func checkClean(t *testing.T, c *mp4.Converter, tmp string) {
	t.Helper()
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if l := waitGone(t, tmp); len(l) > 0 {
		t.Errorf("processes left behind:\n%s", strings.Join(l, "\n"))
	}
	entries, _ := os.ReadDir(tmp)
	for _, e := range entries {
		t.Errorf("left in the temporary directory: %s", e.Name())
	}
}

// The real recording becomes an H.264 yuv420p MP4 with even dimensions that
// lasts as long as the recording, whose middle frame shows the form.
func TestConvertTestRecording(t *testing.T) {
	c, tmp := converter(t, mp4.Config{})
	dst := filepath.Join(t.TempDir(), "video.mp4")
	start := time.Now()
	d, err := c.Convert(context.Background(), testRecording(t), dst)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("converted 5.642 s of recording in %v", time.Since(start).Round(time.Millisecond))
	p := ffprobe(t, dst)
	s := p.Streams[0]
	if s.CodecName != "h264" || s.PixFmt != "yuv420p" || s.Width%2 != 0 || s.Height%2 != 0 || s.Width != 1024 || s.Height != 626 {
		t.Errorf("stream %+v; want h264 yuv420p 1024x626", s)
	}
	secs, _ := strconv.ParseFloat(p.Format.Duration, 64)
	if math.Abs(secs-5.642) > 0.1 {
		t.Errorf("duration %.3f s, want 5.642 ± 0.1", secs)
	}
	if math.Abs(d.Seconds()-secs) > 0.05 {
		t.Errorf("Convert reported %v, the file says %.3f s", d, secs)
	}
	// The middle frame shows the form: not one flat colour.
	px := grayFrame(t, dst, secs/2)
	hist := map[byte]int{}
	for _, v := range px {
		hist[v]++
	}
	most := 0
	for _, n := range hist {
		most = max(most, n)
	}
	if len(hist) < 16 || float64(most) > 0.97*float64(len(px)) {
		t.Errorf("the middle frame looks blank: %d gray levels, the commonest covers %.1f%%", len(hist), 100*float64(most)/float64(len(px)))
	}
	// The first frame shows the full snapshot too, not an empty page.
	first := grayFrame(t, dst, 0)
	if bytes.Equal(first, make([]byte, len(first))) {
		t.Error("the first frame is black")
	}
	checkClean(t, c, tmp)
}

// Two conversions of one recording give the same frames.
func TestConvertIsDeterministic(t *testing.T) {
	c, _ := converter(t, mp4.Config{FPS: 10})
	raw := testRecording(t)
	var frames [2][]byte
	for i := range frames {
		dst := filepath.Join(t.TempDir(), fmt.Sprint(i, ".mp4"))
		if _, err := c.Convert(context.Background(), raw, dst); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("ffmpeg", "-v", "error", "-i", dst, "-f", "framemd5", "-").Output()
		if err != nil {
			t.Fatal(err)
		}
		frames[i] = out
	}
	if !bytes.Equal(frames[0], frames[1]) {
		t.Errorf("frames differ between runs:\n%s\n---\n%s", frames[0], frames[1])
	}
}

// encoding reports whether an encoder under dir has written some of its
// video: frames are on their way.
func encoding(dir string) bool {
	found := false
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error { // its function never fails
		if err != nil || found {
			return nil // a browser's files come and go meanwhile
		}
		if ok, _ := filepath.Match("video-*.mp4", d.Name()); ok {
			if fi, err := d.Info(); err == nil && fi.Size() > 0 {
				found = true
			}
		}
		return nil
	})
	return found
}

// A cancelled conversion stops at once and leaves nothing behind.
//
// It is cancelled midway, once its encoder has written some of the video,
// however long getting there took; the recording, 3,000 frames each with
// a change to draw, is too long for any machine to finish between then and
// the cancel, and the conversion must end with the cancel's error rather
// than a video.
func TestConvertCancelled(t *testing.T) {
	c, tmp := converter(t, mp4.Config{FPS: 5})
	var long strings.Builder
	long.WriteString(`[{"type":4,"data":{"href":"http://example.test/","width":320,"height":240},"timestamp":0},
{"type":2,"data":{"node":{"type":0,"id":1,"childNodes":[{"type":2,"tagName":"html","id":2,"attributes":{},"childNodes":[
{"type":2,"tagName":"body","id":3,"attributes":{},"childNodes":[{"type":3,"textContent":"cancel me","id":4}]}]}]},"initialOffset":{"top":0,"left":0}},"timestamp":10}`)
	for i := 1; i <= 3000; i++ {
		fmt.Fprintf(&long, `,{"type":3,"data":{"source":1,"positions":[{"x":%d,"y":10,"id":3,"timeOffset":0}]},"timestamp":%d}`, i%300, 200*i)
	}
	long.WriteString("]")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dst := filepath.Join(t.TempDir(), "video.mp4")
	done := make(chan error, 1)
	go func() {
		_, err := c.Convert(ctx, json.RawMessage(long.String()), dst)
		done <- err
	}()
	var (
		err   error
		ended bool
	)
	if !testwait.Until(t, 10*time.Millisecond, func() bool {
		select {
		case err = <-done:
			ended = true // before any video was written: checked below
			return true
		default:
			return encoding(tmp)
		}
	}) {
		t.Fatal("the conversion wrote no video by the test's deadline")
	}
	cancelled := time.Now()
	cancel()
	if !ended {
		select {
		case err = <-done:
		case <-testwait.Near(t):
			t.Fatal("Convert had not returned after its cancel by the test's deadline")
		}
	}
	t.Logf("Convert returned %v after its cancel", time.Since(cancelled).Round(time.Millisecond))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Convert after cancel: %v, want context.Canceled", err)
	}
	if _, err := os.Stat(dst); !os.IsNotExist(err) {
		t.Errorf("a partial video was left at %s", dst)
	}
	checkClean(t, c, tmp)
}

// A recording that is not one fails cleanly.
func TestConvertRejectsGarbage(t *testing.T) {
	c, tmp := converter(t, mp4.Config{})
	for _, bad := range []string{`[]`, `{"a":1}`, `[{"type":4,"data":{},"timestamp":1},{"type":3,"data":{},"timestamp":2}]`} {
		if _, err := c.Convert(context.Background(), json.RawMessage(bad), filepath.Join(t.TempDir(), "v.mp4")); err == nil {
			t.Errorf("Convert(%s) succeeded", bad)
		}
	}
	checkClean(t, c, tmp)
}

// The replayed page has no network: a recording that points at a server on
// this machine makes no request to it.
func TestReplayHasNoNetwork(t *testing.T) {
	c, _ := converter(t, mp4.Config{FPS: 5})
	hits := make(chan string, 10)
	srv := newCountingServer(t, hits)
	rec := fmt.Sprintf(`[{"type":4,"data":{"href":"http://example.test/","width":320,"height":240},"timestamp":1000},
{"type":2,"data":{"node":{"type":0,"id":1,"childNodes":[{"type":2,"tagName":"html","id":2,"attributes":{},"childNodes":[
{"type":2,"tagName":"head","id":3,"attributes":{},"childNodes":[{"type":2,"tagName":"link","id":4,"attributes":{"rel":"stylesheet","href":"%[1]s/style.css"},"childNodes":[]}]},
{"type":2,"tagName":"body","id":5,"attributes":{},"childNodes":[{"type":2,"tagName":"img","id":6,"attributes":{"src":"%[1]s/pixel.png"},"childNodes":[]},
{"type":2,"tagName":"img","id":7,"attributes":{"src":"http://localhost:%[2]s/by-name.png"},"childNodes":[]}]}]}]},"initialOffset":{"top":0,"left":0}},"timestamp":1010},
{"type":3,"data":{"source":2,"type":2,"id":6,"x":1,"y":1},"timestamp":1500}]`, srv.url, srv.port)
	if _, err := c.Convert(context.Background(), json.RawMessage(rec), filepath.Join(t.TempDir(), "v.mp4")); err != nil {
		t.Fatal(err)
	}
	select {
	case path := <-hits:
		t.Errorf("the replay fetched %s", path)
	default:
	}
	// The page did try: the stylesheet and both images were refused. The
	// refusals are counted as Chromium reports them, which a busy machine
	// may do after the conversion ended.
	if !testwait.Until(t, 10*time.Millisecond, func() bool { return c.BlockedRequests() >= 3 }) {
		t.Errorf("%d requests refused, want at least 3", c.BlockedRequests())
	}
}

// A failing encoder fails the conversion and leaves nothing behind either.
func TestConvertEncoderFails(t *testing.T) {
	c, tmp := converter(t, mp4.Config{FFmpeg: "false"}) // exits 1 at once
	dst := filepath.Join(t.TempDir(), "video.mp4")
	if _, err := c.Convert(context.Background(), testRecording(t), dst); err == nil {
		t.Fatal("Convert succeeded with a broken encoder")
	}
	checkClean(t, c, tmp)
}

// A host application finds rrweb through CONSENTKIT_RRWEB_DIR, and an
// absent bundle is explained in terms a host can act on (D39).
func TestReplayerFromEnvironment(t *testing.T) {
	if _, err := mp4.New(mp4.Config{Replayer: replayer}); err != nil {
		t.Skipf("video tools not set up here: %v", err) // converter() makes CI fail for this
	}
	empty := t.TempDir()
	t.Setenv(mp4.RRWebDirEnv, empty)
	_, err := mp4.New(mp4.Config{})
	var missing *mp4.MissingError
	if !errors.As(err, &missing) || missing.Tool != "rrweb" || !strings.Contains(missing.Hint, empty) ||
		!strings.Contains(missing.Hint, "npm install rrweb@2.2.2") || !strings.Contains(missing.Hint, mp4.RRWebDirEnv) {
		t.Errorf("with an empty %s: %v", mp4.RRWebDirEnv, err)
	}
	abs, err := filepath.Abs(replayer)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(mp4.RRWebDirEnv, abs)
	if _, err := mp4.New(mp4.Config{}); err != nil {
		t.Errorf("with %s=%s: %v", mp4.RRWebDirEnv, abs, err)
	}
}

// A browser is kept warm across conversions, restarted after BrowserUses
// of them and after a failure; Parallel conversions run at once, each in a
// browser of its own, and give the same file as one at a time.
func TestWarmBrowsers(t *testing.T) {
	c, tmp := converter(t, mp4.Config{FPS: 5, BrowserUses: 2, Parallel: 2})
	rec := json.RawMessage(`[{"type":4,"data":{"href":"http://example.test/","width":320,"height":240},"timestamp":0},
{"type":2,"data":{"node":{"type":0,"id":1,"childNodes":[{"type":2,"tagName":"html","id":2,"attributes":{},"childNodes":[
{"type":2,"tagName":"body","id":3,"attributes":{},"childNodes":[{"type":3,"textContent":"warm","id":4}]}]}]},"initialOffset":{"top":0,"left":0}},"timestamp":10},
{"type":3,"data":{"source":1,"positions":[{"x":10,"y":10,"id":3,"timeOffset":0}]},"timestamp":600}]`)
	convert := func(name string) []byte {
		dst := filepath.Join(t.TempDir(), name+".mp4")
		if _, err := c.Convert(context.Background(), rec, dst); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, err := os.ReadFile(dst)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	first := convert("first")
	convert("second")
	if n := c.BrowsersStarted(); n != 1 {
		t.Errorf("two conversions in a row started %d browsers, want 1 (kept warm)", n)
	}
	convert("third") // the browser has served BrowserUses conversions
	if n := c.BrowsersStarted(); n != 2 {
		t.Errorf("after BrowserUses conversions %d browsers started, want 2", n)
	}
	// A conversion that fails midway (here: its deadline passes while it
	// shoots its frames) restarts its browser. The recording is long
	// enough, 3,000 frames each with a change to draw, that no machine
	// converts it within the deadline: the test bounds the work it asks
	// for, not how fast the machine must be.
	var long strings.Builder
	long.WriteString(string(rec[:len(rec)-1]))
	for i := 1; i <= 3000; i++ {
		fmt.Fprintf(&long, `,{"type":3,"data":{"source":1,"positions":[{"x":%d,"y":10,"id":3,"timeOffset":0}]},"timestamp":%d}`, i%300, 600+200*i)
	}
	long.WriteString("]")
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	after := c.BrowsersStarted()
	_, err := c.Convert(ctx, json.RawMessage(long.String()), filepath.Join(t.TempDir(), "late.mp4"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a conversion past its deadline: %v, want context.DeadlineExceeded", err)
	}
	convert("after-failure")
	if c.BrowsersStarted() != after+1 {
		t.Errorf("a failed conversion (%v) did not restart its browser", err)
	}
	// Two at once, each in its own browser, both identical to the first.
	var wg sync.WaitGroup
	outs := make([][]byte, 2)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i] = convert(fmt.Sprint("parallel", i))
		}()
	}
	wg.Wait()
	for i, o := range outs {
		if !bytes.Equal(o, first) {
			t.Errorf("parallel conversion %d differs from the first conversion", i)
		}
	}
	checkClean(t, c, tmp)
	if _, err := c.Convert(context.Background(), rec, filepath.Join(t.TempDir(), "closed.mp4")); !errors.Is(err, mp4.ErrClosed) {
		t.Errorf("Convert after Close: %v, want ErrClosed", err)
	}
}

// Full Chromium cannot draw frames on demand: a Converter pointed at it
// fails its conversion with an error that names what to install, and
// leaves nothing behind.
func TestConvertNeedsHeadlessShell(t *testing.T) {
	const full = "/usr/lib/chromium/chromium"
	if _, err := os.Stat(full); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI installs Debian's chromium: %v", err)
		}
		t.Skipf("full Chromium is not installed at %s", full)
	}
	c, tmp := converter(t, mp4.Config{Chromium: full})
	dst := filepath.Join(t.TempDir(), "v.mp4")
	_, err := c.Convert(context.Background(), testRecording(t), dst)
	if err == nil || !strings.Contains(err.Error(), "apt-get install chromium-headless-shell") {
		t.Fatalf("Convert with full Chromium: %v, want an error naming chromium-headless-shell", err)
	}
	if _, err := os.Stat(dst); !os.IsNotExist(err) {
		t.Errorf("a partial video was left at %s", dst)
	}
	checkClean(t, c, tmp)
}
