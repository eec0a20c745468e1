package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

// TestShortOperatorSecretNamesTheVariable: a CONSENTKIT_OPERATOR_SECRET
// shorter than 32 bytes stops the server (exit 1), and the error says
// which setting to fix (the environment variable the operator set), not
// only a Go field of httpadapter.Config that the operator never wrote.
func TestShortOperatorSecretNamesTheVariable(t *testing.T) {
	t.Setenv(OperatorSecretEnv, "too-short")
	t.Chdir(t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stderr strings.Builder
	code := run(ctx, []string{"-addr", "127.0.0.1:0", "-store", "memory", "-install-recorder=false"}, io.Discard, &stderr)
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), OperatorSecretEnv) {
		t.Errorf("the error does not name %s, the setting to fix:\n%s", OperatorSecretEnv, stderr.String())
	}
}
