package storetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/wallet"
)

// The lists of the operator surface: pages of a company's
// ledger, certificates, sessions and revocations; its properties and tokens
// are Property/List and Token/List.

// stamp is an item's place in a page's order.
type stamp struct {
	at time.Time
	id string
}

// pageStamps are the creation times and ids of every list's items: ties in
// time ordered by id byte by byte (upper case before lower case, which a
// locale's collation would put the other way), and one item far back.
var pageStamps = []stamp{
	{t0.Add(2 * time.Second), "x-m"},
	{t0.Add(time.Second), "x-a"},
	{t0.Add(time.Second), "x-B"},
	{t0.Add(time.Second), "x-0"},
	{t0, "x-z"},
	{t0.Add(-24 * time.Hour), "x-old"},
}

func idsOf(stamps []string) []string {
	out := []string{}
	for _, s := range stamps {
		id, _, _ := strings.Cut(s, "@")
		out = append(out, id)
	}
	return out
}

// checkPage checks a list read by read: want holds the company acme's items
// as created, in any order, and other items of other companies exist with
// the same stamps. It reads the whole list in one page, then page by page,
// then within time bounds.
func checkPage[T any](t *testing.T, s consent.Store, want []*T, key func(*T) stamp, read func(tx consent.Tx, ctx context.Context, p consent.Page) ([]*T, error)) {
	t.Helper()
	slices.SortFunc(want, func(a, b *T) int {
		ka, kb := key(a), key(b)
		if consent.Newer(ka.at, ka.id, kb.at, kb.id) {
			return -1
		}
		return 1
	})
	stampsOf := func(items []*T) []string {
		out := []string{}
		for _, it := range items {
			k := key(it)
			out = append(out, fmt.Sprintf("%s@%s", k.id, k.at.Format(time.RFC3339Nano)))
		}
		return out
	}
	get := func(p consent.Page) []*T {
		t.Helper()
		var got []*T
		view(t, s, func(tx consent.Tx) error {
			var err error
			got, err = read(tx, ctx, p)
			return err
		})
		return got
	}
	// The whole list, every field.
	wantSame(t, want, get(consent.Page{CompanyID: "acme", Limit: consent.MaxPage}), opts, "one page of all")
	// Page by page, each starting after the last item of the one before.
	var walked []*T
	p := consent.Page{CompanyID: "acme", Limit: 2}
	for range len(want) + 2 {
		page := get(p)
		if len(page) > 2 {
			t.Fatalf("a page of limit 2 has %d items", len(page))
		}
		walked = append(walked, page...)
		if len(page) < 2 {
			break
		}
		last := key(page[len(page)-1])
		p.Before = consent.Cursor{At: last.at, ID: last.id}
	}
	wantSame(t, stampsOf(want), stampsOf(walked), exact, "page by page")
	// Time bounds: at or after Since, before Until, and a cursor within them.
	since, until := t0, t0.Add(2*time.Second)
	var bounded []*T
	for _, w := range want {
		if k := key(w); !k.at.Before(since) && k.at.Before(until) {
			bounded = append(bounded, w)
		}
	}
	got := get(consent.Page{CompanyID: "acme", Since: since, Until: until, Limit: consent.MaxPage})
	wantSame(t, stampsOf(bounded), stampsOf(got), exact, "Since %v, Until %v", since, until)
	cursor := key(bounded[0])
	got = get(consent.Page{CompanyID: "acme", Since: since, Until: until, Before: consent.Cursor{At: cursor.at, ID: cursor.id}, Limit: 2})
	wantSame(t, stampsOf(bounded[1:3]), stampsOf(got), exact, "bounded page after %v", cursor)
	// A cursor between ids of one time: the items of that time with a
	// lower id, then the older ones.
	got = get(consent.Page{CompanyID: "acme", Before: consent.Cursor{At: t0.Add(time.Second), ID: "x-C"}, Limit: 2})
	wantSame(t, []string{"x-B", "x-0"}, idsOf(stampsOf(got)), exact, "page before (t0+1s, x-C)")
	if got := get(consent.Page{CompanyID: "nobody", Limit: 10}); got == nil || len(got) != 0 {
		t.Errorf("a page of an unknown company = %#v; want an empty slice", got)
	}
}

// seedPage writes, for each of pageStamps, acme's item mine(i, st) and
// other's item theirs(st) (which no page of acme's may show), each with
// create, in one transaction, and returns acme's items in the order written.
func seedPage[T any](t *testing.T, s consent.Store, mine func(i int, st stamp) T, theirs func(st stamp) T,
	create func(tx consent.Tx, v T) error) []T {
	t.Helper()
	var want []T
	update(t, s, func(tx consent.Tx) error {
		for i, st := range pageStamps {
			v := mine(i, st)
			if err := create(tx, v); err != nil {
				return err
			}
			want = append(want, v)
			if err := create(tx, theirs(st)); err != nil {
				return err
			}
		}
		return nil
	})
	return want
}

func testLedgerPage(t *testing.T, s consent.Store) {
	fixture(t, s)
	want := seedPage(t, s, func(i int, st stamp) *wallet.Entry {
		return entry(st.id, "acme", wallet.TopUp, wallet.Amount(i+1)*wallet.Cent, st.at)
	}, func(st stamp) *wallet.Entry {
		return entry("o-"+st.id, "other", wallet.TopUp, wallet.Cent, st.at)
	}, func(tx consent.Tx, e *wallet.Entry) error {
		_, err := tx.Credit(ctx, e)
		return err
	})
	checkPage(t, s, want, func(e *wallet.Entry) stamp { return stamp{e.CreatedAt, e.ID} }, consent.Tx.LedgerPage)
}

func testCertificatePage(t *testing.T, s consent.Store) {
	fixture(t, s)
	want := seedPage(t, s, func(_ int, st stamp) *consent.Certificate {
		c := certificate(st.id, "acme", "acme-web", "s1")
		c.CreatedAt = st.at
		c.EmailDigest = consent.DigestOf(st.id + "@example.com")
		return c
	}, func(st stamp) *consent.Certificate {
		o := certificate("o-"+st.id, "other", "other-web", "s2")
		o.CreatedAt = st.at
		return o
	}, func(tx consent.Tx, c *consent.Certificate) error { return tx.CreateCertificate(ctx, c) })
	checkPage(t, s, want, func(c *consent.Certificate) stamp { return stamp{c.CreatedAt, c.ID} }, consent.Tx.CertificatePage)
}

func testSessionPage(t *testing.T, s consent.Store) {
	fixture(t, s)
	want := seedPage(t, s, func(_ int, st stamp) *consent.Session {
		ses := session(st.id, "acme", "acme-web")
		ses.CreatedAt, ses.URL, ses.CertificateID = st.at, "https://acme.example/"+st.id, "cert-"+st.id
		ses.UploadDigest = consent.DigestOf(st.id)
		return ses
	}, func(st stamp) *consent.Session {
		o := session("o-"+st.id, "other", "other-web")
		o.CreatedAt = st.at
		return o
	}, func(tx consent.Tx, ses *consent.Session) error { return tx.CreateSession(ctx, ses) })
	// The fixture's s1 is acme's too.
	s1 := session("s1", "acme", "acme-web")
	want = append(want, s1)
	checkPage(t, s, want, func(s *consent.Session) stamp { return stamp{s.CreatedAt, s.ID} }, consent.Tx.SessionPage)
}

func testRevocationPage(t *testing.T, s consent.Store) {
	fixture(t, s)
	want := seedPage(t, s, func(_ int, st stamp) *consent.Revocation {
		return &consent.Revocation{ID: st.id, CompanyID: "acme", CertificateID: "cert-" + st.id,
			MobileDigest: consent.DigestOf("+1555" + st.id), Reason: "asked", ClientIP: "203.0.113.9",
			CertificateIDs: []string{"cert-" + st.id}, CreatedAt: st.at}
	}, func(st stamp) *consent.Revocation {
		return &consent.Revocation{ID: "o-" + st.id, CompanyID: "other", CreatedAt: st.at}
	}, func(tx consent.Tx, r *consent.Revocation) error { return tx.CreateRevocation(ctx, r) })
	checkPage(t, s, want, func(r *consent.Revocation) stamp { return stamp{r.CreatedAt, r.ID} }, consent.Tx.RevocationPage)
}

// testEmptyLists: every store reads an empty list back as an empty slice,
// never nil — a value's list fields (a company's authorized third parties,
// a property's allowed origins, a token's permissions, a consent's types,
// a revocation's certificates, an endpoint's events), its bytes (a job's
// payload, a certificate's signature, an idempotency key's body, an event
// chunk) and the lists a method returns — however it was written (nil or
// empty), so that values read from two stores compare equal (cmp.Diff, as
// reflect.DeepEqual, tells nil from empty).
func testEmptyLists(t *testing.T, s consent.Store) {
	fixture(t, s)
	cert := certificate("cert-1", "acme", "acme-web", "s1")
	cert.Records[0].Types, cert.KeyID, cert.Signature = nil, "", nil
	bare := certificate("cert-2", "acme", "acme-web", "s1")
	bare.Records, bare.KeyID, bare.Signature = nil, "", []byte{}
	tok := &consent.Token{ID: "tok-1", CompanyID: "acme", Digest: consent.DigestOf("secret-1"), CreatedAt: t0}
	rev := &consent.Revocation{ID: "rev-1", CompanyID: "acme", Reason: "none matched", CreatedAt: t0}
	ep := endpoint("ep-a", "acme")
	var prior *consent.IdempotencyRecord
	update(t, s, func(tx consent.Tx) error {
		for _, fn := range []func() error{
			func() error { return tx.UpdateCompany(ctx, &consent.Company{ID: "other", Name: "other"}) },
			func() error {
				return tx.UpdateProperty(ctx, &consent.Property{ID: "other-web", Name: "Form", AllowedOrigins: []string{}})
			},
			func() error { return tx.CreateToken(ctx, tok) },
			func() error { return tx.CreateCertificate(ctx, cert) },
			func() error { return tx.CreateCertificate(ctx, bare) },
			func() error { return tx.CreateRevocation(ctx, rev) },
			func() error { return tx.AppendEvents(ctx, "s2", nil, t0) },
			func() error { return tx.EnqueueJob(ctx, job("purge", "a", t0)) },
			func() error { return tx.EnqueueJob(ctx, job("purge", "b", t0.Add(time.Hour))) },
			func() error { return tx.CreateWebhookEndpoint(ctx, ep) },
			func() error {
				// A claim found in the transaction that made it: no answer yet.
				if _, err := tx.ClaimIdempotencyKey(ctx, keyRecord("company:acme", "k1", 1, t0), t0); err != nil {
					return err
				}
				var err error
				prior, err = tx.ClaimIdempotencyKey(ctx, keyRecord("company:acme", "k1", 2, t0), t0)
				return err
			},
			func() error {
				if _, err := tx.ClaimIdempotencyKey(ctx, keyRecord("company:acme", "k2", 1, t0), t0); err != nil {
					return err
				}
				return tx.AnswerIdempotencyKey(ctx, "company:acme", "k2", 204, nil)
			},
		} {
			if err := fn(); err != nil {
				return err
			}
		}
		return nil
	})
	same := func(what string, want, got any, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v", what, err)
		}
		wantSame(t, want, got, exact, "%s", what)
	}
	claimed := keyRecord("company:acme", "k1", 1, t0)
	claimed.Body = []byte{}
	same("ClaimIdempotencyKey of a key claimed, not answered", claimed, prior, nil)
	answered := keyRecord("company:acme", "k2", 1, t0)
	answered.Status, answered.Body = 204, []byte{}
	same("ClaimIdempotencyKey of a key answered with no body", answered, claim(t, s, keyRecord("company:acme", "k2", 2, t0), t0, nil), nil)

	leased, err := lease(s, "w1", t0, "purge")
	wantJob := job("purge", "a", t0)
	wantJob.Payload, wantJob.Attempts, wantJob.LeaseOwner, wantJob.LeaseUntil = []byte{}, 1, "w1", t0.Add(10*time.Minute)
	same("LeaseJob", wantJob, leased, err)
	update(t, s, func(tx consent.Tx) error {
		return tx.EndJob(ctx, "purge", "a", "w1", &consent.Job{Attempts: 1, RunAfter: t0.Add(time.Minute)})
	})

	// What was written, each list empty.
	wantCo := func(id string) *consent.Company {
		return &consent.Company{ID: id, Name: id, AuthorizedThirdParties: []string{}, CreatedAt: t0}
	}
	wantProp := func(id, company string) *consent.Property {
		return &consent.Property{ID: id, CompanyID: company, Name: "Form", AllowedOrigins: []string{}, CreatedAt: t0}
	}
	wantTok := *tok
	wantTok.Permissions = []consent.Permission{}
	wantCert, wantBare := *cert, *bare
	wantCert.Records = slices.Clone(cert.Records)
	wantCert.Records[0].Types, wantCert.Records[1].Types, wantCert.Signature = []string{}, []string{}, []byte{}
	wantBare.Records = []consent.Record{}
	wantRev := *rev
	wantRev.CertificateIDs = []string{}
	wantEp := *ep
	wantEp.Events = []string{}
	wantEnded := job("purge", "a", t0.Add(time.Minute))
	wantEnded.Payload, wantEnded.Attempts = []byte{}, 1
	view(t, s, func(tx consent.Tx) error {
		for _, id := range []string{"acme", "other"} {
			c, err := tx.Company(ctx, id)
			same("Company("+id+")", wantCo(id), c, err)
		}
		p, err := tx.Property(ctx, "other-web")
		same("Property(other-web)", wantProp("other-web", "other"), p, err)
		props, err := tx.Properties(ctx, "acme")
		same("Properties(acme)", []*consent.Property{wantProp("acme-web", "acme")}, props, err)
		gotTok, err := tx.TokenByDigest(ctx, tok.Digest)
		same("TokenByDigest", &wantTok, gotTok, err)
		toks, err := tx.Tokens(ctx, "acme")
		same("Tokens(acme)", []*consent.Token{&wantTok}, toks, err)
		c, err := tx.Certificate(ctx, "cert-1")
		same("Certificate(cert-1)", &wantCert, c, err)
		c, err = tx.Certificate(ctx, "cert-2")
		same("Certificate(cert-2)", &wantBare, c, err)
		certs, err := tx.CertificatePage(ctx, consent.Page{CompanyID: "acme", Limit: 10})
		same("CertificatePage(acme)", []*consent.Certificate{&wantBare, &wantCert}, certs, err)
		revs, err := tx.Revocations(ctx, "acme")
		same("Revocations(acme)", []*consent.Revocation{&wantRev}, revs, err)
		revs, err = tx.RevocationPage(ctx, consent.Page{CompanyID: "acme", Limit: 10})
		same("RevocationPage(acme)", []*consent.Revocation{&wantRev}, revs, err)
		events, err := tx.Events(ctx, "s1")
		same("Events(s1), no chunk", [][]byte{}, events, err)
		events, err = tx.Events(ctx, "s2")
		same("Events(s2), one empty chunk", [][]byte{{}}, events, err)
		chunk, err := tx.EventChunk(ctx, "s2", 0)
		same("EventChunk(s2, 0)", []byte{}, chunk, err)
		j, err := tx.Job(ctx, "purge", "a")
		same("Job(purge, a) after EndJob", wantEnded, j, err)
		gotEp, err := tx.WebhookEndpoint(ctx, "ep-a")
		same("WebhookEndpoint(ep-a)", &wantEp, gotEp, err)
		eps, err := tx.WebhookEndpoints(ctx, "acme")
		same("WebhookEndpoints(acme)", []*consent.WebhookEndpoint{&wantEp}, eps, err)

		// Lists of nothing.
		ids, err := tx.CompanyIDs(ctx, "zzz", 10)
		same("CompanyIDs(after zzz)", []string{}, ids, err)
		props, err = tx.Properties(ctx, "nobody")
		same("Properties(nobody)", []*consent.Property{}, props, err)
		toks, err = tx.Tokens(ctx, "nobody")
		same("Tokens(nobody)", []*consent.Token{}, toks, err)
		ids, err = tx.CertificatesByEmail(ctx, "acme", consent.DigestOf("nobody@example.com"))
		same("CertificatesByEmail(none)", []string{}, ids, err)
		ids, err = tx.CertificatesByMobile(ctx, "acme", consent.DigestOf("+15550000000"))
		same("CertificatesByMobile(none)", []string{}, ids, err)
		ids, err = tx.CertificatesBySession(ctx, "s2")
		same("CertificatesBySession(s2)", []string{}, ids, err)
		sessions, err := tx.Sessions(ctx, nil)
		same("Sessions(none)", []*consent.Session{}, sessions, err)
		sessions, err = tx.SessionPage(ctx, consent.Page{CompanyID: "nobody", Limit: 10})
		same("SessionPage(nobody)", []*consent.Session{}, sessions, err)
		certs, err = tx.CertificatePage(ctx, consent.Page{CompanyID: "other", Limit: 10})
		same("CertificatePage(other)", []*consent.Certificate{}, certs, err)
		revs, err = tx.Revocations(ctx, "other")
		same("Revocations(other)", []*consent.Revocation{}, revs, err)
		revs, err = tx.RevocationPage(ctx, consent.Page{CompanyID: "other", Limit: 10})
		same("RevocationPage(other)", []*consent.Revocation{}, revs, err)
		ledger, err := tx.Ledger(ctx, "acme")
		same("Ledger(acme)", []*wallet.Entry{}, ledger, err)
		ledger, err = tx.LedgerPage(ctx, consent.Page{CompanyID: "acme", Limit: 10})
		same("LedgerPage(acme)", []*wallet.Entry{}, ledger, err)
		eps, err = tx.WebhookEndpoints(ctx, "other")
		same("WebhookEndpoints(other)", []*consent.WebhookEndpoint{}, eps, err)
		log, err := tx.WebhookDeliveries(ctx, "ep-a", 0, 10)
		same("WebhookDeliveries(ep-a)", []*consent.WebhookDelivery{}, log, err)
		audit, err := tx.AuditEntries(ctx, consent.AuditQuery{CompanyID: "acme", Limit: 10})
		same("AuditEntries(acme)", []*consent.AuditEntry{}, audit, err)
		return nil
	})
	update(t, s, func(tx consent.Tx) error {
		purged, err := tx.PurgeSessions(ctx, t0, 10)
		same("PurgeSessions(none due)", []*consent.Session{}, purged, err)
		ids, err := tx.PurgeCertificates(ctx, t0, 10)
		same("PurgeCertificates(none due)", []string{}, ids, err)
		return nil
	})
}
