package storetest

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/wallet"
)

// testText checks the one text rule of the Tx contract (consent.ValidText):
// every store refuses NUL, other C0 controls and invalid UTF-8 with
// consent.Invalid before it writes anything, leaving the transaction usable,
// and keeps every other string exactly, 4-byte runes, tab, newline and
// carriage return included. A store that passes text to its engine
// unchecked fails here: PostgreSQL refuses NUL and invalid UTF-8 with an
// engine error, SQLite and memory keep them.
func testText(t *testing.T, s consent.Store) {
	fixture(t, s)
	const good = "tab\tnewline\ncr\r\n 4-byte: 𝄞 😀 ✓ ü and a literal \uFFFD"
	for _, bad := range []string{"nul\x00byte", "invalid \xff\xfe utf-8", "bell\x07", "esc\x1b[0m", "half \xf0\x9f\x98"} {
		t.Run(fmt.Sprintf("%q", bad), func(t *testing.T) { refuseText(t, s, bad) })
	}

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
		gotCo, err := tx.Company(ctx, co.ID)
		if d := cmp.Diff(co, gotCo, opts); err != nil || d != "" {
			t.Errorf("Company: %v (-want +got):\n%s", err, d)
		}
		gotProp, err := tx.Property(ctx, prop.ID)
		if d := cmp.Diff(prop, gotProp, opts); err != nil || d != "" {
			t.Errorf("Property: %v (-want +got):\n%s", err, d)
		}
		gotCert, err := tx.Certificate(ctx, cert.ID)
		if d := cmp.Diff(cert, gotCert, opts); err != nil || d != "" {
			t.Errorf("Certificate: %v (-want +got):\n%s", err, d)
		}
		revs, err := tx.Revocations(ctx, "acme")
		if d := cmp.Diff([]*consent.Revocation{rev}, revs, opts); err != nil || d != "" {
			t.Errorf("Revocations: %v (-want +got):\n%s", err, d)
		}
		ledger, err := tx.Ledger(ctx, "acme")
		if d := cmp.Diff([]*wallet.Entry{credit}, ledger, opts); err != nil || d != "" {
			t.Errorf("Ledger: %v (-want +got):\n%s", err, d)
		}
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

// refuseText tries bad in each text field of each write, inside one
// transaction that goes on after each refusal and commits, then checks that
// nothing of it was written.
func refuseText(t *testing.T, s consent.Store, bad string) {
	cert := func(edit func(c *consent.Certificate)) *consent.Certificate {
		c := certificate("cert-bad", "acme", "acme-web", "s1")
		edit(c)
		return c
	}
	writes := []struct {
		name string
		fn   func(tx consent.Tx) error
	}{
		{"CreateCompany(name)", func(tx consent.Tx) error {
			return tx.CreateCompany(ctx, &consent.Company{ID: "co-bad", Name: bad, CreatedAt: t0})
		}},
		{"CreateCompany(authorized_third_parties)", func(tx consent.Tx) error {
			return tx.CreateCompany(ctx, &consent.Company{ID: "co-bad", Name: "x", AuthorizedThirdParties: []string{bad}, CreatedAt: t0})
		}},
		{"UpdateCompany(name)", func(tx consent.Tx) error {
			return tx.UpdateCompany(ctx, &consent.Company{ID: "acme", Name: bad, CreatedAt: t0})
		}},
		{"CreateProperty(name)", func(tx consent.Tx) error {
			return tx.CreateProperty(ctx, &consent.Property{ID: "p-bad", CompanyID: "acme", Name: bad, CreatedAt: t0})
		}},
		{"CreateProperty(allowed_origins)", func(tx consent.Tx) error {
			return tx.CreateProperty(ctx, &consent.Property{ID: "p-bad", CompanyID: "acme", Name: "x", AllowedOrigins: []string{bad}, CreatedAt: t0})
		}},
		{"UpdateProperty(allowed_origins)", func(tx consent.Tx) error {
			return tx.UpdateProperty(ctx, &consent.Property{ID: "acme-web", CompanyID: "acme", Name: "Form", AllowedOrigins: []string{bad}})
		}},
		{"CreateSession(url)", func(tx consent.Tx) error {
			ses := session("s-bad", "acme", "acme-web")
			ses.URL = bad
			return tx.CreateSession(ctx, ses)
		}},
		{"CreateCertificate(user_agent)", func(tx consent.Tx) error {
			return tx.CreateCertificate(ctx, cert(func(c *consent.Certificate) { c.UserAgent = bad }))
		}},
		{"CreateCertificate(visibility.text_color)", func(tx consent.Tx) error {
			return tx.CreateCertificate(ctx, cert(func(c *consent.Certificate) { c.Visibility = &consent.Visibility{TextColor: bad} }))
		}},
		{"CreateCertificate(origin)", func(tx consent.Tx) error {
			return tx.CreateCertificate(ctx, cert(func(c *consent.Certificate) { c.Origin = bad }))
		}},
		{"CreateCertificate(consents.text)", func(tx consent.Tx) error {
			return tx.CreateCertificate(ctx, cert(func(c *consent.Certificate) { c.Records[1].Text = bad }))
		}},
		{"CreateCertificate(consents.types)", func(tx consent.Tx) error {
			return tx.CreateCertificate(ctx, cert(func(c *consent.Certificate) { c.Records[0].Types = []string{"tcpa", bad} }))
		}},
		{"CreateRevocation(reason)", func(tx consent.Tx) error {
			return tx.CreateRevocation(ctx, &consent.Revocation{ID: "rev-bad", CompanyID: "acme", Reason: bad, CreatedAt: t0})
		}},
		{"Credit(reference)", func(tx consent.Tx) error {
			e := entry("e-bad", "acme", wallet.TopUp, 1, t0)
			e.Reference = bad
			_, err := tx.Credit(ctx, e)
			return err
		}},
		{"Debit(reference)", func(tx consent.Tx) error {
			e := entry("e-bad", "acme", wallet.ExactMatch, 0, t0)
			e.Reference = bad
			_, err := tx.Debit(ctx, e)
			return err
		}},
		{"EnqueueJob(last_error)", func(tx consent.Tx) error {
			return tx.EnqueueJob(ctx, &consent.Job{Kind: "convert", Key: "s2", RunAfter: t0, LastError: bad, CreatedAt: t0})
		}},
		{"EnqueueJob(kind)", func(tx consent.Tx) error { return tx.EnqueueJob(ctx, job(bad, "s2", t0)) }},
		{"EnqueueJob(key)", func(tx consent.Tx) error { return tx.EnqueueJob(ctx, job("convert", bad, t0)) }},
		{"LeaseJob(owner)", func(tx consent.Tx) error {
			_, err := tx.LeaseJob(ctx, []string{"convert"}, bad, t0, t0.Add(time.Minute))
			return err
		}},
	}
	// Invalid UTF-8 in EventsCombined is refused too; control characters
	// cannot appear in it raw once it is JSON, so only invalid bytes apply.
	if !utf8.ValidString(bad) {
		writes = append(writes, struct {
			name string
			fn   func(tx consent.Tx) error
		}{"CreateCertificate(events_combined)", func(tx consent.Tx) error {
			return tx.CreateCertificate(ctx, cert(func(c *consent.Certificate) { c.EventsCombined = []byte(`["` + bad + `"]`) }))
		}})
	}
	update(t, s, func(tx consent.Tx) error {
		for _, w := range writes {
			wantCode(t, w.name, w.fn(tx), consent.Invalid)
		}
		return nil // commit: the refusals must leave the transaction usable
	})
	view(t, s, func(tx consent.Tx) error {
		_, err := tx.Company(ctx, "co-bad")
		wantCode(t, "Company(co-bad) after refusals", err, consent.NotFound)
		if c, err := tx.Company(ctx, "acme"); err != nil || c.Name != "acme" {
			t.Errorf("Company(acme) after refused UpdateCompany = %+v, %v; want the name unchanged", c, err)
		}
		_, err = tx.Property(ctx, "p-bad")
		wantCode(t, "Property(p-bad) after refusals", err, consent.NotFound)
		if p, err := tx.Property(ctx, "acme-web"); err != nil || len(p.AllowedOrigins) != 0 {
			t.Errorf("Property(acme-web) after refused UpdateProperty = %+v, %v; want no origins", p, err)
		}
		_, err = tx.Session(ctx, "s-bad")
		wantCode(t, "Session(s-bad) after refusals", err, consent.NotFound)
		_, err = tx.Certificate(ctx, "cert-bad")
		wantCode(t, "Certificate(cert-bad) after refusals", err, consent.NotFound)
		revs, err := tx.Revocations(ctx, "acme")
		if err != nil || len(revs) != 0 {
			t.Errorf("Revocations(acme) after refusals = %+v, %v; want none", revs, err)
		}
		ledger, err := tx.Ledger(ctx, "acme")
		if err != nil || len(ledger) != 0 {
			t.Errorf("Ledger(acme) after refusals = %+v, %v; want none", ledger, err)
		}
		if j, err := tx.Job(ctx, "convert", "s2"); err == nil {
			t.Errorf("refused job was written: %+v", j)
		}
		return nil
	})
}

// testEventsCombinedJSON: a certificate's combined events are JSON on
// every store (PostgreSQL's column type): none, or text that is not JSON,
// is Invalid and nothing is written.
func testEventsCombinedJSON(t *testing.T, s consent.Store) {
	fixture(t, s)
	for name, events := range map[string][]byte{"nil": nil, "empty": {}, "not JSON": []byte("not json"), "cut": []byte(`{"a":`)} {
		c := certificate("cert-"+strings.ReplaceAll(name, " ", "-"), "acme", "acme-web", "s1")
		c.EventsCombined = events
		err := s.Update(ctx, func(tx consent.Tx) error { return tx.CreateCertificate(ctx, c) })
		wantCode(t, "CreateCertificate with events_combined "+name, err, consent.Invalid)
	}
	view(t, s, func(tx consent.Tx) error {
		if ids, err := tx.CertificatesBySession(ctx, "s1"); err != nil || len(ids) != 0 {
			t.Errorf("certificates after the refusals: %v, %v; want none", ids, err)
		}
		return nil
	})
}

// testTimeRange: every store keeps times of the years 1 to 9999 and
// refuses others as Invalid (SQLite's microsecond integers wrapped a far
// future round into the past; PostgreSQL refused what its timestamptz
// cannot hold as an internal error).
func testTimeRange(t *testing.T, s consent.Store) {
	fixture(t, s)
	far, before := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(0, 12, 31, 0, 0, 0, 0, time.UTC)
	huge := time.Date(300000, 1, 1, 0, 0, 0, 0, time.UTC)
	for name, write := range map[string]func(tx consent.Tx) error{
		"a token expiring in the year 10000": func(tx consent.Tx) error {
			return tx.CreateToken(ctx, &consent.Token{ID: "tok-far", CompanyID: "acme", Digest: consent.DigestOf("far"), ExpiresAt: far, CreatedAt: t0})
		},
		"a session created in the year 0": func(tx consent.Tx) error {
			ses := session("s-before", "acme", "acme-web")
			ses.CreatedAt = before
			return tx.CreateSession(ctx, ses)
		},
		"a consent given in the year 300000": func(tx consent.Tx) error {
			c := certificate("cert-far", "acme", "acme-web", "s1")
			c.Records[0].OptInAt = huge
			return tx.CreateCertificate(ctx, c)
		},
		"a job due in the year 300000": func(tx consent.Tx) error { return tx.EnqueueJob(ctx, job("webhook", "far", huge)) },
	} {
		wantCode(t, name, s.Update(ctx, write), consent.Invalid)
	}
	// The last microsecond of the year 9999 is kept as it is.
	last := time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)
	update(t, s, func(tx consent.Tx) error {
		return tx.CreateToken(ctx, &consent.Token{ID: "tok-last", CompanyID: "acme", Digest: consent.DigestOf("last"), ExpiresAt: last, CreatedAt: t0})
	})
	view(t, s, func(tx consent.Tx) error {
		tok, err := tx.TokenByDigest(ctx, consent.DigestOf("last"))
		if err != nil || !tok.ExpiresAt.Equal(last) {
			t.Errorf("a token expiring at %v: %v, %v", last, tok, err)
		}
		return nil
	})
}

// testTimeArguments: a time outside the years 1 to 9999 is Invalid on
// every store wherever it is given — as an argument (a revocation's, a
// lease's or an endpoint's disabling time, a purge's bound, now), in a
// value that had no range check (an audit entry, a webhook endpoint or
// delivery, a ledger entry, an idempotency record) or as the bound of a
// page or an audit query — before anything else of the call, and nothing
// is written. PostgreSQL refused the far ones with an internal error,
// while SQLite wrapped them round and memory kept them. The ends of the
// range, and the zero time where it means none, are kept.
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
	bounds := map[string]time.Time{
		"year 0":      time.Date(0, 12, 31, 23, 59, 59, 999999000, time.UTC),
		"year 10000":  time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		"year 300000": time.Date(300000, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	for when, bad := range bounds {
		audit := func(company string) *consent.AuditEntry {
			return &consent.AuditEntry{CompanyID: company, At: bad, Actor: consent.ActorOperator, Action: "test", Outcome: consent.AuditOK}
		}
		badEntry := func(id, company string) *wallet.Entry { return entry(id, company, wallet.TopUp, 1, bad) }
		withTime := func(edit func(r *consent.IdempotencyRecord)) *consent.IdempotencyRecord {
			r := keyRecord("company:acme", "k", 1, t0)
			edit(r)
			return r
		}
		ep := func(edit func(e *consent.WebhookEndpoint)) *consent.WebhookEndpoint {
			e := endpoint("ep-bad", "acme", consent.EventConsentRevoked)
			edit(e)
			return e
		}
		page := func(p consent.Page) consent.Page { p.CompanyID, p.Limit = "acme", 10; return p }
		for name, call := range map[string]func(tx consent.Tx) error{
			"RevokeToken":               func(tx consent.Tx) error { return tx.RevokeToken(ctx, "acme", "tok-1", bad) },
			"RevokeToken(none)":         func(tx consent.Tx) error { return tx.RevokeToken(ctx, "acme", "none", bad) },
			"RevokeCertificate":         func(tx consent.Tx) error { return tx.RevokeCertificate(ctx, "cert-1", bad) },
			"RevokeCertificate(bad id)": func(tx consent.Tx) error { return tx.RevokeCertificate(ctx, "a\x00b", bad) },
			"DisableWebhookEndpoint":    func(tx consent.Tx) error { return tx.DisableWebhookEndpoint(ctx, "acme", "ep-a", bad) },
			"DisableWebhookEndpoint(bad id)": func(tx consent.Tx) error {
				return tx.DisableWebhookEndpoint(ctx, "acme", "a\x00b", bad)
			},
			"LeaseJob(now)": func(tx consent.Tx) error {
				_, err := tx.LeaseJob(ctx, kinds, "w2", bad, t0.Add(time.Hour))
				return err
			},
			"LeaseJob(until)": func(tx consent.Tx) error {
				_, err := tx.LeaseJob(ctx, kinds, "w2", t0.Add(time.Hour), bad)
				return err
			},
			"LeaseJob(no kinds)": func(tx consent.Tx) error {
				_, err := tx.LeaseJob(ctx, nil, "w2", bad, bad)
				return err
			},
			"RenewJob":       func(tx consent.Tx) error { return tx.RenewJob(ctx, "purge", "held", "w1", bad) },
			"RenewJob(none)": func(tx consent.Tx) error { return tx.RenewJob(ctx, "purge", "none", "w1", bad) },
			"AppendAudit":    func(tx consent.Tx) error { return tx.AppendAudit(ctx, audit("acme")) },
			"AppendAudit(unknown company)": func(tx consent.Tx) error {
				return tx.AppendAudit(ctx, audit("nobody"))
			},
			"AppendAudits": func(tx consent.Tx) error {
				ok := audit("acme")
				ok.At = t0
				return tx.AppendAudits(ctx, []*consent.AuditEntry{ok, audit("acme")})
			},
			"AppendWebhookDelivery": func(tx consent.Tx) error {
				return tx.AppendWebhookDelivery(ctx, &consent.WebhookDelivery{EndpointID: "ep-a", MessageID: "msg_1", Attempt: 1, At: bad})
			},
			"AppendWebhookDelivery(unknown endpoint)": func(tx consent.Tx) error {
				return tx.AppendWebhookDelivery(ctx, &consent.WebhookDelivery{EndpointID: "none", MessageID: "msg_1", Attempt: 1, At: bad})
			},
			"CreateWebhookEndpoint(created_at)": func(tx consent.Tx) error {
				return tx.CreateWebhookEndpoint(ctx, ep(func(e *consent.WebhookEndpoint) { e.CreatedAt = bad }))
			},
			"CreateWebhookEndpoint(disabled_at)": func(tx consent.Tx) error {
				return tx.CreateWebhookEndpoint(ctx, ep(func(e *consent.WebhookEndpoint) { e.DisabledAt = bad }))
			},
			"ClaimIdempotencyKey(created_at)": func(tx consent.Tx) error {
				_, err := tx.ClaimIdempotencyKey(ctx, withTime(func(r *consent.IdempotencyRecord) { r.CreatedAt = bad }), t0)
				return err
			},
			"ClaimIdempotencyKey(expires_at)": func(tx consent.Tx) error {
				_, err := tx.ClaimIdempotencyKey(ctx, withTime(func(r *consent.IdempotencyRecord) { r.ExpiresAt = bad }), t0)
				return err
			},
			"ClaimIdempotencyKey(now)": func(tx consent.Tx) error {
				_, err := tx.ClaimIdempotencyKey(ctx, keyRecord("company:acme", "k", 1, t0), bad)
				return err
			},
			"PurgeSessions": func(tx consent.Tx) error {
				_, err := tx.PurgeSessions(ctx, bad, 10)
				return err
			},
			"PurgeCertificates": func(tx consent.Tx) error {
				_, err := tx.PurgeCertificates(ctx, bad, 10)
				return err
			},
			"PruneIdempotencyKeys": func(tx consent.Tx) error {
				_, err := tx.PruneIdempotencyKeys(ctx, bad, 10)
				return err
			},
			"Credit": func(tx consent.Tx) error { _, err := tx.Credit(ctx, badEntry("e-1", "acme")); return err },
			"Credit(unknown company)": func(tx consent.Tx) error {
				_, err := tx.Credit(ctx, badEntry("e-1", "nobody"))
				return err
			},
			"Debit": func(tx consent.Tx) error { _, err := tx.Debit(ctx, badEntry("e-1", "acme")); return err },
			"DebitAll": func(tx consent.Tx) error {
				_, err := tx.DebitAll(ctx, []*wallet.Entry{entry("e-1", "acme", wallet.ExactMatch, 1, t0), badEntry("e-2", "acme")})
				return err
			},
			"SessionPage(since)": func(tx consent.Tx) error {
				_, err := tx.SessionPage(ctx, page(consent.Page{Since: bad}))
				return err
			},
			"CertificatePage(until)": func(tx consent.Tx) error {
				_, err := tx.CertificatePage(ctx, page(consent.Page{Until: bad}))
				return err
			},
			"RevocationPage(before)": func(tx consent.Tx) error {
				_, err := tx.RevocationPage(ctx, page(consent.Page{Before: consent.Cursor{At: bad, ID: "rev-1"}}))
				return err
			},
			"LedgerPage(before)": func(tx consent.Tx) error {
				_, err := tx.LedgerPage(ctx, page(consent.Page{Before: consent.Cursor{At: bad, ID: "e-1"}}))
				return err
			},
			"AuditEntries(since)": func(tx consent.Tx) error {
				_, err := tx.AuditEntries(ctx, consent.AuditQuery{CompanyID: "acme", Since: bad, Limit: 10})
				return err
			},
			"AuditEntries(until)": func(tx consent.Tx) error {
				_, err := tx.AuditEntries(ctx, consent.AuditQuery{CompanyID: "acme", Until: bad, Limit: 10})
				return err
			},
		} {
			wantCode(t, fmt.Sprintf("%s at %s", name, when), s.Update(ctx, call), consent.Invalid)
		}
	}
	view(t, s, func(tx consent.Tx) error {
		if tok, err := tx.TokenByDigest(ctx, consent.DigestOf("secret-1")); err != nil || !tok.RevokedAt.IsZero() {
			t.Errorf("token after the refusals = %+v, %v; want it not revoked", tok, err)
		}
		if c, err := tx.Certificate(ctx, "cert-1"); err != nil || !c.RevokedAt.IsZero() {
			t.Errorf("certificate after the refusals: %v; want it kept, not revoked", err)
		}
		if s, err := tx.Session(ctx, "s1"); err != nil || s.RetentionStatus != consent.RetentionNone {
			t.Errorf("session after the refusals = %+v, %v; want it not purged", s, err)
		}
		if e, err := tx.WebhookEndpoint(ctx, "ep-a"); err != nil || !e.DisabledAt.IsZero() {
			t.Errorf("endpoint after the refusals = %+v, %v; want it enabled", e, err)
		}
		_, err := tx.WebhookEndpoint(ctx, "ep-bad")
		wantCode(t, "WebhookEndpoint(ep-bad)", err, consent.NotFound)
		if log, err := tx.WebhookDeliveries(ctx, "ep-a", 0, 10); err != nil || len(log) != 0 {
			t.Errorf("delivery log after the refusals = %v, %v; want none", log, err)
		}
		if j, err := tx.Job(ctx, "purge", "held"); err != nil || j.LeaseOwner != "w1" || !j.LeaseUntil.Equal(t0.Add(10*time.Minute)) || j.Attempts != 1 {
			t.Errorf("job after the refusals = %+v, %v; want w1's lease of one attempt, until t0+10m", j, err)
		}
		if h, err := tx.AuditHead(ctx, "acme"); err != nil || h.Seq != 0 {
			t.Errorf("audit head after the refusals = %+v, %v; want no entry", h, err)
		}
		if ledger, err := tx.Ledger(ctx, "acme"); err != nil || len(ledger) != 0 {
			t.Errorf("ledger after the refusals = %v, %v; want none", ledger, err)
		}
		return nil
	})
	// No key was claimed: a claim now finds none.
	if prior := claim(t, s, keyRecord("company:acme", "k", 1, t0), t0, nil); prior != nil {
		t.Errorf("a refused claim was recorded: %+v", prior)
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
// an idempotency key's answered status) are Invalid on every store outside
// -2^31 to 2^31-1, and kept exactly at those ends (PostgreSQL's integer
// refused more with an internal error, while SQLite and memory kept it).
// A job's attempts stop at consent.MaxJobAttempts, so that the ones
// LeaseJob adds never leave the column's range. A chunk number beyond the
// range is no chunk.
func testIntRange(t *testing.T, s consent.Store) {
	fixture(t, s)
	const over, under = math.MaxInt32 + 1, math.MinInt32 - 1
	update(t, s, func(tx consent.Tx) error {
		if err := tx.CreateWebhookEndpoint(ctx, endpoint("ep-a", "acme", consent.EventConsentRevoked)); err != nil {
			return err
		}
		if err := tx.EnqueueJob(ctx, job("purge", "held", t0)); err != nil {
			return err
		}
		_, err := tx.ClaimIdempotencyKey(ctx, keyRecord("company:acme", "k", 1, t0), t0)
		return err
	})
	if _, err := lease(s, "w1", t0, "purge"); err != nil {
		t.Fatalf("lease: %v", err)
	}
	delivery := func(attempt, status int) *consent.WebhookDelivery {
		return &consent.WebhookDelivery{EndpointID: "ep-a", MessageID: "msg_1", EventType: consent.EventConsentRevoked,
			Attempt: attempt, At: t0, Status: status}
	}
	withAttempts := func(key string, n int) *consent.Job {
		j := job(consent.JobConvert, key, t0)
		j.Attempts = n
		return j
	}
	for name, write := range map[string]func(tx consent.Tx) error{
		"EnqueueJob(attempts 2^31)":     func(tx consent.Tx) error { return tx.EnqueueJob(ctx, withAttempts("a", over)) },
		"EnqueueJob(attempts -2^31-1)":  func(tx consent.Tx) error { return tx.EnqueueJob(ctx, withAttempts("a", under)) },
		"EnqueueJob(attempts over max)": func(tx consent.Tx) error { return tx.EnqueueJob(ctx, withAttempts("a", consent.MaxJobAttempts+1)) },
		"EnqueueJobs(attempts 2^31)": func(tx consent.Tx) error {
			return tx.EnqueueJobs(ctx, []*consent.Job{withAttempts("a", 1), withAttempts("b", over)})
		},
		"EndJob(attempts 2^31)": func(tx consent.Tx) error {
			return tx.EndJob(ctx, "purge", "held", "w1", &consent.Job{Attempts: over, RunAfter: t0})
		},
		"AppendWebhookDelivery(attempt 2^31)":   func(tx consent.Tx) error { return tx.AppendWebhookDelivery(ctx, delivery(over, 200)) },
		"AppendWebhookDelivery(status 2^31)":    func(tx consent.Tx) error { return tx.AppendWebhookDelivery(ctx, delivery(1, over)) },
		"AppendWebhookDelivery(status -2^31-1)": func(tx consent.Tx) error { return tx.AppendWebhookDelivery(ctx, delivery(1, under)) },
		"AnswerIdempotencyKey(status 2^31)": func(tx consent.Tx) error {
			return tx.AnswerIdempotencyKey(ctx, "company:acme", "k", over, nil)
		},
	} {
		wantCode(t, name, s.Update(ctx, write), consent.Invalid)
	}
	view(t, s, func(tx consent.Tx) error {
		if _, err := tx.Job(ctx, consent.JobConvert, "a"); err == nil {
			t.Errorf("a refused job was written")
		}
		if j, err := tx.Job(ctx, "purge", "held"); err != nil || j.LeaseOwner != "w1" || j.Attempts != 1 {
			t.Errorf("job after the refused EndJob = %+v, %v; want it leased by w1, one attempt", j, err)
		}
		if log, err := tx.WebhookDeliveries(ctx, "ep-a", 0, 10); err != nil || len(log) != 0 {
			t.Errorf("delivery log after the refusals = %v, %v; want none", log, err)
		}
		return nil
	})

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
// and keys — is at most consent.MaxKeyBytes on every store: one longer is
// Invalid and nothing is written (PostgreSQL refused an index entry of
// more than about 2.7 kB with an internal error, while SQLite and memory
// kept it). Keys of MaxKeyBytes are kept, two of them in one index entry
// included, and a read given a longer one finds nothing.
func testKeyLength(t *testing.T, s consent.Store) {
	fixture(t, s)
	long := incompressible("long", 3000)
	update(t, s, func(tx consent.Tx) error {
		return tx.CreateWebhookEndpoint(ctx, endpoint("ep-a", "acme", consent.EventConsentRevoked))
	})
	for name, write := range map[string]func(tx consent.Tx) error{
		"CreateCompany(id)": func(tx consent.Tx) error {
			return tx.CreateCompany(ctx, &consent.Company{ID: long, Name: "x", CreatedAt: t0})
		},
		"CreateProperty(id)": func(tx consent.Tx) error {
			return tx.CreateProperty(ctx, &consent.Property{ID: long, CompanyID: "acme", Name: "x", CreatedAt: t0})
		},
		"CreateProperty(company_id)": func(tx consent.Tx) error {
			return tx.CreateProperty(ctx, &consent.Property{ID: "p-long", CompanyID: long, Name: "x", CreatedAt: t0})
		},
		"CreateToken(id)": func(tx consent.Tx) error {
			return tx.CreateToken(ctx, &consent.Token{ID: long, CompanyID: "acme", Digest: consent.DigestOf("long"), CreatedAt: t0})
		},
		"CreateSession(id)": func(tx consent.Tx) error { return tx.CreateSession(ctx, session(long, "acme", "acme-web")) },
		"CreateCertificate(id)": func(tx consent.Tx) error {
			return tx.CreateCertificate(ctx, certificate(long, "acme", "acme-web", "s1"))
		},
		"CreateCertificate(session_id)": func(tx consent.Tx) error {
			return tx.CreateCertificate(ctx, certificate("cert-long", "acme", "acme-web", long))
		},
		"CreateRevocation(id)": func(tx consent.Tx) error {
			return tx.CreateRevocation(ctx, &consent.Revocation{ID: long, CompanyID: "acme", CreatedAt: t0})
		},
		"Credit(id)": func(tx consent.Tx) error {
			_, err := tx.Credit(ctx, entry(long, "acme", wallet.TopUp, 1, t0))
			return err
		},
		"EnqueueJob(kind)": func(tx consent.Tx) error { return tx.EnqueueJob(ctx, job(long, "k", t0)) },
		"EnqueueJob(key)":  func(tx consent.Tx) error { return tx.EnqueueJob(ctx, job("purge", long, t0)) },
		"EnqueueJobs(key)": func(tx consent.Tx) error {
			return tx.EnqueueJobs(ctx, []*consent.Job{job("purge", "k", t0), job("purge", long, t0)})
		},
		"CreateWebhookEndpoint(id)": func(tx consent.Tx) error {
			return tx.CreateWebhookEndpoint(ctx, endpoint(long, "acme", consent.EventConsentRevoked))
		},
		"AppendWebhookDelivery(endpoint_id)": func(tx consent.Tx) error {
			return tx.AppendWebhookDelivery(ctx, &consent.WebhookDelivery{EndpointID: long, MessageID: "msg_1", Attempt: 1, At: t0})
		},
		"ClaimIdempotencyKey(key)": func(tx consent.Tx) error {
			_, err := tx.ClaimIdempotencyKey(ctx, keyRecord("company:acme", long, 1, t0), t0)
			return err
		},
		"ClaimIdempotencyKey(scope)": func(tx consent.Tx) error {
			_, err := tx.ClaimIdempotencyKey(ctx, keyRecord(long, "k", 1, t0), t0)
			return err
		},
	} {
		wantCode(t, name, s.Update(ctx, write), consent.Invalid)
	}
	view(t, s, func(tx consent.Tx) error {
		// A longer key is no row's.
		_, err := tx.Company(ctx, long)
		wantCode(t, "Company(long)", err, consent.NotFound)
		_, err = tx.Session(ctx, long)
		wantCode(t, "Session(long)", err, consent.NotFound)
		_, err = tx.Job(ctx, "purge", long)
		wantCode(t, "Job(purge, long)", err, consent.NotFound)
		if jobs, err := tx.Job(ctx, "purge", "k"); err == nil {
			t.Errorf("a job of a refused EnqueueJobs was written: %+v", jobs)
		}
		if ids, err := tx.CompanyIDs(ctx, "", 10); err != nil || len(ids) != 2 {
			t.Errorf("CompanyIDs after the refusals = %d ids, %v; want acme and other", len(ids), err)
		}
		if ledger, err := tx.Ledger(ctx, "acme"); err != nil || len(ledger) != 0 {
			t.Errorf("Ledger(acme) after the refusals = %v, %v; want none", ledger, err)
		}
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

// testReadBadText: text that no row can hold (a NUL, invalid UTF-8) given
// to a method that looks rows up finds none, on every store: a single-row
// read and a change of one row answer NotFound, a list is empty, and
// CompanyIDs cuts the list where such an id would sort, byte by byte.
// PostgreSQL refuses such text as a parameter, and answered with an
// internal error. A page's or an audit query's company, being a bound of
// the query rather than a row's key, is Invalid (Page.Check,
// AuditQuery.Check).
func testReadBadText(t *testing.T, s consent.Store) {
	withTokenAndCertificate(t, s)
	update(t, s, func(tx consent.Tx) error {
		if err := tx.CreateWebhookEndpoint(ctx, endpoint("ep-a", "acme", consent.EventConsentRevoked)); err != nil {
			return err
		}
		return tx.EnqueueJob(ctx, job(consent.JobConvert, "s1", t0))
	})
	email := consent.DigestOf("someone@example.com")
	for _, bad := range []string{"a\x00b", "acme\xff"} {
		notFound := map[string]func(tx consent.Tx) error{
			"Company":     func(tx consent.Tx) error { _, err := tx.Company(ctx, bad); return err },
			"Property":    func(tx consent.Tx) error { _, err := tx.Property(ctx, bad); return err },
			"Session":     func(tx consent.Tx) error { _, err := tx.Session(ctx, bad); return err },
			"EventChunk":  func(tx consent.Tx) error { _, err := tx.EventChunk(ctx, bad, 0); return err },
			"Events":      func(tx consent.Tx) error { _, err := tx.Events(ctx, bad); return err },
			"Certificate": func(tx consent.Tx) error { _, err := tx.Certificate(ctx, bad); return err },
			"Job(kind)":   func(tx consent.Tx) error { _, err := tx.Job(ctx, bad, "s1"); return err },
			"Job(key)":    func(tx consent.Tx) error { _, err := tx.Job(ctx, consent.JobConvert, bad); return err },
			"LeaseJob": func(tx consent.Tx) error {
				_, err := tx.LeaseJob(ctx, []string{bad}, "w1", t0, t0.Add(time.Minute))
				return err
			},
			"WebhookEndpoint": func(tx consent.Tx) error { _, err := tx.WebhookEndpoint(ctx, bad); return err },
			"Balance":         func(tx consent.Tx) error { _, err := tx.Balance(ctx, bad); return err },
			"AuditHead":       func(tx consent.Tx) error { _, err := tx.AuditHead(ctx, bad); return err },
			// Changes of one row, found by its key.
			"RevokeToken(company)":      func(tx consent.Tx) error { return tx.RevokeToken(ctx, bad, "tok-1", t0) },
			"RevokeToken(id)":           func(tx consent.Tx) error { return tx.RevokeToken(ctx, "acme", bad, t0) },
			"RevokeCertificate":         func(tx consent.Tx) error { return tx.RevokeCertificate(ctx, bad, t0) },
			"AppendEvents":              func(tx consent.Tx) error { return tx.AppendEvents(ctx, bad, []byte("[]")) },
			"DisableWebhookEndpoint":    func(tx consent.Tx) error { return tx.DisableWebhookEndpoint(ctx, "acme", bad, t0) },
			"DeleteWebhookEndpoint":     func(tx consent.Tx) error { return tx.DeleteWebhookEndpoint(ctx, bad, "ep-a") },
			"RenewJob":                  func(tx consent.Tx) error { return tx.RenewJob(ctx, consent.JobConvert, bad, "w1", t0) },
			"EndJob":                    func(tx consent.Tx) error { return tx.EndJob(ctx, bad, "s1", "w1", nil) },
			"DisableWebhookEndpoint(c)": func(tx consent.Tx) error { return tx.DisableWebhookEndpoint(ctx, bad, "ep-a", t0) },
		}
		for name, call := range notFound {
			wantCode(t, fmt.Sprintf("%s(%q)", name, bad), s.Update(ctx, call), consent.NotFound)
		}
		empty := map[string]func(tx consent.Tx) (int, error){
			"Properties": func(tx consent.Tx) (int, error) { l, err := tx.Properties(ctx, bad); return len(l), err },
			"Tokens":     func(tx consent.Tx) (int, error) { l, err := tx.Tokens(ctx, bad); return len(l), err },
			"CertificatesByEmail": func(tx consent.Tx) (int, error) {
				l, err := tx.CertificatesByEmail(ctx, bad, email)
				return len(l), err
			},
			"CertificatesByMobile": func(tx consent.Tx) (int, error) {
				l, err := tx.CertificatesByMobile(ctx, bad, email)
				return len(l), err
			},
			"CertificatesBySession": func(tx consent.Tx) (int, error) {
				l, err := tx.CertificatesBySession(ctx, bad)
				return len(l), err
			},
			"Revocations":      func(tx consent.Tx) (int, error) { l, err := tx.Revocations(ctx, bad); return len(l), err },
			"Ledger":           func(tx consent.Tx) (int, error) { l, err := tx.Ledger(ctx, bad); return len(l), err },
			"WebhookEndpoints": func(tx consent.Tx) (int, error) { l, err := tx.WebhookEndpoints(ctx, bad); return len(l), err },
			"WebhookDeliveries": func(tx consent.Tx) (int, error) {
				l, err := tx.WebhookDeliveries(ctx, bad, 0, 10)
				return len(l), err
			},
		}
		for name, list := range empty {
			err := s.View(ctx, func(tx consent.Tx) error {
				n, err := list(tx)
				if err == nil && n != 0 {
					t.Errorf("%s(%q) = %d items; want none", name, bad, n)
				}
				return err
			})
			if err != nil {
				t.Errorf("%s(%q): %v; want an empty list", name, bad, err)
			}
		}
		invalid := map[string]func(tx consent.Tx) error{
			"SessionPage": func(tx consent.Tx) error {
				_, err := tx.SessionPage(ctx, consent.Page{CompanyID: bad, Limit: 10})
				return err
			},
			"AuditEntries": func(tx consent.Tx) error {
				_, err := tx.AuditEntries(ctx, consent.AuditQuery{CompanyID: bad, Limit: 10})
				return err
			},
		}
		for name, call := range invalid {
			wantCode(t, fmt.Sprintf("%s(%q)", name, bad), s.View(ctx, call), consent.Invalid)
		}
	}
	view(t, s, func(tx consent.Tx) error {
		got, err := tx.Sessions(ctx, []string{"s1", "s\x00", "s2\xff"})
		if err != nil || len(got) != 3 || got[0] == nil || got[0].ID != "s1" || got[1] != nil || got[2] != nil {
			t.Errorf("Sessions(s1, s\\x00, s2\\xff) = %v, %v; want s1, nil, nil", got, err)
		}
		// Companies acme and other, cut byte by byte.
		for after, want := range map[string][]string{
			"a\x00b": {"acme", "other"}, "acme\x00": {"other"}, "acme\xff": {"other"}, "\xff": {},
		} {
			ids, err := tx.CompanyIDs(ctx, after, 10)
			if d := cmp.Diff(want, ids, opts); err != nil || d != "" {
				t.Errorf("CompanyIDs(%q): %v (-want +got):\n%s", after, err, d)
			}
		}
		return nil
	})
	// A lease of several kinds, one of them such text, leases a job of the
	// others.
	if j, err := lease(s, "w1", t0, "a\x00b", consent.JobConvert, "\xff"); err != nil || j.Key != "s1" {
		t.Errorf("lease of convert and two kinds no job can have = %+v, %v; want convert s1", j, err)
	}
}
