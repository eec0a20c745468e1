package s3video_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/s3test"
	"github.com/consentkit/consentkit/retain/s3video"
)

const (
	accessKey = s3test.AccessKey
	secretKey = s3test.SecretKey
)

// gateway is a versitygw serving a temporary directory (s3test).
type gateway struct {
	*s3test.Gateway
	endpoint string
	client   *s3.Client
	gets     *atomic.Int64 // GetObject requests the client sent
}

func startGateway(t *testing.T) *gateway {
	g := s3test.Start(t)
	return &gateway{Gateway: g, endpoint: g.Endpoint, client: g.Client, gets: g.Gets}
}

func (g *gateway) bucket(t *testing.T, name string, objectLock bool) { g.Bucket(t, name, objectLock) }

// store returns a Store on the gateway's bucket, through the client that
// counts requests.
func (g *gateway) store(t *testing.T, cfg s3video.Config) *s3video.Store {
	t.Helper()
	cfg.Client = g.client
	s, err := s3video.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// mp4File writes n random bytes to a file and returns its path and content.
func mp4File(t *testing.T, n int, seed uint64) (string, []byte) {
	t.Helper()
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8)})
	_, _ = r.Read(b) // ChaCha8's Read always fills b
	p := filepath.Join(t.TempDir(), fmt.Sprintf("video-%d.mp4", seed))
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p, b
}

// closeOK closes f, a video the store opened, and fails t when Close does:
// the reader's Close is the store's code under test too.
func closeOK(t *testing.T, f io.Closer) {
	t.Helper()
	if err := f.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

func readAll(t *testing.T, s *s3video.Store, v consent.Video) []byte {
	t.Helper()
	f, err := s.Open(t.Context(), v)
	if err != nil {
		t.Fatal(err)
	}
	defer closeOK(t, f)
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPutOpen(t *testing.T) {
	g := startGateway(t)
	g.bucket(t, "plain", false)
	s := g.store(t, s3video.Config{Bucket: "plain"})
	if s.Locking() {
		t.Error("Locking() = true on a bucket without Object Lock")
	}
	src, want := mp4File(t, 3<<20+17, 1)
	v, err := s.Put(t.Context(), "ses_1", src)
	if err != nil {
		t.Fatal(err)
	}
	key := keyOf(t, v.Path, "s3://plain/videos/ses_1/", ".mp4")
	if v.Bytes != int64(len(want)) || v.SHA256 != sha256.Sum256(want) || v.Duration != 0 {
		t.Errorf("Put = %+v; want %d bytes, SHA-256 %x", v, len(want), sha256.Sum256(want))
	}
	head, err := g.client.HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String("plain"), Key: &key, ChecksumMode: types.ChecksumModeEnabled})
	if err != nil {
		t.Fatal(err)
	}
	// The server checked the upload against this digest and keeps it.
	if got, want := aws.ToString(head.ChecksumSHA256), base64.StdEncoding.EncodeToString(v.SHA256[:]); got != want {
		t.Errorf("stored x-amz-checksum-sha256 %q, want %q", got, want)
	}
	if head.ObjectLockMode != "" {
		t.Errorf("object locked (%s) in a bucket without Object Lock", head.ObjectLockMode)
	}
	if got := readAll(t, s, v); !bytes.Equal(got, want) {
		t.Fatalf("Open read %d bytes that differ from the %d put", len(got), len(want))
	}
	wrong := v
	wrong.SHA256[0] ^= 1
	if _, err := s.Open(t.Context(), wrong); err == nil || !strings.Contains(err.Error(), "SHA-256") {
		t.Errorf("Open of a video whose SHA-256 differs from the object's: %v", err)
	}

	t.Run("AnotherConversion", func(t *testing.T) {
		// A second video of the session gets a key of its own: nothing is
		// written over, and each row reads its own video.
		src2, want2 := mp4File(t, 1000, 2)
		v2, err := s.Put(t.Context(), "ses_1", src2)
		if err != nil {
			t.Fatal(err)
		}
		if v2.Path == v.Path {
			t.Fatalf("the second Put wrote the same Path %q", v.Path)
		}
		if got := readAll(t, s, v2); !bytes.Equal(got, want2) {
			t.Error("the second video reads other bytes")
		}
		if got := readAll(t, s, v); !bytes.Equal(got, want) {
			t.Error("the first video reads other bytes after a second conversion")
		}
	})

	t.Run("InvalidSession", func(t *testing.T) {
		for _, id := range []string{"", ".", "..", "a/b", "a b", "ses\x00"} {
			if _, err := s.Put(t.Context(), id, src); err == nil {
				t.Errorf("Put(%q) succeeded", id)
			}
		}
	})

	t.Run("MissingSource", func(t *testing.T) {
		_, err := s.Put(t.Context(), "ses_2", filepath.Join(t.TempDir(), "none.mp4"))
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Put of a missing file: %v", err)
		}
	})
}

func TestSeek(t *testing.T) {
	g := startGateway(t)
	g.bucket(t, "seek", false)
	s := g.store(t, s3video.Config{Bucket: "seek", Prefix: "cam/videos/"})
	src, want := mp4File(t, 1<<20, 3)
	v, err := s.Put(t.Context(), "ses:seek-1", src)
	if err != nil {
		t.Fatal(err)
	}
	keyOf(t, v.Path, "s3://seek/cam/videos/ses:seek-1/", ".mp4")
	f, err := s.Open(t.Context(), v)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }() // for a test that ends early: the end closes f, checked
	before := g.gets.Load()
	if n, err := f.Seek(0, io.SeekEnd); n != int64(len(want)) || err != nil {
		t.Fatalf("Seek(0, End) = %d, %v; want %d", n, err, len(want))
	}
	if n, err := f.Seek(0, io.SeekStart); n != 0 || err != nil {
		t.Fatalf("Seek(0, Start) = %d, %v", n, err)
	}
	if g.gets.Load() != before {
		t.Error("Seek sent a GetObject")
	}
	read := func(off int64, whence, n int) []byte {
		t.Helper()
		if _, err := f.Seek(off, whence); err != nil {
			t.Fatal(err)
		}
		b := make([]byte, n)
		m, err := io.ReadFull(f, b)
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("read %d at %d/%d: %v", n, off, whence, err)
		}
		return b[:m]
	}
	if got := read(123456, io.SeekStart, 1000); !bytes.Equal(got, want[123456:124456]) {
		t.Error("bytes at 123456 differ")
	}
	// Reading on from where the last read stopped uses the same response.
	gets := g.gets.Load()
	if got := read(0, io.SeekCurrent, 1000); !bytes.Equal(got, want[124456:125456]) {
		t.Error("bytes at 124456 differ")
	}
	if g.gets.Load() != gets {
		t.Error("a Read after Seek(0, Current) sent another GetObject")
	}
	if got := read(-10, io.SeekEnd, 100); !bytes.Equal(got, want[len(want)-10:]) {
		t.Errorf("last 10 bytes: got %d bytes that differ", len(got))
	}
	// io.Reader's contract: Read returns io.EOF itself, never wrapped.
	if n, err := f.Read(make([]byte, 10)); n != 0 || err != io.EOF { //nolint:errorlint // io.EOF itself
		t.Errorf("Read at the end = %d, %v; want 0, EOF", n, err)
	}
	if _, err := f.Seek(10, io.SeekEnd); err != nil {
		t.Errorf("Seek past the end: %v", err)
	}
	if n, err := f.Read(make([]byte, 10)); n != 0 || err != io.EOF { //nolint:errorlint // io.EOF itself
		t.Errorf("Read past the end = %d, %v; want 0, EOF", n, err)
	}
	if _, err := f.Seek(-1, io.SeekStart); err == nil {
		t.Error("Seek(-1, Start) succeeded")
	}
	if err := f.Close(); err != nil {
		t.Error(err)
	}
	if _, err := f.Read(make([]byte, 1)); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("Read after Close: %v", err)
	}
}

func TestServeContent(t *testing.T) {
	g := startGateway(t)
	g.bucket(t, "serve", false)
	s := g.store(t, s3video.Config{Bucket: "serve"})
	src, want := mp4File(t, 2<<20+5, 4)
	v, err := s.Put(t.Context(), "ses_serve", src)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, err := s.Open(r.Context(), v)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer closeOK(t, f)
		w.Header().Set("Content-Type", "video/mp4")
		http.ServeContent(w, r, "ses_serve.mp4", time.Time{}, f)
	}))
	defer srv.Close()

	for _, tc := range []struct {
		name, rng    string
		status       int
		from, to     int // the expected body is want[from:to]
		contentRange string
	}{
		{"Whole", "", http.StatusOK, 0, len(want), ""},
		{"Middle", "bytes=1000-1999", http.StatusPartialContent, 1000, 2000, fmt.Sprintf("bytes 1000-1999/%d", len(want))},
		{"Open", "bytes=2097000-", http.StatusPartialContent, 2097000, len(want), fmt.Sprintf("bytes 2097000-%d/%d", len(want)-1, len(want))},
		{"Suffix", "bytes=-7", http.StatusPartialContent, len(want) - 7, len(want), fmt.Sprintf("bytes %d-%d/%d", len(want)-7, len(want)-1, len(want))},
		{"FirstByte", "bytes=0-0", http.StatusPartialContent, 0, 1, fmt.Sprintf("bytes 0-0/%d", len(want))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL, nil)
			if tc.rng != "" {
				req.Header.Set("Range", tc.rng)
			}
			before, heads := g.gets.Load(), g.Heads.Load()
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %.200s", resp.StatusCode, tc.status, body)
			}
			if got := resp.Header.Get("Content-Range"); got != tc.contentRange {
				t.Errorf("Content-Range %q, want %q", got, tc.contentRange)
			}
			if !bytes.Equal(body, want[tc.from:tc.to]) {
				t.Errorf("got %d bytes, want bytes %d-%d", len(body), tc.from, tc.to)
			}
			if n := g.gets.Load() - before; n != 1 {
				t.Errorf("%d GetObject requests for one response, want 1", n)
			}
			// Open asks for the size and digest; the read asks for nothing
			// more before its GetObject.
			if n := g.Heads.Load() - heads; n != 1 {
				t.Errorf("%d HeadObject requests for one response, want 1 (Open's)", n)
			}
		})
	}
	t.Run("Unsatisfiable", func(t *testing.T) {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL, nil)
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", len(want)+10))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close() // only the status is checked
		if resp.StatusCode != http.StatusRequestedRangeNotSatisfiable {
			t.Errorf("status %d, want 416", resp.StatusCode)
		}
	})
}

func TestOpenRefuses(t *testing.T) {
	g := startGateway(t)
	g.bucket(t, "mine", false)
	g.bucket(t, "other", false)
	s := g.store(t, s3video.Config{Bucket: "mine"})
	src, _ := mp4File(t, 100, 5)
	v, err := s.Put(t.Context(), "ses_x", src)
	if err != nil {
		t.Fatal(err)
	}
	// The same bytes elsewhere: a changed row must not reach them.
	for _, key := range []string{"videos/ses_x.mp4", "ses_x.mp4", "secret/ses_x.mp4", "videos/sub/ses_x.mp4"} {
		f, _ := os.Open(src)
		_, err := g.client.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String("other"), Key: aws.String(key), Body: f})
		_ = f.Close() // read only
		if err != nil {
			t.Fatal(err)
		}
		f, _ = os.Open(src)
		_, err = g.client.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String("mine"), Key: aws.String(key), Body: f})
		_ = f.Close() // read only
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{
		"s3://other/videos/ses_x.mp4",
		"s3://mine/ses_x.mp4",
		"s3://mine/secret/ses_x.mp4",
		"s3://mine/videos/sub/ses_x.mp4",
		"s3://mine/videos/sub%2Fses_x.mp4",
		"s3://mine/videos/../ses_x.mp4",
		"s3://mine/videos/ses_x.mov",
		"s3://mine/videos/.mp4",
		"s3://mine/videos/ses_x.mp4?versionId=1&x=2",
		"s3://mine/videos/ses_x.mp4?partNumber=1",
		"s3://mine/videos/ses_x.mp4#frag",
		"s3://user@mine/videos/ses_x.mp4",
		"s3:///videos/ses_x.mp4",
		"http://mine/videos/ses_x.mp4",
		"/videos/ses_x.mp4",
		"videos/ses_x.mp4",
		"",
	} {
		w := v
		w.Path = p
		f, err := s.Open(t.Context(), w)
		if err == nil {
			_ = f.Close() // the test fails already
			t.Errorf("Open(%q) succeeded", p)
			continue
		}
		if errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "is not a video of s3://mine/videos/") {
			t.Errorf("Open(%q): %v; want a refusal", p, err)
		}
	}
	if got := readAll(t, s, v); len(got) != 100 {
		t.Errorf("Open(%q) read %d bytes", v.Path, len(got))
	}
}

func TestNotFound(t *testing.T) {
	g := startGateway(t)
	g.bucket(t, "plain", false)
	g.bucket(t, "locked", true)
	for _, bucket := range []string{"plain", "locked"} {
		t.Run(bucket, func(t *testing.T) {
			s := g.store(t, s3video.Config{Bucket: bucket})
			_, err := s.Open(t.Context(), consent.Video{Path: "s3://" + bucket + "/videos/missing.mp4", Bytes: 10})
			if !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("Open of a missing object: %v; want fs.ErrNotExist", err)
			}
			src, _ := mp4File(t, 10, 6)
			v, err := s.Put(t.Context(), "ses_nf", src)
			if err != nil {
				t.Fatal(err)
			}
			if bucket == "locked" {
				// A version that exists, but of another key.
				other := putVersion(t, g, bucket, "videos/ses_other.mp4", []byte("other"))
				w := v
				w.Path = "s3://locked/videos/ses_nf.mp4?versionId=" + other
				if _, err := s.Open(t.Context(), w); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("Open of a missing version: %v; want fs.ErrNotExist", err)
				}
			}
			f, err := s.Open(t.Context(), v)
			if err != nil {
				t.Fatal(err)
			}
			defer closeOK(t, f)
			del := &s3.DeleteObjectInput{Bucket: &bucket, Key: aws.String(keyOf(t, v.Path, "s3://"+bucket+"/videos/ses_nf/", ".mp4"))}
			if _, err := g.client.DeleteObject(t.Context(), del); err != nil {
				t.Fatal(err)
			}
			// In a versioned bucket too: a delete marker hides the key
			// from reads (the version stays, for the bucket's owner).
			_, err = io.ReadAll(f)
			if !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("read of an object deleted after Open: %v; want fs.ErrNotExist", err)
			}
			if _, err := s.Open(t.Context(), v); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("Open of a deleted object: %v; want fs.ErrNotExist", err)
			}
		})
	}
}

func TestObjectLock(t *testing.T) {
	g := startGateway(t)
	g.bucket(t, "locked", true)
	s := g.store(t, s3video.Config{Bucket: "locked", RequireObjectLock: true})
	if !s.Locking() {
		t.Fatal("Locking() = false on a bucket with Object Lock")
	}
	// A fraction of a second, which the lock rounds up.
	keepUntil := time.Now().Add(90 * time.Minute).Truncate(time.Second).Add(300 * time.Millisecond)
	src, want := mp4File(t, 200000, 7)
	v, err := s.Put(t.Context(), "ses_locked", src)
	if err != nil {
		t.Fatal(err)
	}
	key := keyOf(t, v.Path, "s3://locked/videos/ses_locked/", ".mp4")
	head, err := g.client.HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String("locked"), Key: &key})
	if err != nil {
		t.Fatal(err)
	}
	// Put does not lock: the lock job does, once a row names the video.
	if head.ObjectLockMode != "" || head.ObjectLockRetainUntilDate != nil {
		t.Errorf("Put locked the video: %s until %v", head.ObjectLockMode, head.ObjectLockRetainUntilDate)
	}
	if err := s.Lock(t.Context(), v.Path, keepUntil); err != nil {
		t.Fatal(err)
	}
	version := aws.ToString(head.VersionId)
	if got := readAll(t, s, v); !bytes.Equal(got, want) {
		t.Fatal("the locked video reads other bytes")
	}

	ret, err := g.client.GetObjectRetention(t.Context(), &s3.GetObjectRetentionInput{Bucket: aws.String("locked"), Key: &key, VersionId: &version})
	if err != nil {
		t.Fatal(err)
	}
	wantUntil := keepUntil.UTC().Add(700 * time.Millisecond)
	if ret.Retention == nil || ret.Retention.Mode != types.ObjectLockRetentionModeCompliance ||
		ret.Retention.RetainUntilDate == nil || !ret.Retention.RetainUntilDate.Equal(wantUntil) {
		t.Errorf("retention %+v, want COMPLIANCE until %v", ret.Retention, wantUntil)
	}

	// The server, not the library, must refuse an early delete, the
	// purge's included.
	if err := s.Delete(t.Context(), v.Path); err == nil {
		t.Fatal("Delete removed a version under compliance-mode Object Lock")
	}
	_, err = g.client.DeleteObject(t.Context(), &s3.DeleteObjectInput{Bucket: aws.String("locked"), Key: &key, VersionId: &version})
	if err == nil {
		t.Fatal("the server deleted a version under compliance-mode Object Lock")
	}
	t.Logf("early delete refused: %v", err)
	_, err = g.client.DeleteObject(t.Context(), &s3.DeleteObjectInput{Bucket: aws.String("locked"), Key: &key, VersionId: &version, BypassGovernanceRetention: aws.Bool(true)})
	if err == nil {
		t.Fatal("the server deleted a compliance-mode version when asked to bypass governance retention")
	}
	// Nor may the retention be shortened.
	shorter := time.Now().Add(time.Minute).UTC()
	_, err = g.client.PutObjectRetention(t.Context(), &s3.PutObjectRetentionInput{
		Bucket: aws.String("locked"), Key: &key, VersionId: &version,
		Retention: &types.ObjectLockRetention{Mode: types.ObjectLockRetentionModeCompliance, RetainUntilDate: &shorter},
	})
	if err == nil {
		t.Error("the server shortened a compliance-mode retention")
	}
	if got := readAll(t, s, v); !bytes.Equal(got, want) {
		t.Fatal("the locked video changed")
	}
	// Lock again earlier leaves the lock as it is; later extends it.
	if err := s.Lock(t.Context(), v.Path, keepUntil.Add(-time.Hour)); err != nil {
		t.Fatalf("Lock earlier than the lock: %v", err)
	}
	extended := keepUntil.Add(24 * time.Hour)
	if err := s.Lock(t.Context(), v.Path, extended); err != nil {
		t.Fatalf("Lock later than the lock: %v", err)
	}
	ret, err = g.client.GetObjectRetention(t.Context(), &s3.GetObjectRetentionInput{Bucket: aws.String("locked"), Key: &key, VersionId: &version})
	if err != nil {
		t.Fatal(err)
	}
	if wantUntil := extended.UTC().Add(700 * time.Millisecond); ret.Retention == nil || ret.Retention.RetainUntilDate == nil ||
		!ret.Retention.RetainUntilDate.Equal(wantUntil) {
		t.Errorf("retention after a later Lock %+v, want until %v", ret.Retention, wantUntil)
	}
	if err := s.Discard(t.Context(), v.Path); err == nil {
		t.Error("Discard removed a locked video")
	}

	t.Run("Reconversion", func(t *testing.T) {
		src2, want2 := mp4File(t, 5000, 8)
		v2, err := s.Put(t.Context(), "ses_locked", src2)
		if err != nil {
			t.Fatal(err)
		}
		if v2.Path == v.Path {
			t.Fatalf("the second Put wrote the same Path %q", v.Path)
		}
		if got := readAll(t, s, v2); !bytes.Equal(got, want2) {
			t.Error("the new version reads other bytes")
		}
		if got := readAll(t, s, v); !bytes.Equal(got, want) {
			t.Error("the first version reads other bytes after a re-conversion")
		}
	})

	t.Run("NoFutureDate", func(t *testing.T) {
		for _, until := range []time.Time{{}, time.Now().Add(-time.Hour)} {
			v, err := s.Put(t.Context(), "ses_unlocked", src)
			if err != nil {
				t.Fatalf("Put (then Lock until %v): %v", until, err)
			}
			if err := s.Lock(t.Context(), v.Path, until); err != nil {
				t.Fatalf("Lock until %v: %v", until, err)
			}
			key := keyOf(t, v.Path, "s3://locked/videos/ses_unlocked/", ".mp4")
			head, err := g.client.HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String("locked"), Key: &key})
			if err != nil {
				t.Fatal(err)
			}
			if head.ObjectLockMode != "" || head.ObjectLockRetainUntilDate != nil {
				t.Errorf("Lock until %v locked the video: %s until %v", until, head.ObjectLockMode, head.ObjectLockRetainUntilDate)
			}
			if err := s.Delete(t.Context(), v.Path); err != nil {
				t.Errorf("Delete of an unlocked version: %v", err)
			}
			if _, err := s.Open(t.Context(), v); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("Open after Delete: %v, want fs.ErrNotExist", err)
			}
		}
	})
}

// Delete removes the video for good, with every other video of the
// session (the uploads of attempts that never committed) but not a
// screenshot of the same id; a video already gone is no error; a path
// outside the store is refused.
func TestDelete(t *testing.T) {
	g := startGateway(t)
	g.bucket(t, "plain", false)
	s := g.store(t, s3video.Config{Bucket: "plain"})
	src, _ := mp4File(t, 1000, 3)
	v, err := s.Put(t.Context(), "ses_gone", src)
	if err != nil {
		t.Fatal(err)
	}
	orphan, err := s.Put(t.Context(), "ses_gone", src) // an attempt whose commit never came
	if err != nil {
		t.Fatal(err)
	}
	png := []byte("\x89PNG of a certificate that shares the id")
	shot, err := s.PutScreenshot(t.Context(), "ses_gone", png)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := s.Delete(t.Context(), v.Path); err != nil {
			t.Fatalf("Delete #%d: %v", i+1, err)
		}
	}
	for _, gone := range []consent.Video{v, orphan} {
		if _, err := s.Open(t.Context(), gone); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Open of %s after Delete: %v, want fs.ErrNotExist", gone.Path, err)
		}
	}
	if got := readAll(t, s, shot); !bytes.Equal(got, png) {
		t.Errorf("the screenshot of the same id reads %q after the video's Delete", got)
	}
	for _, p := range []string{"s3://other/videos/ses_gone.mp4", "s3://plain/elsewhere/ses_gone.mp4", "/tmp/ses_gone.mp4"} {
		if err := s.Delete(t.Context(), p); err == nil {
			t.Errorf("Delete(%q) succeeded", p)
		}
	}
}

// Put leaves a video unlocked, even with a retention date, in a bucket
// with Object Lock: an upload whose commit never came (D45) can be
// discarded, that one object alone, and Delete removes it too.
func TestPutDoesNotLock(t *testing.T) {
	g := startGateway(t)
	g.bucket(t, "locked", true)
	s := g.store(t, s3video.Config{Bucket: "locked", RequireObjectLock: true})
	src, want := mp4File(t, 1000, 4)
	named, err := s.Put(t.Context(), "ses_put", src)
	if err != nil {
		t.Fatal(err)
	}
	orphan, err := s.Put(t.Context(), "ses_put", src) // its commit never came
	if err != nil {
		t.Fatal(err)
	}
	shot, err := s.PutScreenshot(t.Context(), "cert_put", []byte("\x89PNG"))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []consent.Video{named, orphan, shot} {
		key := strings.TrimPrefix(v.Path, "s3://locked/")
		head, err := g.client.HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String("locked"), Key: &key})
		if err != nil {
			t.Fatal(err)
		}
		if head.ObjectLockMode != "" || head.ObjectLockRetainUntilDate != nil {
			t.Errorf("%s locked at Put: %s until %v", v.Path, head.ObjectLockMode, head.ObjectLockRetainUntilDate)
		}
	}
	for i := range 2 {
		if err := s.Discard(t.Context(), orphan.Path); err != nil {
			t.Fatalf("Discard #%d of an unlocked video: %v", i+1, err)
		}
	}
	if _, err := s.Open(t.Context(), orphan); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open after Discard: %v, want fs.ErrNotExist", err)
	}
	if got := readAll(t, s, named); !bytes.Equal(got, want) {
		t.Error("Discard of one video of the session removed another")
	}
	if err := s.Delete(t.Context(), shot.Path); err != nil {
		t.Errorf("Delete of a screenshot never locked: %v", err)
	}
	if err := s.Discard(t.Context(), "s3://other/videos/ses_put/x.mp4"); err == nil {
		t.Error("Discard of a path outside the store succeeded")
	}
}

func TestNoObjectLock(t *testing.T) {
	g := startGateway(t)
	g.bucket(t, "plain", false)
	s := g.store(t, s3video.Config{Bucket: "plain"})
	if s.Locking() {
		t.Error("Locking() = true")
	}
	_, err := s3video.New(t.Context(), s3video.Config{Bucket: "plain", Client: g.client, RequireObjectLock: true})
	if err == nil || !strings.Contains(err.Error(), "does not have Object Lock enabled") {
		t.Errorf("New with RequireObjectLock on a bucket without Object Lock: %v", err)
	}
	if _, err := s3video.New(t.Context(), s3video.Config{Bucket: "missing", Client: g.client}); err == nil {
		t.Error("New on a missing bucket succeeded")
	}
}

func TestStaticKeys(t *testing.T) {
	g := startGateway(t)
	g.bucket(t, "conf", false)

	t.Run("OK", func(t *testing.T) {
		s, err := s3video.New(t.Context(), s3video.Config{
			Bucket: "conf", Endpoint: g.endpoint, AccessKeyID: accessKey, SecretAccessKey: secretKey, PathStyle: true,
		})
		if err != nil {
			t.Fatal(err)
		}
		src, want := mp4File(t, 4096, 9)
		v, err := s.Put(t.Context(), "ses_conf", src)
		if err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, s, v); !bytes.Equal(got, want) {
			t.Error("read other bytes")
		}
	})
	t.Run("WrongSecret", func(t *testing.T) {
		_, err := s3video.New(t.Context(), s3video.Config{
			Bucket: "conf", Endpoint: g.endpoint, AccessKeyID: accessKey, SecretAccessKey: "wrong", PathStyle: true,
		})
		if err == nil {
			t.Error("New with a wrong secret succeeded")
		}
	})
}

// TestConfigRefused needs no server: New refuses these before any request.
func TestConfigRefused(t *testing.T) {
	const endpoint = "http://127.0.0.1:1"
	client := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint)})
	for _, tc := range []struct {
		name string
		cfg  s3video.Config
		msg  string
	}{
		{"NoBucket", s3video.Config{Client: client}, "Bucket is required"},
		{"NoClient", s3video.Config{Bucket: "conf"}, "needs either Client"},
		{"NoSecret", s3video.Config{Bucket: "conf", AccessKeyID: accessKey}, "needs either Client"},
		{"ClientAndEndpoint", s3video.Config{Bucket: "conf", Client: client, Endpoint: endpoint}, "exclude each other"},
		{"ClientAndKeys", s3video.Config{Bucket: "conf", Client: client, AccessKeyID: "a", SecretAccessKey: "b"}, "exclude each other"},
		{"BadEndpoint", s3video.Config{Bucket: "conf", Endpoint: "127.0.0.1:7070", AccessKeyID: "a", SecretAccessKey: "b"}, "not an http or https URL"},
		{"PrefixNoSlash", s3video.Config{Bucket: "conf", Client: client, Prefix: "videos"}, "Prefix"},
		{"PrefixLeadingSlash", s3video.Config{Bucket: "conf", Client: client, Prefix: "/videos/"}, "Prefix"},
		{"PrefixDotDot", s3video.Config{Bucket: "conf", Client: client, Prefix: "a/../"}, "Prefix"},
		{"PrefixEmptySegment", s3video.Config{Bucket: "conf", Client: client, Prefix: "a//"}, "Prefix"},
		{"PrefixSpace", s3video.Config{Bucket: "conf", Client: client, Prefix: "my videos/"}, "Prefix"},
		{"PrefixRoot", s3video.Config{Bucket: "conf", Client: client, Prefix: "/"}, "Prefix"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s3video.New(t.Context(), tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("New: %v; want an error saying %q", err, tc.msg)
			}
		})
	}
}

// An attestation's screenshot (D49) is kept beside the videos as
// <certificate>/<time>-<random>.png, image/png, locked as a video is (by
// Lock, not at PutScreenshot); it opens with the
// statement's SHA-256 and no size, and is deleted by its Path.
func TestScreenshot(t *testing.T) {
	g := startGateway(t)
	g.bucket(t, "locked", true)
	s := g.store(t, s3video.Config{Bucket: "locked", RequireObjectLock: true})
	png := []byte("\x89PNG\r\n\x1a\n the consent moment")
	v, err := s.PutScreenshot(t.Context(), "cert_1", png)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Lock(t.Context(), v.Path, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	key := keyOf(t, v.Path, "s3://locked/videos/cert_1/", ".png")
	if v.Bytes != int64(len(png)) || v.SHA256 != sha256.Sum256(png) {
		t.Fatalf("PutScreenshot = %+v", v)
	}
	head, err := g.client.HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String("locked"), Key: &key})
	if err != nil {
		t.Fatal(err)
	}
	if ct := aws.ToString(head.ContentType); ct != "image/png" || head.ObjectLockMode != types.ObjectLockModeCompliance {
		t.Errorf("Content-Type %q, lock %q; want image/png, COMPLIANCE", ct, head.ObjectLockMode)
	}
	if got := readAll(t, s, consent.Video{Path: v.Path, SHA256: v.SHA256}); !bytes.Equal(got, png) {
		t.Errorf("the screenshot reads %q", got)
	}
	wrong := consent.Video{Path: v.Path, SHA256: v.SHA256}
	wrong.SHA256[0] ^= 1
	if _, err := s.Open(t.Context(), wrong); err == nil {
		t.Error("Open of a screenshot whose SHA-256 differs from the statement's succeeded")
	}
	if err := s.Delete(t.Context(), v.Path); err == nil {
		t.Error("Delete removed a locked screenshot")
	}
	unlocked, err := s.PutScreenshot(t.Context(), "cert_2", png)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(t.Context(), unlocked.Path); err != nil {
		t.Errorf("Delete of an unlocked screenshot: %v", err)
	}
	if _, err := s.Open(t.Context(), unlocked); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open after Delete: %v, want fs.ErrNotExist", err)
	}
	if _, err := s.PutScreenshot(t.Context(), "a/b", png); err == nil {
		t.Error("PutScreenshot of an id that cannot name an object succeeded")
	}
}

// keyOf checks that path names a key Put writes — the prefix given (the
// bucket's URL, the store's prefix and the id), a time, a random part, the
// extension — and returns the object's key in the bucket.
func keyOf(t *testing.T, path, prefix, ext string) string {
	t.Helper()
	rest, ok := strings.CutPrefix(path, prefix)
	if !ok || !regexp.MustCompile(`^[0-9]{8}T[0-9]{6}\.[0-9]{9}Z-[0-9a-f]{8}`+regexp.QuoteMeta(ext)+`$`).MatchString(rest) {
		t.Fatalf("Path %q, want %s<time>-<random>%s", path, prefix, ext)
	}
	_, key, _ := strings.Cut(strings.TrimPrefix(path, "s3://"), "/")
	return key
}

// putVersion writes body under key as the store did before it wrote each
// video under a key of its own, and returns the version's id.
func putVersion(t *testing.T, g *gateway, bucket, key string, body []byte) string {
	t.Helper()
	out, err := g.client.PutObject(t.Context(), &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(body)})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.VersionId)
}

// Videos written before each had a key of its own keep opening: a Path
// that names a version reads that version, whatever was written over it
// since; a Path without one reads the object. Delete removes every
// version of such a key.
func TestPathsWrittenBefore(t *testing.T) {
	g := startGateway(t)
	g.bucket(t, "locked", true)
	g.bucket(t, "plain", false)
	s := g.store(t, s3video.Config{Bucket: "locked"})
	first, second := []byte("the first conversion"), []byte("the second, written over it")
	v1 := putVersion(t, g, "locked", "videos/ses_old.mp4", first)
	v2 := putVersion(t, g, "locked", "videos/ses_old.mp4", second)
	if v1 == "" || v1 == v2 {
		t.Fatalf("versions %q and %q", v1, v2)
	}
	for _, c := range []struct {
		version string
		want    []byte
	}{{v1, first}, {v2, second}} {
		v := consent.Video{Path: "s3://locked/videos/ses_old.mp4?versionId=" + c.version, Bytes: int64(len(c.want)), SHA256: sha256.Sum256(c.want)}
		if got := readAll(t, s, v); !bytes.Equal(got, c.want) {
			t.Errorf("version %s reads %q, want %q", c.version, got, c.want)
		}
	}
	if err := s.Delete(t.Context(), "s3://locked/videos/ses_old.mp4?versionId="+v1); err != nil {
		t.Fatal(err)
	}
	for _, version := range []string{v1, v2} {
		v := consent.Video{Path: "s3://locked/videos/ses_old.mp4?versionId=" + version}
		if _, err := s.Open(t.Context(), v); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Open of version %s after Delete: %v, want fs.ErrNotExist", version, err)
		}
	}

	plain := g.store(t, s3video.Config{Bucket: "plain"})
	putVersion(t, g, "plain", "videos/ses_old.mp4", first)
	v := consent.Video{Path: "s3://plain/videos/ses_old.mp4", Bytes: int64(len(first)), SHA256: sha256.Sum256(first)}
	if got := readAll(t, plain, v); !bytes.Equal(got, first) {
		t.Errorf("an unversioned video written before reads %q", got)
	}
}

// D45: a retained video is locked until its session's retention date, and
// a retention that moves the date asks again (JobLockVideo calls Lock). A
// video written before each had a key of its own (a path naming a
// version), locked at its write until the date then, is locked again to
// the later date: Lock left it as it was.
func TestVersionedVideoLockExtended(t *testing.T) {
	g := startGateway(t)
	g.bucket(t, "locked", true)
	s := g.store(t, s3video.Config{Bucket: "locked"})
	key := "videos/ses_old.mp4"
	v1 := putVersion(t, g, "locked", key, []byte("the old conversion"))
	first := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	if _, err := g.client.PutObjectRetention(t.Context(), &s3.PutObjectRetentionInput{Bucket: aws.String("locked"), Key: &key, VersionId: &v1,
		Retention: &types.ObjectLockRetention{Mode: types.ObjectLockRetentionModeCompliance, RetainUntilDate: &first}}); err != nil {
		t.Fatal(err)
	}
	path := "s3://locked/" + key + "?versionId=" + v1
	later := time.Now().Add(3 * time.Hour)
	if err := s.Lock(t.Context(), path, later); err != nil {
		t.Fatal(err)
	}
	h, err := g.client.HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String("locked"), Key: &key, VersionId: &v1})
	if err != nil {
		t.Fatal(err)
	}
	if got := aws.ToTime(h.ObjectLockRetainUntilDate); got.Before(later.Truncate(time.Second)) {
		t.Errorf("after Lock(%s) the video %s is locked until %s only: deletable before its session's retention date", later.UTC(), path, got.UTC())
	}
}
