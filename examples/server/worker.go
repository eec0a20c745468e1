package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/blob"
	"github.com/consentkit/consentkit/blob/s3blob"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/insights"
	"github.com/consentkit/consentkit/jobs"
	"github.com/consentkit/consentkit/retain"
	"github.com/consentkit/consentkit/retain/mp4"
	"github.com/consentkit/consentkit/retain/s3video"
	"github.com/consentkit/consentkit/webhook"
)

// startWorker runs the conversion worker in-process until ctx ends; the
// returned channel closes when it has stopped. When a tool of the converter
// is missing it says which and how to get it, leaves jobs pending, and looks
// again every o.toolsRecheck, and when recheck closes: once the tool is
// installed, conversion starts without a restart, and the log says so once.
// A missing rrweb is not reported while recheck is open, the install that
// brings it under way: only if it is still missing once the install ends.
func startWorker(ctx context.Context, svc *consentkit.Service, videos retain.VideoStore, o *options, recheck <-chan struct{},
	observe func(string, time.Duration, error), log *slog.Logger) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		cfg := mp4.Config{Chromium: o.chromium, FFmpeg: o.ffmpeg, Replayer: o.replayer, Parallel: o.conversions, Logger: log}
		conv, err := mp4.New(cfg)
		var missing *mp4.MissingError
		if errors.As(err, &missing) && missing.Tool == "rrweb" && installing(recheck) {
			// The recorder's install, logged already, is what puts rrweb
			// in place: a warning to run it now would name the command
			// that is running. Look again once it has ended.
			select {
			case <-ctx.Done():
				return
			case <-recheck:
				recheck = nil
			}
			conv, err = mp4.New(cfg)
		}
		if errors.As(err, &missing) {
			log.Warn("video conversion is off: retained recordings stay pending until it is set up; looking again every "+
				o.toolsRecheck.String(), "missing", missing.Tool, "fix", missing.Hint)
			t := time.NewTicker(o.toolsRecheck)
			defer t.Stop()
			for errors.As(err, &missing) {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				case <-recheck: // the replayer was just installed
					recheck = nil
				}
				conv, err = mp4.New(cfg)
			}
		}
		if err != nil {
			log.Error("video conversion is off", "err", err)
			return
		}
		defer func() { _ = conv.Close() }() // stops the warm browsers; it returns nil
		// The worker takes as many jobs at once as the converter runs.
		w, err := retain.NewWorker(retain.WorkerConfig{
			Service: svc, Converter: conv, Videos: videos, Concurrency: o.conversions, Logger: log, Observe: observe,
		})
		if err != nil {
			log.Error("video conversion is off", "err", err)
			return
		}
		log.Info("video conversion is on", "parallel", o.conversions)
		if err := w.Run(ctx); err != nil {
			log.Error("video conversion stopped", "err", err)
		}
	}()
	return done
}

// installing reports whether the recorder's install is under way: its
// channel is open. A nil channel is no install.
func installing(done <-chan struct{}) bool {
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// workerKinds are the kinds of the jobs of the conversion worker
// (startWorker, retain.NewWorker): conversions, and their attestations.
var workerKinds = []string{consent.JobConvert, consent.JobAttest}

// newJobs builds the runner of the service's other jobs, which startJobs
// runs: webhook deliveries (D44), the purge of expired data every
// -purge-interval (D43), the removal of the videos it leaves, the moves of
// finished recordings out of the database (D52) and each new
// certificate's insights (D50). It returns too the kinds of the jobs that
// queue, of this runner and of the conversion worker: those whose queue
// depth the metrics watch.
func newJobs(svc *consentkit.Service, videos retain.VideoStore, o *options,
	observe func(string, time.Duration, error), log *slog.Logger) (*jobs.Runner, []string, error) {
	purger, err := retain.NewPurger(retain.PurgeConfig{Service: svc, Videos: videos, Every: o.purgeInterval, Logger: log})
	if err != nil {
		return nil, nil, err
	}
	deliveries, err := webhook.Handler(webhook.Config{Service: svc, AllowPrivate: o.webhookAllowPrivate, Logger: log})
	if err != nil {
		return nil, nil, err
	}
	moves, err := retain.MoveHandlers(retain.MoveConfig{Service: svc, Logger: log})
	if err != nil {
		return nil, nil, err
	}
	handlers := append(purger.Handlers(), deliveries, insights.Handler(svc, insights.Limits{}))
	handlers = append(handlers, moves...)
	r, err := jobs.New(jobs.Config{Store: svc.Store(), Handlers: handlers, Now: svc.Now, Logger: log, Observe: observe})
	if err != nil {
		return nil, nil, err
	}
	return r, queueKinds(handlers), nil
}

// queueKinds are the kinds of the conversion worker's jobs and of
// handlers, but for the periodic ones (Every): each of those is one job
// that schedules itself again, not a queue.
func queueKinds(handlers []jobs.Handler) []string {
	kinds := slices.Clone(workerKinds)
	for _, h := range handlers {
		if h.Every == 0 {
			kinds = append(kinds, h.Kind)
		}
	}
	return kinds
}

// startJobs runs r, newJobs's runner, in-process until ctx ends. Its jobs
// start at once, while conversion (startWorker) may wait for its tools.
// The returned channel closes when they have stopped.
func startJobs(ctx context.Context, r *jobs.Runner, o *options, log *slog.Logger) <-chan struct{} {
	if o.webhookAllowPrivate {
		log.Warn("webhooks may be sent to loopback and private addresses (-webhook-allow-private)")
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := r.Run(ctx); err != nil {
			log.Error("jobs stopped", "err", err)
		}
	}()
	log.Info("purge, webhook delivery and insights are on", "purge_every", o.purgeInterval.String())
	return done
}

// videoStore is where converted videos are kept: the S3 bucket of
// -video-s3-bucket, else the directory of -video-dir (D45). The worker
// writes to it and the video route reads from it.
func videoStore(ctx context.Context, o *options, log *slog.Logger) (retain.VideoStore, error) {
	if o.s3.Bucket == "" {
		log.Info("videos are kept in a directory", "video_dir", o.videoDir)
		return retain.Dir{Root: o.videoDir}, nil
	}
	st, err := s3video.New(ctx, o.s3)
	if err != nil {
		return nil, fmt.Errorf("video store: %w", err)
	}
	log.Info("videos are kept in S3", "bucket", o.s3.Bucket, "object_lock", st.Locking())
	return st, nil
}

// recordingStore is where finished recordings are moved out of the
// database (D52): the bucket of -video-s3-bucket, under recordings/, else
// the directory of -recordings-dir.
func recordingStore(ctx context.Context, o *options, log *slog.Logger) (blob.Store, error) {
	if o.s3.Bucket == "" {
		log.Info("finished recordings are moved to a directory", "recordings_dir", o.recordingsDir)
		return blob.NewDir(o.recordingsDir)
	}
	client, err := s3video.NewClient(o.s3)
	if err != nil {
		return nil, fmt.Errorf("recordings store: %w", err)
	}
	st, err := s3blob.New(ctx, s3blob.Config{Client: client, Bucket: o.s3.Bucket})
	if err != nil {
		return nil, fmt.Errorf("recordings store: %w", err)
	}
	log.Info("finished recordings are moved to S3", "bucket", o.s3.Bucket)
	warnDirectoriesLeft(o, log)
	return st, nil
}

// warnDirectoriesLeft warns, with S3 on, when the directories that an
// earlier run without it wrote to hold recordings or videos: the database
// of that run names them there, and the S3 stores cannot read them, so its
// verifications of those certificates and its video routes would fail.
func warnDirectoriesLeft(o *options, log *slog.Logger) {
	for _, dir := range []string{filepath.Join(o.recordingsDir, "recordings"), o.videoDir} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue // none: nothing was written there
		}
		for _, e := range entries {
			if !strings.HasPrefix(e.Name(), ".") {
				log.Warn("with S3 on, what an earlier run kept in this directory cannot be read: a database that names it answers 500 for it; "+
					"use S3 with a new database, or run this one without -video-s3-bucket (docs/operating.md)", "dir", dir)
				break
			}
		}
	}
}
