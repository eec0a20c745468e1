package webhook_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/consentkit/consentkit/capture"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/retain"
)

// What an anonymous caller can create that no purge removes is bounded
// and stated (D52): opt-outs that revoke nothing new, and session rows.
// A consent given through the anonymous capture API (start, chunk,
// consent: what POST /capture/sessions… does) issues a certificate whose
// certificate.issued message leaves a row in each subscribed endpoint's
// delivery log, one per attempt: the purge deletes the log's entries older
// than PurgeConfig.WebhookLogFor (D44), and keeps the newer ones.
func TestPurgeDeletesOldWebhookLog(t *testing.T) {
	rc := newReceiver(t)
	e := newEnv(t, teststore.SQLite(t), envOpts{})
	ep := e.endpoint(t, rc.URL, consent.EventCertificateIssued)
	const origin = "https://acme.example"
	if _, err := e.svc.SetAllowedOrigins(ctx, "acme", "web", []string{origin}); err != nil {
		t.Fatal(err)
	}

	c := capture.New(e.svc)
	s, err := c.Start(ctx, capture.StartRequest{PropertyID: "web", URL: origin + "/quote", Origin: origin})
	if err != nil {
		t.Fatal(err)
	}
	caller := capture.Caller{UploadToken: s.UploadToken, Origin: origin}
	if _, err := c.Append(ctx, caller, capture.Chunk{SessionID: s.SessionID, Events: json.RawMessage(`[{"type":4,"timestamp":1}]`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Issue(ctx, caller, capture.Consent{SessionID: s.SessionID, URL: origin + "/quote",
		Records: []consent.Record{{Text: "I agree."}}}); err != nil {
		t.Fatal(err)
	}
	e.drain(t)
	if n := len(e.log(t, ep.ID)); n != 1 {
		t.Fatalf("%d deliveries logged, want 1", n)
	}
	// giveUp fails a webhook message for good at at, as a runner does.
	giveUp := func(key string, at time.Time) {
		t.Helper()
		err := e.svc.Store().Update(ctx, func(tx consent.Tx) error {
			if err := tx.EnqueueJob(ctx, &consent.Job{Kind: consent.JobWebhook, Key: key, RunAfter: at, CreatedAt: at}); err != nil {
				return err
			}
			if _, err := tx.LeaseJob(ctx, []string{consent.JobWebhook}, "w", at, at.Add(time.Minute)); err != nil {
				return err
			}
			return tx.EndJob(ctx, consent.JobWebhook, key, "w", &consent.Job{Kind: consent.JobWebhook, Key: key, Attempts: 1,
				RunAfter: at, LastError: "gave up", FailedAt: at, CreatedAt: at})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	giveUp("msg_old", e.clock.Now())
	failedJob := func(key string) bool {
		t.Helper()
		var ok bool
		if err := e.svc.Store().View(ctx, func(tx consent.Tx) error {
			_, err := tx.Job(ctx, consent.JobWebhook, key)
			ok = err == nil
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return ok
	}

	// Long after every retention window: the certificate and the session's
	// data are purged.
	e.clock.Add(10 * 365 * 24 * time.Hour)
	p, err := retain.NewPurger(retain.PurgeConfig{Service: e.svc, Videos: retain.Dir{Root: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	n, err := p.Purge(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n.Certificates != 1 || n.WebhookLog != 2 || failedJob("msg_old") {
		t.Fatalf("purged %+v, want the certificate, the delivery-log entry and the message given up", n)
	}
	if log := e.log(t, ep.ID); len(log) != 0 {
		t.Errorf("after the purge, the endpoint's delivery log still holds %d entries (%s %s)",
			len(log), log[0].EventType, log[0].MessageID)
	}

	// An entry of a day ago, and a message given up a day ago, stay.
	dayAgo := e.clock.Now().Add(-24 * time.Hour)
	if err := e.svc.Store().Update(ctx, func(tx consent.Tx) error {
		if err := tx.AppendWebhookDelivery(ctx, &consent.WebhookDelivery{EndpointID: ep.ID, MessageID: "msg_recent",
			EventType: consent.EventCertificateIssued, Attempt: 1, At: dayAgo, Status: 500}); err != nil {
			return err
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	giveUp("msg_recent", dayAgo)
	if n, err = p.Purge(ctx); err != nil || n.WebhookLog != 0 {
		t.Errorf("a second purge: %+v, %v; want nothing of the webhook log", n, err)
	}
	if log := e.log(t, ep.ID); len(log) != 1 || !failedJob("msg_recent") {
		t.Errorf("the delivery log holds %d entries after a purge, want the one of a day ago, and the message given up then", len(log))
	}
}
