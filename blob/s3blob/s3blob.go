// Package s3blob is a blob.Store in an S3 bucket: Amazon S3, or a server
// that speaks its API such as MinIO, Ceph or versitygw.
//
//	s, err := s3blob.New(ctx, s3blob.Config{Client: client, Bucket: "consent", Prefix: "blobs/"})
//
// A key is the object <Prefix><key>. Put spools its input to a temporary
// file while it hashes it, then uploads it with one PutObject carrying its
// SHA-256 in x-amz-checksum-sha256, which the server checks: the object
// stored is exactly the bytes read. One upload holds at most 5 GiB.
//
// # Locks
//
// In a bucket with Object Lock (which keeps versions), Lock puts the
// object's current version under retention in COMPLIANCE mode until the
// date, rounded up to the second: nobody, the bucket's owner included, can
// delete that version or shorten its retention before then. A retention
// already there counts only when it is in COMPLIANCE mode until the date
// or later. One in GOVERNANCE mode (set by a default retention rule added
// to the bucket after New, or by another tool) can be lifted by whoever
// holds s3:BypassGovernanceRetention, whatever its date: Lock turns it
// into COMPLIANCE until the later of its date and the one asked for, a
// request that bypasses governance retention and so needs
// s3:BypassGovernanceRetention itself. Without that permission the server
// refuses, and Lock returns the refusal. No retention date is ever
// shortened.
//
// In a bucket without Object Lock, Lock records the date in the object's
// tag consentkit-keep-until, which this package honours and the server
// does not: a lock there guards against this library's mistakes, not
// against the bucket's owner (Locking tells which applies). New refuses a
// bucket whose Object Lock configuration has a default retention rule
// (ErrDefaultRetention): it would lock every object at Put, so that an
// object could be neither written again nor deleted until the rule's
// period ran out, whether or not Lock was called.
//
// Delete removes every version of a key, after checking that none is
// locked: a refused Delete removes nothing. Put refuses to write over an
// object whose current version is locked. In a bucket that keeps versions,
// a Put over an object leaves its earlier version in place, listed by the
// bucket, until Delete.
//
// The credentials need s3:GetBucketObjectLockConfiguration (New),
// s3:PutObject, s3:GetObject, s3:GetObjectVersion, s3:ListBucket (List
// and ListAfter), s3:ListBucketVersions, s3:DeleteObject and
// s3:DeleteObjectVersion, and either s3:PutObjectRetention and
// s3:GetObjectRetention (with Object Lock; and s3:BypassGovernanceRetention
// to Lock an object under a GOVERNANCE retention) or s3:PutObjectTagging
// and s3:GetObjectTagging (without).
package s3blob

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/consentkit/consentkit/blob"
	"github.com/consentkit/consentkit/internal/s3api"
)

// Config configures a Store. Client and Bucket are required.
type Config struct {
	Client *s3.Client
	Bucket string
	// Prefix starts every object's key, such as "blobs/"; it must be a
	// valid blob key followed by "/", or empty.
	Prefix string
	// TempDir holds Put's spool files; empty: os.TempDir().
	TempDir string
}

// Store is a blob.Store in an S3 bucket. It is safe for concurrent use.
type Store struct {
	client  *s3.Client
	bucket  string
	prefix  string
	tempDir string
	locking bool
}

var _ blob.Store = (*Store)(nil)

// keepTag is the tag that records a lock in a bucket without Object Lock.
const keepTag = "consentkit-keep-until"

// New checks cfg, asks the bucket whether it has Object Lock enabled, and
// returns a Store. A server that does not implement the question counts as
// a bucket without Object Lock.
func New(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Client == nil || cfg.Bucket == "" {
		return nil, errors.New("s3blob: Config.Client and Config.Bucket are required")
	}
	if cfg.Prefix != "" {
		p, ok := strings.CutSuffix(cfg.Prefix, "/")
		if !ok || blob.ValidKey(p) != nil {
			return nil, fmt.Errorf("s3blob: Config.Prefix %q must be a valid key followed by \"/\"", cfg.Prefix)
		}
	}
	s := &Store{client: cfg.Client, bucket: cfg.Bucket, prefix: cfg.Prefix, tempDir: cfg.TempDir}
	out, err := s.client.GetObjectLockConfiguration(ctx, &s3.GetObjectLockConfigurationInput{Bucket: &s.bucket})
	switch code := s3api.ErrorCode(err); {
	case err == nil:
		if s.locking, err = lockConfiguration(s.bucket, out.ObjectLockConfiguration); err != nil {
			return nil, err
		}
	case code == "ObjectLockConfigurationNotFoundError" || code == "NotImplemented":
	default:
		return nil, fmt.Errorf("s3blob: bucket %s: %w", s.bucket, err)
	}
	return s, nil
}

// ErrDefaultRetention is returned, wrapped, by New for a bucket whose
// Object Lock configuration has a default retention rule.
var ErrDefaultRetention = errors.New("the bucket's Object Lock configuration has a default retention rule (Rule.DefaultRetention), which locks every object as it is written; remove the rule (PutObjectLockConfiguration with ObjectLockEnabled alone): objects are locked one by one, by Lock, when they are to be kept")

// lockConfiguration reads a bucket's Object Lock configuration: whether
// it has Object Lock, and an error for a default retention rule. Such a
// rule locks each object at Put, before the commit that records it: an
// object that no row keeps yet could then not be written again (a move cut
// short, D52) nor deleted (the purge's removal of what is past its
// retention, D43) until the rule's period ran out.
func lockConfiguration(bucket string, c *types.ObjectLockConfiguration) (bool, error) {
	if c == nil || c.ObjectLockEnabled != types.ObjectLockEnabledEnabled {
		return false, nil
	}
	if r := c.Rule; r != nil && r.DefaultRetention != nil {
		d := r.DefaultRetention
		period := ""
		switch {
		case d.Days != nil:
			period = fmt.Sprintf(", %d days", *d.Days)
		case d.Years != nil:
			period = fmt.Sprintf(", %d years", *d.Years)
		}
		return true, fmt.Errorf("s3blob: bucket %s (%s%s): %w", bucket, d.Mode, period, ErrDefaultRetention)
	}
	return true, nil
}

// Locking reports whether the bucket has Object Lock, so that a lock is
// the server's to keep.
func (s *Store) Locking() bool { return s.locking }

// name returns the object key of a blob key.
func (s *Store) name(key string) (string, error) {
	if err := blob.ValidKey(key); err != nil {
		return "", err
	}
	return s.prefix + key, nil
}

// Put stores r's bytes under key. It spools them to a file while hashing
// them, then uploads the file with its SHA-256 for the server to check.
func (s *Store) Put(ctx context.Context, key string, r io.Reader) (blob.Info, error) {
	name, err := s.name(key)
	if err != nil {
		return blob.Info{}, err
	}
	f, err := os.CreateTemp(s.tempDir, "s3blob-*")
	if err != nil {
		return blob.Info{}, err
	}
	defer func() {
		_ = f.Close()           // read only by now: Close loses nothing
		_ = os.Remove(f.Name()) // a spool file left behind is only space
	}()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), r)
	if err != nil {
		return blob.Info{}, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return blob.Info{}, err
	}
	info := blob.Info{Key: key, Size: n}
	copy(info.SHA256[:], h.Sum(nil))
	if until, _, _, err := s.keptUntil(ctx, name, ""); err != nil && !errors.Is(err, blob.ErrNotFound) {
		return blob.Info{}, err
	} else if until.After(time.Now()) {
		return blob.Info{}, fmt.Errorf("%w: %s until %s", blob.ErrLocked, key, until.Format(time.RFC3339))
	}
	_, err = s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: &s.bucket, Key: &name, Body: f, ContentLength: &n,
		ChecksumSHA256: aws.String(base64.StdEncoding.EncodeToString(info.SHA256[:])),
		// For whoever reads the bucket directly: image/png for a
		// screenshot, say. The store itself never reads it.
		ContentType: s3api.Optional(contentType(key)),
	})
	if err != nil {
		return blob.Info{}, fmt.Errorf("s3blob: put %s: %w", key, err)
	}
	return info, nil
}

// Open reads the whole object.
func (s *Store) Open(ctx context.Context, key string) (io.ReadCloser, blob.Info, error) {
	return s.OpenRange(ctx, key, 0, -1)
}

// contentType is the media type of key's extension. The video's is named
// here: Go's own table has no .mp4, and the machine's MIME files may be
// missing (a minimal container), which would leave videos without one.
func contentType(key string) string {
	ext := path.Ext(key)
	if ext == ".mp4" {
		return "video/mp4"
	}
	return mime.TypeByExtension(ext)
}

// OpenRange asks for the object's size and current version, then reads
// that version's range. Its Info carries the object's SHA-256 when the
// server keeps a full-object SHA-256 checksum (Put sends one).
func (s *Store) OpenRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, blob.Info, error) {
	return s.openRange(ctx, key, "", offset, length)
}

// OpenVersion is OpenRange for one version of key, in a bucket that keeps
// versions: for objects that other code wrote over one another under one
// key, and named by version (retain/s3video's videos before it wrote each
// under a key of its own).
func (s *Store) OpenVersion(ctx context.Context, key, version string, offset, length int64) (io.ReadCloser, blob.Info, error) {
	if version == "" {
		return nil, blob.Info{}, fmt.Errorf("s3blob: no version of %s given", key)
	}
	return s.openRange(ctx, key, version, offset, length)
}

// ReadRange reads key's bytes from offset on, length of them (to the end
// when length is negative), of version when it is not "", in one GetObject
// and nothing before it: for a reader that has asked already (OpenRange,
// OpenVersion) how long the object is and reads an object that nothing
// writes over, as a video's key of its own is (retain/s3video). offset
// must be within the object.
func (s *Store) ReadRange(ctx context.Context, key, version string, offset, length int64) (io.ReadCloser, error) {
	name, err := s.name(key)
	if err != nil {
		return nil, err
	}
	if offset < 0 || length == 0 {
		return nil, fmt.Errorf("s3blob: read %s: no bytes at %d, length %d", key, offset, length)
	}
	rng := fmt.Sprintf("bytes=%d-", offset)
	if length > 0 && length <= math.MaxInt64-offset { // longer reads to the end
		rng += strconv.FormatInt(offset+length-1, 10)
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: &name, VersionId: s3api.Optional(version), Range: &rng})
	if err != nil {
		return nil, s.wrap("read", key, err)
	}
	return out.Body, nil
}

// openRange reads a range of the version of key ("" for the current one).
func (s *Store) openRange(ctx context.Context, key, version string, offset, length int64) (io.ReadCloser, blob.Info, error) {
	name, err := s.name(key)
	if err != nil {
		return nil, blob.Info{}, err
	}
	if offset < 0 {
		return nil, blob.Info{}, fmt.Errorf("s3blob: negative offset %d", offset)
	}
	head, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: &name, VersionId: s3api.Optional(version),
		ChecksumMode: types.ChecksumModeEnabled})
	if err != nil {
		return nil, blob.Info{}, s.wrap("open", key, err)
	}
	info := blob.Info{Key: key, Size: aws.ToInt64(head.ContentLength)}
	if sum, err := base64.StdEncoding.DecodeString(aws.ToString(head.ChecksumSHA256)); err == nil && len(sum) == sha256.Size &&
		head.ChecksumType != types.ChecksumTypeComposite {
		copy(info.SHA256[:], sum)
	}
	offset = min(offset, info.Size)
	if length < 0 || length > info.Size-offset { // offset+length may overflow
		length = info.Size - offset
	}
	if length == 0 {
		return io.NopCloser(strings.NewReader("")), info, nil
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{
		Bucket: &s.bucket, Key: &name, VersionId: head.VersionId,
		Range: aws.String(fmt.Sprintf("bytes=%d-%d", offset, offset+length-1)),
	})
	if err != nil {
		return nil, blob.Info{}, s.wrap("open", key, err)
	}
	return out.Body, info, nil
}

// List returns the keys that start with prefix, in key order: the objects
// whose current version is not a delete marker (ListAfter, unbounded).
func (s *Store) List(ctx context.Context, prefix string) ([]string, error) {
	return s.ListAfter(ctx, prefix, "", math.MaxInt)
}

// ListAfter implements blob.Store: one ListObjectsV2 request a thousand
// keys, from StartAfter. Like List it lists the objects whose current
// version is not a delete marker.
func (s *Store) ListAfter(ctx context.Context, prefix, after string, limit int) ([]string, error) {
	keys := []string{}
	in := &s3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: aws.String(s.prefix + prefix)}
	if after != "" {
		in.StartAfter = aws.String(s.prefix + after)
	}
	for len(keys) < limit {
		in.MaxKeys = aws.Int32(int32(min(limit-len(keys), 1000)))
		page, err := s.client.ListObjectsV2(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("s3blob: list %s: %w", prefix, err)
		}
		for _, o := range page.Contents {
			if key := strings.TrimPrefix(aws.ToString(o.Key), s.prefix); len(keys) < limit && key > after {
				keys = append(keys, key)
			}
		}
		if !aws.ToBool(page.IsTruncated) || page.NextContinuationToken == nil {
			break
		}
		in.ContinuationToken, in.StartAfter = page.NextContinuationToken, nil
	}
	return keys, nil
}

// Delete removes every version of key, none when one of them is locked.
func (s *Store) Delete(ctx context.Context, key string) error {
	name, err := s.name(key)
	if err != nil {
		return err
	}
	versions, err := s.versions(ctx, name)
	if err != nil {
		return s.wrap("delete", key, err)
	}
	for _, v := range versions {
		until, _, _, err := s.keptUntil(ctx, name, v)
		if errors.Is(err, blob.ErrNotFound) && v == "" && len(versions) == 1 {
			return nil // listed none, and there is none: no delete marker added
		}
		if errors.Is(err, blob.ErrNotFound) { // a delete marker, or gone meanwhile
			continue
		}
		if err != nil {
			return err
		}
		if until.After(time.Now()) {
			return fmt.Errorf("%w: %s until %s", blob.ErrLocked, key, until.Format(time.RFC3339))
		}
	}
	for _, v := range versions {
		_, err := byVersion(v, false, func(id *string) (*s3.DeleteObjectOutput, error) {
			return s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.bucket, Key: &name, VersionId: id})
		})
		// Only a version gone meanwhile is deleted already: a refusal,
		// such as a MethodNotAllowed, leaves it there, and is no
		// ErrNotFound either.
		if err != nil && !s3api.Missing(err) {
			return fmt.Errorf("s3blob: delete %s: %w", key, err)
		}
	}
	return nil
}

// versions lists the version ids of the object name, delete markers
// included, newest first. A listing that holds none of name (a server
// that lists no versions, or a bucket that keeps none) is one version,
// "", which Delete reads and deletes as the current object: an object
// there must never be taken for deleted because no version of it was
// listed. An object written before the bucket kept versions is listed as
// its own version, "null", which Delete names: a DeleteObject without a
// version would only hide it under a delete marker, its bytes kept.
func (s *Store) versions(ctx context.Context, name string) ([]string, error) {
	var out []string
	in := &s3.ListObjectVersionsInput{Bucket: &s.bucket, Prefix: &name}
	for {
		page, err := s.client.ListObjectVersions(ctx, in)
		if err != nil {
			if code := s3api.ErrorCode(err); code == "NotImplemented" || code == "MethodNotAllowed" {
				return []string{""}, nil
			}
			return nil, err
		}
		for _, v := range page.Versions {
			if aws.ToString(v.Key) == name {
				out = append(out, aws.ToString(v.VersionId))
			}
		}
		for _, m := range page.DeleteMarkers {
			if aws.ToString(m.Key) == name {
				out = append(out, aws.ToString(m.VersionId))
			}
		}
		if !aws.ToBool(page.IsTruncated) {
			if len(out) == 0 {
				return []string{""}, nil
			}
			return out, nil
		}
		next, nextVersion := aws.ToString(page.NextKeyMarker), aws.ToString(page.NextVersionIdMarker)
		if next == "" || next == aws.ToString(in.KeyMarker) && nextVersion == aws.ToString(in.VersionIdMarker) {
			return nil, fmt.Errorf("a truncated listing of versions whose next page starts at %q, version %q: it would list the same page again", next, nextVersion)
		}
		in.KeyMarker, in.VersionIdMarker = page.NextKeyMarker, page.NextVersionIdMarker
	}
}

// byVersion calls do with version (nil for ""). The version "null" of an
// object written before the bucket kept versions is asked for by name; a
// server that does not take it (NotImplemented, MethodNotAllowed) is asked
// again without a version, for the one object it keeps under the key. So
// is one that answers it does not exist, when orMissing: versitygw lists
// the objects of a bucket that never kept versions as "null" but answers
// a HeadObject or GetObjectTagging of that version NotFound. A lock read
// or set that way is the current version's: Delete then reads it twice at
// worst. A DeleteObject never asks again on NotFound, which would add a
// delete marker to a bucket that keeps versions.
func byVersion[T any](version string, orMissing bool, do func(*string) (T, error)) (T, error) {
	out, err := do(s3api.Optional(version))
	if version == "null" && err != nil {
		if code := s3api.ErrorCode(err); code == "NotImplemented" || code == "MethodNotAllowed" || orMissing && s3api.Missing(err) {
			return do(nil)
		}
	}
	return out, err
}

// Lock keeps the object's current version until until, rounded up to the
// second, when that is later than its lock. With Object Lock, the lock is
// a COMPLIANCE retention: a GOVERNANCE one, which whoever may bypass
// governance retention can lift, does not count whatever its date, and is
// replaced by COMPLIANCE until the later of the two dates, bypassing
// governance retention (s3:BypassGovernanceRetention). Lock returns the
// server's refusal, never nil, when the version is not left so kept.
func (s *Store) Lock(ctx context.Context, key string, until time.Time) error {
	return s.LockVersion(ctx, key, "", until)
}

// LockVersion is Lock for the given version of the key's object ("": the
// current one), such as a version a path written before each object had
// a key of its own names.
func (s *Store) LockVersion(ctx context.Context, key, version string, until time.Time) error {
	name, err := s.name(key)
	if err != nil {
		return err
	}
	kept, mode, version, err := s.keptUntil(ctx, name, version)
	if err != nil {
		return err
	}
	until = ceilSecond(until)
	if !until.After(time.Now()) {
		return nil
	}
	if !s.locking {
		if !until.After(kept) {
			return nil
		}
		_, err = byVersion(version, true, func(id *string) (*s3.PutObjectTaggingOutput, error) {
			return s.client.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{
				Bucket: &s.bucket, Key: &name, VersionId: id,
				Tagging: &types.Tagging{TagSet: []types.Tag{{Key: aws.String(keepTag), Value: aws.String(until.Format(time.RFC3339))}}},
			})
		})
		if err != nil {
			return s.wrap("lock", key, err)
		}
		return nil
	}
	if mode == types.ObjectLockModeCompliance && !until.After(kept) {
		return nil
	}
	// Never shorten: the date read may have lost a fraction of a second.
	if k := ceilSecond(kept); k.After(until) {
		until = k
	}
	// Changing a GOVERNANCE retention's mode needs the bypass (S3 refuses
	// it otherwise, 403); a COMPLIANCE one is only ever lengthened here.
	var bypass *bool
	if mode == types.ObjectLockModeGovernance {
		bypass = aws.Bool(true)
	}
	_, err = byVersion(version, true, func(id *string) (*s3.PutObjectRetentionOutput, error) {
		return s.client.PutObjectRetention(ctx, &s3.PutObjectRetentionInput{
			Bucket: &s.bucket, Key: &name, VersionId: id, BypassGovernanceRetention: bypass,
			Retention: &types.ObjectLockRetention{Mode: types.ObjectLockRetentionModeCompliance, RetainUntilDate: &until},
		})
	})
	if err != nil {
		return s.wrap("lock", key, err)
	}
	return nil
}

// ceilSecond returns t in UTC rounded up to the second.
func ceilSecond(t time.Time) time.Time {
	t = t.UTC()
	if c := t.Truncate(time.Second); !c.Equal(t) {
		return c.Add(time.Second)
	}
	return t
}

// keptUntil returns until when the version of name (the current one when
// version is "") is locked, zero when it is not, the mode of its retention
// with Object Lock ("" without), and the version's id. ErrNotFound when
// there is no such object or version, or it is a delete marker.
func (s *Store) keptUntil(ctx context.Context, name, version string) (time.Time, types.ObjectLockMode, string, error) {
	head, err := byVersion(version, true, func(id *string) (*s3.HeadObjectOutput, error) {
		return s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: &name, VersionId: id})
	})
	if err != nil {
		return time.Time{}, "", "", s.wrap("head", strings.TrimPrefix(name, s.prefix), err)
	}
	version = aws.ToString(head.VersionId)
	if s.locking {
		return aws.ToTime(head.ObjectLockRetainUntilDate).UTC(), head.ObjectLockMode, version, nil
	}
	tags, err := byVersion(version, true, func(id *string) (*s3.GetObjectTaggingOutput, error) {
		return s.client.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: &s.bucket, Key: &name, VersionId: id})
	})
	if err != nil {
		return time.Time{}, "", "", s.wrap("read the tags of", strings.TrimPrefix(name, s.prefix), err)
	}
	for _, t := range tags.TagSet {
		if aws.ToString(t.Key) == keepTag {
			until, err := time.Parse(time.RFC3339, aws.ToString(t.Value))
			if err != nil {
				return time.Time{}, "", "", fmt.Errorf("s3blob: %s: tag %s: %w", name, keepTag, err)
			}
			return until, "", version, nil
		}
	}
	return time.Time{}, "", version, nil
}

// wrap names the operation and the key, making a missing object, version
// or delete marker (which a HEAD of its version answers 405) blob.ErrNotFound.
func (s *Store) wrap(op, key string, err error) error {
	if s3api.Missing(err) || s3api.ErrorCode(err) == "MethodNotAllowed" {
		return fmt.Errorf("s3blob: %s %s: %w (%w)", op, key, blob.ErrNotFound, err)
	}
	return fmt.Errorf("s3blob: %s %s: %w", op, key, err)
}
