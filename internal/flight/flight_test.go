package flight

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestGroup(t *testing.T) {
	ctx := context.Background()
	var g Group
	leave, err := g.Enter(ctx, "k", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// Another key does not wait.
	other, err := g.Enter(ctx, "other", 0)
	if err != nil {
		t.Fatalf("another key: %v", err)
	}
	other()
	// The key is taken for as long as its holder does not leave.
	if _, err := g.Enter(ctx, "k", time.Millisecond); !errors.Is(err, ErrBusy) {
		t.Errorf("Enter while taken = %v, want ErrBusy", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := g.Enter(cctx, "k", time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("Enter with an ended context = %v, want its error", err)
	}
	// A waiting call enters when the holder leaves.
	entered := make(chan error)
	go func() {
		l, err := g.Enter(ctx, "k", time.Hour)
		if err == nil {
			l()
		}
		entered <- err
	}()
	leave()
	if err := <-entered; err != nil {
		t.Errorf("Enter after the holder left = %v", err)
	}
}
