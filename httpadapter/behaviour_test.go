package httpadapter_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
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

// Retaining sets the statuses, the retention term, the ledger entry and the
// conversion job together (D21, D22, D26).
func TestRetainEffects(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e := setup(t, open(t))
		h := e.handler(t, httpadapter.Config{})
		if rec := serve(h, request{path: "/api/integrations/acme/retain/s2", token: acmeToken}); rec.Code != 200 {
			t.Fatalf("retain: %d %s", rec.Code, rec.Body)
		}
		if rec := serve(h, request{path: "/api/integrations/acme/retain/batch", token: acmeToken, body: batchBody("s1")}); rec.Code != 200 {
			t.Fatalf("batch: %d %s", rec.Code, rec.Body)
		}
		must(t, e.store.View(ctx, func(tx consent.Tx) error {
			for _, id := range []string{"s1", "s2"} {
				ses, err := tx.Session(ctx, id)
				if err != nil {
					return err
				}
				if ses.RetentionStatus != consent.RetentionRetained || ses.VideoStatus != consent.VideoPending ||
					!ses.ExpiresAt.Equal(now.AddDate(5, 0, 0)) {
					t.Errorf("session %s after retain: %+v", id, ses)
				}
				job, err := tx.Job(ctx, consent.JobConvert, id)
				if err != nil || !job.RunAfter.Equal(now) || job.Attempts != 0 {
					t.Errorf("conversion job of %s: %+v, %v", id, job, err)
				}
			}
			ledger, err := tx.Ledger(ctx, "acme")
			if err != nil {
				return err
			}
			last := ledger[len(ledger)-2:]
			if last[0].Kind != wallet.RetainSingle || last[0].Reference != "s2" || last[0].Amount != 10*wallet.Cent ||
				last[1].Kind != wallet.RetainBatch || last[1].Reference != "s1" {
				t.Errorf("ledger ends with %+v, %+v", *last[0], *last[1])
			}
			return nil
		}))
	})
}

// An opt-out is recorded with digests only, refuses later verifications
// without charging them, and answers the same when repeated (D13, D18, D19).
func TestOptOutEffects(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e := setup(t, open(t))
		h := e.handler(t, httpadapter.Config{})
		body := `{"company_id":"acme","email":"Jane@Example.com","reason":"asked by phone"}`
		first := serve(h, request{path: "/opt-out", body: body, remote: "198.51.100.7:5555"})
		again := serve(h, request{path: "/opt-out", body: body, remote: "198.51.100.7:5555"})
		if first.Code != 200 || again.Code != 200 || first.Body.String() != again.Body.String() {
			t.Errorf("opt-out twice: %d %s / %d %s", first.Code, first.Body, again.Code, again.Body)
		}
		rec := serve(h, request{path: "/verify/match", token: acmeToken, body: matchBody("cert-2", "acme", consentText)})
		if rec.Code != 403 {
			t.Errorf("verification after opt-out: %d %s", rec.Code, rec.Body)
		}
		checkBalances(t, e, nil)
		must(t, e.store.View(ctx, func(tx consent.Tx) error {
			revs, err := tx.Revocations(ctx, "acme")
			if err != nil {
				return err
			}
			if len(revs) != 2 {
				t.Fatalf("%d revocations recorded, want 2", len(revs))
			}
			r := revs[0]
			if r.EmailDigest != consent.DigestOf("jane@example.com") || !r.MobileDigest.IsZero() ||
				r.Reason != "asked by phone" || r.ClientIP != "198.51.100.7" ||
				strings.Join(r.CertificateIDs, ",") != "cert-1,cert-2" || !r.CreatedAt.Equal(now) {
				t.Errorf("revocation = %+v", r)
			}
			c, err := tx.Certificate(ctx, "cert-1")
			if err != nil || !c.RevokedAt.Equal(now) {
				t.Errorf("cert-1 RevokedAt = %v, %v", c.RevokedAt, err)
			}
			return nil
		}))
	})
}

// Company-and-property credentials (D8) work only when enabled, and only for
// a property of the named company.
func TestPropertyCredentials(t *testing.T) {
	e := setup(t, teststore.Memory(t))
	off := e.handler(t, httpadapter.Config{})
	on := e.handler(t, httpadapter.Config{PropertyCredentials: true})
	body := func(property string) string {
		return matchBody("cert-1", "acme", consentText, `,"property_id":"`+property+`"`)
	}
	for _, tc := range []struct {
		name   string
		h      http.Handler
		req    request
		status int
	}{
		{"off", off, request{path: "/verify/match", body: body("acme-web")}, 401},
		{"on, own property", on, request{path: "/verify/match", body: body("acme-web")}, 200},
		{"on, retain session by path company", on, request{path: "/verify/session/acme", body: `{"session_id":"s2","property_id":"acme-web"}`}, 200},
		{"on, another company's property", on, request{path: "/verify/match", body: body("other-web")}, 401},
		{"on, unknown property", on, request{path: "/verify/match", body: body("nope")}, 401},
		{"on, no property", on, request{path: "/verify/match", body: matchBody("cert-1", "acme", consentText)}, 401},
		{"on, Bearer wins and checks the property", on, request{path: "/verify/match", token: acmeToken, body: body("other-web")}, 404},
		{"on, Retain API still needs a token", on, request{path: "/api/integrations/acme/retain/s1", body: `{"property_id":"acme-web"}`}, 401},
	} {
		if rec := serve(tc.h, tc.req); rec.Code != tc.status {
			t.Errorf("%s: status %d, want %d: %s", tc.name, rec.Code, tc.status, rec.Body)
		}
	}
	if got := e.balance(t, "acme"); got != wallet.Dollar-15*wallet.Cent/10-10*wallet.Cent {
		t.Errorf("acme balance %s, want 0.885", got)
	}
}

// parallel sends n copies of req at once and counts the statuses.
func parallel(h http.Handler, n int, req func(i int) request) map[int]int {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		count = map[int]int{}
		start = make(chan struct{})
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			rec := serve(h, req(i))
			mu.Lock()
			count[rec.Code]++
			mu.Unlock()
		}()
	}
	close(start)
	wg.Wait()
	return count
}

// 20 parallel retains of one session: exactly one 200, nineteen 409, one charge.
func TestConcurrentRetain(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e := setup(t, open(t))
		h := e.handler(t, httpadapter.Config{})
		got := parallel(h, 20, func(int) request {
			return request{path: "/api/integrations/acme/retain/s2", token: acmeToken}
		})
		if got[200] != 1 || got[409] != 19 {
			t.Errorf("statuses %v, want one 200 and nineteen 409", got)
		}
		checkBalances(t, e, map[string]string{"acme": "0.1"})
	})
}

// A wallet of 0.15 and 30 parallel verifications: exactly ten 200 and twenty
// 402, and the wallet ends at zero (D4).
func TestConcurrentVerifications(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e := setup(t, open(t))
		_, err := e.svc.TopUp(ctx, "poor", 14*wallet.Cent, "to 0.15")
		must(t, err)
		h := e.handler(t, httpadapter.Config{})
		got := parallel(h, 30, func(i int) request {
			if i%2 == 0 {
				return request{path: "/verify/match", token: poorToken, body: matchBody("cert-poor", "poor", consentText)}
			}
			return request{path: "/verify/partial-match", token: poorToken, body: termBody("cert-poor", "poor", "agree")}
		})
		if got[200] != 10 || got[402] != 20 {
			t.Errorf("statuses %v, want ten 200 and twenty 402", got)
		}
		if bal := e.balance(t, "poor"); bal != 0 {
			t.Errorf("balance %s, want 0", bal)
		}
	})
}

// A revocation racing verifications: no verification is both refused and
// charged, and none that starts after the revocation has committed is
// accepted (D13).
func TestRevocationRace(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e := setup(t, open(t))
		_, err := e.svc.TopUp(ctx, "buyer", 99*wallet.Dollar, "enough for the race")
		must(t, err)
		h := e.handler(t, httpadapter.Config{})
		const workers, after = 4, 10 // each worker keeps going for 10 requests past the revocation
		var (
			revoked        atomic.Bool
			ok, refused    atomic.Int64
			wg             sync.WaitGroup
			enoughAccepted = make(chan struct{})
		)
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				left := after
				for n := 0; left > 0 && n < 2000; n++ {
					wasRevoked := revoked.Load()
					rec := serve(h, request{path: "/verify/match", token: buyerToken,
						body: matchBody("cert-2", "buyer", consentText, `,"originator_company_id":"acme"`)})
					switch rec.Code {
					case 200:
						if ok.Add(1) == 8 {
							close(enoughAccepted) // revoke once the race is well under way
						}
						if wasRevoked {
							t.Errorf("a verification started after the revocation committed was accepted")
						}
					case 403:
						refused.Add(1)
					default:
						t.Errorf("status %d: %s", rec.Code, rec.Body)
					}
					if wasRevoked {
						left--
					}
				}
			}()
		}
		<-enoughAccepted
		if rec := serve(h, request{path: "/opt-out", body: `{"company_id":"acme","certificate_id":"cert-2"}`}); rec.Code != 200 {
			t.Fatalf("opt-out: %d %s", rec.Code, rec.Body)
		}
		revoked.Store(true)
		wg.Wait()
		t.Logf("%d verifications accepted, %d refused", ok.Load(), refused.Load())
		if refused.Load() < workers*after {
			t.Errorf("%d refused, want at least %d", refused.Load(), workers*after)
		}
		charged := wallet.Amount(ok.Load()) * 15 * wallet.Cent / 10
		if bal := e.balance(t, "buyer"); bal != 100*wallet.Dollar-charged {
			t.Errorf("buyer balance %s after %d accepted and %d refused, want %s", bal, ok.Load(), refused.Load(), 100*wallet.Dollar-charged)
		}
	})
}

// Opt-out allows 10 at once per client IP; the 11th within the minute gets
// 429 with Retry-After (D20). X-Forwarded-For counts only from a trusted proxy.
func TestOptOutRateLimit(t *testing.T) {
	e := setup(t, teststore.Memory(t))
	h := e.handler(t, httpadapter.Config{TrustedProxies: httpadapter.TrustedProxies{Networks: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}})
	optOut := func(remote, xff string) int {
		r := request{path: "/opt-out", body: `{"company_id":"acme","email":"nobody@example.com"}`, remote: remote}
		if xff != "" {
			r.header = http.Header{"X-Forwarded-For": {xff}}
		}
		rec := serve(h, r)
		if rec.Code == 429 {
			if ra := rec.Header().Get("Retry-After"); ra != "6" {
				t.Errorf("Retry-After = %q, want 6 (one token every 6 s)", ra)
			}
			checkBody(t, rec.Body.Bytes(), `{"status":429,"error":"rate limit exceeded; retry later"}`)
		}
		return rec.Code
	}
	for i := range 10 {
		if code := optOut("192.0.2.10:1000", "203.0.113."+fmt.Sprint(i)); code != 200 {
			t.Fatalf("request %d: %d", i+1, code)
		}
	}
	// The forged header from an untrusted peer changed nothing: same bucket.
	if code := optOut("192.0.2.10:2000", "203.0.113.99"); code != 429 {
		t.Errorf("11th request from one IP: %d, want 429", code)
	}
	if code := optOut("192.0.2.11:1000", ""); code != 200 {
		t.Errorf("another IP: %d, want 200", code)
	}
	// Behind a trusted proxy, each forwarded client has its own bucket.
	for i := range 10 {
		if code := optOut("10.1.1.1:80", "203.0.113.50, 10.2.2.2"); code != 200 {
			t.Fatalf("forwarded request %d: %d", i+1, code)
		}
	}
	if code := optOut("10.1.1.1:80", "203.0.113.50"); code != 429 {
		t.Errorf("11th forwarded request of one client: %d, want 429", code)
	}
	if code := optOut("10.1.1.1:80", "203.0.113.51"); code != 200 {
		t.Errorf("another forwarded client: %d, want 200", code)
	}
	e.clock.t = e.clock.t.Add(6 * time.Second)
	if code := optOut("192.0.2.10:1000", ""); code != 200 {
		t.Errorf("after 6 s: %d, want 200", code)
	}
}

// The Retain API allows 500 at once per company, single and batch together;
// the 501st within the minute gets 429 (D28).
func TestRetainRateLimit(t *testing.T) {
	e := setup(t, teststore.Memory(t))
	h := e.handler(t, httpadapter.Config{})
	for i := range 500 {
		r := request{path: "/api/integrations/acme/retain/nope", token: acmeToken}
		if i%2 == 1 {
			r = request{path: "/api/integrations/acme/retain/batch", token: acmeToken, body: batchBody("nope")}
		}
		if rec := serve(h, r); rec.Code == 429 {
			t.Fatalf("request %d was limited", i+1)
		}
	}
	rec := serve(h, request{path: "/api/integrations/acme/retain/s2", token: acmeToken})
	if rec.Code != 429 || rec.Header().Get("Retry-After") == "" {
		t.Errorf("501st: %d (Retry-After %q), want 429", rec.Code, rec.Header().Get("Retry-After"))
	}
	checkBody(t, rec.Body.Bytes(), `{"success":false,"error":"rate limit exceeded; retry later"}`)
	if rec := serve(h, request{path: "/api/integrations/other/retain/s-other", token: otherToken}); rec.Code != 200 {
		t.Errorf("another company: %d, want 200", rec.Code)
	}
	checkBalances(t, e, map[string]string{"other": "0.1"})
}

// The Retain API's reads — a session's status, its video, a certificate's
// screenshot — spend none of its 500 a minute: a client that polls its
// conversions can still retain (D28).
func TestRetainReadsSpareTheRetainLimit(t *testing.T) {
	e := setup(t, teststore.Memory(t))
	h := e.handler(t, httpadapter.Config{RetainPerMinute: 2})
	for i := range 10 {
		for _, path := range []string{"/api/integrations/acme/sessions/s1", "/api/integrations/acme/sessions/s1/video",
			"/api/integrations/acme/certificates/cert-1/screenshot"} {
			if rec := get(h, path, acmeToken); rec.Code == 429 {
				t.Fatalf("read %d of %s: 429", i+1, path)
			}
		}
	}
	for i := range 2 {
		if rec := serve(h, request{path: "/api/integrations/acme/retain/s2", token: acmeToken}); rec.Code == 429 {
			t.Errorf("retention %d after 30 reads: 429, want the reads to have spent none of the limit", i+1)
		}
	}
	if rec := serve(h, request{path: "/api/integrations/acme/retain/s2", token: acmeToken}); rec.Code != 429 {
		t.Errorf("third retention with a limit of 2: %d, want 429", rec.Code)
	}
}

func TestVerifyRateLimitConfigurable(t *testing.T) {
	e := setup(t, teststore.Memory(t))
	h := e.handler(t, httpadapter.Config{VerifyPerMinute: 2})
	var codes []int
	for range 3 {
		codes = append(codes, serve(h, request{path: "/verify/partial-match", token: acmeToken, body: termBody("cert-1", "acme", "agree")}).Code)
	}
	if fmt.Sprint(codes) != "[200 200 429]" {
		t.Errorf("statuses %v, want [200 200 429]", codes)
	}
	checkBalances(t, e, map[string]string{"acme": "0.03"})
}

// failingStore fails every transaction with an error that must not leak.
type failingStore struct{ consent.Store }

var errSecret = errors.New(`pq: relation "wallets" does not exist at SELECT balance FROM wallets`)

func (failingStore) Update(context.Context, func(consent.Tx) error) error { return errSecret }

func TestInternalErrorsDoNotLeak(t *testing.T) {
	e := setup(t, teststore.Memory(t))
	var logs bytes.Buffer
	svc, err := consentkit.NewService(failingStore{e.store}, consentkit.Config{Now: e.clock.Now})
	must(t, err)
	h, err := httpadapter.New(httpadapter.Config{Service: svc, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	must(t, err)
	for _, r := range []request{
		{path: "/verify/match", token: acmeToken, body: matchBody("cert-1", "acme", consentText)},
		{path: "/opt-out", body: `{"company_id":"acme","certificate_id":"cert-1"}`},
	} {
		rec := serve(h, r)
		if rec.Code != 500 {
			t.Errorf("%s: status %d, want 500", r.path, rec.Code)
		}
		checkBody(t, rec.Body.Bytes(), `{"status":500,"error":"internal error"}`)
	}
	rec := serve(h, request{path: "/api/integrations/acme/retain/s2", token: acmeToken})
	checkBody(t, rec.Body.Bytes(), `{"success":false,"error":"internal error"}`)
	if !strings.Contains(logs.String(), "relation") || strings.Count(logs.String(), "internal error") != 3 {
		t.Errorf("internal errors were not logged:\n%s", logs.String())
	}
}

func get(h http.Handler, path, token string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// The session status route shows retention and conversion (D21).
func TestSessionStatus(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e := setup(t, open(t))
		h := e.handler(t, httpadapter.Config{})
		rec := get(h, "/api/integrations/acme/sessions/s2", acmeToken)
		checkBody(t, rec.Body.Bytes(), `{"success":true,"sessionId":"s2","retention_status":"none","rrweb_to_video_status":"none","retained_until":null}`)
		serve(h, request{path: "/api/integrations/acme/retain/s2", token: acmeToken})
		rec = get(h, "/api/integrations/acme/sessions/s2", acmeToken)
		checkBody(t, rec.Body.Bytes(), `{"success":true,"sessionId":"s2","retention_status":"retained","rrweb_to_video_status":"pending","retained_until":"2031-11-21T12:00:00Z"}`)
		must(t, e.store.Update(ctx, func(tx consent.Tx) error {
			ses, err := tx.Session(ctx, "s2")
			if err != nil {
				return err
			}
			ses.VideoStatus = consent.VideoConverted
			ses.Video = consent.Video{Path: "/videos/s2.mp4", Bytes: 42, SHA256: consent.DigestOf("x"), Duration: 3280 * time.Millisecond}
			return tx.UpdateSession(ctx, ses)
		}))
		rec = get(h, "/api/integrations/acme/sessions/s2", acmeToken)
		checkBody(t, rec.Body.Bytes(), `{"success":true,"sessionId":"s2","retention_status":"retained","rrweb_to_video_status":"converted","retained_until":"2031-11-21T12:00:00Z",
			"video":{"bytes":42,"sha256":"`+consent.DigestOf("x").String()+`","duration_seconds":3.28}}`)
		for _, tc := range []struct {
			path, token string
			status      int
		}{
			{"/api/integrations/acme/sessions/s-other", acmeToken, 404},
			{"/api/integrations/acme/sessions/s9", acmeToken, 404},
			{"/api/integrations/acme/sessions/s2", otherToken, 403},
			{"/api/integrations/acme/sessions/s2", acmeNoPerm, 403},
			{"/api/integrations/acme/sessions/s2", "", 401},
		} {
			if rec := get(h, tc.path, tc.token); rec.Code != tc.status {
				t.Errorf("GET %s: %d, want %d", tc.path, rec.Code, tc.status)
			}
		}
	})
}

// D8 for the retention routes of the Verification API: a request that
// carries a token and names a property_id that is not its company's is
// answered 404 and charged nothing, as /verify/match answers it, whether
// company-and-property credentials are on or not; the company's own
// property is let through.
func TestTokenRetentionChecksProperty(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e := setup(t, open(t))
		for _, on := range []bool{false, true} {
			h := e.handler(t, httpadapter.Config{PropertyCredentials: on})
			for path, session := range map[string]string{"/verify/session/acme": "s2", "/verify/certificate/acme": "s1"} {
				before := e.balance(t, "acme")
				rec := serve(h, request{path: path, token: acmeToken, body: `{"session_id":"` + session + `","property_id":"other-web"}`})
				if rec.Code != http.StatusNotFound {
					t.Errorf("credentials %v, %s with acme's token and other's property: %d %s; want 404 (D8)", on, path, rec.Code, rec.Body)
				}
				if got := e.balance(t, "acme"); got != before {
					t.Errorf("%s charged %s for a request naming another company's property", path, before-got)
				}
			}
		}
		h := e.handler(t, httpadapter.Config{})
		if rec := serve(h, request{path: "/verify/session/acme", token: acmeToken, body: `{"session_id":"s2","property_id":"acme-web"}`}); rec.Code != http.StatusOK {
			t.Errorf("acme's token with acme's property: %d %s; want 200", rec.Code, rec.Body)
		}
	})
}
