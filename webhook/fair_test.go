package webhook_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/jobs"
	"github.com/consentkit/consentkit/webhook"
)

// tarpit is a webhook receiver that takes each request and never answers:
// the connection stays open until the sender gives up. It keeps when each
// request came and the most it held at once for one path.
type tarpit struct {
	ln      net.Listener
	mu      sync.Mutex
	came    []time.Time
	open    map[string]int // path → requests held now
	mostPer int            // the most held at once for one path
}

func newTarpit(t *testing.T) *tarpit {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tp := &tarpit{ln: ln, open: map[string]int{}}
	var (
		held   sync.WaitGroup
		mu     sync.Mutex
		conns  []net.Conn
		closed bool
	)
	// A connection the sender dialled for an attempt it then gave up may
	// wait in its idle pool with no request: close every one at the end.
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		closed = true
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		held.Wait()
	})
	held.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			if closed {
				_ = c.Close()
			}
			mu.Unlock()
			held.Go(func() { tp.hold(c) })
		}
	})
	return tp
}

// hold reads the request line and then nothing more, until the sender
// closes the connection.
func (tp *tarpit) hold(c net.Conn) {
	defer func() { _ = c.Close() }()
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil {
		return
	}
	path := strings.Fields(line + " x x")[1]
	tp.mu.Lock()
	tp.came = append(tp.came, time.Now())
	tp.open[path]++
	tp.mostPer = max(tp.mostPer, tp.open[path])
	tp.mu.Unlock()
	_, _ = r.WriteTo(discard{}) // until the sender hangs up
	tp.mu.Lock()
	tp.open[path]--
	tp.mu.Unlock()
}

// counts returns how many requests came before the time, and the most
// held at once for one path.
func (tp *tarpit) counts(before time.Time) (came, mostPer int) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	for _, at := range tp.came {
		if at.Before(before) {
			came++
		}
	}
	return came, tp.mostPer
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// One company's twenty silent endpoints hold every delivery worker, and
// a second company's message is delivered by the first worker to come
// free: within one attempt's timeout (D53).
func TestSilentEndpointsDelayNoOtherCompany(t *testing.T) {
	const (
		silent      = 20
		concurrency = 4
		timeout     = 2 * time.Second
	)
	teststore.Each(t, func(t *testing.T, open func(tb testing.TB) consent.Store) {
		st := open(t)
		svc, err := consentkit.NewService(st, consentkit.Config{WebhookAllowPrivate: true})
		if err != nil {
			t.Fatal(err)
		}
		h, err := webhook.Handler(webhook.Config{Service: svc, AllowPrivate: true, Timeout: timeout,
			Concurrency: concurrency, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		runner, err := jobs.New(jobs.Config{Store: st, Handlers: []jobs.Handler{h}, Poll: 20 * time.Millisecond, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		eps := webhook.Endpoints{Service: svc}
		tp, rc := newTarpit(t), newReceiver(t)
		for _, c := range []string{"acme", "beta"} {
			if _, err := svc.CreateCompany(ctx, consentkit.CompanyParams{ID: c, Name: c}); err != nil {
				t.Fatal(err)
			}
		}
		for i := range silent {
			url := fmt.Sprintf("http://%s/hook-%d", tp.ln.Addr(), i)
			if _, err := eps.Add(ctx, webhook.Params{CompanyID: "acme", URL: url, Secret: secret,
				Events: []string{consent.EventCertificateIssued}}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := eps.Add(ctx, webhook.Params{CompanyID: "beta", URL: rc.URL, Secret: secret,
			Events: []string{consent.EventCertificateIssued}}); err != nil {
			t.Fatal(err)
		}
		emit := func(company string) {
			t.Helper()
			err := svc.Store().Update(ctx, func(tx consent.Tx) error {
				return svc.EmitEvent(ctx, tx, company, consent.EventCertificateIssued, map[string]any{"certificate_id": "c"})
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		emit("acme")
		emit("acme") // a second message for every silent endpoint

		runCtx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); _ = runner.Run(runCtx) }()
		t.Cleanup(func() { stop(); <-done })

		// Wait until every worker is held by a silent endpoint.
		waitFor(t, "every worker held by acme", func() bool { n, _ := tp.counts(time.Now()); return n >= concurrency })
		emitted := time.Now()
		emit("beta")
		waitFor(t, "beta's delivery", func() bool { return len(rc.requests()) > 0 })
		delivered := rc.requests()[0].At
		took := delivered.Sub(emitted)
		taken, _ := tp.counts(delivered)
		t.Logf("beta delivered %v after it was emitted (attempt timeout %v); acme's endpoints took %d requests by then",
			took.Round(time.Millisecond), timeout, taken)
		// Without fairness beta's message waits behind acme's forty, ten
		// rounds of the timeout. With it, beta's message is among the first
		// two that workers coming free take (the first may be acme's, when
		// every worker is free at once): it comes before a third round.
		if taken > 2*concurrency {
			t.Errorf("acme's silent endpoints took %d requests before beta's was delivered; want at most %d",
				taken, 2*concurrency)
		}
		if took > timeout+time.Second {
			t.Errorf("beta's message was delivered %v after it was emitted; want within the attempt timeout %v and a second",
				took, timeout)
		}
	})
}

// waitFor polls cond until it holds, failing t after a patient while: only
// a fault, never a slow machine, takes that long.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(patient); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
	}
}

// An endpoint gets one delivery at a time, however many workers are free
// and however many of its messages are due (D53).
func TestOneDeliveryAtATimePerEndpoint(t *testing.T) {
	const timeout = 500 * time.Millisecond
	teststore.Each(t, func(t *testing.T, open func(tb testing.TB) consent.Store) {
		tp := newTarpit(t)
		e := newEnv(t, open(t), envOpts{webhook: webhook.Config{Timeout: timeout, Concurrency: 4}})
		e.endpoint(t, fmt.Sprintf("http://%s/hook", tp.ln.Addr()), consent.EventCertificateIssued)
		for i := range 3 {
			e.issue(t, fmt.Sprint("cert-", i))
		}
		e.clock.Add(time.Hour) // every message due
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); _ = e.runner.Run(runCtx) }()
		t.Cleanup(func() { stop(); <-done })
		waitFor(t, "three attempts", func() bool { n, _ := tp.counts(time.Now()); return n >= 3 })
		if _, most := tp.counts(time.Now()); most != 1 {
			t.Errorf("the endpoint held %d deliveries at once; want 1", most)
		}
	})
}
