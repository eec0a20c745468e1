package main

import (
	"context"
	"log/slog"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/jobs"
	"github.com/consentkit/consentkit/webhook"
)

// startWebhooks delivers webhooks (D44) until ctx ends, in a job runner of
// its own beside the conversion worker's: deliveries start at once, while
// conversion may wait for its tools. The returned channel closes when it
// has stopped.
func startWebhooks(ctx context.Context, svc *consent.Service, o *options, log *slog.Logger) <-chan struct{} {
	done := make(chan struct{})
	h, err := webhook.Handler(webhook.Config{Service: svc, AllowPrivate: o.webhookAllowPrivate, Logger: log})
	var r *jobs.Runner
	if err == nil {
		r, err = jobs.New(jobs.Config{Store: svc.Store(), Handlers: []jobs.Handler{h}, Logger: log})
	}
	if err != nil {
		log.Error("webhook delivery is off", "err", err)
		close(done)
		return done
	}
	if o.webhookAllowPrivate {
		log.Warn("webhooks may be sent to loopback and private addresses (-webhook-allow-private)")
	}
	go func() {
		defer close(done)
		r.Run(ctx)
	}()
	return done
}
