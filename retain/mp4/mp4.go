// Package mp4 converts rrweb recordings to MP4 video: it replays the events
// in headless Chromium with rrweb's Replayer, steps a virtual clock one frame
// at a time, takes one screenshot per frame and encodes the frames with
// ffmpeg (H.264, yuv420p, even dimensions, +faststart). It implements
// retain.Converter.
//
// Frames are deterministic, not screen-recorded in real time: the page's
// performance.now and requestAnimationFrame are replaced by a virtual clock
// that Go advances, and CSS animations follow that clock. The video lasts as
// long as the recording, within one frame; frames before the first full
// snapshot show that snapshot; the viewport is the recording's (from its
// meta event). A frame in which nothing can have changed reuses the previous
// screenshot.
//
// Recordings are untrusted. The replay page has no network: every host name
// resolves to nothing, and the page itself is loaded from memory, never from
// a URL. Each conversion gets its own temporary directory, which holds
// Chromium's profile and temporary files and is removed afterwards; Chromium
// is shut down gracefully, and nothing is left running after success,
// failure or cancellation.
//
// It needs Debian's chromium and ffmpeg (and fonts-liberation for stable
// text), and rrweb's browser bundle from npm:
//
//	apt-get install chromium ffmpeg fonts-liberation
//	npm ci --prefix retain/mp4/replayer
package mp4

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// Config configures a Converter. Zero values mean the defaults.
type Config struct {
	// Chromium is the browser binary: default /usr/lib/chromium/chromium
	// (Debian's real binary, not its wrapper script), else chromium or
	// chromium-browser on PATH.
	Chromium string
	// FFmpeg is the encoder binary: default ffmpeg on PATH.
	FFmpeg string
	// Replayer is the directory of rrweb's dist files (rrweb.umd.min.cjs,
	// style.min.css) of rrweb 2.2.2 from npm (D39). Default: the directory
	// named by the environment variable CONSENTKIT_RRWEB_DIR, else
	// DefaultReplayer, which exists only in a checkout of this repository
	// after `npm ci --prefix retain/mp4/replayer`. A host application
	// installs rrweb with `npm install rrweb@2.2.2` and points this at its
	// node_modules/rrweb/dist.
	Replayer string
	// FPS is the frame rate: default 25.
	FPS int
	// Timeout bounds one conversion: default 2 minutes plus five times the
	// recording's length.
	Timeout time.Duration
	// CompressIdle, when positive, shortens every pause in the recording
	// longer than it to it. The video is then shorter than the recording.
	CompressIdle time.Duration
	// MaxDuration bounds the video: a recording that spans more (after
	// CompressIdle) is refused with a permanent *RecordingError before any
	// work is planned, so that no timestamp — one event dated months after
	// the others, say — can make a conversion's frames, memory or time
	// unbounded. Default 1 hour.
	MaxDuration time.Duration
	// TempDir holds each conversion's working directory: default
	// os.TempDir(). Keep it short (Chromium makes Unix sockets in it).
	TempDir string
	// Logger receives Chromium's and ffmpeg's complaints: default
	// slog.Default().
	Logger *slog.Logger
}

// maxDirLength bounds the path of a conversion's directory: Chromium puts
// Unix sockets under it, whose paths may not pass 107 bytes.
const maxDirLength = 60

// DefaultReplayer is where `npm ci --prefix retain/mp4/replayer` puts rrweb,
// relative to the repository root.
const DefaultReplayer = "retain/mp4/replayer/node_modules/rrweb/dist"

// RRWebDirEnv names the environment variable that points Config.Replayer at
// rrweb's dist directory when the Config leaves it empty.
const RRWebDirEnv = "CONSENTKIT_RRWEB_DIR"

// RRWebHint says what to do when rrweb's dist files are not in dir: in a
// checkout of this repository one npm command; in a host application, where
// to install rrweb and how to point the library at it.
func RRWebHint(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	return fmt.Sprintf("no rrweb bundle (rrweb.umd.min.cjs, style.min.css) in %s. In a checkout of consentkit run "+
		"`npm ci --prefix retain/mp4/replayer`; in your application run `npm install rrweb@2.2.2` and set %s "+
		"(or mp4.Config.Replayer and httpadapter.Config.RRWebDir) to the absolute path of its node_modules/rrweb/dist", abs, RRWebDirEnv)
}

// MissingError says which tool a Converter cannot find, and how to get it.
type MissingError struct {
	Tool string // chromium, ffmpeg or rrweb
	Hint string
}

func (e *MissingError) Error() string {
	return fmt.Sprintf("mp4: %s not found; %s", e.Tool, e.Hint)
}

// Converter converts recordings; it is safe for concurrent use, each
// conversion running its own browser.
type Converter struct {
	opts    Config
	page    string // the replay page, built once
	blocked atomic.Int64
}

// BlockedRequests returns how many network requests replayed pages have
// made, all of them refused, since the Converter was made.
func (c *Converter) BlockedRequests() int64 { return c.blocked.Load() }

// New finds the tools and returns a Converter. The error is a *MissingError
// when one of them is missing.
func New(opts Config) (*Converter, error) {
	var err error
	if opts.Chromium, err = findTool(opts.Chromium, []string{"/usr/lib/chromium/chromium"}, "chromium", "chromium-browser"); err != nil {
		return nil, &MissingError{"chromium", "install it with: apt-get install chromium fonts-liberation"}
	}
	if opts.FFmpeg, err = findTool(opts.FFmpeg, nil, "ffmpeg"); err != nil {
		return nil, &MissingError{"ffmpeg", "install it with: apt-get install ffmpeg"}
	}
	if opts.Replayer == "" {
		opts.Replayer = cmp.Or(os.Getenv(RRWebDirEnv), DefaultReplayer)
	}
	js, err1 := os.ReadFile(filepath.Join(opts.Replayer, "rrweb.umd.min.cjs"))
	css, err2 := os.ReadFile(filepath.Join(opts.Replayer, "style.min.css"))
	if err1 != nil || err2 != nil {
		return nil, &MissingError{"rrweb", RRWebHint(opts.Replayer)}
	}
	if opts.MaxDuration <= 0 {
		opts.MaxDuration = time.Hour
	}
	if opts.FPS <= 0 {
		opts.FPS = 25
	}
	if opts.TempDir == "" {
		opts.TempDir = os.TempDir()
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Converter{opts: opts, page: buildPage(string(js), string(css))}, nil
}

// findTool returns path when set (it must exist), else the first of the
// candidates that exists, else the first of names found on PATH.
func findTool(path string, candidates []string, names ...string) (string, error) {
	if path != "" {
		return exec.LookPath(path)
	}
	for _, c := range candidates {
		if st, err := os.Stat(c); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return c, nil
		}
	}
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", os.ErrNotExist
}

// Convert replays events and writes the video to dst. It returns the
// video's duration.
func (c *Converter) Convert(ctx context.Context, events json.RawMessage, dst string) (time.Duration, error) {
	tl, replay, err := parseTimeline(events, c.opts.CompressIdle, c.opts.MaxDuration)
	if err != nil {
		return 0, err
	}
	timeout := c.opts.Timeout
	if timeout <= 0 {
		timeout = 2*time.Minute + 5*tl.total
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	dir, err := os.MkdirTemp(c.opts.TempDir, "ckmp4-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	if len(dir) > maxDirLength {
		return 0, fmt.Errorf("mp4: temporary directory %s is too long for Chromium's sockets; set Config.TempDir to a short path", dir)
	}

	frames := tl.frames(c.opts.FPS)
	enc, err := c.startEncoder(ctx, dst)
	if err != nil {
		return 0, err
	}
	err = c.replay(ctx, dir, tl, replay, frames, enc.stdin)
	if cerr := enc.finish(err != nil); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(dst)
		if ctx.Err() != nil {
			return 0, fmt.Errorf("mp4: %w (%v)", ctx.Err(), err)
		}
		return 0, err
	}
	return time.Duration(len(frames)) * time.Second / time.Duration(c.opts.FPS), nil
}

// replay runs Chromium in dir and writes one JPEG per frame to w.
func (c *Converter) replay(ctx context.Context, dir string, tl timeline, events []byte, frames []frame, w io.Writer) error {
	flags := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(c.opts.Chromium),
		chromedp.UserDataDir(filepath.Join(dir, "profile")),
		chromedp.Env("TMPDIR=" + dir),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		// No network for the replayed page: every host resolves to nothing.
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND"),
		chromedp.Flag("disable-gpu-vsync", true),
		chromedp.Flag("disable-frame-rate-limit", true),
		chromedp.Flag("font-render-hinting", "none"),
		chromedp.WindowSize(tl.width, tl.height),
	}
	if os.Geteuid() == 0 {
		flags = append(flags, chromedp.NoSandbox) // Chromium refuses to run as root otherwise
	}
	// The browser lives in a context that the caller's cancellation does not
	// tear down, so that it can always be closed gracefully; the steps run
	// in one that it does cancel.
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.WithoutCancel(ctx),
		append(chromedp.DefaultExecAllocatorOptions[:], flags...)...)
	defer cancelAlloc()
	browserCtx, cancelBrowser := chromedp.NewContext(allocCtx, chromedp.WithLogf(func(string, ...any) {}),
		chromedp.WithErrorf(func(f string, a ...any) { c.opts.Logger.Debug("chromium: " + fmt.Sprintf(f, a...)) }))
	defer cancelBrowser()
	defer func() {
		closeCtx, stop := context.WithTimeout(browserCtx, 10*time.Second)
		defer stop()
		chromedp.Cancel(closeCtx)
	}()
	stepCtx, stopSteps := context.WithCancel(browserCtx)
	defer stopSteps()
	defer context.AfterFunc(ctx, stopSteps)()

	if err := c.isolate(stepCtx); err != nil {
		return fmt.Errorf("mp4: cut the replay off the network: %w", err)
	}
	if err := c.load(stepCtx, tl, events); err != nil {
		return fmt.Errorf("mp4: load the replay: %w", err)
	}
	var (
		shot     []byte
		prevAt   time.Duration
		animated bool
	)
	for i, f := range frames {
		ms := float64(f.at-prevAt) / float64(time.Millisecond)
		prevAt = f.at
		running, err := chromedp.Run(stepCtx, chromedp.Evaluate[int]("__consentkit.advance("+strconv.FormatFloat(ms, 'f', -1, 64)+")"))
		if err != nil {
			return fmt.Errorf("mp4: frame %d: %w", i, err)
		}
		if shot == nil || f.dirty || running > 0 || animated {
			res, err := chromedp.Call(stepCtx, page.CaptureScreenshot, page.CaptureScreenshotParams{
				Format: page.CaptureScreenshotFormatJpeg, Quality: ptr[int64](90), OptimizeForSpeed: ptr(true),
			})
			if err != nil {
				return fmt.Errorf("mp4: screenshot of frame %d: %w", i, err)
			}
			shot = res.Data
		}
		animated = running > 0
		if _, err := w.Write(shot); err != nil {
			return fmt.Errorf("mp4: encoder: %w", err)
		}
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

// isolate makes the page fail every request it makes, IP literals and
// local files included; the host resolver rules already leave no host name
// to reach.
func (c *Converter) isolate(ctx context.Context) error {
	err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*fetch.EventRequestPaused); ok {
			c.blocked.Add(1)
			// Commands cannot run inside a listener.
			go chromedp.Call(ctx, fetch.FailRequest, fetch.FailRequestParams{
				RequestID: e.RequestID, ErrorReason: network.ErrorReasonBlockedByClient,
			})
		}
	})
	if err != nil {
		return err
	}
	_, err = chromedp.Call(ctx, fetch.Enable, fetch.EnableParams{})
	return err
}

// load opens the replay page from memory, sizes the viewport and starts the
// replayer at time zero of the virtual clock.
func (c *Converter) load(ctx context.Context, tl timeline, events []byte) error {
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		return err
	}
	if _, err := chromedp.Call(ctx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
		Width: int64(tl.width), Height: int64(tl.height), DeviceScaleFactor: 1,
	}); err != nil {
		return err
	}
	tree, err := chromedp.Call(ctx, page.GetFrameTree, cdp.Empty{})
	if err != nil {
		return err
	}
	if _, err := chromedp.Call(ctx, page.SetDocumentContent, page.SetDocumentContentParams{
		FrameID: tree.FrameTree.Frame.ID, HTML: c.page,
	}); err != nil {
		return err
	}
	rules, _ := json.Marshal(replayRules)
	// events is JSON that json.Marshal wrote, hence a plain JavaScript literal.
	_, err = chromedp.Run(ctx, chromedp.Evaluate[bool]("__consentkit.load("+string(events)+","+string(rules)+")"))
	return err
}

// encoder is a running ffmpeg reading JPEG frames on stdin.
type encoder struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *bytes.Buffer
}

func (c *Converter) startEncoder(ctx context.Context, dst string) (*encoder, error) {
	cmd := exec.CommandContext(ctx, c.opts.FFmpeg,
		"-hide_banner", "-loglevel", "error", "-nostdin",
		"-f", "image2pipe", "-framerate", strconv.Itoa(c.opts.FPS), "-c:v", "mjpeg", "-i", "-",
		"-vf", "pad=ceil(iw/2)*2:ceil(ih/2)*2,format=yuv420p",
		"-c:v", "libx264", "-preset", "veryfast", "-crf", "23", "-pix_fmt", "yuv420p",
		"-movflags", "+faststart", "-f", "mp4", "-y", dst)
	var stderr bytes.Buffer
	cmd.Stderr = &limitedWriter{w: &stderr, n: 8 << 10}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("mp4: start ffmpeg: %w", err)
	}
	return &encoder{cmd: cmd, stdin: stdin, stderr: &stderr}, nil
}

// finish closes ffmpeg's input and waits for it; abort kills it first.
func (e *encoder) finish(abort bool) error {
	if abort {
		e.cmd.Process.Kill()
	}
	e.stdin.Close()
	err := e.cmd.Wait()
	if err != nil && !abort {
		return fmt.Errorf("mp4: ffmpeg: %v: %s", err, bytes.TrimSpace(e.stderr.Bytes()))
	}
	return nil
}

// limitedWriter keeps the first n bytes written to it.
type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(len(p), l.n)
		l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}
