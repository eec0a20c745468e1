package httpadapter_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/retain"
	"github.com/consentkit/consentkit/wallet"
)

// keyed is request r sent with an Idempotency-Key (D40).
func keyed(r request, key string) request {
	r.header = http.Header{httpadapter.IdempotencyHeader: {key}}
	return r
}

// ledger returns the company's ledger entries of kind.
func (e *env) ledger(t testing.TB, company string, kind wallet.EntryKind) []*wallet.Entry {
	t.Helper()
	var out []*wallet.Entry
	must(t, e.store.View(ctx, func(tx consent.Tx) error {
		all, err := tx.Ledger(ctx, company)
		out = nil
		for _, en := range all {
			if en.Kind == kind {
				out = append(out, en)
			}
		}
		return err
	}))
	return out
}

// paidCases are the Idempotent routes, each with a call that succeeds once
// and the ledger kind it charges ("" for opt-out, which charges nothing but
// revokes).
var paidCases = []struct {
	name string
	req  request
	kind wallet.EntryKind
}{
	{"match", request{path: "/verify/match", token: acmeToken, body: matchBody("cert-1", "acme", consentText)}, wallet.ExactMatch},
	{"partial-match", request{path: "/api/verify/partial-match", token: acmeToken, body: termBody("cert-1", "acme", "acme")}, wallet.PartialMatch},
	{"certificate-info", request{path: "/verify/certificate-info", token: acmeToken,
		body: `{"certificate_id":"cert-1","company_id":"acme","property_id":"acme-web"}`}, wallet.CertificateInfo},
	{"session retention", request{path: "/verify/session/acme", token: acmeToken, body: `{"session_id":"s2"}`}, wallet.SessionRetention},
	{"certificate retention", request{path: "/verify/certificate/acme", token: acmeToken, body: `{"session_id":"s1"}`}, wallet.CertificateRetention},
	{"retain", request{path: "/api/integrations/acme/retain/s2", token: acmeToken}, wallet.RetainSingle},
	{"retain batch", request{path: "/api/integrations/acme/retain/batch", token: acmeToken, body: batchBody("s1", "s2")}, wallet.RetainBatch},
	{"opt-out", request{path: "/opt-out", body: `{"company_id":"acme","email":"jane@example.com"}`}, ""},
}

// TestIdempotentConcurrentCalls: 20 identical calls with one key, at once,
// on two instances, on every store and every paid or state-changing route → the operation
// happens once (one ledger entry per charge, the balance debited once) and
// all 20 answers are the same bytes, 19 of them replayed (D40).
func TestIdempotentConcurrentCalls(t *testing.T) {
	prices := wallet.DefaultPrices()
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		for _, pc := range paidCases {
			t.Run(pc.name, func(t *testing.T) {
				e := setup(t, open(t))
				h := e.handler(t, httpadapter.Config{OptOutPerMinute: 100})
				// A second instance on the same store: calls with one key
				// on two instances are kept apart by the store alone.
				other, err := consentkit.NewService(e.store, consentkit.Config{Now: e.clock.Now})
				must(t, err)
				h2, err := httpadapter.New(httpadapter.Config{Service: other, OptOutPerMinute: 100})
				must(t, err)
				before := e.balance(t, "acme")
				const n = 20
				recs := make([]*bytes.Buffer, n)
				codes := make([]int, n)
				replayed := make([]bool, n)
				var wg sync.WaitGroup
				for i := range n {
					wg.Go(func() {
						inst := h
						if i%2 == 1 {
							inst = h2
						}
						rec := serve(inst, keyed(pc.req, "key-"+strings.ReplaceAll(pc.name, " ", "-")))
						recs[i], codes[i] = rec.Body, rec.Code
						replayed[i] = rec.Header().Get(httpadapter.ReplayedHeader) == "true"
					})
				}
				wg.Wait()
				fresh := 0
				for i := range n {
					if codes[i] != http.StatusOK {
						t.Fatalf("call %d: status %d, body %s", i, codes[i], recs[i])
					}
					if !bytes.Equal(recs[i].Bytes(), recs[0].Bytes()) {
						t.Errorf("call %d answered\n%s\nwhile call 0 answered\n%s", i, recs[i], recs[0])
					}
					if !replayed[i] {
						fresh++
					}
				}
				if fresh != 1 {
					t.Errorf("%d answers were not marked replayed; want exactly 1", fresh)
				}
				var charge wallet.Amount
				if pc.kind != "" {
					entries := e.ledger(t, "acme", pc.kind)
					want := 1
					if pc.kind == wallet.RetainBatch {
						want = 2 // one per retained session of the one batch
					}
					if pc.kind == wallet.CertificateInfo && prices.Of(pc.kind) == 0 {
						want = len(entries) // free: whether a zero entry is written is not this test's concern
					}
					if len(entries) != want {
						t.Errorf("%d ledger entries of %s; want %d", len(entries), pc.kind, want)
					}
					charge = prices.Of(pc.kind) * wallet.Amount(want)
				} else {
					var revs []*consent.Revocation
					must(t, e.store.View(ctx, func(tx consent.Tx) (err error) {
						revs, err = tx.Revocations(ctx, "acme")
						return err
					}))
					if len(revs) != 1 {
						t.Errorf("%d revocations recorded; want 1", len(revs))
					}
				}
				if got := e.balance(t, "acme"); got != before-charge {
					t.Errorf("balance %v after 20 calls; want %v (charged once)", got, before-charge)
				}
			})
		}
	})
}

// TestIdempotencyRules checks the rules of D40 on every store: replay byte
// for byte, another request with the key, scopes, which answers are kept,
// malformed keys, and expiry after 24 hours with pruning.
func TestIdempotencyRules(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e := setup(t, open(t))
		h := e.handler(t, httpadapter.Config{})
		match := request{path: "/verify/match", token: acmeToken, body: matchBody("cert-1", "acme", consentText)}

		first := serve(h, keyed(match, "k1"))
		if first.Code != 200 || first.Header().Get(httpadapter.ReplayedHeader) != "" {
			t.Fatalf("first call: %d %v %s", first.Code, first.Header(), first.Body)
		}
		again := serve(h, keyed(match, "k1"))
		if again.Code != 200 || again.Header().Get(httpadapter.ReplayedHeader) != "true" || !bytes.Equal(again.Body.Bytes(), first.Body.Bytes()) {
			t.Errorf("second call: %d replayed=%q %s; want the first answer replayed", again.Code, again.Header().Get(httpadapter.ReplayedHeader), again.Body)
		}
		// The same request with other white space and member order is
		// the same request.
		reordered := match
		reordered.body = `{ "consent": "` + consentText + `", "company_id": "acme", "certificate_id": "cert-1" }`
		if rec := serve(h, keyed(reordered, "k1")); rec.Code != 200 || rec.Header().Get(httpadapter.ReplayedHeader) != "true" {
			t.Errorf("the same request reordered: %d %s; want a replay", rec.Code, rec.Body)
		}
		// The /api/ spelling is the same endpoint (D30): a retry sent
		// through it replays the first answer.
		apiSpelling := match
		apiSpelling.path = "/api/verify/match"
		if rec := serve(h, keyed(apiSpelling, "k1")); rec.Code != 200 || rec.Header().Get(httpadapter.ReplayedHeader) != "true" ||
			!bytes.Equal(rec.Body.Bytes(), first.Body.Bytes()) {
			t.Errorf("the same request through /api/verify/match: %d replayed=%q %s; want the first answer replayed",
				rec.Code, rec.Header().Get(httpadapter.ReplayedHeader), rec.Body)
		}
		if n := len(e.ledger(t, "acme", wallet.ExactMatch)); n != 1 {
			t.Errorf("%d exact-match charges after four calls with one key; want 1", n)
		}

		// Another body, or another route, with the key: 422, nothing done.
		other := request{path: "/verify/match", token: acmeToken, body: matchBody("cert-2", "acme", consentText)}
		rec := serve(h, keyed(other, "k1"))
		if rec.Code != http.StatusUnprocessableEntity || !strings.Contains(rec.Body.String(), "Idempotency-Key") {
			t.Errorf("another body with the key: %d %s; want 422", rec.Code, rec.Body)
		}
		partial := request{path: "/verify/partial-match", token: acmeToken, body: termBody("cert-1", "acme", "acme")}
		if rec := serve(h, keyed(partial, "k1")); rec.Code != http.StatusUnprocessableEntity {
			t.Errorf("another route with the key: %d %s; want 422", rec.Code, rec.Body)
		}
		if rec := serve(h, keyed(match, "k1")); rec.Code != 200 || !bytes.Equal(rec.Body.Bytes(), first.Body.Bytes()) {
			t.Errorf("after the 422s the key still replays the first answer: %d %s", rec.Code, rec.Body)
		}
		if n := len(e.ledger(t, "acme", wallet.PartialMatch)) + len(e.ledger(t, "acme", wallet.ExactMatch)); n != 1 {
			t.Errorf("%d charges; want still 1", n)
		}

		// Keys are the company's: buyer's k1 is not acme's.
		buyerReq := request{path: "/verify/match", token: buyerToken, body: matchBody("cert-1", "buyer", consentText, `,"originator_company_id":"acme"`)}
		if rec := serve(h, keyed(buyerReq, "k1")); rec.Code != 200 || rec.Header().Get(httpadapter.ReplayedHeader) != "" {
			t.Errorf("another company's k1: %d %s; want a fresh 200", rec.Code, rec.Body)
		}

		// 409 is kept and replayed; 404 and 402 are not (a retry may
		// succeed).
		conflict := request{path: "/api/integrations/acme/retain/s-retained", token: acmeToken}
		c1 := serve(h, keyed(conflict, "k409"))
		c2 := serve(h, keyed(conflict, "k409"))
		if c1.Code != 409 || c2.Code != 409 || c2.Header().Get(httpadapter.ReplayedHeader) != "true" || !bytes.Equal(c1.Body.Bytes(), c2.Body.Bytes()) {
			t.Errorf("409 twice: %d %s / %d replayed=%q %s; want the 409 kept and replayed", c1.Code, c1.Body, c2.Code,
				c2.Header().Get(httpadapter.ReplayedHeader), c2.Body)
		}
		poor := request{path: "/api/integrations/poor/retain/s-poor", token: poorToken}
		if rec := serve(h, keyed(poor, "k402")); rec.Code != 402 {
			t.Fatalf("poor retain: %d %s; want 402", rec.Code, rec.Body)
		}
		_, err := e.svc.TopUp(ctx, "poor", wallet.Dollar, "top-up")
		must(t, err)
		if rec := serve(h, keyed(poor, "k402")); rec.Code != 200 || rec.Header().Get(httpadapter.ReplayedHeader) != "" {
			t.Errorf("after a top-up the same key: %d %s; want a fresh 200 (402s are not kept)", rec.Code, rec.Body)
		}
		missing := request{path: "/verify/match", token: acmeToken, body: matchBody("cert-9", "acme", consentText)}
		if rec := serve(h, keyed(missing, "k404")); rec.Code != 404 {
			t.Errorf("unknown certificate: %d %s", rec.Code, rec.Body)
		}
		if rec := serve(h, keyed(missing, "k404")); rec.Header().Get(httpadapter.ReplayedHeader) != "" {
			t.Errorf("a 404 was replayed; 4xx answers other than 409 and 422 are not kept")
		}

		// Malformed keys.
		for name, hd := range map[string]http.Header{
			"empty":     {httpadapter.IdempotencyHeader: {""}},
			"space":     {httpadapter.IdempotencyHeader: {"a b"}},
			"too long":  {httpadapter.IdempotencyHeader: {strings.Repeat("k", consent.MaxIdempotencyKey+1)}},
			"non-ASCII": {httpadapter.IdempotencyHeader: {"clé"}},
			"two keys":  {httpadapter.IdempotencyHeader: {"a", "b"}},
		} {
			r := match
			r.header = hd
			if rec := serve(h, r); rec.Code != 400 {
				t.Errorf("%s key: %d %s; want 400", name, rec.Code, rec.Body)
			}
		}
		if rec := serve(h, keyed(match, strings.Repeat("k", consent.MaxIdempotencyKey))); rec.Code != 200 {
			t.Errorf("a key of %d characters: %d %s", consent.MaxIdempotencyKey, rec.Code, rec.Body)
		}

		// Opt-out keys are the client address's and the company's.
		optout := request{path: "/opt-out", body: `{"company_id":"acme","certificate_id":"cert-2"}`}
		o1 := serve(h, keyed(optout, "ko"))
		o2 := serve(h, keyed(optout, "ko"))
		fromElsewhere := optout
		fromElsewhere.remote = "198.51.100.7:1234"
		o3 := serve(h, keyed(fromElsewhere, "ko"))
		if o1.Code != 200 || o2.Header().Get(httpadapter.ReplayedHeader) != "true" || !bytes.Equal(o1.Body.Bytes(), o2.Body.Bytes()) {
			t.Errorf("opt-out sent twice: %d %s / %s", o1.Code, o1.Body, o2.Body)
		}
		if o3.Code != 200 || o3.Header().Get(httpadapter.ReplayedHeader) != "" {
			t.Errorf("opt-out with the key from another address: %d %s; want a fresh call", o3.Code, o3.Body)
		}

		// After 24 hours the key is free again, and the purge's job
		// prunes it.
		e.clock.t = now.Add(consent.IdempotencyTTL + time.Second)
		if rec := serve(h, keyed(match, "k1")); rec.Code != 200 || rec.Header().Get(httpadapter.ReplayedHeader) != "" {
			t.Errorf("k1 after 24 h: %d %s; want a fresh call", rec.Code, rec.Body)
		}
		p, err := retain.NewPurger(retain.PurgeConfig{Service: e.svc, Videos: retain.Dir{Root: t.TempDir()}, Pause: -1, Batch: 2})
		must(t, err)
		pruned, err := p.PruneKeys(ctx)
		must(t, err)
		// Stored before the clock moved: acme's k1 was replaced by the
		// fresh call; buyer's k1, k409, k402, the long key and the two
		// opt-out keys remain to prune.
		if pruned != 6 {
			t.Errorf("PruneKeys removed %d keys; want 6", pruned)
		}
		if rec := serve(h, keyed(match, "k1")); rec.Header().Get(httpadapter.ReplayedHeader) != "true" {
			t.Errorf("the fresh k1 was pruned too: %d %s", rec.Code, rec.Body)
		}
	})
}

// gatedStore holds an Update that carries an idempotency key until gate is
// closed, saying on entered that it waits.
type gatedStore struct {
	consent.Store
	entered chan struct{}
	gate    chan struct{}
}

func (g *gatedStore) Update(ctx context.Context, fn func(consent.Tx) error) error {
	if consentkit.IdempotencyFrom(ctx) != nil {
		select {
		case g.entered <- struct{}{}:
		default:
		}
		<-g.gate
	}
	return g.Store.Update(ctx, fn)
}

// TestIdempotencyInFlight: a second call with the key of a call still
// running waits for it up to consentkit.Config.IdempotencyWait, then gets 409;
// once the first is done, the key replays its answer.
func TestIdempotencyInFlight(t *testing.T) {
	e := setup(t, teststore.Memory(t))
	g := &gatedStore{Store: e.store, entered: make(chan struct{}, 1), gate: make(chan struct{})}
	svc, err := consentkit.NewService(g, consentkit.Config{Now: e.clock.Now, IdempotencyWait: 50 * time.Millisecond})
	must(t, err)
	e.svc = svc
	h := e.handler(t, httpadapter.Config{})
	match := keyed(request{path: "/verify/match", token: acmeToken, body: matchBody("cert-1", "acme", consentText)}, "slow")

	done := make(chan []byte)
	go func() { done <- serve(h, match).Body.Bytes() }()
	select {
	case <-g.entered:
	case b := <-done:
		t.Fatalf("the first call never reached the store with its key: %s", b)
	}
	rec := serve(h, match)
	if rec.Code != http.StatusConflict || !strings.Contains(rec.Body.String(), "in progress") {
		t.Errorf("while the first runs: %d %s; want 409", rec.Code, rec.Body)
	}
	close(g.gate)
	first := <-done
	rec = serve(h, match)
	if rec.Code != 200 || !bytes.Equal(rec.Body.Bytes(), first) {
		t.Errorf("after it: %d %s; want %s replayed", rec.Code, rec.Body, first)
	}
	if n := len(e.ledger(t, "acme", wallet.ExactMatch)); n != 1 {
		t.Errorf("%d charges; want 1", n)
	}
}

// TestIdempotencyDocumented: every Idempotent route, and only those, is a
// POST that documents the header and 422.
func TestIdempotencyDocumented(t *testing.T) {
	e := setup(t, teststore.Memory(t))
	h, err := httpadapter.New(httpadapter.Config{Service: e.svc})
	must(t, err)
	doc := h.OpenAPI()
	paths := doc["paths"].(map[string]any)
	n := 0
	for _, rt := range h.Routes() {
		if !rt.Idempotent {
			continue
		}
		n++
		op := paths[rt.Pattern].(map[string]any)[strings.ToLower(rt.Method)]
		s := fmt.Sprint(op)
		if rt.Method != http.MethodPost || !strings.Contains(s, httpadapter.IdempotencyHeader) || !strings.Contains(s, "422") {
			t.Errorf("%s %s: the operation does not document the key: %s", rt.Method, rt.Pattern, s)
		}
	}
	// The five /verify/ routes are also under /api; the operator's top-up
	// is no paid case, and requires its key.
	if n != len(paidCases)+5+1 {
		t.Errorf("%d Idempotent routes; want %d", n, len(paidCases)+5+1)
	}
	for _, rt := range h.Routes() {
		if rt.RequireKey && !rt.Idempotent {
			t.Errorf("%s %s requires a key it does not take", rt.Method, rt.Pattern)
		}
		if !rt.Idempotent {
			continue
		}
		op := paths[rt.Pattern].(map[string]any)[strings.ToLower(rt.Method)].(map[string]any)
		for _, p := range op["parameters"].([]map[string]any) {
			if p["name"] == httpadapter.IdempotencyHeader && p["required"] != rt.RequireKey {
				t.Errorf("%s %s: the key's parameter says required %v", rt.Method, rt.Pattern, p["required"])
			}
		}
	}
}

// BenchmarkKeyedMatch measures what an Idempotency-Key costs a match, per
// store: a fresh key each call (claim, answer, store the body) against no
// key, and a replay of one key.
//
//	go test -run '^$' -bench KeyedMatch -benchtime 2000x ./httpadapter
func BenchmarkKeyedMatch(b *testing.B) {
	for _, k := range teststore.Kinds {
		for _, mode := range []string{"no key", "fresh key", "replay"} {
			b.Run(k.Name+"/"+strings.ReplaceAll(mode, " ", "-"), func(b *testing.B) {
				e := setup(b, k.Open(b))
				_, err := e.svc.TopUp(ctx, "acme", 1_000_000*wallet.Dollar, "bench")
				must(b, err)
				h := e.handler(b, httpadapter.Config{VerifyPerMinute: 1 << 30})
				match := request{path: "/verify/match", token: acmeToken, body: matchBody("cert-1", "acme", consentText)}
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					r := match
					switch mode {
					case "fresh key":
						r = keyed(match, fmt.Sprint("bench-", i))
					case "replay":
						r = keyed(match, "bench")
					}
					if rec := serve(h, r); rec.Code != 200 {
						b.Fatalf("%d %s", rec.Code, rec.Body)
					}
				}
			})
		}
	}
}
