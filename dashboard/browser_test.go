package dashboard_test

import (
	"context"
	"image/color"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/dashboard"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/internal/testwait"
	"github.com/consentkit/consentkit/retain"
)

// chromium is Debian's Chromium binary (package chromium).
const chromium = "/usr/lib/chromium/chromium"

// need skips t when tool is missing, saying how to get it, except in CI
// (CI=true), which must run the browser test.
func need(t *testing.T, tool, hint string) {
	t.Helper()
	if _, err := exec.LookPath(tool); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI must run the dashboard's browser test: %s not found (%s)", tool, hint)
		}
		t.Skipf("dashboard browser test skipped: %s not found (%s)", tool, hint)
	}
}

// TestDashboardInBrowser: an operator, in headless Chromium, logs in with
// the keyboard, sets a bot-verdict rule, issues a token, copies a
// property's snippet tag, finds a certificate by the consumer's email,
// sees its attestation's screenshot and its insights, plays its video and
// revokes the token; every step is checked in the rendered page and against the
// service. A screenshot of every page, at desktop and at phone size, is
// saved in the test's artifact directory: `go test -artifacts
// -run TestDashboardInBrowser ./dashboard` keeps them (under
// _artifacts/), as CI does.
func TestDashboardInBrowser(t *testing.T) {
	need(t, chromium, "apt-get install chromium")
	need(t, "ffmpeg", "apt-get install ffmpeg")
	svc, _ := fixture(t, teststore.Memory(t))
	videos := retain.Dir{Root: t.TempDir()}
	convertedVideo(t, svc, videos, "s-acme")
	attest(t, svc, videos, "cert-acme", testPNG(t, 320, 240, color.RGBA{G: 160, A: 255}), mismatch)
	runInsights(t, svc)
	h, err := dashboard.New(svc, dashboard.Config{OperatorSecret: secret, Videos: videos})
	must(t, err)
	mux := http.NewServeMux()
	mux.Handle("/dashboard/", h)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	b := startChromium(t)
	shots := t.ArtifactDir()
	shot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(b, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		must(t, os.WriteFile(filepath.Join(shots, name+".png"), png, 0o644))
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(b, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return strings.TrimSpace(s)
	}
	do := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(b, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	eval := func(js string) bool {
		t.Helper()
		ok, err := chromedp.Run(b, chromedp.Evaluate[bool](js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return ok
	}
	base := srv.URL + "/dashboard"

	// Log in, with the keyboard alone: the first Tab reaches the skip
	// link, the secret field has the focus, Enter sends the form.
	do("open the overview", chromedp.Navigate(base+"/companies/acme"), chromedp.WaitVisible(chromedp.CSS(`input[name=secret]`)))
	shot("login")
	do("type the secret", chromedp.KeyEvent(secret+"\r"))
	do("the overview after login", chromedp.WaitVisible(chromedp.CSS(`#company-id`)))
	if got := text("#company-id"); got != "acme" {
		t.Errorf("company id shown: %q", got)
	}
	if got := text("#balance"); got != "$1.00" {
		t.Errorf("balance shown: %q, want $1.00", got)
	}
	do("tab to the skip link", chromedp.KeyEvent("\t"))
	if !eval(`document.activeElement.classList.contains("skip")`) {
		t.Error("the first Tab does not reach the skip link")
	}
	shot("overview")

	// Set a threshold of the bot verdict with the company page's form.
	do("set a verdict rule", chromedp.SendKeys(chromedp.CSS(`input[name=max_per_day]`), "30"),
		chromedp.Click(chromedp.CSS(`#save-rules`)), chromedp.WaitVisible(chromedp.CSS(`p.notice`)))
	if got := text(`tr[data-rule="max_per_day"] td.num`); got != "30" {
		t.Errorf("the rule max_per_day shows %q once set to 30", got)
	}

	// Issue a token with the Retain API permission.
	do("issue a token", chromedp.Navigate(base+"/companies/acme/tokens"), chromedp.WaitVisible(chromedp.CSS(`#issue-token`)),
		chromedp.Click(chromedp.CSS(`input[name=retention]`)), chromedp.Click(chromedp.CSS(`#issue-token`)),
		chromedp.WaitVisible(chromedp.CSS(`#new-secret`)))
	tokenSecret := text("#new-secret")
	tok, err := svc.Authenticate(ctx, tokenSecret)
	if err != nil || tok.CompanyID != "acme" || !tok.Has(consent.PermissionRetention) {
		t.Fatalf("the secret the page shows does not authenticate as acme with retention: %v", err)
	}
	if !eval(`!!document.querySelector('tr[data-token="` + tok.ID + `"] .ok')`) {
		t.Errorf("the new token %s is not listed as active", tok.ID)
	}
	shot("tokens-issued")

	// Copy the snippet tag with its button: the clipboard holds the tag.
	u := srv.URL
	for _, name := range []string{"clipboard-read", "clipboard-write"} {
		_, err = chromedp.CallBrowser(b, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{Origin: u,
			Permission: &cdpbrowser.PermissionDescriptor{Name: name}, Setting: cdpbrowser.PermissionSettingGranted})
		must(t, err)
	}
	do("copy the snippet", chromedp.Navigate(base+"/companies/acme/properties"), chromedp.WaitVisible(chromedp.CSS(`button.copy`)),
		chromedp.Click(chromedp.CSS(`button.copy`)))
	copied, err := chromedp.Run(b, chromedp.Poll[bool](`document.querySelector(".copied").textContent === "Copied." || null`,
		chromedp.WithPollingTimeout(5*time.Second)))
	if err != nil || !copied {
		t.Fatalf("the copy button did not copy: %v (status %q)", err, text(".copied"))
	}
	clip, err := chromedp.Run(b, chromedp.Evaluate[string](`navigator.clipboard.readText()`,
		chromedp.EvalAwaitPromise))
	if want := dashboard.SnippetTag(u, "acme-web"); err != nil || clip != want {
		t.Errorf("the clipboard holds %q (%v), want %q", clip, err, want)
	}
	shot("properties")

	// Find the certificate by the consumer's email, written otherwise
	// than at consent (D17), and open it.
	do("search by email", chromedp.Navigate(base+"/companies/acme/certificates"), chromedp.WaitVisible(chromedp.CSS(`input[name=q]`)),
		chromedp.SetValue(chromedp.CSS(`select[name=by]`), "email"),
		chromedp.SendKeys(chromedp.CSS(`input[name=q]`), "  LEAD.person@example.COM "), chromedp.Submit(chromedp.CSS(`input[name=q]`)),
		chromedp.WaitVisible(chromedp.CSS(`#results`)))
	if !eval(`!!document.querySelector('#results a[href$="/certificates/cert-acme"]') && !document.body.textContent.includes("cert-other")`) {
		t.Errorf("the search shows %q; want cert-acme and never another company's", text("#results"))
	}
	shot("certificates-search")
	do("open the certificate", chromedp.Click(chromedp.CSS(`#results a`)), chromedp.WaitVisible(chromedp.CSS(`#video`)))
	if got := text("blockquote.consent"); got != consentText {
		t.Errorf("consent text shown: %q", got)
	}
	if got := text("#state"); got != "not revoked" {
		t.Errorf("state shown: %q", got)
	}
	if got := text("#integrity"); !strings.HasPrefix(got, "valid (key dashboard-test)") {
		t.Errorf("signature status shown: %q, want valid with its key", got)
	}
	if got := text("#visibility"); !strings.Contains(got, "14 px") || !strings.Contains(got, "contrast 18.88:1") {
		t.Errorf("visibility facts shown: %q", got)
	}

	// The attestation: its status, and the replay's screenshot, served as
	// a PNG that the browser decodes, beside the video.
	if got := text("#attestation-status"); !strings.HasPrefix(got, "mismatch") {
		t.Errorf("attestation status shown: %q, want mismatch", got)
	}
	// The insights: done, with the verdict now and its reasons.
	if got := text("#insights-status"); !strings.HasPrefix(got, "done") {
		t.Errorf("insights status shown: %q, want done", got)
	}
	if got := text("#insights-verdict"); !strings.HasPrefix(got, "bot") {
		t.Errorf("insights verdict shown: %q, want bot", got)
	}
	loaded, err := chromedp.Run(b, chromedp.Poll[bool](`(i => (i.complete && i.naturalWidth === 320 && i.naturalHeight === 240) || null)(document.getElementById("screenshot"))`,
		chromedp.WithPollingTimeout(5*time.Second)))
	if err != nil || !loaded {
		t.Errorf("the attestation's screenshot did not load: %v", err)
	}

	// Play the video to its end: the recording's MP4, served with Range
	// support, decodes in the browser.
	_, err = chromedp.Run(b, chromedp.Evaluate[bool](`document.getElementById("video").play().then(() => true)`,
		chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("play the video: %v", err)
	}
	ended, err := chromedp.Run(b, chromedp.Poll[bool](`(v => v.ended || null)(document.getElementById("video"))`,
		chromedp.WithPollingTimeout(20*time.Second)))
	if err != nil || !ended {
		state, _ := chromedp.Run(b, chromedp.Evaluate[string](`(v => JSON.stringify({t: v.currentTime, d: v.duration, s: v.readyState, e: v.error && v.error.message}))(document.getElementById("video"))`))
		t.Fatalf("the video did not play to its end: %v %s", err, state)
	}
	if !eval(`(v => v.error === null && Math.abs(v.duration - 2) < 0.1 && v.videoWidth === 320)(document.getElementById("video"))`) {
		t.Error("the video played is not the session's 2 s, 320 px wide MP4")
	}
	shot("certificate")

	// Revoke the token with its row's button.
	do("revoke the token", chromedp.Navigate(base+"/companies/acme/tokens"),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-token="`+tok.ID+`"] button.danger`)),
		chromedp.Click(chromedp.CSS(`tr[data-token="`+tok.ID+`"] button.danger`)),
		chromedp.WaitVisible(chromedp.CSS(`p.notice`)))
	if got := text(`tr[data-token="` + tok.ID + `"] .state`); !strings.HasPrefix(got, "revoked") {
		t.Errorf("the token's row says %q after revocation", got)
	}
	if _, err := svc.Authenticate(ctx, tokenSecret); consent.ErrorCode(err) != consent.Unauthorized {
		t.Errorf("the revoked token still authenticates: %v", err)
	}
	shot("tokens-revoked")

	// Every page, at desktop and at phone size: it renders, and on a
	// phone it needs no sideways scrolling.
	pages := []string{"/", "/companies/acme", "/companies/acme/ledger", "/companies/acme/tokens", "/companies/acme/properties",
		"/companies/acme/certificates", "/companies/acme/certificates/cert-acme", "/companies/acme/revocations",
		"/companies/acme/webhooks", "/companies/acme/profiles", "/companies/acme/audit"}
	for _, size := range []struct {
		name          string
		width, height int64
		mobile        bool
	}{{"desktop", 1280, 900, false}, {"phone", 390, 844, true}} {
		_, err := chromedp.Call(b, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
			Width: size.width, Height: size.height, DeviceScaleFactor: 1, Mobile: size.mobile})
		must(t, err)
		for _, p := range pages {
			do("open "+p, chromedp.Navigate(base+p), chromedp.WaitVisible(chromedp.CSS(`main`)))
			if eval(`!!document.querySelector("p.error")`) {
				t.Errorf("%s at %s size shows an error: %s", p, size.name, text("p.error"))
			}
			if size.mobile && !eval(`document.documentElement.scrollWidth <= window.innerWidth`) {
				t.Errorf("%s needs sideways scrolling on a phone", p)
			}
			name := strings.ReplaceAll(strings.Trim(p, "/"), "/", "-")
			if name == "" {
				name = "companies"
			}
			shot(size.name + "-" + name)
		}
	}
}

// convertedVideo makes a 2 s MP4 with ffmpeg, stores it as the session's
// video and marks the session retained and converted, as the conversion
// worker does.
func convertedVideo(t *testing.T, svc *consentkit.Service, videos retain.Dir, sessionID string) {
	t.Helper()
	src := filepath.Join(t.TempDir(), "video.mp4")
	out, err := exec.Command("ffmpeg", "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc=duration=2:size=320x240:rate=25",
		"-c:v", "libx264", "-pix_fmt", "yuv420p", "-movflags", "+faststart", "-y", src).CombinedOutput()
	if err != nil {
		t.Fatalf("ffmpeg: %v: %s", err, out)
	}
	v, err := videos.Put(ctx, sessionID, src)
	must(t, err)
	v.Duration = 2 * time.Second
	must(t, svc.Store().Update(ctx, func(tx consent.Tx) error {
		ses, err := tx.Session(ctx, sessionID)
		if err != nil {
			return err
		}
		ses.RetentionStatus, ses.VideoStatus, ses.Video = consent.RetentionRetained, consent.VideoConverted, v
		return tx.UpdateSession(ctx, ses)
	}))
}

// startChromium starts a headless Chromium of its own for the test.
func startChromium(t *testing.T) context.Context {
	t.Helper()
	dir, err := os.MkdirTemp("", "ckdash")
	must(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) }) // best effort, unlike t.TempDir: Chromium may still write there
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.UserDataDir(dir),
		chromedp.Flag("disable-gpu", true), chromedp.WindowSize(1280, 900), chromedp.Env("TMPDIR="+dir),
		chromedp.Flag("autoplay-policy", "no-user-gesture-required"))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	b, cancel := chromedp.NewContext(alloc)
	// The browser's work is bounded by the test's own deadline, not by a
	// span that assumes the machine's speed.
	cancelTimeout := context.CancelFunc(func() {})
	if at, ok := testwait.Deadline(t); ok {
		b, cancelTimeout = context.WithDeadline(b, at)
	}
	t.Cleanup(func() { cancelTimeout(); cancel(); cancelAlloc() })
	return b
}
