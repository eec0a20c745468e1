package consentkit_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/audit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/wallet"
)

// The checked_*_test.go files test the checked Tx, the Store that a
// Service hands out (Service.Store, consentkit.Checked): what it refuses, as
// Invalid, before a store sees it — text that is not ValidText, keys over
// MaxKeyBytes, times outside the years 1 to 9999, counts outside 32 bits,
// amounts that are not positive or over wallet.MaxBalance, lists and pages
// and queries that break a rule — which of two faults wins, and that a
// refusal writes nothing and leaves the transaction usable; and how it
// answers a lookup by a key that no row can have (NotFound, or an empty
// list). These cases were store/storetest's while every store checked its
// values; each keeps its assertions and runs over the stores that run in
// process. What a store does with the values it is given is storetest's.

// overStores runs fn, as a parallel subtest for the memory store and for
// SQLite, on the checked store of a Service over a new, empty store.
func overStores(t *testing.T, fn func(t *testing.T, s consent.Store)) {
	t.Helper()
	for _, k := range []struct {
		name string
		open func(tb testing.TB) consent.Store
	}{
		{"memory", func(tb testing.TB) consent.Store { return teststore.Memory(tb) }},
		{"sqlite", func(tb testing.TB) consent.Store { return teststore.SQLite(tb) }},
	} {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			svc, err := consentkit.NewService(k.open(t), consentkit.Config{})
			if err != nil {
				t.Fatal(err)
			}
			fn(t, svc.Store())
		})
	}
}

// t0 is a fixed time with microsecond precision, in UTC.
var t0 = time.Date(2026, 11, 20, 10, 0, 0, 123456000, time.UTC)

// mustUpdate runs fn in an Update of s, and mustView in a View, failing t
// when it fails.
func mustUpdate(t testing.TB, s consent.Store, fn func(tx consent.Tx) error) {
	t.Helper()
	must(t, s.Update(ctx, fn))
}

func mustView(t testing.TB, s consent.Store, fn func(tx consent.Tx) error) {
	t.Helper()
	must(t, s.View(ctx, fn))
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// fixture creates, through s, company "acme" with property "acme-web" and
// session "s1", and company "other" with property "other-web" and session
// "s2"; then, in the same transaction, what each of more writes.
func fixture(t *testing.T, s consent.Store, more ...func(tx consent.Tx) error) {
	t.Helper()
	mustUpdate(t, s, func(tx consent.Tx) error {
		var errs []error
		for _, c := range [][3]string{{"acme", "acme-web", "s1"}, {"other", "other-web", "s2"}} {
			errs = append(errs, tx.CreateCompany(ctx, &consent.Company{ID: c[0], Name: c[0], CreatedAt: t0}),
				tx.CreateProperty(ctx, &consent.Property{ID: c[1], CompanyID: c[0], Name: "Form", CreatedAt: t0}),
				tx.CreateSession(ctx, newSession(c[2], c[0], c[1])))
		}
		for _, fn := range more {
			errs = append(errs, fn(tx))
		}
		return errors.Join(errs...)
	})
}

// tokenAndCertificate gives acme the token "tok-1" (secret "secret-1") and
// the certificate "cert-1" of session s1 (for fixture).
func tokenAndCertificate(tx consent.Tx) error {
	return errors.Join(tx.CreateToken(ctx, &consent.Token{ID: "tok-1", CompanyID: "acme", Digest: consent.DigestOf("secret-1"), CreatedAt: t0}),
		tx.CreateCertificate(ctx, newCertificate("cert-1", "acme", "acme-web", "s1")))
}

// tenDollars credits $10 to acme's wallet (for fixture).
func tenDollars(tx consent.Tx) error {
	_, err := tx.Credit(ctx, newEntry("topup", "acme", wallet.TopUp, 10*wallet.Dollar, t0))
	return err
}

// endpointAndJob gives acme the webhook endpoint "ep-a" and queues the job
// of kind and key (for fixture).
func endpointAndJob(kind, key string) func(tx consent.Tx) error {
	return func(tx consent.Tx) error {
		return errors.Join(tx.CreateWebhookEndpoint(ctx, newEndpoint("ep-a", "acme", consent.EventConsentRevoked)),
			tx.EnqueueJob(ctx, newJob(kind, key, t0)))
	}
}

func newSession(id, company, property string) *consent.Session {
	return &consent.Session{ID: id, CompanyID: company, PropertyID: property, RetentionStatus: consent.RetentionNone,
		VideoStatus: consent.VideoNone, CreatedAt: t0, ExpiresAt: t0.Add(90 * 24 * time.Hour)}
}

// newCertificate is a certificate with two consents, the first of two types.
func newCertificate(id, company, property, sessionID string) *consent.Certificate {
	return &consent.Certificate{ID: id, CompanyID: company, PropertyID: property, SessionID: sessionID,
		Origin: "https://acme.example/quote", EventsCombined: []byte(`{"a":[1]}`), RetentionStatus: consent.RetentionNone,
		Records:   []consent.Record{{Text: "I agree.", Types: []string{"tcpa", "marketing"}, OptInAt: t0}, {Text: "Ich stimme zu ✓", OptInAt: t0}},
		CreatedAt: t0, ExpiresAt: t0.Add(90 * 24 * time.Hour)}
}

func newEntry(id, company string, kind wallet.EntryKind, amount wallet.Amount, at time.Time) *wallet.Entry {
	return &wallet.Entry{ID: id, CompanyID: company, Kind: kind, Amount: amount, Reference: "ref-" + id, CreatedAt: at}
}

func newJob(kind, key string, runAfter time.Time) *consent.Job {
	return &consent.Job{Kind: kind, Key: key, RunAfter: runAfter, CreatedAt: t0}
}

func newEndpoint(id, company string, events ...string) *consent.WebhookEndpoint {
	return &consent.WebhookEndpoint{ID: id, CompanyID: company, URL: "https://hooks.example/" + id,
		Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", Events: events, CreatedAt: t0}
}

func newKeyRecord(scope, key string, fp byte, at time.Time) *consent.IdempotencyRecord {
	return &consent.IdempotencyRecord{Scope: scope, Key: key, Fingerprint: consent.Digest{fp},
		CreatedAt: at, ExpiresAt: at.Add(consent.IdempotencyTTL)}
}

// lease leases a due job of kinds to owner for ten minutes from now, in a
// transaction of its own.
func lease(s consent.Store, owner string, now time.Time, kinds ...string) (*consent.Job, error) {
	var j *consent.Job
	err := s.Update(ctx, func(tx consent.Tx) (err error) {
		j, err = tx.LeaseJob(ctx, kinds, owner, now, now.Add(10*time.Minute))
		return err
	})
	return j, err
}

// claimKey claims r in a transaction of its own and returns the record
// found instead (nil: r was claimed).
func claimKey(t *testing.T, s consent.Store, r *consent.IdempotencyRecord, now time.Time) *consent.IdempotencyRecord {
	t.Helper()
	var prior *consent.IdempotencyRecord
	mustUpdate(t, s, func(tx consent.Tx) (err error) {
		prior, err = tx.ClaimIdempotencyKey(ctx, r, now)
		return err
	})
	return prior
}

// walletOf returns the company's ledger and balance.
func walletOf(t testing.TB, s consent.Store, companyID string) (ledger []*wallet.Entry, bal wallet.Amount) {
	t.Helper()
	mustView(t, s, func(tx consent.Tx) (err error) {
		if ledger, err = tx.Ledger(ctx, companyID); err == nil {
			bal, err = tx.Balance(ctx, companyID)
		}
		return err
	})
	return ledger, bal
}

// unchangedWallet fails t unless acme's wallet still has the ledger and
// the balance it had before what (a refused write).
func unchangedWallet(t *testing.T, s consent.Store, what string, ledger []*wallet.Entry, bal wallet.Amount) {
	t.Helper()
	gotLedger, gotBal := walletOf(t, s, "acme")
	if gotBal != bal {
		t.Errorf("%s: balance %v, want %v", what, gotBal, bal)
	}
	if d := cmp.Diff(ledger, gotLedger); d != "" {
		t.Errorf("%s changed the ledger (-want +got):\n%s", what, d)
	}
}

// chainLength returns how many entries the company's audit chain holds,
// failing t unless the chain is whole (audit.VerifyChain).
func chainLength(t testing.TB, s consent.Store, companyID string) int64 {
	t.Helper()
	svc, err := consentkit.NewService(s, consentkit.Config{})
	if err != nil {
		t.Fatal(err)
	}
	n, err := audit.VerifyChain(ctx, svc.Store(), companyID)
	if err != nil {
		t.Fatalf("the audit chain of %s: %v", companyID, err)
	}
	return n
}
