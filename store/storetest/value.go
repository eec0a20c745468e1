package storetest

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/wallet"
)

// The edges of the values a store is given (consent.Tx, "What a store is
// given"): every store keeps them exactly. The checked Tx refuses what is
// beyond them before a store sees it; those refusals are the Service's
// tests (checked_*_test.go, at the repository's root).

// testText: every store keeps text that is consent.ValidText exactly,
// byte for byte, through every field that holds it — 4-byte runes, tab,
// newline and carriage return included.
func testText(t *testing.T, s consent.Store) {
	fixture(t, s)
	const good = "tab\tnewline\ncr\r\n 4-byte: 𝄞 😀 ✓ ü and a literal \uFFFD"

	// Good text round-trips byte for byte through every field that holds it.
	co := &consent.Company{ID: "co-" + good, Name: good, AuthorizedThirdParties: []string{good}, CreatedAt: t0}
	prop := &consent.Property{ID: "p-" + good, CompanyID: co.ID, Name: good, CreatedAt: t0}
	cert := certificate("cert-text", "acme", "acme-web", "s1")
	cert.Origin = "https://acme.example/" + good
	cert.Records = []consent.Record{{Text: good, Types: []string{good}, OptInAt: t0}}
	cert.EventsCombined = []byte(`[{"nul":"\u0000","esc":"\u001b","rune":"𝄞"}]`) // JSON escapes are text, kept as written
	rev := &consent.Revocation{ID: "rev-text", CompanyID: "acme", Reason: good, CreatedAt: t0}
	credit := entry("e-text", "acme", wallet.TopUp, 5, t0)
	credit.Reference = good
	update(t, s, func(tx consent.Tx) error {
		for _, fn := range []func() error{
			func() error { return tx.CreateCompany(ctx, co) },
			func() error { return tx.CreateProperty(ctx, prop) },
			func() error { return tx.CreateCertificate(ctx, cert) },
			func() error { return tx.CreateRevocation(ctx, rev) },
			func() error { _, err := tx.Credit(ctx, credit); return err },
		} {
			if err := fn(); err != nil {
				return err
			}
		}
		return nil
	})
	view(t, s, func(tx consent.Tx) error {
		found(t, "Company", co)(tx.Company(ctx, co.ID))
		found(t, "Property", prop)(tx.Property(ctx, prop.ID))
		found(t, "Certificate", cert)(tx.Certificate(ctx, cert.ID))
		found(t, "Revocations", []*consent.Revocation{rev})(tx.Revocations(ctx, "acme"))
		found(t, "Ledger", []*wallet.Entry{credit})(tx.Ledger(ctx, "acme"))
		return nil
	})

	update(t, s, func(tx consent.Tx) error { return tx.EnqueueJob(ctx, job(good, good, t0)) })
	if _, err := lease(s, good, t0, good); err != nil {
		t.Fatalf("lease: %v", err)
	}
	update(t, s, func(tx consent.Tx) error {
		return tx.EndJob(ctx, good, good, good, &consent.Job{Attempts: 1, RunAfter: t0, LastError: good})
	})
	view(t, s, func(tx consent.Tx) error {
		j, err := tx.Job(ctx, good, good)
		if err != nil || j.Kind != good || j.Key != good || j.LastError != good {
			t.Errorf("Job = %+v, %v; want kind, key and LastError %q", j, err, good)
		}
		return nil
	})
}

// testTimeRange: every store keeps times of the years 1 to 9999: the last
// microsecond of the year 9999 as it is (SQLite's microsecond integers
// would wrap a far future round into the past, and PostgreSQL's
// timestamptz cannot hold every time).
func testTimeRange(t *testing.T, s consent.Store) {
	fixture(t, s)
	// The last microsecond of the year 9999 is kept as it is.
	last := time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)
	update(t, s, func(tx consent.Tx) error {
		return tx.CreateToken(ctx, &consent.Token{ID: "tok-last", CompanyID: "acme", Digest: consent.DigestOf("last"), ExpiresAt: last, CreatedAt: t0})
	})
	if tok := read(t, s, consent.Tx.TokenByDigest, consent.DigestOf("last")); !tok.ExpiresAt.Equal(last) {
		t.Errorf("a token expiring at %v: %v", last, tok)
	}
}

// testTimeArguments: the ends of the years 1 to 9999 are kept on every
// store wherever a time is given — as an argument (a revocation's, a
// lease's or an endpoint's disabling time, a purge's bound), in an audit
// entry, or as the bound of a page or an audit query — and so is the zero
// time where it means none.
func testTimeArguments(t *testing.T, s consent.Store) {
	withTokenAndCertificate(t, s)
	update(t, s, func(tx consent.Tx) error {
		if err := tx.CreateWebhookEndpoint(ctx, endpoint("ep-a", "acme", consent.EventConsentRevoked)); err != nil {
			return err
		}
		return tx.EnqueueJob(ctx, job("purge", "held", t0))
	})
	if _, err := lease(s, "w1", t0, "purge"); err != nil {
		t.Fatalf("lease: %v", err)
	}
	// The ends of the range are kept; the zero time, where it means none,
	// passes.
	first, last := time.Date(1, 1, 1, 0, 0, 0, 1000, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)
	update(t, s, func(tx consent.Tx) error {
		for _, fn := range []func() error{
			func() error { return tx.RevokeToken(ctx, "acme", "tok-1", last) },
			func() error { return tx.RevokeCertificate(ctx, "cert-1", first) },
			func() error { return tx.DisableWebhookEndpoint(ctx, "acme", "ep-a", last) },
			func() error { return tx.RenewJob(ctx, "purge", "held", "w1", last) },
			func() error {
				return tx.AppendAudit(ctx, &consent.AuditEntry{CompanyID: "acme", At: last, Actor: consent.ActorOperator, Action: "test", Outcome: consent.AuditOK})
			},
			func() error {
				_, err := tx.PurgeCertificates(ctx, first, 10)
				return err
			},
			func() error {
				_, err := tx.PruneIdempotencyKeys(ctx, first, 10)
				return err
			},
		} {
			if err := fn(); err != nil {
				return err
			}
		}
		return nil
	})
	view(t, s, func(tx consent.Tx) error {
		if tok, err := tx.TokenByDigest(ctx, consent.DigestOf("secret-1")); err != nil || !tok.RevokedAt.Equal(last) {
			t.Errorf("token revoked at %v: %+v, %v", last, tok, err)
		}
		if c, err := tx.Certificate(ctx, "cert-1"); err != nil || !c.RevokedAt.Equal(first) {
			t.Errorf("certificate revoked at %v: %v", first, err)
		}
		if e, err := tx.WebhookEndpoint(ctx, "ep-a"); err != nil || !e.DisabledAt.Equal(last) {
			t.Errorf("endpoint disabled at %v: %+v, %v", last, e, err)
		}
		if j, err := tx.Job(ctx, "purge", "held"); err != nil || !j.LeaseUntil.Equal(last) {
			t.Errorf("job leased until %v: %+v, %v", last, j, err)
		}
		got, err := tx.AuditEntries(ctx, consent.AuditQuery{CompanyID: "acme", Since: first, Until: last, Limit: 10})
		if err != nil || len(got) != 0 {
			t.Errorf("audit entries before %v = %v, %v; want none (the entry is at it)", last, got, err)
		}
		if got, err = tx.AuditEntries(ctx, consent.AuditQuery{CompanyID: "acme", Since: last, Limit: 10}); err != nil || len(got) != 1 || !got[0].At.Equal(last) {
			t.Errorf("audit entries since %v = %v, %v; want the one at it", last, got, err)
		}
		page, err := tx.CertificatePage(ctx, consent.Page{CompanyID: "acme", Since: first, Until: last, Limit: 10})
		if err != nil || len(page) != 1 {
			t.Errorf("certificates from the year 1 to 9999 = %d, %v; want cert-1", len(page), err)
		}
		return nil
	})
	update(t, s, func(tx consent.Tx) error { return tx.DisableWebhookEndpoint(ctx, "acme", "ep-a", time.Time{}) })
	view(t, s, func(tx consent.Tx) error {
		if e, err := tx.WebhookEndpoint(ctx, "ep-a"); err != nil || e.Disabled() {
			t.Errorf("endpoint enabled again with the zero time = %+v, %v", e, err)
		}
		return nil
	})
}

// testIntRange: the counts and statuses that the SQL stores keep in 32-bit
// integer columns (a job's attempts, a delivery's attempt and HTTP status,
// an idempotency key's answered status) are kept exactly at the ends of
// -2^31 to 2^31-1 on every store. A job's attempts stop at
// consent.MaxJobAttempts, so that the ones LeaseJob adds never leave the
// column's range. A chunk number beyond the range is no chunk.
func testIntRange(t *testing.T, s consent.Store) {
	fixture(t, s)
	const over, under = math.MaxInt32 + 1, math.MinInt32 - 1
	update(t, s, func(tx consent.Tx) error {
		if err := tx.CreateWebhookEndpoint(ctx, endpoint("ep-a", "acme", consent.EventConsentRevoked)); err != nil {
			return err
		}
		_, err := tx.ClaimIdempotencyKey(ctx, keyRecord("company:acme", "k", 1, t0), t0)
		return err
	})
	delivery := func(attempt, status int) *consent.WebhookDelivery {
		return &consent.WebhookDelivery{EndpointID: "ep-a", MessageID: "msg_1", EventType: consent.EventConsentRevoked,
			Attempt: attempt, At: t0, Status: status}
	}
	withAttempts := func(key string, n int) *consent.Job {
		j := job(consent.JobConvert, key, t0)
		j.Attempts = n
		return j
	}
	// The ends of the range are kept as they are; a job at the most
	// attempts is leased once more.
	update(t, s, func(tx consent.Tx) error {
		if err := tx.EnqueueJob(ctx, withAttempts("most", consent.MaxJobAttempts)); err != nil {
			return err
		}
		least := job("webhook", "least", t0)
		least.Attempts = math.MinInt32
		if err := tx.EnqueueJob(ctx, least); err != nil {
			return err
		}
		if err := tx.AppendWebhookDelivery(ctx, delivery(math.MaxInt32, math.MinInt32)); err != nil {
			return err
		}
		return tx.AnswerIdempotencyKey(ctx, "company:acme", "k", math.MaxInt32, []byte("{}"))
	})
	// The count of leases stops there, so that the job still ends with
	// the count it was leased with.
	j, err := lease(s, "w2", t0, consent.JobConvert)
	if err != nil || j.Key != "most" || j.Attempts != consent.MaxJobAttempts {
		t.Fatalf("lease of the job at the most attempts = %+v, %v; want %d attempts", j, err, consent.MaxJobAttempts)
	}
	update(t, s, func(tx consent.Tx) error {
		return tx.EndJob(ctx, consent.JobConvert, "most", "w2", &consent.Job{Attempts: j.Attempts, RunAfter: t0.Add(time.Hour)})
	})
	view(t, s, func(tx consent.Tx) error {
		if j, err := tx.Job(ctx, "webhook", "least"); err != nil || j.Attempts != math.MinInt32 {
			t.Errorf("job of %d attempts = %+v, %v", math.MinInt32, j, err)
		}
		log, err := tx.WebhookDeliveries(ctx, "ep-a", 0, 10)
		if err != nil || len(log) != 1 || log[0].Attempt != math.MaxInt32 || log[0].Status != math.MinInt32 {
			t.Errorf("delivery log = %+v, %v; want attempt %d, status %d", log, err, math.MaxInt32, math.MinInt32)
		}
		for _, seq := range []int{over, under} {
			_, err := tx.EventChunk(ctx, "s1", seq)
			wantCode(t, fmt.Sprintf("EventChunk(s1, %d)", seq), err, consent.NotFound)
		}
		return nil
	})
	update(t, s, func(tx consent.Tx) error {
		prior, err := tx.ClaimIdempotencyKey(ctx, keyRecord("company:acme", "k", 1, t0), t0)
		if err != nil || prior == nil || prior.Status != math.MaxInt32 {
			t.Errorf("stored answer = %+v, %v; want status %d", prior, err, math.MaxInt32)
		}
		return nil
	})
}

// incompressible returns n bytes of text that compression cannot shorten
// (the hex of a chain of SHA-256 digests), so that PostgreSQL keeps it in an
// index at its full size.
func incompressible(seed string, n int) string {
	var b strings.Builder
	d := consent.DigestOf(seed)
	for b.Len() < n {
		b.WriteString(d.String())
		d = consent.DigestOf(d.String())
	}
	return b.String()[:n]
}

// testKeyLength: text that the stores keep in keys and indexes — ids and
// the ids that refer to other rows, job kinds and keys, idempotency scopes
// and keys — of consent.MaxKeyBytes is kept on every store, two of them in
// one index entry included (PostgreSQL refuses an index entry of more than
// about 2.7 kB), and a read given a longer one finds nothing.
func testKeyLength(t *testing.T, s consent.Store) {
	fixture(t, s)
	long := incompressible("long", 3000)
	view(t, s, func(tx consent.Tx) error {
		// A longer key is no row's.
		_, err := tx.Company(ctx, long)
		wantCode(t, "Company(long)", err, consent.NotFound)
		_, err = tx.Session(ctx, long)
		wantCode(t, "Session(long)", err, consent.NotFound)
		_, err = tx.Job(ctx, "purge", long)
		wantCode(t, "Job(purge, long)", err, consent.NotFound)
		return nil
	})

	// Keys of MaxKeyBytes, two to an index entry where an index has two:
	// a company's id and a property's, token's, session's, certificate's,
	// revocation's and ledger entry's (each indexed with its company's), a
	// job's kind and key, an idempotency key's scope and key.
	key := func(seed string) string { return incompressible(seed, consent.MaxKeyBytes) }
	co, prop, ses, cert, ep := key("company"), key("property"), key("session"), key("certificate"), key("endpoint")
	kind, jobKey, scope, idemKey := key("kind"), key("job"), key("scope"), key("idempotency")
	update(t, s, func(tx consent.Tx) error {
		for _, fn := range []func() error{
			func() error { return tx.CreateCompany(ctx, &consent.Company{ID: co, Name: "x", CreatedAt: t0}) },
			func() error {
				return tx.CreateProperty(ctx, &consent.Property{ID: prop, CompanyID: co, Name: "x", CreatedAt: t0})
			},
			func() error {
				return tx.CreateToken(ctx, &consent.Token{ID: key("token"), CompanyID: co, Digest: consent.DigestOf("max"), CreatedAt: t0})
			},
			func() error { return tx.CreateSession(ctx, session(ses, co, prop)) },
			func() error { return tx.CreateCertificate(ctx, certificate(cert, co, prop, ses)) },
			func() error {
				return tx.CreateRevocation(ctx, &consent.Revocation{ID: key("revocation"), CompanyID: co, CertificateID: cert, CreatedAt: t0})
			},
			func() error { _, err := tx.Credit(ctx, entry(key("entry"), co, wallet.TopUp, 1, t0)); return err },
			func() error { return tx.EnqueueJob(ctx, job(kind, jobKey, t0)) },
			func() error { return tx.CreateWebhookEndpoint(ctx, endpoint(ep, co, consent.EventConsentRevoked)) },
			func() error {
				return tx.AppendWebhookDelivery(ctx, &consent.WebhookDelivery{EndpointID: ep, MessageID: "msg_1", Attempt: 1, At: t0})
			},
			func() error {
				_, err := tx.ClaimIdempotencyKey(ctx, keyRecord(scope, idemKey, 1, t0), t0)
				return err
			},
			func() error { return tx.AnswerIdempotencyKey(ctx, scope, idemKey, 200, []byte("{}")) },
		} {
			if err := fn(); err != nil {
				return err
			}
		}
		return nil
	})
	view(t, s, func(tx consent.Tx) error {
		if c, err := tx.Certificate(ctx, cert); err != nil || c.SessionID != ses || c.CompanyID != co {
			t.Errorf("Certificate of a %d-byte id = %v; want it with its session and company", consent.MaxKeyBytes, err)
		}
		if j, err := tx.Job(ctx, kind, jobKey); err != nil || j.Kind != kind || j.Key != jobKey {
			t.Errorf("Job of a %d-byte kind and key: %v", consent.MaxKeyBytes, err)
		}
		if log, err := tx.WebhookDeliveries(ctx, ep, 0, 10); err != nil || len(log) != 1 {
			t.Errorf("WebhookDeliveries of a %d-byte endpoint id = %d entries, %v; want 1", consent.MaxKeyBytes, len(log), err)
		}
		page, err := tx.RevocationPage(ctx, consent.Page{CompanyID: co, Limit: 10})
		if err != nil || len(page) != 1 || page[0].CertificateID != cert {
			t.Errorf("RevocationPage of a %d-byte company id = %d revocations, %v; want 1", consent.MaxKeyBytes, len(page), err)
		}
		return nil
	})
}

// testReadBadText: CompanyIDs given an after that no id can be (a NUL,
// invalid UTF-8) starts the list where such an id would sort, byte by
// byte, on every store: the checked Tx passes it on as it is, and
// PostgreSQL refuses such text as a parameter. (Every other lookup by such
// text is answered by the checked Tx itself: consent's tests.)
func testReadBadText(t *testing.T, s consent.Store) {
	fixture(t, s)
	view(t, s, func(tx consent.Tx) error {
		// Companies acme and other, cut byte by byte.
		for after, want := range map[string][]string{
			"a\x00b": {"acme", "other"}, "acme\x00": {"other"}, "acme\xff": {"other"}, "\xff": {},
		} {
			ids, err := tx.CompanyIDs(ctx, after, 10)
			if err != nil {
				t.Errorf("CompanyIDs(%q): %v", after, err)
			}
			wantSame(t, want, ids, opts, "CompanyIDs(%q)", after)
		}
		return nil
	})
}

func testTimesUTC(t *testing.T, s consent.Store) {
	zone := time.FixedZone("UTC-5", -5*3600)
	at := t0.In(zone)
	update(t, s, func(tx consent.Tx) error {
		if err := tx.CreateCompany(ctx, &consent.Company{ID: "acme", Name: "Acme", CreatedAt: at}); err != nil {
			return err
		}
		if err := tx.CreateProperty(ctx, &consent.Property{ID: "p", CompanyID: "acme", Name: "Form", CreatedAt: at}); err != nil {
			return err
		}
		ses := session("s1", "acme", "p")
		ses.CreatedAt, ses.ExpiresAt = at, at.Add(time.Hour)
		if err := tx.CreateSession(ctx, ses); err != nil {
			return err
		}
		cert := certificate("c1", "acme", "p", "s1")
		cert.CreatedAt, cert.ExpiresAt, cert.Records[0].OptInAt = at, at.Add(time.Hour), at
		if err := tx.CreateCertificate(ctx, cert); err != nil {
			return err
		}
		if err := tx.RevokeCertificate(ctx, "c1", at); err != nil {
			return err
		}
		if err := tx.CreateToken(ctx, &consent.Token{ID: "t", CompanyID: "acme", Digest: consent.DigestOf("x"), ExpiresAt: at, CreatedAt: at}); err != nil {
			return err
		}
		if err := tx.RevokeToken(ctx, "acme", "t", at); err != nil {
			return err
		}
		if err := tx.CreateRevocation(ctx, &consent.Revocation{ID: "r", CompanyID: "acme", CreatedAt: at}); err != nil {
			return err
		}
		_, err := tx.Credit(ctx, entry("e", "acme", wallet.TopUp, 1, at))
		return err
	})
	c := read(t, s, consent.Tx.Company, "acme")
	p := read(t, s, consent.Tx.Property, "p")
	ses := read(t, s, consent.Tx.Session, "s1")
	cert := read(t, s, consent.Tx.Certificate, "c1")
	tok := read(t, s, consent.Tx.TokenByDigest, consent.DigestOf("x"))
	revs := read(t, s, consent.Tx.Revocations, "acme")
	ledger := read(t, s, consent.Tx.Ledger, "acme")
	if len(revs) != 1 || len(ledger) != 1 {
		t.Fatalf("%d revocations and %d ledger entries, want 1 and 1", len(revs), len(ledger))
	}
	times := []time.Time{c.CreatedAt, p.CreatedAt, ses.CreatedAt, cert.CreatedAt, cert.RevokedAt,
		cert.Records[0].OptInAt, tok.CreatedAt, tok.ExpiresAt, tok.RevokedAt, revs[0].CreatedAt, ledger[0].CreatedAt}
	for i, got := range times {
		if got.Location() != time.UTC || !got.Equal(at) {
			t.Errorf("time %d = %v (%v), want %v in UTC", i, got, got.Location(), t0)
		}
	}
	for i, got := range []time.Time{ses.ExpiresAt, cert.ExpiresAt} {
		if got.Location() != time.UTC || !got.Equal(at.Add(time.Hour)) {
			t.Errorf("expiry %d = %v, want %v in UTC", i, got, at.Add(time.Hour).UTC())
		}
	}
}

// testSubMicrosecond: every store keeps times to the microsecond (and a
// video's duration to the millisecond), and compares the times it is given
// at that precision too, so that a time with nanoseconds (the job runner's
// clock, time.Now) reads back and decides alike on every store.
func testSubMicrosecond(t *testing.T, s consent.Store) {
	fixture(t, s)
	ns := 500 * time.Nanosecond
	ses := session("fine", "acme", "acme-web")
	ses.CreatedAt, ses.ExpiresAt = t0.Add(ns), t0.Add(ns)
	update(t, s, func(tx consent.Tx) error {
		if err := tx.CreateSession(ctx, ses); err != nil {
			return err
		}
		withVideo := *ses
		withVideo.Video = consent.Video{Path: "v.mp4", Bytes: 1, Duration: 1500 * time.Microsecond}
		if err := tx.UpdateSession(ctx, &withVideo); err != nil {
			return err
		}
		if err := tx.EnqueueJob(ctx, job(consent.JobConvert, "fine", t0.Add(ns))); err != nil {
			return err
		}
		_, err := tx.ClaimIdempotencyKey(ctx, &consent.IdempotencyRecord{Scope: "acme", Key: "k", Fingerprint: consent.Digest{1},
			CreatedAt: t0.Add(-time.Hour), ExpiresAt: t0.Add(ns)}, t0.Add(-time.Hour))
		if err != nil {
			return err
		}
		return tx.AnswerIdempotencyKey(ctx, "acme", "k", 200, []byte("{}"))
	})
	view(t, s, func(tx consent.Tx) error {
		got, err := tx.Session(ctx, "fine")
		if err != nil || !got.CreatedAt.Equal(t0) || got.Video.Duration != time.Millisecond {
			t.Errorf("session: created %v, video %v, %v; want %v and 1ms", got.CreatedAt, got.Video.Duration, err, t0)
		}
		return nil
	})
	update(t, s, func(tx consent.Tx) error {
		// The job runs after t0+500ns, kept as t0: due at t0.
		j, err := tx.LeaseJob(ctx, []string{consent.JobConvert}, "worker", t0, t0.Add(time.Minute))
		if err != nil || j.Key != "fine" {
			t.Errorf("LeaseJob at t0 of a job due at t0+500ns: %v, %v; want it leased", j, err)
		}
		// The key expires at t0+500ns, kept as t0: expired at t0, so
		// claimed afresh.
		old, err := tx.ClaimIdempotencyKey(ctx, &consent.IdempotencyRecord{Scope: "acme", Key: "k", Fingerprint: consent.Digest{1},
			CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}, t0)
		if err != nil || old != nil {
			t.Errorf("claim at t0 of a key expiring at t0+500ns: %+v, %v; want a fresh claim", old, err)
		}
		// The session expires at t0+500ns, kept as t0: purged at t0.
		purged, err := tx.PurgeSessions(ctx, t0, 10)
		if err != nil || len(purged) != 1 {
			t.Errorf("PurgeSessions at t0 of a session expiring at t0+500ns: %d purged, %v; want it", len(purged), err)
		}
		return nil
	})
}
