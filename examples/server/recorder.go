package main

import (
	"bytes"
	"cmp"
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
	installing atomic.Bool
}

func newRecorderSetup(o *options) *recorderSetup {
	dir := cmp.Or(o.replayer, os.Getenv(capture.RRWebDirEnv), capture.DefaultRRWebDir)
	return &recorderSetup{rec: capture.NewRecorder(dir), dir: dir}
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
			"run "+capture.RecorderInstall+"; video conversion also needs "+videoToolsInstall,
			"file", r.rec.Path(), "not_installed_here_because", why)
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
