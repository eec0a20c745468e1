package main

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/consentkit/consentkit/retain/mp4"
)

// logBuffer is a log's output that a test reads while the log writes.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// While the recorder's install is under way, a missing rrweb is not
// reported: the warning would tell to run the command that is running. It
// is reported once the install has ended without putting rrweb in place.
func TestWorkerWaitsForTheInstall(t *testing.T) {
	o, err := parseFlags([]string{"-replayer", t.TempDir(), "-tools-recheck", "1h"}, &logBuffer{})
	if err != nil {
		t.Fatal(err)
	}
	var missing *mp4.MissingError
	if _, err := mp4.New(mp4.Config{Chromium: o.chromium, FFmpeg: o.ffmpeg, Replayer: o.replayer}); !errors.As(err, &missing) || missing.Tool != "rrweb" {
		t.Skipf("needs Chromium and ffmpeg in place, so that rrweb is what is missing: %v", err)
	}
	var out logBuffer
	ctx, cancel := context.WithCancel(context.Background())
	install := make(chan struct{})
	done := startWorker(ctx, nil, nil, o, install, func(string, time.Duration, error) {}, slog.New(slog.NewTextHandler(&out, nil)))
	defer func() { cancel(); <-done }()
	time.Sleep(200 * time.Millisecond)
	if strings.Contains(out.String(), "video conversion is off") {
		t.Fatalf("warned during the install:\n%s", out.String())
	}
	close(install)
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(out.String(), "missing=rrweb"); {
		if time.Now().After(deadline) {
			t.Fatalf("no warning once the install ended without rrweb:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
