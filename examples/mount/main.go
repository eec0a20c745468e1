// Command mount shows consentkit inside a host application: the handler is
// mounted under /consent/ on the host's own ServeMux, next to the host's
// routes, behind the host's middleware.
//
//	go run ./examples/mount [-addr 127.0.0.1:8081]
//
// It keeps everything in memory and prints a token to try it with.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/store/memstore"
	"github.com/consentkit/consentkit/wallet"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run serves until ctx ends; it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mount", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8081", "`address` to listen on (host:port; port 0 picks a free one)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	h, secret, err := newApp(ctx, log)
	if err != nil {
		log.Error("start", "err", err)
		return 1
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Error("listen", "err", err)
		return 1
	}
	base := "http://" + ln.Addr().String()
	fmt.Fprintf(stdout, "listening on %s\n\n  curl -s -X POST %s/consent/verify/match -H 'Authorization: Bearer %s' \\\n    -d '{\"certificate_id\":\"cert-1\",\"company_id\":\"acme\",\"consent\":\"I agree to be contacted.\"}'\n\n", base, base, secret)
	// The same timeouts as examples/server: a slow body cannot hold a
	// connection for long, even on the unauthenticated opt-out.
	srv := httpadapter.NewServer(h, log)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		log.Error("serve", "err", err)
		return 1
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		log.Error("shutdown", "err", err)
		return 1
	}
	return 0
}

// newApp builds the host application: its own routes, consentkit under
// /consent/, and the host's middleware around all of it. It returns the
// handler and a demo token.
func newApp(ctx context.Context, log *slog.Logger) (http.Handler, string, error) {
	svc, err := consentkit.NewService(memstore.New(), consentkit.Config{})
	if err != nil {
		return nil, "", err
	}
	secret, err := demo(ctx, svc)
	if err != nil {
		return nil, "", err
	}
	api, err := httpadapter.New(httpadapter.Config{Service: svc, Logger: log})
	if err != nil {
		return nil, "", err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "the host application's home page\n")
	})
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.Handle("/consent/", http.StripPrefix("/consent", api))
	return requestID(logged(log, mux)), secret, nil
}

// logged is the host's logging middleware.
func logged(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		next.ServeHTTP(w, r)
		log.Info("request", "method", r.Method, "path", r.URL.Path, "id", w.Header().Get(httpadapter.RequestIDHeader),
			"duration", time.Since(start).Round(time.Microsecond))
	})
}

// requestID is another piece of host middleware: it gives every request an
// id, the client's own or a new one, and tags the response with it.
// consentkit's handler takes the id from the request's X-Request-Id header
// (httpadapter.RequestIDHeader), records it in its audit entries, and sets
// it on its answers; a request without one, or with one that is not an
// identifier of at most 64 characters of [A-Za-z0-9._:-], gets an id of
// consentkit's making instead. So the host puts its id in the request's
// header, not only in the response's: then consentkit's routes answer with
// the host's id, as the host's own routes do.
func requestID(next http.Handler) http.Handler {
	var n atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(httpadapter.RequestIDHeader)
		if id == "" {
			id = fmt.Sprint("req-", n.Add(1))
			r.Header.Set(httpadapter.RequestIDHeader, id)
		}
		w.Header().Set(httpadapter.RequestIDHeader, id)
		next.ServeHTTP(w, r)
	})
}

// demo creates company acme with a certificate to verify and returns a
// token of it.
func demo(ctx context.Context, svc *consentkit.Service) (string, error) {
	steps := []func() error{
		func() error {
			_, err := svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme"})
			return err
		},
		func() error {
			_, err := svc.AddProperty(ctx, consentkit.PropertyParams{ID: "acme-web", CompanyID: "acme", Name: "Form"})
			return err
		},
		func() error { _, err := svc.TopUp(ctx, "acme", 5*wallet.Dollar, "demo"); return err },
		func() error {
			_, err := svc.StartSession(ctx, consentkit.SessionParams{ID: "s1", CompanyID: "acme", PropertyID: "acme-web"})
			return err
		},
		func() error {
			_, err := svc.IssueCertificate(ctx, consentkit.CertificateParams{ID: "cert-1", CompanyID: "acme",
				PropertyID: "acme-web", SessionID: "s1", Records: []consent.Record{{Text: "I agree to be contacted."}}})
			return err
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return "", err
		}
	}
	_, secret, err := svc.IssueToken(ctx, consentkit.TokenParams{CompanyID: "acme"})
	return secret, err
}
