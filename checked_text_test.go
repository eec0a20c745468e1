package consentkit_test

import (
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/wallet"
)

// The text rules of the checked Tx: ValidText in every text field, keys of
// at most MaxKeyBytes, EventsCombined that is JSON, and lookups by text no
// row can have.

// TestCheckedText: NUL, other C0 controls and invalid UTF-8 are refused in
// every text field with consent.Invalid before anything is written,
// leaving the transaction usable (PostgreSQL refuses NUL and invalid UTF-8
// with an engine error, SQLite and memory would keep them).
func TestCheckedText(t *testing.T) {
	t.Parallel()
	overStores(t, func(t *testing.T, s consent.Store) {
		fixture(t, s)
		for _, bad := range []string{"nul\x00byte", "invalid \xff\xfe utf-8", "bell\x07", "esc\x1b[0m", "half \xf0\x9f\x98"} {
			t.Run(fmt.Sprintf("%q", bad), func(t *testing.T) { refuseText(t, s, bad) })
		}
	})
}

// refuseText tries bad in each text field of each write, inside one
// transaction that goes on after each refusal and commits, then checks that
// nothing of it was written.
func refuseText(t *testing.T, s consent.Store, bad string) {
	cert := func(edit func(c *consent.Certificate)) *consent.Certificate {
		c := newCertificate("cert-bad", "acme", "acme-web", "s1")
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
			ses := newSession("s-bad", "acme", "acme-web")
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
			e := newEntry("e-bad", "acme", wallet.TopUp, 1, t0)
			e.Reference = bad
			_, err := tx.Credit(ctx, e)
			return err
		}},
		{"Debit(reference)", func(tx consent.Tx) error {
			e := newEntry("e-bad", "acme", wallet.ExactMatch, 1, t0) // 1, not 0: refused for its text, not its amount
			e.Reference = bad
			_, err := tx.Debit(ctx, e)
			return err
		}},
		{"EnqueueJob(last_error)", func(tx consent.Tx) error {
			return tx.EnqueueJob(ctx, &consent.Job{Kind: "convert", Key: "s2", RunAfter: t0, LastError: bad, CreatedAt: t0})
		}},
		{"EnqueueJob(kind)", func(tx consent.Tx) error { return tx.EnqueueJob(ctx, newJob(bad, "s2", t0)) }},
		{"EnqueueJob(key)", func(tx consent.Tx) error { return tx.EnqueueJob(ctx, newJob("convert", bad, t0)) }},
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
	mustUpdate(t, s, func(tx consent.Tx) error {
		for _, w := range writes {
			wantCode(t, w.name, w.fn(tx), consent.Invalid)
		}
		return nil // commit: the refusals must leave the transaction usable
	})
	mustView(t, s, func(tx consent.Tx) error {
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

// TestCheckedEventsCombinedJSON: a certificate's combined events are JSON
// (PostgreSQL's column type): none, or text that is not JSON, is Invalid
// and nothing is written.
func TestCheckedEventsCombinedJSON(t *testing.T) {
	t.Parallel()
	overStores(t, func(t *testing.T, s consent.Store) {
		fixture(t, s)
		for name, events := range map[string][]byte{"nil": nil, "empty": {}, "not JSON": []byte("not json"), "cut": []byte(`{"a":`)} {
			c := newCertificate("cert-"+strings.ReplaceAll(name, " ", "-"), "acme", "acme-web", "s1")
			c.EventsCombined = events
			err := s.Update(ctx, func(tx consent.Tx) error { return tx.CreateCertificate(ctx, c) })
			wantCode(t, "CreateCertificate with events_combined "+name, err, consent.Invalid)
		}
		mustView(t, s, func(tx consent.Tx) error {
			if ids, err := tx.CertificatesBySession(ctx, "s1"); err != nil || len(ids) != 0 {
				t.Errorf("certificates after the refusals: %v, %v; want none", ids, err)
			}
			return nil
		})
	})
}

// TestCheckedKeyText: an idempotency key's scope and key are text: one
// that is not (a NUL, invalid UTF-8) is Invalid to claim, answer or
// release.
func TestCheckedKeyText(t *testing.T) {
	t.Parallel()
	overStores(t, func(t *testing.T, s consent.Store) {
		fixture(t, s)
		for _, bad := range []struct{ scope, key string }{{"acme", "a\x00b"}, {"acme\xff", "k"}} {
			for name, call := range map[string]func(tx consent.Tx) error{
				"Claim": func(tx consent.Tx) error {
					_, err := tx.ClaimIdempotencyKey(ctx, newKeyRecord(bad.scope, bad.key, 1, t0), t0)
					return err
				},
				"Answer":  func(tx consent.Tx) error { return tx.AnswerIdempotencyKey(ctx, bad.scope, bad.key, 200, nil) },
				"Release": func(tx consent.Tx) error { return tx.ReleaseIdempotencyKey(ctx, bad.scope, bad.key) },
			} {
				wantCode(t, fmt.Sprintf("%s of %q %q", name, bad.scope, bad.key), s.Update(ctx, call), consent.Invalid)
			}
		}
	})
}

// TestCheckedKeyLength: text kept in keys and indexes — ids and the ids
// that refer to other rows, job kinds and keys, idempotency scopes and
// keys — is at most consent.MaxKeyBytes: one longer is Invalid and nothing
// is written (PostgreSQL refused an index entry of more than about 2.7 kB
// with an internal error, while SQLite and memory kept it).
func TestCheckedKeyLength(t *testing.T) {
	t.Parallel()
	overStores(t, func(t *testing.T, s consent.Store) {
		fixture(t, s)
		long := strings.Repeat("k", consent.MaxKeyBytes+1)
		mustUpdate(t, s, func(tx consent.Tx) error {
			return tx.CreateWebhookEndpoint(ctx, newEndpoint("ep-a", "acme", consent.EventConsentRevoked))
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
			"CreateSession(id)": func(tx consent.Tx) error { return tx.CreateSession(ctx, newSession(long, "acme", "acme-web")) },
			"CreateCertificate(id)": func(tx consent.Tx) error {
				return tx.CreateCertificate(ctx, newCertificate(long, "acme", "acme-web", "s1"))
			},
			"CreateCertificate(session_id)": func(tx consent.Tx) error {
				return tx.CreateCertificate(ctx, newCertificate("cert-long", "acme", "acme-web", long))
			},
			"CreateRevocation(id)": func(tx consent.Tx) error {
				return tx.CreateRevocation(ctx, &consent.Revocation{ID: long, CompanyID: "acme", CreatedAt: t0})
			},
			"Credit(id)": func(tx consent.Tx) error {
				_, err := tx.Credit(ctx, newEntry(long, "acme", wallet.TopUp, 1, t0))
				return err
			},
			"EnqueueJob(kind)": func(tx consent.Tx) error { return tx.EnqueueJob(ctx, newJob(long, "k", t0)) },
			"EnqueueJob(key)":  func(tx consent.Tx) error { return tx.EnqueueJob(ctx, newJob("purge", long, t0)) },
			"EnqueueJobs(key)": func(tx consent.Tx) error {
				return tx.EnqueueJobs(ctx, []*consent.Job{newJob("purge", "k", t0), newJob("purge", long, t0)})
			},
			"CreateWebhookEndpoint(id)": func(tx consent.Tx) error {
				return tx.CreateWebhookEndpoint(ctx, newEndpoint(long, "acme", consent.EventConsentRevoked))
			},
			"AppendWebhookDelivery(endpoint_id)": func(tx consent.Tx) error {
				return tx.AppendWebhookDelivery(ctx, &consent.WebhookDelivery{EndpointID: long, MessageID: "msg_1", Attempt: 1, At: t0})
			},
			"ClaimIdempotencyKey(key)": func(tx consent.Tx) error {
				_, err := tx.ClaimIdempotencyKey(ctx, newKeyRecord("company:acme", long, 1, t0), t0)
				return err
			},
			"ClaimIdempotencyKey(scope)": func(tx consent.Tx) error {
				_, err := tx.ClaimIdempotencyKey(ctx, newKeyRecord(long, "k", 1, t0), t0)
				return err
			},
		} {
			wantCode(t, name, s.Update(ctx, write), consent.Invalid)
		}
		mustView(t, s, func(tx consent.Tx) error {
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
	})
}

// TestCheckedReadBadText: text that no row can hold (a NUL, invalid UTF-8)
// given to a method that looks rows up finds none: a single-row read and a
// change of one row answer NotFound, a list is empty and a count zero,
// Sessions has nil at its places, and a lease of such a kind leases one of
// the others.
// PostgreSQL refuses such text as a parameter, and answered with an
// internal error. A page's or an audit query's company, being a bound of
// the query rather than a row's key, is Invalid (Page.Check,
// AuditQuery.Check).
func TestCheckedReadBadText(t *testing.T) {
	t.Parallel()
	overStores(t, func(t *testing.T, s consent.Store) {
		fixture(t, s, tokenAndCertificate, endpointAndJob(consent.JobConvert, "s1"))
		email := consent.DigestOf("someone@example.com")
		for _, bad := range []string{"a\x00b", "acme\xff"} {
			notFound := map[string]func(tx consent.Tx) error{
				"Company":     func(tx consent.Tx) error { _, err := tx.Company(ctx, bad); return err },
				"LockCompany": func(tx consent.Tx) error { return tx.LockCompany(ctx, bad) },
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
				"AppendEvents":              func(tx consent.Tx) error { return tx.AppendEvents(ctx, bad, []byte("[]"), time.Now()) },
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
				"CountJobs": func(tx consent.Tx) (int, error) { return tx.CountJobs(ctx, bad) },
				"CountCompanyJobs(kind)": func(tx consent.Tx) (int, error) {
					return tx.CountCompanyJobs(ctx, bad, "acme")
				},
				"CountCompanyJobs(company)": func(tx consent.Tx) (int, error) {
					return tx.CountCompanyJobs(ctx, consent.JobAttest, bad)
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
			// A delete by such a key deletes nothing (the fixture's job
			// is still there to lease below).
			deletes := map[string]func(tx consent.Tx) (int, error){
				"DeleteLaneJobs(kind)": func(tx consent.Tx) (int, error) {
					return tx.DeleteLaneJobs(ctx, bad, "acme", "")
				},
				"DeleteLaneJobs(company)": func(tx consent.Tx) (int, error) {
					return tx.DeleteLaneJobs(ctx, consent.JobConvert, bad, "")
				},
				"DeleteLaneJobs(lane)": func(tx consent.Tx) (int, error) {
					return tx.DeleteLaneJobs(ctx, consent.JobConvert, "", bad)
				},
			}
			for name, del := range deletes {
				err := s.Update(ctx, func(tx consent.Tx) error {
					n, err := del(tx)
					if err == nil && n != 0 {
						t.Errorf("%s(%q) deleted %d jobs; want none", name, bad, n)
					}
					return err
				})
				if err != nil {
					t.Errorf("%s(%q): %v; want none deleted", name, bad, err)
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
		mustView(t, s, func(tx consent.Tx) error {
			got, err := tx.Sessions(ctx, []string{"s1", "s\x00", "s2\xff"})
			if err != nil || len(got) != 3 || got[0] == nil || got[0].ID != "s1" || got[1] != nil || got[2] != nil {
				t.Errorf("Sessions(s1, s\\x00, s2\\xff) = %v, %v; want s1, nil, nil", got, err)
			}
			return nil
		})
		// A lease of several kinds, one of them such text, leases a job of the
		// others.
		if j, err := lease(s, "w1", t0, "a\x00b", consent.JobConvert, "\xff"); err != nil || j.Key != "s1" {
			t.Errorf("lease of convert and two kinds no job can have = %+v, %v; want convert s1", j, err)
		}
	})
}

// TestCheckedWebhookText: an endpoint's and a delivery's text is ValidText:
// other text is Invalid and nothing is written.
func TestCheckedWebhookText(t *testing.T) {
	t.Parallel()
	overStores(t, func(t *testing.T, s consent.Store) {
		fixture(t, s)
		const bad = "bad\x00text"
		mustUpdate(t, s, func(tx consent.Tx) error { return tx.CreateWebhookEndpoint(ctx, newEndpoint("ep-a", "acme")) })
		for name, fn := range map[string]func(tx consent.Tx) error{
			"CreateWebhookEndpoint(url)": func(tx consent.Tx) error {
				e := newEndpoint("ep-b", "acme")
				e.URL = bad
				return tx.CreateWebhookEndpoint(ctx, e)
			},
			"CreateWebhookEndpoint(events)": func(tx consent.Tx) error {
				return tx.CreateWebhookEndpoint(ctx, newEndpoint("ep-b", "acme", "ok", "\xff"))
			},
			"AppendWebhookDelivery(error)": func(tx consent.Tx) error {
				return tx.AppendWebhookDelivery(ctx, &consent.WebhookDelivery{EndpointID: "ep-a", MessageID: "m", At: t0, Error: bad})
			},
		} {
			err := s.Update(ctx, fn)
			wantCode(t, name, err, consent.Invalid)
		}
		mustView(t, s, func(tx consent.Tx) error {
			list, _ := tx.WebhookEndpoints(ctx, "acme")
			log, _ := tx.WebhookDeliveries(ctx, "ep-a", 0, 10)
			if len(list) != 1 || len(log) != 0 {
				t.Errorf("after refused writes: %d endpoints, %d log entries; want 1 and 0", len(list), len(log))
			}
			return nil
		})
	})
}

// TestClientIPLength: a certificate's client_ip is at most
// consent.MaxClientIP bytes, through the Go API and through the checked
// Tx alike, on every store: one longer is Invalid and nothing is written
// (PostgreSQL indexes it and refused a long one with an internal error,
// while SQLite and memory kept it).
func TestClientIPLength(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	raw := make([]byte, 6000)
	for i := range raw {
		raw[i] = byte(rnd.Uint32())
	}
	long := base64.RawStdEncoding.EncodeToString(raw) // 8000 bytes that compress badly
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		svc, err := consentkit.NewService(open(t), consentkit.Config{})
		if err != nil {
			t.Fatal(err)
		}
		mustDo(t, svc)
		issue := func(id, ip string) error {
			_, err := svc.IssueCertificate(ctx, consentkit.CertificateParams{ID: id, CompanyID: "acme", PropertyID: "web", SessionID: "s1",
				Records: []consent.Record{{Text: "I agree"}}, ClientIP: ip})
			return err
		}
		wantCode(t, "IssueCertificate(8000 bytes)", issue("cert-long", long), consent.Invalid)
		wantCode(t, "IssueCertificate(65 bytes)", issue("cert-65", strings.Repeat("1", consent.MaxClientIP+1)), consent.Invalid)
		c := newCertificate("cert-tx", "acme", "web", "s1")
		c.ClientIP = long
		wantCode(t, "CreateCertificate", svc.Store().Update(ctx, func(tx consent.Tx) error { return tx.CreateCertificate(ctx, c) }), consent.Invalid)
		mustView(t, svc.Store(), func(tx consent.Tx) error {
			for _, id := range []string{"cert-long", "cert-65", "cert-tx"} {
				if _, err := tx.Certificate(ctx, id); consent.ErrorCode(err) != consent.NotFound {
					t.Errorf("refused %s: read back (%v)", id, err)
				}
			}
			return nil
		})
		ip := "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255"
		must(t, issue("cert-ip", ip))
		if got := certificate(t, svc, "cert-ip").ClientIP; got != ip {
			t.Errorf("client_ip read back %q, want %q", got, ip)
		}
	})
}
