package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/jobs"
	"github.com/consentkit/consentkit/retain"
	"github.com/consentkit/consentkit/wallet"
)

// converter writes a fixed "video", or fails for good.
type converter struct{ fail bool }

type permanent struct{ error }

func (permanent) Permanent() bool { return true }

func (c converter) Convert(_ context.Context, _ json.RawMessage, dst string) (time.Duration, error) {
	if c.fail {
		return 0, permanent{errors.New("the recording cannot be converted")}
	}
	return 1500 * time.Millisecond, os.WriteFile(dst, []byte("not really an mp4"), 0o644)
}

// sent is a message's type and data.
type sent struct {
	Type string
	Data map[string]any
}

// TestEvents drives each event through the code that emits it and checks
// what the receiver gets.
func TestEvents(t *testing.T) {
	rc := newReceiver(t)
	e := newEnv(t, teststore.SQLite(t), envOpts{cfg: consentkit.Config{LowBalanceThreshold: 250_000 * wallet.Microdollar}})
	ep := e.endpoint(t, rc.URL, consent.EventTypes...)
	if _, err := e.svc.TopUp(ctx, "acme", 400_000*wallet.Microdollar, "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.StartSession(ctx, consentkit.SessionParams{ID: "s2", CompanyID: "acme", PropertyID: "web"}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"s1", "s2"} {
		if _, err := e.svc.AppendEvents(ctx, s, json.RawMessage(`[{"type":4,"timestamp":1}]`)); err != nil {
			t.Fatal(err)
		}
	}
	e.issue(t, "cert-1")
	e.drain(t)

	rs := retain.New(e.svc)
	// 0.40 - 0.10 = 0.30: no low balance yet.
	if _, err := rs.Retain(ctx, "acme", "acme", "s1"); err != nil {
		t.Fatal(err)
	}
	// 0.30 - 0.10 = 0.20: below 0.25.
	if _, err := rs.Retain(ctx, "acme", "acme", "s2"); err != nil {
		t.Fatal(err)
	}
	e.drain(t)

	conv := func(c converter) {
		h, err := retain.ConversionHandler(retain.WorkerConfig{Service: e.svc, Converter: c, Videos: retain.Dir{Root: t.TempDir()}, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		r, err := jobs.New(jobs.Config{Store: e.svc.Store(), Handlers: []jobs.Handler{h}, Now: e.clock.Now, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		if ran, err := r.RunOnce(ctx, consent.JobConvert); err != nil || !ran {
			t.Fatalf("conversion: %v, %v", ran, err)
		}
	}
	conv(converter{})           // s1
	conv(converter{fail: true}) // s2
	e.drain(t)

	var events []event
	for _, r := range rc.requests() {
		checkSignature(t, secret, r)
		events = append(events, decode(t, r.Body))
	}
	now := e.clock.Now().Format(time.RFC3339Nano)
	until := e.svc.RetainUntil(e.clock.Now()).Format(time.RFC3339Nano)
	want := []sent{
		{consent.EventCertificateIssued, map[string]any{"certificate_id": "cert-1", "company_id": "acme", "property_id": "web",
			"session_id": "s1", "created_timestamp": now}},
		{consent.EventSessionRetained, map[string]any{"session_id": "s1", "company_id": "acme", "retention_status": "retained",
			"retained_until": until, "certificate_ids": []any{}, "rrweb_to_video_status": "pending", "cost_charged": json.Number("0.1")}},
		{consent.EventWalletLowBalance, map[string]any{"company_id": "acme", "balance": json.Number("0.2"),
			"threshold": json.Number("0.25"), "reference": "s2"}},
		{consent.EventSessionRetained, map[string]any{"session_id": "s2", "company_id": "acme", "retention_status": "retained",
			"retained_until": until, "certificate_ids": []any{}, "rrweb_to_video_status": "pending", "cost_charged": json.Number("0.1")}},
		{consent.EventVideoConverted, map[string]any{"session_id": "s1", "company_id": "acme", "rrweb_to_video_status": "converted",
			"video": map[string]any{"bytes": json.Number("17"), "duration_ms": json.Number("1500"),
				"sha256": "5c4ed8a9f1f4c1b9fcd1b9a8c55a8b0d21bc1f7a59a1e8c1bd5a5aa0d09cbd44"}}},
		{consent.EventVideoFailed, map[string]any{"session_id": "s2", "company_id": "acme", "rrweb_to_video_status": "failed",
			"attempts": json.Number("1")}},
	}
	var got []sent
	for _, ev := range events {
		got = append(got, sent{ev.Type, ev.Data})
	}
	// Messages due at the same time go in no particular order.
	byTypeAndSession := func(a, b sent) int {
		return strings.Compare(a.Type+" "+fmt.Sprint(a.Data["session_id"]), b.Type+" "+fmt.Sprint(b.Data["session_id"]))
	}
	slices.SortFunc(got, byTypeAndSession)
	slices.SortFunc(want, byTypeAndSession)
	// The video's digest is whatever the video store computed.
	for i := range got {
		if v, ok := got[i].Data["video"].(map[string]any); ok && i < len(want) && want[i].Type == consent.EventVideoConverted {
			want[i].Data["video"].(map[string]any)["sha256"] = v["sha256"]
		}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
	if log := e.log(t, ep.ID); len(log) != len(want) {
		t.Errorf("%d log entries; want %d", len(log), len(want))
	}
}
