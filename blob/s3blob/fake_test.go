package s3blob_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/consentkit/consentkit/blob"
	"github.com/consentkit/consentkit/blob/s3blob"
)

// fakeS3 is just enough of an S3 server to answer what Delete asks of a
// bucket without Object Lock, about the one key "s_1" of bucket "b",
// with the version listings and refusals that a real server gives only
// when it misbehaves.
type fakeS3 struct {
	listing string // the body of every ListObjectVersions answer
	refuse  string // a version whose DeleteObject is MethodNotAllowed
	mu      sync.Mutex
	there   map[string]bool // the versions there, "" for the current object
	lists   int             // ListObjectVersions asked
	deletes []string        // the versions DeleteObject was asked for
}

func (f *fakeS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := r.URL.Query()
	version := q.Get("versionId")
	there := f.there[version] || version == "" && len(f.there) > 0
	fail := func(status int, code string) {
		w.WriteHeader(status)
		_, _ = w.Write([]byte("<Error><Code>" + code + "</Code></Error>"))
	}
	switch {
	case q.Has("object-lock"):
		fail(http.StatusNotFound, "ObjectLockConfigurationNotFoundError")
	case q.Has("versions"):
		f.lists++
		_, _ = w.Write([]byte(`<ListVersionsResult><Name>b</Name><Prefix>s_1</Prefix>` + f.listing + `</ListVersionsResult>`))
	case r.URL.Path != "/b/s_1":
		fail(http.StatusNotFound, "NoSuchKey")
	case r.Method == http.MethodDelete:
		f.deletes = append(f.deletes, version)
		if version != "" && version == f.refuse {
			fail(http.StatusMethodNotAllowed, "MethodNotAllowed")
			return
		}
		delete(f.there, version)
		if version == "" {
			clear(f.there)
		}
		w.WriteHeader(http.StatusNoContent)
	case !there:
		fail(http.StatusNotFound, "NoSuchKey") // a HEAD reads the status alone
	case r.Method == http.MethodHead:
		w.Header().Set("Content-Length", "1")
	case q.Has("tagging"):
		_, _ = w.Write([]byte(`<Tagging><TagSet></TagSet></Tagging>`))
	default:
		fail(http.StatusNotImplemented, "NotImplemented")
	}
}

// store returns a Store on f, served over HTTP.
func (f *fakeS3) store(t *testing.T) *s3blob.Store {
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	client := s3.New(s3.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), UsePathStyle: true,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "a", SecretAccessKey: "b"}, nil
		}),
		RetryMaxAttempts: 1,
	})
	s, err := s3blob.New(t.Context(), s3blob.Config{Client: client, Bucket: "b"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A listing of versions that holds none of the key, while the object is
// there (a server that lists none, or a bucket that keeps none), is no
// reason to take it for deleted: Delete deletes the current object. When
// the object is not there either, Delete asks no DeleteObject, which
// would leave a delete marker in a bucket that keeps versions.
func TestDeleteUnlistedObject(t *testing.T) {
	f := &fakeS3{listing: `<IsTruncated>false</IsTruncated>`, there: map[string]bool{"": true}}
	s := f.store(t)
	if err := s.Delete(t.Context(), "s_1"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if len(f.deletes) != 1 || f.deletes[0] != "" || len(f.there) != 0 {
		t.Errorf("Delete of an object listed under no version asked DeleteObject of %q, left %v; want it deleted without a version", f.deletes, f.there)
	}
	f.deletes = nil
	if err := s.Delete(t.Context(), "s_1"); err != nil || len(f.deletes) != 0 {
		t.Errorf("Delete of an object not there: %v, DeleteObject of %q; want nil, none", err, f.deletes)
	}
}

// A truncated listing whose next page starts nowhere, or where it began,
// is an error, not a Delete that lists forever.
func TestDeleteTruncatedListing(t *testing.T) {
	version := `<Version><Key>s_1</Key><VersionId>v1</VersionId><IsLatest>true</IsLatest></Version>`
	for _, c := range []struct{ name, listing string }{
		{"no next marker", `<IsTruncated>true</IsTruncated>` + version},
		{"the same marker", `<IsTruncated>true</IsTruncated><NextKeyMarker>s_1</NextKeyMarker><NextVersionIdMarker>v1</NextVersionIdMarker>` + version},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeS3{listing: c.listing, there: map[string]bool{"v1": true}}
			s := f.store(t)
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			err := s.Delete(ctx, "s_1")
			if err == nil || ctx.Err() != nil || f.lists > 2 || len(f.deletes) != 0 {
				t.Errorf("Delete: %v after %d listings, DeleteObject of %q; want an error after at most 2, none", err, f.lists, f.deletes)
			}
		})
	}
}

// A DeleteObject of a version refused as MethodNotAllowed leaves the
// version there: Delete says so, and not as ErrNotFound.
func TestDeleteRefusedVersion(t *testing.T) {
	f := &fakeS3{
		listing: `<IsTruncated>false</IsTruncated><Version><Key>s_1</Key><VersionId>v1</VersionId><IsLatest>true</IsLatest></Version>`,
		refuse:  "v1",
		there:   map[string]bool{"v1": true},
	}
	s := f.store(t)
	err := s.Delete(t.Context(), "s_1")
	if err == nil || errors.Is(err, blob.ErrNotFound) || !strings.Contains(err.Error(), "MethodNotAllowed") {
		t.Errorf("Delete with its version refused: %v; want the refusal", err)
	}
	if !f.there["v1"] {
		t.Error("the refused version is gone from the fake")
	}
}
