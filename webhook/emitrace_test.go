package webhook_test

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/webhook"
)

// An event written in a transaction that read the endpoint while it was
// enabled, and that commits after the endpoint was disabled and enabled
// again, or deleted and added again under its id, never reaches it:
// "enabled again, it is sent only the events that happen from then on"
// (SetDisabled), and a new endpoint of the id is sent none of the old
// one's (Delete). On PostgreSQL without group commit nothing made the two
// transactions take turns, and the message was sent; the event's read of
// the endpoints now holds them (FOR SHARE) until it commits, so the change
// waits and then drops the message. SQLite and the memory store have one
// writer, and PostgreSQL's group commit runs its batches in turns.
func TestEmitRacesEndpointChange(t *testing.T) {
	for _, mode := range []string{"disable", "delete"} {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t, teststore.PostgresWithoutGroupCommit(t), envOpts{})
			hooks := webhook.Endpoints{Service: e.svc}
			rc, again := newReceiver(t), newReceiver(t)
			ep := e.endpoint(t, rc.URL, consent.EventConsentRevoked)

			emitted, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
			go func() {
				first := true
				done <- e.svc.Store().Update(ctx, func(tx consent.Tx) error {
					err := e.svc.EmitEvent(ctx, tx, "acme", consent.EventConsentRevoked, map[string]string{"certificate_id": "cert-1"})
					if first {
						first = false
						close(emitted)
						<-release
					}
					return err
				})
			}()
			<-emitted
			toggled := make(chan error, 1)
			go func() {
				var err error
				if mode == "disable" {
					if err = hooks.SetDisabled(ctx, "acme", ep.ID, true); err == nil {
						err = hooks.SetDisabled(ctx, "acme", ep.ID, false)
					}
				} else {
					if err = hooks.Delete(ctx, "acme", ep.ID); err == nil {
						_, err = hooks.Add(ctx, webhook.Params{ID: ep.ID, CompanyID: "acme", URL: again.URL, Secret: secret, Events: []string{consent.EventConsentRevoked}})
					}
				}
				toggled <- err
			}()
			// The change either ends while the event's transaction is open
			// (the race) or waits for a lock it holds.
			var err error
			for waiting := false; !waiting; {
				select {
				case err = <-toggled:
					waiting = true
					toggled <- err
				default:
					waiting = lockWaits(t) > 0
					if !waiting {
						time.Sleep(5 * time.Millisecond)
					}
				}
			}
			close(release)
			if err := <-toggled; err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			e.drain(t)
			if got := len(rc.requests()) + len(again.requests()); got != 0 {
				t.Errorf("%s: the message written against the old endpoint was sent %d time(s) after the change; want dropped", mode, got)
			}
		})
	}
}

// lockWaits counts the database's sessions waiting for a lock.
func lockWaits(t *testing.T) int {
	t.Helper()
	c, err := pgx.Connect(ctx, os.Getenv(teststore.DSNVar))
	if err != nil {
		t.Fatal(err)
	}
	var n int
	err = c.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'`).Scan(&n)
	if err := errors.Join(err, c.Close(ctx)); err != nil {
		t.Fatal(err)
	}
	return n
}
