// Package s3test runs a real S3 server for tests: versitygw with its posix
// backend and versioning in temporary directories, on a free port, for as
// long as the test runs. Where versitygw is not installed the test is
// skipped, except under CI=true, which must run it.
package s3test

import (
	"bytes"
	"context"
	"go/build"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/consentkit/consentkit/internal/testwait"
)

// The gateway's credentials.
const (
	AccessKey = "consentkit-test"
	SecretKey = "consentkit-test-secret"
)

// Gateway is a running versitygw.
type Gateway struct {
	Endpoint string
	// Client speaks to it with its credentials, path-style, counting in
	// Gets the GetObject requests it sends, and in Heads its HeadObject
	// requests.
	Client *s3.Client
	Gets   *atomic.Int64
	Heads  *atomic.Int64
}

// binary finds versitygw on PATH or in GOPATH/bin.
func binary(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p
	}
	for _, dir := range filepath.SplitList(build.Default.GOPATH) {
		p := filepath.Join(dir, "bin", "versitygw")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p
		}
	}
	const how = "versitygw (an S3 server) is not installed; install it with: go install github.com/versity/versitygw/cmd/versitygw@latest"
	if os.Getenv("CI") == "true" {
		t.Fatal(how)
	}
	t.Skip(how)
	return ""
}

// lockedBuffer collects the gateway's output for a failure message.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// countingClient counts the GetObject and HeadObject requests that go
// through it.
type countingClient struct {
	http.Client
	gets, heads *atomic.Int64
}

func (c *countingClient) Do(req *http.Request) (*http.Response, error) {
	if strings.Count(strings.Trim(req.URL.Path, "/"), "/") >= 1 { // an object's, not a bucket's
		switch {
		case req.Method == http.MethodHead:
			c.heads.Add(1)
		case req.Method == http.MethodGet && !req.URL.Query().Has("retention") && !req.URL.Query().Has("tagging") &&
			!req.URL.Query().Has("versions"):
			c.gets.Add(1)
		}
	}
	return c.Client.Do(req)
}

// Start runs versitygw until the test ends.
func Start(t *testing.T) *Gateway {
	t.Helper()
	bin := binary(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil { // only its port was wanted, for the gateway
		t.Fatal(err)
	}
	root, versions := t.TempDir(), t.TempDir()
	out := new(lockedBuffer)
	cmd := exec.Command(bin, "--access", AccessKey, "--secret", SecretKey, "--port", addr, "--quiet",
		"posix", "--versioning-dir", versions, root)
	cmd.Stdout, cmd.Stderr = out, out
	dieWithTest(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // it may have exited already
		<-exited               //nolint:errcheck // waits for the exit; killed, its status says only that
	})
	// The gateway starts as fast as the machine lets it: wait for it as
	// long as the test binary allows.
	stop := testwait.Near(t)
	for {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			_ = c.Close() // it answers: it is up
			break
		}
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("versitygw exited (%v): %s", err, out)
		case <-stop:
			t.Fatalf("versitygw did not answer on %s by the test's deadline: %s", addr, out)
		case <-time.After(50 * time.Millisecond):
		}
	}
	g := &Gateway{Endpoint: "http://" + addr, Gets: new(atomic.Int64), Heads: new(atomic.Int64)}
	g.Client = s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(g.Endpoint),
		UsePathStyle: true,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: AccessKey, SecretAccessKey: SecretKey}, nil
		}),
		HTTPClient: &countingClient{gets: g.Gets, heads: g.Heads},
	})
	// The port answers before the gateway serves S3 requests.
	for {
		_, err := g.Client.ListBuckets(t.Context(), &s3.ListBucketsInput{})
		if err == nil {
			break
		}
		select {
		case <-stop:
			t.Fatalf("versitygw does not answer ListBuckets: %v: %s", err, out)
		case <-time.After(50 * time.Millisecond):
		}
	}
	return g
}

// Bucket creates a bucket, with Object Lock (and so versions) or without.
func (g *Gateway) Bucket(t *testing.T, name string, objectLock bool) {
	t.Helper()
	in := &s3.CreateBucketInput{Bucket: &name}
	if objectLock {
		in.ObjectLockEnabledForBucket = aws.Bool(true)
	}
	if _, err := g.Client.CreateBucket(t.Context(), in); err != nil {
		t.Fatalf("create bucket %s: %v", name, err)
	}
}
