package capture

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Snippet is the script that a page embeds to capture consent (D36):
// MeasureJS followed by capture.js, which calls it. The HTTP layer serves it
// at GET /capture/capture.js; it loads rrweb's recorder from
// /capture/rrweb.js beside it.
var Snippet = []byte(MeasureJS + "\n" + snippetJS)

// MeasureJS is measure.js: the JavaScript function consentkitMeasure(el,
// win, page), which measures a consent element (D37) — the text the
// consumer could read of it, the fragments hidden from them, its font size,
// colours and contrast, and whether it was in the viewport. The snippet
// measures the live page with it at submit, and retain/mp4's Attest the
// replayed page: one measure in both places.
//
//go:embed measure.js
var MeasureJS string

//go:embed capture.js
var snippetJS string

// DefaultRRWebDir is where `npm ci --prefix retain/mp4/replayer` puts
// rrweb's browser bundle, relative to the repository's root (D39): the
// recorder the snippet loads and the replayer the video converter uses come
// from that one install.
const DefaultRRWebDir = "retain/mp4/replayer/node_modules/rrweb/dist"

// RRWebDirEnv names the environment variable that points the library at
// rrweb's dist directory in a host application (D39), for the recorder here
// and the replayer of retain/mp4 alike.
const RRWebDirEnv = "CONSENTKIT_RRWEB_DIR"

// RecorderFile is the name of rrweb's browser bundle in its dist directory.
const RecorderFile = "rrweb.umd.min.cjs"

// RecorderInstall says what to run to install rrweb's recorder, for
// messages to an operator: in a checkout of consentkit, and in a host
// application.
const RecorderInstall = "npm ci --prefix retain/mp4/replayer in a checkout of consentkit; elsewhere npm install rrweb@2.2.2 and set " +
	RRWebDirEnv + " (or httpadapter.Config.RRWebDir) to its node_modules/rrweb/dist"

// Recorder reads rrweb's browser bundle from a directory, and reads it again
// when the file changes: a bundle installed, or upgraded, while the server
// runs is served without a restart. It is safe for concurrent use.
type Recorder struct {
	path string

	mu   sync.Mutex
	body []byte
	mod  time.Time // the file's modification time when body was read
	size int64
}

// NewRecorder returns the Recorder of the bundle in dir (RecorderFile).
func NewRecorder(dir string) *Recorder {
	return &Recorder{path: filepath.Join(dir, RecorderFile)}
}

// Path returns the bundle's file name.
func (r *Recorder) Path() string { return r.path }

// Load returns the bundle and its modification time. It looks at the file
// on every call (one stat) and reads it only when it is new or changed. An
// error means there is no bundle to serve (errors.Is(err, fs.ErrNotExist)
// when it is not installed).
func (r *Recorder) Load() ([]byte, time.Time, error) {
	fi, err := os.Stat(r.path)
	if err != nil {
		return nil, time.Time{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.body != nil && fi.ModTime().Equal(r.mod) && fi.Size() == r.size {
		return r.body, r.mod, nil
	}
	body, err := os.ReadFile(r.path)
	if err != nil {
		return nil, time.Time{}, err
	}
	if int64(len(body)) != fi.Size() || len(body) == 0 {
		// Still being written (npm extracts files in place): serve
		// nothing rather than a truncated script, and look again next time.
		return nil, time.Time{}, fmt.Errorf("%s is being written", r.path)
	}
	r.body, r.mod, r.size = body, fi.ModTime(), fi.Size()
	return body, fi.ModTime(), nil
}
