package mp4_test

import (
	"context"
	"errors"
	"log"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/retain"
	"github.com/consentkit/consentkit/retain/mp4"
	"github.com/consentkit/consentkit/store/memstore"
)

// A conversion worker with the real converter. It needs Chromium's
// headless shell, ffmpeg and rrweb's browser bundle, so this example is
// compiled but not run.
func ExampleNew() {
	ctx := context.Background()
	svc, err := consentkit.NewService(memstore.New(), consentkit.Config{})
	if err != nil {
		log.Fatal(err)
	}

	conv, err := mp4.New(mp4.Config{Parallel: 2})
	if me, ok := errors.AsType[*mp4.MissingError](err); ok {
		log.Fatalf("%s is missing: %s", me.Tool, me.Hint)
	} else if err != nil {
		log.Fatal(err)
	}
	defer conv.Close() // stops its warm browsers

	w, err := retain.NewWorker(retain.WorkerConfig{
		Service: svc, Converter: conv, Videos: retain.Dir{Root: "videos"}, Concurrency: 2,
	})
	if err != nil {
		log.Fatal(err)
	}
	go w.Run(ctx) // until ctx ends; run as many workers, on as many machines, as you like
}
