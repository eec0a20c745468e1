package storetest

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/consentkit/consentkit/consent"
)

func testCertificate(t *testing.T, s consent.Store) {
	fixture(t, s)
	want := certificate("cert-1", "acme", "acme-web", "s1")
	want.EmailDigest = consent.DigestOf("jane@example.com")
	want.MobileDigest = consent.DigestOf("+15550102000")
	// Every fact of the evidence round-trips: each consent's visibility and
	// opt-in method, the certificate's own, the client, the revocation
	// before it and the signature's version.
	want.ClientIP, want.UserAgent = "2001:db8::7", "Mozilla/5.0 (X11; Linux x86_64) ✓"
	want.Records[0].OptInMethod, want.Records[0].NodeID = consent.OptInManual, 2147483647
	want.Records[0].Visibility = &consent.Visibility{InViewport: true, FontSizePx: 15.5, TextColor: "rgb(17, 17, 17)",
		BackgroundColor: "rgb(255, 255, 255)", ContrastRatio: 18.88, HiddenText: []string{"and 500 partners", "ünïcødé"}}
	want.Records[1].OptInMethod = consent.OptInNone
	want.Records[1].Visibility = &consent.Visibility{Visible: true, FontSizePx: 0.1 + 0.2, ContrastRatio: 1, HiddenText: []string{}}
	want.Visibility = &consent.Visibility{InViewport: true, Visible: true, FontSizePx: 16, ContrastRatio: 21, HiddenText: []string{}}
	want.RevokedBefore = t0.Add(-time.Hour + time.Microsecond)
	want.SignatureVersion = 2
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
			wantSame(t, w, got, opts, "Certificate(%s)", w.ID)
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
	wantRead(t, s, consent.Tx.Certificate, "c-1", want, "Certificate after UpdateCertificate")
	view(t, s, func(tx consent.Tx) error {
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
			wantSame(t, want, got, opts, "%s", what)
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
	wantRead(t, s, consent.Tx.Revocations, "acme", []*consent.Revocation{first, second}, "Revocations")
	err := s.Update(ctx, func(tx consent.Tx) error { return tx.CreateRevocation(ctx, first) })
	wantCode(t, "CreateRevocation(duplicate)", err, consent.Conflict)
	err = s.Update(ctx, func(tx consent.Tx) error {
		return tx.CreateRevocation(ctx, &consent.Revocation{ID: "rev-9", CompanyID: "nobody", CreatedAt: t0})
	})
	wantCode(t, "CreateRevocation(unknown company)", err, consent.NotFound)
}

// RevokedBefore finds the company's latest revocation of an email or a
// mobile digest, in its revocations and its revoked certificates alike,
// and nothing of another company's or for a zero digest.
func testRevokedBefore(t *testing.T, s consent.Store) {
	fixture(t, s)
	email, mobile := consent.DigestOf("jane@example.com"), consent.DigestOf("+15550102000")
	other := consent.DigestOf("bob@example.com")
	byEmail := t0.Add(time.Hour)
	byMobile := t0.Add(2 * time.Hour)
	certRevoked := t0.Add(3 * time.Hour)
	update(t, s, func(tx consent.Tx) error {
		for _, r := range []*consent.Revocation{
			{ID: "rev-1", CompanyID: "acme", EmailDigest: email, CreatedAt: byEmail},
			{ID: "rev-2", CompanyID: "acme", MobileDigest: mobile, CreatedAt: byMobile},
			{ID: "rev-3", CompanyID: "other", EmailDigest: other, CreatedAt: t0.Add(9 * time.Hour)},
			{ID: "rev-4", CompanyID: "acme", CreatedAt: t0.Add(8 * time.Hour)}, // no digest: matches nothing
		} {
			if err := tx.CreateRevocation(ctx, r); err != nil {
				return err
			}
		}
		c := certificate("cert-1", "acme", "acme-web", "s1")
		c.EmailDigest = other
		if err := tx.CreateCertificate(ctx, c); err != nil {
			return err
		}
		return tx.RevokeCertificate(ctx, "cert-1", certRevoked)
	})
	view(t, s, func(tx consent.Tx) error {
		for _, c := range []struct {
			name          string
			company       string
			email, mobile consent.Digest
			want          time.Time
		}{
			{"email", "acme", email, consent.Digest{}, byEmail},
			{"mobile", "acme", consent.Digest{}, mobile, byMobile},
			{"either, the latest", "acme", email, mobile, byMobile},
			{"a revoked certificate's", "acme", other, consent.Digest{}, certRevoked},
			{"another company's", "other", email, mobile, time.Time{}},
			{"no digest", "acme", consent.Digest{}, consent.Digest{}, time.Time{}},
			{"unknown company", "nobody", email, mobile, time.Time{}},
		} {
			got, err := tx.RevokedBefore(ctx, c.company, c.email, c.mobile)
			if err != nil {
				return err
			}
			if !got.Equal(c.want) {
				t.Errorf("RevokedBefore(%s) = %v, want %v", c.name, got, c.want)
			}
		}
		return nil
	})
}

// An attestation is created once for a certificate of its company, read
// back, updated with its statement, and goes with its certificate when
// the purge takes it.
func testAttestation(t *testing.T, s consent.Store) {
	testCertificateRow(t, s, "Attestation", func(cert, company string) *consent.Attestation {
		return &consent.Attestation{Evidence: consent.Evidence{CertificateID: cert, CompanyID: company, Status: consent.AttestationPending, CreatedAt: t0, UpdatedAt: t0}}
	}, func(a *consent.Attestation) {
		a.Status, a.Statement, a.Signature = consent.AttestationMismatch, []byte(`{"status":"mismatch","v":"ü"}`), []byte{0, 0xff, 7}
		a.KeyID, a.Screenshot, a.UpdatedAt = "key-1", "attest/cert-1.png", t0.Add(time.Minute+time.Microsecond)
	}, consent.Tx.CreateAttestation, consent.Tx.UpdateAttestation, consent.Tx.Attestation)
}

// Insights are created once for a certificate of its company, read back,
// updated with their statement, and go with their certificate when the
// purge takes it.
func testInsights(t *testing.T, s consent.Store) {
	testCertificateRow(t, s, "Insights", func(cert, company string) *consent.Insights {
		return &consent.Insights{Evidence: consent.Evidence{CertificateID: cert, CompanyID: company, Status: consent.InsightsPending, CreatedAt: t0, UpdatedAt: t0}}
	}, func(in *consent.Insights) {
		in.Status, in.Statement, in.Signature = consent.InsightsDone, []byte(`{"bot":{"verdict":"human"},"v":"ü"}`), []byte{0, 0xff, 7}
		in.KeyID, in.UpdatedAt = "key-1", t0.Add(time.Minute+time.Microsecond)
	}, consent.Tx.CreateInsights, consent.Tx.UpdateInsights, consent.Tx.Insights)
}

// testCertificateRow checks a row kept for one certificate (its
// attestation, its insights): pending(cert, company) makes a pending one,
// finish fills its statement. The row is created once, only for a
// certificate of its company, read back, updated, refused an update of a
// certificate that has none, and goes with its certificate in the purge.
func testCertificateRow[T any](t *testing.T, s consent.Store, name string, pending func(cert, company string) *T, finish func(*T),
	create, change func(consent.Tx, context.Context, *T) error, get func(consent.Tx, context.Context, string) (*T, error)) {
	fixture(t, s)
	cert := certificate("cert-1", "acme", "acme-web", "s1")
	cert.ExpiresAt = t0.Add(time.Hour)
	update(t, s, func(tx consent.Tx) error { return tx.CreateCertificate(ctx, cert) })
	first := pending("cert-1", "acme")
	update(t, s, func(tx consent.Tx) error { return create(tx, ctx, first) })
	wantRead(t, s, get, "cert-1", first, "%s(pending)", name)
	for refused, c := range map[string]struct {
		row  *T
		code consent.Code
	}{
		"twice":               {first, consent.Conflict},
		"unknown certificate": {pending("cert-9", "acme"), consent.NotFound},
		"another company's":   {pending("cert-1", "other"), consent.NotFound},
	} {
		err := s.Update(ctx, func(tx consent.Tx) error { return create(tx, ctx, c.row) })
		wantCode(t, "Create"+name+"("+refused+")", err, c.code)
	}
	done := *first
	finish(&done)
	update(t, s, func(tx consent.Tx) error { return change(tx, ctx, &done) })
	wantRead(t, s, get, "cert-1", &done, "%s(done)", name)
	unknown := pending("cert-9", "acme")
	finish(unknown)
	err := s.Update(ctx, func(tx consent.Tx) error { return change(tx, ctx, unknown) })
	wantCode(t, "Update"+name+"(unknown)", err, consent.NotFound)
	update(t, s, func(tx consent.Tx) error {
		_, err := tx.PurgeCertificates(ctx, t0.Add(2*time.Hour), 10)
		return err
	})
	view(t, s, func(tx consent.Tx) error {
		_, err := get(tx, ctx, "cert-1")
		wantCode(t, name+"(of a purged certificate)", err, consent.NotFound)
		return nil
	})
}
