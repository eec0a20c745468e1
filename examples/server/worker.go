package main

import (
	"context"
	"log/slog"

	"github.com/consentkit/consentkit/consent"
)

// startWorker runs the conversion worker until ctx ends; the returned
// channel closes when it has stopped.
func startWorker(ctx context.Context, st consent.Store, o *options, log *slog.Logger) <-chan struct{} {
	done := make(chan struct{})
	close(done)
	log.Warn("video conversion is not available in this build: retained recordings stay pending", "video_dir", o.videoDir)
	return done
}
