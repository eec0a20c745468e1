package main

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/s3test"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/internal/testwait"
	"github.com/consentkit/consentkit/retain"
)

// hookReceiver counts the webhook messages it gets by webhook-id.
type hookReceiver struct {
	*httptest.Server
	mu    sync.Mutex
	byID  map[string]int
	types map[string]int
}

func newHookReceiver(t *testing.T) *hookReceiver {
	rc := &hookReceiver{byID: map[string]int{}, types: map[string]int{}}
	typ := regexp.MustCompile(`"type":"([^"]+)"`)
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		if rc.byID[r.Header.Get("webhook-id")]++; rc.byID[r.Header.Get("webhook-id")] == 1 {
			if m := typ.FindSubmatch(body); m != nil {
				rc.types[string(m[1])]++
			}
		}
		rc.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *hookReceiver) got(eventType string) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.types[eventType]
}

// scrape reads the instance's metrics and returns, for a counter or a
// histogram (its count) of the family, the value of the series whose
// label name is value.
func scrape(t *testing.T, s *running, secret, family, label, value string) float64 {
	t.Helper()
	req, _ := http.NewRequest("GET", s.base+"/operator/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("metrics of %s: %v", s.base, err)
	}
	var sum float64
	for _, m := range families[family].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == label && l.GetValue() == value {
				sum += m.GetCounter().GetValue() + float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return sum
}

// Two instances of the server on one PostgreSQL and one S3 bucket are one
// service: a session's chunks may arrive at either, a certificate verifies
// on both, a retained recording is converted once, each webhook message is
// delivered once, and the purge runs on one schedule, by one instance at a
// time (D53). The metrics of both tell who did what.
func TestTwoInstancesOnePostgresOneBucket(t *testing.T) {
	const secret = "an-operator-secret-of-the-fleet-0123456789"
	dsn := teststore.PostgresURL(t)
	gw := s3test.Start(t)
	gw.Bucket(t, "fleet", true)
	t.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretKey)
	t.Setenv(OperatorSecretEnv, secret)
	args := []string{"-store", "postgres", "-dsn", dsn, "-signing-key", filepath.Join(t.TempDir(), "signing.key"),
		"-replayer", replayer, "-install-recorder=false", "-video-s3-bucket", "fleet", "-video-s3-endpoint", gw.Endpoint,
		"-webhook-allow-private", "-purge-interval", "1s"}
	began := time.Now()
	a := start(t, args...)
	token := a.guideToken(t)
	b := start(t, args...)
	if !b.waitFor(t, "Health: curl") {
		t.Fatalf("the second instance did not start:\n%s", b.output())
	}
	both := []*running{a, b}
	for _, s := range both {
		s.needsConversion(t)
	}
	rc := newHookReceiver(t)
	hook := `{"url":"` + rc.URL + `/in","events":["certificate.issued","session.retained","video.converted"]}`
	if code, got := a.call(t, "POST", "/operator/companies/acme/webhooks", secret, hook); code != 201 {
		t.Fatalf("add a webhook endpoint: %d %v", code, got)
	}

	// One session, its chunks sent to each instance in turn, consent
	// given at the second.
	code, started := a.capturePost(t, "/capture/sessions", "", `{"property_id":"acme-demo","url":"`+a.base+`/demo"}`)
	if code != 201 {
		t.Fatalf("start a session: %d %v", code, started)
	}
	id, upload, cert := started["session_id"].(string), started["upload_token"].(string), started["certificate_id"].(string)
	chunks := []string{
		`[{"type":4,"data":{"href":"` + a.base + `/demo","width":800,"height":600},"timestamp":1795301391553}]`,
		`[{"type":5,"data":{"tag":"note","payload":{"at":"second instance"}},"timestamp":1795301391600}]`,
		`[{"type":5,"data":{"tag":"note","payload":{"at":"first instance"}},"timestamp":1795301391700}]`,
	}
	for seq, events := range chunks {
		s := both[seq%2]
		if code, v := s.capturePost(t, "/capture/sessions/"+id+"/events", upload, `{"seq":`+strconv.Itoa(seq)+`,"events":`+events+`}`); code != 200 {
			t.Fatalf("chunk %d at instance %d: %d %v", seq, seq%2, code, v)
		}
	}
	// A chunk resent to the other instance is the same chunk, not a new one.
	if code, v := b.capturePost(t, "/capture/sessions/"+id+"/events", upload, `{"seq":0,"events":`+chunks[0]+`}`); code != 200 {
		t.Fatalf("chunk 0 again at the second instance: %d %v", code, v)
	}
	consentBody := `{"consents":[{"text":"I agree to be called","types":["tcpa"]}],"url":"` + b.base + `/demo"}`
	if code, v := b.capturePost(t, "/capture/sessions/"+id+"/consent", upload, consentBody); code != 201 {
		t.Fatalf("consent at the second instance: %d %v", code, v)
	}

	// Verification on either instance, of the recording both wrote.
	var digests []string
	for i, s := range both {
		match := `{"certificate_id":"` + cert + `","company_id":"acme","consent":"I agree to be called"}`
		if code, v := s.call(t, "POST", "/verify/match", token, match); code != 200 || v["valid"] != true {
			t.Errorf("match at instance %d: %d %v", i, code, v)
		}
		code, info := s.call(t, "POST", "/verify/certificate-info", token, `{"certificate_id":"`+cert+`","company_id":"acme","property_id":"acme-demo"}`)
		if code != 200 {
			t.Fatalf("certificate-info at instance %d: %d %v", i, code, info)
		}
		d, _ := info["recording_sha256"].(string)
		digests = append(digests, d)
	}
	if digests[0] == "" || digests[0] != digests[1] {
		t.Errorf("recording digests %q; want one, the same on both", digests)
	}
	// The recording holds every chunk, whichever instance took it.
	raw := make([][]byte, len(chunks))
	for i, c := range chunks {
		raw[i] = []byte(c)
	}
	if want := sha256.Sum256(consent.JoinChunks(raw)); digests[0] != hex.EncodeToString(want[:]) {
		t.Errorf("recording digest %s, want %x: the digest of the three chunks in order", digests[0], want)
	}

	// A retained recording is converted once, by one of the two.
	if code, v := b.call(t, "POST", "/api/integrations/acme/retain/s1", token, ""); code != 200 {
		t.Fatalf("retain s1: %d %v", code, v)
	}
	var status map[string]any
	testwait.Until(t, 200*time.Millisecond, func() bool {
		_, status = a.call(t, "GET", "/api/integrations/acme/sessions/s1", token, "")
		return status["rrweb_to_video_status"] == "converted"
	})
	if status["rrweb_to_video_status"] != "converted" {
		t.Fatalf("s1 not converted: %v", status)
	}
	// Every message is delivered, once.
	testwait.Until(t, 100*time.Millisecond, func() bool {
		return rc.got("certificate.issued") >= 1 && rc.got("session.retained") >= 1 && rc.got("video.converted") >= 1
	})
	convert := scrape(t, a, secret, "consentkit_job_duration_seconds", "kind", "convert") +
		scrape(t, b, secret, "consentkit_job_duration_seconds", "kind", "convert")
	if convert != 1 {
		t.Errorf("the two instances ran %v conversions, want 1", convert)
	}
	webhooks := scrape(t, a, secret, "consentkit_job_duration_seconds", "kind", "webhook") +
		scrape(t, b, secret, "consentkit_job_duration_seconds", "kind", "webhook")
	rc.mu.Lock()
	for id, n := range rc.byID {
		if n != 1 {
			t.Errorf("message %s delivered %d times, want once", id, n)
		}
	}
	if len(rc.byID) != 3 || webhooks != 3 {
		t.Errorf("%d messages received in %v deliveries, want 3 in 3: %v", len(rc.byID), webhooks, rc.types)
	}
	rc.mu.Unlock()

	// The purge is one recurring job: both instances together run it once
	// a second at most, not once a second each.
	purges := func() float64 {
		return scrape(t, a, secret, "consentkit_job_duration_seconds", "kind", retain.JobPurge) +
			scrape(t, b, secret, "consentkit_job_duration_seconds", "kind", retain.JobPurge)
	}
	testwait.Until(t, 100*time.Millisecond, func() bool { return purges() >= 3 })
	n, since := purges(), time.Since(began)
	t.Logf("%v purges in %v by the two instances", n, since.Round(time.Millisecond))
	if n < 3 || n > since.Seconds()+2 {
		t.Errorf("%v purges in %v, with each instance set to purge every second; want one schedule, at most %.0f",
			n, since, since.Seconds()+2)
	}
	a.stop(t)
	b.stop(t)
}
