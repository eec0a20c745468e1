// Command server runs the whole consentkit service on an embedded default:
//
//	go run ./examples/server
//
// starts it on 127.0.0.1:8080 with a SQLite file, consent.db. On an empty
// store it loads demo data (the example seed, with fresh tokens of acme and
// of the third party buyer printed once) and prints a ready-to-paste curl
// command for each main endpoint. Run it with -h for the flags.
//
// It serves GET /healthz, and every documented endpoint through
// httpadapter; it logs one line per request; it runs the conversion worker
// and webhook delivery in-process; and it shuts down cleanly on SIGINT or SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/dashboard"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/metrics"
	"github.com/consentkit/consentkit/retain/mp4"
	"github.com/consentkit/consentkit/retain/s3video"
	"github.com/consentkit/consentkit/signed"
	"github.com/consentkit/consentkit/store/memstore"
	"github.com/consentkit/consentkit/store/pgstore"
	"github.com/consentkit/consentkit/store/sqlitestore"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// Once the first signal starts the shutdown, a second one ends
		// the process at once, as it would without the handler.
		<-ctx.Done()
		stop()
	}()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// options are the command's flags.
type options struct {
	addr           string
	store          string
	dsn            string
	seed           string
	trustedProxies string
	videoDir       string
	recordingsDir  string
	chromium       string
	ffmpeg         string
	replayer       string
	defaultRet     days
	longTermRet    days
	longTermSet    bool
	toolsRecheck   time.Duration
	conversions    int
	purgeInterval  time.Duration
	signingKey     string
	s3             s3video.Config // Bucket empty: videos go to videoDir

	webhookAllowPrivate bool
	trustPublishedKeys  bool
	revokedKeys         string
	installRecorder     bool
}

// OperatorSecretEnv names the environment variable whose value, when set,
// turns on the operator API under /operator/ with that Bearer secret (at
// least 32 bytes). An environment variable, not a flag, so that the secret
// is not in the process list.
const OperatorSecretEnv = "CONSENTKIT_OPERATOR_SECRET"

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	// longTermRet is zero until the flag is given: the library's default,
	// five calendar years, is no fixed number of days (D26).
	o := &options{defaultRet: days(consentkit.DefaultRetention)}
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: go run ./examples/server [flags]\n\nRuns the consentkit service. Flags:\n")
		fs.PrintDefaults()
	}
	fs.StringVar(&o.addr, "addr", "127.0.0.1:8080", "`address` to listen on (host:port; port 0 picks a free one)")
	fs.StringVar(&o.store, "store", "sqlite", "storage: memory, sqlite or postgres")
	fs.StringVar(&o.dsn, "dsn", "", "SQLite database file (default consent.db), or the PostgreSQL URL (required with -store postgres)")
	fs.StringVar(&o.seed, "seed", "", "JSON seed `file` to load into an empty store (its format: docs/operating.md); without it an empty store gets demo data")
	fs.StringVar(&o.trustedProxies, "trusted-proxies", "", "comma-separated `CIDRs` of proxies whose X-Forwarded-For is honoured (default none)")
	fs.StringVar(&o.videoDir, "video-dir", "videos", "`directory` where converted MP4 videos are written")
	fs.StringVar(&o.recordingsDir, "recordings-dir", "recordings", "`directory` that finished recordings are moved to, compressed, out of the database (D52); with -video-s3-bucket they go to that bucket instead")
	fs.StringVar(&o.chromium, "chromium", "", "Chromium headless shell `binary` for video conversion (default /usr/lib/chromium/chromium-headless-shell, else chromium-headless-shell on PATH)")
	fs.StringVar(&o.ffmpeg, "ffmpeg", "", "ffmpeg `binary` for video conversion (default ffmpeg on PATH)")
	fs.StringVar(&o.replayer, "replayer", "", "`directory` of rrweb's dist files (rrweb 2.2.2 from npm) for the recorder and the video converter (default $"+mp4.RRWebDirEnv+", else "+mp4.DefaultReplayer+", where npm ci --prefix retain/mp4/replayer installs it)")
	fs.StringVar(&o.s3.Bucket, "video-s3-bucket", "", "keep videos in this S3 `bucket` instead of -video-dir; credentials come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
	fs.StringVar(&o.s3.Prefix, "video-s3-prefix", "", "key `prefix` of the videos in the bucket (default videos/)")
	fs.StringVar(&o.s3.Endpoint, "video-s3-endpoint", "", "`URL` of an S3-compatible server such as MinIO or versitygw (default Amazon S3); addresses are then path-style")
	fs.StringVar(&o.s3.Region, "video-s3-region", os.Getenv("AWS_REGION"), "the bucket's `region` (default $AWS_REGION, else us-east-1)")
	fs.BoolVar(&o.s3.RequireObjectLock, "video-s3-require-lock", false, "refuse to start unless the bucket has Object Lock, so that every retained video is undeletable until its retention date (D45)")
	fs.IntVar(&o.conversions, "conversions", 1, "how many recordings are converted to video at once, each with a warm browser of its own (up to about 600 MiB each)")
	fs.StringVar(&o.signingKey, "signing-key", "", "`file` of the Ed25519 key that signs certificates (D41), made on first start: default beside the SQLite file, consentkit-signing.key with Postgres, none kept with memory; $"+SigningKeyEnv+", the file's JSON, wins over it")
	fs.DurationVar(&o.purgeInterval, "purge-interval", time.Hour, "how often expired recordings, certificates and videos are purged (D43); what expires is set by -default-retention and -long-term-retention. A changed interval counts from the next purge: the one scheduled keeps its time")
	fs.DurationVar(&o.toolsRecheck, "tools-recheck", time.Minute, "how often to look again for missing video tools")
	fs.BoolVar(&o.installRecorder, "install-recorder", true, "when rrweb's recorder is missing and the server runs from a checkout of consentkit with npm at hand, install it ("+strings.Join(npmInstall, " ")+") in the background")
	fs.BoolVar(&o.trustPublishedKeys, "trust-published-keys", false, "verify certificates with every key published in the store, so that instances with key files of their own need not share them; whoever can write the database can then add a key (D41). Off: instances sharing a store share the key file")
	fs.StringVar(&o.revokedKeys, "revoked-keys", "", "comma-separated `ids` of signing keys that verify nothing any more, though the store publishes them: a compromised key; every certificate it signed then fails its integrity check (D41)")
	fs.BoolVar(&o.webhookAllowPrivate, "webhook-allow-private", false, "let webhook endpoints have loopback and private addresses (refused by default, D44)")
	fs.Var(&o.defaultRet, "default-retention", "how long unretained sessions and certificates are kept (Go duration, or days like 90d)")
	fs.Var(&o.longTermRet, "long-term-retention", "how long retained items are kept (Go duration, or days like 1825d, or years of 365 days like 5y; default five calendar years, 1826 or 1827 days)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if o.toolsRecheck <= 0 {
		return nil, errors.New("-tools-recheck must be positive")
	}
	if o.purgeInterval <= 0 {
		return nil, errors.New("-purge-interval must be positive")
	}
	videoDirSet, s3Set := false, ""
	fs.Visit(func(f *flag.Flag) {
		videoDirSet = videoDirSet || f.Name == "video-dir"
		if strings.HasPrefix(f.Name, "video-s3-") && f.Name != "video-s3-bucket" {
			s3Set = f.Name
		}
	})
	if o.s3.Bucket != "" && videoDirSet {
		return nil, errors.New("-video-dir and -video-s3-bucket are two places for the videos: give one")
	}
	if o.s3.Bucket == "" && s3Set != "" {
		// A forgotten bucket would keep videos in a deletable directory,
		// -video-s3-require-lock's promise with them.
		return nil, fmt.Errorf("-%s needs -video-s3-bucket", s3Set)
	}
	if o.s3.Bucket != "" {
		o.s3.AccessKeyID, o.s3.SecretAccessKey = os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
		o.s3.PathStyle = o.s3.Endpoint != ""
	}
	if o.conversions < 1 || o.conversions > 64 {
		return nil, errors.New("-conversions must be between 1 and 64")
	}
	fs.Visit(func(f *flag.Flag) { o.longTermSet = o.longTermSet || f.Name == "long-term-retention" })
	switch o.store {
	case "memory", "sqlite", "postgres":
	default:
		return nil, fmt.Errorf("-store must be memory, sqlite or postgres, not %q", o.store)
	}
	if o.store == "sqlite" && o.dsn == "" {
		o.dsn = "consent.db"
	}
	if o.store == "postgres" && o.dsn == "" {
		return nil, errors.New("-store postgres needs -dsn postgres://user@host:5432/db")
	}
	return o, nil
}

// days is a duration flag that also takes whole days ("90d") and years of
// 365 days ("5y").
type days time.Duration

func (d *days) String() string {
	if *d%days(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(time.Duration(*d)/(24*time.Hour)), 10) + "d"
	}
	return time.Duration(*d).String()
}

// maxDays is the longest duration a flag takes: what a time.Duration holds.
const maxDays = math.MaxInt64 / int64(24*time.Hour)

// goDuration matches the syntax of time.ParseDuration, so that a value it
// refuses can be told apart as out of range rather than malformed.
var goDuration = regexp.MustCompile(`^([0-9]*\.?[0-9]*(ns|us|µs|μs|ms|s|m|h))+$`)

func (d *days) Set(s string) error {
	unit := map[string]time.Duration{"d": 24 * time.Hour, "y": 365 * 24 * time.Hour}
	malformed := errors.New("want a positive duration such as 2160h, 90d or 5y")
	outOfRange := fmt.Errorf("%s is out of range: at most %dd (%dy)", s, maxDays, maxDays/365)
	if len(s) > 1 && unit[s[len(s)-1:]] != 0 {
		u := unit[s[len(s)-1:]]
		n, err := strconv.ParseInt(s[:len(s)-1], 10, 64)
		switch {
		case errors.Is(err, strconv.ErrRange) || err == nil && n > math.MaxInt64/int64(u):
			return outOfRange
		case err != nil || n <= 0:
			return malformed
		}
		*d = days(time.Duration(n) * u)
		return nil
	}
	v, err := time.ParseDuration(s)
	switch {
	case err != nil && goDuration.MatchString(s):
		return outOfRange
	case err != nil || v <= 0:
		return malformed
	}
	*d = days(v)
	return nil
}

// splitList returns the non-empty comma-separated items of s, trimmed.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func parseCIDRs(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range splitList(s) {
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, fmt.Errorf("-trusted-proxies: %q is not a CIDR", f)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	log := slog.New(slog.NewTextHandler(stderr, nil))
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "server:", err)
		return 2
	}
	if err := serve(ctx, o, log, stdout); err != nil {
		log.Error("server stopped", "err", err)
		return 1
	}
	return 0
}

// openStore opens and migrates the chosen store.
func openStore(ctx context.Context, o *options) (consent.Store, error) {
	var (
		st interface {
			consent.Store
			Migrate(context.Context) error
		}
		err error
	)
	switch o.store {
	case "memory":
		return memstore.New(), nil
	case "sqlite":
		st, err = sqlitestore.Open(o.dsn, sqlitestore.Config{})
	default:
		st, err = pgstore.Open(ctx, o.dsn)
	}
	if err != nil {
		return nil, err
	}
	if err := st.Migrate(ctx); err != nil {
		_ = st.Close() // err says why the store is not usable
		return nil, err
	}
	return st, nil
}

func serve(ctx context.Context, o *options, log *slog.Logger, stdout io.Writer) error {
	trusted, err := parseCIDRs(o.trustedProxies)
	if err != nil {
		return err
	}
	if s := os.Getenv(OperatorSecretEnv); s != "" && len(s) < httpadapter.MinOperatorSecret {
		return fmt.Errorf("%s holds %d bytes: the operator secret must be at least %d (for one: openssl rand -base64 32), or leave %s unset to turn the operator API and the dashboard off",
			OperatorSecretEnv, len(s), httpadapter.MinOperatorSecret, OperatorSecretEnv)
	}
	st, err := openStore(ctx, o)
	if err != nil {
		return fmt.Errorf("open %s store: %w", o.store, err)
	}
	defer func() {
		if err := st.Close(); err != nil {
			log.Error("close the store", "err", err)
		}
	}()
	longTerm := time.Duration(o.longTermRet)
	if !o.longTermSet {
		longTerm = 0 // the library's default: five calendar years
	}
	keyPath := signingKeyPath(o)
	var (
		key     signed.SigningKey
		since   time.Time
		created bool
	)
	// The store is read, through the checks above it, by a service without
	// keys: which unsigned certificates may pass is the keyed service's
	// configuration.
	reader, err := consentkit.NewService(st, consentkit.Config{})
	if err != nil {
		return err
	}
	if env := os.Getenv(SigningKeyEnv); env != "" {
		keyPath = ""
		key, since, err = parseKey([]byte(env), "in $"+SigningKeyEnv)
	} else {
		now := time.Now()
		key, since, created, err = loadSigningKey(keyPath, now, func() (time.Time, error) { return signingBegan(ctx, reader, now) })
	}
	if err == nil {
		since, err = notAfterFirstKey(ctx, reader, since)
	}
	if err != nil {
		return err
	}
	if created && keyPath != "" {
		log.Info("made the key that signs certificates; keep it with the data, and back it up", "key_id", key.ID, "file", keyPath)
	}
	// The metrics are served at /operator/metrics, behind the operator
	// secret as the rest of the operator API.
	m := metrics.New()
	m.WatchGroupCommit(st)
	recordings, err := recordingStore(ctx, o, log)
	if err != nil {
		return err
	}
	recordings = m.Blobs("recordings", recordings)
	svc, err := consentkit.NewService(st, consentkit.Config{
		Recordings: recordings,
		// Certificates of a database older than signing were issued
		// unsigned; they still verify (their recording hash is checked).
		// A database that had none lets none pass unsigned (since zero).
		SigningKeys: []signed.SigningKey{key}, UnsignedBefore: since,
		DefaultRetention: time.Duration(o.defaultRet), LongTermRetention: longTerm,
		WebhookAllowPrivate: o.webhookAllowPrivate, TrustPublishedKeys: o.trustPublishedKeys, RevokedKeys: splitList(o.revokedKeys),
	})
	if err != nil {
		return err
	}

	// A key id held by another key in the store refuses the start, as does
	// a key of another instance unless -trust-published-keys: instances
	// sharing a store share the key file (D41).
	if err := svc.PublishKeys(ctx); err != nil {
		return fmt.Errorf("publish the signing key: %w (instances sharing a store: the same -signing-key file for all, or -trust-published-keys)", err)
	}

	// Whatever can fail is done before prepare loads the demo data: the
	// demo's tokens are shown once, when they are issued, and a start that
	// failed after that would never show them.
	videos, err := videoStore(ctx, o, log)
	if err != nil {
		return err
	}
	videos = m.Videos(videos)
	operatorSecret := os.Getenv(OperatorSecretEnv)
	proxies := httpadapter.TrustedProxies{Networks: trusted}
	api, err := httpadapter.New(httpadapter.Config{
		Service: svc, Logger: log, TrustedProxies: proxies,
		RRWebDir: o.replayer, Videos: videos, OperatorSecret: operatorSecret,
		Observer: m, Metrics: m.Handler(),
	})
	if err != nil {
		return err
	}
	runner, queued, err := newJobs(svc, videos, o, m.ObserveJob, log)
	if err != nil {
		return err
	}
	m.WatchQueues(svc.Store(), queued...)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		err := svc.Store().View(r.Context(), func(tx consent.Tx) error { _, err := tx.CompanyIDs(r.Context(), "", 1); return err })
		if err != nil {
			log.Error("health check", "err", err)
			http.Error(w, `{"status":"unavailable"}`, http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status":"ok"}`+"\n") // a prober gone has no one to tell
	})
	mux.Handle("/", api)
	if operatorSecret != "" {
		// Only when the operator chose a secret: the operator API is never
		// served by default beside the public routes.
		mux.Handle("/operator/", api.Operator())
		dash, err := dashboard.New(svc, dashboard.Config{OperatorSecret: operatorSecret, Videos: videos, TrustedProxies: proxies})
		if err != nil {
			return err
		}
		mux.Handle("/dashboard/", dash)
		mux.Handle("/dashboard", dash)
		log.Info("the operator API is on /operator/ and the dashboard on /dashboard/ (" + OperatorSecretEnv + ")")
	} else {
		log.Info("the operator API and the dashboard are off; set " + OperatorSecretEnv + " to serve them")
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return err
	}
	defer func() { _ = ln.Close() }() // closed already once served; else not served: nothing is lost

	tokens, err := prepare(ctx, svc, o.seed, log)
	if err != nil {
		return err
	}
	base := ownOrigin(ln.Addr())
	demo, err := setupDemo(ctx, svc, ln.Addr())
	if err != nil {
		printTokens(stdout, tokens) // issued, and shown nowhere else
		return fmt.Errorf("demo form: %w", err)
	}
	rec := newRecorderSetup(o)
	if demo {
		d := demoHandler(svc, base, rec, log)
		mux.Handle("/demo", d)
		mux.Handle("/demo/submitted", d)
		// The address the guide prints opens the demo.
		mux.Handle("GET /{$}", http.RedirectHandler("/demo", http.StatusSeeOther))
	}
	examples := tokens.acme != "" // prepare loaded them just now
	if !examples {
		if examples, err = exampleData(ctx, svc); err != nil {
			log.Warn("the guide's commands are left out: the store could not be read", "err", err)
		}
	}
	srv := httpadapter.NewServer(logRequests(log, mux), log)
	g := guide{base: base, listen: ln.Addr(), tokens: tokens, demo: demo, seeded: o.seed != "", examples: examples, operator: operatorSecret != ""}
	g.print(stdout)
	log.Info("listening", "addr", ln.Addr().String(), "store", o.store)

	installDone := rec.start(ctx, o.installRecorder, log)
	workerDone := startWorker(ctx, svc, videos, o, installDone, m.ObserveJob, log)
	jobsDone := startJobs(ctx, runner, o, log)

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = srv.Shutdown(shutdownCtx) // stops accepting, waits for requests in flight
	<-workerDone
	<-jobsDone
	<-installDone
	if err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	log.Info("stopped")
	return nil
}

// statusRecorder remembers the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(status int) {
	r.status = status
	r.ResponseWriter.WriteHeader(status)
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// logRequests logs one line per request: method, path, status, duration.
func logRequests(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		log.Info("request", "method", r.Method, "path", r.URL.Path, "status", rec.status,
			"duration", time.Since(start).Round(time.Microsecond))
	})
}
