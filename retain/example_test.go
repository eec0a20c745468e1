package retain_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/jobs"
	"github.com/consentkit/consentkit/retain"
	"github.com/consentkit/consentkit/store/memstore"
	"github.com/consentkit/consentkit/verify"
	"github.com/consentkit/consentkit/wallet"
)

// exampleService returns a service on the clock now, where company acme
// has $1, a property acme-web and the recorded session s1 with its
// certificate cert-1.
func exampleService(ctx context.Context, now func() time.Time) *consentkit.Service {
	svc, err := consentkit.NewService(memstore.New(), consentkit.Config{Now: now})
	if err != nil {
		panic(err)
	}
	svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme Insurance"})
	svc.AddProperty(ctx, consentkit.PropertyParams{ID: "acme-web", CompanyID: "acme", Name: "Quote form"})
	svc.TopUp(ctx, "acme", wallet.Dollar, "invoice-1")
	svc.StartSession(ctx, consentkit.SessionParams{ID: "s1", CompanyID: "acme", PropertyID: "acme-web"})
	svc.AppendEvents(ctx, "s1", json.RawMessage(`[{"type":4,"data":{"width":1024,"height":625},"timestamp":1}]`))
	svc.IssueCertificate(ctx, consentkit.CertificateParams{
		ID: "cert-1", CompanyID: "acme", PropertyID: "acme-web", SessionID: "s1",
		Records: []consent.Record{{Text: "I agree to be contacted."}},
	})
	return svc
}

// The Retain API (POST /api/integrations/{companyId}/retain/{sessionId})
// keeps a session's recording for the long term — five years by default
// (D26) — and queues it for conversion to video, in one paid step (D22).
func ExampleService_Retain() {
	ctx := context.Background()
	now := time.Date(2026, 11, 22, 10, 30, 0, 0, time.UTC)
	svc := exampleService(ctx, func() time.Time { return now })
	r := retain.New(svc)

	// The caller is the company whose token has the vzew_retention permission.
	ret, err := r.Retain(ctx, "acme", "acme", "s1")
	if err != nil {
		panic(err)
	}
	fmt.Println(ret.SessionID, ret.RetentionStatus, ret.Status, ret.RetainedUntil.Format(time.DateOnly), ret.Charged, ret.Balance)

	ses, _ := r.Status(ctx, "acme", "acme", "s1")
	fmt.Println(ses.RetentionStatus, ses.VideoStatus)

	_, err = r.Retain(ctx, "acme", "acme", "s1")
	fmt.Println(consent.ErrorCode(err))
	// Output:
	// s1 retained queued_for_conversion 2031-11-22 0.1 0.9
	// retained pending
	// conflict
}

// fixedConverter stands in for retain/mp4's converter, which needs
// Chromium and ffmpeg: it writes a few bytes as the video.
type fixedConverter struct{}

func (fixedConverter) Convert(ctx context.Context, events json.RawMessage, dst string) (time.Duration, error) {
	return 1500 * time.Millisecond, os.WriteFile(dst, []byte("not really an MP4"), 0o644)
}

// A retained recording is converted to video by a Worker: a job runner with
// the conversion handler, which runs the Converter (retain/mp4's in a real
// service) and keeps the video in a VideoStore (a directory here, S3 with
// retain/s3video). Run runs it until its context ends; RunOnce does one job.
func ExampleNewWorker() {
	ctx := context.Background()
	now := time.Date(2026, 11, 22, 10, 30, 0, 0, time.UTC)
	svc := exampleService(ctx, func() time.Time { return now })
	if _, err := retain.New(svc).Retain(ctx, "acme", "acme", "s1"); err != nil {
		panic(err)
	}

	dir, err := os.MkdirTemp("", "videos")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	w, err := retain.NewWorker(retain.WorkerConfig{
		Service:   svc,
		Converter: fixedConverter{}, // mp4.New(mp4.Config{}) in a real service
		Videos:    retain.Dir{Root: dir},
		Logger:    slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	did, err := w.RunOnce(ctx) // go w.Run(ctx) in a real service
	fmt.Println("converted one:", did, err)

	ses, _ := retain.New(svc).Status(ctx, "acme", "acme", "s1")
	// A Dir keeps each video in a file of its own, in a directory of its
	// session.
	fmt.Println(ses.VideoStatus, filepath.Base(filepath.Dir(ses.Video.Path)), filepath.Ext(ses.Video.Path), ses.Video.Bytes, ses.Video.Duration)
	// Output:
	// converted one: true <nil>
	// converted s1 .mp4 17 1.5s
}

// The purge (D43) removes what is past its window: a certificate 90 days
// after its creation (unless retained), and a session's recording. Its
// handlers run in a jobs.Runner, beside the conversion and webhook handlers
// of a service that runs them all.
func ExampleNewPurger() {
	ctx := context.Background()
	now := time.Date(2026, 11, 22, 10, 30, 0, 0, time.UTC)
	svc := exampleService(ctx, func() time.Time { return now })

	purger, err := retain.NewPurger(retain.PurgeConfig{
		Service: svc,
		Videos:  retain.Dir{Root: os.TempDir()},
		Every:   time.Hour,
		Logger:  slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	runner, err := jobs.New(jobs.Config{
		Store:    svc.Store(),
		Now:      svc.Now,
		Handlers: purger.Handlers(), // append(…, conversion, webhooks) in a real service
		Logger:   slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	if err := runner.Schedule(ctx); err != nil { // Run schedules, then runs until ctx ends
		panic(err)
	}

	now = now.Add(91 * 24 * time.Hour) // past the default window of 90 days
	did, err := runner.RunOnce(ctx, retain.JobPurge)
	fmt.Println("purged:", did, err)

	_, err = verify.New(svc).Match(ctx, "acme", verify.MatchRequest{
		CertificateID: "cert-1", CompanyID: "acme", Consent: "I agree to be contacted.",
	})
	fmt.Println("cert-1:", consent.ErrorCode(err))
	ses, _ := retain.New(svc).Status(ctx, "acme", "acme", "s1")
	fmt.Println("s1:", ses.RetentionStatus, ses.EventChunks)
	// Output:
	// purged: true <nil>
	// cert-1: not_found
	// s1: expired 0
}
