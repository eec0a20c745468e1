package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/consentkit/consentkit/consent"
)

// failJob enqueues the job of kind and key and fails it for good at at, as
// a runner does: leased, then ended with FailedAt.
func failJob(tx consent.Tx, kind, key string, at time.Time) error {
	if err := tx.EnqueueJob(ctx, job(kind, key, t0)); err != nil {
		return err
	}
	if _, err := tx.LeaseJob(ctx, []string{kind}, "w-"+key, at, at.Add(time.Minute)); err != nil {
		return err
	}
	return tx.EndJob(ctx, kind, key, "w-"+key, &consent.Job{Kind: kind, Key: key, Attempts: 1, RunAfter: t0,
		LastError: "gave up", FailedAt: at, CreatedAt: t0})
}

// DeleteFailedJobs deletes the jobs of its kind failed for good before the
// time given, the oldest first and at most the limit; a job waiting, or of
// another kind, or failed since, stays.
func testDeleteFailedJobs(t *testing.T, s consent.Store) {
	fixture(t, s)
	update(t, s, func(tx consent.Tx) error {
		for i, key := range []string{"f3", "f1", "f2", "f4"} { // failed at t0 + 3, 1, 2, 4 hours
			at := t0.Add(time.Duration([]int{3, 1, 2, 4}[i]) * time.Hour)
			if err := failJob(tx, consent.JobConvert, key, at); err != nil {
				return fmt.Errorf("fail %s: %w", key, err)
			}
		}
		if err := failJob(tx, "other.kind", "o1", t0); err != nil {
			return err
		}
		return tx.EnqueueJob(ctx, job(consent.JobConvert, "waiting", t0))
	})
	deleted := func(before time.Time, limit int) int {
		var n int
		update(t, s, func(tx consent.Tx) (err error) {
			n, err = tx.DeleteFailedJobs(ctx, consent.JobConvert, before, limit)
			return err
		})
		return n
	}
	if n := deleted(t0.Add(210*time.Minute), 2); n != 2 { // f1, f2 of f1, f2, f3
		t.Errorf("DeleteFailedJobs(3.5 h, 2) = %d, want 2", n)
	}
	view(t, s, func(tx consent.Tx) error {
		for key, want := range map[string]bool{"f1": false, "f2": false, "f3": true, "f4": true, "waiting": true} {
			_, err := tx.Job(ctx, consent.JobConvert, key)
			if (err == nil) != want {
				t.Errorf("after deleting the two oldest failed jobs, Job(%s): %v; want kept %v", key, err, want)
			}
		}
		_, err := tx.Job(ctx, "other.kind", "o1")
		if err != nil {
			t.Errorf("a failed job of another kind: %v, want it kept", err)
		}
		return nil
	})
	if n := deleted(t0.Add(210*time.Minute), 10); n != 1 { // f3; f4 failed since
		t.Errorf("DeleteFailedJobs(3.5 h, 10) = %d, want 1", n)
	}
	if n := deleted(t0.Add(4*time.Hour), 10); n != 0 { // f4 failed at 4 h: not before
		t.Errorf("DeleteFailedJobs(4 h) = %d, want 0", n)
	}
}

// DeleteWebhookDeliveries deletes delivery-log entries of every endpoint
// attempted before the time given, the oldest first and at most the limit,
// and is undone with its transaction.
func testDeleteWebhookDeliveries(t *testing.T, s consent.Store) {
	fixture(t, s)
	minutes := map[string][]int{"ep-a": {5, 1, 9}, "ep-b": {3, 7, 2}} // appended in this order
	update(t, s, func(tx consent.Tx) error {
		for _, id := range []string{"ep-a", "ep-b"} {
			if err := tx.CreateWebhookEndpoint(ctx, endpoint(id, "acme", consent.EventConsentRevoked)); err != nil {
				return err
			}
			for _, m := range minutes[id] {
				if err := tx.AppendWebhookDelivery(ctx, &consent.WebhookDelivery{EndpointID: id, MessageID: fmt.Sprintf("msg_%d", m),
					EventType: consent.EventConsentRevoked, Attempt: 1, At: t0.Add(time.Duration(m) * time.Minute), Status: 204}); err != nil {
					return err
				}
			}
		}
		return nil
	})
	logs := func() map[string][]string {
		out := map[string][]string{}
		view(t, s, func(tx consent.Tx) error {
			for _, id := range []string{"ep-a", "ep-b"} {
				log, err := tx.WebhookDeliveries(ctx, id, 0, 10)
				if err != nil {
					return err
				}
				out[id] = []string{}
				for _, d := range log {
					out[id] = append(out[id], d.MessageID)
				}
			}
			return nil
		})
		return out
	}
	// Rolled back: nothing goes.
	errRollback := errors.New("roll back")
	err := s.Update(ctx, func(tx consent.Tx) error {
		if _, err := tx.DeleteWebhookDeliveries(ctx, t0.Add(time.Hour), 10); err != nil {
			return err
		}
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		t.Fatalf("rolled-back Update: %v", err)
	}
	wantSame(t, map[string][]string{"ep-a": {"msg_9", "msg_1", "msg_5"}, "ep-b": {"msg_2", "msg_7", "msg_3"}}, logs(), exact, "logs after a rollback")
	var n int
	update(t, s, func(tx consent.Tx) (err error) {
		n, err = tx.DeleteWebhookDeliveries(ctx, t0.Add(7*time.Minute), 3) // of 1, 2, 3, 5: the oldest three
		return err
	})
	if n != 3 {
		t.Errorf("DeleteWebhookDeliveries(7 min, 3) = %d, want 3", n)
	}
	wantSame(t, map[string][]string{"ep-a": {"msg_9", "msg_5"}, "ep-b": {"msg_7"}}, logs(), exact, "logs after deleting the three oldest")
	update(t, s, func(tx consent.Tx) (err error) {
		n, err = tx.DeleteWebhookDeliveries(ctx, t0.Add(7*time.Minute), 10) // 5; 7 is not before
		return err
	})
	if n != 1 {
		t.Errorf("DeleteWebhookDeliveries(7 min, 10) = %d, want 1", n)
	}
	wantSame(t, map[string][]string{"ep-a": {"msg_9"}, "ep-b": {"msg_7"}}, logs(), exact, "logs after deleting those before 7 min")
}
