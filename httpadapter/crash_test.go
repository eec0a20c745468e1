package httpadapter_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/store/pgstore"
	"github.com/consentkit/consentkit/store/sqlitestore"
	"github.com/consentkit/consentkit/wallet"
)

// crashChildVar, set to "<kind> <dsn>", makes the test binary the child of
// TestKeyedRetryAfterCrash: a server over that store that, once the
// transaction of a keyed call has committed, says so and waits to be
// killed before it answers.
const crashChildVar = "CONSENTKIT_IDEMPOTENCY_CRASH_CHILD"

func TestMain(m *testing.M) {
	if v := os.Getenv(crashChildVar); v != "" {
		os.Exit(crashChild(v))
	}
	os.Exit(m.Run())
}

func openStore(kind, dsn string) (consent.Store, error) {
	if kind == "postgres" {
		return pgstore.Open(context.Background(), dsn)
	}
	return sqlitestore.Open(dsn, sqlitestore.Config{})
}

// stopAfterCommit holds every keyed call after its transaction commits.
type stopAfterCommit struct{ consent.Store }

func (s stopAfterCommit) Update(ctx context.Context, fn func(consent.Tx) error) error {
	err := s.Store.Update(ctx, fn)
	if err == nil && consentkit.IdempotencyFrom(ctx) != nil {
		fmt.Println("committed")
		time.Sleep(time.Minute) // killed long before
	}
	return err
}

func crashChild(v string) int {
	kind, dsn, _ := strings.Cut(v, " ")
	fail := func(err error) int { fmt.Println("error:", err); return 1 }
	st, err := openStore(kind, dsn)
	if err != nil {
		return fail(err)
	}
	svc, err := consentkit.NewService(stopAfterCommit{st}, consentkit.Config{Now: func() time.Time { return now }})
	if err != nil {
		return fail(err)
	}
	h, err := httpadapter.New(httpadapter.Config{Service: svc, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return fail(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail(err)
	}
	fmt.Println("listening", ln.Addr())
	return fail(http.Serve(ln, h))
}

// TestKeyedRetryAfterCrash: the server is killed (SIGKILL) after the
// transaction of a keyed match commits and before it answers; the client,
// whose connection breaks, sends the call again to a new server on the same
// database and gets the stored answer — charged once (D40, D31).
func TestKeyedRetryAfterCrash(t *testing.T) {
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			var dsn string
			if kind == "postgres" {
				dsn = teststore.PostgresURL(t)
			} else {
				dsn = filepath.Join(t.TempDir(), "consent.db")
			}
			st, err := openStore(kind, dsn)
			must(t, err)
			must(t, st.(interface{ Migrate(context.Context) error }).Migrate(ctx))
			setup(t, st)
			before, err := balanceOf(st, "acme")
			must(t, err)
			must(t, st.Close())

			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), crashChildVar+"="+kind+" "+dsn)
			out, err := cmd.StdoutPipe()
			must(t, err)
			must(t, cmd.Start())
			t.Cleanup(func() {
				_ = cmd.Process.Kill() // it may have exited already
				_ = cmd.Wait()         // killed: the status says only that
			})
			lines := bufio.NewReader(out)
			line, err := lines.ReadString('\n')
			addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
			if !ok {
				t.Fatalf("child said %q, %v", line, err)
			}

			body := matchBody("cert-1", "acme", consentText)
			send := func(url string) (*http.Response, error) {
				req, err := http.NewRequest(http.MethodPost, url+"/verify/match", strings.NewReader(body))
				if err != nil {
					return nil, err
				}
				req.Header.Set("Authorization", "Bearer "+acmeToken)
				req.Header.Set(httpadapter.IdempotencyHeader, "crash-1")
				return http.DefaultClient.Do(req)
			}
			answered := make(chan error, 1)
			go func() {
				resp, err := send("http://" + addr)
				if err == nil {
					_ = resp.Body.Close()
					err = fmt.Errorf("answered %s", resp.Status)
				}
				answered <- err
			}()
			said := make(chan string, 1)
			go func() {
				line, err := lines.ReadString('\n')
				said <- fmt.Sprint(strings.TrimSpace(line), err)
			}()
			select {
			case line := <-said:
				if line != "committed<nil>" {
					t.Fatalf("child said %q; want committed", line)
				}
			case err := <-answered:
				t.Fatalf("the first call ended before its commit was held: %v", err)
			}
			must(t, cmd.Process.Kill()) // SIGKILL: committed, never answered
			_ = cmd.Wait()              // killed: the status says only that
			if err := <-answered; err == nil || strings.HasPrefix(err.Error(), "answered") {
				t.Fatalf("the first call got an answer (%v); want a broken connection", err)
			}

			st, err = openStore(kind, dsn)
			must(t, err)
			teststore.CloseAtEnd(t, st)
			svc, err := consentkit.NewService(st, consentkit.Config{Now: func() time.Time { return now }})
			must(t, err)
			h, err := httpadapter.New(httpadapter.Config{Service: svc, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			must(t, err)
			srv := newLoopback(t, h)
			resp, err := send(srv)
			must(t, err)
			got, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != 200 || resp.Header.Get(httpadapter.ReplayedHeader) != "true" {
				t.Fatalf("retry: %s replayed=%q %s; want the stored answer", resp.Status, resp.Header.Get(httpadapter.ReplayedHeader), got)
			}
			checkBody(t, got, `{"valid":true,"consent_opt_in":"2026-11-20T10:00:05Z","origin":"https://acme.example/quote",
				"consent_types":["marketing","privacy","tcpa"],"verification_type":"first_party"}`)
			after, err := balanceOf(st, "acme")
			must(t, err)
			if want := before - wallet.DefaultPrices().ExactMatch; after != want {
				t.Errorf("balance %v; want %v (charged once)", after, want)
			}
		})
	}
}

func balanceOf(st consent.Store, company string) (wallet.Amount, error) {
	var b wallet.Amount
	err := st.View(ctx, func(tx consent.Tx) (err error) {
		b, err = tx.Balance(ctx, company)
		return err
	})
	return b, err
}

// newLoopback serves h on a loopback port for the test; it returns the
// base URL.
func newLoopback(t *testing.T, h http.Handler) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	serveOn(t, ln, h)
	return "http://" + ln.Addr().String()
}

// serveOn serves h on ln until the test ends, and fails the test when
// serving or closing the server fails.
func serveOn(t *testing.T, ln net.Listener, h http.Handler) {
	srv := &http.Server{Handler: h}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("close the server: %v", err)
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
	})
}
