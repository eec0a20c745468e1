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
// Every object is written and read through a blob/s3blob store on the
// bucket and Prefix (default "videos/"): the S3 code, its checksums and
// its locks, live there once, shared with the finished recordings (D52).
// A session's video is the object <Prefix><session>/<time>-<random>.mp4,
// a key of its own that nothing writes over, uploaded with its SHA-256,
// which the server checks (Amazon S3, MinIO and versitygw do), so the
// stored object is exactly the video that consent.Video describes. The
// video's Path names the bucket and the key:
//
//	s3://bucket/videos/ses_123/20261129T063000.123456789Z-9f2c41d0.mp4
//
// A later conversion of the same session writes another key, so it never
// changes what an earlier row points at, and a retried conversion never
// meets an earlier attempt's lock; the purge's Delete removes every video
// of the session, an attempt's that never committed included. Paths written before each video had a
// key of its own — <Prefix><session>.mp4, with ?versionId=… where the
// bucket keeps versions — still open, that version exactly. Open refuses a
// Path outside the store's bucket and prefix, or of another shape, as
// retain.Dir refuses a path outside its directory: a changed database row
// cannot make it read another object. Open also refuses an object whose
// size, or SHA-256 where the server reports one, differs from the row's.
//
// # Object Lock
//
// D45 asks that a retained video be undeletable until its retention date
// where the storage can do that. Put and PutScreenshot do not lock: the
// transaction that records an object asks for its lock, and the lock job
// (retain.JobLockVideo, retain.JobLockScreenshot) calls Lock once it has
// committed, so that an upload whose commit never came (a lost lease, a
// session purged meanwhile, a crash) is never locked for years with no row
// naming it; the worker removes it with Discard when it can tell, and the
// purge's Delete otherwise. Lock locks an object until its date, rounded
// up to the whole second, when that is in the future: where the bucket
// has Object Lock, in COMPLIANCE mode, so that nobody, the bucket's owner
// included, can delete it or shorten its retention before then; in a
// bucket without it, with a tag that this library honours and the
// bucket's owner need not (s3blob). Set Config.RequireObjectLock to make
// New refuse a bucket without Object Lock; Locking tells which applies.
// Object Lock can only be enabled on a bucket when it is created
// (CreateBucket with ObjectLockEnabledForBucket), and such a bucket keeps
// versions.
//
// # Reading
//
// Open asks for the object's metadata once (HeadObject): a missing object or
// version is reported then, as an error for which errors.Is(err,
// fs.ErrNotExist) holds, as with retain.Dir. The returned io.ReadSeekCloser
// reads lazily: Seek only moves the offset, and the first Read after it asks
// for the rest of the object from there (one GetObject with Range:
// bytes=off-, nothing before it: Open asked for the size). Open makes one
// HeadObject, and http.ServeContent one GetObject per range it serves. The
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
// The credentials are s3blob's: s3:GetBucketObjectLockConfiguration (New),
// s3:PutObject, s3:GetObject, s3:GetObjectVersion, s3:ListBucket,
// s3:ListBucketVersions,
// s3:DeleteObject and s3:DeleteObjectVersion (the purge deletes a video
// once its retention ends), and either s3:PutObjectRetention and
// s3:GetObjectRetention (with Object Lock; s3:BypassGovernanceRetention
// too for objects already under a GOVERNANCE retention, which Lock turns
// into COMPLIANCE) or s3:PutObjectTagging and s3:GetObjectTagging
// (without). One upload holds at most 5 GiB.
package s3video

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/consentkit/consentkit/blob"
	"github.com/consentkit/consentkit/blob/s3blob"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/retain"
	"github.com/consentkit/consentkit/retain/internal/videokey"
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
	blobs  *s3blob.Store // every object is written and read through it
	bucket string
	prefix string
}

var (
	_ retain.VideoStore     = (*Store)(nil)
	_ retain.VideoDiscarder = (*Store)(nil)
	_ retain.VideoSweeper   = (*Store)(nil)
)

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
	blobs, err := s3blob.New(ctx, s3blob.Config{Client: client, Bucket: cfg.Bucket, Prefix: cfg.Prefix})
	if err != nil {
		return nil, fmt.Errorf("s3video: %w", err)
	}
	if cfg.RequireObjectLock && !blobs.Locking() {
		return nil, fmt.Errorf("s3video: bucket %s does not have Object Lock enabled, and Config.RequireObjectLock asks for it (Object Lock can only be enabled when a bucket is created)", cfg.Bucket)
	}
	return &Store{blobs: blobs, bucket: cfg.Bucket, prefix: cfg.Prefix}, nil
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

// Locking reports whether Lock locks videos under Object Lock in compliance
// mode, that is whether the bucket had Object Lock enabled when New looked
// (otherwise its locks are tags that this library honours).
func (s *Store) Locking() bool { return s.blobs.Locking() }

// Put uploads the MP4 at src as <Prefix><sessionID>/<time>-<random>.mp4,
// a key of its own that nothing writes over, and returns its Path, size and
// SHA-256. It does not lock the object: Lock does,
// once a committed row names it (D45). An earlier video of the session
// keeps its own key, and its Path still opens it.
func (s *Store) Put(ctx context.Context, sessionID, src string) (consent.Video, error) {
	f, err := os.Open(src)
	if err != nil {
		return consent.Video{}, err
	}
	defer func() { _ = f.Close() }() // read only: its Close loses nothing
	return s.put(ctx, sessionID, videokey.Video, f)
}

// PutScreenshot uploads png, an attestation's screenshot (D49), as
// <Prefix><certificateID>/<time>-<random>.png, unlocked as Put leaves a
// video.
func (s *Store) PutScreenshot(ctx context.Context, certificateID string, png []byte) (consent.Video, error) {
	return s.put(ctx, certificateID, videokey.Screenshot, bytes.NewReader(png))
}

// put uploads body under a new key of id.
func (s *Store) put(ctx context.Context, id, ext string, body io.Reader) (consent.Video, error) {
	if err := videokey.CheckID(id); err != nil {
		return consent.Video{}, fmt.Errorf("s3video: %q cannot name an object: %w", id, err)
	}
	key := videokey.New(id, ext, time.Now())
	info, err := s.blobs.Put(ctx, key, body)
	if err != nil {
		return consent.Video{}, fmt.Errorf("s3video: upload %s: %w", id+ext, err)
	}
	u := url.URL{Scheme: "s3", Host: s.bucket, Path: "/" + s.prefix + key}
	return consent.Video{Path: u.String(), Bytes: info.Size, SHA256: info.SHA256}, nil
}

// object is what a Path names: a blob key of the store and, for a video
// written before each had a key of its own, maybe a version.
type object struct {
	key, version string
}

// parse reads a Path that Put wrote, refusing anything that is not a video
// or screenshot of this store's bucket and prefix.
func (s *Store) parse(p string) (object, error) {
	bad := fmt.Errorf("s3video: video path %q is not a video of s3://%s/%s", p, s.bucket, s.prefix)
	u, err := url.Parse(p)
	if err != nil || u.Scheme != "s3" || u.Host != s.bucket || u.User != nil || u.Opaque != "" || u.Fragment != "" || u.RawFragment != "" {
		return object{}, bad
	}
	key, ok := strings.CutPrefix(u.Path, "/"+s.prefix)
	if _, known := videokey.Parse(key); !ok || !known || blob.ValidKey(key) != nil {
		return object{}, bad
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return object{}, bad
	}
	o := object{key: key}
	for k, vs := range q {
		if k != "versionId" || len(vs) != 1 || vs[0] == "" {
			return object{}, bad
		}
		o.version = vs[0]
	}
	return o, nil
}

// stat asks for o's size and the SHA-256 the server keeps, reading none
// of it (a range at its end).
func (s *Store) stat(ctx context.Context, o object) (blob.Info, error) {
	var (
		rc   io.ReadCloser
		info blob.Info
		err  error
	)
	if o.version != "" {
		rc, info, err = s.blobs.OpenVersion(ctx, o.key, o.version, math.MaxInt64, -1)
	} else {
		rc, info, err = s.blobs.OpenRange(ctx, o.key, math.MaxInt64, -1)
	}
	if err != nil {
		return blob.Info{}, err
	}
	_ = rc.Close() // empty
	return info, nil
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
	info, err := s.stat(ctx, o)
	if err != nil {
		return nil, readError("open", v.Path, err)
	}
	if v.Bytes != 0 && info.Size != v.Bytes {
		return nil, fmt.Errorf("s3video: %s holds %d bytes, not the video's %d", v.Path, info.Size, v.Bytes)
	}
	if info.SHA256 != ([32]byte{}) && !v.SHA256.IsZero() && consent.Digest(info.SHA256) != v.SHA256 {
		return nil, fmt.Errorf("s3video: %s has SHA-256 %x, not the video's %s", v.Path, info.SHA256, v.SHA256)
	}
	return &reader{ctx: ctx, s: s, path: v.Path, obj: o, size: info.Size}, nil
}

// Lock locks the object at path, which must be an object of the store's
// bucket and prefix, until until, rounded up to the whole second, when
// that is in the future and later than its lock (D45): under Object Lock
// in compliance mode where the bucket has it. A path written before each
// video had a key of its own names a version: that version is locked.
func (s *Store) Lock(ctx context.Context, path string, until time.Time) error {
	o, err := s.parse(path)
	if err != nil {
		return err
	}
	// The blob store refuses a lock that is not in the future; ours is only
	// a guard against asking for one, so the local clock is good enough.
	if !until.After(time.Now()) {
		return nil
	}
	if err := s.blobs.LockVersion(ctx, o.key, o.version, until); err != nil {
		return fmt.Errorf("s3video: lock %s: %w", path, err)
	}
	return nil
}

// Discard removes the object at path alone, which must be an object of
// the store's bucket and prefix written by Put or PutScreenshot: one whose
// commit never came, unlocked (retain.VideoDiscarder). An object already
// gone is not an error; a locked one is refused.
func (s *Store) Discard(ctx context.Context, path string) error {
	o, err := s.parse(path)
	if err != nil {
		return err
	}
	if k, _ := videokey.Parse(o.key); o.version != "" || !k.Own {
		return fmt.Errorf("s3video: discard %s: not an object of its own (a path written before)", path)
	}
	if err := s.blobs.Delete(ctx, o.key); err != nil {
		return fmt.Errorf("s3video: discard %s: %w", path, err)
	}
	return nil
}

// Delete removes the object at path, which must be an object of the
// store's bucket and prefix, with every version of its key, and every other
// object of the same id and kind (.mp4 or .png): a conversion or an
// attestation retried after a crash between its upload and its commit
// wrote one per attempt, unlocked unlike the one its row names, and the
// purge removes them all. Deleting is permanent. An object under a lock is
// refused until its date, and then nothing is removed of the objects not
// removed yet. An object already gone is not an error.
func (s *Store) Delete(ctx context.Context, path string) error {
	o, err := s.parse(path)
	if err != nil {
		return err
	}
	of, _ := videokey.Parse(o.key)
	if err := s.DeleteAll(ctx, of.ID, of.Ext == videokey.Screenshot); err != nil {
		return fmt.Errorf("s3video: delete %s: %w", path, err)
	}
	return nil
}

// DeleteAll removes every video of the session id, or every screenshot of
// the certificate id, as Delete does those of a path's id
// (retain.VideoSweeper).
func (s *Store) DeleteAll(ctx context.Context, id string, screenshots bool) error {
	return videokey.DeleteAll(ctx, s.blobs, id, videokey.Ext(screenshots))
}

// readError wraps err, making a missing object or version fs.ErrNotExist.
func readError(op, path string, err error) error {
	if errors.Is(err, blob.ErrNotFound) {
		return fmt.Errorf("s3video: %s %s: %w (%w)", op, path, fs.ErrNotExist, err)
	}
	return fmt.Errorf("s3video: %s %s: %w", op, path, err)
}

// reader reads an object from an offset on. body, when not nil, is the
// response of a read that started at off.
type reader struct {
	ctx    context.Context
	s      *Store
	path   string
	obj    object
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
		// Open asked for the size already, and a video's key is written
		// once: one GetObject, nothing before it.
		body, err := r.s.blobs.ReadRange(r.ctx, r.obj.key, r.obj.version, r.off, -1)
		if err != nil {
			return 0, readError("read", r.path, err)
		}
		r.body = body
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
