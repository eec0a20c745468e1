package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/consentkit/consentkit/capture"
)

// replayerPrefix is the npm project, in a checkout of consentkit, whose
// install puts rrweb's bundles in capture.DefaultRRWebDir: the recorder the
// snippet loads and the replayer the video converter uses (D39).
const replayerPrefix = "retain/mp4/replayer"

// npmInstall is the command that installs them, run from the checkout's
// root.
var npmInstall = []string{"npm", "ci", "--prefix", replayerPrefix, "--ignore-scripts", "--no-audit", "--no-fund"}

// videoToolsInstall is what installs the other tools of video conversion.
const videoToolsInstall = "apt-get install chromium-headless-shell ffmpeg fonts-liberation"

// recorderSetup tells whether rrweb's recorder is there for the snippet,
// and installs it when the server runs from a checkout of consentkit with
// npm at hand.
type recorderSetup struct {
	rec        *capture.Recorder
	dir        string
	where      recorderPlace
	installing atomic.Bool
}

// recorderPlace is where the recorder is looked for, for advice that works
// from there: npm ci in a checkout puts the bundle in that checkout, which
// is this server's only when it looks in the checkout's install.
type recorderPlace struct {
	// Dir is the directory looked in, absolute.
	Dir string
	// SetBy names the setting that chose Dir: "-replayer", "$" and
	// capture.RRWebDirEnv, or "" for the default, under the directory the
	// server runs from.
	SetBy string
	// Checkout is the root of the checkout of consentkit whose npm ci
	// installs into Dir; "" when Dir is no checkout's install.
	Checkout string
}

func newRecorderSetup(o *options) *recorderSetup {
	dir, setBy := capture.DefaultRRWebDir, ""
	switch {
	case o.replayer != "":
		dir, setBy = o.replayer, "-replayer"
	case os.Getenv(capture.RRWebDirEnv) != "":
		dir, setBy = os.Getenv(capture.RRWebDirEnv), "$"+capture.RRWebDirEnv
	}
	where := recorderPlace{Dir: dir, SetBy: setBy}
	if abs, err := filepath.Abs(dir); err == nil {
		where.Dir = abs
	}
	if root, ok := strings.CutSuffix(where.Dir, string(filepath.Separator)+filepath.FromSlash(capture.DefaultRRWebDir)); ok {
		if _, err := os.Stat(filepath.Join(root, replayerPrefix, "package-lock.json")); err == nil {
			where.Checkout = root
		}
	}
	return &recorderSetup{rec: capture.NewRecorder(dir), dir: dir, where: where}
}

// advice says, in a line of the log, what puts the recorder where this
// server looks for it.
func (r *recorderSetup) advice() string {
	w := r.where
	if w.Checkout != "" {
		return "in " + w.Checkout + ", the checkout of consentkit it is looked for in, run " + strings.Join(npmInstall, " ")
	}
	set := "under the directory the server runs from, which is not the root of a checkout of consentkit"
	if w.SetBy != "" {
		set = "set by " + w.SetBy
	}
	return "it is looked for in " + w.Dir + " (" + set + "): put rrweb 2.2.2's dist files there, or point -replayer at the " +
		"node_modules/rrweb/dist of an install (" + strings.Join(npmInstall, " ") + ", run from the root of a checkout of " +
		"consentkit, makes one in " + capture.DefaultRRWebDir + "; elsewhere npm install rrweb@2.2.2)"
}

// installed reports whether the recorder can be served now.
func (r *recorderSetup) installed() bool {
	_, _, err := r.rec.Load()
	return err == nil
}

// state says what the demo page should tell about the recorder: "" when it
// is installed.
func (r *recorderSetup) state() string {
	switch {
	case r.installed():
		return ""
	case r.installing.Load():
		return "installing"
	default:
		return "missing"
	}
}

// installable reports whether the one command can install the bundles
// itself: the recorder is looked for where npm ci puts it, in a checkout of
// consentkit (the working directory), and npm is on PATH.
func (r *recorderSetup) installable() (bool, string) {
	if filepath.Clean(r.dir) != filepath.Clean(capture.DefaultRRWebDir) {
		return false, "the recorder is looked for in " + r.dir
	}
	if _, err := os.Stat(filepath.Join(replayerPrefix, "package-lock.json")); err != nil {
		return false, "the server does not run from the root of a checkout of consentkit"
	}
	if _, err := exec.LookPath("npm"); err != nil {
		return false, "npm is not installed"
	}
	return true, ""
}

// start installs the recorder in the background when it is missing and
// installable and install is on; otherwise, when it is missing, it logs
// exactly what to run. The capture routes serve the bundle as soon as it is
// in place (capture.Recorder looks at every request), so nothing waits for
// the install. The returned channel closes when the install has ended (at
// once when there is none).
func (r *recorderSetup) start(ctx context.Context, install bool, log *slog.Logger) <-chan struct{} {
	done := make(chan struct{})
	if r.installed() {
		close(done)
		return done
	}
	ok, why := r.installable()
	if !install || !ok {
		if !install {
			why = "-install-recorder=false"
		}
		log.Warn("the session recorder is not installed, so the demo form records nothing and issues no certificate; "+
			r.advice()+"; video conversion also needs "+videoToolsInstall,
			"file", filepath.Join(r.where.Dir, capture.RecorderFile), "not_installed_here_because", why)
		close(done)
		return done
	}
	r.installing.Store(true)
	log.Info("installing rrweb's recorder and replayer, once: " + strings.Join(npmInstall, " ") + " (-install-recorder=false turns this off)")
	go func() {
		defer close(done)
		defer r.installing.Store(false)
		began := time.Now()
		cmd := exec.CommandContext(ctx, npmInstall[0], npmInstall[1:]...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		if err == nil && !r.installed() {
			err = errors.New(r.rec.Path() + " is still missing")
		}
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			log.Error("could not install the session recorder; run "+strings.Join(npmInstall, " ")+" yourself",
				"err", err, "npm_output", tail(out.String(), 2000))
		default:
			log.Info("the session recorder is installed and served", "took", time.Since(began).Round(time.Millisecond))
		}
	}()
	return done
}

// tail returns the end of s, at most n bytes.
func tail(s string, n int) string { return s[max(0, len(s)-n):] }
