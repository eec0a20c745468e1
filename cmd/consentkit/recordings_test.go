package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/blob"
	"github.com/consentkit/consentkit/consent"
)

// recordings move moves the finished recordings of a database into the
// directory, once; the Service then reads them from there (D52).
func TestRecordingsMove(t *testing.T) {
	ctx := context.Background()
	b := directBackend(t, "sqlite")
	svc := b.svc
	if _, err := svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.AddProperty(ctx, consentkit.PropertyParams{ID: "web", CompanyID: "acme", Name: "Form"}); err != nil {
		t.Fatal(err)
	}
	chunk := json.RawMessage(`[{"type":4,"data":{"href":"https://acme.example/"},"timestamp":1}]`)
	for _, id := range []string{"old", "active"} {
		if _, err := svc.StartSession(ctx, consentkit.SessionParams{ID: id, CompanyID: "acme", PropertyID: "web"}); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.AppendEvents(ctx, id, chunk); err != nil {
			t.Fatal(err)
		}
		if id == "old" {
			b.clock.t = b.clock.t.Add(consentkit.DefaultRecordingIdle)
		}
	}
	dir := t.TempDir()
	if code, _, errs := b.run(t, "recordings", "move"); code != 2 || !strings.Contains(errs, "-dir or -s3-bucket") {
		t.Errorf("without a store: exit %d, %q; want a usage error", code, errs)
	}
	if out := b.ok(t, "recordings", "move", "-dir", dir); !strings.Contains(out, "1 recordings moved") {
		t.Errorf("move: %q", out)
	}
	if out := b.ok(t, "recordings", "move", "-dir", dir); !strings.Contains(out, "0 recordings moved") {
		t.Errorf("move again: %q", out)
	}
	blobs, err := blob.NewDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	reader, err := consentkit.NewService(b.store, consentkit.Config{Recordings: blobs})
	if err != nil {
		t.Fatal(err)
	}
	var ses *consent.Session
	if err := reader.Store().View(ctx, func(tx consent.Tx) error {
		ses, err = tx.Session(ctx, "old")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	rec, err := reader.Recording(ctx, "old")
	if !ses.Recording.Moved() || err != nil || !bytes.Equal(rec, chunk) {
		t.Errorf("old: moved %v, recording %s, %v", ses.Recording.Moved(), rec, err)
	}
}
