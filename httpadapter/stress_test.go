package httpadapter_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/wallet"
)

// stressOpsVar sets how many operations TestStress runs per store (default
// stressOps; a fifth of it with -short).
const stressOpsVar = "CONSENTKIT_STRESS_OPS"

const (
	stressOps     = 10_000
	stressWorkers = 8
)

// TestStress: goroutines mix every endpoint of the Handler against the real
// handler on each store — the SQL stores with group commit on (their
// default), so concurrent calls share transactions:
//
//   - first-party match, partial match and certificate-info, under both
//     spellings (/verify/… and /api/verify/…, D30), and third-party
//     verification by an authorized buyer (D9), who pays;
//   - retention four ways: the Retain API single and batch, /verify/session
//     and /verify/certificate (D22–D25), on sessions with and without
//     certificates, revoked ones included (D27);
//   - opt-outs by certificate id, e-mail and mobile (D16–D18);
//   - charges racing for the last cents of a nearly empty wallet (D4), and
//     top-ups of it through the Go API;
//   - tokens issued and revoked while in use (D6);
//   - keyed requests sent again: a stored answer is replayed byte for byte,
//     another one is not (D40);
//   - browser capture (D32–D35): sessions started, chunks sent in order, sent
//     again, sent with other bytes, ahead of their turn or with another
//     session's upload token, consents (some carrying the last chunk) racing
//     each other and the chunks, and consents refused after their last chunk
//     was written in their transaction (in a group-commit batch only that
//     call's work may be undone); captured certificates are then verified,
//     opted out and retained like the others;
//   - the session status and video reads, the keys, the OpenAPI document,
//     the scripts and the capture preflights.
//
// Every answer must be one its call may get (a refusal only where one is
// possible). After the run, from the store:
//   - every wallet's balance is its credits minus its debits, and its
//     running balance in ledger order never went below zero; every top-up
//     is one credit;
//   - every 200 of a paid call has exactly one ledger entry (a replay of a
//     key none), per company, kind and certificate or session, and every
//     debit has its 200;
//   - no session was charged for its retention twice: at most one charge of
//     the session retentions and one of /verify/certificate, which charges
//     again only for certificates not retained yet; a session is retained
//     exactly when it was charged, a certificate exactly when its session
//     was charged by /verify/certificate;
//   - a verification that started after the opt-out of its certificate had
//     answered was refused and charged nothing, and one refused as opted
//     out ended after an opt-out of its certificate started; a call with a
//     token revoked before it was refused (401), one with a live token not;
//     a status read after a retention answered shows it retained, and one
//     showing it retained ended after a retention started;
//   - every chunk answered 200 is stored, once, at its seq, with its bytes,
//     the stored chunks are in seq order, and every stored chunk was
//     answered 2xx (a refused call's chunk is gone); a consent answered 201 issued
//     exactly one certificate, the reserved one, whose recording hash is that
//     of the stored chunks (nothing was appended after it), and a session
//     without a 201 has no certificate;
//   - on the SQL stores, group-commit batches held more than one call.
//
// The seed is printed; CONSENTKIT_SEED replays each worker's choices (the
// interleaving of the workers is the scheduler's).
func TestStress(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv(seedVar); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", seedVar, v, err)
		}
		seed = s
	}
	ops := stressOps
	if testing.Short() {
		ops = stressOps / 5
	}
	if v := os.Getenv(stressOpsVar); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < stressWorkers {
			t.Fatalf("%s=%q: want a number of operations of at least %d", stressOpsVar, v, stressWorkers)
		}
		ops = n
	}
	t.Logf("seed %d, %d operations per store (replay with %s=%d %s=%d)", seed, ops, seedVar, seed, stressOpsVar, ops)
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		stressRun(t, open(t), seed, ops)
	})
}

// stressCert is a certificate that verifications and opt-outs pick.
type stressCert struct {
	id, property, session, text string
	email, mobile               string // how an opt-out may name it besides its id; "" none
}

// stressCapture is a session started through POST /capture/sessions.
type stressCapture struct {
	session, cert, token string
	// next is the highest next_seq answered for it: where a chunk most
	// likely fits.
	next atomic.Int64
}

// stressPool is what the workers pick from and add to: certificates,
// sessions to retain, capture sessions.
type stressPool struct {
	mu       sync.Mutex
	certs    []stressCert
	sessions []string
	captures []*stressCapture
}

func (p *stressPool) cert(n int) stressCert {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.certs[n%len(p.certs)]
}

func (p *stressPool) session(n int) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sessions[n%len(p.sessions)]
}

// capture returns a capture session, nil when none was started yet: most
// often one of the last few started, so that chunks and consents of one
// session race each other.
func (p *stressPool) capture(n int) *stressCapture {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.captures) == 0 {
		return nil
	}
	if n%4 != 0 {
		return p.captures[max(0, len(p.captures)-1-n/4%3)]
	}
	return p.captures[n/4%len(p.captures)]
}

// stressCall is one request of TestStress and its answer.
type stressCall struct {
	op       string           // the kind of call: see stressStep
	company  string           // who pays; "" when no one
	kind     wallet.EntryKind // what a 200 costs; "" when it is free
	cert     string           // the certificate it verifies; "" when none
	sessions []string         // the sessions a retention or a status read names
	key      string           // Idempotency-Key; "" when none
	want     []int            // the statuses it may get
	capture  *stressCapture   // of a chunk or consent
	seq      int              // a chunk's seq, or a consent's last chunk's; -1 none
	variant  int              // which bytes a chunk of that seq carried

	start, end time.Time
	status     int
	replayed   bool
	// From the answer.
	retained  []string // sessions it retained: a retention's, a batch's successes
	certIDs   []string // /verify/certificate: the session's certificates
	revoked   []string // opt-out: certificates revoked
	retention string   // status read: retention_status
	issued    string   // consent: the certificate id answered
	nextSeq   int      // chunk: next_seq
	charged   bool     // a 200 of a paid call, not a replay
}

// stressTopUp is a top-up made during the run.
type stressTopUp struct {
	company, reference string
	amount             wallet.Amount
}

type stressToken struct {
	id, secret string
	revoked    bool // RevokeToken returned
}

// stressWorker is what one goroutine keeps.
type stressWorker struct {
	calls  []*stressCall
	topUps []stressTopUp
	tokens []stressToken // issued by this worker, live or revoked
}

// The capture fixture: a property of acme that allows formOrigin.
const (
	stressProperty = "acme-form"
	stressConsent  = "I agree to be called by Acme."
)

func stressRun(t *testing.T, st consent.Store, seed uint64, ops int) {
	began := time.Now()
	e := setup(t, st)
	_, err := e.svc.AddProperty(ctx, consentkit.PropertyParams{ID: stressProperty, CompanyID: "acme", Name: "Quote form",
		AllowedOrigins: []string{formOrigin}})
	must(t, err)
	// Sessions of acme to retain: the first of them have a certificate
	// each, which verifications and opt-outs pick.
	sessions := max(400, ops/25)
	certs := sessions * 3 / 10
	pool := &stressPool{}
	for from := 0; from < sessions; from += 100 {
		var made []stressCert
		must(t, st.Update(ctx, func(tx consent.Tx) error {
			made = made[:0] // a store may run this more than once
			for i := from; i < min(from+100, sessions); i++ {
				id := fmt.Sprint("st-", i)
				if _, err := e.svc.StartSessionTx(ctx, tx, consentkit.SessionParams{ID: id, CompanyID: "acme", PropertyID: "acme-web"}); err != nil {
					return err
				}
				if i >= certs {
					continue
				}
				c := stressCert{id: fmt.Sprint("sc-", i), property: "acme-web", session: id, text: consentText,
					email: fmt.Sprintf("lead%d@example.com", i), mobile: fmt.Sprintf("555-300-%04d", i)}
				_, err := e.svc.IssueCertificateTx(ctx, tx, consentkit.CertificateParams{
					ID: c.id, CompanyID: "acme", PropertyID: "acme-web", SessionID: id,
					Email: c.email, Mobile: c.mobile, Origin: "https://acme.example/quote",
					Records: []consent.Record{{Text: consentText, Types: []string{"tcpa"}, OptInAt: created}},
				})
				if err != nil {
					return err
				}
				made = append(made, c)
			}
			return nil
		}))
		pool.certs = append(pool.certs, made...)
	}
	for i := range sessions {
		pool.sessions = append(pool.sessions, fmt.Sprint("st-", i))
	}
	// acme and buyer can pay for everything; poor is kept nearly empty, so
	// that charges race for its last cents.
	_, err = e.svc.TopUp(ctx, "acme", wallet.Amount(10_000+ops/20)*wallet.Dollar, "stress")
	must(t, err)
	_, err = e.svc.TopUp(ctx, "buyer", wallet.Amount(100+ops/100)*wallet.Dollar, "stress")
	must(t, err)
	before := stressLedgers(t, e)
	h := e.handler(t, httpadapter.Config{OptOutPerMinute: -1, RetainPerMinute: -1, VerifyPerMinute: -1,
		CaptureStartsPerMinute: -1, CapturePropertyPerMinute: -1, CapturePerMinute: -1,
		CaptureBytesPerMinute: -1, CapturePropertyBytesPerMinute: -1})
	type grouped interface{ GroupStats() (batches, calls int64) }
	g, isGrouped := st.(grouped)
	var b0, c0 int64
	if isGrouped {
		b0, c0 = g.GroupStats()
	}
	t.Logf("fixture: %d sessions, %d certificates, in %v", sessions, certs, time.Since(began).Round(time.Millisecond))

	began = time.Now()
	workers := make([]*stressWorker, stressWorkers)
	var wg sync.WaitGroup
	for w := range stressWorkers {
		workers[w] = &stressWorker{}
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for i := range ops / stressWorkers {
				stressStep(t, e, h, pool, rng, workers[w], w, i)
			}
		})
	}
	wg.Wait()
	var calls []*stressCall
	var topUps []stressTopUp
	for _, w := range workers {
		calls = append(calls, w.calls...)
		topUps = append(topUps, w.topUps...)
	}
	t.Logf("%d operations, %d calls in %v", ops, len(calls), time.Since(began).Round(time.Millisecond))
	if isGrouped {
		b1, c1 := g.GroupStats()
		batches, members := b1-b0, c1-c0
		t.Logf("group commit: %d Update calls in %d batches (%.2f a batch)", members, batches, float64(members)/float64(max(batches, 1)))
		if members <= batches {
			t.Errorf("group commit: %d Update calls in %d batches: no batch held more than one call, so the grouped path was not tested", members, batches)
		}
	}
	began = time.Now()
	stressCheck(t, e, pool, before, calls, topUps)
	t.Logf("checked in %v", time.Since(began).Round(time.Millisecond))
}

// stressEvents is the chunk that a chunk call sends: its seq and variant
// are in it, so the stored chunks say which call stored them.
func stressEvents(session string, seq, variant int) string {
	return fmt.Sprintf(`[{"type":3,"data":{"source":2,"id":%d,"v":%d,"s":%q},"timestamp":%d}]`, seq, variant, session, 1795301391553+seq)
}

// stressStep makes one random operation, and keeps its calls in me.
func stressStep(t *testing.T, e *env, h http.Handler, pool *stressPool, rng *rand.Rand, me *stressWorker, w, i int) {
	n := rng.IntN(100)
	pick := rng.IntN(1 << 30) // an index into what the pool holds when it is used
	api := ""
	if rng.IntN(2) == 0 {
		api = "/api" // both spellings (D30)
	}
	c := &stressCall{company: "acme", seq: -1}
	var do func(header http.Header) *httptest.ResponseRecorder
	post := func(path, token, body string) {
		do = func(header http.Header) *httptest.ResponseRecorder {
			return serve(h, request{path: path, token: token, body: body, header: header})
		}
	}
	// A browser's call from formOrigin.
	browser := func(method, path, token, body string) {
		do = func(http.Header) *httptest.ResponseRecorder { return call(h, method, path, formOrigin, token, body) }
	}
	keyed := false // the route takes an Idempotency-Key
	switch {
	case n < 33: // first-party verification
		cert := pool.cert(pick)
		c.cert = cert.id
		keyed = true
		c.want = []int{200, 403} // 403: opted out
		switch {
		case n < 20:
			c.op, c.kind = "match", wallet.ExactMatch
			text := cert.text
			if rng.IntN(4) == 0 {
				text = "not the text"
			}
			post(api+"/verify/match", acmeToken, matchBody(cert.id, "acme", text))
		case n < 27:
			c.op, c.kind = "partial", wallet.PartialMatch
			post(api+"/verify/partial-match", acmeToken, termBody(cert.id, "acme", "agree"))
		default:
			c.op = "info" // free (wallet.DefaultPrices): no ledger entry
			post(api+"/verify/certificate-info", acmeToken,
				fmt.Sprintf(`{"certificate_id":%q,"company_id":"acme","property_id":%q}`, cert.id, cert.property))
		}
	case n < 38:
		// Third-party verification: buyer, authorized by acme, pays; other
		// is not authorized, and learns nothing (D9).
		cert := pool.cert(pick)
		c.cert, c.company, c.op, keyed = cert.id, "buyer", "third", true
		token, body := buyerToken, matchBody(cert.id, "buyer", cert.text, `,"originator_company_id":"acme"`)
		c.kind = wallet.ExactMatch
		if rng.IntN(3) == 0 {
			c.kind, body = wallet.PartialMatch, termBody(cert.id, "buyer", "agree", `,"originator_company_id":"acme"`)
		}
		path := "/verify/match"
		if c.kind == wallet.PartialMatch {
			path = "/verify/partial-match"
		}
		c.want = []int{200, 403}
		if rng.IntN(8) == 0 {
			c.op, c.company, c.kind, c.cert, c.want = "unauthorized", "", "", "", []int{403}
			token, body = otherToken, strings.ReplaceAll(body, `"company_id":"buyer"`, `"company_id":"other"`)
		}
		post(api+path, token, body)
	case n < 44:
		c.op, c.kind, keyed = "retain", wallet.RetainSingle, true
		c.sessions = []string{pool.session(pick)}
		c.want = []int{200, 409}
		post("/api/integrations/acme/retain/"+c.sessions[0], acmeToken, "")
	case n < 47:
		c.op, c.kind, keyed = "batch", wallet.RetainBatch, true
		for range 1 + rng.IntN(10) {
			c.sessions = append(c.sessions, pool.session(rng.IntN(1<<30)))
		}
		c.want = []int{200}
		post("/api/integrations/acme/retain/batch", acmeToken, batchBody(c.sessions...))
	case n < 51:
		c.op, c.kind, keyed = "session", wallet.SessionRetention, true
		c.sessions = []string{pool.session(pick)}
		c.want = []int{200, 409}
		post(api+"/verify/session/acme", acmeToken, fmt.Sprintf(`{"session_id":%q}`, c.sessions[0]))
	case n < 55:
		c.op, c.kind, keyed = "certificate", wallet.CertificateRetention, true
		c.sessions = []string{pool.session(pick)}
		c.want = []int{200, 404, 409} // 404: the session has no certificate
		post(api+"/verify/certificate/acme", acmeToken, fmt.Sprintf(`{"session_id":%q}`, c.sessions[0]))
	case n < 58:
		c.op, c.company, keyed = "optout", "", true
		c.want = []int{200}
		cert := pool.cert(pick)
		body := fmt.Sprintf(`{"company_id":"acme","certificate_id":%q}`, cert.id)
		switch rng.IntN(3) {
		case 1:
			if cert.email != "" {
				body = fmt.Sprintf(`{"company_id":"acme","email":%q}`, " "+strings.ToUpper(cert.email))
			}
		case 2:
			if cert.mobile != "" {
				body = fmt.Sprintf(`{"company_id":"acme","mobile":%q}`, "+1 ("+strings.Replace(cert.mobile, "-", ") ", 1))
			}
		}
		post("/opt-out", "", body)
	case n < 66:
		c.op, c.company, c.cert, c.kind, keyed = "poor", "poor", "cert-poor", wallet.ExactMatch, true
		c.want = []int{200, 402}
		post(api+"/verify/match", poorToken, matchBody("cert-poor", "poor", consentText))
	case n < 69:
		company, amount := "poor", wallet.Amount(1+rng.IntN(3))*wallet.Cent
		if rng.IntN(3) == 0 {
			company, amount = "buyer", wallet.Dollar
		}
		ref := fmt.Sprintf("stress-%d-%d", w, i)
		if _, err := e.svc.TopUp(ctx, company, amount, ref); err != nil {
			t.Errorf("top up: %v", err)
			return
		}
		me.topUps = append(me.topUps, stressTopUp{company, ref, amount})
		return
	case n < 72:
		var live []int
		for k, tok := range me.tokens {
			if !tok.revoked {
				live = append(live, k)
			}
		}
		if len(live) > 0 && rng.IntN(2) == 0 {
			k := live[rng.IntN(len(live))]
			if err := e.svc.RevokeToken(ctx, "acme", me.tokens[k].id); err != nil {
				t.Errorf("revoke token: %v", err)
			}
			me.tokens[k].revoked = true
			return
		}
		tok, secret, err := e.svc.IssueToken(ctx, consentkit.TokenParams{CompanyID: "acme", Permissions: []consent.Permission{consent.PermissionRetention}})
		if err != nil {
			t.Errorf("issue token: %v", err)
			return
		}
		me.tokens = append(me.tokens, stressToken{id: tok.ID, secret: secret})
		return
	case n < 77:
		// A call with one of this worker's tokens: revoked, it is refused;
		// live, it is not.
		if len(me.tokens) == 0 {
			return
		}
		tok := me.tokens[rng.IntN(len(me.tokens))]
		cert := pool.cert(pick)
		c.op, c.cert, c.kind, keyed = "token", cert.id, wallet.ExactMatch, true
		c.want = []int{200, 403}
		if tok.revoked {
			c.op, c.want = "revoked token", []int{401}
		}
		post(api+"/verify/match", tok.secret, matchBody(cert.id, "acme", cert.text))
	case n < 79:
		c.op, c.company, c.want = "start", "", []int{201}
		browser("POST", "/capture/sessions", "", fmt.Sprintf(`{"property_id":%q,"url":%q}`, stressProperty, formPage))
	case n < 88:
		cp := pool.capture(pick)
		if cp == nil {
			return
		}
		c.op, c.company, c.capture = "chunk", "", cp
		next := int(cp.next.Load())
		switch r := rng.IntN(10); {
		case r < 7:
			c.seq = next
		case r < 9:
			c.seq = max(next-1, 0) // sent again
		default:
			c.seq = next + 1 // ahead of its turn
		}
		if rng.IntN(8) == 0 {
			c.variant = 1 // other bytes than another call's of the same seq
		}
		token := cp.token
		c.want = []int{200, 409}
		if rng.IntN(12) == 0 {
			c.op, c.want = "chunk, wrong token", []int{401}
			token = "ckup_wrong"
			if other := pool.capture(pick + 1); other != cp {
				token = other.token
			}
		}
		browser("POST", "/capture/sessions/"+cp.session+"/events", token,
			fmt.Sprintf(`{"seq":%d,"events":%s}`, c.seq, stressEvents(cp.session, c.seq, c.variant)))
	case n < 90:
		cp := pool.capture(pick)
		if cp == nil {
			return
		}
		c.op, c.company, c.capture = "consent", "", cp
		c.want = []int{201, 409} // 409: given already, no events yet, or a tail that does not fit
		tail, email := "", strings.ToLower(cp.session)+"@example.com"
		if rng.IntN(3) == 0 { // the last chunk comes with the consent
			c.seq = int(cp.next.Load())
			tail = fmt.Sprintf(`,"seq":%d,"events":%s`, c.seq, stressEvents(cp.session, c.seq, 0))
			if rng.IntN(3) == 0 {
				// Refused after its last chunk was appended in its
				// transaction: the chunk must go with it, and in a
				// group-commit batch no one else's work.
				c.op, c.want, email = "bad consent", []int{400, 409}, "not an address"
			}
		}
		browser("POST", "/capture/sessions/"+cp.session+"/consent", cp.token,
			fmt.Sprintf(`{"consents":[{"text":%q,"types":["tcpa"]}],"email":%q,"url":%q%s}`,
				stressConsent, email, formPage, tail))
	case n < 94:
		c.op, c.company, c.want = "status", "", []int{200}
		c.sessions = []string{pool.session(pick)}
		path := "/api/integrations/acme/sessions/" + c.sessions[0]
		if rng.IntN(4) == 0 {
			c.op, c.want, path = "video", []int{404}, path+"/video" // never converted here
		}
		do = func(http.Header) *httptest.ResponseRecorder { return call(h, "GET", path, "", acmeToken, "") }
	default:
		c.op, c.company = "misc", ""
		method, path, origin := "GET", "", ""
		switch rng.IntN(7) {
		case 0:
			path, c.want = "/.well-known/consentkit-keys", []int{200}
		case 1:
			path, c.want = "/openapi.json", []int{200}
		case 2:
			path, c.want = "/capture/capture.js", []int{200}
		case 3:
			path, c.want = "/capture/rrweb.js", []int{200, 503} // 503 when the recorder is not installed
		case 4:
			method, path, origin, c.want = "OPTIONS", "/capture/sessions?property_id="+stressProperty, formOrigin, []int{204}
		case 5:
			method, origin, c.want = "OPTIONS", formOrigin, []int{204}
			path = "/capture/sessions?property_id=" + stressProperty
			if cp := pool.capture(pick); cp != nil {
				path = "/capture/sessions/" + cp.session + []string{"/events", "/consent"}[pick%2]
			}
		default:
			method, path, origin, c.want = "OPTIONS", "/capture/sessions?property_id="+stressProperty, evilOrigin, []int{403}
		}
		do = func(http.Header) *httptest.ResponseRecorder { return call(h, method, path, origin, "", "") }
	}
	var header http.Header
	if keyed && rng.IntN(4) == 0 {
		c.key = fmt.Sprintf("k-%d-%d", w, i)
		header = http.Header{httpadapter.IdempotencyHeader: {c.key}}
	}
	first := stressServe(t, pool, do, header, c)
	me.calls = append(me.calls, c)
	if c.key != "" && rng.IntN(2) == 0 { // the client sends it again
		again := *c
		body := stressServe(t, pool, do, header, &again)
		me.calls = append(me.calls, &again)
		// A stored answer — a success, or a 409 or 422 — is replayed
		// byte for byte; another one is not stored, and the call runs
		// again (D40).
		stored := c.status < 300 || c.status == 409 || c.status == 422
		if again.replayed != stored || stored && (again.status != c.status || !bytes.Equal(body, first)) {
			t.Errorf("%s %v %s sent again with key %s: %d %s, replayed %v; first %d %s", c.op, c.sessions, c.cert, c.key,
				again.status, body, again.replayed, c.status, first)
		}
	}
}

// stressServe makes c's call, reads its answer into c and returns its body.
func stressServe(t *testing.T, pool *stressPool, do func(http.Header) *httptest.ResponseRecorder, header http.Header, c *stressCall) []byte {
	// A replay starts from a copy of the first call: nothing of its answer.
	c.retained, c.certIDs, c.revoked, c.retention, c.issued, c.nextSeq, c.charged = nil, nil, nil, "", "", 0, false
	c.start = time.Now()
	rec := do(header)
	c.end = time.Now()
	c.status, c.replayed = rec.Code, rec.Header().Get(httpadapter.ReplayedHeader) == "true"
	if !slices.Contains(c.want, rec.Code) {
		t.Errorf("%s %v %s: %d %s; want one of %v", c.op, c.sessions, c.cert, rec.Code, rec.Body, c.want)
		return rec.Body.Bytes()
	}
	if rec.Code >= 300 && c.op != "consent" {
		return rec.Body.Bytes()
	}
	var body struct {
		Retained       int      `json:"retained"`
		Certificates   []string `json:"certificates"`
		CertificateIDs []string `json:"certificate_ids"`
		Results        []struct {
			SessionID string `json:"sessionId"`
			Success   bool   `json:"success"`
		} `json:"results"`
		RetentionStatus string `json:"retention_status"`
		SessionID       string `json:"session_id"`
		CertificateID   string `json:"certificate_id"`
		UploadToken     string `json:"upload_token"`
		NextSeq         int    `json:"next_seq"`
	}
	if strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Errorf("%s: %v: %s", c.op, err, rec.Body)
		}
	}
	c.charged = c.kind != "" && rec.Code == 200 && !c.replayed
	switch c.op {
	case "retain", "session":
		c.retained = c.sessions
	case "certificate":
		c.retained, c.certIDs = c.sessions, body.CertificateIDs
	case "batch":
		for i, r := range body.Results {
			if i >= len(c.sessions) || r.SessionID != c.sessions[i] {
				t.Errorf("batch %v: results %s", c.sessions, rec.Body)
				break
			}
			if r.Success {
				c.retained = append(c.retained, r.SessionID)
			}
		}
		if len(c.retained) != body.Retained || len(body.Results) != len(c.sessions) {
			t.Errorf("batch %v: %d successes, %d results, retained %d: %s", c.sessions, len(c.retained), len(body.Results), body.Retained, rec.Body)
		}
	case "optout":
		c.revoked = body.Certificates
	case "status":
		c.retention = body.RetentionStatus
	case "start":
		cp := &stressCapture{session: body.SessionID, cert: body.CertificateID, token: body.UploadToken}
		pool.mu.Lock()
		pool.captures = append(pool.captures, cp)
		pool.sessions = append(pool.sessions, cp.session)
		pool.mu.Unlock()
	case "chunk":
		c.nextSeq = body.NextSeq
		if c.nextSeq <= c.seq {
			t.Errorf("chunk %d of %s: 200 with next_seq %d", c.seq, c.capture.session, c.nextSeq)
		}
		for { // the highest next_seq answered
			old := c.capture.next.Load()
			if int64(c.nextSeq) <= old || c.capture.next.CompareAndSwap(old, int64(c.nextSeq)) {
				break
			}
		}
	case "consent":
		c.issued = body.CertificateID
		if c.issued != "" && c.issued != c.capture.cert {
			t.Errorf("consent of %s: %d with certificate %s, reserved %s", c.capture.session, rec.Code, c.issued, c.capture.cert)
		}
		if rec.Code == 201 {
			pool.mu.Lock()
			pool.certs = append(pool.certs, stressCert{id: c.issued, property: stressProperty, session: c.capture.session,
				text: stressConsent, email: strings.ToLower(c.capture.session) + "@example.com"})
			pool.mu.Unlock()
		}
	}
	return rec.Body.Bytes()
}

// stressLedgers returns every company's ledger.
func stressLedgers(t *testing.T, e *env) map[string][]*wallet.Entry {
	t.Helper()
	out := map[string][]*wallet.Entry{}
	must(t, e.store.View(ctx, func(tx consent.Tx) error {
		for _, c := range companies {
			l, err := tx.Ledger(ctx, c)
			if err != nil {
				return err
			}
			out[c] = l
		}
		return nil
	}))
	return out
}

// isSessionRetention reports whether k is the charge of a session's own
// retention (Retain API single or batch, /verify/session).
func isSessionRetention(k wallet.EntryKind) bool {
	return k == wallet.RetainSingle || k == wallet.RetainBatch || k == wallet.SessionRetention
}

func stressCheck(t *testing.T, e *env, pool *stressPool, before map[string][]*wallet.Entry, calls []*stressCall, topUps []stressTopUp) {
	after := stressLedgers(t, e)
	seen := map[string]int{}
	for _, c := range calls {
		seen[fmt.Sprint(c.op, " ", c.status)]++
		if c.replayed {
			seen["replayed"]++
		}
	}
	t.Logf("%d calls: %v", len(calls), seen)
	for _, want := range []string{"match 200", "match 403", "partial 200", "info 200", "info 403", "third 200", "third 403", "unauthorized 403",
		"poor 200", "poor 402", "retain 200", "retain 409", "batch 200", "session 200", "session 409",
		"certificate 200", "certificate 404", "certificate 409", "optout 200", "token 200", "revoked token 401",
		"start 201", "chunk 200", "chunk 409", "chunk, wrong token 401", "consent 201", "consent 409", "bad consent 400",
		"status 200", "video 404", "misc 200", "misc 204", "misc 403", "replayed"} {
		if seen[want] == 0 {
			t.Errorf("no %q in the run: it does not exercise what it checks", want)
		}
	}

	// Balances: credits minus debits, never below zero on the way.
	for _, company := range companies {
		var running wallet.Amount
		for _, en := range after[company] {
			if en.Kind.IsCredit() {
				running += en.Amount
			} else {
				running -= en.Amount
			}
			if running < 0 {
				t.Errorf("%s: the balance went to %v at ledger entry %s", company, running, en.ID)
			}
		}
		if bal := e.balance(t, company); bal != running {
			t.Errorf("%s: balance %v, but its ledger sums to %v", company, bal, running)
		}
	}

	// Ledger entries made during the run, by company, kind and reference.
	type ref struct {
		company string
		kind    wallet.EntryKind
		of      string
	}
	entries := map[ref]int{}
	credits := map[ref]int{}
	for company, l := range after {
		if len(l) < len(before[company]) || !slices.EqualFunc(l[:len(before[company])], before[company],
			func(a, b *wallet.Entry) bool { return a.ID == b.ID }) {
			t.Errorf("%s: the ledger before the run is not the start of the ledger after it", company)
			continue
		}
		for _, en := range l[len(before[company]):] {
			r := ref{company, en.Kind, en.Reference}
			if en.Kind.IsCredit() {
				r.of = fmt.Sprint(en.Reference, " ", en.Amount)
				credits[r]++
				continue
			}
			entries[r]++
		}
	}
	// Every top-up is one credit.
	for _, u := range topUps {
		r := ref{u.company, wallet.TopUp, fmt.Sprint(u.reference, " ", u.amount)}
		if credits[r] != 1 {
			t.Errorf("top-up %s of %v to %s: %d credits", u.reference, u.amount, u.company, credits[r])
		}
		delete(credits, r)
	}
	for r, n := range credits {
		t.Errorf("%s: %d credits %s %s that no top-up made", r.company, n, r.kind, r.of)
	}

	// Every charged 200 has its entry, and every entry its 200.
	answered := map[ref]int{}
	for _, c := range calls {
		if !c.charged {
			continue
		}
		if c.sessions != nil { // a retention: charged per session retained
			for _, s := range c.retained {
				answered[ref{c.company, c.kind, s}]++
			}
			continue
		}
		answered[ref{c.company, c.kind, c.cert}]++
	}
	for r, n := range entries {
		if answered[r] != n {
			t.Errorf("%s %s %s: %d ledger entries for %d charged answers", r.company, r.kind, r.of, n, answered[r])
		}
	}
	for r, n := range answered {
		if entries[r] != n {
			t.Errorf("%s %s %s: %d charged answers for %d ledger entries", r.company, r.kind, r.of, n, entries[r])
		}
	}

	// Retention: per session, in ledger order, at most one charge of its
	// own retention and one of /verify/certificate, and none of its own
	// after /verify/certificate retained it.
	charges := map[string][]wallet.EntryKind{}
	for _, en := range after["acme"] {
		if isSessionRetention(en.Kind) || en.Kind == wallet.CertificateRetention {
			charges[en.Reference] = append(charges[en.Reference], en.Kind)
		}
	}
	for s, kinds := range charges {
		own, certs := 0, 0
		for _, k := range kinds {
			if isSessionRetention(k) {
				own++
				if certs > 0 {
					t.Errorf("session %s charged for its retention (%s) after /verify/certificate retained it: %v", s, k, kinds)
				}
			} else {
				certs++
			}
		}
		if own > 1 || certs > 1 {
			t.Errorf("session %s charged for retention %d times: %v", s, len(kinds), kinds)
		}
	}

	// Opt-outs: a verification that started after the opt-out of its
	// certificate answered is refused, and so charged nothing (above); one
	// refused as opted out ended after such an opt-out started.
	revokedAt := map[string]time.Time{}   // the earliest end of an opt-out answer naming it
	revokeStart := map[string]time.Time{} // the earliest start of one
	for _, c := range calls {
		if c.op != "optout" || c.status != 200 {
			continue
		}
		for _, id := range c.revoked {
			if at, ok := revokedAt[id]; !ok || c.end.Before(at) {
				revokedAt[id] = c.end
			}
			if at, ok := revokeStart[id]; !ok || c.start.Before(at) {
				revokeStart[id] = c.start
			}
		}
	}
	if len(revokedAt) == 0 {
		t.Error("no certificate was revoked in the run")
	}
	late := 0
	for _, c := range calls {
		if c.cert == "" || c.replayed {
			continue
		}
		if c.status == 403 {
			if at, ok := revokeStart[c.cert]; !ok || !at.Before(c.end) {
				t.Errorf("%s of %s refused (403) with no opt-out of it started before it ended", c.op, c.cert)
			}
		}
		at, ok := revokedAt[c.cert]
		if !ok || !c.start.After(at) {
			continue
		}
		late++
		if c.status == 200 {
			t.Errorf("%s of %s started %v after its opt-out answered, and was answered 200", c.op, c.cert, c.start.Sub(at))
		}
	}
	if late == 0 {
		t.Error("no verification came after an opt-out of its certificate")
	}

	// Status reads: retained once a retention answered, and only after one
	// started.
	retainedAt, retainStart := map[string]time.Time{}, map[string]time.Time{}
	for _, c := range calls {
		if c.status != 200 {
			continue
		}
		for _, s := range c.retained {
			if at, ok := retainedAt[s]; !ok || c.end.Before(at) {
				retainedAt[s] = c.end
			}
			if at, ok := retainStart[s]; !ok || c.start.Before(at) {
				retainStart[s] = c.start
			}
		}
	}
	for _, c := range calls {
		if c.op != "status" || c.status != 200 {
			continue
		}
		s := c.sessions[0]
		kept := c.retention == string(consent.RetentionRetained)
		if at, ok := retainedAt[s]; ok && c.start.After(at) && !kept {
			t.Errorf("status of %s read %q, started %v after a retention of it answered", s, c.retention, c.start.Sub(at))
		}
		if at, ok := retainStart[s]; kept && (!ok || !at.Before(c.end)) {
			t.Errorf("status of %s read retained before any retention of it started", s)
		}
	}

	// The store's sessions and certificates against the charges, and the
	// capture sessions against their chunks and consents.
	byCapture := map[*stressCapture][]*stressCall{}
	certRetentions := map[string][]*stressCall{} // the 200s of /verify/certificate by session
	for _, c := range calls {
		if c.capture != nil {
			byCapture[c.capture] = append(byCapture[c.capture], c)
		}
		if c.op == "certificate" && c.status == 200 {
			certRetentions[c.sessions[0]] = append(certRetentions[c.sessions[0]], c)
		}
	}
	must(t, e.store.View(ctx, func(tx consent.Tx) error {
		for _, s := range pool.sessions {
			ses, err := tx.Session(ctx, s)
			if err != nil {
				return err
			}
			kinds := charges[s]
			if kept := ses.RetentionStatus == consent.RetentionRetained; kept != (len(kinds) > 0) {
				t.Errorf("session %s: retention %s with charges %v", s, ses.RetentionStatus, kinds)
			}
			ids, err := tx.CertificatesBySession(ctx, s)
			if err != nil {
				return err
			}
			for _, id := range ids {
				cert, err := tx.Certificate(ctx, id)
				if err != nil {
					return err
				}
				if kept := cert.RetentionStatus == consent.RetentionRetained; kept != slices.Contains(kinds, wallet.CertificateRetention) {
					t.Errorf("certificate %s of session %s: retention %s with charges %v", id, s, cert.RetentionStatus, kinds)
				}
			}
			for _, c := range certRetentions[s] {
				if !slices.Equal(c.certIDs, ids) {
					t.Errorf("/verify/certificate of %s answered certificates %v; the session has %v", s, c.certIDs, ids)
				}
			}
		}
		started := 0
		for _, c := range calls {
			if c.op == "start" && c.status == 201 {
				started++
			}
		}
		if len(pool.captures) != started {
			t.Errorf("%d capture sessions in the pool, %d started", len(pool.captures), started)
		}
		for _, cp := range pool.captures {
			if err := stressCheckCapture(t, tx, cp, byCapture[cp]); err != nil {
				return err
			}
		}
		return nil
	}))
}

// stressCheckCapture checks a capture session's stored chunks and
// certificate against the calls made for it.
func stressCheckCapture(t *testing.T, tx consent.Tx, cp *stressCapture, calls []*stressCall) error {
	stored, err := tx.Events(ctx, cp.session)
	if err != nil {
		return err
	}
	// The stored chunks are in seq order: the chunk at i is one sent as seq i.
	for i, chunk := range stored {
		if string(chunk) != stressEvents(cp.session, i, 0) && string(chunk) != stressEvents(cp.session, i, 1) {
			t.Errorf("capture %s: chunk %d stored is %s", cp.session, i, chunk)
		}
	}
	// Every 200 chunk (and the last chunk of a 201 consent) is stored,
	// once, at its seq, with its bytes; every stored chunk was answered.
	// A consent's tail is dropped only where a chunk of its seq with
	// other bytes was stored while the consent's recording was hashed
	// (D35): the one answered 200 is what the store holds.
	answered := make([]bool, len(stored))
	consents := 0
	var consented *stressCall
	chunkTook := func(seq, variant int) bool {
		return slices.ContainsFunc(calls, func(c *stressCall) bool {
			return c.op == "chunk" && c.status == 200 && c.seq == seq && c.variant == variant
		})
	}
	for _, c := range calls {
		ok := c.op == "chunk" && c.status == 200 || c.op == "consent" && c.status == 201 && c.seq >= 0
		if c.op == "consent" && c.status == 201 {
			consents++
			consented = c
		}
		if !ok {
			continue
		}
		if c.op == "consent" && c.seq < len(stored) && bytes.Equal(stored[c.seq], []byte(stressEvents(cp.session, c.seq, 1-c.variant))) && chunkTook(c.seq, 1-c.variant) {
			continue // the tail dropped for the chunk stored meanwhile
		}
		if c.seq >= len(stored) || !bytes.Equal(stored[c.seq], []byte(stressEvents(cp.session, c.seq, c.variant))) {
			t.Errorf("capture %s: %s of seq %d (variant %d) answered %d, but the store holds %d chunks and not it", cp.session, c.op, c.seq, c.variant, c.status, len(stored))
			continue
		}
		answered[c.seq] = true
	}
	for i, ok := range answered {
		if !ok {
			t.Errorf("capture %s: chunk %d stored, but no call storing it was answered 2xx", cp.session, i)
		}
	}
	// One consent answered 201 issued one certificate, the reserved one,
	// over the chunks stored: none was appended after it.
	ids, err := tx.CertificatesBySession(ctx, cp.session)
	if err != nil {
		return err
	}
	switch {
	case consents > 1:
		t.Errorf("capture %s: %d consents answered 201", cp.session, consents)
	case consents == 0 && len(ids) > 0:
		t.Errorf("capture %s: certificates %v, but no consent was answered 201", cp.session, ids)
	case consents == 1:
		if len(ids) != 1 || ids[0] != cp.cert {
			t.Errorf("capture %s: certificates %v after one consent answered 201; want the reserved %s", cp.session, ids, cp.cert)
			return nil
		}
		cert, err := tx.Certificate(ctx, cp.cert)
		if err != nil {
			return err
		}
		if cert.RecordingSHA256 != sha256.Sum256(consent.JoinChunks(stored)) {
			t.Errorf("capture %s: the certificate's recording hash is not that of the %d chunks stored: a chunk came after the consent", cp.session, len(stored))
		}
		for _, c := range calls {
			if c.op == "chunk" && c.status == 200 && c.start.After(consented.end) && c.seq >= len(stored) {
				t.Errorf("capture %s: chunk %d answered 200 after the consent", cp.session, c.seq)
			}
		}
	}
	return nil
}
