package httpadapter_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/audit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/store/pgstore"
	"github.com/consentkit/consentkit/wallet"
)

// Proven under faults: paid calls through the real handler,
// each with an Idempotency-Key (D40), while the store fails under them —
// PostgreSQL backends killed mid-transaction (TestChaosPostgresKill), or
// request contexts cancelled at random points (TestChaosCancel). Then,
// from the store:
//
//   - each call happened wholly or not at all: its ledger entries (at most
//     one per certificate or session, D1–D4), retention, conversion job,
//     revocation, idempotency record and audit entries (D42) are all there
//     or none is; no batch is partial (D23);
//   - every 200 is durable (D31): it has exactly one ledger entry, its
//     effects, and its body stored with the key, byte for byte;
//   - every balance is its credits minus its debits and never went below
//     zero (D4);
//
// and then every call sent again with the same key and body converges: it
// succeeds (replayed when its first try had committed) or gets a definite
// refusal, and is charged once overall.
//
// Every call works on certificates or sessions of its own, so that each
// ledger entry, retention and revocation names the call that made it. The
// seed is printed; CONSENTKIT_SEED replays the same calls and faults (the
// interleaving is the scheduler's).

const (
	chaosWorkers = 8
	// calls of TestChaosPostgresKill: enough that every kind of call is
	// caught by a kill in every run (a PostgreSQL call makes few round trips
	// since batches write charges behind, and at 160 one kind of call went
	// through untouched in about one run in six)
	chaosPGOps   = 320
	chaosOps     = 200 // calls of TestChaosCancel, per store
	chaosRetries = 30  // tries of a call after the faults, before it must have converged
)

// chaosSeed returns the seed of a chaos test: CONSENTKIT_SEED, or the clock.
func chaosSeed(t *testing.T) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv(seedVar); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", seedVar, v, err)
		}
		seed = s
	}
	t.Logf("seed %d (replay with %s=%d)", seed, seedVar, seed)
	return seed
}

// chaosCall is one logical call, sent once under faults and again until it
// converges, always with the same key and body.
type chaosCall struct {
	i       int
	op      string   // match, partial, retain, batch, optout, poor
	company string   // whose ledger and audit log it writes
	refs    []string // its ledger entries' references: its certificate or sessions
	cert    string   // optout: the certificate it revokes
	scope   string   // its key's scope (D40)
	key     string
	req     request
	tries   []chaosTry
}

// chaosTry is one sending of a call and its answer.
type chaosTry struct {
	requestID string // X-Request-Id, recorded in the audit entries it made (D42)
	status    int
	replayed  bool
	body      []byte
}

func (c *chaosCall) String() string {
	of := c.cert
	if of == "" {
		of = strings.Join(c.refs, " ")
	}
	return fmt.Sprintf("call %d (%s %s)", c.i, c.op, of)
}

// chaosFailed reports whether a status is no definite answer: a server
// failure or a cancelled request (499). Anything else is definite.
func chaosFailed(status int) bool {
	return status >= 500 || status == httpadapter.StatusClientClosedRequest
}

// chaosPlan makes n calls of random kinds, from seed, and the certificates
// and sessions each works on; it tops acme up to pay for all of them, and
// poor for about half of its calls, so that its last cents are raced for.
func chaosPlan(t *testing.T, e *env, seed uint64, n int) []*chaosCall {
	t.Helper()
	rng := mrand.New(mrand.NewPCG(seed, 0))
	var (
		calls    []*chaosCall
		certs    []consentkit.CertificateParams
		sessions []string
		poor     int
	)
	cert := func(id, company, session, email string) {
		certs = append(certs, consentkit.CertificateParams{
			ID: id, CompanyID: company, PropertyID: company + "-web", SessionID: session, Email: email,
			Origin:  "https://" + company + ".example/quote",
			Records: []consent.Record{{Text: consentText, Types: []string{"tcpa"}, OptInAt: created}},
		})
	}
	for i := range n {
		c := &chaosCall{i: i, company: "acme", scope: consentkit.IdempotencyScope("acme", ""), key: fmt.Sprintf("chaos-key-%d", i)}
		switch k := rng.IntN(100); {
		case k < 22:
			c.op, c.refs = "match", []string{fmt.Sprint("cx-", i)}
			cert(c.refs[0], "acme", "s1", fmt.Sprintf("cx%d@example.com", i))
			c.req = request{path: "/verify/match", token: acmeToken, body: matchBody(c.refs[0], "acme", consentText)}
		case k < 37:
			c.op, c.refs = "partial", []string{fmt.Sprint("cx-", i)}
			cert(c.refs[0], "acme", "s1", fmt.Sprintf("cx%d@example.com", i))
			c.req = request{path: "/verify/partial-match", token: acmeToken, body: termBody(c.refs[0], "acme", "agree")}
		case k < 55:
			c.op, c.refs = "retain", []string{fmt.Sprint("sx-", i)}
			sessions = append(sessions, c.refs[0])
			c.req = request{path: "/api/integrations/acme/retain/" + c.refs[0], token: acmeToken}
		case k < 70:
			c.op = "batch"
			for j := range 2 + rng.IntN(5) {
				c.refs = append(c.refs, fmt.Sprintf("sb-%d-%d", i, j))
			}
			sessions = append(sessions, c.refs...)
			c.req = request{path: "/api/integrations/acme/retain/batch", token: acmeToken, body: batchBody(c.refs...)}
		case k < 88:
			c.op, c.cert = "optout", fmt.Sprint("co-", i)
			c.scope = consentkit.IdempotencyScope("acme", "192.0.2.1")
			cert(c.cert, "acme", "s1", fmt.Sprintf("co%d@example.com", i))
			body := `{"company_id":"acme","certificate_id":"` + c.cert + `"}`
			if rng.IntN(2) == 0 {
				body = fmt.Sprintf(`{"company_id":"acme","email":"CO%d@Example.com"}`, i)
			}
			c.req = request{path: "/opt-out", body: body}
		default:
			c.op, c.company, c.refs = "poor", "poor", []string{fmt.Sprint("cp-", i)}
			c.scope = consentkit.IdempotencyScope("poor", "")
			cert(c.refs[0], "poor", "s-poor", "")
			c.req = request{path: "/verify/match", token: poorToken, body: matchBody(c.refs[0], "poor", consentText)}
			poor++
		}
		c.req = keyed(c.req, c.key)
		calls = append(calls, c)
	}
	// Made concurrently: with group commit, a few commits for all of them.
	var wg sync.WaitGroup
	for w := range chaosWorkers {
		wg.Go(func() {
			for i := w; i < len(sessions); i += chaosWorkers {
				_, err := e.svc.StartSession(ctx, consentkit.SessionParams{ID: sessions[i], CompanyID: "acme", PropertyID: "acme-web"})
				if err != nil {
					t.Errorf("session %s: %v", sessions[i], err)
				}
			}
			for i := w; i < len(certs); i += chaosWorkers {
				if _, err := e.svc.IssueCertificate(ctx, certs[i]); err != nil {
					t.Errorf("certificate %s: %v", certs[i].ID, err)
				}
			}
		})
	}
	wg.Wait()
	_, err := e.svc.TopUp(ctx, "acme", 10_000*wallet.Dollar, "chaos")
	must(t, err)
	_, err = e.svc.TopUp(ctx, "poor", wallet.Amount(poor/2)*wallet.DefaultPrices().ExactMatch, "chaos")
	must(t, err)
	if t.Failed() {
		t.FailNow()
	}
	return calls
}

// chaosSend sends c once with ctx and records the answer.
func chaosSend(ctx context.Context, h http.Handler, c *chaosCall) chaosTry {
	try := chaosTry{requestID: fmt.Sprintf("chaos-%d-%d", c.i, len(c.tries))}
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, c.req.path, strings.NewReader(c.req.body))
	req.Header.Set("Content-Type", "application/json")
	c.req.setHeaders(req)
	req.Header.Set("X-Request-Id", try.requestID)
	req.RemoteAddr = "192.0.2.1:1234"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	try.status, try.body = rec.Code, rec.Body.Bytes()
	try.replayed = rec.Header().Get(httpadapter.ReplayedHeader) == "true"
	c.tries = append(c.tries, try)
	return try
}

// chaosRound sends every call once, from chaosWorkers goroutines, each
// with the context that send returns (nil: context.Background).
func chaosRound(calls []*chaosCall, h http.Handler, send func(c *chaosCall) (context.Context, func())) {
	var wg sync.WaitGroup
	for w := range chaosWorkers {
		wg.Go(func() {
			for i := w; i < len(calls); i += chaosWorkers {
				reqCtx, done := context.Background(), func() {}
				if send != nil {
					reqCtx, done = send(calls[i])
				}
				chaosSend(reqCtx, h, calls[i])
				done()
			}
		})
	}
	wg.Wait()
}

// chaosConverge sends every call again, with the same key and body, until
// it gets a definite answer: a call whose first try committed is replayed,
// one whose first try did not runs now. A call already answered 200 is
// sent once more and must be replayed; one answered 402 may be paid now or
// refused again (402s are not kept, D40).
func chaosConverge(t *testing.T, calls []*chaosCall, h http.Handler) {
	var wg sync.WaitGroup
	for w := range chaosWorkers {
		wg.Go(func() {
			for i := w; i < len(calls); i += chaosWorkers {
				c := calls[i]
				for n := 0; ; n++ {
					if n == chaosRetries {
						t.Errorf("%s: no definite answer after %d tries: %d %s", c, n, c.tries[len(c.tries)-1].status, c.tries[len(c.tries)-1].body)
						break
					}
					if !chaosFailed(chaosSend(context.Background(), h, c).status) {
						break
					}
					// A pool may still hold connections that a fault broke;
					// it replaces them as they fail.
					time.Sleep(time.Duration(n+1) * 5 * time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
}

// chaosState is what the store holds of the calls.
type chaosState struct {
	ledger   map[string][]*wallet.Entry // by company
	charges  map[string]int             // debits by reference
	sessions map[string]*consent.Session
	jobs     map[string]bool // conversion jobs by session
	certs    map[string]*consent.Certificate
	revoked  map[string]int                        // revocations naming a certificate
	keys     map[string]*consent.IdempotencyRecord // by scope and key
	audit    map[string][]*consent.AuditEntry      // by request id
}

var errPeek = errors.New("peek: roll back")

func chaosRead(t *testing.T, e *env, calls []*chaosCall, auditFrom map[string]int64) *chaosState {
	t.Helper()
	s := &chaosState{
		ledger: map[string][]*wallet.Entry{}, charges: map[string]int{}, sessions: map[string]*consent.Session{},
		jobs: map[string]bool{}, certs: map[string]*consent.Certificate{}, revoked: map[string]int{},
		keys: map[string]*consent.IdempotencyRecord{}, audit: map[string][]*consent.AuditEntry{},
	}
	must(t, e.store.View(ctx, func(tx consent.Tx) error {
		for _, company := range []string{"acme", "poor"} {
			l, err := tx.Ledger(ctx, company)
			if err != nil {
				return err
			}
			s.ledger[company] = l
			for _, en := range l {
				if !en.Kind.IsCredit() {
					s.charges[en.Reference]++
				}
			}
			revs, err := tx.Revocations(ctx, company)
			if err != nil {
				return err
			}
			for _, r := range revs {
				for _, id := range r.CertificateIDs {
					s.revoked[id]++
				}
			}
			for after := auditFrom[company]; ; {
				page, err := tx.AuditEntries(ctx, consent.AuditQuery{CompanyID: company, AfterSeq: after, Limit: consent.MaxAuditPage})
				if err != nil {
					return err
				}
				for _, en := range page {
					s.audit[en.RequestID] = append(s.audit[en.RequestID], en)
					after = en.Seq
				}
				if len(page) < consent.MaxAuditPage {
					break
				}
			}
		}
		for _, c := range calls {
			switch c.op {
			case "retain", "batch":
				for _, id := range c.refs {
					ses, err := tx.Session(ctx, id)
					if err != nil {
						return err
					}
					s.sessions[id] = ses
					_, err = tx.Job(ctx, consent.JobConvert, id)
					if err != nil && consent.ErrorCode(err) != consent.NotFound {
						return err
					}
					s.jobs[id] = err == nil
				}
			case "optout":
				cert, err := tx.Certificate(ctx, c.cert)
				if err != nil {
					return err
				}
				s.certs[c.cert] = cert
			}
		}
		return nil
	}))
	// The stored keys: a claim finds the record there is, and is rolled
	// back.
	err := e.store.Update(ctx, func(tx consent.Tx) error {
		for _, c := range calls {
			rec, err := tx.ClaimIdempotencyKey(ctx, &consent.IdempotencyRecord{
				Scope: c.scope, Key: c.key, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}, now)
			if err != nil {
				return err
			}
			s.keys[c.scope+" "+c.key] = rec
		}
		return errPeek
	})
	if !errors.Is(err, errPeek) {
		t.Fatalf("reading the idempotency keys: %v", err)
	}
	return s
}

// chaosAuditFrom returns the last audit Seq of acme and poor, before the calls.
func chaosAuditFrom(t *testing.T, e *env) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	must(t, e.store.View(ctx, func(tx consent.Tx) error {
		for _, company := range []string{"acme", "poor"} {
			h, err := tx.AuditHead(ctx, company)
			if err != nil {
				return err
			}
			out[company] = h.Seq
		}
		return nil
	}))
	return out
}

// chaosCheck checks the store against the calls and their answers so far
// (see the comment at the top). A failed try whose work committed —
// possible only when the fault may strike the commit itself, as a killed
// backend can — is allowed when ambiguous is true; final requires every
// call to have converged. It returns how many tries failed and how many
// of those had committed.
func chaosCheck(t *testing.T, e *env, calls []*chaosCall, auditFrom map[string]int64, ambiguous, final bool) (failed, committed int) {
	t.Helper()
	s := chaosRead(t, e, calls, auditFrom)

	// Balances: credits minus debits, never below zero on the way (D4).
	for company, l := range s.ledger {
		var running wallet.Amount
		for _, en := range l {
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

	for _, c := range calls {
		// Done: did the call's work commit? Wholly or not at all.
		var done bool
		switch c.op {
		case "optout":
			done = s.certs[c.cert].Revoked()
			if n := s.revoked[c.cert]; n > 1 || (n == 1) != done {
				t.Errorf("%s: certificate revoked %v, named by %d revocations", c, done, n)
			}
		default:
			n := s.charges[c.refs[0]]
			done = n == 1
			for _, ref := range c.refs {
				if s.charges[ref] != n || n > 1 {
					t.Errorf("%s: %s charged %d times, %s %d times: a partial or repeated charge", c, c.refs[0], n, ref, s.charges[ref])
				}
			}
		}
		if c.op == "retain" || c.op == "batch" {
			for _, id := range c.refs {
				ses := s.sessions[id]
				retained := ses.RetentionStatus == consent.RetentionRetained && ses.VideoStatus == consent.VideoPending
				if retained != done || s.jobs[id] != done {
					t.Errorf("%s: charged %v, but session %s is %s/%s with conversion job %v", c, done, id, ses.RetentionStatus, ses.VideoStatus, s.jobs[id])
				}
			}
		}
		rec := s.keys[c.scope+" "+c.key]
		if (rec != nil) != done || (rec != nil && rec.Status != http.StatusOK) {
			t.Errorf("%s: done %v, but its key's record is %+v", c, done, rec)
		}

		// Its audit entries, by try: one call's entries all come from
		// the one try that did its work (one per session for a batch),
		// besides the payment refusals that poor's tries commit.
		want := 1
		if c.op == "batch" {
			want = len(c.refs)
		}
		doer := -1
		for i, try := range c.tries {
			var ok, refused int
			for _, en := range s.audit[try.requestID] {
				switch {
				case en.Outcome == consent.AuditOK:
					ok++
				case c.op == "poor" && en.Outcome == string(consent.Payment):
					refused++
				default:
					t.Errorf("%s: try %d left an unexpected audit entry %s %s %s", c, i, en.Action, en.Target, en.Outcome)
				}
			}
			switch {
			case ok == want && doer < 0:
				doer = i
			case ok != 0:
				t.Errorf("%s: try %d left %d audit entries of success, want 0 or %d from one try (doer: try %d)", c, i, ok, want, doer)
			}
			if refused > 1 || refused == 1 && try.status != http.StatusPaymentRequired && !chaosFailed(try.status) {
				t.Errorf("%s: try %d answered %d and left %d payment refusals", c, i, try.status, refused)
			}
			if try.status == http.StatusPaymentRequired && refused != 1 {
				t.Errorf("%s: try %d answered 402 with %d payment refusals recorded", c, i, refused)
			}
		}
		if (doer >= 0) != done {
			t.Errorf("%s: done %v, but the audit log's doer is try %d", c, done, doer)
		}

		// The answers against the store.
		for i, try := range c.tries {
			switch {
			case try.status == http.StatusOK:
				if !done || try.replayed != (i != doer) || i < doer {
					t.Errorf("%s: try %d answered 200 (replayed %v), but the work was done by try %d", c, i, try.replayed, doer)
				}
				if rec != nil && string(rec.Body) != string(try.body) {
					t.Errorf("%s: try %d answered\n%s\nbut its key keeps\n%s", c, i, try.body, rec.Body)
				}
				if !try.replayed {
					chaosCheckBody(t, c, try.body)
				}
			case try.status == http.StatusPaymentRequired && c.op == "poor":
			case chaosFailed(try.status):
				failed++
				if i == doer {
					committed++
					if !ambiguous {
						t.Errorf("%s: try %d answered %d %s, but its work committed", c, i, try.status, try.body)
					}
				}
			default:
				t.Errorf("%s: try %d answered %d %s", c, i, try.status, try.body)
			}
		}
		if final {
			last := c.tries[len(c.tries)-1]
			switch {
			case last.status == http.StatusOK && done:
			case last.status == http.StatusPaymentRequired && c.op == "poor" && !done:
			default:
				t.Errorf("%s: did not converge: done %v, last answer %d %s", c, done, last.status, last.body)
			}
		}
	}
	return failed, committed
}

// chaosCheckBody checks what a call's first successful answer says it did.
func chaosCheckBody(t *testing.T, c *chaosCall, body []byte) {
	t.Helper()
	var b struct {
		Valid        bool     `json:"valid"`
		Retained     int      `json:"retained"`
		Certificates []string `json:"certificates"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		t.Errorf("%s: %v: %s", c, err, body)
	}
	switch c.op {
	case "match", "partial", "poor":
		if !b.Valid {
			t.Errorf("%s: answered %s, want valid", c, body)
		}
	case "batch":
		if b.Retained != len(c.refs) {
			t.Errorf("%s: answered %s, want all %d retained", c, body, len(c.refs))
		}
	case "optout":
		if !slices.Equal(b.Certificates, []string{c.cert}) {
			t.Errorf("%s: answered %s, want %s revoked", c, body, c.cert)
		}
	}
}

// chaosSummary logs the answers of the faulty round and checks that the
// faults struck and spared calls of every kind, so that the test tests
// what it claims to.
func chaosSummary(t *testing.T, calls []*chaosCall) {
	t.Helper()
	seen := map[string]int{}
	for _, c := range calls {
		st := c.tries[0].status
		seen[fmt.Sprint(c.op, " ", st)]++
		if chaosFailed(st) {
			seen[c.op+" failed"]++
		} else {
			seen[c.op+" answered"]++
		}
	}
	t.Logf("first tries: %v", seen)
	for _, op := range []string{"match", "partial", "retain", "batch", "optout", "poor"} {
		if seen[op+" failed"] == 0 || seen[op+" answered"] == 0 {
			t.Errorf("%s: %d failed and %d answered under faults: the run does not exercise both", op, seen[op+" failed"], seen[op+" answered"])
		}
	}
}

// TestChaosPostgresKill: while the calls run through the handler on a
// PostgreSQL store with group commit on (its default), a second connection
// kills the store's backends, idle or in a transaction, again and again
// (pg_terminate_backend). A killed backend breaks a whole group-commit
// batch: each caller whose work was in it must be told of failure or have
// its work run again. The checks are chaosCheck's; a try answered 5xx whose
// commit went through before its backend died is allowed (its key answers
// the retry with the stored answer).
func TestChaosPostgresKill(t *testing.T) {
	dsn := teststore.PostgresURL(t) // skips when CONSENT_TEST_POSTGRES_URL is unset
	seed := chaosSeed(t)
	var b [6]byte
	rand.Read(b[:])
	app := "consentkit_chaos_" + hex.EncodeToString(b[:])
	u, err := url.Parse(dsn)
	must(t, err)
	q := u.Query()
	q.Set("application_name", app) // how the killer finds this store's backends
	u.RawQuery = q.Encode()
	pool, err := pgxpool.New(ctx, u.String())
	must(t, err)
	t.Cleanup(pool.Close)
	st := pgstore.New(pool) // group commit on
	must(t, st.Migrate(ctx))
	e := setup(t, st)
	calls := chaosPlan(t, e, seed, chaosPGOps)
	h := e.handler(t, httpadapter.Config{OptOutPerMinute: -1, RetainPerMinute: -1, VerifyPerMinute: -1})
	auditFrom := chaosAuditFrom(t, e)
	batches0, members0 := st.GroupStats()

	killer, err := pgx.Connect(ctx, os.Getenv(teststore.DSNVar))
	must(t, err)
	defer func() { _ = killer.Close(ctx) }() // a connection of the test's own
	// The killer strikes after every few calls sent, so that the faults
	// keep pace with the calls however fast the machine is, and then
	// after a random delay, to strike at a random point of what runs.
	var sent atomic.Int32
	stop, stopped := make(chan struct{}), make(chan struct{})
	var kills, rounds int
	go func() {
		defer close(stopped)
		rng := mrand.New(mrand.NewPCG(seed, 1))
		next := int32(1 + rng.IntN(10))
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			if sent.Load() < next {
				continue
			}
			time.Sleep(time.Duration(rng.IntN(5000)) * time.Microsecond)
			var n int
			err := killer.QueryRow(ctx, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity
				WHERE application_name = $1 AND pid <> pg_backend_pid()`, app).Scan(&n)
			if err != nil {
				t.Errorf("pg_terminate_backend: %v", err)
				return
			}
			kills += n
			rounds++
			next = sent.Load() + int32(2+rng.IntN(10))
		}
	}()
	start := time.Now()
	chaosRound(calls, h, func(*chaosCall) (context.Context, func()) {
		sent.Add(1)
		return context.Background(), func() {}
	})
	close(stop)
	<-stopped
	// The pool still holds connections killed while idle; start afresh,
	// so that the checks read the store rather than meet a dead one.
	pool.Reset()
	batches, members := st.GroupStats()
	t.Logf("%d calls in %v; %d backends killed in %d rounds; %d group-commit batches ran %d functions",
		len(calls), time.Since(start).Round(time.Millisecond), kills, rounds, batches-batches0, members-members0)
	if kills == 0 {
		t.Fatal("no backend was killed")
	}
	if members-members0 <= batches-batches0 {
		t.Errorf("no group-commit batch ran more than one call: the faults never broke a shared transaction")
	}
	chaosSummary(t, calls)
	failed, committed := chaosCheck(t, e, calls, auditFrom, true, false)
	t.Logf("%d tries failed under faults, %d of them after their commit", failed, committed)

	chaosConverge(t, calls, h)
	chaosCheck(t, e, calls, auditFrom, true, true)
	if _, err := audit.VerifyChains(ctx, e.svc.Store()); err != nil {
		t.Errorf("audit chains: %v", err)
	}
}

// TestChaosCancel: on every store, the calls run through the handler
// concurrently, each with a context cancelled at a random point: after a
// random short delay, or at a random point of its transactions (before or
// after its k-th Tx method call, through cancelStore), or never. A
// cancelled request answers 499 with nothing done, or 200 with everything
// done and durable; nothing in between. The checks are chaosCheck's, with
// no ambiguity allowed: a cancelled context never touches a commit.
func TestChaosCancel(t *testing.T) {
	seed := chaosSeed(t)
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e := setup(t, cancelStore{open(t)})
		calls := chaosPlan(t, e, seed, chaosOps)
		h := e.handler(t, httpadapter.Config{OptOutPerMinute: -1, RetainPerMinute: -1, VerifyPerMinute: -1})
		auditFrom := chaosAuditFrom(t, e)
		var timed, pointed, fired atomic.Int32
		// The first call of each kind is cancelled at its first Tx call
		// and the second never, so that every kind both fails and is
		// answered however the timing of the random others falls
		// (chaosSummary checks it).
		forced, seen := map[int]int{}, map[string]int{}
		for _, c := range calls {
			if seen[c.op]++; seen[c.op] <= 2 {
				forced[c.i] = seen[c.op]
			}
		}
		start := time.Now()
		chaosRound(calls, h, func(c *chaosCall) (context.Context, func()) {
			rng := mrand.New(mrand.NewPCG(seed, 1000+uint64(c.i)))
			reqCtx, cancel := context.WithCancel(context.Background())
			k := rng.IntN(8)
			switch forced[c.i] {
			case 1:
				pointed.Add(1)
				p := &cancelPlan{at: 1, cancel: cancel, fired: &fired}
				return context.WithValue(reqCtx, cancelPlanKey{}, p), cancel
			case 2:
				k = 0
			}
			switch {
			case k < 2: // never
			case k < 5:
				timed.Add(1)
				timer := time.AfterFunc(time.Duration(rng.IntN(3000))*time.Microsecond, cancel)
				return reqCtx, func() { timer.Stop(); cancel() }
			default:
				pointed.Add(1)
				p := &cancelPlan{at: int32(1 + rng.IntN(24)), cancel: cancel, fired: &fired}
				return context.WithValue(reqCtx, cancelPlanKey{}, p), cancel
			}
			return reqCtx, cancel
		})
		t.Logf("%d calls in %v: %d cancelled after a delay, %d at a Tx call (%d reached it)",
			len(calls), time.Since(start).Round(time.Millisecond), timed.Load(), pointed.Load(), fired.Load())
		chaosSummary(t, calls)
		for _, c := range calls {
			if st := c.tries[0].status; st >= 500 {
				t.Errorf("%s: answered %d %s: a cancelled request is a 499, and no other fault was made", c, st, c.tries[0].body)
			}
		}
		chaosCheck(t, e, calls, auditFrom, false, false)
		chaosConverge(t, calls, h)
		chaosCheck(t, e, calls, auditFrom, false, true)
		if _, err := audit.VerifyChains(ctx, e.svc.Store()); err != nil {
			t.Errorf("audit chains: %v", err)
		}
	})
}

// cancelPlan cancels a request's context at a point of its transactions:
// point 2k-1 is just before its k-th Tx method call, 2k just after it.
type cancelPlan struct {
	at     int32
	n      atomic.Int32
	cancel context.CancelFunc
	fired  *atomic.Int32
}

type cancelPlanKey struct{}

func (p *cancelPlan) point() {
	if p.n.Add(1) == p.at {
		p.cancel()
		p.fired.Add(1)
	}
}

// cancelStore gives the transactions of a request whose context carries a
// cancelPlan a Tx that counts their calls and cancels at the plan's point.
type cancelStore struct{ consent.Store }

func (s cancelStore) Update(ctx context.Context, fn func(consent.Tx) error) error {
	return s.Store.Update(ctx, cancelFn(ctx, fn))
}

func (s cancelStore) View(ctx context.Context, fn func(consent.Tx) error) error {
	return s.Store.View(ctx, cancelFn(ctx, fn))
}

func cancelFn(ctx context.Context, fn func(consent.Tx) error) func(consent.Tx) error {
	p, _ := ctx.Value(cancelPlanKey{}).(*cancelPlan)
	if p == nil {
		return fn
	}
	return func(tx consent.Tx) error { return fn(cancelTx{tx, p}) }
}

// cancelTx counts the calls that the paid routes and authentication make.
type cancelTx struct {
	consent.Tx
	p *cancelPlan
}

func (t cancelTx) TokenByDigest(ctx context.Context, d consent.Digest) (*consent.Token, error) {
	t.p.point()
	defer t.p.point()
	return t.Tx.TokenByDigest(ctx, d)
}

func (t cancelTx) Company(ctx context.Context, id string) (*consent.Company, error) {
	t.p.point()
	defer t.p.point()
	return t.Tx.Company(ctx, id)
}

func (t cancelTx) Property(ctx context.Context, id string) (*consent.Property, error) {
	t.p.point()
	defer t.p.point()
	return t.Tx.Property(ctx, id)
}

func (t cancelTx) Session(ctx context.Context, id string) (*consent.Session, error) {
	t.p.point()
	defer t.p.point()
	return t.Tx.Session(ctx, id)
}

func (t cancelTx) UpdateSession(ctx context.Context, s *consent.Session) error {
	t.p.point()
	defer t.p.point()
	return t.Tx.UpdateSession(ctx, s)
}

func (t cancelTx) Events(ctx context.Context, sessionID string) ([][]byte, error) {
	t.p.point()
	defer t.p.point()
	return t.Tx.Events(ctx, sessionID)
}

func (t cancelTx) Certificate(ctx context.Context, id string) (*consent.Certificate, error) {
	t.p.point()
	defer t.p.point()
	return t.Tx.Certificate(ctx, id)
}

func (t cancelTx) CertificatesByEmail(ctx context.Context, companyID string, d consent.Digest) ([]string, error) {
	t.p.point()
	defer t.p.point()
	return t.Tx.CertificatesByEmail(ctx, companyID, d)
}

func (t cancelTx) CertificatesBySession(ctx context.Context, sessionID string) ([]string, error) {
	t.p.point()
	defer t.p.point()
	return t.Tx.CertificatesBySession(ctx, sessionID)
}

func (t cancelTx) UpdateCertificate(ctx context.Context, c *consent.Certificate) error {
	t.p.point()
	defer t.p.point()
	return t.Tx.UpdateCertificate(ctx, c)
}

func (t cancelTx) RevokeCertificate(ctx context.Context, id string, at time.Time) error {
	t.p.point()
	defer t.p.point()
	return t.Tx.RevokeCertificate(ctx, id, at)
}

func (t cancelTx) CreateRevocation(ctx context.Context, r *consent.Revocation) error {
	t.p.point()
	defer t.p.point()
	return t.Tx.CreateRevocation(ctx, r)
}

func (t cancelTx) EnqueueJob(ctx context.Context, j *consent.Job) error {
	t.p.point()
	defer t.p.point()
	return t.Tx.EnqueueJob(ctx, j)
}

func (t cancelTx) ClaimIdempotencyKey(ctx context.Context, r *consent.IdempotencyRecord, at time.Time) (*consent.IdempotencyRecord, error) {
	t.p.point()
	defer t.p.point()
	return t.Tx.ClaimIdempotencyKey(ctx, r, at)
}

func (t cancelTx) AnswerIdempotencyKey(ctx context.Context, scope, key string, status int, body []byte) error {
	t.p.point()
	defer t.p.point()
	return t.Tx.AnswerIdempotencyKey(ctx, scope, key, status, body)
}

func (t cancelTx) ReleaseIdempotencyKey(ctx context.Context, scope, key string) error {
	t.p.point()
	defer t.p.point()
	return t.Tx.ReleaseIdempotencyKey(ctx, scope, key)
}

func (t cancelTx) WebhookEndpoints(ctx context.Context, companyID string) ([]*consent.WebhookEndpoint, error) {
	t.p.point()
	defer t.p.point()
	return t.Tx.WebhookEndpoints(ctx, companyID)
}

func (t cancelTx) Balance(ctx context.Context, companyID string) (wallet.Amount, error) {
	t.p.point()
	defer t.p.point()
	return t.Tx.Balance(ctx, companyID)
}

func (t cancelTx) Debit(ctx context.Context, e *wallet.Entry) (wallet.Amount, error) {
	t.p.point()
	defer t.p.point()
	return t.Tx.Debit(ctx, e)
}

func (t cancelTx) AppendAudit(ctx context.Context, e *consent.AuditEntry) error {
	t.p.point()
	defer t.p.point()
	return t.Tx.AppendAudit(ctx, e)
}

func (t cancelTx) AuditHead(ctx context.Context, companyID string) (*consent.AuditHead, error) {
	t.p.point()
	defer t.p.point()
	return t.Tx.AuditHead(ctx, companyID)
}

func (t cancelTx) Sessions(ctx context.Context, ids []string) ([]*consent.Session, error) {
	t.p.point()
	defer t.p.point()
	return t.Tx.Sessions(ctx, ids)
}

func (t cancelTx) UpdateSessions(ctx context.Context, list []*consent.Session) error {
	t.p.point()
	defer t.p.point()
	return t.Tx.UpdateSessions(ctx, list)
}

func (t cancelTx) EnqueueJobs(ctx context.Context, jobs []*consent.Job) error {
	t.p.point()
	defer t.p.point()
	return t.Tx.EnqueueJobs(ctx, jobs)
}

func (t cancelTx) DebitAll(ctx context.Context, es []*wallet.Entry) (wallet.Amount, error) {
	t.p.point()
	defer t.p.point()
	return t.Tx.DebitAll(ctx, es)
}

func (t cancelTx) AppendAudits(ctx context.Context, es []*consent.AuditEntry) error {
	t.p.point()
	defer t.p.point()
	return t.Tx.AppendAudits(ctx, es)
}
