package consentkit_test

import (
	"testing"
	"time"

	"github.com/consentkit/consentkit/consent"
)

// A job is enqueued without a lease or a failure, and leased by someone:
// the memory store would keep a lease or a failure it was given, which the
// SQL stores drop, and would let an empty owner hold nothing where they let
// it hold the job. The checked Tx refuses both, as Invalid, on every store.
func TestCheckedJobLeases(t *testing.T) {
	overStores(t, func(t *testing.T, s consent.Store) {
		fixture(t, s)
		for name, j := range map[string]*consent.Job{
			"a lease owner": {LeaseOwner: "w"},
			"a lease end":   {LeaseUntil: t0.Add(time.Minute)},
			"a failure":     {FailedAt: t0, LastError: "gave up"},
		} {
			j.Kind, j.Key, j.RunAfter, j.CreatedAt = consent.JobConvert, "s1", t0, t0
			err := s.Update(ctx, func(tx consent.Tx) error { return tx.EnqueueJob(ctx, j) })
			wantCode(t, "EnqueueJob with "+name, err, consent.Invalid)
			err = s.Update(ctx, func(tx consent.Tx) error { return tx.EnqueueJobs(ctx, []*consent.Job{j}) })
			wantCode(t, "EnqueueJobs with "+name, err, consent.Invalid)
		}
		mustUpdate(t, s, func(tx consent.Tx) error { return tx.EnqueueJob(ctx, newJob(consent.JobConvert, "s1", t0)) })
		err := s.Update(ctx, func(tx consent.Tx) error {
			_, err := tx.LeaseJob(ctx, []string{consent.JobConvert}, "", t0, t0.Add(time.Minute))
			return err
		})
		wantCode(t, "LeaseJob by no owner", err, consent.Invalid)
	})
}
