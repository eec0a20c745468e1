package metrics_test

import (
	"context"
	"errors"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/metrics"
)

// panickyStore panics in View once armed, as a store with a bug would.
type panickyStore struct {
	consent.Store
	armed atomic.Bool
}

func (s *panickyStore) View(ctx context.Context, fn func(consent.Tx) error) error {
	if s.armed.Load() {
		panic("a bug in the store")
	}
	return s.Store.View(ctx, fn)
}

// routeTotal is the sum of consentkit_http_requests_total over every code
// of the route.
func routeTotal(t *testing.T, m *metrics.Metrics, route string) float64 {
	t.Helper()
	f := scrape(t, m)["consentkit_http_requests_total"]
	if f == nil {
		return 0
	}
	var n float64
	for _, mt := range f.Metric {
		for _, l := range mt.Label {
			if l.GetName() == "route" && l.GetValue() == route {
				n += mt.GetCounter().GetValue()
			}
		}
	}
	return n
}

// A request whose handler panics is a request answered (net/http recovers
// it and drops the connection): it must be counted, as the 5xx it is, or
// the operator never sees the failures that matter most.
func TestPanickingRequestIsCounted(t *testing.T) {
	st := &panickyStore{Store: teststore.Memory(t)}
	svc, err := consentkit.NewService(st, consentkit.Config{})
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.New()
	h, err := httpadapter.New(httpadapter.Config{Service: svc, OperatorSecret: secret, Observer: m,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h.Operator())
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // "http: panic serving …"
	srv.Start()
	t.Cleanup(srv.Close)
	get := func() error {
		req, _ := http.NewRequest("GET", srv.URL+"/operator/companies", nil)
		req.Header.Set("Authorization", "Bearer "+secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != 200 {
			return errors.New(resp.Status)
		}
		return nil
	}
	const route = "GET /operator/companies"
	if err := get(); err != nil {
		t.Fatalf("before the panic: %v", err)
	}
	if got := routeTotal(t, m, route); got != 1 {
		t.Fatalf("requests of %s before the panic = %v, want 1", route, got)
	}
	st.armed.Store(true)
	if err := get(); err == nil {
		t.Fatal("the panicking request was answered 200")
	}
	if got := routeTotal(t, m, route); got != 2 {
		t.Errorf("requests of %s after one panicked = %v, want 2: the panicking request was never counted", route, got)
	}
}

// The request latency histogram must tell apart the latencies the service
// actually has: BENCHMARKS.md measures a capture chunk at 144–470 µs of
// server time and a match or certificate-info well under that on the
// memory store. With the lowest bucket at 0.5 ms, a 100 µs request and a
// 400 µs one land in the same bucket, and histogram_quantile cannot say
// anything about the bulk of the traffic.
func TestLatencyBucketsResolveSubMillisecond(t *testing.T) {
	m := metrics.New()
	m.ObserveRequest("POST /verify/match", 200, 100*time.Microsecond)
	m.ObserveRequest("POST /verify/match", 200, 400*time.Microsecond)
	f := scrape(t, m)["consentkit_http_request_duration_seconds"]
	if f == nil || len(f.Metric) != 1 {
		t.Fatal("no latency histogram")
	}
	for _, b := range f.Metric[0].GetHistogram().GetBucket() {
		if b.GetCumulativeCount() == 1 {
			return // some bucket holds the 100 µs request and not the 400 µs one
		}
	}
	var bounds []float64
	for _, b := range f.Metric[0].GetHistogram().GetBucket() {
		bounds = append(bounds, b.GetUpperBound())
	}
	t.Errorf("a 100 µs and a 400 µs request fall in the same buckets (bounds %v)", bounds)
}

// consentkit_capture_body_bytes_total is "Bytes of capture bodies …
// read". A body sent without a Content-Length (chunked) is charged 8 KiB
// at a time before it is read, and those 8 KiB are what is counted: a
// 70-byte session start counts as 8,192 bytes, so any client can inflate
// the ingest figure more than a hundredfold.
