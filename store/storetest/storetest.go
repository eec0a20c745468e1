// Package storetest is the conformance suite of consent.Store. Every store
// runs all of it:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(tb testing.TB) consent.Store { return newStore(tb) })
//	}
//
// newStore must return a new, empty, migrated store for each call and close
// it when the test ends. The suite names each behaviour that the domain
// packages rely on as a subtest. It gives a store only what the Tx
// contract says a store is given (consent.Tx, "What a store is given"):
// what is beyond it is refused by the checked Tx before any store sees it,
// and tried in consent's tests (consent/checked_*_test.go).
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/wallet"
)

// NewStore returns a new, empty store that is closed when t ends.
type NewStore func(tb testing.TB) consent.Store

// Run runs the whole suite.
func Run(t *testing.T, newStore NewStore) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s consent.Store)
	}{
		{"Company", testCompany},
		{"Property", testProperty},
		{"Token", testToken},
		{"Session", testSession},
		{"EventsByteIdentical", testEventsByteIdentical},
		{"UpdateSession", testUpdateSession},
		{"Sessions", testSessions},
		{"UpdateSessions", testUpdateSessions},
		{"Certificate", testCertificate},
		{"UpdateCertificate", testUpdateCertificate},
		{"Job", testJob},
		{"LeaseJob", testLeaseJob},
		{"ConcurrentLeases", testConcurrentLeases},
		{"JobRollsBack", testJobRollsBack},
		{"EnqueueJobs", testEnqueueJobs},
		{"IdempotencyKey", testIdempotencyKey},
		{"ConcurrentClaims", testConcurrentClaims},
		{"OperatorSession", testOperatorSession},
		{"PruneOperatorSessions", testPruneOperatorSessions},
		{"OperatorSessionTimes", testOperatorSessionTimes},
		{"OperatorSessionRollsBack", testOperatorSessionRollsBack},
		{"OperatorSessionViewIsReadOnly", testOperatorSessionViewIsReadOnly},
		{"Purge", testPurge},
		{"PurgeRollsBack", testPurgeRollsBack},
		{"CertificatesByDigest", testCertificatesByDigest},
		{"RevokeCertificate", testRevokeCertificate},
		{"Revocation", testRevocation},
		{"Wallet", testWallet},
		{"DebitAll", testDebitAll},
		{"BulkRollsBack", testBulkRollsBack},
		{"BalanceLimit", testBalanceLimit},
		{"Rollback", testRollback},
		{"ViewIsReadOnly", testViewIsReadOnly},
		{"TimesUTC", testTimesUTC},
		{"ConcurrentDebits", testConcurrentDebits},
		{"ConcurrentUpdatesFailAlone", testConcurrentUpdatesFailAlone},
		{"ConcurrentTakenEntryIDs", testConcurrentTakenEntryIDs},
		{"ConcurrentChargesReadBack", testConcurrentChargesReadBack},
		{"ConcurrentDirectAndBehind", testConcurrentDirectAndBehind},
		{"ReadThenWriteIsAtomic", testReadThenWriteIsAtomic},
		{"Text", testText},
		{"Capture", testCapture},
		{"EmptyEventChunk", testEmptyEventChunk},
		{"SubMicrosecond", testSubMicrosecond},
		{"TakenBeforeMissing", testTakenBeforeMissing},
		{"TimeRange", testTimeRange},
		{"TimeArguments", testTimeArguments},
		{"IntRange", testIntRange},
		{"KeyLength", testKeyLength},
		{"ReadBadText", testReadBadText},
		{"AuditAppend", testAuditAppend},
		{"AuditQuery", testAuditQuery},
		{"ConcurrentAudit", testConcurrentAudit},
		{"AuditRollback", testAuditRollback},
		{"AppendAudits", testAppendAudits},
		{"ConcurrentAppendAudits", testConcurrentAppendAudits},
		{"WebhookEndpoint", testWebhookEndpoint},
		{"WebhookDeliveries", testWebhookDeliveries},
		{"WebhookRollsBack", testWebhookRollsBack},
		{"Properties", testProperties},
		{"Tokens", testTokens},
		{"LedgerPage", testLedgerPage},
		{"CertificatePage", testCertificatePage},
		{"SessionPage", testSessionPage},
		{"RevocationPage", testRevocationPage},
		{"EmptyLists", testEmptyLists},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, newStore(t)) })
	}
}

var ctx = context.Background()

// opts compares across stores: an empty slice equals a nil one.
var opts = cmp.Options{cmpopts.EquateEmpty()}

// t0 is a fixed time with microsecond precision, in UTC.
var t0 = time.Date(2026, 11, 20, 10, 0, 0, 123456000, time.UTC)

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
func fixture(t *testing.T, s consent.Store) {
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

func testCompany(t *testing.T, s consent.Store) {
	want := &consent.Company{
		ID: "acme", Name: "Acme Insurance", ThirdPartyVerificationEnabled: true,
		AuthorizedThirdParties: []string{"buyer", "broker:2"}, CreatedAt: t0,
	}
	update(t, s, func(tx consent.Tx) error { return tx.CreateCompany(ctx, want) })

	view(t, s, func(tx consent.Tx) error {
		got, err := tx.Company(ctx, "acme")
		if err != nil {
			return err
		}
		if d := cmp.Diff(want, got, opts); d != "" {
			t.Errorf("Company (-want +got):\n%s", d)
		}
		_, err = tx.Company(ctx, "nobody")
		wantCode(t, "Company(nobody)", err, consent.NotFound)
		return nil
	})

	err := s.Update(ctx, func(tx consent.Tx) error {
		return tx.CreateCompany(ctx, &consent.Company{ID: "acme", Name: "again", CreatedAt: t0})
	})
	wantCode(t, "CreateCompany(duplicate)", err, consent.Conflict)
	if !errors.Is(err, consent.ErrConflict) {
		t.Errorf("errors.Is(%v, ErrConflict) = false", err)
	}

	changed := &consent.Company{ID: "acme", Name: "Acme", AuthorizedThirdParties: nil, CreatedAt: t0}
	update(t, s, func(tx consent.Tx) error { return tx.UpdateCompany(ctx, changed) })
	view(t, s, func(tx consent.Tx) error {
		got, err := tx.Company(ctx, "acme")
		if err != nil {
			return err
		}
		if d := cmp.Diff(changed, got, opts); d != "" {
			t.Errorf("Company after UpdateCompany (-want +got):\n%s", d)
		}
		return nil
	})
	err = s.Update(ctx, func(tx consent.Tx) error {
		return tx.UpdateCompany(ctx, &consent.Company{ID: "nobody", Name: "x"})
	})
	wantCode(t, "UpdateCompany(nobody)", err, consent.NotFound)

	update(t, s, func(tx consent.Tx) error {
		for _, id := range []string{"b", "B", "a-1", "zz"} {
			if err := tx.CreateCompany(ctx, &consent.Company{ID: id, Name: id, CreatedAt: t0}); err != nil {
				return err
			}
		}
		return nil
	})
	view(t, s, func(tx consent.Tx) error {
		for _, page := range []struct {
			after string
			limit int
			want  []string
		}{
			{"", 3, []string{"B", "a-1", "acme"}}, // byte order
			{"acme", 3, []string{"b", "zz"}},
			{"zz", 3, nil},
			{"", 0, nil},
		} {
			got, err := tx.CompanyIDs(ctx, page.after, page.limit)
			if err != nil {
				return err
			}
			if d := cmp.Diff(page.want, got, opts); d != "" {
				t.Errorf("CompanyIDs(%q, %d) (-want +got):\n%s", page.after, page.limit, d)
			}
		}
		return nil
	})
}

func testProperty(t *testing.T, s consent.Store) {
	update(t, s, func(tx consent.Tx) error {
		return tx.CreateCompany(ctx, &consent.Company{ID: "acme", Name: "Acme", CreatedAt: t0})
	})
	want := &consent.Property{ID: "acme-web", CompanyID: "acme", Name: "Quote form", CreatedAt: t0}
	update(t, s, func(tx consent.Tx) error { return tx.CreateProperty(ctx, want) })
	view(t, s, func(tx consent.Tx) error {
		got, err := tx.Property(ctx, "acme-web")
		if err != nil {
			return err
		}
		if d := cmp.Diff(want, got, opts); d != "" {
			t.Errorf("Property (-want +got):\n%s", d)
		}
		_, err = tx.Property(ctx, "nothing")
		wantCode(t, "Property(nothing)", err, consent.NotFound)
		return nil
	})
	err := s.Update(ctx, func(tx consent.Tx) error { return tx.CreateProperty(ctx, want) })
	wantCode(t, "CreateProperty(duplicate)", err, consent.Conflict)
	err = s.Update(ctx, func(tx consent.Tx) error {
		return tx.CreateProperty(ctx, &consent.Property{ID: "p2", CompanyID: "nobody", Name: "x", CreatedAt: t0})
	})
	wantCode(t, "CreateProperty(unknown company)", err, consent.NotFound)
}

func testToken(t *testing.T, s consent.Store) {
	fixture(t, s)
	active := &consent.Token{
		ID: "tok_1", CompanyID: "acme", Digest: consent.DigestOf("secret-1"),
		Permissions: []consent.Permission{consent.PermissionRetention}, CreatedAt: t0,
	}
	expired := &consent.Token{
		ID: "tok_2", CompanyID: "acme", Digest: consent.DigestOf("secret-2"),
		ExpiresAt: t0.Add(time.Hour), CreatedAt: t0,
	}
	update(t, s, func(tx consent.Tx) error {
		if err := tx.CreateToken(ctx, active); err != nil {
			return err
		}
		return tx.CreateToken(ctx, expired)
	})
	view(t, s, func(tx consent.Tx) error {
		for _, want := range []*consent.Token{active, expired} {
			got, err := tx.TokenByDigest(ctx, want.Digest)
			if err != nil {
				return err
			}
			if d := cmp.Diff(want, got, opts); d != "" {
				t.Errorf("TokenByDigest (-want +got):\n%s", d)
			}
		}
		_, err := tx.TokenByDigest(ctx, consent.DigestOf("unknown"))
		wantCode(t, "TokenByDigest(unknown)", err, consent.NotFound)
		return nil
	})

	for name, tok := range map[string]*consent.Token{
		"same id":     {ID: "tok_1", CompanyID: "acme", Digest: consent.DigestOf("secret-3"), CreatedAt: t0},
		"same digest": {ID: "tok_3", CompanyID: "acme", Digest: consent.DigestOf("secret-1"), CreatedAt: t0},
	} {
		err := s.Update(ctx, func(tx consent.Tx) error { return tx.CreateToken(ctx, tok) })
		wantCode(t, "CreateToken("+name+")", err, consent.Conflict)
	}
	err := s.Update(ctx, func(tx consent.Tx) error {
		return tx.CreateToken(ctx, &consent.Token{ID: "tok_4", CompanyID: "nobody", Digest: consent.DigestOf("s4"), CreatedAt: t0})
	})
	wantCode(t, "CreateToken(unknown company)", err, consent.NotFound)

	// Revocation is visible, keeps its first time, and is only by the owner.
	revoked := t0.Add(2 * time.Hour)
	update(t, s, func(tx consent.Tx) error { return tx.RevokeToken(ctx, "acme", "tok_1", revoked) })
	update(t, s, func(tx consent.Tx) error { return tx.RevokeToken(ctx, "acme", "tok_1", revoked.Add(time.Hour)) })
	err = s.Update(ctx, func(tx consent.Tx) error { return tx.RevokeToken(ctx, "other", "tok_2", revoked) })
	wantCode(t, "RevokeToken(other company's token)", err, consent.NotFound)
	err = s.Update(ctx, func(tx consent.Tx) error { return tx.RevokeToken(ctx, "acme", "tok_9", revoked) })
	wantCode(t, "RevokeToken(unknown)", err, consent.NotFound)
	view(t, s, func(tx consent.Tx) error {
		got, err := tx.TokenByDigest(ctx, active.Digest)
		if err != nil {
			return err
		}
		if !got.RevokedAt.Equal(revoked) {
			t.Errorf("RevokedAt = %v, want %v (the first revocation)", got.RevokedAt, revoked)
		}
		if got.Active(revoked) {
			t.Error("revoked token is active")
		}
		other, err := tx.TokenByDigest(ctx, expired.Digest)
		if err != nil {
			return err
		}
		if !other.RevokedAt.IsZero() {
			t.Errorf("token of another company's failed revocation has RevokedAt %v", other.RevokedAt)
		}
		return nil
	})
}

func testSession(t *testing.T, s consent.Store) {
	fixture(t, s)
	view(t, s, func(tx consent.Tx) error {
		got, err := tx.Session(ctx, "s1")
		if err != nil {
			return err
		}
		if d := cmp.Diff(session("s1", "acme", "acme-web"), got, opts); d != "" {
			t.Errorf("Session (-want +got):\n%s", d)
		}
		_, err = tx.Session(ctx, "s9")
		wantCode(t, "Session(unknown)", err, consent.NotFound)
		_, err = tx.Events(ctx, "s9")
		wantCode(t, "Events(unknown)", err, consent.NotFound)
		events, err := tx.Events(ctx, "s1")
		if err != nil || len(events) != 0 {
			t.Errorf("Events(new session) = %q, %v; want none", events, err)
		}
		return nil
	})
	for name, ses := range map[string]*consent.Session{
		"duplicate":        session("s1", "acme", "acme-web"),
		"unknown company":  session("s3", "nobody", "acme-web"),
		"unknown property": session("s3", "acme", "nothing"),
	} {
		err := s.Update(ctx, func(tx consent.Tx) error { return tx.CreateSession(ctx, ses) })
		want := consent.NotFound
		if name == "duplicate" {
			want = consent.Conflict
		}
		wantCode(t, "CreateSession("+name+")", err, want)
	}
	err := s.Update(ctx, func(tx consent.Tx) error { return tx.AppendEvents(ctx, "s9", []byte(`[{}]`)) })
	wantCode(t, "AppendEvents(unknown)", err, consent.NotFound)
}

func testEventsByteIdentical(t *testing.T, s consent.Store) {
	fixture(t, s)
	big := bytes.Repeat([]byte(`{"type":3,"data":{"source":1,"positions":[{"x":1,"y":2}]},"timestamp":1795301391553},`), 4000)
	chunks := [][]byte{
		[]byte(`[{"type":4,"data":{"href":"https://a.example/","width":1024,"height":625},"timestamp":1795301391553}]`),
		[]byte("[ {\"type\":2, \"data\" : {\"text\":\"tab\\there ünïcødé ✓ \\u00e9\"}}\n ]"),
		append(append([]byte("["), big[:len(big)-1]...), ']'),
		[]byte(`[{"nul":"\u0000","big":12345678901234567890123,"float":1.50}]`),
	}
	for _, c := range chunks {
		update(t, s, func(tx consent.Tx) error { return tx.AppendEvents(ctx, "s1", c) })
	}
	var total int64
	for _, c := range chunks {
		total += int64(len(c))
	}
	view(t, s, func(tx consent.Tx) error {
		got, err := tx.Events(ctx, "s1")
		if err != nil {
			return err
		}
		if len(got) != len(chunks) {
			t.Fatalf("Events returned %d chunks, want %d", len(got), len(chunks))
		}
		for i := range chunks {
			if !bytes.Equal(got[i], chunks[i]) {
				t.Errorf("chunk %d differs: got %d bytes, want %d", i, len(got[i]), len(chunks[i]))
			}
		}
		ses, err := tx.Session(ctx, "s1")
		if err != nil {
			return err
		}
		if ses.EventChunks != len(chunks) || ses.EventBytes != total {
			t.Errorf("session counts %d chunks, %d bytes; want %d, %d", ses.EventChunks, ses.EventBytes, len(chunks), total)
		}
		other, err := tx.Events(ctx, "s2")
		if err != nil || len(other) != 0 {
			t.Errorf("Events(s2) = %d chunks, %v; want none", len(other), err)
		}
		return nil
	})
}

func testCertificate(t *testing.T, s consent.Store) {
	fixture(t, s)
	want := certificate("cert-1", "acme", "acme-web", "s1")
	want.EmailDigest = consent.DigestOf("jane@example.com")
	want.MobileDigest = consent.DigestOf("+15550102000")
	update(t, s, func(tx consent.Tx) error { return tx.CreateCertificate(ctx, want) })
	bare := &consent.Certificate{
		ID: "cert-2", CompanyID: "acme", PropertyID: "acme-web", SessionID: "s1",
		EventsCombined: []byte(`{}`), RetentionStatus: consent.RetentionNone, CreatedAt: t0, ExpiresAt: t0,
	}
	update(t, s, func(tx consent.Tx) error { return tx.CreateCertificate(ctx, bare) })
	view(t, s, func(tx consent.Tx) error {
		for _, w := range []*consent.Certificate{want, bare} {
			got, err := tx.Certificate(ctx, w.ID)
			if err != nil {
				return err
			}
			if d := cmp.Diff(w, got, opts); d != "" {
				t.Errorf("Certificate(%s) (-want +got):\n%s", w.ID, d)
			}
			if !bytes.Equal(got.EventsCombined, w.EventsCombined) {
				t.Errorf("events_combined = %s, want byte-identical %s", got.EventsCombined, w.EventsCombined)
			}
		}
		_, err := tx.Certificate(ctx, "cert-9")
		wantCode(t, "Certificate(unknown)", err, consent.NotFound)
		return nil
	})
	for name, c := range map[string]*consent.Certificate{
		"duplicate":        certificate("cert-1", "acme", "acme-web", "s1"),
		"unknown company":  certificate("cert-3", "nobody", "acme-web", "s1"),
		"unknown property": certificate("cert-3", "acme", "nothing", "s1"),
		"unknown session":  certificate("cert-3", "acme", "acme-web", "s9"),
	} {
		err := s.Update(ctx, func(tx consent.Tx) error { return tx.CreateCertificate(ctx, c) })
		want := consent.NotFound
		if name == "duplicate" {
			want = consent.Conflict
		}
		wantCode(t, "CreateCertificate("+name+")", err, want)
	}
}

func testCertificatesByDigest(t *testing.T, s consent.Store) {
	fixture(t, s)
	email, mobile := consent.DigestOf("jane@example.com"), consent.DigestOf("+15550102000")
	update(t, s, func(tx consent.Tx) error {
		for _, c := range []struct {
			id, company, property, session string
			email, mobile                  consent.Digest
		}{
			{"c-b", "acme", "acme-web", "s1", email, mobile},
			{"c-a", "acme", "acme-web", "s1", email, consent.Digest{}},
			{"c-c", "acme", "acme-web", "s1", consent.Digest{}, mobile},
			{"c-d", "acme", "acme-web", "s1", consent.DigestOf("x@example.com"), consent.Digest{}},
			{"c-o", "other", "other-web", "s2", email, mobile}, // another company's
		} {
			cert := certificate(c.id, c.company, c.property, c.session)
			cert.EmailDigest, cert.MobileDigest = c.email, c.mobile
			if err := tx.CreateCertificate(ctx, cert); err != nil {
				return err
			}
		}
		return nil
	})
	view(t, s, func(tx consent.Tx) error {
		check := func(what string, got []string, err error, want []string) {
			t.Helper()
			if err != nil {
				t.Errorf("%s: %v", what, err)
			}
			if d := cmp.Diff(want, got, opts); d != "" {
				t.Errorf("%s (-want +got):\n%s", what, d)
			}
		}
		got, err := tx.CertificatesByEmail(ctx, "acme", email)
		check("CertificatesByEmail(acme)", got, err, []string{"c-a", "c-b"})
		got, err = tx.CertificatesByMobile(ctx, "acme", mobile)
		check("CertificatesByMobile(acme)", got, err, []string{"c-b", "c-c"})
		got, err = tx.CertificatesByEmail(ctx, "other", email)
		check("CertificatesByEmail(other)", got, err, []string{"c-o"})
		got, err = tx.CertificatesByEmail(ctx, "acme", consent.DigestOf("nobody@example.com"))
		check("CertificatesByEmail(unknown)", got, err, nil)
		got, err = tx.CertificatesByMobile(ctx, "acme", consent.Digest{})
		check("CertificatesByMobile(zero digest)", got, err, nil)
		got, err = tx.CertificatesByEmail(ctx, "nobody", email)
		check("CertificatesByEmail(unknown company)", got, err, nil)
		return nil
	})
}

func testRevokeCertificate(t *testing.T, s consent.Store) {
	fixture(t, s)
	update(t, s, func(tx consent.Tx) error {
		return tx.CreateCertificate(ctx, certificate("cert-1", "acme", "acme-web", "s1"))
	})
	at := t0.Add(time.Hour)
	update(t, s, func(tx consent.Tx) error { return tx.RevokeCertificate(ctx, "cert-1", at) })
	update(t, s, func(tx consent.Tx) error { return tx.RevokeCertificate(ctx, "cert-1", at.Add(time.Hour)) })
	err := s.Update(ctx, func(tx consent.Tx) error { return tx.RevokeCertificate(ctx, "cert-9", at) })
	wantCode(t, "RevokeCertificate(unknown)", err, consent.NotFound)
	view(t, s, func(tx consent.Tx) error {
		got, err := tx.Certificate(ctx, "cert-1")
		if err != nil {
			return err
		}
		if !got.Revoked() || !got.RevokedAt.Equal(at) {
			t.Errorf("RevokedAt = %v, want %v (the first revocation)", got.RevokedAt, at)
		}
		return nil
	})
}

func testRevocation(t *testing.T, s consent.Store) {
	fixture(t, s)
	first := &consent.Revocation{
		ID: "rev-1", CompanyID: "acme", CertificateID: "cert-1",
		EmailDigest: consent.DigestOf("jane@example.com"), Reason: "asked by phone",
		ClientIP: "203.0.113.7", CertificateIDs: []string{"cert-1", "cert-2"}, CreatedAt: t0,
	}
	second := &consent.Revocation{
		ID: "rev-0", CompanyID: "acme", MobileDigest: consent.DigestOf("+15550102000"),
		ClientIP: "2001:db8::1", CreatedAt: t0.Add(time.Minute),
	}
	others := &consent.Revocation{ID: "rev-2", CompanyID: "other", CreatedAt: t0}
	update(t, s, func(tx consent.Tx) error {
		for _, r := range []*consent.Revocation{first, second, others} {
			if err := tx.CreateRevocation(ctx, r); err != nil {
				return err
			}
		}
		return nil
	})
	view(t, s, func(tx consent.Tx) error {
		got, err := tx.Revocations(ctx, "acme")
		if err != nil {
			return err
		}
		if d := cmp.Diff([]*consent.Revocation{first, second}, got, opts); d != "" {
			t.Errorf("Revocations (-want +got):\n%s", d)
		}
		return nil
	})
	err := s.Update(ctx, func(tx consent.Tx) error { return tx.CreateRevocation(ctx, first) })
	wantCode(t, "CreateRevocation(duplicate)", err, consent.Conflict)
	err = s.Update(ctx, func(tx consent.Tx) error {
		return tx.CreateRevocation(ctx, &consent.Revocation{ID: "rev-9", CompanyID: "nobody", CreatedAt: t0})
	})
	wantCode(t, "CreateRevocation(unknown company)", err, consent.NotFound)
}

func entry(id, company string, kind wallet.EntryKind, amount wallet.Amount, at time.Time) *wallet.Entry {
	return &wallet.Entry{ID: id, CompanyID: company, Kind: kind, Amount: amount, Reference: "ref-" + id, CreatedAt: at}
}

func testWallet(t *testing.T, s consent.Store) {
	fixture(t, s)
	view(t, s, func(tx consent.Tx) error {
		bal, err := tx.Balance(ctx, "acme")
		if err != nil || bal != 0 {
			t.Errorf("Balance(new company) = %v, %v; want 0", bal, err)
		}
		_, err = tx.Balance(ctx, "nobody")
		wantCode(t, "Balance(unknown)", err, consent.NotFound)
		return nil
	})
	credit := entry("e1", "acme", wallet.TopUp, 50*wallet.Cent, t0)
	debit := entry("e2", "acme", wallet.ExactMatch, 15*wallet.Cent/10, t0.Add(time.Second))
	all := entry("e3", "acme", wallet.RetainSingle, 50*wallet.Cent-15*wallet.Cent/10, t0.Add(2*time.Second))
	update(t, s, func(tx consent.Tx) error {
		if bal, err := tx.Credit(ctx, credit); err != nil || bal != 50*wallet.Cent {
			t.Errorf("Credit = %v, %v; want 0.5", bal, err)
		}
		if bal, err := tx.Debit(ctx, debit); err != nil || bal != 50*wallet.Cent-15*wallet.Cent/10 {
			t.Errorf("Debit = %v, %v; want 0.485", bal, err)
		}
		// A debit of the whole balance is allowed and leaves exactly zero.
		if bal, err := tx.Debit(ctx, all); err != nil || bal != 0 {
			t.Errorf("Debit(all) = %v, %v; want 0", bal, err)
		}
		return nil
	})

	err := s.Update(ctx, func(tx consent.Tx) error {
		_, err := tx.Debit(ctx, entry("e4", "acme", wallet.ExactMatch, 1, t0))
		return err
	})
	var ife *wallet.InsufficientFundsError
	if !errors.As(err, &ife) || ife.Required != 1 || ife.Balance != 0 {
		t.Errorf("Debit on an empty wallet: %v, want InsufficientFundsError{1, 0}", err)
	}
	wantCode(t, "Debit(empty wallet)", err, consent.Payment)
	for _, fn := range []func(consent.Tx) error{
		func(tx consent.Tx) error {
			_, err := tx.Credit(ctx, entry("e5", "nobody", wallet.TopUp, 1, t0))
			return err
		},
		func(tx consent.Tx) error {
			_, err := tx.Debit(ctx, entry("e6", "nobody", wallet.ExactMatch, 1, t0))
			return err
		},
	} {
		wantCode(t, "Credit or Debit of unknown company", s.Update(ctx, fn), consent.NotFound)
	}

	view(t, s, func(tx consent.Tx) error {
		got, err := tx.Ledger(ctx, "acme")
		if err != nil {
			return err
		}
		if d := cmp.Diff([]*wallet.Entry{credit, debit, all}, got, opts); d != "" {
			t.Errorf("Ledger (-want +got):\n%s", d)
		}
		other, err := tx.Ledger(ctx, "other")
		if err != nil || len(other) != 0 {
			t.Errorf("Ledger(other) = %v, %v; want none", other, err)
		}
		return nil
	})
}

func testRollback(t *testing.T, s consent.Store) {
	fixture(t, s)
	update(t, s, func(tx consent.Tx) error {
		_, err := tx.Credit(ctx, entry("e1", "acme", wallet.TopUp, wallet.Dollar, t0))
		return err
	})
	errBoom := errors.New("boom")
	err := s.Update(ctx, func(tx consent.Tx) error {
		if _, err := tx.Debit(ctx, entry("e2", "acme", wallet.ExactMatch, 15*wallet.Cent/10, t0)); err != nil {
			return err
		}
		if err := tx.CreateCompany(ctx, &consent.Company{ID: "ghost", Name: "Ghost", CreatedAt: t0}); err != nil {
			return err
		}
		if err := tx.AppendEvents(ctx, "s1", []byte(`[{"type":4}]`)); err != nil {
			return err
		}
		ghost := certificate("cert-g", "acme", "acme-web", "s1")
		ghost.EmailDigest = consent.DigestOf("ghost@example.com")
		if err := tx.CreateCertificate(ctx, ghost); err != nil {
			return err
		}
		if err := tx.CreateRevocation(ctx, &consent.Revocation{ID: "rev-g", CompanyID: "acme", CreatedAt: t0}); err != nil {
			return err
		}
		return fmt.Errorf("after the writes: %w", errBoom)
	})
	if !errors.Is(err, errBoom) {
		t.Fatalf("Update returned %v, want fn's error", err)
	}
	view(t, s, func(tx consent.Tx) error {
		if bal, err := tx.Balance(ctx, "acme"); err != nil || bal != wallet.Dollar {
			t.Errorf("Balance after rollback = %v, %v; want 1", bal, err)
		}
		if l, err := tx.Ledger(ctx, "acme"); err != nil || len(l) != 1 {
			t.Errorf("Ledger after rollback has %d entries, %v; want 1", len(l), err)
		}
		_, err := tx.Company(ctx, "ghost")
		wantCode(t, "Company created in a rolled-back transaction", err, consent.NotFound)
		_, err = tx.Certificate(ctx, "cert-g")
		wantCode(t, "Certificate created in a rolled-back transaction", err, consent.NotFound)
		if ids, err := tx.CertificatesBySession(ctx, "s1"); err != nil || len(ids) != 0 {
			t.Errorf("CertificatesBySession after rollback = %v, %v; want none", ids, err)
		}
		if ids, err := tx.CertificatesByEmail(ctx, "acme", consent.DigestOf("ghost@example.com")); err != nil || len(ids) != 0 {
			t.Errorf("CertificatesByEmail after rollback = %v, %v; want none", ids, err)
		}
		if ev, err := tx.Events(ctx, "s1"); err != nil || len(ev) != 0 {
			t.Errorf("Events after rollback = %d chunks, %v; want none", len(ev), err)
		}
		if ses, err := tx.Session(ctx, "s1"); err != nil || ses.EventChunks != 0 || ses.EventBytes != 0 {
			t.Errorf("Session after rollback = %+v, %v; want no events counted", ses, err)
		}
		if revs, err := tx.Revocations(ctx, "acme"); err != nil || len(revs) != 0 {
			t.Errorf("Revocations after rollback = %d, %v; want none", len(revs), err)
		}
		return nil
	})
	// A failed debit inside a transaction that then commits changes nothing.
	update(t, s, func(tx consent.Tx) error {
		if _, err := tx.Debit(ctx, entry("e3", "acme", wallet.ExactMatch, 2*wallet.Dollar, t0)); !errors.Is(err, wallet.ErrInsufficientFunds) {
			t.Errorf("Debit over the balance: %v, want insufficient funds", err)
		}
		return nil
	})
	view(t, s, func(tx consent.Tx) error {
		if bal, err := tx.Balance(ctx, "acme"); err != nil || bal != wallet.Dollar {
			t.Errorf("Balance after a refused debit = %v, %v; want 1", bal, err)
		}
		return nil
	})
	// A cancelled context commits nothing.
	cctx, cancel := context.WithCancel(ctx)
	err = s.Update(cctx, func(tx consent.Tx) error {
		_, err := tx.Debit(cctx, entry("e4", "acme", wallet.ExactMatch, 15*wallet.Cent/10, t0))
		cancel()
		return err
	})
	if err == nil {
		t.Error("Update whose context was cancelled before commit returned nil")
	}
	view(t, s, func(tx consent.Tx) error {
		if bal, err := tx.Balance(ctx, "acme"); err != nil || bal != wallet.Dollar {
			t.Errorf("Balance after a cancelled transaction = %v, %v; want 1", bal, err)
		}
		return nil
	})
}

func testViewIsReadOnly(t *testing.T, s consent.Store) {
	fixture(t, s)
	err := s.View(ctx, func(tx consent.Tx) error {
		return tx.CreateCompany(ctx, &consent.Company{ID: "ghost", Name: "Ghost", CreatedAt: t0})
	})
	if err == nil {
		t.Error("CreateCompany inside View succeeded")
	}
	err = s.View(ctx, func(tx consent.Tx) error {
		_, err := tx.Credit(ctx, entry("e1", "acme", wallet.TopUp, wallet.Dollar, t0))
		return err
	})
	if err == nil {
		t.Error("Credit inside View succeeded")
	}
	view(t, s, func(tx consent.Tx) error {
		if _, err := tx.Company(ctx, "ghost"); consent.ErrorCode(err) != consent.NotFound {
			t.Errorf("company written in View exists (err %v)", err)
		}
		if bal, err := tx.Balance(ctx, "acme"); err != nil || bal != 0 {
			t.Errorf("Balance after Credit in View = %v, %v; want 0", bal, err)
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
	view(t, s, func(tx consent.Tx) error {
		var times []time.Time
		c, err := tx.Company(ctx, "acme")
		if err != nil {
			return err
		}
		p, err := tx.Property(ctx, "p")
		if err != nil {
			return err
		}
		ses, err := tx.Session(ctx, "s1")
		if err != nil {
			return err
		}
		cert, err := tx.Certificate(ctx, "c1")
		if err != nil {
			return err
		}
		tok, err := tx.TokenByDigest(ctx, consent.DigestOf("x"))
		if err != nil {
			return err
		}
		revs, err := tx.Revocations(ctx, "acme")
		if err != nil || len(revs) != 1 {
			return fmt.Errorf("Revocations: %d, %v", len(revs), err)
		}
		ledger, err := tx.Ledger(ctx, "acme")
		if err != nil || len(ledger) != 1 {
			return fmt.Errorf("Ledger: %d, %v", len(ledger), err)
		}
		times = append(times, c.CreatedAt, p.CreatedAt, ses.CreatedAt, cert.CreatedAt, cert.RevokedAt,
			cert.Records[0].OptInAt, tok.CreatedAt, tok.ExpiresAt, tok.RevokedAt, revs[0].CreatedAt, ledger[0].CreatedAt)
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
		return nil
	})
}

// testConcurrentDebits: a wallet of 1.00 and 100 concurrent debits of 0.015
// end with exactly 66 successes, 34 insufficient-funds errors and a balance
// of exactly 0.010, and the ledger adds up to the balance (D4, D5).
func testConcurrentDebits(t *testing.T, s consent.Store) {
	fixture(t, s)
	update(t, s, func(tx consent.Tx) error {
		_, err := tx.Credit(ctx, entry("topup", "acme", wallet.TopUp, wallet.Dollar, t0))
		return err
	})
	price := 15 * wallet.Cent / 10
	const n = 100
	var (
		wg            sync.WaitGroup
		mu            sync.Mutex
		ok, short     int
		others        []error
		start         = make(chan struct{})
		lowestBalance = wallet.Dollar
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			var bal wallet.Amount
			err := s.Update(ctx, func(tx consent.Tx) error {
				var err error
				bal, err = tx.Debit(ctx, entry(fmt.Sprintf("d%03d", i), "acme", wallet.ExactMatch, price, t0))
				return err
			})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
				lowestBalance = min(lowestBalance, bal)
			case errors.Is(err, wallet.ErrInsufficientFunds):
				short++
			default:
				others = append(others, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	for _, err := range others {
		t.Errorf("unexpected error: %v", err)
		if strings.Contains(err.Error(), "locked") {
			t.Errorf("a store must serialize writers, not fail them: %v", err)
		}
	}
	if ok != 66 || short != 34 {
		t.Errorf("%d debits succeeded and %d were refused; want 66 and 34", ok, short)
	}
	view(t, s, func(tx consent.Tx) error {
		bal, err := tx.Balance(ctx, "acme")
		if err != nil {
			return err
		}
		if bal != wallet.Cent {
			t.Errorf("balance = %s, want exactly 0.01", bal)
		}
		if lowestBalance != bal {
			t.Errorf("lowest balance returned by a debit = %s, want the final %s", lowestBalance, bal)
		}
		ledger, err := tx.Ledger(ctx, "acme")
		if err != nil {
			return err
		}
		var sum wallet.Amount
		debits := 0
		for _, e := range ledger {
			if e.Kind.IsCredit() {
				sum += e.Amount
			} else {
				sum -= e.Amount
				debits++
			}
		}
		if sum != bal || debits != 66 {
			t.Errorf("ledger: credits − debits = %s over %d debits; want %s over 66", sum, debits, bal)
		}
		return nil
	})
}

func testUpdateSession(t *testing.T, s consent.Store) {
	fixture(t, s)
	want := session("s1", "acme", "acme-web")
	want.RetentionStatus, want.VideoStatus, want.ExpiresAt = consent.RetentionRetained, consent.VideoConverted, t0.AddDate(5, 0, 0)
	want.Video = consent.Video{Path: "videos/s1.mp4", Bytes: 123456, SHA256: consent.DigestOf("mp4"), Duration: 5642 * time.Millisecond}
	changed := *want
	changed.CompanyID, changed.PropertyID, changed.CreatedAt = "other", "other-web", t0.Add(time.Hour) // not written
	update(t, s, func(tx consent.Tx) error { return tx.UpdateSession(ctx, &changed) })
	view(t, s, func(tx consent.Tx) error {
		got, err := tx.Session(ctx, "s1")
		if err != nil {
			return err
		}
		if d := cmp.Diff(want, got, opts); d != "" {
			t.Errorf("Session after UpdateSession (-want +got):\n%s", d)
		}
		return nil
	})
	err := s.Update(ctx, func(tx consent.Tx) error { return tx.UpdateSession(ctx, session("s9", "acme", "acme-web")) })
	wantCode(t, "UpdateSession(unknown)", err, consent.NotFound)
}

func testUpdateCertificate(t *testing.T, s consent.Store) {
	fixture(t, s)
	update(t, s, func(tx consent.Tx) error {
		for _, c := range []*consent.Certificate{
			certificate("c-2", "acme", "acme-web", "s1"),
			certificate("c-1", "acme", "acme-web", "s1"),
			certificate("c-3", "other", "other-web", "s2"),
		} {
			if err := tx.CreateCertificate(ctx, c); err != nil {
				return err
			}
		}
		return nil
	})
	want := certificate("c-1", "acme", "acme-web", "s1")
	want.RetentionStatus, want.ExpiresAt = consent.RetentionRetained, t0.AddDate(5, 0, 0)
	changed := *want
	changed.Origin, changed.Records = "changed", nil // not written
	update(t, s, func(tx consent.Tx) error { return tx.UpdateCertificate(ctx, &changed) })
	view(t, s, func(tx consent.Tx) error {
		got, err := tx.Certificate(ctx, "c-1")
		if err != nil {
			return err
		}
		if d := cmp.Diff(want, got, opts); d != "" {
			t.Errorf("Certificate after UpdateCertificate (-want +got):\n%s", d)
		}
		ids, err := tx.CertificatesBySession(ctx, "s1")
		if err != nil || !cmp.Equal(ids, []string{"c-1", "c-2"}) {
			t.Errorf("CertificatesBySession(s1) = %v, %v; want [c-1 c-2]", ids, err)
		}
		ids, err = tx.CertificatesBySession(ctx, "s9")
		if err != nil || len(ids) != 0 {
			t.Errorf("CertificatesBySession(unknown) = %v, %v; want none", ids, err)
		}
		return nil
	})
	err := s.Update(ctx, func(tx consent.Tx) error {
		return tx.UpdateCertificate(ctx, certificate("c-9", "acme", "acme-web", "s1"))
	})
	wantCode(t, "UpdateCertificate(unknown)", err, consent.NotFound)
}

// testReadThenWriteIsAtomic: a rule checked on a session read inside Update
// still holds at commit. 20 concurrent "retain once" transactions end with
// exactly one success and one charge.
func testReadThenWriteIsAtomic(t *testing.T, s consent.Store) {
	fixture(t, s)
	update(t, s, func(tx consent.Tx) error {
		_, err := tx.Credit(ctx, entry("topup", "acme", wallet.TopUp, wallet.Dollar, t0))
		return err
	})
	const n = 20
	var (
		wg                 sync.WaitGroup
		mu                 sync.Mutex
		ok, conflicts      int
		start              = make(chan struct{})
		errAlreadyRetained = consent.Errorf(consent.Conflict, "already retained")
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			err := s.Update(ctx, func(tx consent.Tx) error {
				ses, err := tx.Session(ctx, "s1")
				if err != nil {
					return err
				}
				if ses.RetentionStatus == consent.RetentionRetained {
					return errAlreadyRetained
				}
				// Widen the window between the check and the write, so that a
				// store whose reads do not lock is caught.
				time.Sleep(2 * time.Millisecond)
				if _, err := tx.Debit(ctx, entry(fmt.Sprintf("r%02d", i), "acme", wallet.RetainSingle, 10*wallet.Cent, t0)); err != nil {
					return err
				}
				ses.RetentionStatus = consent.RetentionRetained
				return tx.UpdateSession(ctx, ses)
			})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case errors.Is(err, errAlreadyRetained):
				conflicts++
			default:
				t.Errorf("unexpected error: %v", err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if ok != 1 || conflicts != n-1 {
		t.Errorf("%d succeeded and %d conflicted; want 1 and %d", ok, conflicts, n-1)
	}
	view(t, s, func(tx consent.Tx) error {
		if bal, err := tx.Balance(ctx, "acme"); err != nil || bal != 90*wallet.Cent {
			t.Errorf("balance = %v, %v; want 0.9 (one charge)", bal, err)
		}
		return nil
	})
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

// testTakenBeforeMissing: a create whose id is taken and whose parent does
// not exist is a conflict on every store: the SQL stores' unique index
// refuses the row before its foreign key is checked, and the memory store
// looks in the same order.
func testTakenBeforeMissing(t *testing.T, s consent.Store) {
	withTokenAndCertificate(t, s)
	update(t, s, func(tx consent.Tx) error {
		if err := tx.CreateRevocation(ctx, &consent.Revocation{ID: "rev-1", CompanyID: "acme", CreatedAt: t0}); err != nil {
			return err
		}
		return tx.CreateWebhookEndpoint(ctx, endpoint("ep-1", "acme"))
	})
	for name, create := range map[string]func(tx consent.Tx) error{
		"CreateProperty, a taken id": func(tx consent.Tx) error {
			return tx.CreateProperty(ctx, &consent.Property{ID: "acme-web", CompanyID: "nobody", Name: "Form", CreatedAt: t0})
		},
		"CreateToken, a taken id": func(tx consent.Tx) error {
			return tx.CreateToken(ctx, &consent.Token{ID: "tok-1", CompanyID: "nobody", Digest: consent.DigestOf("secret-2"), CreatedAt: t0})
		},
		"CreateToken, a taken digest": func(tx consent.Tx) error {
			return tx.CreateToken(ctx, &consent.Token{ID: "tok-2", CompanyID: "nobody", Digest: consent.DigestOf("secret-1"), CreatedAt: t0})
		},
		"CreateSession, a taken id": func(tx consent.Tx) error { return tx.CreateSession(ctx, session("s1", "acme", "no-property")) },
		"CreateCertificate, a taken id": func(tx consent.Tx) error {
			return tx.CreateCertificate(ctx, certificate("cert-1", "acme", "acme-web", "no-session"))
		},
		"CreateRevocation, a taken id": func(tx consent.Tx) error {
			return tx.CreateRevocation(ctx, &consent.Revocation{ID: "rev-1", CompanyID: "nobody", CreatedAt: t0})
		},
		"CreateWebhookEndpoint, a taken id": func(tx consent.Tx) error { return tx.CreateWebhookEndpoint(ctx, endpoint("ep-1", "nobody")) },
	} {
		wantCode(t, name+", and a missing parent", s.Update(ctx, create), consent.Conflict)
	}
}
