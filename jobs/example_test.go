package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/jobs"
	"github.com/consentkit/consentkit/store/memstore"
)

// A runner with one handler. A job is enqueued in the transaction of the
// change that calls for it; the runner leases it, calls Do outside any
// transaction, and ends it — with Result.Commit's writes — in one
// transaction. A failed attempt is tried again after a backoff. The clock
// is a fake one, so the example does not wait.
func ExampleNew() {
	ctx := context.Background()
	now := time.Date(2026, 11, 22, 10, 30, 0, 0, time.UTC)
	st := memstore.New() // a Service's Store() in a real program

	failOnce := true
	runner, err := jobs.New(jobs.Config{
		Store: st,
		Now:   func() time.Time { return now },
		Handlers: []jobs.Handler{{
			Kind:    "receipt",
			Backoff: time.Minute,
			Do: func(ctx context.Context, j *consent.Job) (jobs.Result, error) {
				if failOnce {
					failOnce = false
					return jobs.Result{}, errors.New("mail server unavailable")
				}
				fmt.Printf("sending receipt %s, attempt %d\n", j.Payload, j.Attempts)
				return jobs.Result{Commit: func(ctx context.Context, tx consent.Tx) error {
					return nil // the handler's writes, committed with the job's end
				}}, nil
			},
		}},
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}

	err = st.Update(ctx, func(tx consent.Tx) error {
		// … the change that calls for the job, then:
		return tx.EnqueueJob(ctx, &consent.Job{Kind: "receipt", Key: "inv-7", Payload: []byte("inv-7"),
			RunAfter: now, CreatedAt: now})
	})
	if err != nil {
		panic(err)
	}

	for range 2 {
		did, err := runner.RunOnce(ctx, "receipt") // runner.Run(ctx) in a real program
		fmt.Println("did a job:", did, err)
	}
	now = now.Add(time.Minute) // the backoff has passed
	did, err := runner.RunOnce(ctx, "receipt")
	fmt.Println("did a job:", did, err)
	// Output:
	// did a job: true <nil>
	// did a job: false <nil>
	// sending receipt inv-7, attempt 2
	// did a job: true <nil>
}
