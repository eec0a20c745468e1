package mp4

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// browser is one running Chromium, kept warm between conversions. Each
// conversion gets a fresh browser context in it (an incognito-like profile:
// no cookies, storage or cache shared with the previous one) and one tab.
type browser struct {
	dir    string // profile and temporary files, removed by close
	ctx    context.Context
	cancel context.CancelFunc // stops the allocator: the process is killed
	uses   int
	// After a conversion the browser prepares the next one's tab in the
	// background (see Converter.prepare): spare delivers it, nil when that
	// failed, and preparing says one is on its way.
	spare     chan *tab
	preparing bool
	// encoder is the next conversion's ffmpeg, started ahead like its tab;
	// encoders counts the ones started, to name their output files.
	encoder  *encoder
	encoders int
}

// tab is a tab ready for a replay: in a fresh browser context of its own,
// cut off the network, showing the replay page (the clock, rrweb and an
// empty stage), its first frame drawn.
type tab struct {
	ctx   context.Context
	close func()
}

// ErrClosed is returned by Convert after Close.
var ErrClosed = errors.New("mp4: converter closed")

// launch starts a browser in a directory of its own under TempDir.
func (c *Converter) launch() (*browser, error) {
	dir, err := os.MkdirTemp(c.opts.TempDir, "ckmp4-")
	if err != nil {
		return nil, err
	}
	if len(dir) > maxDirLength {
		_ = os.RemoveAll(dir) // empty: made a line above
		return nil, fmt.Errorf("mp4: temporary directory %s is too long for Chromium's sockets; set Config.TempDir to a short path", dir)
	}
	flags := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(c.opts.Chromium),
		chromedp.UserDataDir(filepath.Join(dir, "profile")),
		chromedp.Env("TMPDIR=" + dir),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		// No network for the replayed page: every host resolves to nothing.
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND"),
		chromedp.Flag("deterministic-mode", true),
		chromedp.Flag("font-render-hinting", "none"),
		// Media never plays on its own; the replay page keeps every player
		// empty and paused besides (clockScript).
		chromedp.Flag("autoplay-policy", "user-gesture-required"),
		// A recording that makes the replay's JavaScript heap grow without
		// end crashes its tab, which fails the conversion, never the host.
		chromedp.Flag("js-flags", fmt.Sprintf("--max-old-space-size=%d", c.opts.MaxHeapMiB)),
		// Each tab's viewport is set to its recording's; the window only
		// needs a size.
		chromedp.WindowSize(defaultWidth, defaultHeight),
	}
	if os.Geteuid() == 0 {
		flags = append(flags, chromedp.NoSandbox) // Chromium refuses to run as root otherwise
	}
	// The browser lives in a context of its own, not the caller's: it
	// outlives the conversion that starts it.
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		append(chromedp.DefaultExecAllocatorOptions[:], flags...)...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx, chromedp.WithLogf(func(string, ...any) {}),
		chromedp.WithErrorf(func(f string, a ...any) { c.opts.Logger.Debug("chromium: " + fmt.Sprintf(f, a...)) }))
	b := &browser{dir: dir, ctx: ctx, cancel: func() { cancelCtx(); cancelAlloc() }, spare: make(chan *tab, 1)}
	// The first run starts the process and binds it to ctx, so it gets no
	// shorter context; the allocator gives up on a browser that does not
	// start.
	if err := chromedp.Do(ctx); err != nil {
		b.close()
		return nil, fmt.Errorf("mp4: start chromium: %w", err)
	}
	c.started.Add(1)
	return b, nil
}

// newTab opens a tab in a fresh browser context whose frames are drawn
// only when HeadlessExperimental.beginFrame asks. close closes both; it
// does not depend on the caller's context.
func (b *browser) newTab() (tab context.Context, close func(), err error) {
	bc, err := chromedp.CallBrowser(b.ctx, target.CreateBrowserContext, target.CreateBrowserContextParams{})
	if err != nil {
		return nil, nil, err
	}
	dispose := func() {
		ctx, stop := context.WithTimeout(b.ctx, 10*time.Second)
		defer stop()
		// Best effort: a browser context left behind ends with its browser.
		_, _ = chromedp.CallBrowser(ctx, target.DisposeBrowserContext, target.DisposeBrowserContextParams{BrowserContextID: bc.BrowserContextID}) //nolint:staticcheck // S1016: by field, as the two results only happen to match
	}
	t, err := chromedp.CallBrowser(b.ctx, target.CreateTarget, target.CreateTargetParams{
		URL: "about:blank", BrowserContextID: bc.BrowserContextID, EnableBeginFrameControl: ptr(true),
	})
	if err != nil {
		dispose()
		return nil, nil, err
	}
	tab, cancel := chromedp.NewContext(b.ctx, chromedp.WithTargetID(t.TargetID))
	return tab, func() {
		closeCtx, stop := context.WithTimeout(tab, 10*time.Second)
		defer stop()
		_ = chromedp.Cancel(closeCtx) // a tab that does not close goes with its browser context
		cancel()
		dispose()
	}, nil
}

// alive reports whether the browser still runs.
func (b *browser) alive() bool { return b.ctx.Err() == nil }

// close shuts the browser down gracefully (killing it after 10 s), waits
// for it to exit and removes its directory. A nil browser is closed.
func (b *browser) close() {
	if b == nil {
		return
	}
	closeCtx, stop := context.WithTimeout(b.ctx, 10*time.Second)
	_ = chromedp.Cancel(closeCtx) // a browser that does not close is killed: b.cancel
	stop()
	b.cancel()
	if b.encoder != nil {
		b.encoder.abort()
		b.encoder = nil
	}
	if b.preparing { // it fails at once now that the browser is gone
		if t := <-b.spare; t != nil {
			t.close()
		}
		b.preparing = false
	}
	_ = os.RemoveAll(b.dir) // best effort: a leftover stays under Config.TempDir
}

// prepare opens the next conversion's tab in the background, so that a
// conversion starts at its first frame rather than with a tab to set up.
// The tab's browser context is new and unused until that conversion.
func (c *Converter) prepare(b *browser) {
	// ffmpeg too: its start-up, loading its libraries, takes about a tenth
	// of a second. Without it the next conversion starts its own.
	b.encoder, _ = c.newEncoder(b)
	b.preparing = true
	go func() {
		t, err := c.openTab(b)
		if err != nil {
			t = nil
		}
		b.spare <- t
	}()
}

// takeTab returns the tab that prepare made, or opens one.
func (c *Converter) takeTab(b *browser) (*tab, error) {
	if b.preparing {
		b.preparing = false
		if t := <-b.spare; t != nil {
			return t, nil
		}
	}
	return c.openTab(b)
}

// takeEncoder returns the ffmpeg that prepare started, or starts one.
func (c *Converter) takeEncoder(b *browser) (*encoder, error) {
	e := b.encoder
	b.encoder = nil
	if e != nil && e.alive() {
		return e, nil
	}
	if e != nil {
		e.abort()
	}
	return c.newEncoder(b)
}

// newEncoder starts an ffmpeg writing to a file of b's directory.
func (c *Converter) newEncoder(b *browser) (*encoder, error) {
	b.encoders++
	return c.startEncoder(filepath.Join(b.dir, fmt.Sprintf("video-%d.mp4", b.encoders)))
}

// openTab opens a tab in a fresh browser context of b and readies it for a
// replay (see tab). It does not depend on any conversion's context.
func (c *Converter) openTab(b *browser) (*tab, error) {
	ctx, closeTab, err := b.newTab()
	if err != nil {
		return nil, fmt.Errorf("mp4: open a tab: %w", err)
	}
	t := &tab{ctx: ctx, close: closeTab}
	setup, stop := context.WithTimeout(ctx, time.Minute)
	defer stop()
	if err := c.isolate(ctx, setup); err != nil {
		t.close()
		return nil, fmt.Errorf("mp4: cut the replay off the network: %w", err)
	}
	if err := c.openPage(setup); err != nil {
		t.close()
		return nil, fmt.Errorf("mp4: open the replay page: %w", err)
	}
	return t, nil
}

// acquire waits until fewer than Parallel conversions run, then returns a
// warm browser, or starts one when none is idle. A browser that has died or
// served BrowserUses conversions is closed instead of being used.
func (c *Converter) acquire(ctx context.Context, conversion bool) (*browser, error) {
	if err := c.running.take(ctx, conversion); err != nil {
		return nil, err
	}
	c.mu.Lock()
	var b *browser
	for b == nil && len(c.idle) > 0 && !c.closed.Load() {
		b, c.idle = c.idle[len(c.idle)-1], c.idle[:len(c.idle)-1]
		if !b.alive() || b.uses >= c.opts.BrowserUses {
			b.close()
			b = nil
		}
	}
	c.mu.Unlock()
	if c.closed.Load() {
		c.running.give()
		return nil, ErrClosed
	}
	if b == nil {
		var err error
		if b, err = c.launch(); err != nil {
			c.running.give()
			return nil, err
		}
	}
	b.uses++
	return b, nil
}

// release makes b idle again, or closes it after a failed conversion so
// that the next one starts from a clean process.
func (c *Converter) release(b *browser, failed bool) {
	c.mu.Lock()
	if failed || c.closed.Load() {
		b.close()
	} else {
		if b.uses < c.opts.BrowserUses {
			c.prepare(b)
		}
		c.idle = append(c.idle, b)
	}
	c.mu.Unlock()
	c.running.give()
}

// Close waits for the conversions under way, then shuts down the warm
// browsers and removes their directories. Convert returns ErrClosed
// afterwards.
func (c *Converter) Close() error {
	c.closed.Store(true)
	for range c.opts.Parallel { // wait for the conversions under way
		_ = c.running.take(context.Background(), true) // never ends early
	}
	c.mu.Lock()
	for _, b := range c.idle {
		b.close()
	}
	c.idle = nil
	c.mu.Unlock()
	for range c.opts.Parallel {
		c.running.give()
	}
	return nil
}
