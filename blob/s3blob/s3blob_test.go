package s3blob_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
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
	}{{1, 3, "bcd"}, {2, -1, "cdef"}, {5, 10, "f"}} {
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
	if h, n := g.Heads.Load()-heads, g.Gets.Load()-gets; h != 0 || n != 3 {
		t.Errorf("three reads sent %d HeadObject and %d GetObject requests, want 0 and 3", h, n)
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
