package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/signed"
	"github.com/consentkit/consentkit/wallet"
)

// childEnv marks the process that load starts as its server: the same
// binary, with the same flags, serving instead of loading, so that the
// server's memory and allocations are its own.
const childEnv = "CONSENTKIT_LOAD_SERVER"

// fixture is what the server tells the load about the data it made.
type fixture struct {
	Addr           string   `json:"addr"`
	Token          string   `json:"token"`           // a token of acme with every permission
	Certs          []string `json:"certs"`           // ids of up to 1,000 certificates to verify
	CertCount      int      `json:"cert_count"`      // certificates with emails lead0…lead<n-1>@example.com
	RetainSessions int      `json:"retain_sessions"` // sessions rs-0…rs-<n-1>, none retained
	Took           string   `json:"took"`            // how long the preload took

	// retained counts the sessions handed out to retain and batch retain,
	// each once (the load's own count, not the server's).
	retained atomic.Int64
}

// stats is what the server reports of itself at /_load/stats.
type stats struct {
	CPU          time.Duration `json:"cpu"` // user and system time of the process
	Mallocs      uint64        `json:"mallocs"`
	PeakRSSKB    int64         `json:"peak_rss_kb"`
	GroupBatches int64         `json:"group_batches"`
	GroupCalls   int64         `json:"group_calls"`
}

const (
	loadOrigin  = "https://forms.acme.example"
	consentText = "I agree to be contacted by Acme."
)

// serve is the server process: it opens the store, preloads what the
// scenarios need, serves the handler on a loopback port beside a trivial
// handler (the ceiling of net/http itself) and its own statistics, prints
// the fixture as one JSON line, and exits when its standard input closes
// (the load has finished or died).
func serve(ctx context.Context, o options, stdout io.Writer) (err error) {
	st, cleanup, err := open(ctx, o)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := cleanup(); err == nil {
			err = cerr
		}
	}()
	cfg := consentkit.Config{}
	if o.sign {
		key, err := signed.NewSigningKey("load")
		if err != nil {
			return err
		}
		cfg.SigningKeys = []signed.SigningKey{key}
	}
	if !o.sigCache {
		cfg.SignatureCacheSize = -1
	}
	svc, err := consentkit.NewService(st, cfg)
	if err != nil {
		return err
	}
	start := time.Now()
	if _, err := svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme"}); err != nil {
		return err
	}
	if _, err := svc.AddProperty(ctx, consentkit.PropertyParams{ID: "acme-web", CompanyID: "acme", Name: "Form", AllowedOrigins: []string{loadOrigin}}); err != nil {
		return err
	}
	if _, err := svc.TopUp(ctx, "acme", 100_000_000*wallet.Dollar, "load"); err != nil {
		return err
	}
	_, secret, err := svc.IssueToken(ctx, consentkit.TokenParams{CompanyID: "acme",
		Permissions: []consent.Permission{consent.PermissionRetention}})
	if err != nil {
		return err
	}
	fx := fixture{Token: secret, CertCount: o.certs, Certs: make([]string, min(o.certs, 1000))}
	if err := certificates(ctx, svc, o.certs, svc.Now(), fx.Certs); err != nil {
		return err
	}
	if o.needs("retain", "batch") {
		fx.RetainSessions = o.retainSessions
		if err := retainSessions(ctx, svc, o.retainSessions); err != nil {
			return err
		}
	}
	if o.needs("capture") && o.preload > 0 {
		if err := preload(ctx, svc, o.preload, events(o.chunkBytes)); err != nil {
			return err
		}
	}
	fx.Took = time.Since(start).Round(time.Millisecond).String()
	checkpoint(ctx, o, io.Discard)

	h, err := httpadapter.New(httpadapter.Config{Service: svc, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		OptOutPerMinute: -1, RetainPerMinute: -1, VerifyPerMinute: -1,
		CaptureStartsPerMinute: -1, CapturePropertyPerMinute: -1, CapturePerMinute: -1,
		CaptureBytesPerMinute: -1, CapturePropertyBytesPerMinute: -1, OptOutIdleRecordsPerMinute: -1})
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/", h)
	if o.needs("hostile") {
		// The same service with the rate limits and byte budgets at their
		// defaults, behind the loopback as a trusted proxy: a client's
		// address is its X-Forwarded-For (hostile.go).
		d, err := httpadapter.New(httpadapter.Config{Service: svc, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			TrustedProxies: httpadapter.TrustedProxies{Networks: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}})
		if err != nil {
			return err
		}
		mux.Handle(defendedPrefix+"/", http.StripPrefix(defendedPrefix, d))
	}
	// Its failures are the client's, which counts them.
	mux.HandleFunc("POST /_load/trivial", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"valid":true}`))
	})
	mux.HandleFunc("GET /_load/stats", func(w http.ResponseWriter, r *http.Request) {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		s := stats{CPU: cpuTime(), Mallocs: m.Mallocs, PeakRSSKB: peakRSSKB()}
		if g, ok := st.(interface{ GroupStats() (int64, int64) }); ok {
			s.GroupBatches, s.GroupCalls = g.GroupStats()
		}
		_ = json.NewEncoder(w).Encode(s) // a short answer fails the load's Decode
	})
	// The peak resident memory is measured from here, per scenario: the
	// load resets it before each one.
	mux.HandleFunc("POST /_load/reset-peak", func(w http.ResponseWriter, r *http.Request) {
		if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fx.Addr = ln.Addr().String()
	srv := &http.Server{Handler: mux}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	if err := json.NewEncoder(stdout).Encode(&fx); err != nil {
		return err
	}
	if o.cpuProfile != "" {
		f, ferr := os.Create(o.cpuProfile)
		if ferr != nil {
			return ferr
		}
		defer closeFile(f, &err) // serve's err
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	// Until the load closes it, or dies: the end either way.
	_, _ = io.Copy(io.Discard, os.Stdin)
	if o.memProfile != "" {
		f, ferr := os.Create(o.memProfile)
		if ferr != nil {
			return ferr
		}
		defer closeFile(f, &err) // serve's err
		if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
			return err
		}
	}
	if err := srv.Close(); err != nil {
		return err
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// closeFile closes f, a file written, and sets *err to Close's error when
// *err is nil: a write the file system took late can fail there.
func closeFile(f *os.File, err *error) {
	if cerr := f.Close(); *err == nil {
		*err = cerr
	}
}

// retainSessions starts n sessions, rs-0 … rs-<n-1>, for the Retain API to
// retain, 1,000 to a transaction.
func retainSessions(ctx context.Context, svc *consentkit.Service, n int) error {
	for done := 0; done < n; {
		batch := min(1000, n-done)
		err := svc.Store().Update(ctx, func(tx consent.Tx) error {
			for i := range batch {
				if _, err := svc.StartSessionTx(ctx, tx, consentkit.SessionParams{ID: "rs-" + strconv.Itoa(done+i),
					CompanyID: "acme", PropertyID: "acme-web"}); err != nil {
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

// cpuTime returns the processor time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// peakRSSKB reads the process's peak resident set size (Linux), in KiB.
func peakRSSKB() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer func() { _ = f.Close() }() // read only: its Close loses nothing
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb
		}
	}
	return 0
}

// startServer starts this program again as the server, with the same
// flags, and returns the fixture it made and a function that stops it.
func startServer(ctx context.Context, args []string) (*fixture, func() error, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	cmd := execCommand(ctx, exe, args...)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	// The server exits when its standard input closes; Wait tells how.
	stop := func() error {
		_ = stdin.Close() // fails only when closed already
		return cmd.Wait()
	}
	var fx fixture
	if err := json.NewDecoder(out).Decode(&fx); err != nil {
		return nil, nil, fmt.Errorf("the server did not start: %w", errors.Join(err, stop()))
	}
	return &fx, stop, nil
}
