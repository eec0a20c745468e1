package byterange

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/consentkit/consentkit/internal/s3test"
	"github.com/consentkit/consentkit/retain/s3video"
)

// Ranges that overlap or touch are served as one, in the order of their
// first bytes; others as asked. More than maxRanges once coalesced, or
// ranges adding up to more than the file, are ignored: the whole file.
func TestServableRangeCoalesces(t *testing.T) {
	var disjoint []string
	for i := range maxRanges + 1 {
		disjoint = append(disjoint, fmt.Sprintf("%d-%d", 2*i, 2*i))
	}
	for _, c := range []struct {
		h    string
		size int64
		want string
	}{
		{"bytes=" + strings.Repeat("0-0,", maxAsked-1) + "0-0", 1 << 20, "bytes=0-0"},
		{"bytes=" + strings.Repeat("0-0,", maxAsked) + "0-0", 1 << 20, ""},
		{"bytes=" + strings.Repeat("0-0,", 15999) + "0-0", 1 << 20, ""},
		{"bytes=" + strings.Repeat("-0,", 1000) + "0-0", 1 << 20, "bytes=0-0"},
		{"bytes=0-9,5-19", 100, "bytes=0-19"},
		{"bytes=10-19,0-9", 100, "bytes=0-19"},
		{"bytes=50-59,0-9,5-12,-10", 100, "bytes=0-12,50-59,90-99"},
		{"bytes=0-1,10-11", 100, "bytes=0-1,10-11"},
		{"bytes=10-11,0-1", 100, "bytes=10-11,0-1"},
		{"bytes=-5,0-0", 100, "bytes=95-99,0-0"},
		{"bytes=" + strings.Join(disjoint[:maxRanges], ","), 100, "bytes=" + strings.Join(disjoint[:maxRanges], ",")},
		{"bytes=" + strings.Join(disjoint, ","), 100, ""},
		{"bytes=" + strings.Join(disjoint, ",") + ",0-99", 1000, "bytes=0-99"},
		{"bytes=0-,0-", 100, ""},
		{"bytes=0-59,40-99", 100, ""},
		{"bytes=0-59,40-99", 1000, "bytes=0-99"},
	} {
		if got := servableRange(c.h, c.size); got != c.want {
			t.Errorf("servableRange(%.60q, %d) = %.60q, want %q", c.h, c.size, got, c.want)
		}
	}
}

// seekCounter is a file that counts the Seeks that move it: a video in S3
// (retain/s3video) asks the server again for each.
type seekCounter struct {
	*bytes.Reader
	moves int
}

func (s *seekCounter) Seek(offset int64, whence int) (int64, error) {
	before, _ := s.Reader.Seek(0, io.SeekCurrent)
	n, err := s.Reader.Seek(offset, whence)
	if n != before {
		s.moves++
	}
	return n, err
}

// A Range header as long as NewServer lets through (64 KiB) of many
// small, repeated or overlapping ranges is answered with at most the
// file and a few multipart headers, reading the file in a few places:
// it had one part per range, 2.3 MB and 16,000 Seeks from 300 KB.
func TestServeContentManyRangesBounded(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789abcdef"), 300<<10/16)
	size := len(body)
	fill := func(spec func(i int) string) string {
		var b strings.Builder
		b.WriteString("bytes=")
		for i := 0; b.Len() < 64<<10-32; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(spec(i))
		}
		return b.String()
	}
	for name, h := range map[string]string{
		"same byte":   fill(func(int) string { return "0-0" }),
		"overlapping": fill(func(i int) string { return fmt.Sprintf("%d-%d", i, i+2) }),
		"spread":      fill(func(i int) string { return fmt.Sprintf("%d-%d", i*97%size, i*97%size) }),
		"suffixes":    fill(func(int) string { return "-1" }),
		"sixteen":     fill(func(i int) string { return fmt.Sprintf("%d-%d", i%16*1000, i%16*1000) }),
	} {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodGet, "/capture/rrweb.js", nil)
		r.Header.Set("Range", h)
		f := &seekCounter{Reader: bytes.NewReader(body)}
		ServeContent(w, r, "", time.Time{}, f)
		if n := w.Body.Len(); n > size+4<<10 || f.moves > 2*maxRanges+2 {
			t.Errorf("%s: a %d-byte Range: %d, %d bytes and %d seeks, want at most %d bytes and %d seeks",
				name, len(h), w.Code, n, f.moves, size+4<<10, 2*maxRanges+2)
		}
	}
}

// One range, and two apart, are answered as ServeContent answers them.
func TestServeContentFewRanges(t *testing.T) {
	body := []byte("0123456789abcdefghij")
	serve := func(rg string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("Range", rg)
		ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
		return w
	}
	if w := serve("bytes=2-5"); w.Code != http.StatusPartialContent || w.Body.String() != "2345" ||
		w.Header().Get("Content-Range") != "bytes 2-5/20" {
		t.Errorf("bytes=2-5: %d %q %q", w.Code, w.Header().Get("Content-Range"), w.Body)
	}
	for rg, want := range map[string][]string{
		"bytes=0-1,10-11": {"bytes 0-1/20", "01", "bytes 10-11/20", "ab"},
		"bytes=10-11,0-1": {"bytes 10-11/20", "ab", "bytes 0-1/20", "01"},
		"bytes=-2,3-4":    {"bytes 18-19/20", "ij", "bytes 3-4/20", "34"},
	} {
		w := serve(rg)
		mt, params, err := mime.ParseMediaType(w.Header().Get("Content-Type"))
		if w.Code != http.StatusPartialContent || err != nil || mt != "multipart/byteranges" {
			t.Errorf("%s: %d %q %v", rg, w.Code, w.Header().Get("Content-Type"), err)
			continue
		}
		var got []string
		mr := multipart.NewReader(w.Body, params["boundary"])
		for {
			p, err := mr.NextPart()
			if err != nil {
				break
			}
			b, _ := io.ReadAll(p)
			got = append(got, p.Header.Get("Content-Range"), string(b))
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: parts %q, want %q", rg, got, want)
		}
	}
}

// A video in S3 asks the server again at each Seek that moves (one
// GetObject); a Range of one byte 16,000 times is one range, and one of
// many ranges apart the whole video: 16,000 GetObjects were one answer's.
func TestS3VideoManyRangesFewGets(t *testing.T) {
	g := s3test.Start(t)
	g.Bucket(t, "videos", false)
	videos, err := s3video.New(t.Context(), s3video.Config{Bucket: "videos", Client: g.Client})
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(t.TempDir(), "v.mp4")
	if err := os.WriteFile(src, bytes.Repeat([]byte("mp4 "), 1<<18), 0o644); err != nil {
		t.Fatal(err)
	}
	v, err := videos.Put(t.Context(), "ses_ranges", src)
	if err != nil {
		t.Fatal(err)
	}
	var apart strings.Builder
	for i := 0; apart.Len() < 64<<10-16; i++ {
		fmt.Fprintf(&apart, ",%d-%d", 7*i, 7*i)
	}
	for name, rg := range map[string]string{
		"one byte": "bytes=" + strings.Repeat("0-0,", 15999) + "0-0",
		"apart":    "bytes=" + apart.String()[1:],
	} {
		f, err := videos.Open(t.Context(), v)
		if err != nil {
			t.Fatal(err)
		}
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodGet, "/video", nil)
		r.Header.Set("Range", rg)
		before := g.Gets.Load()
		ServeContent(w, r, "", time.Time{}, f)
		_ = f.Close() // read only
		if gets := g.Gets.Load() - before; gets > 2 || w.Body.Len() > 1<<20+1024 {
			t.Errorf("%s: a %d-byte Range: %d, %d bytes, %d GetObject requests; want at most the video and 2", name, len(rg), w.Code, w.Body.Len(), gets)
		}
	}
}
