// Package mp4 converts rrweb recordings to MP4 video: it replays the events
// in headless Chromium with rrweb's Replayer, steps a virtual clock one frame
// at a time, takes one screenshot per frame and encodes the frames with
// ffmpeg (H.264, yuv420p, even dimensions, +faststart). It implements
// retain.Converter.
//
//	conv, err := mp4.New(mp4.Config{}) // a *MissingError names a missing tool and how to get it
//	defer conv.Close()                 // stops its warm browsers
//	w, err := retain.NewWorker(retain.WorkerConfig{Service: svc, Converter: conv, Videos: retain.Dir{Root: "videos"}})
//	go w.Run(ctx)
//
// Frames are deterministic, not screen-recorded in real time: the same
// recording gives the same file, byte for byte. The page's performance.now
// and requestAnimationFrame are replaced by a virtual clock that Go
// advances, and CSS animations and transitions follow that clock. Scrolling
// is instant and the text caret does not blink. Video and audio elements
// are shown as empty players, paused at their start, whatever the
// recording's play, pause and seek events say: a recording names a
// player's media but does not hold it, and the replay has no network to
// fetch it (see below). A data: URL is not played either, and a <source>
// child is renamed, so that no player enters its loading state, whose
// spinner Chromium turns on real time. The tab emulates a focused
// window, so focus rings and carets appear where the replayer focuses an
// element, as in rrweb's own player. The video lasts as long as the
// recording, within one frame; frames before the first full snapshot show
// that snapshot; the viewport is the recording's (from its meta event). The
// tab draws only when the converter asks, once per frame, and the frame's
// screenshot comes back with the drawing (HeadlessExperimental.beginFrame,
// a feature of Chromium's headless shell): a frame in which nothing can
// have changed, or which Chromium draws without damage, reuses the previous
// screenshot. Frames travel to ffmpeg as PNG, so the H.264 encoding is the
// only lossy step.
//
// Work is bounded whatever a recording says: one larger than
// Config.MaxRecordingBytes, or spanning more than Config.MaxDuration (an
// event dated months after the others, say), is refused with a permanent
// *RecordingError before anything is planned, so frames, memory and time
// stay bounded; the replay's JavaScript heap is capped (Config.MaxHeapMiB)
// and each conversion has a deadline (Config.Timeout). Timestamps may start
// at any value, 0 included. The viewport is bounded too: a side beyond
// 4096 CSS pixels is clamped to 4096. And since a frame where the page
// animates is drawn and shot whole, at a cost of about its pixels, a
// conversion draws at most as many pixels as Config.MaxDuration's frames
// (at Config.FPS) of a 2560×1600 viewport: a recording whose frames times
// its viewport's pixels exceed that — a 4096×4096 viewport for more than
// about 14 minutes of the default hour, say — is refused at once with a
// permanent *RecordingError that says how long a recording of that
// viewport may be. Recordings of common viewports (2560×1440, 1920×1080
// and smaller) are never refused for it. Attest is not bounded so: it
// draws one frame, at the recording's viewport.
//
// Browsers are kept warm: a Converter runs up to Config.Parallel
// conversions at once, each in a Chromium of its own that serves
// Config.BrowserUses conversions before it is restarted (and is restarted
// after any failure). Every conversion gets a fresh browser context — no
// cookies, storage or cache shared with the one before — and one tab.
// Between conversions each browser readies the next one's tab and starts
// its ffmpeg, so that a conversion starts at its first frame. Close stops
// the browsers and removes their directories.
//
// Recordings are untrusted. The replay page has no network: every host name
// resolves to nothing, every request the page makes is refused, and the
// page itself is loaded from memory, never from a URL. Each browser has its
// own temporary directory, which holds its profile, temporary files and the
// video being encoded, and is removed when it stops; the video is moved to
// the destination when its conversion succeeds, and removed when it fails.
//
// The same replay attests consent (Converter.Attest): replayed up to the
// consent moment in a warm browser of the pool, each consent element, found
// by the node id the capture snippet sent, is measured by the snippet's own
// code (capture.MeasureJS), and the viewport is shot as PNG, so that the
// server need not believe what the consumer's browser said it showed.
//
//	a, err := conv.Attest(ctx, recording, consentAtMillis, []int{nodeID})
//	// a.Consents[0].Visible, .Text, .HiddenText; a.Screenshot; a.Unreproducible
//
// The replay reproduces what the recording holds: the DOM, its text and
// attributes, inline styles and the stylesheets the recorder could read,
// their changes, form state, scroll positions, the viewport, same-origin
// frames and open shadow roots. It cannot reproduce what the recording only
// links to, having no network — stylesheets of other origins that the
// recorder could not read, web fonts, images, video, other origins' frames
// — nor canvas drawings, which the snippet does not record; the
// Attestation lists those the page holds (Unreproducible), so that a
// difference they explain is not taken for a mismatch. A canvas is
// replayed blank: an image the recording gives it (rr_dataURL, which other
// rrweb recorders write) is dropped, its width and height are bounded as
// the viewport is, and it gets no drawing buffer, so that no canvas takes
// memory outside the replay's bounded heap. It measures in
// Chromium with this machine's fonts at a device pixel ratio of 1, whatever
// the consumer's browser and screen: text metrics, and so line breaks and
// clipping, may differ a little. No script of the page runs.
//
// It needs Debian's chromium-headless-shell (full Chromium cannot draw on
// demand) and ffmpeg, with
// fonts-liberation for stable text, and rrweb's browser bundle from npm
// (D39):
//
//	apt-get install chromium-headless-shell ffmpeg fonts-liberation
//	npm ci --prefix retain/mp4/replayer
package mp4

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/headlessexperimental"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// Config configures a Converter. Zero values mean the defaults.
type Config struct {
	// Chromium is Chromium's headless shell binary, which renders as
	// Chromium does and draws frames on demand (full Chromium does not, and
	// fails the first conversion with an error that says so). Default:
	// Debian's /usr/lib/chromium/chromium-headless-shell (package
	// chromium-headless-shell), else chromium-headless-shell on PATH. Chrome
	// for Testing's chrome-headless-shell works too.
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
	//
	// It bounds the pixels a conversion draws as well: at most those of
	// its frames at FPS in a 2560×1600 viewport. A recording in a larger
	// viewport may span proportionally less (4096×4096: about 14 minutes of
	// an hour), else it is refused with a permanent *RecordingError before
	// it is replayed; one whose viewport has 2560×1600 pixels or fewer is
	// bounded by MaxDuration alone.
	MaxDuration time.Duration
	// MaxRecordingBytes bounds the recording a conversion takes: default
	// 64 MiB, the service's own bound (consentkit.Config.MaxRecordingBytes).
	// A larger one is refused with a permanent *RecordingError.
	MaxRecordingBytes int
	// Parallel is how many conversions run at once, each with a warm
	// browser of its own: default 1. Further calls to Convert wait. Each
	// takes up to about 600 MiB while it runs (BenchmarkConvert measures
	// it), so size this to the machine's memory and cores.
	Parallel int
	// BrowserUses is how many conversions a browser serves before it is
	// restarted: default 100. A browser is also restarted after any failed
	// conversion and whenever it has died.
	BrowserUses int
	// MaxHeapMiB bounds the JavaScript heap of the replay: default 512. A
	// recording that needs more fails its conversion.
	MaxHeapMiB int
	// TempDir holds each browser's working directory: default
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

// Converter converts recordings. It keeps up to Config.Parallel browsers
// warm and runs as many conversions at once, each in a fresh browser
// context; it is safe for concurrent use. Close it to stop the browsers.
type Converter struct {
	opts    Config
	page    string // the replay page, built once
	running *slots // a slot per conversion or attestation under way, up to Parallel
	mu      sync.Mutex
	idle    []*browser // warm browsers waiting for a conversion, the latest used last
	closed  atomic.Bool
	blocked atomic.Int64
	started atomic.Int64
}

// BrowsersStarted returns how many browsers the Converter has started.
func (c *Converter) BrowsersStarted() int64 { return c.started.Load() }

// BlockedRequests returns how many network requests replayed pages have
// made, all of them refused, since the Converter was made.
func (c *Converter) BlockedRequests() int64 { return c.blocked.Load() }

// New finds the tools and returns a Converter. The error is a *MissingError
// when one of them is missing.
func New(opts Config) (*Converter, error) {
	var err error
	if opts.Chromium, err = findTool(opts.Chromium, []string{"/usr/lib/chromium/chromium-headless-shell"},
		"chromium-headless-shell", "chrome-headless-shell"); err != nil {
		return nil, &MissingError{"chromium", "install it with: apt-get install chromium-headless-shell fonts-liberation"}
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
	if opts.FPS < 0 || opts.Timeout < 0 || opts.CompressIdle < 0 || opts.MaxDuration < 0 || opts.MaxRecordingBytes < 0 ||
		opts.Parallel < 0 || opts.BrowserUses < 0 || opts.MaxHeapMiB < 0 {
		return nil, errors.New("mp4: Config values must not be negative (zero means the default)")
	}
	if opts.MaxDuration == 0 {
		opts.MaxDuration = time.Hour
	}
	opts.MaxRecordingBytes = cmp.Or(opts.MaxRecordingBytes, 64<<20)
	opts.Parallel = cmp.Or(opts.Parallel, 1)
	opts.BrowserUses = cmp.Or(opts.BrowserUses, 100)
	opts.MaxHeapMiB = cmp.Or(opts.MaxHeapMiB, 512)
	if opts.FPS <= 0 {
		opts.FPS = 25
	}
	if opts.TempDir == "" {
		opts.TempDir = os.TempDir()
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Converter{opts: opts, page: buildPage(string(js), string(css)), running: newSlots(opts.Parallel)}, nil
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
// video's duration. It waits for a free browser when Parallel conversions
// are under way.
func (c *Converter) Convert(ctx context.Context, events json.RawMessage, dst string) (time.Duration, error) {
	if len(events) > c.opts.MaxRecordingBytes {
		return 0, recordingErrorf("the recording is %d bytes, more than the %d a conversion takes (Config.MaxRecordingBytes)", len(events), c.opts.MaxRecordingBytes)
	}
	tl, replay, err := readRecording(events, c.opts.CompressIdle, c.opts.MaxDuration)
	if err != nil {
		return 0, err
	}
	if err := tl.checkDrawing(c.opts.FPS, c.opts.MaxDuration); err != nil {
		return 0, err
	}
	timeout := c.opts.Timeout
	if timeout <= 0 {
		timeout = 2*time.Minute + 5*tl.total
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	frames := tl.frames(c.opts.FPS)
	b, err := c.acquire(ctx, true)
	if err != nil {
		return 0, err
	}
	enc, err := c.takeEncoder(b)
	if err != nil {
		c.release(b, true)
		return 0, err
	}
	stopKill := context.AfterFunc(ctx, enc.kill) // a write to a stuck ffmpeg ends too
	err = c.replay(ctx, b, tl, replay, frames, enc.stdin)
	if cerr := enc.finish(err != nil); err == nil {
		err = cerr
	}
	stopKill()
	if err == nil {
		err = moveFile(enc.out, dst)
	}
	_ = os.Remove(enc.out) // gone once moved; else left in b's directory, removed with it
	c.release(b, err != nil)
	if err != nil {
		_ = os.Remove(dst) // what a failed copy wrote, if anything
		if ctx.Err() != nil {
			return 0, fmt.Errorf("mp4: %w (%w)", ctx.Err(), err)
		}
		return 0, err
	}
	return time.Duration(len(frames)) * time.Second / time.Duration(c.opts.FPS), nil
}

// moveFile renames src to dst, or copies it where a rename cannot cross
// file systems.
func moveFile(src, dst string) error {
	if os.Rename(src, dst) == nil {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }() // read only: its Close loses nothing
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// replay opens a tab in a fresh browser context of b and writes one PNG
// per frame to w.
//
// The tab draws a frame only when HeadlessExperimental.beginFrame asks for
// one, and that call returns the frame's screenshot: one round trip per
// frame, no frame drawn that is not shot, and nothing drawn on Chromium's
// own clock. A frame in which nothing can have changed (no event, no
// running animation) is not drawn at all: it is the previous frame again,
// and its time is added to the next advance of the virtual clock. A frame
// drawn without damage is the previous screenshot again.
func (c *Converter) replay(ctx context.Context, b *browser, tl timeline, events []json.RawMessage, frames []frame, w io.Writer) error {
	// The tab lives in a context that the caller's cancellation does not
	// tear down, so that it can always be closed cleanly; the steps run in
	// one that it does cancel.
	t, err := c.takeTab(b)
	if err != nil {
		return err
	}
	defer t.close()
	tab, stop := context.WithCancel(t.ctx)
	defer stop()
	defer context.AfterFunc(ctx, stop)()
	if err := c.load(tab, tl, events); err != nil {
		return fmt.Errorf("mp4: load the replay: %w", err)
	}
	// Frames go to the encoder from a goroutine of their own, so that
	// Chromium renders the next frames while ffmpeg encodes these.
	out := make(chan []byte, 16)
	written := make(chan error, 1)
	go func() {
		var err error
		for shot := range out {
			if err == nil {
				if _, err = w.Write(shot); err != nil {
					err = fmt.Errorf("mp4: encoder: %w", err)
					stop()
				}
			}
		}
		written <- err
	}()
	err = c.shoot(tab, frames, out)
	close(out)
	if werr := <-written; werr != nil {
		return werr
	}
	return err
}

// shoot advances the replay's clock frame by frame and sends each frame's
// screenshot to out.
func (c *Converter) shoot(ctx context.Context, frames []frame, out chan<- []byte) error {
	var (
		shot     []byte
		pending  time.Duration // clock time not yet given to the page
		prevAt   time.Duration
		animated bool
	)
	for i, f := range frames {
		pending += f.at - prevAt
		prevAt = f.at
		if shot == nil || f.dirty || animated {
			ms := float64(pending) / float64(time.Millisecond)
			pending = 0
			running, err := chromedp.Run(ctx, chromedp.Evaluate[int]("__consentkit.advance("+strconv.FormatFloat(ms, 'f', -1, 64)+")"))
			if err != nil {
				return fmt.Errorf("mp4: frame %d: %w", i, err)
			}
			animated = running > 0
			res, err := chromedp.Call(ctx, headlessexperimental.BeginFrame, headlessexperimental.BeginFrameParams{Screenshot: png})
			if err != nil {
				return fmt.Errorf("mp4: screenshot of frame %d: %w", i, err)
			}
			if len(res.ScreenshotData) > 0 {
				shot = res.ScreenshotData
			} else if shot == nil {
				return fmt.Errorf("mp4: Chromium returned no screenshot of frame %d", i)
			}
		}
		select {
		case out <- shot:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// png is how frames are shot: lossless, and on the machines measured
// (BenchmarkConvert) cheaper in all than JPEG — Chromium's fast PNG
// encoder costs less than its JPEG encoder and ffmpeg decodes either
// quickly.
var png = &headlessexperimental.ScreenshotParams{Format: headlessexperimental.ScreenshotParamsFormatPng, OptimizeForSpeed: true}

func ptr[T any](v T) *T { return &v }

// isolate makes the page of the tab ctx fail every request it makes, IP
// literals and local files included; the host resolver rules already leave
// no host name to reach. The listener lives as long as the tab; call runs
// the commands.
func (c *Converter) isolate(ctx, call context.Context) error {
	err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*fetch.EventRequestPaused); ok {
			c.blocked.Add(1)
			// Commands cannot run inside a listener.
			// One that fails leaves the request paused: the page gets
			// nothing either way.
			go func() {
				_, _ = chromedp.Call(ctx, fetch.FailRequest, fetch.FailRequestParams{
					RequestID: e.RequestID, ErrorReason: network.ErrorReasonBlockedByClient,
				})
			}()
		}
	})
	if err != nil {
		return err
	}
	_, err = chromedp.Call(call, fetch.Enable, fetch.EnableParams{})
	return err
}

// openPage opens the replay page from memory, as the focused window, and
// draws it.
func (c *Converter) openPage(ctx context.Context) error {
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		return err
	}
	// The tab behaves as the focused window, so that the replayer's
	// focus() calls show focus rings and carets as in the recorded page.
	if _, err := chromedp.Call(ctx, emulation.SetFocusEmulationEnabled, emulation.SetFocusEmulationEnabledParams{Enabled: true}); err != nil {
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
	// The first frame a new tab draws comes back without its screenshot:
	// draw until one does, before the replay starts, so that every frame
	// of the replay is shot.
	for try := 0; ; try++ {
		res, err := chromedp.Call(ctx, headlessexperimental.BeginFrame, headlessexperimental.BeginFrameParams{Screenshot: png})
		var cerr *cdproto.Error
		if errors.As(err, &cerr) && cerr.Code == -32601 { // method not found
			return fmt.Errorf("%s cannot draw frames on demand (HeadlessExperimental.beginFrame); "+
				"the converter needs Chromium's headless shell: apt-get install chromium-headless-shell", c.opts.Chromium)
		}
		if err != nil {
			return err
		}
		if len(res.ScreenshotData) > 0 {
			return nil
		}
		if try == 5 {
			return errors.New("no screenshots from Chromium")
		}
	}
}

// load sizes the viewport to the recording's and starts the replayer at
// time zero of the virtual clock.
func (c *Converter) load(ctx context.Context, tl timeline, events []json.RawMessage) error {
	if _, err := chromedp.Call(ctx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
		Width: int64(tl.width), Height: int64(tl.height), DeviceScaleFactor: 1,
	}); err != nil {
		return err
	}
	if err := handOver(ctx, events); err != nil {
		return err
	}
	rules, _ := json.Marshal(replayRules)
	_, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("__consentkit.load(__consentkit.taken(),"+string(rules)+")"))
	return err
}

// pieceBytes is about how much of a recording one call of handOver sends.
const pieceBytes = 1 << 20

// handOver gives the tab's page the events, which __consentkit.taken()
// then returns as one array. They go in pieces of about pieceBytes, each a
// JSON array that json.Marshal validates, compacts and escapes (so a plain
// JavaScript literal), so that the recording is never copied whole here:
// the Go heap holds the recording and one piece, in its three forms (the
// array, the expression, the command), rather than several copies of the
// whole. An event larger than a piece goes alone.
func handOver(ctx context.Context, events []json.RawMessage) error {
	for i := 0; i < len(events); {
		j, size := i+1, len(events[i])
		for j < len(events) && size+len(events[j]) <= pieceBytes {
			size += len(events[j])
			j++
		}
		piece, err := json.Marshal(events[i:j])
		if err != nil {
			return err
		}
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("__consentkit.take("+string(piece)+")")); err != nil {
			return err
		}
		i = j
	}
	return nil
}

// encoder is a running ffmpeg reading PNG frames on stdin and writing the
// video to out. It is started before its conversion (see takeEncoder), so
// that no conversion waits for ffmpeg to start.
type encoder struct {
	cmd    *exec.Cmd
	out    string
	stdin  io.WriteCloser
	stderr *bytes.Buffer
	exited chan struct{} // closed when the process has ended; err is then set
	err    error
}

func (c *Converter) startEncoder(out string) (*encoder, error) {
	// The input's format, codec and rate are given, so ffmpeg need not
	// probe it: by default it would hold the first 5 MB of frames (about
	// a hundred) before encoding any, and a short recording's whole
	// encoding would wait for the end of its replay.
	cmd := exec.Command(c.opts.FFmpeg,
		"-hide_banner", "-loglevel", "error", "-nostdin",
		"-probesize", "32", "-analyzeduration", "0", "-f", "image2pipe", "-framerate", strconv.Itoa(c.opts.FPS), "-c:v", "png", "-i", "-",
		"-vf", "pad=ceil(iw/2)*2:ceil(ih/2)*2,format=yuv420p",
		"-c:v", "libx264", "-preset", "veryfast", "-crf", "23", "-pix_fmt", "yuv420p",
		"-movflags", "+faststart", "-f", "mp4", "-y", out)
	var stderr bytes.Buffer
	cmd.Stderr = &limitedWriter{w: &stderr, n: 8 << 10}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("mp4: start ffmpeg: %w", err)
	}
	e := &encoder{cmd: cmd, out: out, stdin: stdin, stderr: &stderr, exited: make(chan struct{})}
	go func() {
		e.err = cmd.Wait()
		close(e.exited)
	}()
	return e, nil
}

// alive reports whether ffmpeg still runs.
func (e *encoder) alive() bool {
	select {
	case <-e.exited:
		return false
	default:
		return true
	}
}

// kill stops ffmpeg at once. It fails only when ffmpeg has exited, which
// finish learns from Wait.
func (e *encoder) kill() { _ = e.cmd.Process.Kill() }

// abort kills ffmpeg and waits for it to exit.
func (e *encoder) abort() { _ = e.finish(true) } // finish(true) returns nil

// finish closes ffmpeg's input and waits for it; abort kills it first.
func (e *encoder) finish(abort bool) error {
	if abort {
		e.kill()
	}
	// Closing the pipe fails only when it is closed already; ffmpeg's exit
	// tells whether it read the frames.
	_ = e.stdin.Close()
	<-e.exited
	if e.err != nil && !abort {
		return fmt.Errorf("mp4: ffmpeg: %w: %s", e.err, bytes.TrimSpace(e.stderr.Bytes()))
	}
	return nil
}

// limitedWriter keeps the first n bytes written to it.
type limitedWriter struct {
	w *bytes.Buffer
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
