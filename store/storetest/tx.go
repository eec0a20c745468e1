package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/wallet"
)

func testRollback(t *testing.T, s consent.Store) {
	fixture(t, s)
	update(t, s, func(tx consent.Tx) error {
		_, err := tx.Credit(ctx, entry("e1", "acme", wallet.TopUp, wallet.Dollar, t0))
		return err
	})
	err := s.Update(ctx, func(tx consent.Tx) error {
		if _, err := tx.Debit(ctx, entry("e2", "acme", wallet.ExactMatch, 15*wallet.Cent/10, t0)); err != nil {
			return err
		}
		if err := tx.CreateCompany(ctx, &consent.Company{ID: "ghost", Name: "Ghost", CreatedAt: t0}); err != nil {
			return err
		}
		if err := tx.AppendEvents(ctx, "s1", []byte(`[{"type":4}]`), t0); err != nil {
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

// testBulkRollsBack: the bulk writes of a transaction that then fails are
// undone whole — sessions, jobs, balance, ledger — and the ids they took
// are free again.
func testBulkRollsBack(t *testing.T, s consent.Store) {
	funded(t, s)
	before := sessions(t, s, "s1")
	ledger := ledgerOf(t, s, "acme")
	retained := *before[0]
	retained.RetentionStatus, retained.VideoStatus, retained.ExpiresAt = consent.RetentionRetained, consent.VideoPending, t0.AddDate(5, 0, 0)
	jobs := func() []*consent.Job {
		return []*consent.Job{job(consent.JobConvert, "s1", t0), job("webhook", "msg_9:ep_1", t0)}
	}
	debits := func() []*wallet.Entry {
		return []*wallet.Entry{entry("d1", "acme", wallet.RetainBatch, 10*wallet.Cent, t0), entry("d2", "acme", wallet.RetainBatch, 10*wallet.Cent, t0)}
	}
	err := s.Update(ctx, func(tx consent.Tx) error {
		if err := tx.UpdateSessions(ctx, []*consent.Session{&retained}); err != nil {
			return err
		}
		if err := tx.EnqueueJobs(ctx, jobs()); err != nil {
			return err
		}
		if _, err := tx.DebitAll(ctx, debits()); err != nil {
			return err
		}
		return errBoom
	})
	if !errors.Is(err, errBoom) {
		t.Fatalf("Update returned %v, want fn's error", err)
	}
	wantSame(t, before, sessions(t, s, "s1"), opts, "session after the rollback")
	if got := jobsOf(t, s, consent.JobConvert, "s1"); got[0] != nil {
		t.Errorf("job after the rollback: %+v", got[0])
	}
	if got := jobsOf(t, s, "webhook", "msg_9:ep_1"); got[0] != nil {
		t.Errorf("job after the rollback: %+v", got[0])
	}
	if bal := balanceOf(t, s, "acme"); bal != 10*wallet.Dollar {
		t.Errorf("balance after the rollback: %v, want 10", bal)
	}
	wantSame(t, ledger, ledgerOf(t, s, "acme"), opts, "ledger after the rollback")
	// The same writes commit afterwards: nothing of the first try is left
	// to conflict with them.
	update(t, s, func(tx consent.Tx) error {
		if err := tx.UpdateSessions(ctx, []*consent.Session{&retained}); err != nil {
			return err
		}
		if err := tx.EnqueueJobs(ctx, jobs()); err != nil {
			return err
		}
		_, err := tx.DebitAll(ctx, debits())
		return err
	})
	wantSame(t, append(ledger, debits()...), ledgerOf(t, s, "acme"), opts, "ledger after the retry")
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

// testPanicRollsBack: an Update whose function panics passes the panic on
// to its caller and leaves nothing written, as one that fails does; and it
// holds nothing either: the next Update that debits the same wallet
// commits at once, not after some timeout.
func testPanicRollsBack(t *testing.T, s consent.Store) {
	funded(t, s)
	ledger := ledgerOf(t, s, "acme")
	got := func() (p any) {
		defer func() { p = recover() }()
		_ = s.Update(ctx, func(tx consent.Tx) error {
			if _, err := tx.Debit(ctx, entry("d1", "acme", wallet.ExactMatch, wallet.Dollar, t0)); err != nil {
				t.Errorf("Debit before the panic: %v", err)
			}
			if err := tx.CreateCompany(ctx, &consent.Company{ID: "ghost", Name: "Ghost", CreatedAt: t0}); err != nil {
				t.Errorf("CreateCompany before the panic: %v", err)
			}
			panic(errBoom)
		})
		return nil
	}()
	if err, ok := got.(error); !ok || !errors.Is(err, errBoom) {
		t.Fatalf("Update of a function that panics: recovered %v, want the function's panic", got)
	}
	// Bounded, so that a transaction left open fails the test instead of
	// hanging it.
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := s.Update(cctx, func(tx consent.Tx) error {
		_, err := tx.Debit(cctx, entry("d2", "acme", wallet.ExactMatch, wallet.Cent, t0))
		return err
	}); err != nil {
		t.Fatalf("the Update after the panic: %v (the panicking call's transaction holds the store)", err)
	}
	if bal := balanceOf(t, s, "acme"); bal != 10*wallet.Dollar-wallet.Cent {
		t.Errorf("balance %v, want 9.99: the panicking call's debit was kept", bal)
	}
	wantSame(t, append(ledger, entry("d2", "acme", wallet.ExactMatch, wallet.Cent, t0)), ledgerOf(t, s, "acme"), opts, "ledger after the panic")
	wantNotFound(t, s, consent.Tx.Company, "ghost", "company created by the panicking call")
}
