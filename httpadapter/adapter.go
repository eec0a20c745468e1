package httpadapter

import (
	"cmp"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/capture"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/ratelimit"
	"github.com/consentkit/consentkit/optout"
	"github.com/consentkit/consentkit/profile"
	"github.com/consentkit/consentkit/retain"
	"github.com/consentkit/consentkit/verify"
	"github.com/consentkit/consentkit/webhook"
)

// Config configures the handler. Service is required. As everywhere in the
// library, the zero value of a field means its default and a value out of
// range is an error from New; the clock, prices and retention periods are
// the Service's (consentkit.Config), not declared again here.
type Config struct {
	Service *consentkit.Service // required
	Logger  *slog.Logger        // default slog.Default()
	// PropertyCredentials turns on company-and-property authentication of
	// Verification API requests without an Authorization header (D8). Off by
	// default: a property id is not a secret.
	PropertyCredentials bool
	// TrustedProxies are the peers whose X-Forwarded-For is believed (D20).
	TrustedProxies TrustedProxies
	// IPv6PrefixBits is how much of an IPv6 client address keys its rate
	// limit: default 64, since one subscriber commonly holds a /64; 1–128.
	IPv6PrefixBits int
	// Rate limits per minute (D28); a negative value turns one off.
	OptOutPerMinute int // per client address; default 10
	RetainPerMinute int // per company, single and batch together; default 500
	VerifyPerMinute int // per company, other verification endpoints; default none
	// Capture rate limits per minute (D32); a negative value turns one off.
	CaptureStartsPerMinute   int // sessions started per client address; default 30
	CapturePropertyPerMinute int // sessions started per property; default 6,000
	CapturePerMinute         int // chunks, consents and their preflights per client address; default 600
	// OptOutIdleRecordsPerMinute is how many opt-outs that revoke nothing
	// new are recorded a minute per company (optout.LimitIdleRecords,
	// D52); default optout.DefaultIdleRecordsPerMinute, negative: all.
	OptOutIdleRecordsPerMinute int
	// Capture byte budgets per minute (D52): the bytes of chunk and consent
	// bodies per client address, counted as each body is read, before it
	// is parsed (default 32 MiB), and the bytes of events per property,
	// counted before they are stored (default 1 GiB). A request over a
	// budget is answered 429 with Retry-After. Each must hold the largest
	// body a capture route takes (the Service's MaxChunkBytes and 4 KiB);
	// a negative value turns one off. A client may spend an eighth of its
	// budget at once (or the largest body, when that is more), and the
	// rest as it refills. Each instance keeps its own budgets:
	// behind a load balancer that spreads one client over N instances, a
	// client may spend up to N times its budget.
	CaptureBytesPerMinute         int64
	CapturePropertyBytesPerMinute int64
	// MaxLimiterKeys caps the keys each rate limiter holds: default 10,000.
	MaxLimiterKeys int
	// Metrics, when set, is served at GET /operator/metrics behind the
	// operator secret, as the operator API is: package metrics makes one.
	// Without it that route answers 404.
	Metrics http.Handler
	// Observer, when set, is told of every request a route answers, of
	// the capture bytes read and of the requests the byte budgets refuse:
	// package metrics implements it. Without it requests are timed by
	// nothing.
	Observer Observer
	// RefusalHold is how long a request refused by its client address's
	// limit or byte budget (capture, opt-out: the anonymous routes) is
	// held before its 429 is written, at most the Retry-After it is
	// given: default DefaultRefusalHold, negative for none. A client that
	// ignores Retry-After and asks again at once then costs a held
	// connection, not a request a millisecond (D52). At most
	// MaxHeldRefusals are held at once; beyond that a 429 is written at
	// once.
	RefusalHold time.Duration
	// Videos is where the conversion worker keeps videos, for
	// GET /api/integrations/{companyId}/sessions/{sessionId}/video (D45);
	// nil: that route answers 503.
	Videos retain.VideoStore
	// RRWebDir is the directory of rrweb's browser bundle, rrweb.umd.min.cjs,
	// served at /capture/rrweb.js for the snippet (D39): default the
	// directory named by the environment variable CONSENTKIT_RRWEB_DIR,
	// else capture.DefaultRRWebDir (in a checkout of this repository).
	// When it holds no bundle, that route answers 503 saying what to
	// install, and the rest works; the bundle is looked for at every
	// request, so one installed later is served without a restart.
	RRWebDir string
	// OperatorSecret is the Bearer secret of the operator API that
	// Handler.Operator serves: at least 32 bytes, and no company's token.
	// Empty: the operator API refuses every request.
	OperatorSecret string
}

// Handler serves the routes of Routes. Build it with New; mount it on any
// mux, under any prefix.
type Handler struct {
	cfg    Config
	svc    *consentkit.Service
	log    *slog.Logger
	routes []*route
	*router
	limits map[Limit]*ratelimit.Limiter // nil: no limit

	verify  *verify.Service
	optout  *optout.Service
	retain  *retain.Service
	capture *capture.Service
	rrweb   *capture.Recorder
	// recorderLogged is when a missing recorder was last logged (Unix
	// nanoseconds, the Service's clock).
	recorderLogged atomic.Int64

	webhooks webhook.Endpoints
	profiles profile.Profiles

	operatorDigest []byte // SHA-256 of Config.OperatorSecret; nil: none
	// operatorFailures counts each client's wrong operator secrets
	// (OperatorFailuresPerMinute, authenticateOperator).
	operatorFailures *ratelimit.Limiter

	held chan struct{} // a slot for each refusal held (RefusalHold)
}

// Refusals held before their 429 (Config.RefusalHold).
const (
	DefaultRefusalHold = time.Second
	MaxHeldRefusals    = 256
)

// router dispatches requests to a set of routes and answers the rest.
type router struct {
	h     *Handler
	mux   *http.ServeMux // every route, and the fallback for the rest
	paths *http.ServeMux // every route's pattern, any method: 405 or 404
	allow map[string]string
}

// New returns the handler serving every route.
func New(cfg Config) (*Handler, error) {
	if cfg.Service == nil {
		return nil, errors.New("httpadapter: Config.Service is required")
	}
	if cfg.IPv6PrefixBits == 0 {
		cfg.IPv6PrefixBits = 64
	}
	if cfg.IPv6PrefixBits < 1 || cfg.IPv6PrefixBits > 128 {
		return nil, errors.New("httpadapter: Config.IPv6PrefixBits must be 1 to 128")
	}
	if cfg.MaxLimiterKeys < 0 {
		return nil, errors.New("httpadapter: Config.MaxLimiterKeys must not be negative")
	}
	if cfg.MaxLimiterKeys == 0 {
		cfg.MaxLimiterKeys = 10_000
	}
	if cfg.RefusalHold == 0 {
		cfg.RefusalHold = DefaultRefusalHold
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.RRWebDir == "" {
		cfg.RRWebDir = cmp.Or(os.Getenv(capture.RRWebDirEnv), capture.DefaultRRWebDir)
	}
	if cfg.OperatorSecret != "" && len(cfg.OperatorSecret) < MinOperatorSecret {
		return nil, fmt.Errorf("httpadapter: Config.OperatorSecret must be at least %d bytes", MinOperatorSecret)
	}
	h := &Handler{
		cfg: cfg, svc: cfg.Service, held: make(chan struct{}, MaxHeldRefusals), log: cfg.Logger, webhooks: webhook.Endpoints{Service: cfg.Service},
		profiles: profile.Profiles{Service: cfg.Service},
		verify:   verify.New(cfg.Service), retain: retain.New(cfg.Service),
		optout:  optout.New(cfg.Service).LimitIdleRecords(setting(cfg.OptOutIdleRecordsPerMinute, optout.DefaultIdleRecordsPerMinute)),
		capture: capture.New(cfg.Service),
		limits:  map[Limit]*ratelimit.Limiter{},

		operatorFailures: ratelimit.New(OperatorFailuresPerMinute, cfg.MaxLimiterKeys, cfg.Service.Now),
	}
	for l, n := range map[Limit]int{
		OptOutLimit:          setting(cfg.OptOutPerMinute, 10),
		RetainLimit:          setting(cfg.RetainPerMinute, 500),
		VerifyLimit:          setting(cfg.VerifyPerMinute, 0),
		CaptureStartLimit:    setting(cfg.CaptureStartsPerMinute, 30),
		capturePropertyLimit: setting(cfg.CapturePropertyPerMinute, 6000),
		CaptureLimit:         setting(cfg.CapturePerMinute, 600),
	} {
		if n > 0 {
			h.limits[l] = ratelimit.New(n, cfg.MaxLimiterKeys, cfg.Service.Now)
		}
	}
	for l, b := range map[Limit]int64{
		captureBytesLimit:         setting(cfg.CaptureBytesPerMinute, 32<<20),
		capturePropertyBytesLimit: setting(cfg.CapturePropertyBytesPerMinute, 1<<30),
	} {
		switch {
		case b == 0:
			continue
		case b < h.captureBodyBytes():
			return nil, fmt.Errorf("httpadapter: a capture byte budget of %d bytes a minute is under the largest capture body, %d bytes", b, h.captureBodyBytes())
		case b > 1<<40:
			return nil, errors.New("httpadapter: a capture byte budget must be at most 1 TiB a minute")
		}
		// A client spends at most an eighth of a minute's bytes at once
		// (never under the largest body), not its minute in a second.
		burst := b
		if l == captureBytesLimit {
			burst = max(b/8, h.captureBodyBytes())
		}
		h.limits[l] = ratelimit.NewBurst(kib(int(b)), kib(int(burst)), cfg.MaxLimiterKeys, cfg.Service.Now)
	}
	if lim := h.limits[capturePropertyBytesLimit]; lim != nil {
		h.capture.Budget = func(propertyID string, n int) error {
			if err := spend(lim, propertyID, n); err != nil {
				// Counted where it refuses a request (appendEvents): a
				// consent drops its tail instead (D35).
				return &propertyBudgetError{err}
			}
			return nil
		}
	}
	h.rrweb = capture.NewRecorder(cfg.RRWebDir)
	if cfg.OperatorSecret != "" {
		d := sha256.Sum256([]byte(cfg.OperatorSecret))
		h.operatorDigest = d[:]
	}
	h.routes = h.table()
	var public []*route
	for _, rt := range h.routes {
		if rt.Group != OperatorGroup {
			public = append(public, rt)
		}
	}
	h.router = h.newRouter(public)
	return h, nil
}

// MinOperatorSecret is the shortest Config.OperatorSecret accepted.
const MinOperatorSecret = 32

// Operator returns the handler of the operator API (the routes of
// OperatorGroup): never served beside the public routes by h itself, so
// the host application decides where, if anywhere, it is reachable —
// another listener, a path behind its own access control. Every request
// needs "Authorization: Bearer <Config.OperatorSecret>"; a company's token
// gets 401, as the operator secret does on the public routes.
func (h *Handler) Operator() http.Handler {
	return h.Only(OperatorGroup)
}

// Only returns a handler serving only the routes of the given groups, such
// as the capture routes alone on a host of their own. It shares h's
// services and rate limits.
func (h *Handler) Only(groups ...Group) http.Handler {
	var rs []*route
	for _, rt := range h.routes {
		if slices.Contains(groups, rt.Group) {
			rs = append(rs, rt)
		}
	}
	return h.newRouter(rs)
}

func (h *Handler) newRouter(routes []*route) *router {
	rr := &router{h: h, mux: http.NewServeMux(), paths: http.NewServeMux(), allow: map[string]string{}}
	methods := map[string][]string{} // of each pattern, for 405's Allow
	for _, rt := range routes {
		rr.mux.HandleFunc(rt.Method+" "+rt.Pattern, h.observed(rt))
		if methods[rt.Pattern] == nil {
			rr.paths.Handle(rt.Pattern, http.NotFoundHandler()) // only its pattern is used
		}
		methods[rt.Pattern] = append(methods[rt.Pattern], rt.Method)
	}
	for pattern, ms := range methods {
		if slices.Contains(ms, http.MethodGet) {
			ms = append(ms, http.MethodHead)
		}
		rr.allow[pattern] = strings.Join(ms, ", ")
	}
	rr.mux.HandleFunc("/", rr.unrouted)
	return rr
}

// observed serves rt, telling Config.Observer of each request when there
// is one.
func (h *Handler) observed(rt *route) http.HandlerFunc {
	obs, name := h.cfg.Observer, rt.Method+" "+rt.Pattern
	if obs == nil {
		return func(w http.ResponseWriter, r *http.Request) { h.serve(rt, w, r) }
	}
	return func(w http.ResponseWriter, r *http.Request) {
		began, sw, served := time.Now(), &statusWriter{ResponseWriter: w}, false
		// Deferred, so that a request that panics is counted too: net/http
		// drops its connection, a failure (500 unless a status went out).
		defer func() {
			status := sw.Status()
			if !served && sw.status == 0 {
				status = http.StatusInternalServerError
			}
			obs.ObserveRequest(name, status, time.Since(began))
		}()
		h.serve(rt, sw, r)
		served = true
	}
}

// setting applies the convention of the limit fields (rates, byte
// budgets): zero is the default def, a negative value none (0).
func setting[T int | int64](n, def T) T {
	switch {
	case n == 0:
		return def
	case n < 0:
		return 0
	}
	return n
}

// RequestIDHeader names the request's id: taken from the request when it
// is an identifier of at most 64 characters of [A-Za-z0-9._:-], generated
// otherwise, and echoed in the response. Audit entries record it (D42).
const RequestIDHeader = "X-Request-Id"

const maxRequestID = 64

// ServeHTTP answers the request. A path that is not in its clean form (a
// trailing slash, "//", "..") names no route: 404, never a redirect.
func (rr *router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get(RequestIDHeader)
	if len(id) > maxRequestID || !consent.ValidID(id) {
		id = consent.NewID("req")
	}
	w.Header().Set(RequestIDHeader, id)
	r = r.WithContext(consentkit.WithRequestID(r.Context(), id))
	if p := r.URL.Path; p == "" || p[0] != '/' || path.Clean(p) != p {
		stopReading(w, r)
		rr.h.notFound(w, r)
		return
	}
	rr.mux.ServeHTTP(w, r)
}

// unrouted answers what no route serves: 405 with Allow when the path is a
// route's with another method, else 404.
func (rr *router) unrouted(w http.ResponseWriter, r *http.Request) {
	h := rr.h
	stopReading(w, r) // no route reads its body, nor any limit pays for it
	if _, pattern := rr.paths.Handler(r); pattern != "" {
		allow := rr.allow[pattern]
		h.writeError(w, r, shapeOf(r.URL.Path), &httpError{
			status: http.StatusMethodNotAllowed, msg: "method " + r.Method + " is not allowed here; use " + allow,
			header: http.Header{"Allow": {allow}},
		})
		return
	}
	h.notFound(w, r)
}

func (h *Handler) notFound(w http.ResponseWriter, r *http.Request) {
	h.writeError(w, r, shapeOf(r.URL.Path), &httpError{status: http.StatusNotFound, msg: "no such endpoint"})
}

// shapeOf picks the error shape of a path that matched no route: the Retain
// API's under /api/integrations/, the Verification API's elsewhere.
func shapeOf(p string) ErrorShape {
	if strings.HasPrefix(p, "/api/integrations/") {
		return RetainErrors
	}
	return VerifyErrors
}

// Routes returns a description of every route the handler serves, in the
// order of the package documentation.
func (h *Handler) Routes() []Route {
	out := make([]Route, len(h.routes))
	for i, rt := range h.routes {
		out[i] = rt.Route
	}
	return out
}

// NewServer returns an http.Server for h with timeouts (header 10 s, whole
// request 30 s, response 60 s, idle connection 2 min), headers of at most
// 64 KiB, and its own errors logged to logger (nil: slog.Default()) at
// WARN. An http.Server's zero timeouts wait forever, which lets anyone hold
// connections open with a slow header or body; the unauthenticated opt-out
// route makes that cheap. The largest body, 1 MiB (MaxBodyBytes), arrives in
// a few seconds even on a slow link. Set Addr, or call Serve with a
// listener.
func NewServer(h http.Handler, logger *slog.Logger) *http.Server {
	if logger == nil {
		logger = slog.Default()
	}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}

// Observer is told what the handler does, for metrics (Config.Observer).
// Its methods are called on the request's goroutine: they must be quick
// and safe for concurrent use.
type Observer interface {
	// ObserveRequest reports a request answered by a route: its pattern
	// ("POST /verify/match"), the status written and how long it took.
	ObserveRequest(route string, status int, took time.Duration)
	// ObserveCaptureBytes reports the bytes of a capture body (a session
	// start, a chunk, a consent) as they are charged, before they are read
	// (D52): how many, and whether the client's byte budget refused them.
	// Every capture body is reported, never refused when there is no such
	// budget.
	ObserveCaptureBytes(n int, refused bool)
	// ObserveBudgetRefusal reports a capture request refused by a byte
	// budget (D52): BudgetClient or BudgetProperty.
	ObserveBudgetRefusal(budget string)
}

// The byte budgets an Observer is told of (Observer.ObserveBudgetRefusal).
const (
	// BudgetClient is the budget of capture bodies' bytes per client
	// address (an IPv6 client's /64), Config.CaptureBytesPerMinute.
	BudgetClient = "client"
	// BudgetProperty is the budget of events' bytes per property,
	// Config.CapturePropertyBytesPerMinute.
	BudgetProperty = "property"
)

// statusWriter remembers the status written through it.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Status is the status written; 200 when nothing was.
func (w *statusWriter) Status() int { return cmp.Or(w.status, http.StatusOK) }

// Unwrap lets http.ResponseController reach the server's writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
