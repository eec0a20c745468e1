package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/wallet"
)

// purgeFixture adds to fixture: sessions "old" (expires at t0), "older"
// (t0 - 1 h) and "kept" (retained until t0 + 5 years), each with a chunk
// of events; a certificate of each, expiring with its session, the first
// with an email digest and revoked by a revocation; and a ledger entry that
// names it.
func purgeFixture(t *testing.T, s consent.Store) {
	t.Helper()
	fixture(t, s)
	update(t, s, func(tx consent.Tx) error {
		for _, x := range []struct {
			id       string
			expires  time.Time
			retained bool
		}{{"old", t0, false}, {"older", t0.Add(-time.Hour), false}, {"kept", t0.Add(5 * 365 * 24 * time.Hour), true}} {
			ses := session(x.id, "acme", "acme-web")
			ses.ExpiresAt, ses.URL = x.expires, "https://acme.example/quote?email=a@b.example"
			if x.retained {
				ses.RetentionStatus, ses.VideoStatus = consent.RetentionRetained, consent.VideoConverted
			}
			if err := tx.CreateSession(ctx, ses); err != nil {
				return err
			}
			if err := tx.AppendEvents(ctx, x.id, []byte(`[{"type":4}]`), t0); err != nil {
				return err
			}
			if x.retained {
				ses.Video = consent.Video{Path: "videos/kept.mp4", Bytes: 10, SHA256: consent.Digest{1}, Duration: time.Second}
				if err := tx.UpdateSession(ctx, ses); err != nil {
					return err
				}
			}
			c := certificate("c-"+x.id, "acme", "acme-web", x.id)
			c.ExpiresAt = x.expires
			if x.retained {
				c.RetentionStatus = consent.RetentionRetained
			}
			if x.id == "old" {
				c.EmailDigest = consent.Digest{7}
			}
			if err := tx.CreateCertificate(ctx, c); err != nil {
				return err
			}
		}
		if err := tx.RevokeCertificate(ctx, "c-old", t0); err != nil {
			return err
		}
		if err := tx.CreateRevocation(ctx, &consent.Revocation{ID: "rev-1", CompanyID: "acme", EmailDigest: consent.Digest{7},
			CertificateIDs: []string{"c-old"}, CreatedAt: t0}); err != nil {
			return err
		}
		if _, err := tx.Credit(ctx, entry("topup", "acme", wallet.TopUp, wallet.Dollar, t0)); err != nil {
			return err
		}
		e := entry("match", "acme", wallet.ExactMatch, 15*wallet.Cent/10, t0)
		e.Reference = "c-old"
		_, err := tx.Debit(ctx, e)
		return err
	})
}

func purgeSessions(t *testing.T, s consent.Store, before time.Time, limit int) []string {
	t.Helper()
	var ids []string
	update(t, s, func(tx consent.Tx) error {
		got, err := tx.PurgeSessions(ctx, before, limit)
		for _, ses := range got {
			ids = append(ids, ses.ID)
		}
		return err
	})
	return ids
}

func purgeCertificates(t *testing.T, s consent.Store, before time.Time, limit int) []string {
	t.Helper()
	var ids []string
	update(t, s, func(tx consent.Tx) error {
		var err error
		ids, err = tx.PurgeCertificates(ctx, before, limit)
		return err
	})
	return ids
}

// testPurge: batches take the earliest expiry first, up to the limit; a
// purged session keeps its row, expired, without recording, URL or video;
// a purged certificate is gone; what has not expired, retained items
// included, is untouched; revocations and the ledger survive.
func testPurge(t *testing.T, s consent.Store) {
	purgeFixture(t, s)
	// Before anything expires, nothing is purged.
	if ids := purgeSessions(t, s, t0.Add(-2*time.Hour), 10); len(ids) != 0 {
		t.Errorf("purged %v before anything expired", ids)
	}
	var before []*consent.Session
	update(t, s, func(tx consent.Tx) error {
		var err error
		before, err = tx.PurgeSessions(ctx, t0, 1)
		return err
	})
	if len(before) != 1 || before[0].ID != "older" || before[0].EventChunks != 1 || before[0].URL == "" {
		t.Fatalf("first batch = %+v; want session older as it was", before)
	}
	if ids := purgeSessions(t, s, t0, 10); !cmp.Equal(ids, []string{"old"}) {
		t.Errorf("second batch = %v; want [old]", ids)
	}
	if ids := purgeSessions(t, s, t0.Add(time.Hour), 10); len(ids) != 0 {
		t.Errorf("third batch = %v; want none (purged sessions are not purged again, retained ones are kept)", ids)
	}
	// A purge rolled back leaves the certificates findable as they were.
	lookups := func() [2][]string {
		var got [2][]string
		view(t, s, func(tx consent.Tx) error {
			var err1, err2 error
			got[0], err1 = tx.CertificatesByEmail(ctx, "acme", consent.Digest{7})
			got[1], err2 = tx.CertificatesBySession(ctx, "old")
			return errors.Join(err1, err2)
		})
		return got
	}
	found := lookups()
	if len(found[0]) == 0 || len(found[1]) == 0 {
		t.Fatalf("before purge, by email %v and by session %v; want the fixture's", found[0], found[1])
	}
	errUndo := errors.New("undo")
	if err := s.Update(ctx, func(tx consent.Tx) error {
		if _, err := tx.PurgeCertificates(ctx, t0.Add(time.Hour), 10); err != nil {
			return err
		}
		return errUndo
	}); !errors.Is(err, errUndo) {
		t.Fatalf("a purge rolled back: %v", err)
	}
	if after := lookups(); !cmp.Equal(after, found) {
		t.Errorf("after a purge rolled back, by email and by session %v; want %v", after, found)
	}
	if ids := purgeCertificates(t, s, t0, 1); !cmp.Equal(ids, []string{"c-older"}) {
		t.Errorf("first certificate batch = %v; want [c-older]", ids)
	}
	if ids := purgeCertificates(t, s, t0.Add(time.Hour), 10); !cmp.Equal(ids, []string{"c-old"}) {
		t.Errorf("second certificate batch = %v; want [c-old]", ids)
	}
	if ids := purgeCertificates(t, s, t0.Add(time.Hour), 10); len(ids) != 0 {
		t.Errorf("third certificate batch = %v; want none", ids)
	}
	view(t, s, func(tx consent.Tx) error {
		ses, err := tx.Session(ctx, "old")
		if err != nil {
			t.Fatalf("Session(old) after purge: %v", err)
		}
		want := session("old", "acme", "acme-web")
		want.ExpiresAt, want.RetentionStatus, want.LastEventAt = t0, consent.RetentionExpired, t0
		wantSame(t, want, ses, opts, "purged session")
		if chunks, err := tx.Events(ctx, "old"); err != nil || len(chunks) != 0 {
			t.Errorf("Events(old) = %d chunks, %v; want none", len(chunks), err)
		}
		_, err = tx.EventChunk(ctx, "old", 0)
		wantCode(t, "EventChunk(old, 0)", err, consent.NotFound)
		kept, err := tx.Session(ctx, "kept")
		if err != nil || kept.RetentionStatus != consent.RetentionRetained || kept.EventChunks != 1 || kept.Video.Path == "" {
			t.Errorf("retained session after purge = %+v, %v; want it untouched", kept, err)
		}
		if chunks, err := tx.Events(ctx, "kept"); err != nil || len(chunks) != 1 {
			t.Errorf("Events(kept) = %d chunks, %v; want its one chunk", len(chunks), err)
		}
		for _, id := range []string{"c-old", "c-older"} {
			_, err := tx.Certificate(ctx, id)
			wantCode(t, "Certificate("+id+") after purge", err, consent.NotFound)
		}
		if _, err := tx.Certificate(ctx, "c-kept"); err != nil {
			t.Errorf("retained certificate after purge: %v", err)
		}
		if ids, err := tx.CertificatesByEmail(ctx, "acme", consent.Digest{7}); err != nil || len(ids) != 0 {
			t.Errorf("CertificatesByEmail after purge = %v, %v; want none", ids, err)
		}
		if ids, err := tx.CertificatesBySession(ctx, "kept"); err != nil || !cmp.Equal(ids, []string{"c-kept"}) {
			t.Errorf("CertificatesBySession(kept) = %v, %v", ids, err)
		}
		revs, err := tx.Revocations(ctx, "acme")
		if err != nil || len(revs) != 1 || !cmp.Equal(revs[0].CertificateIDs, []string{"c-old"}) {
			t.Errorf("revocations after purge = %+v, %v; want rev-1 naming c-old", revs, err)
		}
		ledger, err := tx.Ledger(ctx, "acme")
		if err != nil || len(ledger) != 2 || ledger[1].Reference != "c-old" {
			t.Errorf("ledger after purge = %+v, %v; want both entries", ledger, err)
		}
		return nil
	})
}

// testPurgeRollsBack: a purge whose transaction rolls back leaves
// everything as it was.
func testPurgeRollsBack(t *testing.T, s consent.Store) {
	purgeFixture(t, s)
	err := s.Update(ctx, func(tx consent.Tx) error {
		if _, err := tx.PurgeSessions(ctx, t0, 10); err != nil {
			return err
		}
		if _, err := tx.PurgeCertificates(ctx, t0, 10); err != nil {
			return err
		}
		return errBoom
	})
	if !errors.Is(err, errBoom) {
		t.Fatalf("Update = %v; want the callback's error", err)
	}
	view(t, s, func(tx consent.Tx) error {
		for _, id := range []string{"old", "older"} {
			ses, err := tx.Session(ctx, id)
			if err != nil || ses.RetentionStatus != consent.RetentionNone || ses.EventChunks != 1 || ses.URL == "" {
				t.Errorf("Session(%s) after a rolled-back purge = %+v, %v", id, ses, err)
			}
			if chunks, err := tx.Events(ctx, id); err != nil || len(chunks) != 1 {
				t.Errorf("Events(%s) after a rolled-back purge = %d, %v", id, len(chunks), err)
			}
			if _, err := tx.Certificate(ctx, "c-"+id); err != nil {
				t.Errorf("Certificate(c-%s) after a rolled-back purge: %v", id, err)
			}
		}
		return nil
	})
}
