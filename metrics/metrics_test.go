package metrics_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/blob"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/jobs"
	"github.com/consentkit/consentkit/metrics"
	"github.com/consentkit/consentkit/retain"
)

const secret = "operator-secret-for-the-metrics-test"

// The metrics of requests, capture bytes and jobs, scraped through the
// operator API and read with the Prometheus text parser, count what was
// done; without the operator secret the scrape is refused.
func TestScrape(t *testing.T) {
	ctx := context.Background()
	svc, err := consentkit.NewService(teststore.Memory(t), consentkit.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.AddProperty(ctx, consentkit.PropertyParams{ID: "form", CompanyID: "acme", Name: "Form",
		AllowedOrigins: []string{"https://forms.acme.example"}}); err != nil {
		t.Fatal(err)
	}
	m := metrics.New()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	h, err := httpadapter.New(httpadapter.Config{Service: svc, OperatorSecret: secret, Observer: m, Metrics: m.Handler(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.NewServeMux())
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/operator/") {
			h.Operator().ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
	t.Cleanup(srv.Close)
	do := func(method, path, token, body string, header ...string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = resp.Body.Close() })
		return resp
	}
	for range 2 {
		if resp := do("GET", "/operator/companies", secret, ""); resp.StatusCode != 200 {
			t.Fatalf("GET /operator/companies: %d", resp.StatusCode)
		}
	}
	if resp := do("POST", "/verify/match", "not-a-token", `{}`); resp.StatusCode != 401 {
		t.Fatalf("match with a bad token: %d", resp.StatusCode)
	}
	origin := []string{"Origin", "https://forms.acme.example", "Content-Type", "text/plain;charset=UTF-8"}
	startBody := `{"property_id":"form","url":"https://forms.acme.example/q"}`
	start := do("POST", "/capture/sessions", "", startBody, origin...)
	var s struct {
		SessionID   string `json:"session_id"`
		UploadToken string `json:"upload_token"`
	}
	if err := decode(start.Body, &s); err != nil || start.StatusCode != 201 {
		t.Fatalf("start: %d, %v", start.StatusCode, err)
	}
	chunk := `{"seq":0,"events":[{"type":4,"data":{},"timestamp":1}]}`
	if resp := do("POST", "/capture/sessions/"+s.SessionID+"/events", s.UploadToken, chunk, origin...); resp.StatusCode != 200 {
		t.Fatalf("chunk: %d", resp.StatusCode)
	}

	fails := 1
	runner, err := jobs.New(jobs.Config{Store: svc.Store(), Logger: quiet, Observe: m.ObserveJob, Handlers: []jobs.Handler{{Kind: "test",
		Backoff: 1, Do: func(context.Context, *consent.Job) (jobs.Result, error) {
			if fails > 0 {
				fails--
				return jobs.Result{}, errors.New("not yet")
			}
			return jobs.Result{}, nil
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Store().Update(ctx, func(tx consent.Tx) error {
		return tx.EnqueueJob(ctx, &consent.Job{Kind: "test", Key: "k", RunAfter: svc.Now(), CreatedAt: svc.Now()})
	}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		for {
			if ok, _ := runner.RunOnce(ctx, "test"); ok {
				break
			}
		}
	}

	if resp := do("GET", "/operator/metrics", "", ""); resp.StatusCode != 401 {
		t.Errorf("metrics without the secret: %d, want 401", resp.StatusCode)
	}
	resp := do("GET", "/operator/metrics", secret, "")
	if resp.StatusCode != 200 {
		t.Fatalf("metrics: %d", resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("the scrape is not Prometheus text: %v", err)
	}
	for _, c := range []struct {
		family string
		labels map[string]string
		want   float64
	}{
		{"consentkit_http_requests_total", map[string]string{"route": "GET /operator/companies", "code": "200"}, 2},
		{"consentkit_http_requests_total", map[string]string{"route": "POST /verify/match", "code": "401"}, 1},
		{"consentkit_http_requests_total", map[string]string{"route": "POST /capture/sessions/{session_id}/events", "code": "200"}, 1},
		{"consentkit_http_request_duration_seconds", map[string]string{"route": "GET /operator/companies", "code": "200"}, 2},
		{"consentkit_capture_body_bytes_total", map[string]string{"outcome": "allowed"}, float64(len(startBody) + len(chunk))},
		{"consentkit_job_duration_seconds", map[string]string{"kind": "test"}, 2},
		{"consentkit_job_failures_total", map[string]string{"kind": "test"}, 1},
	} {
		if got := value(families[c.family], c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.family, c.labels, got, c.want)
		}
	}
}

// value is the counter's value, or the histogram's count, of the metric
// of the family with the labels; -1 when there is none.
func value(f *dto.MetricFamily, labels map[string]string) float64 {
	if f == nil {
		return -1
	}
next:
	for _, m := range f.Metric {
		if len(m.Label) != len(labels) {
			continue
		}
		for _, l := range m.Label {
			if labels[l.GetName()] != l.GetValue() {
				continue next
			}
		}
		if h := m.GetHistogram(); h != nil {
			return float64(h.GetSampleCount())
		}
		return m.GetCounter().GetValue()
	}
	return -1
}

func decode(r io.Reader, v any) error { return json.NewDecoder(r).Decode(v) }

// failingBlobs fails every Put and every listing.
type failingBlobs struct{ blob.Store }

func (failingBlobs) Put(context.Context, string, io.Reader) (blob.Info, error) {
	return blob.Info{}, errors.New("disk full")
}

func (failingBlobs) ListAfter(context.Context, string, string, int) ([]string, error) {
	return nil, errors.New("connection reset")
}

// The group commit of a SQLite store, its job queues' depths and a blob
// store's failures are exported; a missing object is an answer, not a
// failure.
func TestStoreAndBlobs(t *testing.T) {
	ctx := context.Background()
	st := teststore.SQLite(t)
	m := metrics.New()
	m.WatchGroupCommit(st)
	m.WatchGroupCommit(struct{}{}) // no group commit: nothing added, no panic
	svc, err := consentkit.NewService(st, consentkit.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme"}); err != nil {
		t.Fatal(err)
	}
	b := m.Blobs("recordings", failingBlobs{blob.NewMemory()})
	for range 2 {
		if _, err := b.Put(ctx, "recordings/s1", strings.NewReader("x")); err == nil {
			t.Fatal("Put did not fail")
		}
	}
	if _, _, err := b.Open(ctx, "recordings/none"); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("Open of nothing: %v", err)
	}
	if _, err := b.ListAfter(ctx, "recordings/", "", 10); err == nil {
		t.Fatal("ListAfter did not fail")
	}

	m.WatchQueues(svc.Store(), "convert", "webhook")
	if err := svc.Store().Update(ctx, func(tx consent.Tx) error {
		for _, key := range []string{"a", "b"} {
			if err := tx.EnqueueJob(ctx, &consent.Job{Kind: "webhook", Key: key, RunAfter: svc.Now(), CreatedAt: svc.Now()}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	families := scrape(t, m)
	batches := value(families["consentkit_store_group_commit_batches_total"], nil)
	calls := value(families["consentkit_store_group_commit_calls_total"], nil)
	if batches < 1 || calls < batches {
		t.Errorf("group commit: %v batches, %v calls; want at least one, and no more batches than calls", batches, calls)
	}
	if got := gauge(families["consentkit_job_queue_depth"], "webhook"); got != 2 {
		t.Errorf("webhook queue depth = %v, want 2", got)
	}
	if got := gauge(families["consentkit_job_queue_depth"], "convert"); got != 0 {
		t.Errorf("convert queue depth = %v, want 0", got)
	}
	if got := value(families["consentkit_blob_errors_total"], map[string]string{"store": "recordings", "op": "put"}); got != 2 {
		t.Errorf("blob put errors = %v, want 2", got)
	}
	if got := value(families["consentkit_blob_errors_total"], map[string]string{"store": "recordings", "op": "list"}); got != 1 {
		t.Errorf("blob list errors = %v, want 1", got)
	}
	if got := value(families["consentkit_blob_errors_total"], map[string]string{"store": "recordings", "op": "open"}); got != -1 {
		t.Errorf("blob open errors = %v, want none counted for a missing object", got)
	}
}

// scrape reads m's handler's answer as Prometheus text.
func scrape(t *testing.T, m *metrics.Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	return families
}

// gauge is the queue depth of the kind; -1 when there is none.
func gauge(f *dto.MetricFamily, kind string) float64 {
	if f == nil {
		return -1
	}
	for _, m := range f.Metric {
		if len(m.Label) == 1 && m.Label[0].GetValue() == kind {
			return m.GetGauge().GetValue()
		}
	}
	return -1
}

// The video store's failures are counted as a blob store's, under
// store="videos"; a video not found is not a failure.
func TestVideos(t *testing.T) {
	ctx := context.Background()
	m := metrics.New()
	dir := t.TempDir()
	notDir := filepath.Join(dir, "file")
	if err := os.WriteFile(notDir, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "in.mp4")
	if err := os.WriteFile(src, []byte("mp4"), 0o600); err != nil {
		t.Fatal(err)
	}
	broken := m.Videos(retain.Dir{Root: notDir}) // a root that is a file: every write fails
	if _, err := broken.Put(ctx, "ses-1", src); err == nil {
		t.Fatal("Put into a root that is a file did not fail")
	}
	if _, err := broken.PutScreenshot(ctx, "cert-1", []byte("png")); err == nil {
		t.Fatal("PutScreenshot into a root that is a file did not fail")
	}
	good := m.Videos(retain.Dir{Root: filepath.Join(dir, "videos")})
	v, err := good.Put(ctx, "ses-2", src)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := good.Open(ctx, v)
	if err != nil {
		t.Fatal(err)
	}
	_ = rc.Close()
	if _, err := good.Open(ctx, consent.Video{Path: filepath.Join(dir, "videos", "ses-3.mp4")}); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open of a video never stored: %v, want fs.ErrNotExist", err)
	}

	families := scrape(t, m)
	if got := value(families["consentkit_blob_errors_total"], map[string]string{"store": "videos", "op": "put"}); got != 2 {
		t.Errorf("video put errors = %v, want 2 (a video and a screenshot)", got)
	}
	if got := value(families["consentkit_blob_errors_total"], map[string]string{"store": "videos", "op": "open"}); got != -1 {
		t.Errorf("video open errors = %v, want none counted for a missing video", got)
	}
}

// chunkOf is a capture chunk of seq holding about 7 KiB of events.
func chunkOf(seq int) string {
	return fmt.Sprintf(`{"seq":%d,"events":[{"type":3,"data":{"text":"%s"},"timestamp":%d}]}`, seq, strings.Repeat("x", 7<<10), 1+seq)
}

// Capture bytes are counted whether the client's byte budget is on or
// not, and a refusal is counted under the budget that refused it, client
// or property (a consent's tail dropped is none); request latencies carry
// the status code, as the request counts do.
func TestCaptureBudgets(t *testing.T) {
	ctx := context.Background()
	svc, err := consentkit.NewService(teststore.Memory(t), consentkit.Config{MaxChunkBytes: 8 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme"}); err != nil {
		t.Fatal(err)
	}
	const origin = "https://forms.acme.example"
	if _, err := svc.AddProperty(ctx, consentkit.PropertyParams{ID: "form", CompanyID: "acme", Name: "Form",
		AllowedOrigins: []string{origin}}); err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	const events = "POST /capture/sessions/{session_id}/events"
	for _, c := range []struct {
		name             string
		client, property int64 // the budgets a minute, -1 for none
		budget           string
	}{
		{"property", -1, 16 << 10, "property"},
		{"client", 16 << 10, -1, "client"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := metrics.New()
			h, err := httpadapter.New(httpadapter.Config{Service: svc, Observer: m, Logger: quiet, RefusalHold: -1,
				CaptureBytesPerMinute: c.client, CapturePropertyBytesPerMinute: c.property})
			if err != nil {
				t.Fatal(err)
			}
			do := func(path, token, body string) *httptest.ResponseRecorder {
				req := httptest.NewRequest("POST", path, strings.NewReader(body))
				req.Header.Set("Origin", origin)
				req.Header.Set("Content-Type", "text/plain;charset=UTF-8")
				if token != "" {
					req.Header.Set("Authorization", "Bearer "+token)
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				return rec
			}
			startBody := `{"property_id":"form","url":"` + origin + `/q"}`
			start := do("/capture/sessions", "", startBody)
			var s struct {
				SessionID   string `json:"session_id"`
				UploadToken string `json:"upload_token"`
			}
			if err := decode(start.Body, &s); err != nil || start.Code != 201 {
				t.Fatalf("start: %d, %v", start.Code, err)
			}
			var codes []int
			sent := len(startBody) // a start's body is a capture body too
			for seq := range 3 {
				body := chunkOf(seq)
				sent += len(body)
				codes = append(codes, do("/capture/sessions/"+s.SessionID+"/events", s.UploadToken, body).Code)
			}
			want := "[200 200 429]" // 16 KiB of events a minute for the property
			if c.budget == "client" {
				want = "[200 429 429]" // at most 12 KiB at once, the largest body
			}
			if fmt.Sprint(codes) != want {
				t.Fatalf("three chunks of 7 KiB: %v, want %s", codes, want)
			}
			families := scrape(t, m)
			refused := 0
			if c.budget == "client" {
				refused = 2 * len(chunkOf(1))
			}
			for _, w := range []struct {
				family string
				labels map[string]string
				want   float64
			}{
				{"consentkit_capture_body_bytes_total", map[string]string{"outcome": "allowed"}, float64(sent - refused)},
				{"consentkit_capture_budget_refusals_total", map[string]string{"budget": c.budget}, float64(3 - strings.Count(want, "200"))},
				{"consentkit_http_request_duration_seconds", map[string]string{"route": events, "code": "200"}, float64(strings.Count(want, "200"))},
				{"consentkit_http_request_duration_seconds", map[string]string{"route": events, "code": "429"}, float64(strings.Count(want, "429"))},
			} {
				if got := value(families[w.family], w.labels); got != w.want {
					t.Errorf("%s%v = %v, want %v", w.family, w.labels, got, w.want)
				}
			}
			if refused > 0 {
				if got := value(families["consentkit_capture_body_bytes_total"], map[string]string{"outcome": "refused"}); got != float64(refused) {
					t.Errorf("refused capture bytes = %v, want %d", got, refused)
				}
			}
			other := map[string]string{"budget": "client"}
			if c.budget == "client" {
				other["budget"] = "property"
			}
			if got := value(families["consentkit_capture_budget_refusals_total"], other); got != -1 {
				t.Errorf("refusals by the %s budget = %v, want none", other["budget"], got)
			}
			if c.budget != "property" {
				return
			}
			// A consent whose tail the spent budget drops is issued (D35):
			// no refusal.
			tail := fmt.Sprintf(`,"seq":2,"events":[{"type":3,"data":{"text":"%s"},"timestamp":3}]`, strings.Repeat("x", 7<<10))
			if rec := do("/capture/sessions/"+s.SessionID+"/consent", s.UploadToken,
				`{"consents":[{"text":"I agree.","types":["tcpa"]}],"url":"`+origin+`/q"`+tail+`}`); rec.Code != 201 {
				t.Fatalf("consent: %d %s", rec.Code, rec.Body)
			}
			if got := value(scrape(t, m)["consentkit_capture_budget_refusals_total"], map[string]string{"budget": "property"}); got != 1 {
				t.Errorf("property budget refusals after a consent issued with its tail dropped = %v, want 1", got)
			}
		})
	}
}

// failingStore fails every read.
type failingStore struct{ consent.Store }

func (failingStore) View(context.Context, func(consent.Tx) error) error {
	return errors.New("the database is gone")
}

// A scrape that cannot read the job queues still answers 200 with every
// other metric; it leaves the queues out and counts the failure.
func TestQueuesUnread(t *testing.T) {
	m := metrics.New()
	m.WatchQueues(failingStore{teststore.Memory(t)}, "convert")
	m.ObserveRequest("GET /x", 200, time.Millisecond)
	for i := 1; i <= 2; i++ {
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		if rec.Code != 200 {
			t.Fatalf("scrape %d: %d %s, want 200", i, rec.Code, rec.Body)
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		families, err := parser.TextToMetricFamilies(rec.Body)
		if err != nil {
			t.Fatal(err)
		}
		if f := families["consentkit_job_queue_depth"]; f != nil {
			t.Errorf("scrape %d: queue depths %v reported from a store that cannot be read", i, f)
		}
		if got := value(families["consentkit_job_queue_read_errors_total"], nil); got != float64(i) {
			t.Errorf("scrape %d: queue read errors = %v, want %d", i, got, i)
		}
		if got := value(families["consentkit_http_requests_total"], map[string]string{"route": "GET /x", "code": "200"}); got != 1 {
			t.Errorf("scrape %d: the other metrics: requests = %v, want 1", i, got)
		}
	}
}

// plainVideos is a video store that is neither a retain.VideoDiscarder nor
// a retain.VideoSweeper; the others below add one or both, each failing.
type plainVideos struct{ retain.VideoStore }

type discardOnly struct{ plainVideos }

func (discardOnly) Discard(context.Context, string) error { return errors.New("discard failed") }

type sweepOnly struct{ plainVideos }

func (sweepOnly) DeleteAll(context.Context, string, bool) error {
	return errors.New("delete all failed")
}

type discardAndSweep struct{ plainVideos }

func (discardAndSweep) Discard(context.Context, string) error { return errors.New("discard failed") }
func (discardAndSweep) DeleteAll(context.Context, string, bool) error {
	return errors.New("delete all failed")
}

// The wrapped video store is a retain.VideoDiscarder and a
// retain.VideoSweeper exactly when the store it wraps is, in every
// combination, and counts their failures under op discard and delete:
// a purge through it that lost DeleteAll would remove nothing by id.
func TestVideosKeepOptionalInterfaces(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name             string
		store            retain.VideoStore
		discards, sweeps bool
	}{
		{"plain", plainVideos{}, false, false},
		{"discarder", discardOnly{}, true, false},
		{"sweeper", sweepOnly{}, false, true},
		{"both", discardAndSweep{}, true, true},
		{"dir", retain.Dir{Root: t.TempDir()}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := metrics.New()
			v := m.Videos(tc.store)
			d, discards := v.(retain.VideoDiscarder)
			s, sweeps := v.(retain.VideoSweeper)
			if discards != tc.discards || sweeps != tc.sweeps {
				t.Fatalf("Videos(%T): discarder %v, sweeper %v; want %v, %v", tc.store, discards, sweeps, tc.discards, tc.sweeps)
			}
			if _, ok := tc.store.(retain.Dir); ok {
				if err := s.DeleteAll(ctx, "ses-1", false); err != nil {
					t.Errorf("DeleteAll of nothing: %v", err)
				}
				return
			}
			want := map[string]float64{"discard": -1, "delete": -1}
			if discards {
				if err := d.Discard(ctx, "p"); err == nil {
					t.Error("Discard did not pass the store's error on")
				}
				want["discard"] = 1
			}
			if sweeps {
				if err := s.DeleteAll(ctx, "ses-1", true); err == nil {
					t.Error("DeleteAll did not pass the store's error on")
				}
				want["delete"] = 1
			}
			families := scrape(t, m)
			for op, n := range want {
				if got := value(families["consentkit_blob_errors_total"], map[string]string{"store": "videos", "op": op}); got != n {
					t.Errorf("video %s errors = %v, want %v", op, got, n)
				}
			}
		})
	}
}
