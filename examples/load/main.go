// Command load drives the real consentkit handler over loopback with C
// clients and reports, per scenario, throughput, latency percentiles
// (p50, p99, p99.9, max), the server's allocations per request and its
// peak resident memory, and the group commit's average batch. The server
// runs in a process of its own (this program, started again), so that its
// memory and allocations are its own; it preloads what the scenarios need.
//
//	go run ./examples/load -store sqlite -scenario match -clients 32 -duration 10s
//	go run ./examples/load -h # every flag
//
// In the same run it measures the ceilings the figures are judged
// against: a trivial net/http handler in the same server, driven by the
// same clients; for SQLite, a bare debit transaction loop (BEGIN
// IMMEDIATE; UPDATE; INSERT; COMMIT with synchronous=FULL); for
// PostgreSQL, pgbench's TPC-B with as many clients, when pgbench is
// installed. It prints the match scenario's ratio to each, and how the
// server's processor time per request compares with the trivial
// handler's, a figure that the clients' own use of the two cores blurs
// less. The machine's speed drifts from minute to minute, so -rounds N
// measures the trivial handler, the store's ceiling and match (or the
// scenario -round-scenario names) again, one after the other, N times, and
// prints the medians of the rounds' ratios.
//
// Scenarios (-scenario, comma-separated, or all): match, partial (partial
// match), info (certificate-info), retain (Retain API, one session),
// batch (Retain API, batches of 100 sessions), optout (by email, among
// -certs certificates), capture (chunks of -chunk-bytes of rrweb events,
// each client recording one session after another; with the ceilings,
// it prints a chunk's processor time as a multiple of a trivial
// request's, and its allocations), hostile (below).
//
//	go run ./examples/load -store sqlite -scenario all -clients 32 -duration 10s
//	go run ./examples/load -store postgres -dsn postgres://postgres@127.0.0.1:5432/test -scenario match
//	go run ./examples/load -store sqlite -scenario optout -certs 1000000 -clients 1
//	go run ./examples/load -store memory -scenario match -retain-sessions 1000 -duration 4s -rounds 5
//
// hostile measures what one client that respects nothing does to the
// others: -clients ask for certificate-info for -duration (the baseline),
// then again while one hostile client, one address on 4 connections,
// sends the costliest chunks of events it can make (1 MiB, of the shape
// capture's check takes longest on), starting sessions as it needs them
// and sending again at once whatever is refused, Retry-After or not. Both
// go to a handler with the rate limits and byte budgets at their defaults
// (the other scenarios run without them). It prints both rows, the ratio
// of the p50s (the target: at most 2×) and what the hostile requests were
// answered.
//
//	go run ./examples/load -store sqlite -scenario hostile -clients 8 -duration 4s
//
// purge runs in one process: -expired certificates past their window are
// purged in batches of -batch while -clients verify live certificates; it
// reports the purge's rows per second and the verifications' latency
// without and during it.
//
//	go run ./examples/load -scenario purge -store sqlite -expired 1000000 -clients 8 -duration 10s
//
// BENCHMARKS.md holds figures measured with it.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/store"
	"github.com/consentkit/consentkit/store/memstore"
	"github.com/consentkit/consentkit/store/pgstore"
	"github.com/consentkit/consentkit/store/sqlitestore"
)

// order is the order in which -scenario all runs the scenarios: opt-outs
// revoke certificates, so they come after the verifications.
var order = []string{"match", "partial", "info", "retain", "batch", "capture", "hostile", "optout"}

type options struct {
	scenario       string
	store, dsn     string
	clients        int   // the most of clientList, for the ceilings and the purge
	clientList     []int // each scenario runs with each
	duration       time.Duration
	certs          int
	retainSessions int
	chunkBytes     int
	preload        int
	ceilings       bool
	groupCommit    bool
	sign           bool
	sigCache       bool
	cpuProfile     string
	memProfile     string
	seed           uint64
	rounds         int
	roundScenario  string // the scenario the rounds measure
	// purge
	expired int
	batch   int
}

// needs reports whether one of the scenarios named runs.
func (o options) needs(names ...string) bool {
	for _, n := range names {
		if slices.Contains(o.list(), n) {
			return true
		}
	}
	return false
}

// A loadRun is one scenario at one number of clients.
type loadRun struct {
	scenario, label string
	clients         int
}

// runs returns the runs, in order: each scenario with each number of
// clients.
func (o options) runs() []loadRun {
	var out []loadRun
	for _, n := range o.list() {
		for _, c := range o.clientList {
			label := n
			if len(o.clientList) > 1 {
				label += "@" + strconv.Itoa(c)
			}
			out = append(out, loadRun{n, label, c})
		}
	}
	return out
}

// list returns the scenarios to run, in order.
func (o options) list() []string {
	if o.scenario == "all" {
		return order
	}
	return strings.Split(o.scenario, ",")
}

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	var o options
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.StringVar(&o.scenario, "scenario", "all", "comma-separated scenarios ("+strings.Join(order, ", ")+"), all, or purge")
	fs.StringVar(&o.store, "store", "sqlite", "memory, sqlite (a new file in a temporary directory) or postgres")
	fs.StringVar(&o.dsn, "dsn", "", "PostgreSQL URL, for -store postgres (the tables go in a schema made for the run and dropped after it)")
	clients := fs.String("clients", "32", "concurrent clients, each with its own connection; a list (1,8) runs each scenario with each")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "how long each scenario and each ceiling runs")
	fs.IntVar(&o.certs, "certs", 10000, "certificates preloaded (match, partial and info use up to 1,000 of them; optout picks among all)")
	fs.IntVar(&o.retainSessions, "retain-sessions", 200000, "sessions preloaded for retain and batch, each retained once")
	fs.IntVar(&o.chunkBytes, "chunk-bytes", 16<<10, "capture: size of a chunk of events")
	fs.IntVar(&o.preload, "preload", 0, "capture: finished sessions with a chunk each stored before the run")
	fs.BoolVar(&o.ceilings, "ceilings", true, "measure the ceilings (trivial handler, the store's own) in the same run")
	fs.BoolVar(&o.groupCommit, "group-commit", true, "the SQL stores run concurrent calls in shared transactions (store.GroupCommit); false: each in its own")
	fs.BoolVar(&o.sign, "sign", true, "certificates are signed, as examples/server signs them, and every verification checks the signature (D41)")
	fs.BoolVar(&o.sigCache, "signature-cache", true, "the service remembers good signatures (consentkit.Config.SignatureCacheSize); false: each verification checks in full")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write the server's CPU profile, from the end of its preload, to this file")
	fs.StringVar(&o.memProfile, "memprofile", "", "write the server's allocation profile, at its end, to this file (the preload's allocations included: look at what ServeHTTP allocates)")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the clients' random choices")
	fs.IntVar(&o.rounds, "rounds", 0, "after the ceilings, before the scenarios, measure the trivial handler, the store's ceiling and match again, one after the other, this many times, and print each round's ratios and their medians")
	fs.StringVar(&o.roundScenario, "round-scenario", "match", "the scenario that -rounds measures instead of match (one of -scenario's)")
	fs.IntVar(&o.expired, "expired", 100000, "purge: expired certificates to purge")
	fs.IntVar(&o.batch, "batch", 250, "purge: rows per purge transaction (the library's default is 250)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	for _, c := range strings.Split(*clients, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(c))
		if err != nil || n < 1 {
			return fmt.Errorf("-clients %q: want positive numbers separated by commas", *clients)
		}
		o.clientList, o.clients = append(o.clientList, n), max(o.clients, n)
	}
	if o.clients < 1 || o.duration <= 0 || o.certs < 1 || o.retainSessions < 0 || o.chunkBytes < 256 || o.preload < 0 ||
		o.expired < 0 || o.batch < 1 || o.rounds < 0 {
		return errors.New("-clients, -duration, -certs, -batch must be positive, -chunk-bytes at least 256 (one event); -retain-sessions, -preload, -expired and -rounds not negative")
	}
	if o.rounds > 0 && (!o.ceilings || !o.needs(o.roundScenario)) {
		return fmt.Errorf("-rounds measures %s against the ceilings: it needs the %[1]s scenario and -ceilings", o.roundScenario)
	}
	if o.store == "postgres" && o.dsn == "" {
		return errors.New("-store postgres needs -dsn")
	}
	if o.scenario == "purge" {
		return purge(ctx, o, stdout)
	}
	known := scenarios(o)
	for _, n := range o.list() {
		if _, ok := known[n]; !ok || n == "trivial" {
			return fmt.Errorf("unknown scenario %q: want %s, all or purge", n, strings.Join(order, ", "))
		}
	}
	if os.Getenv(childEnv) != "" {
		return serve(ctx, o, stdout)
	}
	return load(ctx, o, args, stdout)
}

// load starts the server, measures the ceilings and runs the scenarios.
func load(ctx context.Context, o options, args []string, stdout io.Writer) (err error) {
	fmt.Fprintf(stdout, "machine: %d cores, %s, %s %s/%s\n", runtime.NumCPU(), cpuModel(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	fx, stop, err := startServer(ctx, args)
	if err != nil {
		return err
	}
	defer func() {
		if serr := stop(); err == nil && serr != nil {
			err = fmt.Errorf("the server: %w", serr)
		}
	}()
	fmt.Fprintf(stdout, "store %s: %d certificates and %d sessions preloaded in %s; %v clients, %s per run\n",
		o.store, fx.CertCount, fx.RetainSessions, fx.Took, o.clientList, o.duration)
	known := scenarios(o)

	var trivial, engine float64
	var trivialCPU time.Duration // the server's processor time per trivial request
	engineName := map[string]string{"sqlite": "bare SQLite debit loop, tx/s", "postgres": "pgbench TPC-B, same clients, tps"}[o.store]
	if o.ceilings {
		fmt.Fprintln(stdout, "ceilings:")
		r, before, after, err := measure(fx, known["trivial"], o.clients, o)
		if err != nil {
			return err
		}
		trivial = r.rate()
		var allocs float64
		trivialCPU, allocs = perRequest(r, before, after)
		fmt.Fprintf(stdout, "  %-44s %9.0f  (server cpu/req %s, allocs/req %.0f)\n", "trivial net/http handler, req/s", trivial, trivialCPU, allocs)
		if engine, err = ceiling(ctx, o); err != nil {
			return err
		}
		if engine == 0 && o.store == "postgres" {
			fmt.Fprintln(stdout, "  (pgbench is not installed: no PostgreSQL ceiling)")
		}
		if engine > 0 {
			fmt.Fprintf(stdout, "  %-44s %9.0f\n", engineName, engine)
		}
	}
	// The rounds run before the scenarios: opt-out revokes certificates
	// that match verifies.
	if o.rounds > 0 {
		if err := rounds(ctx, fx, known, o, strings.Split(engineName, ",")[0], stdout); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "%-10s %9s %9s %9s %9s %9s %8s %10s %9s %7s\n", "scenario", "req/s", "p50", "p99", "p99.9", "max", "cpu/req", "allocs/req", "peak RSS", "batch")
	rates := map[string]float64{}
	var matchCPU, captureCPU time.Duration
	var captureAllocs float64
	var captureFailed int
	var chunks []hostileChunk
	if o.needs("hostile") {
		chunks = hostileChunks()
		var others []string
		for _, c := range chunks[1:] {
			others = append(others, fmt.Sprintf("%s %s", c.shape, c.check.Round(100*time.Microsecond)))
		}
		fmt.Fprintf(stdout, "hostile chunks: %s, %d events in %d bytes, the costliest to check here (capture.CheckEvents %s; %s)\n",
			chunks[0].shape, chunks[0].n, len(chunks[0].events), chunks[0].check.Round(100*time.Microsecond), strings.Join(others, ", "))
	}
	for _, run := range o.runs() {
		n, clients := run.scenario, run.clients
		if n == "hostile" {
			if err := hostileRun(fx, known, run, o, chunks, stdout); err != nil {
				return err
			}
			continue
		}
		resetPeak(fx)
		r, before, after, err := measure(fx, known[n], clients, o)
		if err != nil {
			return err
		}
		if clients == o.clients {
			rates[n] = r.rate()
		}
		if n == "match" && clients == o.clients {
			matchCPU, _ = perRequest(r, before, after)
		}
		if n == "capture" && clients == o.clients {
			captureCPU, captureAllocs = perRequest(r, before, after)
			for _, k := range r.failures {
				captureFailed += k
			}
		}
		printRow(stdout, run.label, r, before, after)
	}
	if m, ok := rates["match"]; ok && o.ceilings {
		fmt.Fprintln(stdout, "ratios of match:")
		fmt.Fprintf(stdout, "  ÷ trivial handler: %.2f×\n", m/trivial)
		if matchCPU > 0 {
			// The same comparison by the server's own processor time,
			// which the clients' share of the machine blurs less.
			fmt.Fprintf(stdout, "  server cpu/req, trivial ÷ match: %.2f×\n", float64(trivialCPU)/float64(matchCPU))
		}
		if engine > 0 {
			fmt.Fprintf(stdout, "  ÷ %s: %.2f×\n", strings.Split(engineName, ",")[0], m/engine)
		}
	}
	if captureCPU > 0 && trivialCPU > 0 && captureFailed > 0 {
		fmt.Fprintf(stdout, "capture: %d requests not answered as wanted: no ratio (it would be over refusals)\n", captureFailed)
	} else if captureCPU > 0 && trivialCPU > 0 {
		// Capture's targets: a chunk's processor time at most 6× a
		// trivial request's, at most 200 allocations.
		fmt.Fprintf(stdout, "capture: server cpu per %d-byte chunk ÷ trivial request = %s ÷ %s = %.1f× (target ≤ 6×), %.0f allocs per chunk (target ≤ 200)\n",
			o.chunkBytes, captureCPU, trivialCPU, float64(captureCPU)/float64(trivialCPU), captureAllocs)
	}
	return nil
}

// measure drives sc with clients for o.duration and returns what the
// clients got and the server's statistics before and after.
func measure(fx *fixture, sc scenario, clients int, o options) (r result, before, after stats, err error) {
	if before, err = serverStats(fx); err != nil {
		return
	}
	r = drive(fx, sc, clients, o.duration, o.seed)
	after, err = serverStats(fx)
	return
}

// ceiling measures the store's own ceiling: the bare SQLite loop's
// commits a second, pgbench's transactions a second (0 when pgbench is
// not installed), or 0 for the memory store.
func ceiling(ctx context.Context, o options) (float64, error) {
	switch o.store {
	case "sqlite":
		return sqliteLoop(ctx, o.duration)
	case "postgres":
		return pgbench(ctx, o.dsn, o.clients, o.duration)
	}
	return 0, nil
}

// rounds measures the trivial handler, the store's ceiling and match (or
// o.roundScenario) one after the other, o.rounds times, and prints each round's ratios and
// their medians. The machine's speed drifts from minute to minute (other
// guests, the disk's fsync): a ratio of two figures taken side by side,
// repeated, says more than one of figures taken minutes apart.
func rounds(ctx context.Context, fx *fixture, known map[string]scenario, o options, engineName string, stdout io.Writer) error {
	name := o.roundScenario
	fmt.Fprintf(stdout, "alternated, %d rounds (trivial handler, ceiling, %s; %s each):\n", o.rounds, name, o.duration)
	var vsTrivial, vsEngine, cpu []float64
	for i := range o.rounds {
		t, tb, ta, err := measure(fx, known["trivial"], o.clients, o)
		if err != nil {
			return err
		}
		engine, err := ceiling(ctx, o)
		if err != nil {
			return err
		}
		m, mb, ma, err := measure(fx, known[name], o.clients, o)
		if err != nil {
			return err
		}
		tcpu, _ := perRequest(t, tb, ta)
		mcpu, _ := perRequest(m, mb, ma)
		vsTrivial = append(vsTrivial, m.rate()/t.rate())
		cpu = append(cpu, float64(tcpu)/float64(max(mcpu, 1)))
		line := fmt.Sprintf("  round %d: trivial %.0f req/s (%s), %s %.0f req/s (%s): %.2f×, cpu/req %.2f×",
			i+1, t.rate(), tcpu, name, m.rate(), mcpu, vsTrivial[i], cpu[i])
		if engine > 0 {
			r := m.rate() / engine
			vsEngine = append(vsEngine, r)
			line += fmt.Sprintf("; %s %.0f/s: %.2f×", engineName, engine, r)
		}
		fmt.Fprintln(stdout, line)
		for f, k := range m.failures {
			fmt.Fprintf(stdout, "           %s failed %d×: %s\n", name, k, f)
		}
	}
	times := make([]float64, len(cpu)) // the scenario's cpu/req in the trivial handler's
	for i, c := range cpu {
		times[i] = 1 / c
	}
	fmt.Fprintf(stdout, "medians of %d rounds: %s ÷ trivial handler %.2f×, server cpu/req trivial ÷ %s %.2f× (a %s request costs %.1f× a trivial one)",
		o.rounds, name, median(vsTrivial), name, median(cpu), name, median(times))
	if len(vsEngine) > 0 {
		fmt.Fprintf(stdout, ", %s ÷ %s %.2f×", name, engineName, median(vsEngine))
	}
	fmt.Fprintln(stdout)
	return nil
}

// median returns the median of xs (the mean of the middle two when their
// number is even).
func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// cpuModel returns the processor's name (Linux), or "unknown processor".
func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown processor"
}

// samples collects the latency of each request answered as wanted and
// counts the others by reason; it is safe for concurrent use.
type samples struct {
	mu        sync.Mutex
	latencies []time.Duration
	failures  map[string]int
}

// add records a request that took d and got code or err.
func (s *samples) add(code, want int, err error, d time.Duration) {
	if err != nil || code != want {
		s.fail(fmt.Sprintf("status %d %v", code, err))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latencies = append(s.latencies, d)
}

// fail counts a failed request.
func (s *samples) fail(reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failures == nil {
		s.failures = map[string]int{}
	}
	s.failures[reason]++
}

// result returns the latencies, sorted, and the failures.
func (s *samples) result() ([]time.Duration, map[string]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	slices.Sort(s.latencies)
	return s.latencies, s.failures
}

// pct returns the p-quantile of sorted latencies, rounded to 10 µs.
func pct(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))].Round(10 * time.Microsecond)
}

// checkpoint lets Postgres write the preload's dirty buffers before the
// measurement, so that they do not land in it.
func checkpoint(ctx context.Context, o options, stdout io.Writer) {
	if o.store != "postgres" {
		return
	}
	if conn, err := pgx.Connect(ctx, o.dsn); err == nil {
		if _, err := conn.Exec(ctx, "CHECKPOINT"); err != nil {
			fmt.Fprintf(stdout, "  (CHECKPOINT before the run failed: %v)\n", err)
		}
		_ = conn.Close(ctx) // the checkpoint is done, or told as failed
	}
}

// open opens and migrates the store of o, and returns a function that
// closes it and removes what it was kept in.
func open(ctx context.Context, o options) (consent.Store, func() error, error) {
	switch o.store {
	case "memory":
		return memstore.New(), func() error { return nil }, nil
	case "sqlite":
		dir, err := os.MkdirTemp("", "consentload")
		if err != nil {
			return nil, nil, err
		}
		st, err := sqlitestore.Open(filepath.Join(dir, "consent.db"), sqlitestore.Config{GroupCommit: store.GroupCommit{Off: !o.groupCommit}})
		if err != nil {
			return nil, nil, errors.Join(err, os.RemoveAll(dir))
		}
		cleanup := func() error { return errors.Join(st.Close(), os.RemoveAll(dir)) }
		if err := st.Migrate(ctx); err != nil {
			return nil, nil, errors.Join(err, cleanup())
		}
		return st, cleanup, nil
	case "postgres":
		if o.dsn == "" {
			return nil, nil, errors.New("-store postgres needs -dsn")
		}
		// A schema of its own, dropped at the end, so that runs never
		// meet each other's rows.
		schema := fmt.Sprintf("consentload_%d_%d", os.Getpid(), time.Now().UnixNano()%1e6)
		admin := func(q string) error {
			conn, err := pgx.Connect(ctx, o.dsn)
			if err != nil {
				return err
			}
			_, err = conn.Exec(ctx, q)
			return errors.Join(err, conn.Close(ctx))
		}
		if err := admin("CREATE SCHEMA " + schema); err != nil {
			return nil, nil, err
		}
		u, err := url.Parse(o.dsn)
		if err != nil {
			return nil, nil, err
		}
		q := u.Query()
		q.Set("search_path", schema) // pgx passes it on as a run-time setting
		u.RawQuery = q.Encode()
		st, err := pgstore.Open(ctx, u.String(), pgstore.Config{GroupCommit: store.GroupCommit{Off: !o.groupCommit}})
		drop := func() error { return admin("DROP SCHEMA " + schema + " CASCADE") }
		if err != nil {
			return nil, nil, errors.Join(err, drop())
		}
		cleanup := func() error { return errors.Join(st.Close(), drop()) }
		if err := st.Migrate(ctx); err != nil {
			return nil, nil, errors.Join(err, cleanup())
		}
		return st, cleanup, nil
	}
	return nil, nil, fmt.Errorf("unknown -store %q", o.store)
}

// events returns a JSON array of rrweb-like input events of about n bytes.
func events(n int) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i := 0; b.Len() < n-120; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"type":3,"data":{"source":5,"text":%q,"isChecked":false,"id":%d},"timestamp":%d}`,
			strings.Repeat("x", 40), 10+i%50, 1795301391553+i*16)
	}
	b.WriteByte(']')
	return b.Bytes()
}

// preload stores n sessions with one chunk each, 1,000 to a transaction.
func preload(ctx context.Context, svc *consentkit.Service, n int, chunk []byte) error {
	for done := 0; done < n; {
		batch := min(1000, n-done)
		err := svc.Store().Update(ctx, func(tx consent.Tx) error {
			for range batch {
				ses, err := svc.StartSessionTx(ctx, tx, consentkit.SessionParams{CompanyID: "acme", PropertyID: "acme-web",
					UploadDigest: consent.DigestOf(consent.NewID("t")), CertificateID: consent.NewID("cert")})
				if err != nil {
					return err
				}
				if _, err := svc.AppendEventsTx(ctx, tx, ses.ID, chunk); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		done += batch
	}
	return nil
}

// rateText prints a rate of answers per second whole, or, under 100, with
// two decimals: a slow run's rate is small, never shown as none.
func rateText(r float64) string {
	if r >= 100 {
		return strconv.FormatFloat(r, 'f', 0, 64)
	}
	return strconv.FormatFloat(r, 'f', 2, 64)
}
