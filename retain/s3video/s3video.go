// Package s3video is a retain.VideoStore that keeps converted videos in
// S3-compatible object storage: Amazon S3, or a server that speaks its API
// such as MinIO, Ceph or versitygw (D45).
//
//	videos, err := s3video.New(ctx, s3video.Config{Bucket: "consent-videos", RequireObjectLock: true})
//	w, err := retain.NewWorker(retain.WorkerConfig{Service: svc, Converter: conv, Videos: videos}) // writes
//	h, err := httpadapter.New(httpadapter.Config{Service: svc, Videos: videos})                  // serves
//
// The section Example below gives a whole Config.
//
// A session's video is the object <Prefix><session>.mp4 of the bucket
// (Prefix defaults to "videos/"). Put hashes the MP4 first and then streams
// it with one PutObject, sending its SHA-256 in x-amz-checksum-sha256: a
// server that checks it (Amazon S3, MinIO and versitygw do) refuses a body
// that does not match, so the stored object is exactly the video that
// consent.Video describes. The video's Path names the bucket, the key and,
// when the bucket keeps versions, the version Put wrote:
//
//	s3://bucket/videos/ses_123.mp4?versionId=3HL4kqtJlcpXroDTDmJ
//
// Open reads exactly that version, so a later conversion of the same session
// (a new version) never changes what an earlier row points at. In a bucket
// without versions a later Put replaces the object, and Open refuses to serve
// it for a row whose size, or SHA-256 where the server reports one, differs.
// Open refuses a Path outside the store's bucket and prefix, as retain.Dir
// refuses a path outside its directory: a changed database row cannot make it
// read another object.
//
// # Object Lock
//
// D45 asks that a retained video be undeletable until its retention date
// where the storage can do that. New asks the bucket for its Object Lock
// configuration (GetObjectLockConfiguration). When Object Lock is enabled,
// every Put writes its object version in COMPLIANCE mode with a
// retain-until date of keepUntil, in UTC and rounded up to the whole second:
// until then nobody, the bucket's owner included, can delete that version or
// shorten its retention. A keepUntil that is zero or not in the future writes
// no retention of its own (the bucket's default retention, if it has one,
// still applies). A bucket without Object Lock stores videos unlocked; set
// Config.RequireObjectLock to make New fail instead. Locking tells which
// applies. Object Lock can only be enabled on a bucket when it is created
// (CreateBucket with ObjectLockEnabledForBucket), and such a bucket keeps
// versions.
//
// # Reading
//
// Open asks for the object's metadata once (HeadObject): a missing object or
// version is reported then, as an error for which errors.Is(err,
// fs.ErrNotExist) holds, as with retain.Dir. The returned io.ReadSeekCloser
// reads lazily: Seek only moves the offset, and the first Read after it asks
// for the rest of the object from there (GetObject with Range: bytes=off-).
// http.ServeContent therefore makes one GetObject per range it serves. The
// reads use the context given to Open.
//
// # Example
//
//	store, err := s3video.New(ctx, s3video.Config{
//		Bucket:          "consent-videos",
//		Endpoint:        "http://127.0.0.1:7070", // empty for Amazon S3
//		Region:          "us-east-1",
//		AccessKeyID:     os.Getenv("AWS_ACCESS_KEY_ID"),
//		SecretAccessKey: os.Getenv("AWS_SECRET_ACCESS_KEY"),
//		PathStyle:       true,
//	})
//	if err != nil {
//		return err
//	}
//	log.Printf("videos in S3, Object Lock: %v", store.Locking())
//	w, err := retain.NewWorker(retain.WorkerConfig{Service: svc, Converter: conv, Videos: store})
//
// A host that configures the AWS SDK its own way (credential chain, IAM
// roles, custom HTTP client) passes its *s3.Client in Config.Client instead.
//
// The credentials need s3:GetBucketObjectLockConfiguration (New),
// s3:PutObject and, on a bucket with Object Lock, s3:PutObjectRetention
// (Put), and s3:GetObject and s3:GetObjectVersion (Open). They need no right
// to delete. Put sends one PutObject, so a video is limited to the 5 GiB a
// single upload may hold.
package s3video

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/s3api"
	"github.com/consentkit/consentkit/retain"
)

// Config configures a Store. Bucket is required, and either Client or the
// connection fields (Endpoint, Region, AccessKeyID, SecretAccessKey,
// PathStyle), not both. Zero values of the rest mean their defaults.
type Config struct {
	// Bucket holds the videos. It must exist.
	Bucket string
	// Prefix is put before every key: default "videos/". It must end with
	// "/" and hold only letters, digits, '-', '_', '.' and '/', with no
	// empty, "." or ".." segment.
	Prefix string
	// RequireObjectLock makes New fail when the bucket does not have Object
	// Lock enabled, for deployments where videos must be undeletable (D45).
	RequireObjectLock bool

	// Client is a ready S3 client, configured by the host (credentials,
	// region, endpoint) its own way.
	Client *s3.Client

	// Without Client, New builds one from these fields. Endpoint is the
	// server's URL, such as "http://127.0.0.1:9000": empty for Amazon S3.
	// Region defaults to "us-east-1". AccessKeyID and SecretAccessKey are
	// required static credentials. PathStyle asks for
	// http://host/bucket/key addresses instead of http://bucket.host/key,
	// as most S3-compatible servers need.
	Endpoint        string
	Region          string
	AccessKeyID     string
	SecretAccessKey string
	PathStyle       bool
}

// Store is a retain.VideoStore in an S3 bucket. It is safe for concurrent
// use.
type Store struct {
	client  *s3.Client
	bucket  string
	prefix  string
	locking bool
}

var _ retain.VideoStore = (*Store)(nil)

// New checks cfg, asks the bucket whether it has Object Lock enabled, and
// returns a Store. It fails when the bucket cannot be reached or its Object
// Lock configuration cannot be read (a server that does not implement that
// request counts as a bucket without Object Lock), and, with
// RequireObjectLock, when the bucket has no Object Lock.
func New(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("s3video: Config.Bucket is required")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "videos/"
	}
	if !validPrefix(cfg.Prefix) {
		return nil, fmt.Errorf("s3video: Config.Prefix %q must end with \"/\" and hold only letters, digits, '-', '_', '.' and '/', with no empty, \".\" or \"..\" segment", cfg.Prefix)
	}
	client := cfg.Client
	if client == nil {
		var err error
		if client, err = NewClient(cfg); err != nil {
			return nil, err
		}
	} else if cfg.Endpoint != "" || cfg.Region != "" || cfg.AccessKeyID != "" || cfg.SecretAccessKey != "" || cfg.PathStyle {
		return nil, errors.New("s3video: Config.Client and the connection fields (Endpoint, Region, AccessKeyID, SecretAccessKey, PathStyle) exclude each other")
	}
	s := &Store{client: client, bucket: cfg.Bucket, prefix: cfg.Prefix}

	out, err := client.GetObjectLockConfiguration(ctx, &s3.GetObjectLockConfigurationInput{Bucket: &s.bucket})
	switch code := s3api.ErrorCode(err); {
	case err == nil:
		s.locking = out.ObjectLockConfiguration != nil &&
			out.ObjectLockConfiguration.ObjectLockEnabled == types.ObjectLockEnabledEnabled
	case code == "ObjectLockConfigurationNotFoundError" || code == "NotImplemented":
		// The bucket has no Object Lock, or the server has none at all.
	default:
		return nil, fmt.Errorf("s3video: read the Object Lock configuration of bucket %s: %w", s.bucket, err)
	}
	if cfg.RequireObjectLock && !s.locking {
		return nil, fmt.Errorf("s3video: bucket %s does not have Object Lock enabled, and Config.RequireObjectLock asks for it (Object Lock can only be enabled when a bucket is created)", s.bucket)
	}
	return s, nil
}

// NewClient makes the S3 client that New makes from cfg's connection
// fields (Endpoint, Region, AccessKeyID, SecretAccessKey, PathStyle), for
// another store in the same bucket (blob/s3blob).
func NewClient(cfg Config) (*s3.Client, error) {
	if cfg.AccessKeyID == "" || cfg.SecretAccessKey == "" {
		return nil, errors.New("s3video: Config needs either Client or AccessKeyID and SecretAccessKey")
	}
	opts := s3.Options{
		Region:       cfg.Region,
		UsePathStyle: cfg.PathStyle,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: cfg.AccessKeyID, SecretAccessKey: cfg.SecretAccessKey, Source: "s3video.Config"}, nil
		}),
	}
	if opts.Region == "" {
		opts.Region = "us-east-1"
	}
	if cfg.Endpoint != "" {
		u, err := url.Parse(cfg.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("s3video: Config.Endpoint %q is not an http or https URL", cfg.Endpoint)
		}
		opts.BaseEndpoint = aws.String(cfg.Endpoint)
	}
	return s3.New(opts), nil
}

// validPrefix keeps prefixes to characters that mean the same in an S3 key,
// a URL path and a file name, so that Path round-trips and every server
// stores the key as written.
func validPrefix(p string) bool {
	if !strings.HasSuffix(p, "/") {
		return false
	}
	for _, seg := range strings.Split(strings.TrimSuffix(p, "/"), "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
		for i := 0; i < len(seg); i++ {
			c := seg[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
				return false
			}
		}
	}
	return true
}

// Locking reports whether Put writes videos under Object Lock in compliance
// mode, that is whether the bucket had Object Lock enabled when New looked.
func (s *Store) Locking() bool { return s.locking }

// Put uploads the MP4 at src as <Prefix><sessionID>.mp4 and returns its
// Path, size and SHA-256. With Locking, the new object version is locked in
// compliance mode until keepUntil when that is in the future (D45). A bucket
// that keeps versions keeps the earlier video too, and its Path still opens
// it.
func (s *Store) Put(ctx context.Context, sessionID, src string, keepUntil time.Time) (consent.Video, error) {
	f, err := os.Open(src)
	if err != nil {
		return consent.Video{}, err
	}
	defer func() { _ = f.Close() }() // read only: its Close loses nothing
	return s.put(ctx, sessionID, ".mp4", "video/mp4", f, keepUntil)
}

// PutScreenshot uploads png, an attestation's screenshot (D49), as
// <Prefix><certificateID>.png, locked as Put locks a video.
func (s *Store) PutScreenshot(ctx context.Context, certificateID string, png []byte, keepUntil time.Time) (consent.Video, error) {
	return s.put(ctx, certificateID, ".png", "image/png", bytes.NewReader(png), keepUntil)
}

// put uploads body as <Prefix><id><ext>.
func (s *Store) put(ctx context.Context, id, ext, contentType string, body io.ReadSeeker, keepUntil time.Time) (consent.Video, error) {
	if !consent.ValidID(id) || id == "." || id == ".." {
		return consent.Video{}, fmt.Errorf("s3video: %q cannot name an object", id)
	}
	// The SHA-256 goes in the request, so it is computed before the upload.
	h := sha256.New()
	n, err := io.Copy(h, body)
	if err != nil {
		return consent.Video{}, err
	}
	if _, err := body.Seek(0, io.SeekStart); err != nil {
		return consent.Video{}, err
	}
	var v consent.Video
	copy(v.SHA256[:], h.Sum(nil))
	key := s.prefix + id + ext
	in := &s3.PutObjectInput{
		Bucket:        &s.bucket,
		Key:           &key,
		Body:          body,
		ContentLength: &n,
		ContentType:   aws.String(contentType),
		// Object Lock requires an integrity checksum on the request, and
		// with it the server verifies the body against the digest that
		// consent.Video records.
		ChecksumSHA256: aws.String(base64.StdEncoding.EncodeToString(v.SHA256[:])),
	}
	// The server refuses a retain-until date in the past; ours is only a
	// guard against sending one, so the local clock is good enough.
	if s.locking && keepUntil.After(time.Now()) {
		until := keepUntil.UTC()
		if t := until.Truncate(time.Second); !t.Equal(until) {
			until = t.Add(time.Second) // never release before keepUntil
		}
		in.ObjectLockMode = types.ObjectLockModeCompliance
		in.ObjectLockRetainUntilDate = &until
	}
	out, err := s.client.PutObject(ctx, in)
	if err != nil {
		return consent.Video{}, fmt.Errorf("s3video: upload %s to s3://%s/%s: %w", id+ext, s.bucket, key, err)
	}
	v.Path = s.path(key, aws.ToString(out.VersionId))
	v.Bytes = n
	return v, nil
}

func (s *Store) path(key, versionID string) string {
	u := url.URL{Scheme: "s3", Host: s.bucket, Path: "/" + key}
	if versionID != "" {
		u.RawQuery = url.Values{"versionId": {versionID}}.Encode()
	}
	return u.String()
}

// object is what a Path names: a key of the store and maybe a version.
type object struct {
	key, version string
}

// parse reads a Path that Put wrote, refusing anything that is not a video
// of this store's bucket and prefix.
func (s *Store) parse(p string) (object, error) {
	bad := fmt.Errorf("s3video: video path %q is not a video of s3://%s/%s", p, s.bucket, s.prefix)
	u, err := url.Parse(p)
	if err != nil || u.Scheme != "s3" || u.Host != s.bucket || u.User != nil || u.Opaque != "" || u.Fragment != "" || u.RawFragment != "" {
		return object{}, bad
	}
	name, ok := strings.CutPrefix(u.Path, "/"+s.prefix)
	if !ok {
		return object{}, bad
	}
	id, ok := strings.CutSuffix(name, ".mp4")
	if !ok {
		id, ok = strings.CutSuffix(name, ".png")
	}
	if !ok || !consent.ValidID(id) || id == "." || id == ".." {
		return object{}, bad
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return object{}, bad
	}
	o := object{key: s.prefix + name}
	for k, vs := range q {
		if k != "versionId" || len(vs) != 1 || vs[0] == "" {
			return object{}, bad
		}
		o.version = vs[0]
	}
	return o, nil
}

// Open returns the video at v.Path, which must be an object of the store's
// bucket and prefix. A missing object or version gives an error for which
// errors.Is(err, fs.ErrNotExist) holds. Open fails when the object's size,
// or the SHA-256 the server reports for it, differs from v. Reads use ctx.
func (s *Store) Open(ctx context.Context, v consent.Video) (io.ReadSeekCloser, error) {
	o, err := s.parse(v.Path)
	if err != nil {
		return nil, err
	}
	head, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{
		Bucket:       &s.bucket,
		Key:          &o.key,
		VersionId:    s3api.Optional(o.version),
		ChecksumMode: types.ChecksumModeEnabled,
	})
	if err != nil {
		return nil, s.readError("open", v.Path, err)
	}
	size := aws.ToInt64(head.ContentLength)
	if v.Bytes != 0 && size != v.Bytes {
		return nil, fmt.Errorf("s3video: %s holds %d bytes, not the video's %d", v.Path, size, v.Bytes)
	}
	if sum, err := base64.StdEncoding.DecodeString(aws.ToString(head.ChecksumSHA256)); err == nil && len(sum) == sha256.Size &&
		head.ChecksumType != types.ChecksumTypeComposite && !v.SHA256.IsZero() && consent.Digest(sum) != v.SHA256 {
		return nil, fmt.Errorf("s3video: %s has SHA-256 %x, not the video's %s", v.Path, sum, v.SHA256)
	}
	return &reader{ctx: ctx, s: s, path: v.Path, obj: o, etag: aws.ToString(head.ETag), size: size}, nil
}

// Delete removes the object version at path, which must be an object of
// the store's bucket and prefix: deleting a version is permanent. A version
// under Object Lock is refused by the server until its retain-until date.
// An object or version already gone is not an error.
func (s *Store) Delete(ctx context.Context, path string) error {
	o, err := s.parse(path)
	if err != nil {
		return err
	}
	_, err = s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.bucket, Key: &o.key, VersionId: s3api.Optional(o.version)})
	if err != nil {
		if err := s.readError("delete", path, err); errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("s3video: delete %s: %w", path, err)
	}
	return nil
}

// readError wraps err, making a missing object or version fs.ErrNotExist.
func (s *Store) readError(op, path string, err error) error {
	if s3api.Missing(err) {
		return fmt.Errorf("s3video: %s %s: %w (%w)", op, path, fs.ErrNotExist, err)
	}
	return fmt.Errorf("s3video: %s %s: %w", op, path, err)
}

// reader reads an object from an offset on. body, when not nil, is the
// response of a GetObject that started at off.
type reader struct {
	ctx    context.Context
	s      *Store
	path   string
	obj    object
	etag   string
	size   int64
	off    int64
	body   io.ReadCloser
	closed bool
}

func (r *reader) Read(p []byte) (int, error) {
	if r.closed {
		return 0, fs.ErrClosed
	}
	if r.off >= r.size {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	if r.body == nil {
		in := &s3.GetObjectInput{
			Bucket:    &r.s.bucket,
			Key:       &r.obj.key,
			VersionId: s3api.Optional(r.obj.version),
			// Without a version, the key could be written anew between
			// the HeadObject of Open and here: read only what Open saw.
			IfMatch: s3api.Optional(r.etag),
		}
		if r.off > 0 {
			in.Range = aws.String(fmt.Sprintf("bytes=%d-", r.off))
		}
		out, err := r.s.client.GetObject(r.ctx, in)
		if err != nil {
			return 0, r.s.readError("read", r.path, err)
		}
		r.body = out.Body
	}
	n, err := r.body.Read(p)
	r.off += int64(n)
	switch {
	case err == nil:
	case errors.Is(err, io.EOF) && r.off >= r.size:
		err = io.EOF
	default:
		// A broken or short response: the next Read asks again from here.
		_ = r.body.Close() // err says what broke
		r.body = nil
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
	}
	return n, err
}

// Seek moves the offset without a request; the next Read asks from there.
func (r *reader) Seek(offset int64, whence int) (int64, error) {
	if r.closed {
		return 0, fs.ErrClosed
	}
	var off int64
	switch whence {
	case io.SeekStart:
		off = offset
	case io.SeekCurrent:
		off = r.off + offset
	case io.SeekEnd:
		off = r.size + offset
	default:
		return 0, fmt.Errorf("s3video: seek %s: invalid whence %d", r.path, whence)
	}
	if off < 0 {
		return 0, fmt.Errorf("s3video: seek %s: negative offset %d", r.path, off)
	}
	if off != r.off && r.body != nil {
		_ = r.body.Close() // the rest of this response is not wanted
		r.body = nil
	}
	r.off = off
	return off, nil
}

func (r *reader) Close() error {
	if r.closed {
		return fs.ErrClosed
	}
	r.closed = true
	if r.body != nil {
		return r.body.Close()
	}
	return nil
}
