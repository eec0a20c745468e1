package httpadapter_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	mimemultipart "mime/multipart"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/retain"
	"github.com/consentkit/consentkit/store/memstore"
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
		v, err := videos.Put(ctx, "s1", src)
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
			_ = f.Close() // the test fails already
			t.Errorf("Open(%q) succeeded", p)
		}
	}
}

// Every Range answer of the video route is RFC 9110's (§14.1.1, §14.2,
// §15.3.7, §15.5.17): a suffix-length of 0 and a first-pos at or past the
// end are unsatisfiable, dropped among others and 416 with Content-Range
// bytes */<size> alone; an invalid range set is 416 too; a position past
// int64 is past the end; another unit is ignored; a failed If-Range serves
// the whole; every 206 has a valid Content-Range for the bytes it sends.
func TestVideoRanges(t *testing.T) {
	e := setup(t, memstore.New())
	videos := retain.Dir{Root: t.TempDir()}
	content := bytes.Repeat([]byte("\x00\x00\x00\x18ftypmp42 frames "), 1000)
	for id, b := range map[string][]byte{"s1": content, "s2": nil} {
		src := filepath.Join(t.TempDir(), "in.mp4")
		must(t, os.WriteFile(src, b, 0o644))
		v, err := videos.Put(ctx, id, src)
		must(t, err)
		must(t, e.store.Update(ctx, func(tx consent.Tx) error {
			ses, err := tx.Session(ctx, id)
			if err != nil {
				return err
			}
			ses.VideoStatus, ses.Video = consent.VideoConverted, v
			return tx.UpdateSession(ctx, ses)
		}))
	}
	h := e.handler(t, httpadapter.Config{Videos: videos})
	sum := sha256.Sum256(content)
	etag := `"` + hex.EncodeToString(sum[:]) + `"`
	size := strconv.Itoa(len(content)) // 20000
	const multipart = "multipart"
	doc := newChecker(openAPIDoc(t, h))
	for _, tc := range []struct {
		session, rng, ifRange string
		status                int
		contentRange          string // of a single-part 206
	}{
		{"s1", "bytes=-0", "", 416, ""},
		{"s1", "bytes=-0,-0", "", 416, ""},
		{"s1", "bytes=0-1,-0", "", 206, "bytes 0-1/" + size},
		{"s1", "bytes=-0,4-11", "", 206, "bytes 4-11/" + size},
		{"s1", "bytes=5-4", "", 416, ""},
		{"s1", "bytes=5-4,0-1", "", 416, ""},
		{"s1", "bytes=" + size + "-", "", 416, ""},
		{"s1", "bytes=" + size + "-30000,30000-", "", 416, ""},
		{"s1", "bytes=" + size + "-,0-0", "", 206, "bytes 0-0/" + size},
		{"s1", "bytes=-5", "", 206, "bytes 19995-19999/" + size},
		{"s1", "bytes=-99999", "", 206, "bytes 0-19999/" + size},
		{"s1", "bytes=19990-99999999999999999999", "", 206, "bytes 19990-19999/" + size},
		{"s1", "bytes=99999999999999999999-", "", 416, ""},
		{"s1", "bytes=+1-2", "", 416, ""},
		{"s1", "bytes=", "", 416, ""},
		{"s1", "bytes=a-b", "", 416, ""},
		{"s1", "Bytes=4-11", "", 206, "bytes 4-11/" + size},
		{"s1", "bytes=4-11 , ", "", 206, "bytes 4-11/" + size},
		{"s1", "bytes=0-0,-1", "", 206, multipart},
		{"s1", "items=0-1", "", 200, ""},
		{"s1", "bytes 0-1", "", 200, ""},
		{"s1", "bytes=-0", `"another"`, 200, ""},
		{"s1", "bytes=4-11", etag, 206, "bytes 4-11/" + size},
		// An empty video: no Content-Range describes a part of it.
		{"s2", "bytes=-5", "", 200, ""},
		{"s2", "bytes=0-", "", 200, ""},
		{"s2", "bytes=-0", "", 200, ""},
	} {
		name := tc.session + " Range: " + tc.rng
		if tc.ifRange != "" {
			name += ", If-Range: " + tc.ifRange
		}
		file := content
		if tc.session == "s2" {
			file = nil
		}
		header := []string{"Range", tc.rng}
		if tc.ifRange != "" {
			header = append(header, "If-Range", tc.ifRange)
		}
		path := "/api/integrations/acme/sessions/" + tc.session + "/video"
		rec := call(h, "GET", path, "", acmeToken, "", header...)
		for _, msg := range doc.check(httptest.NewRequest("GET", path, nil), rec) {
			t.Errorf("%s: against the document: %s", name, msg)
		}
		cr := rec.Header().Get("Content-Range")
		if rec.Code != tc.status {
			t.Errorf("%s: %d with Content-Range %q, want %d", name, rec.Code, cr, tc.status)
			continue
		}
		switch rec.Code {
		case 200:
			if cr != "" || !bytes.Equal(rec.Body.Bytes(), file) {
				t.Errorf("%s: 200 with Content-Range %q and %d bytes, want the whole %d bytes", name, cr, rec.Body.Len(), len(file))
			}
		case 416:
			if want := "bytes */" + strconv.Itoa(len(file)); cr != want {
				t.Errorf("%s: 416 with Content-Range %q, want %q", name, cr, want)
			}
		case 206:
			ct := rec.Header().Get("Content-Type")
			if tc.contentRange == multipart {
				if !strings.HasPrefix(ct, "multipart/byteranges") {
					t.Errorf("%s: 206 of %q, want multipart/byteranges", name, ct)
					continue
				}
				_, params, err := mime.ParseMediaType(ct)
				must(t, err)
				parts := mimemultipart.NewReader(rec.Body, params["boundary"])
				n := 0
				for ; ; n++ {
					p, err := parts.NextPart()
					if errors.Is(err, io.EOF) {
						break
					}
					must(t, err)
					b, err := io.ReadAll(p)
					must(t, err)
					checkContentRange(t, name, p.Header.Get("Content-Range"), b, file)
				}
				if n != 2 {
					t.Errorf("%s: %d parts, want 2", name, n)
				}
				continue
			}
			if cr != tc.contentRange {
				t.Errorf("%s: 206 with Content-Range %q, want %q", name, cr, tc.contentRange)
			}
			checkContentRange(t, name, cr, rec.Body.Bytes(), file)
		}
	}
}

// checkContentRange fails unless cr is a valid Content-Range of a part of
// file (RFC 9110 §14.4: first-pos ≤ last-pos < complete-length) and body
// is that part.
func checkContentRange(t *testing.T, name, cr string, body, file []byte) {
	t.Helper()
	var first, last, length int
	if _, err := fmt.Sscanf(cr, "bytes %d-%d/%d", &first, &last, &length); err != nil ||
		cr != fmt.Sprintf("bytes %d-%d/%d", first, last, length) {
		t.Errorf("%s: Content-Range %q is not bytes first-last/length", name, cr)
		return
	}
	if first > last || last >= length || length != len(file) {
		t.Errorf("%s: Content-Range %q is invalid for a file of %d bytes", name, cr, len(file))
		return
	}
	if !bytes.Equal(body, file[first:last+1]) {
		t.Errorf("%s: the part of %q is not bytes %d to %d of the file", name, cr, first, last)
	}
}
