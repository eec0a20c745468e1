// Command load drives the real consentkit handler over loopback and reports
// throughput, latency percentiles and the process's peak memory. The server
// and the load run in one process: the peak memory reported is both
// together. Scenarios:
//
// capture (the default): C recording sessions, each sending one chunk of
// rrweb events every interval, as the snippet does. -preload stores that
// many finished sessions (with a chunk each) first, so that the figures can
// be compared at different store sizes.
//
//	go run ./examples/load -store sqlite -sessions 200 -chunk-bytes 16384 -duration 30s -preload 1000
//
// purge: -expired certificates past their window are purged in batches of
// -batch while -clients verify live certificates; it reports the purge's
// rows per second and the verifications' latency without and during it.
//
//	go run ./examples/load -scenario purge -store sqlite -expired 1000000 -clients 8 -duration 10s
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/store/memstore"
	"github.com/consentkit/consentkit/store/pgstore"
	"github.com/consentkit/consentkit/store/sqlitestore"
)

type options struct {
	scenario   string
	store, dsn string
	expired    int
	clients    int
	batch      int
	sessions   int
	interval   time.Duration
	chunkBytes int
	duration   time.Duration
	preload    int
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
	fs.StringVar(&o.scenario, "scenario", "capture", "capture or purge")
	fs.IntVar(&o.expired, "expired", 100000, "purge: expired certificates to purge")
	fs.IntVar(&o.clients, "clients", 8, "purge: concurrent verification clients")
	fs.IntVar(&o.batch, "batch", 250, "purge: rows per purge transaction (the library's default is 250)")
	fs.StringVar(&o.store, "store", "sqlite", "memory, sqlite (a new file in a temporary directory) or postgres")
	fs.StringVar(&o.dsn, "dsn", "", "PostgreSQL URL, for -store postgres (its tables are created in the search_path)")
	fs.IntVar(&o.sessions, "sessions", 200, "concurrent recording sessions")
	fs.DurationVar(&o.interval, "interval", time.Second, "time between a session's chunks")
	fs.IntVar(&o.chunkBytes, "chunk-bytes", 16<<10, "size of a chunk of events")
	fs.DurationVar(&o.duration, "duration", 30*time.Second, "how long to send")
	fs.IntVar(&o.preload, "preload", 1000, "finished sessions stored before the run")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.sessions < 1 || o.chunkBytes < 64 || o.interval <= 0 || o.duration <= 0 || o.preload < 0 {
		return errors.New("-sessions, -chunk-bytes, -interval, -duration must be positive, -preload not negative")
	}
	if o.scenario != "capture" && o.scenario != "purge" {
		return fmt.Errorf("-scenario must be capture or purge, not %q", o.scenario)
	}
	if o.expired < 0 || o.clients < 1 || o.batch < 1 {
		return errors.New("-expired must not be negative, -clients and -batch must be positive")
	}
	st, cleanup, err := open(ctx, o)
	if err != nil {
		return err
	}
	defer cleanup()
	svc, err := consent.NewService(st, consent.Config{})
	if err != nil {
		return err
	}
	if _, err := svc.CreateCompany(ctx, consent.CompanyParams{ID: "acme", Name: "Acme"}); err != nil {
		return err
	}
	const origin = "https://forms.acme.example"
	if _, err := svc.AddProperty(ctx, consent.PropertyParams{ID: "acme-web", CompanyID: "acme", Name: "Form", AllowedOrigins: []string{origin}}); err != nil {
		return err
	}
	if o.scenario == "purge" {
		return purgeScenario(ctx, o, svc, stdout)
	}
	chunk := events(o.chunkBytes)
	start := time.Now()
	if err := preload(ctx, svc, o.preload, chunk); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "store %s: %d sessions preloaded in %s\n", o.store, o.preload, time.Since(start).Round(time.Millisecond))
	checkpoint(ctx, o, stdout)

	h, err := httpadapter.New(httpadapter.Config{Service: svc, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		CaptureStartsPerMinute: -1, CapturePropertyPerMinute: -1, CapturePerMinute: -1})
	if err != nil {
		return err
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: o.sessions, MaxConnsPerHost: o.sessions}}

	var (
		got samples
		wg  sync.WaitGroup
	)
	deadline := time.Now().Add(o.duration)
	for i := range o.sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Spread the sessions' chunks over the interval.
			time.Sleep(time.Duration(i) * o.interval / time.Duration(o.sessions))
			s, err := startSession(client, srv.URL, origin)
			if err != nil {
				got.fail(err.Error())
				return
			}
			body := []byte(`{"seq":0,"events":` + string(chunk) + `}`)
			for seq, next := 0, time.Now(); next.Before(deadline); seq, next = seq+1, next.Add(o.interval) {
				time.Sleep(time.Until(next))
				body = append(append(body[:0], `{"seq":`+strconv.Itoa(seq)+`,"events":`...), chunk...)
				body = append(body, '}')
				t0 := time.Now()
				code, err := post(client, srv.URL+"/capture/sessions/"+s.SessionID+"/events", origin, s.UploadToken, body)
				got.add(code, 200, err, time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := o.duration
	latencies, failures := got.result()
	fmt.Fprintf(stdout, "capture chunks of %d bytes, %d sessions, one chunk per %s each, for %s:\n", o.chunkBytes, o.sessions, o.interval, elapsed)
	fmt.Fprintf(stdout, "  %d chunks stored, %.0f chunks/s; latency p50 %s, p99 %s, p99.9 %s, max %s\n",
		len(latencies), float64(len(latencies))/elapsed.Seconds(), pct(latencies, 0.50),
		pct(latencies, 0.99), pct(latencies, 0.999), pct(latencies, 1))
	for f, n := range failures {
		fmt.Fprintf(stdout, "  failed %d×: %s\n", n, f)
	}
	fmt.Fprintf(stdout, "  peak resident memory of the process (server and load): %s\n", peakRSS())
	return nil
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
		conn.Close(ctx)
	}
}

func open(ctx context.Context, o options) (consent.Store, func(), error) {
	switch o.store {
	case "memory":
		return memstore.New(), func() {}, nil
	case "sqlite":
		dir, err := os.MkdirTemp("", "consentload")
		if err != nil {
			return nil, nil, err
		}
		st, err := sqlitestore.Open(filepath.Join(dir, "consent.db"), sqlitestore.Config{})
		if err != nil {
			return nil, nil, err
		}
		return st, func() { st.Close(); os.RemoveAll(dir) }, st.Migrate(ctx)
	case "postgres":
		if o.dsn == "" {
			return nil, nil, errors.New("-store postgres needs -dsn")
		}
		st, err := pgstore.Open(ctx, o.dsn)
		if err != nil {
			return nil, nil, err
		}
		return st, func() { st.Close() }, st.Migrate(ctx)
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
func preload(ctx context.Context, svc *consent.Service, n int, chunk []byte) error {
	for done := 0; done < n; {
		batch := min(1000, n-done)
		err := svc.Store().Update(ctx, func(tx consent.Tx) error {
			for range batch {
				ses, err := svc.StartSessionTx(ctx, tx, consent.SessionParams{CompanyID: "acme", PropertyID: "acme-web",
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

type session struct {
	SessionID   string `json:"session_id"`
	UploadToken string `json:"upload_token"`
}

func startSession(c *http.Client, base, origin string) (*session, error) {
	req, _ := http.NewRequest("POST", base+"/capture/sessions",
		strings.NewReader(`{"property_id":"acme-web","url":"`+origin+`/quote"}`))
	req.Header.Set("Origin", origin)
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 201 {
		return nil, fmt.Errorf("start: status %d", resp.StatusCode)
	}
	var s session
	return &s, json.NewDecoder(resp.Body).Decode(&s)
}

func post(c *http.Client, url, origin, token string, body []byte) (int, error) {
	req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
	req.Header.Set("Origin", origin)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// peakRSS reads the process's peak resident set size (Linux).
func peakRSS() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}
