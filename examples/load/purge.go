package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/retain"
	"github.com/consentkit/consentkit/wallet"
)

// purge opens the store and runs purgeScenario in this process.
func purge(ctx context.Context, o options, stdout io.Writer) (err error) {
	st, cleanup, err := open(ctx, o)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := cleanup(); err == nil {
			err = cerr
		}
	}()
	svc, err := consentkit.NewService(st, consentkit.Config{})
	if err != nil {
		return err
	}
	if _, err := svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme"}); err != nil {
		return err
	}
	if _, err := svc.AddProperty(ctx, consentkit.PropertyParams{ID: "acme-web", CompanyID: "acme", Name: "Form", AllowedOrigins: []string{loadOrigin}}); err != nil {
		return err
	}
	return purgeScenario(ctx, o, svc, stdout)
}

// purgeScenario measures the purge (D43): -expired certificates past their
// window (one expired session per 100 of them) are purged while -clients
// keep verifying live certificates over loopback with /verify/match. It
// reports the purge's rows per second, and the verifications' latency
// before the purge and while it runs.
func purgeScenario(ctx context.Context, o options, svc *consentkit.Service, stdout io.Writer) error {
	live := make([]string, 1000)
	start := time.Now()
	past := svc.Now().Add(-consentkit.DefaultRetention - 24*time.Hour)
	if err := certificates(ctx, svc, o.expired, past, nil); err != nil {
		return err
	}
	if err := certificates(ctx, svc, len(live), time.Time{}, live); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "store %s: %d expired and %d live certificates preloaded in %s\n", o.store, o.expired, len(live),
		time.Since(start).Round(time.Millisecond))
	checkpoint(ctx, o, stdout)
	if _, err := svc.TopUp(ctx, "acme", 1_000_000*wallet.Dollar, "load"); err != nil {
		return err
	}
	_, secret, err := svc.IssueToken(ctx, consentkit.TokenParams{CompanyID: "acme"})
	if err != nil {
		return err
	}
	h, err := httpadapter.New(httpadapter.Config{Service: svc, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return err
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: o.clients, MaxConnsPerHost: o.clients}}

	// verify runs the clients until stop closes and returns the latencies.
	verify := func(stop <-chan struct{}) ([]time.Duration, map[string]int) {
		var (
			got samples
			wg  sync.WaitGroup
		)
		for c := range o.clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := c; ; i += o.clients {
					select {
					case <-stop:
						return
					default:
					}
					body := `{"certificate_id":"` + live[i%len(live)] + `","company_id":"acme","consent":"` + consentText + `"}`
					req, _ := http.NewRequest("POST", srv.URL+"/verify/match", strings.NewReader(body))
					req.Header.Set("Authorization", "Bearer "+secret)
					req.Header.Set("Content-Type", "application/json")
					t0 := time.Now()
					resp, err := client.Do(req)
					d := time.Since(t0)
					code := 0
					if err == nil {
						code = resp.StatusCode
						// Drained for the connection's next request; the
						// status is what is counted.
						_, _ = io.Copy(io.Discard, resp.Body)
						_ = resp.Body.Close()
					}
					got.add(code, 200, err, d)
				}
			}()
		}
		<-stop
		wg.Wait()
		return got.result()
	}
	report := func(what string, lat []time.Duration, took time.Duration, failures map[string]int) time.Duration {
		fmt.Fprintf(stdout, "  %s: %d matches, %.0f/s; latency p50 %s, p99 %s, p99.9 %s, max %s\n", what, len(lat),
			float64(len(lat))/took.Seconds(), pct(lat, 0.50), pct(lat, 0.99), pct(lat, 0.999), pct(lat, 1))
		for f, n := range failures {
			fmt.Fprintf(stdout, "    failed %d×: %s\n", n, f)
		}
		return pct(lat, 0.99)
	}

	fmt.Fprintf(stdout, "verification by %d clients, then the purge in batches of %d while they go on:\n", o.clients, o.batch)
	stop := make(chan struct{})
	time.AfterFunc(o.duration, func() { close(stop) })
	lat, failures := verify(stop)
	base := report("without the purge", lat, o.duration, failures)

	purger, err := retain.NewPurger(retain.PurgeConfig{Service: svc, Videos: retain.Dir{Root: "unused"}, Batch: o.batch,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return err
	}
	stop = make(chan struct{})
	type outcome struct {
		n    retain.Purged
		took time.Duration
		err  error
	}
	done := make(chan outcome, 1)
	t0 := time.Now()
	go func() {
		n, err := purger.Purge(ctx)
		done <- outcome{n, time.Since(t0), err}
		close(stop)
	}()
	lat, failures = verify(stop)
	res := <-done
	if res.err != nil {
		return res.err
	}
	during := report("during the purge", lat, res.took, failures)
	rows := res.n.Certificates + res.n.Sessions
	fmt.Fprintf(stdout, "  purge: %d certificates and %d sessions in %s, %.0f rows/s\n", res.n.Certificates, res.n.Sessions,
		res.took.Round(time.Millisecond), float64(rows)/res.took.Seconds())
	fmt.Fprintf(stdout, "  p99 during the purge / p99 without: %.2f×\n", float64(during)/float64(base))
	fmt.Fprintf(stdout, "  peak resident memory of the process (server and load): %d MiB\n", peakRSSKB()>>10)
	return nil
}

// certificates issues n certificates created at created (zero: now), one
// session per 100, 1,000 to a transaction; the first len(ids) of them have their
// ids written to ids.
func certificates(ctx context.Context, svc *consentkit.Service, n int, created time.Time, ids []string) error {
	var ses *consent.Session
	for done := 0; done < n; {
		batch := min(1000, n-done)
		err := svc.Store().Update(ctx, func(tx consent.Tx) error {
			for i := range batch {
				if (done+i)%100 == 0 {
					var err error
					ses, err = svc.StartSessionTx(ctx, tx, consentkit.SessionParams{CompanyID: "acme", PropertyID: "acme-web", CreatedAt: created})
					if err != nil {
						return err
					}
				}
				c, err := svc.IssueCertificateTx(ctx, tx, consentkit.CertificateParams{CompanyID: "acme", PropertyID: "acme-web",
					SessionID: ses.ID, Origin: loadOrigin + "/quote", Email: fmt.Sprintf("lead%d@example.com", done+i),
					Records: []consent.Record{{Text: consentText, Types: []string{"tcpa"}}}, CreatedAt: created})
				if err != nil {
					return err
				}
				if done+i < len(ids) {
					ids[done+i] = c.ID
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
