package main

import (
	"context"
	"errors"
	"log/slog"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/retain"
	"github.com/consentkit/consentkit/retain/mp4"
)

// startWorker runs the conversion worker in-process until ctx ends; the
// returned channel closes when it has stopped. When a tool of the converter
// is missing it says which and how to get it, and leaves jobs pending: a
// later start with the tool in place converts them.
func startWorker(ctx context.Context, svc *consent.Service, o *options, log *slog.Logger) <-chan struct{} {
	done := make(chan struct{})
	conv, err := mp4.New(mp4.Config{Chromium: o.chromium, FFmpeg: o.ffmpeg, Replayer: o.replayer, Logger: log})
	var missing *mp4.MissingError
	if errors.As(err, &missing) {
		log.Warn("video conversion is off: retained recordings stay pending until it is set up",
			"missing", missing.Tool, "fix", missing.Hint)
		close(done)
		return done
	}
	if err == nil {
		var w *retain.Worker
		w, err = retain.NewWorker(retain.WorkerConfig{
			Service: svc, Converter: conv, Videos: retain.Dir{Root: o.videoDir}, Logger: log,
		})
		if err == nil {
			log.Info("video conversion is on", "video_dir", o.videoDir)
			go func() {
				defer close(done)
				w.Run(ctx)
			}()
			return done
		}
	}
	log.Error("video conversion is off", "err", err)
	close(done)
	return done
}
