// Package metrics keeps what an operator watches of a consentkit service —
// requests and their latency by route and status, the capture bytes read
// and the requests each byte budget refused, how long each kind of job
// takes and how often it fails, the store's group commit, a blob store's
// failures — and serves it in the Prometheus text format, with the
// Prometheus Go client.
//
//	m := metrics.New()
//	h, err := httpadapter.New(httpadapter.Config{Service: svc, OperatorSecret: secret,
//		Observer: m, Metrics: m.Handler()}) // GET /operator/metrics, behind the operator secret
//	runner, err := jobs.New(jobs.Config{Store: svc.Store(), Handlers: handlers, Observe: m.ObserveJob})
//
// The names follow Prometheus's conventions: a consentkit_ prefix, base
// units (seconds, bytes), _total on counters.
package metrics

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/consentkit/consentkit/blob"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/retain"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics is a registry of the service's metrics. It implements
// httpadapter.Observer; ObserveJob is a jobs.Config.Observe. It is safe
// for concurrent use.
type Metrics struct {
	reg          *prometheus.Registry
	requests     *prometheus.CounterVec
	latency      *prometheus.HistogramVec
	captureBytes *prometheus.CounterVec
	budgetHits   *prometheus.CounterVec
	jobs         *prometheus.HistogramVec
	jobFailures  *prometheus.CounterVec
	blobErrors   *prometheus.CounterVec
}

// New returns a registry of the service's metrics and of the Go runtime
// and process.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "consentkit_http_requests_total",
			Help: "Requests answered, by route (method and pattern) and status code.",
		}, []string{"route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "consentkit_http_request_duration_seconds",
			Help:    "How long requests took to answer, by route (method and pattern) and status code.",
			Buckets: prometheus.ExponentialBuckets(0.000125, 2, 18), // 125 µs (a capture chunk's work) to 16 s
		}, []string{"route", "code"}),
		captureBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "consentkit_capture_body_bytes_total",
			Help: "Bytes of capture bodies (session starts, chunks, consents) charged to the client's byte budget as they are read, by outcome: refused, or allowed (every body when there is no such budget). A body of unknown length is charged in blocks of 8 KiB.",
		}, []string{"outcome"}),
		budgetHits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "consentkit_capture_budget_refusals_total",
			Help: "Capture requests refused by a byte budget, by budget: client (the bytes of bodies per address or IPv6 /64) or property (the bytes of events per property).",
		}, []string{"budget"}),
		jobs: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "consentkit_job_duration_seconds",
			Help:    "How long jobs ran, by kind (convert, attest, insights, webhook, purge…).",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10), // 1 ms to 4.4 min
		}, []string{"kind"}),
		jobFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "consentkit_job_failures_total",
			Help: "Job attempts that failed, by kind (a failed webhook attempt is a webhook failure).",
		}, []string{"kind"}),
		blobErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "consentkit_blob_errors_total",
			Help: "Failed operations of a blob store (Blobs) or the video store (Videos), by store and operation.",
		}, []string{"store", "op"}),
	}
	m.reg.MustRegister(m.requests, m.latency, m.captureBytes, m.budgetHits, m.jobs, m.jobFailures, m.blobErrors,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry is the Prometheus registry, for the host's own metrics.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in the Prometheus text format. Serve it where
// only operators reach it: httpadapter's Config.Metrics puts it behind the
// operator secret.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// ObserveRequest counts a request and its latency, by route and status
// code (httpadapter.Observer).
func (m *Metrics) ObserveRequest(route string, status int, took time.Duration) {
	code := strconv.Itoa(status)
	m.requests.WithLabelValues(route, code).Inc()
	m.latency.WithLabelValues(route, code).Observe(took.Seconds())
}

// ObserveCaptureBytes counts the bytes of a capture body as it is read,
// allowed or refused by the client's byte budget (httpadapter.Observer).
func (m *Metrics) ObserveCaptureBytes(n int, refused bool) {
	outcome := "allowed"
	if refused {
		outcome = "refused"
	}
	m.captureBytes.WithLabelValues(outcome).Add(float64(n))
}

// ObserveBudgetRefusal counts a capture request refused by a byte budget,
// "client" or "property" (httpadapter.Observer).
func (m *Metrics) ObserveBudgetRefusal(budget string) {
	m.budgetHits.WithLabelValues(budget).Inc()
}

// ObserveJob records a job's run (jobs.Config.Observe).
func (m *Metrics) ObserveJob(kind string, took time.Duration, err error) {
	m.jobs.WithLabelValues(kind).Observe(took.Seconds())
	if err != nil {
		m.jobFailures.WithLabelValues(kind).Inc()
	}
}

// WatchGroupCommit exports the group commit of a store that has one
// (sqlitestore, pgstore: their GroupStats): the transactions it committed
// and the calls they carried, whose ratio is the batch size. A store
// without one adds nothing.
func (m *Metrics) WatchGroupCommit(st any) {
	g, ok := st.(interface{ GroupStats() (batches, calls int64) })
	if !ok {
		return
	}
	m.reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "consentkit_store_group_commit_batches_total",
			Help: "Transactions the store's group commit ran, rolled back ones included (calls ÷ batches is the batch size).",
		}, func() float64 { b, _ := g.GroupStats(); return float64(b) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "consentkit_store_group_commit_calls_total",
			Help: "Calls the store's group commit carried in its transactions.",
		}, func() float64 { _, c := g.GroupStats(); return float64(c) }),
	)
}

// Blobs returns s with its failures counted, by operation, in
// consentkit_blob_errors_total{store,op}; name tells the stores apart
// ("recordings"). A missing object (blob.ErrNotFound) or an early delete
// (blob.ErrLocked) is an answer, not a failure, and is not counted.
func (m *Metrics) Blobs(name string, s blob.Store) blob.Store {
	return &blobs{Store: s, errs: m.blobErrors.MustCurryWith(prometheus.Labels{"store": name})}
}

type blobs struct {
	blob.Store
	errs *prometheus.CounterVec
}

func (b *blobs) count(op string, err error) error {
	if err != nil && !errors.Is(err, blob.ErrNotFound) && !errors.Is(err, blob.ErrLocked) {
		b.errs.WithLabelValues(op).Inc()
	}
	return err
}

func (b *blobs) Put(ctx context.Context, key string, r io.Reader) (blob.Info, error) {
	info, err := b.Store.Put(ctx, key, r)
	return info, b.count("put", err)
}

func (b *blobs) Open(ctx context.Context, key string) (io.ReadCloser, blob.Info, error) {
	rc, info, err := b.Store.Open(ctx, key)
	return rc, info, b.count("open", err)
}

func (b *blobs) OpenRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, blob.Info, error) {
	rc, info, err := b.Store.OpenRange(ctx, key, offset, length)
	return rc, info, b.count("open", err)
}

func (b *blobs) Delete(ctx context.Context, key string) error {
	return b.count("delete", b.Store.Delete(ctx, key))
}

func (b *blobs) Lock(ctx context.Context, key string, until time.Time) error {
	return b.count("lock", b.Store.Lock(ctx, key, until))
}

func (b *blobs) ListAfter(ctx context.Context, prefix, after string, limit int) ([]string, error) {
	keys, err := b.Store.ListAfter(ctx, prefix, after, limit)
	return keys, b.count("list", err)
}

// Videos returns v, the store of videos and attestation screenshots, with
// its failures counted as Blobs counts a blob store's, under
// store="videos" (op put, open, delete, lock or discard; a DeleteAll
// counts as a delete). A video not found (fs.ErrNotExist) is an answer,
// not a failure. The result is a retain.VideoDiscarder when v is, and a
// retain.VideoSweeper when v is: the purge removes by id through it the
// videos and screenshots that no row names (D45).
func (m *Metrics) Videos(v retain.VideoStore) retain.VideoStore {
	w := &videos{VideoStore: v, blobs: blobs{errs: m.blobErrors.MustCurryWith(prometheus.Labels{"store": "videos"})}}
	d, discards := v.(retain.VideoDiscarder)
	s, sweeps := v.(retain.VideoSweeper)
	switch {
	case discards && sweeps:
		return &discardingSweepingVideos{discardingVideos: &discardingVideos{videos: w, d: d}, s: s}
	case discards:
		return &discardingVideos{videos: w, d: d}
	case sweeps:
		return &sweepingVideos{videos: w, s: s}
	}
	return w
}

// discardingVideos is videos of a retain.VideoDiscarder.
type discardingVideos struct {
	*videos
	d retain.VideoDiscarder
}

func (v *discardingVideos) Discard(ctx context.Context, path string) error {
	return v.count("discard", v.d.Discard(ctx, path))
}

// sweepingVideos is videos of a retain.VideoSweeper.
type sweepingVideos struct {
	*videos
	s retain.VideoSweeper
}

func (v *sweepingVideos) DeleteAll(ctx context.Context, id string, screenshots bool) error {
	return v.count("delete", v.s.DeleteAll(ctx, id, screenshots))
}

// discardingSweepingVideos is videos of a store that is both.
type discardingSweepingVideos struct {
	*discardingVideos
	s retain.VideoSweeper
}

func (v *discardingSweepingVideos) DeleteAll(ctx context.Context, id string, screenshots bool) error {
	return v.count("delete", v.s.DeleteAll(ctx, id, screenshots))
}

type videos struct {
	retain.VideoStore
	blobs blobs // its count
}

func (v *videos) count(op string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return v.blobs.count(op, err)
}

func (v *videos) Put(ctx context.Context, sessionID, src string) (consent.Video, error) {
	out, err := v.VideoStore.Put(ctx, sessionID, src)
	return out, v.count("put", err)
}

func (v *videos) PutScreenshot(ctx context.Context, certificateID string, png []byte) (consent.Video, error) {
	out, err := v.VideoStore.PutScreenshot(ctx, certificateID, png)
	return out, v.count("put", err)
}

func (v *videos) Open(ctx context.Context, video consent.Video) (io.ReadSeekCloser, error) {
	rc, err := v.VideoStore.Open(ctx, video)
	return rc, v.count("open", err)
}

func (v *videos) Delete(ctx context.Context, path string) error {
	return v.count("delete", v.VideoStore.Delete(ctx, path))
}

func (v *videos) Lock(ctx context.Context, path string, until time.Time) error {
	return v.count("lock", v.VideoStore.Lock(ctx, path, until))
}

// WatchQueues exports the depth of the job queues of the given kinds —
// jobs queued and not failed for good, leased or not (consent.Tx.CountJobs)
// — as consentkit_job_queue_depth{kind}, read from st at each scrape
// (within 5 s). A scrape that cannot read the store leaves the queues out,
// rather than report them wrong, and answers with the rest as usual; it
// counts the failure in consentkit_job_queue_read_errors_total, in that
// same scrape.
func (m *Metrics) WatchQueues(st consent.Store, kinds ...string) {
	m.reg.MustRegister(&queues{st: st, kinds: kinds,
		desc: prometheus.NewDesc("consentkit_job_queue_depth",
			"Jobs queued and not failed for good, leased or not, by kind.", []string{"kind"}, nil),
		errDesc: prometheus.NewDesc("consentkit_job_queue_read_errors_total",
			"Scrapes that could not read the job queues from the store, and left consentkit_job_queue_depth out.", nil, nil)})
}

type queues struct {
	st      consent.Store
	kinds   []string
	desc    *prometheus.Desc
	errDesc *prometheus.Desc
	errs    atomic.Uint64 // failed reads
}

func (q *queues) Describe(ch chan<- *prometheus.Desc) { ch <- q.desc; ch <- q.errDesc }

func (q *queues) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	counts := make([]int, len(q.kinds))
	err := q.st.View(ctx, func(tx consent.Tx) error {
		for i, k := range q.kinds {
			n, err := tx.CountJobs(ctx, k)
			if err != nil {
				return err
			}
			counts[i] = n
		}
		return nil
	})
	if err != nil {
		// Not an invalid metric: that fails the whole scrape (promhttp
		// answers 500), and every other metric with it.
		ch <- prometheus.MustNewConstMetric(q.errDesc, prometheus.CounterValue, float64(q.errs.Add(1)))
		return
	}
	ch <- prometheus.MustNewConstMetric(q.errDesc, prometheus.CounterValue, float64(q.errs.Load()))
	for i, k := range q.kinds {
		ch <- prometheus.MustNewConstMetric(q.desc, prometheus.GaugeValue, float64(counts[i]), k)
	}
}
