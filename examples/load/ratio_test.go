package main

import (
	"bytes"
	"strings"
	"testing"
)

// The capture line ("server cpu per N-byte chunk ÷ trivial request = …
// (target ≤ 6×)") is the figure BENCHMARKS.md and issue 36 judge: it must
// come from chunks the server accepted. A run in which every chunk is
// refused (an empty events array from a -chunk-bytes the flag check
// accepts; a chunk over the service's 1 MiB) either fails or prints no
// ratio; it must not print one computed over the refusals and the
// client's own failed reads.
func TestCaptureRatioOnlyFromAcceptedChunks(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server process")
	}
	for _, size := range []string{"64", "1100000"} {
		t.Run(size, func(t *testing.T) {
			var out bytes.Buffer
			err := run(t.Context(), []string{"-store", "memory", "-scenario", "capture", "-clients", "2", "-duration", "200ms",
				"-certs", "10", "-retain-sessions", "0", "-chunk-bytes", size}, &out)
			if err != nil {
				return // refused up front: fine
			}
			report := out.String()
			if strings.Contains(report, "failed") && strings.Contains(report, "÷ trivial request =") {
				t.Errorf("-chunk-bytes %s: every chunk failed, yet a per-chunk ratio was reported:\n%s", size, report)
			}
		})
	}
}
