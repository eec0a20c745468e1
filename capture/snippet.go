package capture

import _ "embed"

// Snippet is capture.js, the script that a page embeds to capture consent
// (D36). The HTTP layer serves it at GET /capture/capture.js; it loads
// rrweb's recorder from /capture/rrweb.js beside it.
//
//go:embed capture.js
var Snippet []byte

// DefaultRRWebDir is where `npm ci --prefix retain/mp4/replayer` puts
// rrweb's browser bundle, relative to the repository's root (D39): the
// recorder the snippet loads and the replayer the video converter uses come
// from that one install.
const DefaultRRWebDir = "retain/mp4/replayer/node_modules/rrweb/dist"

// RRWebDirEnv names the environment variable that points the library at
// rrweb's dist directory in a host application (D39), for the recorder here
// and the replayer of retain/mp4 alike.
const RRWebDirEnv = "CONSENTKIT_RRWEB_DIR"
