package s3blob_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/consentkit/consentkit/blob"
	"github.com/consentkit/consentkit/blob/blobtest"
	"github.com/consentkit/consentkit/blob/s3blob"
	"github.com/consentkit/consentkit/internal/s3test"
)

// stores returns a function that makes a Store on a bucket of its own of
// g, with Object Lock or without.
func stores(g *s3test.Gateway, objectLock bool) func(t *testing.T) blob.Store {
	var n atomic.Int64
	return func(t *testing.T) blob.Store {
		bucket := fmt.Sprintf("b%d-%t", n.Add(1), objectLock)
		g.Bucket(t, bucket, objectLock)
		s, err := s3blob.New(t.Context(), s3blob.Config{Client: g.Client, Bucket: bucket, Prefix: "blobs/", TempDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if s.Locking() != objectLock {
			t.Fatalf("Locking() = %v on a bucket with Object Lock %v", s.Locking(), objectLock)
		}
		return s
	}
}

// The blob contract holds on a real S3 server, in a bucket with Object
// Lock (the server keeps the locks) and in one without (the store does).
func TestContract(t *testing.T) {
	g := s3test.Start(t)
	t.Run("ObjectLock", func(t *testing.T) { blobtest.Run(t, stores(g, true)) })
	t.Run("NoObjectLock", func(t *testing.T) { blobtest.Run(t, stores(g, false)) })
}

// With Object Lock the server itself refuses to delete a locked version
// or to shorten its retention, whoever asks; Put over a locked object is
// refused and Delete, refused, removes no version.
func TestObjectLockIsTheServers(t *testing.T) {
	g := s3test.Start(t)
	s := stores(g, true)(t)
	ctx := context.Background()
	if _, err := s.Put(ctx, "kept", bytes.NewReader([]byte("v1"))); err != nil {
		t.Fatal(err)
	}
	if err := s.Lock(ctx, "kept", time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "kept", bytes.NewReader([]byte("v2"))); !errors.Is(err, blob.ErrLocked) {
		t.Errorf("Put over a locked object = %v, want ErrLocked", err)
	}
	bucket := "b1-true"
	list, err := g.Client.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: &bucket})
	if err != nil || len(list.Versions) != 1 {
		t.Fatalf("versions: %v, %v; want one", list, err)
	}
	v := list.Versions[0]
	if _, err := g.Client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &bucket, Key: v.Key, VersionId: v.VersionId}); err == nil {
		t.Error("the server deleted a locked version asked directly")
	}
	if err := s.Delete(ctx, "kept"); !errors.Is(err, blob.ErrLocked) {
		t.Errorf("Delete = %v, want ErrLocked", err)
	}
	rc, _, err := s.Open(ctx, "kept")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	_ = rc.Close()
	if err != nil || string(got) != "v1" {
		t.Errorf("after refusals: %q, %v; want v1", got, err)
	}
}

// A Put over an unlocked object keeps versions in a versioned bucket;
// Delete removes them all, so the key is gone and no version is left.
func TestDeleteRemovesEveryVersion(t *testing.T) {
	g := s3test.Start(t)
	s := stores(g, true)(t)
	ctx := context.Background()
	for _, v := range []string{"one", "two", "three"} {
		if _, err := s.Put(ctx, "k", bytes.NewReader([]byte(v))); err != nil {
			t.Fatal(err)
		}
	}
	bucket := "b1-true"
	if list, err := g.Client.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: &bucket}); err != nil || len(list.Versions) != 3 {
		t.Fatalf("versions before Delete: %d, %v; want 3", len(list.Versions), err)
	}
	if err := s.Delete(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	list, err := g.Client.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: &bucket})
	if err != nil || len(list.Versions) != 0 {
		t.Errorf("versions after Delete: %d, %v; want none", len(list.Versions), err)
	}
}

// An object carries the media type of its key's extension, a video's
// whatever MIME files the machine has (on a machine without
// /etc/mime.types, the .mp4 case fails without the store's own name for
// it).
func TestContentType(t *testing.T) {
	g := s3test.Start(t)
	s := stores(g, false)(t)
	ctx := context.Background()
	bucket := "b1-false"
	for key, want := range map[string]string{"s1/a.mp4": "video/mp4", "c1/a.png": "image/png"} {
		if _, err := s.Put(ctx, key, bytes.NewReader([]byte("x"))); err != nil {
			t.Fatal(err)
		}
		head, err := g.Client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: aws.String("blobs/" + key)})
		if err != nil {
			t.Fatal(err)
		}
		if got := aws.ToString(head.ContentType); got != want {
			t.Errorf("%s: Content-Type %q, want %q", key, got, want)
		}
	}
}

// ReadRange reads a range in one GetObject and asks nothing before it; a
// missing object is blob.ErrNotFound.
func TestReadRange(t *testing.T) {
	g := s3test.Start(t)
	s := stores(g, false)(t).(*s3blob.Store)
	ctx := context.Background()
	if _, err := s.Put(ctx, "k", bytes.NewReader([]byte("abcdef"))); err != nil {
		t.Fatal(err)
	}
	heads, gets := g.Heads.Load(), g.Gets.Load()
	for _, c := range []struct {
		off, n int64
		want   string
	}{{1, 3, "bcd"}, {2, -1, "cdef"}, {5, 10, "f"}, {2, math.MaxInt64, "cdef"}} {
		rc, err := s.ReadRange(ctx, "k", "", c.off, c.n)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rc)
		_ = rc.Close()
		if err != nil || string(got) != c.want {
			t.Errorf("ReadRange(%d, %d) = %q, %v; want %q", c.off, c.n, got, err, c.want)
		}
	}
	if h, n := g.Heads.Load()-heads, g.Gets.Load()-gets; h != 0 || n != 4 {
		t.Errorf("four reads sent %d HeadObject and %d GetObject requests, want 0 and 4", h, n)
	}
	if _, err := s.ReadRange(ctx, "none", "", 0, -1); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("ReadRange of nothing: %v, want ErrNotFound", err)
	}
	if _, err := s.ReadRange(ctx, "k", "", 0, 0); err == nil {
		t.Error("ReadRange of no bytes succeeded")
	}
}

// A bucket whose Object Lock configuration has a default retention rule
// locks every object as it is written, before the commit that records it:
// a move cut short could not write its object again, nor the purge delete
// it. New refuses it, naming the setting; the same bucket without the
// rule is accepted.
func TestDefaultRetentionRefused(t *testing.T) {
	g := s3test.Start(t)
	g.Bucket(t, "default-retention", true)
	_, err := g.Client.PutObjectLockConfiguration(t.Context(), &s3.PutObjectLockConfigurationInput{
		Bucket: aws.String("default-retention"),
		ObjectLockConfiguration: &types.ObjectLockConfiguration{
			ObjectLockEnabled: types.ObjectLockEnabledEnabled,
			Rule: &types.ObjectLockRule{DefaultRetention: &types.DefaultRetention{
				Mode: types.ObjectLockRetentionModeGovernance, Days: aws.Int32(1)}},
		},
	})
	if err != nil {
		t.Skipf("versitygw does not set a default retention rule (%v): lockConfiguration's decision is tested alone (TestLockConfiguration)", err)
	}
	out, err := g.Client.GetObjectLockConfiguration(t.Context(), &s3.GetObjectLockConfigurationInput{Bucket: aws.String("default-retention")})
	if err != nil || out.ObjectLockConfiguration == nil || out.ObjectLockConfiguration.Rule == nil {
		t.Skipf("versitygw does not report the default retention rule it was given (%+v, %v): lockConfiguration's decision is tested alone (TestLockConfiguration)", out, err)
	}
	_, err = s3blob.New(t.Context(), s3blob.Config{Client: g.Client, Bucket: "default-retention"})
	if !errors.Is(err, s3blob.ErrDefaultRetention) || !strings.Contains(err.Error(), "default-retention") || !strings.Contains(err.Error(), "GOVERNANCE, 1 days") {
		t.Fatalf("New on a bucket with a default retention rule: %v; want ErrDefaultRetention naming the bucket and the rule", err)
	}

	// Without the rule, the bucket is accepted, and Delete removes what
	// Put wrote.
	if _, err := g.Client.PutObjectLockConfiguration(t.Context(), &s3.PutObjectLockConfigurationInput{
		Bucket:                  aws.String("default-retention"),
		ObjectLockConfiguration: &types.ObjectLockConfiguration{ObjectLockEnabled: types.ObjectLockEnabledEnabled},
	}); err != nil {
		t.Fatal(err)
	}
	s, err := s3blob.New(t.Context(), s3blob.Config{Client: g.Client, Bucket: "default-retention", TempDir: t.TempDir()})
	if err != nil || !s.Locking() {
		t.Fatalf("New without the rule: %v; want a locking store", err)
	}
	if _, err := s.Put(t.Context(), "k", bytes.NewReader([]byte("v"))); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(t.Context(), "k"); err != nil {
		t.Fatalf("Delete without the rule: %v", err)
	}
}

// enableVersions makes bucket keep versions from now on: what it holds
// already is its version "null".
func enableVersions(t *testing.T, g *s3test.Gateway, bucket string) {
	t.Helper()
	if _, err := g.Client.PutBucketVersioning(t.Context(), &s3.PutBucketVersioningInput{Bucket: &bucket,
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
}

// versionsLeft lists the versions and delete markers bucket holds.
func versionsLeft(t *testing.T, g *s3test.Gateway, bucket string) (versions, markers []string) {
	t.Helper()
	list, err := g.Client.ListObjectVersions(t.Context(), &s3.ListObjectVersionsInput{Bucket: &bucket})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range list.Versions {
		versions = append(versions, aws.ToString(v.Key)+"@"+aws.ToString(v.VersionId))
	}
	for _, m := range list.DeleteMarkers {
		markers = append(markers, aws.ToString(m.Key)+"@"+aws.ToString(m.VersionId))
	}
	return versions, markers
}

// An object written before its bucket kept versions is the version
// "null" once it does; Delete removes it with the versions written over
// it, so that no version of the key is left (a DeleteObject without a
// version would only hide its bytes under a delete marker, out of List's
// sight and so out of the sweep's).
func TestDeleteRemovesTheNullVersion(t *testing.T) {
	g := s3test.Start(t)
	s := stores(g, false)(t)
	ctx := t.Context()
	bucket := "b1-false"
	for _, key := range []string{"recordings/ses_1", "recordings/ses_2"} {
		if _, err := s.Put(ctx, key, bytes.NewReader([]byte("before versions"))); err != nil {
			t.Fatal(err)
		}
	}
	enableVersions(t, g, bucket)
	if _, err := s.Put(ctx, "recordings/ses_2", bytes.NewReader([]byte("after"))); err != nil {
		t.Fatal(err)
	}
	if v, _ := versionsLeft(t, g, bucket); len(v) != 3 {
		t.Fatalf("versions before Delete: %v; want 3", v)
	}
	for _, key := range []string{"recordings/ses_1", "recordings/ses_2"} {
		if err := s.Delete(ctx, key); err != nil {
			t.Fatal(err)
		}
	}
	if v, m := versionsLeft(t, g, bucket); len(v)+len(m) != 0 {
		t.Errorf("after Delete the bucket holds versions %v and delete markers %v; want none", v, m)
	}
}

// The lock of an object written before its bucket kept versions stays
// with its version "null": Delete reads that version's lock, not the
// current version's, and refuses, removing nothing.
func TestDeleteHonoursTheNullVersionsLock(t *testing.T) {
	g := s3test.Start(t)
	s := stores(g, false)(t)
	ctx := t.Context()
	bucket := "b1-false"
	if _, err := s.Put(ctx, "k", bytes.NewReader([]byte("kept"))); err != nil {
		t.Fatal(err)
	}
	if err := s.Lock(ctx, "k", time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	enableVersions(t, g, bucket)
	// Written by another than the store, which refuses to write over a
	// locked object: a current version without a lock over a locked one.
	if _, err := g.Client.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("blobs/k"),
		Body: bytes.NewReader([]byte("newer"))}); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "k"); !errors.Is(err, blob.ErrLocked) {
		t.Errorf("Delete over a locked version null = %v, want ErrLocked", err)
	}
	if v, m := versionsLeft(t, g, bucket); len(v) != 2 || len(m) != 0 {
		t.Errorf("after a refused Delete: versions %v, delete markers %v; want both versions and no marker", v, m)
	}
}

// refuseNull answers NotImplemented to every request that names the
// version "null", as a server that lists it but takes no version does.
type refuseNull struct{ http.Client }

func (c *refuseNull) Do(req *http.Request) (*http.Response, error) {
	if req.URL.Query().Get("versionId") != "null" {
		return c.Client.Do(req)
	}
	body := "<Error><Code>NotImplemented</Code><Message>versions are not implemented</Message></Error>"
	return &http.Response{StatusCode: http.StatusNotImplemented, Status: "501 Not Implemented", Proto: "HTTP/1.1",
		ProtoMajor: 1, ProtoMinor: 1, Header: http.Header{"Content-Type": {"application/xml"}},
		Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: req}, nil
}

// A server that does not take the version "null" is asked again without
// a version: Delete, Lock and the lock's check work there as before.
func TestNullVersionRefused(t *testing.T) {
	g := s3test.Start(t)
	g.Bucket(t, "refuses-null", false)
	client := s3.New(s3.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(g.Endpoint), UsePathStyle: true,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: s3test.AccessKey, SecretAccessKey: s3test.SecretKey}, nil
		}),
		HTTPClient: &refuseNull{},
	})
	s, err := s3blob.New(t.Context(), s3blob.Config{Client: client, Bucket: "refuses-null", TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for _, key := range []string{"locked", "free"} {
		if _, err := s.Put(ctx, key, bytes.NewReader([]byte(key))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Lock(ctx, "locked", time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "locked"); !errors.Is(err, blob.ErrLocked) {
		t.Errorf("Delete of a locked object = %v, want ErrLocked", err)
	}
	if err := s.Delete(ctx, "free"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if keys, err := s.List(ctx, ""); err != nil || len(keys) != 1 || keys[0] != "locked" {
		t.Errorf("List after the Deletes = %v, %v; want [locked]", keys, err)
	}
}

// putGoverned writes blobs/k to bucket under a GOVERNANCE retention until
// until, as a default retention rule added after New, or another tool,
// would.
func putGoverned(t *testing.T, g *s3test.Gateway, bucket string, until time.Time) {
	t.Helper()
	if _, err := g.Client.PutObject(t.Context(), &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("blobs/k"),
		Body: strings.NewReader("x"), ObjectLockMode: types.ObjectLockModeGovernance, ObjectLockRetainUntilDate: &until}); err != nil {
		t.Fatal(err)
	}
}

// retention reads the mode and date of the retention of bucket's blobs/k.
func retention(t *testing.T, g *s3test.Gateway, bucket string) (types.ObjectLockRetentionMode, time.Time) {
	t.Helper()
	out, err := g.Client.GetObjectRetention(t.Context(), &s3.GetObjectRetentionInput{Bucket: &bucket, Key: aws.String("blobs/k")})
	if err != nil {
		t.Fatal(err)
	}
	return out.Retention.Mode, aws.ToTime(out.Retention.RetainUntilDate)
}

// Lock promises COMPLIANCE until the date. A GOVERNANCE retention, which
// whoever may bypass governance retention can lift, does not keep that
// promise whatever its date: Lock turns it into COMPLIANCE until the later
// of the two dates, never shortening it, and the version can then be
// deleted by nobody, bypass or not.
func TestLockOverGovernance(t *testing.T) {
	g := s3test.Start(t)
	newStore := stores(g, true)
	var n int
	for _, c := range []struct {
		name             string
		governed, locked time.Duration // from now
	}{
		{"Later", 2 * time.Hour, time.Hour},
		{"Earlier", time.Hour, 2 * time.Hour},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t)
			n++
			bucket := fmt.Sprintf("b%d-true", n)
			now := time.Now().UTC().Truncate(time.Second)
			governed, locked := now.Add(c.governed), now.Add(c.locked)
			putGoverned(t, g, bucket, governed)
			if err := s.Lock(t.Context(), "k", locked); err != nil {
				t.Fatalf("Lock over a GOVERNANCE retention: %v", err)
			}
			want := governed // the later
			if locked.After(want) {
				want = locked
			}
			if mode, until := retention(t, g, bucket); mode != types.ObjectLockRetentionModeCompliance || !until.Equal(want) {
				t.Errorf("Lock(%v) over GOVERNANCE until %v left %s until %v; want COMPLIANCE until %v", locked, governed, mode, until, want)
			}
			v, _ := versionsLeft(t, g, bucket)
			for _, v := range v {
				key, id, _ := strings.Cut(v, "@")
				if _, err := g.Client.DeleteObject(t.Context(), &s3.DeleteObjectInput{Bucket: &bucket, Key: &key, VersionId: &id,
					BypassGovernanceRetention: aws.Bool(true)}); err == nil {
					t.Errorf("version %s deleted, bypassing governance, before the date Lock was asked for", v)
				}
			}
			// Locked as asked, a Lock before the date changes nothing.
			if err := s.Lock(t.Context(), "k", locked.Add(-time.Minute)); err != nil {
				t.Errorf("a second, earlier Lock: %v", err)
			}
			if mode, until := retention(t, g, bucket); mode != types.ObjectLockRetentionModeCompliance || !until.Equal(want) {
				t.Errorf("after a second, earlier Lock: %s until %v; want COMPLIANCE until %v", mode, until, want)
			}
		})
	}
}

// denyBypass answers AccessDenied to every request that bypasses
// governance retention, as S3 does to credentials without
// s3:BypassGovernanceRetention.
type denyBypass struct {
	http.Client
	denied atomic.Int64
}

func (c *denyBypass) Do(req *http.Request) (*http.Response, error) {
	if req.Header.Get("X-Amz-Bypass-Governance-Retention") != "true" {
		return c.Client.Do(req)
	}
	c.denied.Add(1)
	body := "<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>"
	return &http.Response{StatusCode: http.StatusForbidden, Status: "403 Forbidden", Proto: "HTTP/1.1",
		ProtoMajor: 1, ProtoMinor: 1, Header: http.Header{"Content-Type": {"application/xml"}},
		Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: req}, nil
}

// Without s3:BypassGovernanceRetention, a Lock over a GOVERNANCE
// retention that ends after the date asked for is refused, and Lock
// returns the refusal: the object is not kept as it promises.
func TestLockOverGovernanceRefused(t *testing.T) {
	g := s3test.Start(t)
	g.Bucket(t, "governed", true)
	deny := &denyBypass{}
	client := s3.New(s3.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(g.Endpoint), UsePathStyle: true,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: s3test.AccessKey, SecretAccessKey: s3test.SecretKey}, nil
		}),
		HTTPClient: deny,
	})
	s, err := s3blob.New(t.Context(), s3blob.Config{Client: client, Bucket: "governed", Prefix: "blobs/", TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	governed := time.Now().UTC().Truncate(time.Second).Add(2 * time.Hour)
	putGoverned(t, g, "governed", governed)
	if err := s.Lock(t.Context(), "k", time.Now().Add(time.Hour)); err == nil || deny.denied.Load() == 0 {
		t.Errorf("Lock over GOVERNANCE without the permission to bypass it = %v (%d requests refused); want the refusal", err, deny.denied.Load())
	}
	if mode, until := retention(t, g, "governed"); mode != types.ObjectLockRetentionModeGovernance || !until.Equal(governed) {
		t.Errorf("after a refused Lock: %s until %v; want GOVERNANCE until %v, as it was", mode, until, governed)
	}
}
