package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/consentkit/consentkit/audit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/wallet"
)

var ctx = context.Background()

// opts compares across stores: an empty slice equals a nil one.
var opts = cmp.Options{cmpopts.EquateEmpty()}

// errBoom is the error a call returns to fail by its own choice.
var errBoom = errors.New("boom")

// t0 is a fixed time with microsecond precision, in UTC.
var t0 = time.Date(2026, 11, 20, 10, 0, 0, 123456000, time.UTC)

// read returns what get(tx, ctx, arg) reads in a View, failing t on an
// error.
func read[A, T any](t testing.TB, s consent.Store, get func(consent.Tx, context.Context, A) (T, error), arg A) T {
	t.Helper()
	var out T
	view(t, s, func(tx consent.Tx) error {
		var err error
		out, err = get(tx, ctx, arg)
		return err
	})
	return out
}

func auditEntries(t testing.TB, s consent.Store, q consent.AuditQuery) []*consent.AuditEntry {
	t.Helper()
	return read(t, s, consent.Tx.AuditEntries, q)
}

func auditHead(t testing.TB, s consent.Store, companyID string) *consent.AuditHead {
	t.Helper()
	return read(t, s, consent.Tx.AuditHead, companyID)
}

// checkChain fails t unless the entries are the company's whole chain:
// Seq 1, 2, 3… without a gap, each linked to the one before and hashed by
// audit.Hash, the last one being the head.
func checkChain(t testing.TB, s consent.Store, companyID string, want int) {
	t.Helper()
	var all []*consent.AuditEntry
	for after := int64(0); ; {
		page := auditEntries(t, s, consent.AuditQuery{CompanyID: companyID, AfterSeq: after, Limit: consent.MaxAuditPage})
		all = append(all, page...)
		if len(page) < consent.MaxAuditPage {
			break
		}
		after = page[len(page)-1].Seq
	}
	if len(all) != want {
		t.Fatalf("%s has %d audit entries, want %d", companyID, len(all), want)
	}
	var prev consent.Digest
	for i, e := range all {
		if e.Seq != int64(i+1) {
			t.Fatalf("%s: entry %d has Seq %d: the chain has a gap", companyID, i+1, e.Seq)
		}
		if e.PrevHash != prev {
			t.Fatalf("%s: entry %d does not link to entry %d: the chain forked", companyID, e.Seq, e.Seq-1)
		}
		if e.Hash != audit.Hash(e) {
			t.Fatalf("%s: entry %d's hash is not audit.Hash of its fields", companyID, e.Seq)
		}
		prev = e.Hash
	}
	h := auditHead(t, s, companyID)
	if h.Seq != int64(want) || h.Hash != prev {
		t.Fatalf("%s: head is %d %s, want %d %s", companyID, h.Seq, h.Hash, want, prev)
	}
}

// sessions returns the sessions of ids as Sessions reads them.
func sessions(t testing.TB, s consent.Store, ids ...string) []*consent.Session {
	t.Helper()
	return read(t, s, consent.Tx.Sessions, ids)
}

// jobs returns the jobs of kind and keys (nil where there is none).
func jobsOf(t testing.TB, s consent.Store, kind string, keys ...string) []*consent.Job {
	t.Helper()
	out := make([]*consent.Job, len(keys))
	view(t, s, func(tx consent.Tx) error {
		for i, k := range keys {
			j, err := tx.Job(ctx, kind, k)
			if consent.ErrorCode(err) == consent.NotFound {
				continue
			}
			if err != nil {
				return err
			}
			out[i] = j
		}
		return nil
	})
	return out
}

func ledgerOf(t testing.TB, s consent.Store, companyID string) []*wallet.Entry {
	t.Helper()
	return read(t, s, consent.Tx.Ledger, companyID)
}

func balanceOf(t testing.TB, s consent.Store, companyID string) wallet.Amount {
	t.Helper()
	return read(t, s, consent.Tx.Balance, companyID)
}

// keptCall checks the outcome of a call that was to fail with errBoom, or
// to succeed, and reports whether it was kept.
func keptCall(t *testing.T, what string, fail bool, err, errBoom error) bool {
	t.Helper()
	switch {
	case fail && !errors.Is(err, errBoom):
		t.Errorf("%s, a failing call: %v, want boom", what, err)
	case !fail && err != nil:
		t.Errorf("%s: %v", what, err)
	}
	return !fail && err == nil
}

func keyRecord(scope, key string, fp byte, at time.Time) *consent.IdempotencyRecord {
	return &consent.IdempotencyRecord{Scope: scope, Key: key, Fingerprint: consent.Digest{fp},
		CreatedAt: at, ExpiresAt: at.Add(consent.IdempotencyTTL)}
}

// claim claims r in a transaction of its own, and with answer non-nil
// answers it there.
func claim(t *testing.T, s consent.Store, r *consent.IdempotencyRecord, now time.Time, answer []byte) *consent.IdempotencyRecord {
	t.Helper()
	var prior *consent.IdempotencyRecord
	update(t, s, func(tx consent.Tx) error {
		var err error
		if prior, err = tx.ClaimIdempotencyKey(ctx, r, now); err != nil || prior != nil || answer == nil {
			return err
		}
		return tx.AnswerIdempotencyKey(ctx, r.Scope, r.Key, 200, answer)
	})
	return prior
}

// kinds are the job kinds the suite leases.
var kinds = []string{consent.JobConvert, "purge", "webhook"}

// notText returns bytes a store must keep as they are though they are no
// text: JSON, then NUL, 0xff and 0xfe (not UTF-8), then every byte value.
// Each call returns a new slice, the caller's own.
func notText() []byte {
	b := []byte("{\"id\":1}\n\x00\xff\xfe")
	for i := range 256 {
		b = append(b, byte(i))
	}
	return b
}

func job(kind, key string, runAfter time.Time) *consent.Job {
	return &consent.Job{Kind: kind, Key: key, RunAfter: runAfter, CreatedAt: t0}
}

func lease(s consent.Store, owner string, now time.Time, kinds ...string) (*consent.Job, error) {
	var j *consent.Job
	err := s.Update(ctx, func(tx consent.Tx) error {
		var err error
		j, err = tx.LeaseJob(ctx, kinds, owner, now, now.Add(10*time.Minute))
		return err
	})
	return j, err
}

func update(t testing.TB, s consent.Store, fn func(tx consent.Tx) error) {
	t.Helper()
	if err := s.Update(ctx, fn); err != nil {
		t.Fatalf("Update: %v", err)
	}
}

func view(t testing.TB, s consent.Store, fn func(tx consent.Tx) error) {
	t.Helper()
	if err := s.View(ctx, fn); err != nil {
		t.Fatalf("View: %v", err)
	}
}

// wantCode fails t unless err has the code.
func wantCode(t *testing.T, what string, err error, code consent.Code) {
	t.Helper()
	if got := consent.ErrorCode(err); got != code {
		t.Errorf("%s: error %v has code %q, want %q", what, err, got, code)
	}
}

// fixture creates company "acme" with property "acme-web" and session "s1",
// and company "other" with property "other-web" and session "s2".
func fixture(t testing.TB, s consent.Store) {
	t.Helper()
	update(t, s, func(tx consent.Tx) error {
		for _, c := range []struct{ company, property, session string }{
			{"acme", "acme-web", "s1"}, {"other", "other-web", "s2"},
		} {
			if err := tx.CreateCompany(ctx, &consent.Company{ID: c.company, Name: c.company, CreatedAt: t0}); err != nil {
				return err
			}
			if err := tx.CreateProperty(ctx, &consent.Property{ID: c.property, CompanyID: c.company, Name: "Form", CreatedAt: t0}); err != nil {
				return err
			}
			if err := tx.CreateSession(ctx, session(c.session, c.company, c.property)); err != nil {
				return err
			}
		}
		return nil
	})
}

// withSessions is fixture with acme's sessions b0 … b(n-1) on acme-web.
func withSessions(t testing.TB, s consent.Store, n int) {
	t.Helper()
	fixture(t, s)
	update(t, s, func(tx consent.Tx) error {
		for i := range n {
			if err := tx.CreateSession(ctx, session(fmt.Sprintf("b%d", i), "acme", "acme-web")); err != nil {
				return err
			}
		}
		return nil
	})
}

// withTokenAndCertificate is fixture with acme's token "tok-1" (secret
// "secret-1") and certificate "cert-1" of session s1.
func withTokenAndCertificate(t *testing.T, s consent.Store) {
	t.Helper()
	fixture(t, s)
	update(t, s, func(tx consent.Tx) error {
		if err := tx.CreateToken(ctx, &consent.Token{ID: "tok-1", CompanyID: "acme", Digest: consent.DigestOf("secret-1"), CreatedAt: t0}); err != nil {
			return err
		}
		return tx.CreateCertificate(ctx, certificate("cert-1", "acme", "acme-web", "s1"))
	})
}

// funded is fixture with $10 credited to acme's wallet, for the tests of
// concurrent calls that charge it.
func funded(t *testing.T, s consent.Store) {
	t.Helper()
	fixture(t, s)
	update(t, s, func(tx consent.Tx) error {
		_, err := tx.Credit(ctx, entry("topup", "acme", wallet.TopUp, 10*wallet.Dollar, t0))
		return err
	})
}

func session(id, company, property string) *consent.Session {
	return &consent.Session{
		ID: id, CompanyID: company, PropertyID: property,
		RetentionStatus: consent.RetentionNone, VideoStatus: consent.VideoNone,
		CreatedAt: t0, ExpiresAt: t0.Add(90 * 24 * time.Hour),
	}
}

func certificate(id, company, property, sessionID string) *consent.Certificate {
	return &consent.Certificate{
		ID: id, CompanyID: company, PropertyID: property, SessionID: sessionID,
		Origin: "https://acme.example/quote",
		Records: []consent.Record{
			{Text: "I agree to be contacted by Acme.", Types: []string{"tcpa", "marketing"}, OptInAt: t0.Add(5 * time.Second)},
			{Text: "Ich stimme zu — ünïcødé ✓", OptInAt: t0.Add(6 * time.Second)},
		},
		EventsCombined:  []byte(`{"b": [1, 2.50, "x"],  "a":{}}`),
		KeyID:           "key-2026",
		Signature:       bytes.Repeat([]byte{0xff, 0x00, 0x7f}, 21), // any bytes, NUL included
		RetentionStatus: consent.RetentionNone,
		CreatedAt:       t0,
		ExpiresAt:       t0.Add(90 * 24 * time.Hour),
	}
}

func entry(id, company string, kind wallet.EntryKind, amount wallet.Amount, at time.Time) *wallet.Entry {
	return &wallet.Entry{ID: id, CompanyID: company, Kind: kind, Amount: amount, Reference: "ref-" + id, CreatedAt: at}
}

func endpoint(id, company string, events ...string) *consent.WebhookEndpoint {
	return &consent.WebhookEndpoint{
		ID: id, CompanyID: company, URL: "https://hooks.example/" + id + "?q=ü",
		Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", Events: events, CreatedAt: t0,
	}
}

// concurrently calls fn(0) … fn(n-1), each in a goroutine of its own,
// releases them all at once and waits until all have returned. The calls'
// shared bookkeeping goes in functions given to locked, which runs one at a
// time.
func concurrently(n int, fn func(w int, locked func(func()))) {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		start = make(chan struct{})
	)
	locked := func(f func()) {
		mu.Lock()
		defer mu.Unlock()
		f()
	}
	for w := range n {
		wg.Go(func() {
			<-start
			fn(w, locked)
		})
	}
	close(start)
	wg.Wait()
}

// exact is cmp.Diff without options: an empty slice differs from nil.
var exact = cmp.Options{}

// wantSame fails t unless got is want by cmp.Diff with o, saying what was
// compared (format and args) and the difference, and reports whether it
// was.
func wantSame(t testing.TB, want, got any, o cmp.Option, format string, args ...any) bool {
	t.Helper()
	if d := cmp.Diff(want, got, o); d != "" {
		t.Errorf(format+" (-want +got):\n%s", append(args, d)...)
		return false
	}
	return true
}

// wantRead fails t unless get(tx, ctx, arg), in a View, reads want (by
// cmp.Diff with opts), saying what was read (format and args).
func wantRead[A, T any](t testing.TB, s consent.Store, get func(consent.Tx, context.Context, A) (T, error), arg A,
	want T, format string, args ...any) {
	t.Helper()
	wantSame(t, want, read(t, s, get, arg), opts, format, args...)
}

// wantNotFound fails t unless get(tx, ctx, id), in a View, is NotFound.
func wantNotFound[T any](t *testing.T, s consent.Store, get func(consent.Tx, context.Context, string) (T, error), id, what string) {
	t.Helper()
	view(t, s, func(tx consent.Tx) error {
		_, err := get(tx, ctx, id)
		wantCode(t, what, err, consent.NotFound)
		return nil
	})
}

// found returns what fails t unless a read found want, without an error:
// found(t, "Property", p)(tx.Property(ctx, id)) returns what the read
// found.
func found[T any](t testing.TB, what string, want T) func(T, error) T {
	return func(got T, err error) T {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v", what, err)
		}
		wantSame(t, want, got, opts, what)
		return got
	}
}
