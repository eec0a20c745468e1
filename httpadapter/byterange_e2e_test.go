package httpadapter_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/consentkit/consentkit/capture"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/internal/teststore"
)

// The capture scripts, public and without a rate limit, answer a Range
// header of 64 KiB (NewServer's bound) listing one byte 16,000 times, or
// 6,000 bytes apart, with no more than the script: the same byte 16,000
// times made a 2.35 MB answer of 16,000 parts from the 42 KB snippet. A
// range or two are answered as before.
func TestCaptureScriptsManyRanges(t *testing.T) {
	e := setup(t, teststore.Memory(t))
	dir := t.TempDir()
	rrweb := strings.Repeat("var rrweb={};\n", 5000)
	must(t, os.WriteFile(filepath.Join(dir, "rrweb.umd.min.cjs"), []byte(rrweb), 0o644))
	h := e.handler(t, httpadapter.Config{RRWebDir: dir})
	var apart strings.Builder
	for i := 0; apart.Len() < 64<<10-16; i++ {
		fmt.Fprintf(&apart, ",%d-%d", 2*i, 2*i)
	}
	for path, size := range map[string]int{"/capture/capture.js": len(capture.Snippet), "/capture/rrweb.js": len(capture.RecorderScript([]byte(rrweb)))} {
		for name, rg := range map[string]string{
			"one byte": "bytes=" + strings.Repeat("0-0,", 15999) + "0-0",
			"apart":    "bytes=" + apart.String()[1:],
		} {
			rec := call(h, "GET", path, "", "", "", "Range", rg)
			if rec.Body.Len() > size+1024 {
				t.Errorf("GET %s, Range of %d bytes (%s): %d, %d bytes; want at most the script's %d", path, len(rg), name, rec.Code, rec.Body.Len(), size)
			}
		}
		rec := call(h, "GET", path, "", "", "", "Range", "bytes=0-0,0-0,0-3")
		if rec.Code != http.StatusPartialContent || rec.Header().Get("Content-Range") != fmt.Sprintf("bytes 0-3/%d", size) || rec.Body.Len() != 4 {
			t.Errorf("GET %s, Range bytes=0-0,0-0,0-3: %d %q, %d bytes; want 206, bytes 0-3, 4 bytes", path, rec.Code, rec.Header().Get("Content-Range"), rec.Body.Len())
		}
		rec = call(h, "GET", path, "", "", "", "Range", "bytes=0-3,10-13")
		if rec.Code != http.StatusPartialContent || !strings.HasPrefix(rec.Header().Get("Content-Type"), "multipart/byteranges") {
			t.Errorf("GET %s, Range bytes=0-3,10-13: %d %q; want 206 in two parts", path, rec.Code, rec.Header().Get("Content-Type"))
		}
	}
}
