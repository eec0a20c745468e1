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
// MeasureJS followed by capture.js, which calls it, both inside one function
// so that the page gets no global of theirs. The HTTP layer serves it at GET
// /capture/capture.js; it loads rrweb's recorder from /capture/rrweb.js
// beside it, served as RecorderScript wraps it.
var Snippet = []byte("(function () {\n" + MeasureJS + "\n" + snippetJS + "\n})();\n")

// ConsentMomentTag is the tag of the rrweb custom event that the snippet
// adds to the recording when it measures a submission's consents, before
// the page's own submit listeners run: the consent moment that an
// attestation replays to (D49).
const ConsentMomentTag = "consentkit/consent"

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

// RecorderScript returns rrweb's browser bundle wrapped for the snippet, as
// the route /capture/rrweb.js serves it. The bundle is a UMD script: on a
// page with an AMD loader (define.amd) it registers a module, on a page
// where exports names an object (even markup, <div id="exports">) it sets
// exports.rrweb, and elsewhere it sets window.rrweb, replacing the page's
// own. Wrapped, it runs with define, exports and module undefined, binds to
// an object of its own, and hands the library to the script element that
// loaded it (its property consentkitRecorder), where the snippet finds it:
// no name of the page's is read or written.
func RecorderScript(bundle []byte) []byte {
	out := make([]byte, 0, len(recorderHead)+len(bundle)+len(recorderTail))
	out = append(out, recorderHead...)
	out = append(out, bundle...)
	return append(out, recorderTail...)
}

// recorderHead and recorderTail wrap the bundle. The head leaves the
// bundle's first line where it was (its source map's lines still match),
// and the tail starts a line of its own, after the bundle's last line,
// which is a //# sourceMappingURL comment.
const (
	recorderHead = `(function () { var define, exports, module, require, bound = {}; (function () {`
	recorderTail = "\n}).call(bound);\n" +
		`var d = Object.getOwnPropertyDescriptor(Document.prototype, "currentScript");
var s = d && d.get ? d.get.call(document) : null;
if (s instanceof HTMLScriptElement && bound.rrweb) s.consentkitRecorder = bound.rrweb;
})();
`
)

// Recorder reads rrweb's browser bundle from a directory, and reads it again
// when the file changes: a bundle installed, or upgraded, while the server
// runs is served without a restart. It is safe for concurrent use.
type Recorder struct {
	path string

	mu     sync.Mutex
	body   []byte
	script []byte    // RecorderScript(body), made at the first Script
	mod    time.Time // the file's modification time when body was read
	size   int64
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
	r.body, r.script, r.mod, r.size = body, nil, fi.ModTime(), fi.Size()
	return body, fi.ModTime(), nil
}

// Script returns the bundle as the snippet loads it, RecorderScript of what
// Load returns, under the same rules as Load, and its modification time: the
// bundle's, or the process's start when later, since the wrapping changes
// with the binary.
func (r *Recorder) Script() ([]byte, time.Time, error) {
	body, mod, err := r.Load()
	if err != nil {
		return nil, time.Time{}, err
	}
	if mod.Before(processStart) {
		mod = processStart
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	same := len(r.body) == len(body) && &r.body[0] == &body[0] // not read again meanwhile
	if same && r.script != nil {
		return r.script, mod, nil
	}
	script := RecorderScript(body)
	if same {
		r.script = script
	}
	return script, mod, nil
}

// processStart is when this process started.
var processStart = time.Now()
