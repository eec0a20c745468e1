package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/internal/testwait"
	"github.com/consentkit/consentkit/optout"
	"github.com/consentkit/consentkit/store/pgstore"
	"github.com/consentkit/consentkit/store/sqlitestore"
)

const secret = "operator-secret-for-the-cli-tests-0123456789"

var start = time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)

// clock is the tests' clock: it moves only when told, so that both
// backends see the same times.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) tick() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
}

// backend runs the command through one backend over one database, with a
// Service on the same database for what the command line cannot do
// (record sessions, issue certificates, opt out).
type backend struct {
	name      string
	env       map[string]string
	openStore func(ctx context.Context, dsn string) (consent.Store, func() error, error)
	svc       *consentkit.Service
	store     consent.Store
	clock     *clock
}

// syncBuffer is a buffer that a command running in a goroutine writes
// while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// run runs the command line args after a tick of the clock.
func (b *backend) run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return b.runCtx(t, context.Background(), &syncBuffer{}, args...)
}

func (b *backend) runCtx(t *testing.T, ctx context.Context, out *syncBuffer, args ...string) (int, string, string) {
	t.Helper()
	b.clock.tick()
	var errb syncBuffer
	c := &cli{stdout: out, stderr: &errb, getenv: func(k string) string { return b.env[k] }, openStore: b.openStore, now: b.clock.Now}
	code := c.run(ctx, args)
	if strings.Contains(out.String()+errb.String(), secret) {
		t.Errorf("%s %q printed the operator secret", b.name, args)
	}
	return code, out.String(), errb.String()
}

// ok runs args and fails the test unless the command succeeds.
func (b *backend) ok(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errs := b.run(t, args...)
	if code != 0 {
		t.Fatalf("%s: consentkit %s: exit %d\n%s%s", b.name, strings.Join(args, " "), code, out, errs)
	}
	return out
}

// json runs args with -json and decodes the answer.
func (b *backend) json(t *testing.T, args ...string) (string, map[string]any) {
	t.Helper()
	out := b.ok(t, append(args, "-json")...)
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%s: consentkit %s -json: not a JSON object: %v\n%s", b.name, strings.Join(args, " "), err, out)
	}
	return out, v
}

func newBackend(t *testing.T, name string, st consent.Store, clk *clock) *backend {
	t.Helper()
	svc, err := consentkit.NewService(st, consentkit.Config{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	return &backend{name: name, env: map[string]string{}, svc: svc, store: st, clock: clk, openStore: openStore}
}

// httpBackend serves the operator API over st on a local server.
func httpBackend(t *testing.T, st consent.Store) *backend {
	t.Helper()
	b := newBackend(t, "http", st, &clock{t: start})
	h, err := httpadapter.New(httpadapter.Config{Service: b.svc, OperatorSecret: secret,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h.Operator())
	t.Cleanup(srv.Close)
	b.env[URLEnv], b.env[SecretEnv] = srv.URL, secret
	return b
}

// directBackend opens a fresh database of the kind: a memory store handed
// to the command, or a SQLite file or PostgreSQL schema that the command
// opens from its DSN after migrating it with consentkit migrate.
func directBackend(t *testing.T, kind string) *backend {
	t.Helper()
	clk := &clock{t: start}
	var (
		dsn string
		st  consent.Store
	)
	switch kind {
	case "memory":
		st = teststore.Memory(t)
		dsn = "memory"
	case "sqlite":
		dsn = filepath.Join(t.TempDir(), "consent.db")
	case "postgres":
		dsn = teststore.PostgresURL(t)
	}
	if st != nil {
		b := newBackend(t, "direct", st, clk)
		b.env[DSNEnv] = dsn
		b.openStore = func(context.Context, string) (consent.Store, func() error, error) {
			return st, func() error { return nil }, nil
		}
		return b
	}
	probe := &backend{name: "direct", env: map[string]string{DSNEnv: dsn}, clock: clk, openStore: openStore}
	// Never migrated implicitly: refused until consentkit migrate.
	code, _, errs := probe.run(t, "companies", "list")
	if code != 1 || !strings.Contains(errs, "consentkit migrate -dsn") {
		t.Errorf("%s before migrate: exit %d, %q; want 1 and a word about migrate", kind, code, errs)
	}
	if kind == "sqlite" {
		if _, err := os.Stat(dsn); err == nil {
			t.Error("a command other than migrate created the SQLite file")
		}
	}
	if out := probe.ok(t, "migrate"); !strings.Contains(out, "migrated") {
		t.Errorf("migrate: %q", out)
	}
	probe.ok(t, "migrate") // again: nothing to do
	clk.t = start          // as if nothing had run: the other backend did not probe
	if kind == "sqlite" {
		s, err := sqlitestore.Open(dsn, sqlitestore.Config{})
		if err != nil {
			t.Fatal(err)
		}
		teststore.CloseAtEnd(t, s)
		st = s
	} else {
		s, err := pgstore.Open(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		teststore.CloseAtEnd(t, s)
		st = s
	}
	b := newBackend(t, "direct", st, clk)
	b.env[DSNEnv] = dsn
	return b
}

// normalizer replaces what differs between two runs of the same commands
// — random ids, secrets, the audit log's hashes (which cover the ids) —
// with placeholders numbered in order of appearance, so that the outputs
// of two databases can be compared.
type normalizer struct {
	seen map[string]string
	n    map[string]int
}

var (
	randomID   = regexp.MustCompile(`\b([a-z]+)_[a-z2-7]{26}\b`)
	tokenSec   = regexp.MustCompile(`\bck_[A-Za-z0-9_-]{20,}`)
	webhookSec = regexp.MustCompile(`\bwhsec_[A-Za-z0-9+/=]+`)
	sha256Hex  = regexp.MustCompile(`\b[0-9a-f]{64}\b`)
	cursor     = regexp.MustCompile(`("next_before":"|-before )([A-Za-z0-9_-]{20,})`)
)

func (n *normalizer) norm(s string) string {
	if n.seen == nil {
		n.seen, n.n = map[string]string{}, map[string]int{}
	}
	s = tokenSec.ReplaceAllString(s, "<token-secret>")
	s = webhookSec.ReplaceAllString(s, "<webhook-secret>")
	s = sha256Hex.ReplaceAllString(s, "<sha256>")
	// A page cursor is base64 of a time and an id.
	s = cursor.ReplaceAllStringFunc(s, func(m string) string {
		sub := cursor.FindStringSubmatch(m)
		text, err := base64.RawURLEncoding.DecodeString(sub[2])
		if err != nil {
			return m
		}
		return sub[1] + "<cursor " + n.ids(string(text)) + ">"
	})
	return n.ids(s)
}

func (n *normalizer) ids(s string) string {
	return randomID.ReplaceAllStringFunc(s, func(id string) string {
		if p, ok := n.seen[id]; ok {
			return p
		}
		prefix := id[:strings.IndexByte(id, '_')]
		n.n[prefix]++
		// The same length as the id, so that text columns align alike.
		p := fmt.Sprintf("%s_%0*d", prefix, 26, n.n[prefix])
		n.seen[id] = p
		return p
	})
}

// script runs one operator's session through b, checking what it can on
// the way, and returns every output, normalized, for comparison with
// another backend's.
func script(t *testing.T, b *backend) []string {
	var n normalizer
	var outs []string
	record := func(s string) string {
		outs = append(outs, n.norm(s))
		return s
	}
	text := func(args ...string) string { t.Helper(); return record(b.ok(t, args...)) }
	jsonOut := func(args ...string) map[string]any {
		t.Helper()
		out, v := b.json(t, args...)
		record(out)
		return v
	}
	fails := func(status string, args ...string) {
		t.Helper()
		code, out, errs := b.run(t, args...)
		if code != 1 || out != "" || !strings.Contains(errs, status) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%s: consentkit %s: exit %d, %q %q; want 1 and one line with %s", b.name, strings.Join(args, " "), code, out, errs, status)
		}
		record(errs)
	}
	want := func(out string, parts ...string) {
		t.Helper()
		for _, p := range parts {
			if !strings.Contains(out, p) {
				t.Errorf("%s: output lacks %q:\n%s", b.name, p, out)
			}
		}
	}

	// Companies.
	if v := jsonOut("companies", "create", "-id", "acme", "-name", "Acme Insurance"); v["attest_certificates"] != false {
		t.Errorf("companies create without -attest: %v", v)
	}
	out := text("companies", "create", "-id", "beta", "-name", "Beta Leads", "-third-party", "-authorize", "acme", "-attest")
	want(out, "id                        beta\n", "third-party verification  on\n", "authorized third parties  acme\n",
		"attest certificates       on\n", "created                   2026-11-22T09:00:")
	fails("(HTTP 409)", "companies", "create", "-id", "acme", "-name", "Again")
	text("companies", "list")
	v := jsonOut("companies", "list", "-limit", "1")
	if v["next_after"] != "acme" {
		t.Errorf("companies list -limit 1: %v; want next_after acme", v)
	}
	want(text("companies", "list", "-after", "acme"), "beta  Beta Leads  on           acme        on      2026-11-22T09:00:")
	fails("(HTTP 404)", "companies", "show", "-company", "nobody")

	// Attestation of every certificate (D49).
	want(text("companies", "attest", "-company", "beta", "-off"), "attest certificates       off\n", "authorized third parties  acme\n")
	want(text("companies", "attest", "-company", "beta"), "attest certificates       off\n")
	if v := jsonOut("companies", "attest", "-company", "beta", "-on"); v["attest_certificates"] != true || v["id"] != "beta" {
		t.Errorf("companies attest -on: %v", v)
	}
	want(text("companies", "show", "-company", "beta"), "attest certificates       on\n")
	fails("(HTTP 404)", "companies", "attest", "-company", "nobody", "-on")

	// The thresholds of the bot verdict (D50): shown, replaced, refused.
	want(text("companies", "insights-rules", "-company", "beta"), "insights rules            the defaults\n")
	want(text("companies", "insights-rules", "-company", "beta", "-max-per-hour", "2", "-min-seconds-on-page", "3.5"),
		`insights rules            {"min_seconds_on_page":3.5,"max_per_hour":2}`)
	if v := jsonOut("companies", "insights-rules", "-company", "beta", "-suspects-for-bot", "-1"); fmt.Sprint(v["insights_rules"]) != "map[suspects_for_bot:-1]" {
		t.Errorf("companies insights-rules -suspects-for-bot -1: %v (every threshold replaced)", v)
	}
	// Shown with -company alone: the common flags are not thresholds.
	want(text("companies", "insights-rules", "-company", "beta"), `insights rules            {"suspects_for_bot":-1}`)
	fails("(HTTP 400)", "companies", "insights-rules", "-company", "beta", "-max-per-day", "10000000")
	fails("(HTTP 404)", "companies", "insights-rules", "-company", "nobody", "-max-per-day", "3")
	want(text("companies", "show", "-company", "beta"), `insights rules            {"suspects_for_bot":-1}`)

	// Audit profiles (D51): put from JSON or a file, shown, listed, refused,
	// deleted.
	want(text("profiles", "put", "-company", "beta", "-rules", `{"lead_age":{"max_seconds":3600,"on_miss":"warn"}}`, "strict"),
		"name     strict\n", `"max_seconds": 3600`, `"on_miss": "warn"`)
	rulesFile := filepath.Join(t.TempDir(), "rules.json")
	if err := os.WriteFile(rulesFile, []byte(`{"brand_names":{"names":["Beta Leads"]},"attestation":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	want(text("profiles", "put", "-company", "beta", "-rules", "@"+rulesFile, "Brand"), "name     Brand\n", `"Beta Leads"`)
	want(text("profiles", "list", "-company", "beta"), "Brand   attestation,brand_names", "strict  lead_age")
	want(text("profiles", "show", "-company", "beta", "strict"), `"lead_age": {`)
	if code, out, errs := b.run(t, "profiles", "put", "-company", "beta", "-rules", `{"lead_agee":{}}`, "typo"); code != 2 || out != "" ||
		!strings.Contains(errs, "lead_agee") {
		t.Errorf("%s: a rule this command does not know: exit %d, %q %q; want 2 naming it", b.name, code, out, errs)
	}
	if code, out, errs := b.run(t, "profiles", "put", "-company", "beta", "-rules", `{"attestation":{}} {"lead_age":{}}`, "two"); code != 2 || out != "" ||
		!strings.Contains(errs, "more than one JSON value") {
		t.Errorf("%s: rules followed by another value: exit %d, %q %q; want 2 saying so", b.name, code, out, errs)
	}
	fails("(HTTP 400)", "profiles", "put", "-company", "beta", "-rules", `{}`, "empty")
	fails("(HTTP 404)", "profiles", "put", "-company", "nobody", "-rules", `{"attestation":{}}`, "x")
	want(text("profiles", "delete", "-company", "beta", "strict"), "deleted strict\n")
	fails("(HTTP 404)", "profiles", "show", "-company", "beta", "strict")

	// Properties and their allowed origins (D32).
	b.env[CompanyEnv] = "acme" // -company from the environment from here on
	jsonOut("properties", "add", "-id", "acme-web", "-name", "Quote form", "-origin", "https://acme.example")
	want(text("properties", "list"), "acme-web  Quote form  https://acme.example")
	want(text("properties", "origins", "acme-web", "-origin", "https://acme.example", "-origin", "https://www.acme.example:8443"),
		"allowed origins  https://acme.example,https://www.acme.example:8443")
	v = jsonOut("properties", "origins", "acme-web")
	if fmt.Sprint(v["allowed_origins"]) != "[https://acme.example https://www.acme.example:8443]" {
		t.Errorf("properties origins: %v", v)
	}
	fails("(HTTP 400)", "properties", "origins", "acme-web", "-origin", "ftp://acme.example")
	fails("(HTTP 404)", "properties", "origins", "nowhere")

	// Tokens: the secret once (D6).
	issued := jsonOut("tokens", "issue", "-retention", "-expires", "2030-01-01T00:00:00Z")
	if s, _ := issued["secret"].(string); !strings.HasPrefix(s, consentkit.TokenPrefix) || issued["expires_at"] != "2030-01-01T00:00:00Z" {
		t.Errorf("tokens issue: %v", issued)
	}
	out = text("tokens", "issue", "-expires", "48h")
	want(out, "secret       ck_", "shown this once", "expires      2026-11-24T09:00:")
	second := regexp.MustCompile(`(?m)^id +(tok_\S+)$`).FindStringSubmatch(out)
	if second == nil {
		t.Fatalf("tokens issue printed no id:\n%s", out)
	}
	want(text("tokens", "revoke", second[1]), "revoked "+second[1])
	out = text("tokens", "list")
	if strings.Contains(out, "ck_") || strings.Count(out, "\n") != 3 || !strings.Contains(out, second[1]+"  no ") {
		t.Errorf("tokens list:\n%s", out)
	}
	if s := jsonOut("tokens", "list"); strings.Contains(fmt.Sprint(s), "ck_") {
		t.Errorf("tokens list -json shows a secret: %v", s)
	}
	fails("(HTTP 404)", "tokens", "revoke", "tok_unknown")

	// The wallet: a top-up retried with its key credits once (D40).
	v = jsonOut("wallet", "topup", "-amount", "25.50", "-reference", "inv-1", "-key", "key-1")
	if fmt.Sprint(v) != "map[amount:25.5 balance:25.5 company_id:acme reference:inv-1]" {
		t.Errorf("topup: %v", v)
	}
	code, out, errs := b.run(t, "wallet", "topup", "-amount", "25.5", "-reference", "inv-1", "-key", "key-1", "-json")
	if code != 0 || !strings.Contains(errs, "replayed") || n.norm(out) != outs[len(outs)-1] {
		t.Errorf("topup retried: exit %d %s %s; want the first answer, replayed", code, out, errs)
	}
	out = text("wallet", "topup", "-amount", "25.50", "-reference", "inv-1", "-key", "key-1")
	want(out, "balance          25.5\n", "Replayed")
	fails("(HTTP 422)", "wallet", "topup", "-amount", "30", "-key", "key-1")
	out = text("wallet", "topup", "-amount", "0.015")
	want(out, "credited         0.015\n", "balance          25.515\n", "idempotency key  topup_")
	want(text("wallet", "balance"), "balance  25.515\n")
	v = jsonOut("wallet", "balance")
	if fmt.Sprint(v) != "map[balance:25.515 company_id:acme]" {
		t.Errorf("balance: %v", v)
	}
	out = text("wallet", "ledger")
	if strings.Count(out, "top_up") != 2 || !strings.Contains(out, "+25.5 ") || !strings.Contains(out, "+0.015") {
		t.Errorf("ledger: two top-ups, the retried one once:\n%s", out)
	}
	v = jsonOut("wallet", "ledger", "-limit", "1")
	next, _ := v["next_before"].(string)
	if next == "" {
		t.Fatalf("ledger -limit 1: %v; want next_before", v)
	}
	want(text("wallet", "ledger", "-limit", "1", "-before", next), "+25.5", "inv-1")
	want(text("companies", "show"), "balance                   25.515\n")

	// Sessions and certificates, recorded as capture would.
	seed(t, b)
	out = text("certificates", "find", "-email", " Jane@Example.com ")
	if !strings.Contains(out, "cert-1") || !strings.Contains(out, "cert-2") || strings.Contains(out, "cert-3") {
		t.Errorf("certificates find -email:\n%s", out)
	}
	v = jsonOut("certificates", "find", "-mobile", "(555) 010-2000")
	if fmt.Sprint(v["certificates"]) == "[]" || strings.Contains(fmt.Sprint(v), "555") {
		t.Errorf("certificates find -mobile: %v", v)
	}
	v = jsonOut("certificates", "find", "-limit", "2")
	next, _ = v["next_before"].(string)
	if len(v["certificates"].([]any)) != 2 || next == "" {
		t.Fatalf("certificates find -limit 2: %v", v)
	}
	want(text("certificates", "find", "-limit", "2", "-before", next), "cert-1 ")
	out = text("certificates", "find", "-since", start.Add(time.Hour+1500*time.Millisecond).Format(time.RFC3339Nano),
		"-until", "2026-11-22T10:00:03Z")
	if !strings.Contains(out, "cert-2") || strings.Contains(out, "cert-1") || strings.Contains(out, "cert-3") {
		t.Errorf("certificates found by time:\n%s", out)
	}
	want(text("certificates", "show", "cert-1"), "origin            https://acme.example/quote\n",
		"email given       yes\n", "I agree to be called.", "types tcpa,marketing")
	jsonOut("certificates", "find", "-id", "cert-1")
	fails("(HTTP 404)", "certificates", "show", "cert-other")
	want(text("sessions", "list"), "s1  2026-11-22T10:00:00Z  acme-web  none")
	jsonOut("sessions", "show", "s1")
	want(text("revocations", "list"), "cert-3", "certificate cert-3", "203.0.113.9", "changed my mind")
	jsonOut("revocations", "list")

	// Webhooks (D44): the secret once.
	hook := jsonOut("webhooks", "add", "-endpoint", "https://hooks.acme.example/in", "-event", "consent.revoked,session.retained")
	id, _ := hook["id"].(string)
	if s, _ := hook["secret"].(string); !strings.HasPrefix(s, "whsec_") {
		t.Fatalf("webhooks add: %v", hook)
	}
	want(text("webhooks", "list"), id+"  https://hooks.acme.example/in  consent.revoked,session.retained  -")
	want(text("webhooks", "disable", id), "disabled "+id)
	if strings.Contains(text("webhooks", "list"), "  -  ") {
		t.Error("a disabled endpoint listed as enabled")
	}
	want(text("webhooks", "enable", id), "enabled "+id)
	err := b.store.Update(context.Background(), func(tx consent.Tx) error {
		for i := range 3 {
			err := tx.AppendWebhookDelivery(context.Background(), &consent.WebhookDelivery{EndpointID: id,
				MessageID: fmt.Sprintf("msg_%d", i), EventType: consent.EventConsentRevoked, Attempt: 1,
				At: start.Add(time.Duration(i) * time.Minute), Status: 500 + i, Duration: 1500 * time.Microsecond})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	out = text("webhooks", "deliveries", id, "-limit", "2")
	want(out, "msg_2", "msg_1", "502     1.5", "next page: -before ")
	jsonOut("webhooks", "deliveries", id)
	want(text("webhooks", "delete", id), "deleted "+id)
	fails("(HTTP 404)", "webhooks", "deliveries", id)

	// The audit log (D42): the newest entries, oldest first; the operator's.
	out = text("audit", "tail", "-n", "3")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.Contains(lines[2], "operator  webhook.delete") || !strings.Contains(lines[0], "webhook.disable") {
		t.Errorf("audit tail -n 3:\n%s", out)
	}
	out = text("audit", "tail", "-n", "2", "-json", "-action", "wallet.")
	lines = strings.Split(strings.TrimSpace(out), "\n")
	for _, l := range lines {
		var e map[string]any
		if err := json.Unmarshal([]byte(l), &e); err != nil || e["action"] != "wallet.credit" || e["actor"] != "operator" {
			t.Errorf("audit tail -json line %q: %v", l, err)
		}
	}
	if len(lines) != 2 || !strings.Contains(lines[1], `0.015`) {
		t.Errorf("audit tail -n 2 -action wallet. -json:\n%s", out)
	}
	if strings.Contains(text("audit", "tail", "-n", "1000"), "ck_") {
		t.Error("the audit log shows a token secret")
	}
	return outs
}

// seed records what the command line only reads: sessions, certificates
// and an opt-out.
func seed(t *testing.T, b *backend) {
	t.Helper()
	ctx := context.Background()
	svc := b.svc
	b.clock.mu.Lock()
	b.clock.t = start.Add(time.Hour)
	b.clock.mu.Unlock()
	for _, id := range []string{"s1", "s2"} {
		if _, err := svc.StartSession(ctx, consentkit.SessionParams{ID: id, CompanyID: "acme", PropertyID: "acme-web"}); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.AppendEvents(ctx, id, json.RawMessage(`[{"type":4,"data":{"width":1024,"height":625},"timestamp":1}]`)); err != nil {
			t.Fatal(err)
		}
	}
	record := consent.Record{Text: "I agree to be called.", Types: []string{"tcpa", "marketing"}, OptInAt: start.Add(time.Hour)}
	for _, c := range []consentkit.CertificateParams{
		{ID: "cert-1", SessionID: "s1", Email: "jane@example.com", Mobile: "+1 555 010 2000"},
		{ID: "cert-2", SessionID: "s1", Email: "JANE@example.com"},
		{ID: "cert-3", SessionID: "s2", Email: "joe@example.com"},
	} {
		b.clock.tick()
		c.CompanyID, c.PropertyID, c.Origin, c.Records = "acme", "acme-web", "https://acme.example/quote", []consent.Record{record}
		if _, err := svc.IssueCertificate(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.StartSession(ctx, consentkit.SessionParams{ID: "s-beta", CompanyID: "beta", PropertyID: "acme-web"}); err == nil {
		t.Error("a session of beta on acme's property")
	}
	b.clock.tick()
	if _, err := optout.New(svc).OptOut(ctx, optout.Request{CompanyID: "acme", CertificateID: "cert-3",
		Reason: "changed my mind", ClientIP: "203.0.113.9"}); err != nil {
		t.Fatal(err)
	}
}

// TestBackends runs the same operator's session through the operator API
// of a server and directly on a database, on every store: each output is
// checked, and the two backends' outputs, text and JSON, are the same but
// for random ids and secrets.
func TestBackends(t *testing.T) {
	for _, k := range teststore.Kinds {
		t.Run(k.Name, func(t *testing.T) {
			t.Parallel()
			direct := directBackend(t, k.Name)
			remote := httpBackend(t, k.Open(t))
			got, want := script(t, direct), script(t, remote)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("direct and HTTP outputs differ (-http +direct):\n%s", diff)
			}
		})
	}
}

// TestTopUpRetriedAcrossBackends sends a top-up through a server and then
// again, with its key, directly on the server's database: the key is
// scoped alike by both backends, so the retry credits nothing (D40).
func TestTopUpRetriedAcrossBackends(t *testing.T) {
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			direct := directBackend(t, kind)
			remote := httpBackend(t, direct.store)
			remote.clock = direct.clock
			remote.env[CompanyEnv], direct.env[CompanyEnv] = "acme", "acme"
			remote.ok(t, "companies", "create", "-id", "acme", "-name", "Acme")
			first := remote.ok(t, "wallet", "topup", "-amount", "10", "-key", "invoice-7", "-json")
			code, again, errs := direct.run(t, "wallet", "topup", "-amount", "10", "-key", "invoice-7", "-json")
			if code != 0 || again != first || !strings.Contains(errs, "replayed") {
				t.Errorf("retried directly: exit %d %s %s; want %s, replayed", code, again, errs, first)
			}
			for _, b := range []*backend{remote, direct} {
				if out := b.ok(t, "wallet", "balance"); !strings.Contains(out, "balance  10\n") {
					t.Errorf("%s balance after a retried top-up:\n%s", b.name, out)
				}
			}
		})
	}
}

// TestAuditFollow follows the audit log while a token is issued.
func TestAuditFollow(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		b := httpBackend(t, open(t))
		b.env[CompanyEnv] = "acme"
		b.ok(t, "companies", "create", "-id", "acme", "-name", "Acme")
		b.ok(t, "wallet", "topup", "-amount", "1")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		out := &syncBuffer{}
		done := make(chan int)
		go func() {
			code, _, _ := b.runCtx(t, ctx, out, "audit", "tail", "-n", "1", "-f", "-interval", "10ms")
			done <- code
		}()
		wait := func(what string) {
			t.Helper()
			stop := testwait.Near(t)
			for !strings.Contains(out.String(), what) {
				select {
				case <-stop:
					t.Fatalf("audit tail -f printed no %s:\n%s", what, out)
				case <-time.After(5 * time.Millisecond):
				}
			}
		}
		wait("wallet.credit")
		b.ok(t, "tokens", "issue")
		wait("token.issue")
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("audit tail -f interrupted: exit %d", code)
		}
		if s := out.String(); strings.Contains(s, "company.create") || strings.Count(s, "\n") != 2 {
			t.Errorf("audit tail -n 1 -f:\n%s", s)
		}
	})
}

// TestHelp: consentkit -h lists every command, and every command's -h
// shows its usage line and every flag it takes.
func TestHelp(t *testing.T) {
	b := &backend{name: "none", env: map[string]string{}, clock: &clock{t: start}, openStore: openStore}
	for _, args := range [][]string{{"-h"}, {"help"}} {
		code, out, errs := b.run(t, args...)
		if code != 0 || errs != "" || !strings.HasPrefix(out, "usage: consentkit GROUP COMMAND") {
			t.Errorf("consentkit %s: exit %d %q %q", args[0], code, out, errs)
		}
		for _, cmd := range commands {
			if !strings.Contains(out, "\n  "+cmd.title()+" ") {
				t.Errorf("consentkit -h does not list %s", cmd.title())
			}
		}
	}
	for _, cmd := range commands {
		args := strings.Fields(cmd.title())
		code, out, errs := b.run(t, append(args, "-h")...)
		if code != 0 || errs != "" || !strings.HasPrefix(out, "usage: "+cmd.usageLine()+"\n\n"+cmd.summary+".\n") {
			t.Errorf("%s -h: exit %d\n%s%s", cmd.title(), code, out, errs)
		}
		fs := flag.NewFlagSet("", flag.ContinueOnError)
		cmd.setup(fs)
		names := []string{"json", "dsn"}
		if !cmd.local {
			names = append(names, "url", "secret-file", "timeout")
		}
		if cmd.company {
			names = append(names, "company")
		}
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		for _, name := range names {
			if !regexp.MustCompile(`(?m)^  -` + regexp.QuoteMeta(name) + `\b`).MatchString(out) {
				t.Errorf("%s -h does not show -%s:\n%s", cmd.title(), name, out)
			}
		}
		if _, again, _ := b.run(t, append([]string{"help"}, args...)...); again != out {
			t.Errorf("consentkit help %s differs from its -h", cmd.title())
		}
	}
	code, out, _ := b.run(t, "tokens", "-h")
	if code != 0 || !strings.Contains(out, "tokens issue") || strings.Contains(out, "wallet") {
		t.Errorf("consentkit tokens -h: exit %d\n%s", code, out)
	}
}

// TestUsageErrors: a command line that cannot run exits 2 and says why,
// before any connection is tried.
func TestUsageErrors(t *testing.T) {
	remote := httpBackend(t, teststore.Memory(t))
	none := &backend{name: "none", env: map[string]string{}, clock: &clock{t: start}, openStore: openStore}
	both := &backend{name: "both", env: map[string]string{URLEnv: "http://127.0.0.1:1", DSNEnv: "x.db"}, clock: &clock{t: start}, openStore: openStore}
	noSecret := &backend{name: "no secret", env: map[string]string{URLEnv: remote.env[URLEnv]}, clock: &clock{t: start}, openStore: openStore}
	for _, c := range []struct {
		b    *backend
		args []string
		want string
	}{
		{remote, nil, "usage: consentkit GROUP COMMAND"},
		{remote, []string{"nope"}, `no command "nope"`},
		{remote, []string{"tokens"}, "usage: consentkit tokens COMMAND"},
		{remote, []string{"tokens", "nope"}, `no command "nope"`},
		{remote, []string{"-json", "tokens", "list"}, `no command "-json"`},
		{remote, []string{"tokens", "list"}, "-company is required"},
		{remote, []string{"tokens", "list", "-company", "no way"}, "is not an id"},
		{remote, []string{"tokens", "list", "-company", "acme", "-bogus"}, "flag provided but not defined: -bogus"},
		{remote, []string{"tokens", "revoke", "-company", "acme"}, "missing TOKEN_ID"},
		{remote, []string{"tokens", "list", "-company", "acme", "extra"}, `unexpected arguments ["extra"]`},
		{remote, []string{"tokens", "revoke", "-company", "acme", "a", "b"}, `unexpected arguments ["b"]`},
		{remote, []string{"tokens", "issue", "-company", "acme", "-expires", "tomorrow"}, "-expires"},
		{remote, []string{"companies", "list", "-company", "acme"}, "flag provided but not defined: -company"},
		{remote, []string{"companies", "create", "-id", "acme"}, "-id and -name are required"},
		{remote, []string{"wallet", "topup", "-company", "acme"}, "-amount is required"},
		{remote, []string{"wallet", "topup", "-company", "acme", "-amount", "1.0000001"}, "at most 6 decimals"},
		{remote, []string{"wallet", "topup", "-company", "acme", "-amount", "-5"}, "positive"},
		{remote, []string{"wallet", "topup", "-company", "acme", "-amount", "5", "-key", "a key"}, "-key"},
		{remote, []string{"wallet", "ledger", "-company", "acme", "-since", "yesterday"}, "RFC 3339"},
		{remote, []string{"certificates", "find", "-company", "acme", "-email", "a@example.com", "-id", "c"}, "one of them"},
		{remote, []string{"properties", "origins", "-company", "acme", "p", "-none", "-origin", "https://a.example"}, "contradict"},
		{remote, []string{"companies", "attest", "-company", "acme", "-on", "-off"}, "contradict"},
		{remote, []string{"webhooks", "add", "-company", "acme", "-endpoint", "https://a.example"}, "-event"},
		{remote, []string{"audit", "tail", "-company", "acme", "-n", "5000"}, "-n must be"},
		{remote, []string{"migrate"}, "works on a database"},
		{remote, []string{"migrate", "-url", "http://x"}, "flag provided but not defined: -url"},
		{remote, []string{"companies", "list", "-url", "http://x", "-dsn", "y"}, "give one"},
		{remote, []string{"companies", "list", "-url", "ftp://x"}, "base URL"},
		{remote, []string{"companies", "list", "-url", "https://op:pw@consent.example"}, "holds a user or password"},
		{none, []string{"companies", "list"}, "say where"},
		{both, []string{"companies", "list"}, "both set"},
		{noSecret, []string{"companies", "list"}, "operator secret is missing"},
		{noSecret, []string{"companies", "list", "-secret-file", filepath.Join(t.TempDir(), "none")}, "-secret-file"},
	} {
		code, out, errs := c.b.run(t, c.args...)
		if code != 2 || out != "" || !strings.Contains(errs, c.want) {
			t.Errorf("%s: consentkit %q: exit %d, %q %q; want 2 and %q", c.b.name, c.args, code, out, errs, c.want)
		}
	}
}

// TestFailures: refusals and failures exit 1 with one line.
func TestFailures(t *testing.T) {
	remote := httpBackend(t, teststore.Memory(t))
	wrong := &backend{name: "wrong secret", env: map[string]string{URLEnv: remote.env[URLEnv], SecretEnv: strings.Repeat("x", 40)},
		clock: &clock{t: start}, openStore: openStore}
	down := &backend{name: "down", env: map[string]string{URLEnv: "http://127.0.0.1:1", SecretEnv: secret}, clock: &clock{t: start}, openStore: openStore}
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.db")
	notOurs := filepath.Join(dir, "other.db")
	other, err := sqlitestore.Open(notOurs, sqlitestore.Config{}) // a SQLite file never migrated
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	// A database migrated by an older consentkit: its last migration is
	// not recorded as applied.
	behind := filepath.Join(dir, "behind.db")
	if err := migrate(context.Background(), behind); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite3", behind)
	if err != nil {
		t.Fatal(err)
	}
	var last string
	if err := db.QueryRow(`DELETE FROM schema_migrations WHERE version = (SELECT max(version) FROM schema_migrations) RETURNING version`).Scan(&last); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		b    *backend
		args []string
		want string
	}{
		{wrong, []string{"companies", "list"}, "the operator secret is wrong (HTTP 401)"},
		{down, []string{"companies", "list"}, "connect"},
		{remote, []string{"wallet", "balance", "-company", "nobody"}, "(HTTP 404)"},
		{remote, []string{"companies", "list", "-dsn", missing}, "no database at " + missing},
		{remote, []string{"companies", "list", "-dsn", notOurs}, "holds no consentkit schema"},
		{remote, []string{"companies", "list", "-dsn", behind}, "its schema is older than this consentkit (it lacks migration " + last + " and 0 after it); run consentkit migrate"},
		{remote, []string{"wallet", "topup", "-company", "nobody", "-amount", "1", "-key", "k"}, "(HTTP 404)"},
	} {
		code, out, errs := c.b.run(t, c.args...)
		if code != 1 || out != "" || !strings.Contains(errs, c.want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%s: consentkit %q: exit %d, %q %q; want 1 and one line with %q", c.b.name, c.args, code, out, errs, c.want)
		}
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("a command created the missing database")
	}
	// A top-up whose answer never came says how to retry it safely.
	code, _, errs := down.run(t, "wallet", "topup", "-company", "acme", "-amount", "1", "-key", "invoice-9")
	if code != 1 || !strings.Contains(errs, "run it again with -key invoice-9") {
		t.Errorf("topup to a server that is down: exit %d %q", code, errs)
	}
	// The secret from a file.
	file := filepath.Join(dir, "secret")
	if err := os.WriteFile(file, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := wrong.run(t, "companies", "list", "-secret-file", file); code != 0 || !strings.HasPrefix(out, "ID ") {
		t.Errorf("-secret-file: exit %d %q %q", code, out, errs)
	}
}

// webhooks add -webhook-allow-private lets the direct backend's service
// take an endpoint of a private address, as a server started with
// -webhook-allow-private does; without it the address is refused, and
// through a server's operator API the flag is a usage error (the server's
// own setting rules).
func TestWebhookAllowPrivate(t *testing.T) {
	for _, b := range []*backend{directBackend(t, "memory"), httpBackend(t, teststore.Memory(t))} {
		b.ok(t, "companies", "create", "-id", "acme", "-name", "Acme")
		add := []string{"webhooks", "add", "-company", "acme", "-endpoint", "http://127.0.0.1:9000/hook", "-event", "consent.revoked"}
		if code, _, errs := b.run(t, add...); code != 1 || !strings.Contains(errs, "loopback") {
			t.Errorf("%s: a loopback endpoint without the flag: exit %d, %q; want 1, refused", b.name, code, errs)
		}
		code, out, errs := b.run(t, append(add, "-webhook-allow-private")...)
		switch b.name {
		case "direct":
			if code != 0 || !strings.Contains(out, "http://127.0.0.1:9000/hook") {
				t.Errorf("direct: with -webhook-allow-private: exit %d, %q %q; want the endpoint added", code, out, errs)
			}
		default:
			if code != 2 || !strings.Contains(errs, "-dsn") {
				t.Errorf("%s: with -webhook-allow-private: exit %d, %q; want 2, a usage error naming -dsn", b.name, code, errs)
			}
		}
	}
}
