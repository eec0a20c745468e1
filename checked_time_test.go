package consentkit_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/wallet"
)

// The time rules of the checked Tx: every time a value holds or a call is
// given is in the years 1 to 9999 (the zero time passes where it means
// none), a revocation has its time, and an operator session expires after
// it is created.

// TestCheckedTimeRange: times outside the years 1 to 9999 are Invalid in a
// value (SQLite's microsecond integers wrapped a far future round into the
// past; PostgreSQL refused what its timestamptz cannot hold as an internal
// error).
func TestCheckedTimeRange(t *testing.T) {
	t.Parallel()
	overStores(t, func(t *testing.T, s consent.Store) {
		fixture(t, s)
		far, before := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(0, 12, 31, 0, 0, 0, 0, time.UTC)
		huge := time.Date(300000, 1, 1, 0, 0, 0, 0, time.UTC)
		for name, write := range map[string]func(tx consent.Tx) error{
			"a token expiring in the year 10000": func(tx consent.Tx) error {
				return tx.CreateToken(ctx, &consent.Token{ID: "tok-far", CompanyID: "acme", Digest: consent.DigestOf("far"), ExpiresAt: far, CreatedAt: t0})
			},
			"a session created in the year 0": func(tx consent.Tx) error {
				ses := newSession("s-before", "acme", "acme-web")
				ses.CreatedAt = before
				return tx.CreateSession(ctx, ses)
			},
			"a consent given in the year 300000": func(tx consent.Tx) error {
				c := newCertificate("cert-far", "acme", "acme-web", "s1")
				c.Records[0].OptInAt = huge
				return tx.CreateCertificate(ctx, c)
			},
			"a job due in the year 300000": func(tx consent.Tx) error { return tx.EnqueueJob(ctx, newJob("webhook", "far", huge)) },
		} {
			wantCode(t, name, s.Update(ctx, write), consent.Invalid)
		}
	})
}

// TestCheckedTimeArguments: a time outside the years 1 to 9999 is Invalid
// wherever it is given — as an argument (a revocation's, a lease's or an
// endpoint's disabling time, a purge's bound, now), in a value that had no
// range check (an audit entry, a webhook endpoint or delivery, a ledger
// entry, an idempotency record) or as the bound of a page or an audit
// query — before anything else of the call, and nothing is written.
// PostgreSQL refused the far ones with an internal error, while SQLite
// wrapped them round and memory kept them.
func TestCheckedTimeArguments(t *testing.T) {
	t.Parallel()
	kinds := []string{consent.JobConvert, "purge", "webhook"}
	overStores(t, func(t *testing.T, s consent.Store) {
		fixture(t, s, tokenAndCertificate, endpointAndJob("purge", "held"))
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
			badEntry := func(id, company string) *wallet.Entry { return newEntry(id, company, wallet.TopUp, 1, bad) }
			withTime := func(edit func(r *consent.IdempotencyRecord)) *consent.IdempotencyRecord {
				r := newKeyRecord("company:acme", "k", 1, t0)
				edit(r)
				return r
			}
			ep := func(edit func(e *consent.WebhookEndpoint)) *consent.WebhookEndpoint {
				e := newEndpoint("ep-bad", "acme", consent.EventConsentRevoked)
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
					_, err := tx.ClaimIdempotencyKey(ctx, newKeyRecord("company:acme", "k", 1, t0), bad)
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
					_, err := tx.DebitAll(ctx, []*wallet.Entry{newEntry("e-1", "acme", wallet.ExactMatch, 1, t0), badEntry("e-2", "acme")})
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
		mustView(t, s, func(tx consent.Tx) error {
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
		if prior := claimKey(t, s, newKeyRecord("company:acme", "k", 1, t0), t0); prior != nil {
			t.Errorf("a refused claim was recorded: %+v", prior)
		}
	})
}

// TestCheckedRevokeWithoutTime: a revocation needs its time: a zero one is
// Invalid and changes nothing, so a later revocation still takes (a SQL
// store used to keep the zero time, which reads as not revoked, and then
// kept it forever).
func TestCheckedRevokeWithoutTime(t *testing.T) {
	t.Parallel()
	overStores(t, func(t *testing.T, s consent.Store) {
		fixture(t, s, tokenAndCertificate)
		for name, revoke := range map[string]func(tx consent.Tx, at time.Time) error{
			"RevokeToken":       func(tx consent.Tx, at time.Time) error { return tx.RevokeToken(ctx, "acme", "tok-1", at) },
			"RevokeCertificate": func(tx consent.Tx, at time.Time) error { return tx.RevokeCertificate(ctx, "cert-1", at) },
		} {
			err := s.Update(ctx, func(tx consent.Tx) error { return revoke(tx, time.Time{}) })
			wantCode(t, name+" at the zero time", err, consent.Invalid)
			mustUpdate(t, s, func(tx consent.Tx) error { return revoke(tx, t0) })
		}
		mustView(t, s, func(tx consent.Tx) error {
			tok, err := tx.TokenByDigest(ctx, consent.DigestOf("secret-1"))
			if err != nil || !tok.RevokedAt.Equal(t0) {
				t.Errorf("token after a zero-time revocation and one at t0: %v, %v; want revoked at t0", tok, err)
			}
			c, err := tx.Certificate(ctx, "cert-1")
			if err != nil || !c.RevokedAt.Equal(t0) {
				t.Errorf("certificate after a zero-time revocation and one at t0: revoked at %v, %v; want t0", c.RevokedAt, err)
			}
			return nil
		})
	})
}

// newOpSession is the operator session of secret, created three hours
// before t0 and expiring at expires.
func newOpSession(secret string, expires time.Time) *consent.OperatorSession {
	return &consent.OperatorSession{Digest: consent.DigestOf(secret), CreatedAt: t0.Add(-3 * time.Hour), ExpiresAt: expires}
}

// TestCheckedOperatorSessionRefusals: a session without a digest or a
// creation time, with a time outside the years 1 to 9999, or expiring at or
// before its creation (to the microsecond), is Invalid — before a taken
// digest is a conflict, and in a View before the write is refused — and so
// is pruning at a now outside those years; nothing is written or deleted.
func TestCheckedOperatorSessionRefusals(t *testing.T) {
	t.Parallel()
	overStores(t, func(t *testing.T, s consent.Store) {
		taken := newOpSession("taken", t0.Add(-time.Hour)) // expired, so a prune would take it
		mustUpdate(t, s, func(tx consent.Tx) error { return tx.CreateOperatorSession(ctx, taken) })
		far, before := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(0, 12, 31, 23, 59, 59, 999999000, time.UTC)
		with := func(secret string, edit func(o *consent.OperatorSession)) *consent.OperatorSession {
			o := newOpSession(secret, t0.Add(time.Hour))
			edit(o)
			return o
		}
		bad := map[string]*consent.OperatorSession{
			"the zero digest":      with("", func(o *consent.OperatorSession) { o.Digest = consent.Digest{} }),
			"no creation time":     with("no-created", func(o *consent.OperatorSession) { o.CreatedAt = time.Time{} }),
			"no expiry":            with("no-expiry", func(o *consent.OperatorSession) { o.ExpiresAt = time.Time{} }),
			"created in year 0":    with("created-0", func(o *consent.OperatorSession) { o.CreatedAt = before }),
			"created in year 1e4":  with("created-1e4", func(o *consent.OperatorSession) { o.CreatedAt, o.ExpiresAt = far, far.Add(time.Hour) }),
			"expiring in year 1e4": with("expiring-1e4", func(o *consent.OperatorSession) { o.ExpiresAt = far }),
			"expiring at creation": with("at-creation", func(o *consent.OperatorSession) { o.ExpiresAt = o.CreatedAt }),
			"expiring before":      with("before", func(o *consent.OperatorSession) { o.ExpiresAt = o.CreatedAt.Add(-time.Microsecond) }),
			"expiring within its creation's microsecond": with("same-micro", func(o *consent.OperatorSession) {
				o.CreatedAt, o.ExpiresAt = t0.Add(100*time.Nanosecond), t0.Add(900*time.Nanosecond)
			}),
			"a taken digest, expiring at creation": with("taken", func(o *consent.OperatorSession) { o.ExpiresAt = o.CreatedAt }),
		}
		for name, o := range bad {
			for how, run := range map[string]func(context.Context, func(consent.Tx) error) error{"Update": s.Update, "View": s.View} {
				err := run(ctx, func(tx consent.Tx) error { return tx.CreateOperatorSession(ctx, o) })
				wantCode(t, "CreateOperatorSession in "+how+" of a session with "+name, err, consent.Invalid)
			}
			if o.Digest.IsZero() || o.Digest == taken.Digest {
				continue
			}
			if got, err := func() (*consent.OperatorSession, error) {
				var got *consent.OperatorSession
				err := s.View(ctx, func(tx consent.Tx) (err error) { got, err = tx.OperatorSession(ctx, o.Digest); return err })
				return got, err
			}(); consent.ErrorCode(err) != consent.NotFound {
				t.Errorf("a refused session with %s was stored: %+v, %v", name, got, err)
			}
		}
		for name, now := range map[string]time.Time{"year 0": before, "year 10000": far, "year 300000": time.Date(300000, 1, 1, 0, 0, 0, 0, time.UTC)} {
			for how, run := range map[string]func(context.Context, func(consent.Tx) error) error{"Update": s.Update, "View": s.View} {
				err := run(ctx, func(tx consent.Tx) error {
					_, err := tx.PruneOperatorSessions(ctx, now, 10)
					return err
				})
				wantCode(t, "PruneOperatorSessions in "+how+" at "+name, err, consent.Invalid)
			}
		}
		mustView(t, s, func(tx consent.Tx) error {
			got, err := tx.OperatorSession(ctx, taken.Digest)
			if d := cmp.Diff(taken, got); err != nil || d != "" {
				t.Errorf("the taken, expired session after the refusals: %v (-want +got):\n%s", err, d)
			}
			return nil
		})
	})
}
