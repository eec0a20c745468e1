package httpadapter_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/retain"
)

// The converted MP4 downloads through the Retain API's authentication
// (D45), whole or by Range, with its SHA-256; on every store.
func TestVideoDownload(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e := setup(t, open(t))
		videos := retain.Dir{Root: t.TempDir()}
		src := filepath.Join(t.TempDir(), "in.mp4")
		content := bytes.Repeat([]byte("\x00\x00\x00\x18ftypmp42 frames "), 1000)
		must(t, os.WriteFile(src, content, 0o644))
		v, err := videos.Put(ctx, "s1", src, time.Time{})
		must(t, err)
		must(t, e.store.Update(ctx, func(tx consent.Tx) error {
			ses, err := tx.Session(ctx, "s1")
			if err != nil {
				return err
			}
			ses.VideoStatus, ses.Video = consent.VideoConverted, v
			return tx.UpdateSession(ctx, ses)
		}))
		h := e.handler(t, httpadapter.Config{Videos: videos})
		sum := sha256.Sum256(content)

		rec := call(h, "GET", "/api/integrations/acme/sessions/s1/video", "", acmeToken, "")
		if rec.Code != 200 || !bytes.Equal(rec.Body.Bytes(), content) || rec.Header().Get("Content-Type") != "video/mp4" ||
			rec.Header().Get("X-Content-SHA256") != hex.EncodeToString(sum[:]) {
			t.Errorf("download: %d %q %q, %d bytes", rec.Code, rec.Header().Get("Content-Type"), rec.Header().Get("X-Content-SHA256"), rec.Body.Len())
		}
		rec = call(h, "GET", "/api/integrations/acme/sessions/s1/video", "", acmeToken, "", "Range", "bytes=4-11")
		if rec.Code != 206 || rec.Body.String() != "ftypmp42" {
			t.Errorf("range: %d %q", rec.Code, rec.Body)
		}
		for _, tc := range []struct {
			name, path, token string
			status            int
			want              string
		}{
			{"no token", "/api/integrations/acme/sessions/s1/video", "", 401, `"success":false`},
			{"another company's session", "/api/integrations/other/sessions/s1/video", otherToken, 404, "not found"},
			{"not converted yet", "/api/integrations/acme/sessions/s2/video", acmeToken, 404, "no video yet"},
		} {
			rec := call(h, "GET", tc.path, "", tc.token, "")
			if rec.Code != tc.status || !strings.Contains(rec.Body.String(), tc.want) {
				t.Errorf("%s: %d %s, want %d with %q", tc.name, rec.Code, rec.Body, tc.status, tc.want)
			}
		}
		off := e.handler(t, httpadapter.Config{})
		if rec := call(off, "GET", "/api/integrations/acme/sessions/s1/video", "", acmeToken, ""); rec.Code != 503 {
			t.Errorf("without Config.Videos: %d %s, want 503", rec.Code, rec.Body)
		}
	})
}

// A video path that a changed row points outside the video directory is
// never opened.
func TestDirOpenStaysInside(t *testing.T) {
	d := retain.Dir{Root: t.TempDir()}
	for _, p := range []string{"/etc/passwd", filepath.Join(d.Root, "..", "x.mp4"), filepath.Join(d.Root, "sub", "x.mp4"), filepath.Join(d.Root, "x.txt")} {
		if f, err := d.Open(ctx, consent.Video{Path: p}); err == nil {
			f.Close()
			t.Errorf("Open(%q) succeeded", p)
		}
	}
}
