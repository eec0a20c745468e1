package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"

	_ "github.com/mattn/go-sqlite3" // the "sqlite3" driver of the schema check, as sqlitestore uses it

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/store/pgstore"
	"github.com/consentkit/consentkit/store/sqlitestore"
)

// call is one command's run, and its connection to the operator API
// through either backend: an HTTP client of a server's, or the same
// handler served in this process over the store of a DSN. Only the
// transport differs, so the answers are the same bytes.
type call struct {
	*cli
	cmd     *command
	opts    common
	company string
	json    bool
	args    []string // positional

	client *http.Client // nil until connected
	base   string       // the operator API's root, without /operator
	secret string
	close  func() error // releases the backend; nil: nothing to release
	// allowPrivate lets the direct backend's service take webhook
	// endpoints of private addresses (webhooks add -webhook-allow-private).
	allowPrivate bool
}

// backend chooses the backend from the flags and the environment: a flag
// wins over either variable; -url and -dsn together are a usage error, as
// are both variables when no flag chooses.
func (k *call) backend() (u, dsn string, err error) {
	u, dsn = k.opts.url, k.opts.dsn
	switch {
	case u != "" && dsn != "":
		return "", "", usagef("-url and -dsn name two backends; give one")
	case u == "" && dsn == "":
		u, dsn = k.getenv(URLEnv), k.getenv(DSNEnv)
		if u != "" && dsn != "" {
			return "", "", usagef("$%s and $%s are both set: choose with -url or -dsn", URLEnv, DSNEnv)
		}
	}
	if u == "" && dsn == "" {
		return "", "", usagef("say where: -url (or $%s) for a server's operator API, or -dsn (or $%s) for its database", URLEnv, DSNEnv)
	}
	if keywordDSN(dsn) {
		// Never echoed (it may hold a password), nor taken for a file name.
		return "", "", usagef("-dsn: a PostgreSQL database is named by a postgres:// URL; keyword=value connection strings are not read")
	}
	return u, dsn, nil
}

// keywordDSN reports whether dsn is a libpq keyword=value connection
// string (host=… dbname=… password=…), which would otherwise be taken
// for the name of a SQLite file.
func keywordDSN(dsn string) bool {
	for _, f := range strings.Fields(dsn) {
		k, _, ok := strings.Cut(f, "=")
		if ok && slices.Contains([]string{"host", "hostaddr", "port", "dbname", "user", "password", "sslmode", "service"}, k) {
			return true
		}
	}
	return false
}

// database returns the DSN of a command that works on a database only.
func (k *call) database() (string, error) {
	u, dsn, err := k.backend()
	if err == nil && u != "" {
		err = usagef("%s works on a database: give -dsn (or $%s)", k.cmd.title(), DSNEnv)
	}
	return dsn, err
}

// connect sets up the backend, once.
func (k *call) connect(ctx context.Context) error {
	if k.client != nil {
		return nil
	}
	u, dsn, err := k.backend()
	if err != nil {
		return err
	}
	if u != "" {
		if k.allowPrivate {
			return usagef("-webhook-allow-private works with -dsn: through -url the server's own setting rules")
		}
		return k.remote(u, k.opts.secretFile)
	}
	return k.direct(ctx, dsn)
}

// remote sets k up as a client of the operator API at base.
func (k *call) remote(base, secretFile string) error {
	pu, err := url.Parse(base)
	if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" || pu.RawQuery != "" || pu.Fragment != "" {
		return usagef("-url %q must be a server's base URL such as https://consent.example or http://127.0.0.1:8080", base)
	}
	if pu.User != nil {
		return usagef("-url holds a user or password: the operator secret goes in $%s or -secret-file", SecretEnv)
	}
	if pu.Scheme == "http" && !loopback(pu.Hostname()) {
		fmt.Fprintf(k.stderr, "consentkit: warning: the operator secret is sent to %s without TLS\n", pu.Host)
	}
	k.secret = k.getenv(SecretEnv)
	if secretFile != "" {
		b, err := os.ReadFile(secretFile)
		if err != nil {
			return usagef("-secret-file: %v", err)
		}
		k.secret = strings.TrimSpace(string(b))
	}
	if k.secret == "" {
		return usagef("the operator secret is missing: set $%s or give -secret-file", SecretEnv)
	}
	k.base = strings.TrimRight(pu.String(), "/")
	k.client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error {
		// A redirect could carry the secret to another host; the
		// operator API never redirects.
		return http.ErrUseLastResponse
	}}
	return nil
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// direct sets k up as a client of the operator API's handler served in
// this process over the store of dsn, with a secret made for this run.
func (k *call) direct(ctx context.Context, dsn string) error {
	st, closeStore, err := k.openStore(ctx, dsn)
	if err != nil {
		return err
	}
	svc, err := consentkit.NewService(st, consentkit.Config{Now: k.now, WebhookAllowPrivate: k.allowPrivate})
	if err == nil {
		var secret [32]byte
		rand.Read(secret[:]) // never fails (crypto/rand, Go 1.24+)
		k.secret = hex.EncodeToString(secret[:])
		var h *httpadapter.Handler
		// The handler logs only what it cannot answer in its reply: an
		// internal error's cause, which the operator of the database
		// may see.
		log := slog.New(slog.NewTextHandler(k.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		h, err = httpadapter.New(httpadapter.Config{Service: svc, OperatorSecret: k.secret, Logger: log})
		if err == nil {
			k.client = &http.Client{Transport: inProcess{h.Operator()}}
			k.base = "http://consentkit.direct"
		}
	}
	if err != nil {
		_ = closeStore() // err says why the command cannot run
		return err
	}
	k.close = closeStore
	return nil
}

// inProcess is a RoundTripper that serves requests with a handler in this
// process, as a server would: no network, no listener.
type inProcess struct{ h http.Handler }

func (t inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	r.RequestURI = req.URL.RequestURI()
	r.RemoteAddr = "127.0.0.1:0"
	if r.Body == nil {
		r.Body = http.NoBody
	}
	w := &recorder{header: http.Header{}}
	t.h.ServeHTTP(w, r)
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return &http.Response{
		Status: fmt.Sprintf("%d %s", w.status, http.StatusText(w.status)), StatusCode: w.status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: w.header,
		Body: io.NopCloser(&w.body), ContentLength: int64(w.body.Len()), Request: req,
	}, nil
}

// recorder is the ResponseWriter of inProcess.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *recorder) Header() http.Header { return w.header }

func (w *recorder) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *recorder) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(b)
}

// apiError is the operator API's refusal: its status and message.
type apiError struct {
	status  int
	message string
}

func (e *apiError) Error() string { return fmt.Sprintf("%s (HTTP %d)", e.message, e.status) }

// answer is a successful answer of the operator API.
type answer struct {
	header http.Header
	body   []byte
}

// do sends one request to the operator API: path is under /operator,
// body (when not nil) is sent as JSON. A 2xx answer is returned; any other
// is an *apiError.
func (k *call) do(ctx context.Context, method, path string, query url.Values, body any, header http.Header) (*answer, error) {
	if err := k.connect(ctx); err != nil {
		return nil, err
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	u := k.base + "/operator" + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	if k.opts.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, k.opts.timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, err
	}
	for name, vs := range header {
		req.Header[name] = vs
	}
	req.Header.Set("Authorization", "Bearer "+k.secret)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("User-Agent", "consentkit-cli")
	resp, err := k.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is known to the user; the error is what matters
		}
		return nil, fmt.Errorf("%s %s: %w", method, k.base+"/operator"+path, err)
	}
	defer func() { _ = resp.Body.Close() }() // read to the end, or err says why not
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("%s %s: reading the answer: %w", method, k.base+"/operator"+path, err)
	}
	if resp.StatusCode/100 != 2 {
		var eb httpadapter.ErrorBody
		if json.Unmarshal(b, &eb) != nil || eb.Error == "" {
			eb.Error = strings.TrimSpace(http.StatusText(resp.StatusCode) + ": not an answer of the operator API; is -url the server's base URL?")
		}
		return nil, &apiError{status: resp.StatusCode, message: eb.Error}
	}
	if !json.Valid(b) {
		return nil, fmt.Errorf("%s %s: the answer is not JSON; is -url the server's base URL?", method, k.base+"/operator"+path)
	}
	return &answer{header: resp.Header, body: b}, nil
}

// companyPath is the path of the call's company, with more appended.
func (k *call) companyPath(more ...string) string {
	p := "/companies/" + url.PathEscape(k.company)
	for _, m := range more {
		p += "/" + url.PathEscape(m)
	}
	return p
}

// isPostgres reports whether dsn names a PostgreSQL database rather than a
// SQLite file.
func isPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// redact returns dsn without a password, for messages: neither the one
// of its user information nor one given as a query parameter (password,
// sslpassword), which pgx and libpq read as well.
func redact(dsn string) string {
	if !isPostgres(dsn) {
		return dsn
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return "the PostgreSQL URL"
	}
	if q, err := url.ParseQuery(u.RawQuery); err != nil {
		u.RawQuery = "…" // not read as the driver reads it: shown as nothing
	} else {
		hidden := false
		for k := range q {
			if strings.EqualFold(k, "password") || strings.EqualFold(k, "sslpassword") {
				q.Set(k, "xxxxx")
				hidden = true
			}
		}
		if hidden {
			u.RawQuery = q.Encode()
		}
	}
	return u.Redacted()
}

// errNoSchema refuses a database that consentkit has not migrated: the
// command never changes a schema unless told to.
func errNoSchema(dsn string) error {
	return fmt.Errorf("%s holds no consentkit schema; run consentkit migrate -dsn … to create it (never done implicitly)", redact(dsn))
}

// openStore opens the store of dsn for the direct backend: a PostgreSQL
// database (postgres:// or postgresql://) or a SQLite file, which must
// exist and have been migrated.
func openStore(ctx context.Context, dsn string) (consent.Store, func() error, error) {
	if isPostgres(dsn) {
		st, err := pgstore.Open(ctx, dsn)
		if err != nil {
			return nil, nil, fmt.Errorf("open %s: %w", redact(dsn), err)
		}
		var migrated bool
		// The search_path decides the schema, as it does for the store.
		err = st.Pool().QueryRow(ctx, `SELECT to_regclass('schema_migrations') IS NOT NULL`).Scan(&migrated)
		if err == nil && !migrated {
			err = errNoSchema(dsn)
		}
		if err == nil {
			err = upToDate(ctx, dsn, st)
		}
		if err != nil {
			_ = st.Close() // err says why the store is not usable
			return nil, nil, err
		}
		return st, st.Close, nil
	}
	if err := sqliteMigrated(ctx, dsn); err != nil {
		return nil, nil, err
	}
	st, err := sqlitestore.Open(dsn, sqlitestore.Config{})
	if err != nil {
		return nil, nil, err
	}
	if err := upToDate(ctx, dsn, st); err != nil {
		_ = st.Close() // err says why the store is not usable
		return nil, nil, err
	}
	return st, st.Close, nil
}

// upToDate refuses a database whose schema lacks migrations this command
// was built with: it would fail on a missing column or table, half way
// through a command, with the database's own words.
func upToDate(ctx context.Context, dsn string, st interface {
	Pending(context.Context) ([]string, error)
}) error {
	pending, err := st.Pending(ctx)
	if err != nil {
		return fmt.Errorf("%s: read its schema's version: %w", redact(dsn), err)
	}
	if len(pending) > 0 {
		return fmt.Errorf("%s: its schema is older than this consentkit (it lacks migration %s and %d after it); run consentkit migrate -dsn … (never done implicitly)",
			redact(dsn), pending[0], len(pending)-1)
	}
	return nil
}

// sqliteMigrated checks that the SQLite file at path exists (opening it
// through sqlitestore would create it) and has consentkit's schema.
func sqliteMigrated(ctx context.Context, path string) error {
	if strings.ContainsAny(path, "?#") {
		return fmt.Errorf("-dsn %q: a SQLite file path holds no ? or #", path)
	}
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("no database at %s; run consentkit migrate -dsn %s to create one (never done implicitly)", path, path)
		}
		return err
	}
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=rw&_busy_timeout=10000")
	if err != nil {
		return err
	}
	defer func() { _ = db.Close() }() // read only: its Close loses nothing
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'`).Scan(&n); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if n == 0 {
		return errNoSchema(path)
	}
	return nil
}

// migrate creates or upgrades the schema of the database of dsn.
func migrate(ctx context.Context, dsn string) error {
	var (
		st interface {
			Migrate(context.Context) error
			Close() error
		}
		err error
	)
	if isPostgres(dsn) {
		st, err = pgstore.Open(ctx, dsn)
	} else {
		st, err = sqlitestore.Open(dsn, sqlitestore.Config{})
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", redact(dsn), err)
	}
	err = st.Migrate(ctx)
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	return err
}
