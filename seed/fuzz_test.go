package seed_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/seed"
	"github.com/consentkit/consentkit/signed"
	"github.com/consentkit/consentkit/wallet"
)

// errRollback ends a transaction whose load succeeded without committing
// it, so that one store serves every input of the fuzzer.
var errRollback = errors.New("roll back")

// loaded is what a store holds after a seed file loaded, read back through
// its Tx: the rows as the store decodes them, with the random parts (ids of
// tokens, webhooks and ledger entries, made-up webhook secrets) cleared.
type loaded struct {
	Summary      seed.Summary
	Companies    []*consent.Company
	Balances     []wallet.Amount
	Ledgers      [][]*wallet.Entry
	Properties   []*consent.Property
	Tokens       []*consent.Token
	Sessions     []*consent.Session
	Events       [][][]byte
	Certificates []*consent.Certificate
	Webhooks     [][]*consent.WebhookEndpoint
}

// loadRolledBack loads f into st in one transaction, reads back what it
// loaded, and rolls the transaction back. It returns Load's error, or what
// was loaded; afterwards st must be empty again.
func loadRolledBack(t *testing.T, st consent.Store, svc *consentkit.Service, f *seed.File) (*loaded, error) {
	ctx := context.Background()
	var out *loaded
	var loadErr error
	err := st.Update(ctx, func(tx consent.Tx) error {
		out, loadErr = nil, nil
		sum, err := seed.LoadTx(ctx, svc, tx, f)
		if err != nil {
			loadErr = err
			return err
		}
		out, err = readBack(ctx, svc, tx, f, sum)
		if err != nil {
			return err
		}
		return errRollback
	})
	switch {
	case loadErr != nil:
		return nil, loadErr
	case !errors.Is(err, errRollback):
		t.Fatalf("reading back a loaded file: %v", err)
	}
	return out, nil
}

func readBack(ctx context.Context, svc *consentkit.Service, tx consent.Tx, f *seed.File, sum *seed.Summary) (*loaded, error) {
	l := &loaded{Summary: *sum}
	for _, c := range f.Companies {
		co, err := tx.Company(ctx, c.ID)
		if err != nil {
			return nil, err
		}
		bal, err := tx.Balance(ctx, c.ID)
		if err != nil {
			return nil, err
		}
		ledger, err := tx.Ledger(ctx, c.ID)
		if err != nil {
			return nil, err
		}
		for _, e := range ledger {
			e.ID = ""
		}
		l.Companies, l.Balances, l.Ledgers = append(l.Companies, co), append(l.Balances, bal), append(l.Ledgers, ledger)
		for _, p := range c.Properties {
			prop, err := tx.Property(ctx, p.ID)
			if err != nil {
				return nil, err
			}
			l.Properties = append(l.Properties, prop)
		}
		for _, tk := range c.Tokens {
			tok, err := tx.TokenByDigest(ctx, consent.DigestOf(tk.Token))
			if err != nil {
				return nil, err
			}
			tok.ID = ""
			l.Tokens = append(l.Tokens, tok)
		}
		eps, err := tx.WebhookEndpoints(ctx, c.ID)
		if err != nil {
			return nil, err
		}
		for i, e := range eps {
			e.ID = ""
			if i < len(c.Webhooks) && c.Webhooks[i].Secret == "" {
				e.Secret = ""
			}
		}
		l.Webhooks = append(l.Webhooks, eps)
	}
	for _, s := range f.Sessions {
		ses, err := tx.Session(ctx, s.ID)
		if err != nil {
			return nil, err
		}
		events, err := tx.Events(ctx, s.ID)
		if err != nil {
			return nil, err
		}
		l.Sessions, l.Events = append(l.Sessions, ses), append(l.Events, events)
	}
	for _, c := range f.Certificates {
		cert, err := tx.Certificate(ctx, c.ID)
		if err != nil {
			return nil, err
		}
		// What a store reads back still carries the signature it was
		// issued with (D41).
		if err := svc.CheckIntegrity(ctx, tx, cert, nil); err != nil {
			return nil, err
		}
		l.Certificates = append(l.Certificates, cert)
	}
	return l, nil
}

// stores are a memory store and a SQLite store, each with a service that
// signs certificates, at a fixed time.
type stores struct {
	mem, sqlite    consent.Store
	memSvc, sqlSvc *consentkit.Service
}

func newStores(f *testing.F) *stores {
	key, err := signed.NewSigningKey("seed-fuzz")
	if err != nil {
		f.Fatal(err)
	}
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	cfg := consentkit.Config{Now: func() time.Time { return now }, SigningKeys: []signed.SigningKey{key}}
	s := &stores{mem: teststore.Memory(f), sqlite: teststore.SQLite(f)}
	if s.memSvc, err = consentkit.NewService(s.mem, cfg); err != nil {
		f.Fatal(err)
	}
	if s.sqlSvc, err = consentkit.NewService(s.sqlite, cfg); err != nil {
		f.Fatal(err)
	}
	return s
}

// check loads file into both stores, rolled back: both load it or both
// refuse it with an error of the same code, leaving the store empty; a
// file that loads counts what the file holds, keeps its balances and
// consent texts, and reads back the same from both stores.
func (s *stores) check(t *testing.T, file *seed.File) {
	memOut, memErr := loadRolledBack(t, s.mem, s.memSvc, file)
	sqlOut, sqlErr := loadRolledBack(t, s.sqlite, s.sqlSvc, file)
	for name, st := range map[string]consent.Store{"memory": s.mem, "sqlite": s.sqlite} {
		if !empty(t, st) {
			t.Fatalf("%s: the store is not empty after a rolled-back load", name)
		}
	}
	if (memErr == nil) != (sqlErr == nil) || consent.ErrorCode(memErr) != consent.ErrorCode(sqlErr) {
		t.Fatalf("the stores disagree:\nmemory: %v\nsqlite: %v", memErr, sqlErr)
	}
	if memErr != nil {
		return
	}
	want := seed.Summary{Companies: len(file.Companies), Sessions: len(file.Sessions), Certificates: len(file.Certificates)}
	for _, c := range file.Companies {
		want.Properties += len(c.Properties)
		want.Tokens += len(c.Tokens)
		want.Webhooks += len(c.Webhooks)
		want.Profiles += len(c.Profiles)
	}
	if memOut.Summary != want {
		t.Errorf("summary %+v, want the file's counts %+v", memOut.Summary, want)
	}
	for i, c := range file.Companies {
		if memOut.Balances[i] != c.Balance {
			t.Errorf("companies[%d]: balance %s, the file says %s", i, memOut.Balances[i], c.Balance)
		}
	}
	for i, c := range file.Certificates {
		got := memOut.Certificates[i]
		if len(got.Records) != len(c.Consents) {
			t.Fatalf("certificates[%d]: %d records, the file has %d", i, len(got.Records), len(c.Consents))
		}
		for j, r := range c.Consents {
			if got.Records[j].Text != r.Text {
				t.Errorf("certificates[%d].consents[%d].text read back as %q, the file says %q", i, j, got.Records[j].Text, r.Text)
			}
		}
	}
	if d := cmp.Diff(memOut, sqlOut, cmpopts.EquateEmpty()); d != "" {
		t.Fatalf("the stores read back different things (-memory +sqlite):\n%s", d)
	}
}

// A seed file is untrusted input. Whatever Parse accepts encodes back to
// a file that parses to the same thing, and loads alike on every store:
// into the memory store and into SQLite, either both load it or both refuse
// it with the same kind of error; a file that loads reads back the same
// from both, its certificates' signatures hold, and its counts are the
// file's; and a refused file leaves the store empty (all or nothing).
//
// go test -run '^$' -fuzz FuzzParseLoad ./seed
func FuzzParseLoad(f *testing.F) {
	for _, s := range []string{
		`{}`,
		`{"companies":[{"id":"a","name":"A","balance":"1.5","properties":[{"id":"p","name":"P","allowed_origins":["https://a.example"]}],
		  "tokens":[{"token":"a-secret-of-sixteen","permissions":["vzew_retention"],"expires_at":"2030-01-01T00:00:00Z","revoked":true}],
		  "third_party_verification_enabled":true,"authorized_third_parties":["b"],"attest_certificates":true},{"id":"b","name":"B","balance":0.000001}],
		  "sessions":[{"id":"s1","company_id":"a","property_id":"p","created_at":"2026-11-20T10:00:00Z",
		    "events":[{"type":4,"data":{"href":"https://a.example/"},"timestamp":1},{"type":3,"timestamp":2}]}],
		  "certificates":[{"id":"c1","company_id":"a","property_id":"p","session_id":"s1","created_at":"2026-11-20T10:00:01+02:00",
		    "origin":"https://a.example/form","email":" Jane@Example.com ","mobile":"(555) 010-2000",
		    "consents":[{"text":"I agree ✓","types":["tcpa","marketing"],"opt_in_at":"2026-11-20T10:00:00.123456789Z"},{"text":"\tB\n"}],
		    "events_combined":{"fields":2}}]}`,
		`{"companies":[{"id":"acme","name":"Acme","webhooks":[{"url":"https://hooks.acme.example/in","secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
		  "events":["session.retained","consent.revoked"]},{"url":"https://hooks.acme.example/2","events":["certificate.issued"]}]}]}`,
		`{"companies":[{"id":"a","name":"A","properties":[{"id":"p","name":"P"}]}],"sessions":[{"id":"s","company_id":"a","property_id":"p",
		  "created_at":"0001-01-01T00:00:00.0000001Z"}],"certificates":[{"id":"c","company_id":"a","property_id":"p","session_id":"s",
		  "created_at":"9999-12-31T23:59:59.999999999Z","consents":[{"text":"x","opt_in_at":"0000-01-01T00:00:00-23:59"}]}]}`,
		`{"companies":[{"id":"a","name":"Ärzte 👩‍⚕️","balance":9223372036854.775807}]}`,
		`{"companies":[{"id":"a","name":"A","properties":[{"id":"p","name":"P"}]}],"sessions":[{"id":"s","company_id":"a","property_id":"p","events":[{},[],1]}]}`,
		`{"companies":[{"id":"a","name":"A"},{"id":"a","name":"A"}]}`,
		`{"companies":[{"id":"a","name":"A","tokens":[{"token":"same-secret-16-bytes"}]},{"id":"b","name":"B","tokens":[{"token":"same-secret-16-bytes"}]}]}`,
		`{"companies":[{"id":"a","name":"A","properties":[{"id":"p","name":"P"}]},{"id":"b","name":"B","properties":[{"id":"p","name":"P"}]}]}`,
		`{"companies":[{"id":"a","name":"A","properties":[{"id":"p","name":"P"}]}],"sessions":[{"id":"s","company_id":"a","property_id":"p"}],
		  "certificates":[{"id":"c","company_id":"a","property_id":"p","session_id":"s","events_combined":null,"email":"a@b","mobile":"+1"}]}`,
		`{"companies":null,"sessions":[],"certificates":[{}]}`,
		`{"companies":[{"id":"a","name":"A","balance":-0.000001}]}`,
		"{\"companies\":[{\"id\":\"a\",\"name\":\"A\xff\"}]}",
		`{"companies":[{"id":"a","name":"A\udc00"}]}`,
		`[]`, `null`, ``, `{} {}`, `{"x":1}`,
	} {
		f.Add([]byte(s))
	}
	stores := newStores(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := seed.Parse(bytes.NewReader(data))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "seed: ") {
				t.Errorf("Parse error %q does not say it is the seed file's", err)
			}
			return
		}
		if !utf8.Valid(data) {
			t.Fatalf("Parse accepted invalid UTF-8: %q", data)
		}
		// What Parse accepts encodes to a file that parses to the same. The
		// encoder leaves "&", "<" and ">" as they are: escaped, the events
		// (kept as written) would come back as other bytes of the same JSON.
		var buf bytes.Buffer
		e := json.NewEncoder(&buf)
		e.SetEscapeHTML(false)
		if err := e.Encode(file); err != nil {
			t.Fatalf("encode a parsed file: %v", err)
		}
		enc := buf.Bytes()
		again, err := seed.Parse(bytes.NewReader(enc))
		if err != nil {
			t.Fatalf("Parse of the encoding of a parsed file: %v\n%s", err, enc)
		}
		if d := cmp.Diff(file, again, cmpopts.EquateEmpty(), cmp.Comparer(func(a, b json.RawMessage) bool {
			return bytes.Equal(compact(a), compact(b))
		})); d != "" {
			t.Fatalf("the file parsed again differs (-first +again):\n%s", d)
		}
		if len(data) > 4<<10 {
			return // loading large files twice is slow; the small ones find the same rules
		}

		stores.check(t, file)
	})
}

// compact is b without white space outside strings; nil is null.
func compact(b []byte) []byte {
	if len(b) == 0 {
		return []byte("null")
	}
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return b
	}
	return buf.Bytes()
}

func empty(t *testing.T, st consent.Store) bool {
	var ok bool
	err := st.View(context.Background(), func(tx consent.Tx) error {
		var err error
		ok, err = seed.Empty(context.Background(), tx)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// The values of a seed file, in a file that is otherwise well formed:
// names, origins, consent text and types, the lead's email and mobile,
// times, a balance, a permission, a webhook and an rrweb event. Whatever
// loads, loads alike on the memory store and on SQLite (see FuzzParseLoad).
//
// go test -run '^$' -fuzz FuzzLoadValues ./seed
func FuzzLoadValues(f *testing.F) {
	type values struct {
		name, allowedOrigin, origin, text, typ, email, mobile, created, expires, balance, permission, hook, event, eventJSON string
	}
	for _, v := range []values{
		{"Acme ✓", "https://forms.acme.example", "https://acme.example/quote", "I agree", "tcpa", " Jane@Example.com ", "(555) 010-2000",
			"2026-11-20T10:00:00Z", "", "1.5", "vzew_retention", "https://hooks.acme.example/in", "consent.revoked", `{"type":4,"timestamp":1}`},
		{"Ärzte 👩‍⚕️", "HTTPS://Forms.Example:443", "https://ä.example/😀", "J'accepte 😀\t(𝄞)\r\n", "tcpa ✓", "", "+44 20 7946 0958",
			"2026-11-20T10:00:00.123456789+05:30", "2030-01-01T00:00:00Z", "0.000001", "", "http://hooks.acme.example:8080/x?y=1", "video.failed", `{}`},
		{"A", "http://localhost:8080", "x", " ", "", "a@b", "5550102000", "0001-01-01T00:00:00.0000001Z", "9999-12-31T23:59:59.9999999Z",
			"9223372036854.775807", "admin", "https://127.0.0.1/", "nope", `[]`},
		{"", "https://a.example/form", "https://a.example/\u0000", "I agree\u0000", "\u0007", "nope", "+", "9999-12-31T23:59:59.999999999Z",
			"2026-11-21T12:00:00Z", "-0.000001", "vzew_retention", "ftp://x", "consent.revoked", `{"type":"4"}`},
		{"\u2028", "https://xn--nxasmq6b.example", "https://a.example", "\ufeffI agree", "TCPA", "JANE@EXAMPLE.COM", "0015550102000",
			"0000-01-01T00:00:00-23:59", "", "0.1234567", "vzew_retention", "https://[::1]/", "wallet.low_balance", `{"a":"\ud800"}`},
	} {
		f.Add(v.name, v.allowedOrigin, v.origin, v.text, v.typ, v.email, v.mobile, v.created, v.expires, v.balance, v.permission, v.hook, v.event, v.eventJSON)
	}
	stores := newStores(f)
	f.Fuzz(func(t *testing.T, name, allowedOrigin, origin, text, typ, email, mobile, created, expires, balance, permission, hook, event, eventJSON string) {
		token := map[string]any{"token": "a-secret-of-sixteen-bytes"}
		if permission != "" {
			token["permissions"] = []string{permission}
		}
		if expires != "" {
			token["expires_at"] = expires
		}
		file := map[string]any{
			"companies": []any{
				map[string]any{"id": "a", "name": name, "balance": balance, "third_party_verification_enabled": true, "authorized_third_parties": []string{"b"},
					"properties": []any{map[string]any{"id": "p", "name": name, "allowed_origins": []string{allowedOrigin}}},
					"tokens":     []any{token},
					"webhooks":   []any{map[string]any{"url": hook, "events": []string{event}}}},
				map[string]any{"id": "b", "name": "B"},
			},
			"sessions": []any{map[string]any{"id": "s", "company_id": "a", "property_id": "p", "created_at": created,
				"events": []json.RawMessage{json.RawMessage(eventJSON)}}},
			"certificates": []any{map[string]any{"id": "c", "company_id": "a", "property_id": "p", "session_id": "s", "created_at": created,
				"origin": origin, "email": email, "mobile": mobile,
				"consents": []any{map[string]any{"text": text, "types": []string{typ}, "opt_in_at": created}, map[string]any{"text": name}}}},
		}
		data, err := json.Marshal(file)
		if err != nil {
			return // eventJSON is not JSON
		}
		parsed, err := seed.Parse(bytes.NewReader(data))
		if err != nil {
			return
		}
		stores.check(t, parsed)
	})
}
