package optout_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/optout"
	"github.com/consentkit/consentkit/store"
	"github.com/consentkit/consentkit/store/pgstore"
)

// An opt-out by email that runs while a certificate of that email is being
// issued must not leave that certificate both unrevoked and unaware of the
// revocation. On PostgreSQL (READ COMMITTED) the opt-out's list of the
// email's certificates does not see the uncommitted one, and the issuance's
// RevokedBefore does not see the uncommitted revocation: each misses the
// other, and a certificate created before the consumer opted out verifies as
// valid consent afterwards, with no revoked_before. The other stores run one
// writer at a time.
func TestOptOutRacingIssue(t *testing.T) {
	ctx := context.Background()
	dsn := teststore.PostgresURL(t)
	var b [6]byte
	rand.Read(b[:])
	app := "optout_race_" + hex.EncodeToString(b[:])
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	pool, err := pgxpool.New(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	pg := pgstore.New(pool, pgstore.Config{GroupCommit: store.GroupCommit{Off: true}})
	if err := pg.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 22, 10, 30, 0, 0, time.UTC)
	svc, err := consentkit.NewService(pg, consentkit.Config{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.AddProperty(ctx, consentkit.PropertyParams{ID: "acme-web", CompanyID: "acme", Name: "Form"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.StartSession(ctx, consentkit.SessionParams{ID: "s1", CompanyID: "acme", PropertyID: "acme-web"}); err != nil {
		t.Fatal(err)
	}

	// waitingOnLock reports whether a connection of this test waits for a lock.
	waitingOnLock := func() bool {
		var n int
		err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE application_name = $1 AND wait_event_type = 'Lock'`, app).Scan(&n)
		if err != nil {
			t.Errorf("pg_stat_activity: %v", err)
			return true
		}
		return n > 0
	}

	done := make(chan struct{})
	var optErr error
	err = svc.Store().Update(consent.Alone(ctx), func(tx consent.Tx) error {
		if _, err := svc.IssueCertificateTx(ctx, tx, consentkit.CertificateParams{ID: "cert-1", CompanyID: "acme",
			PropertyID: "acme-web", SessionID: "s1", Email: "jane@example.com", Records: []consent.Record{{Text: "I agree."}}}); err != nil {
			return err
		}
		// The issuance has not committed: the consumer opts out now.
		go func() {
			defer close(done)
			_, optErr = optout.New(svc).OptOut(ctx, optout.Request{CompanyID: "acme", Email: "Jane@Example.com", ClientIP: "192.0.2.1"})
		}()
		// Commit once the opt-out has finished, or waits for this
		// transaction's locks.
		for {
			select {
			case <-done:
				return nil
			case <-time.After(10 * time.Millisecond):
				if waitingOnLock() {
					return nil
				}
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	<-done
	if optErr != nil {
		t.Fatalf("OptOut: %v", optErr)
	}
	err = pg.View(ctx, func(tx consent.Tx) error {
		c, err := tx.Certificate(ctx, "cert-1")
		if err == nil && !c.Revoked() && c.RevokedBefore.IsZero() {
			t.Errorf("cert-1 (created %v) is neither revoked nor marked revoked_before after the consumer's opt-out: it verifies as valid consent", c.CreatedAt)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
