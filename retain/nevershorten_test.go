package retain_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/retain"
)

// A paid retention never makes an item expire earlier than it would have
// unretained. With a default window longer than the long-term period
// (both configurable), each route — single, batch, /verify/session and
// /verify/certificate — keeps the session, and its certificates, until
// the later of the two, so the purge never removes a retained recording
// before an unretained one of the same age.
func TestRetainNeverShortensExpiry(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(tb testing.TB) consent.Store) {
		const window = 400 * 24 * time.Hour
		e := setupWith(t, open(t), 0, consentkit.Config{DefaultRetention: window, LongTermRetention: 365 * 24 * time.Hour})
		st, svc, clk, start := e.store, e.svc, e.clock, e.clock.Now()
		must := func(_ any, err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		ids := []string{"plain", "session", "single", "batched", "certs"}
		for _, id := range ids {
			must(svc.StartSession(ctx, consentkit.SessionParams{ID: id, CompanyID: "acme", PropertyID: "web"}))
			must(svc.AppendEvents(ctx, id, json.RawMessage(`[{"type":4,"data":{"session":"`+id+`"}}]`)))
		}
		must(svc.IssueCertificate(ctx, consentkit.CertificateParams{ID: "c-certs", CompanyID: "acme", PropertyID: "web", SessionID: "certs",
			Origin: "https://acme.example/quote", Records: []consent.Record{{Text: consentText}}}))
		clk.Add(time.Hour) // retained an hour after they began
		r := retain.New(svc)
		kept := map[string]*retain.Retention{}
		var err2 error
		kept["session"], err2 = r.RetainSession(ctx, "acme", "acme", "session")
		must(nil, err2)
		kept["single"], err2 = r.Retain(ctx, "acme", "acme", "single")
		must(nil, err2)
		kept["certs"], err2 = r.RetainCertificates(ctx, "acme", "acme", "certs")
		must(nil, err2)
		b, err := r.RetainBatch(ctx, "acme", "acme", []string{"batched"})
		if err != nil || b.Retained != 1 {
			t.Fatalf("RetainBatch = %+v, %v", b, err)
		}
		want := start.Add(window) // the default window's end, not an hour + 365 days
		for id, out := range kept {
			if !out.RetainedUntil.Equal(want) {
				t.Errorf("%s: retained until %v, want %v (the later of the two)", id, out.RetainedUntil, want)
			}
		}
		quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
		p, err := retain.NewPurger(retain.PurgeConfig{Service: svc, Videos: retain.Dir{Root: t.TempDir()}, Logger: quiet, Pause: -1})
		must(p, err)
		clk.Add(366 * 24 * time.Hour) // within the default window of all
		if n, err := p.Purge(ctx); err != nil || n != (retain.Purged{}) {
			t.Fatalf("Purge on day 366 of a 400-day default window = %+v, %v; want nothing purged", n, err)
		}
		must(nil, st.View(ctx, func(tx consent.Tx) error {
			for _, id := range ids[1:] {
				ses, err := tx.Session(ctx, id)
				if err != nil {
					return err
				}
				if ses.RetentionStatus != consent.RetentionRetained || !ses.ExpiresAt.Equal(want) {
					t.Errorf("%s: %s until %v; want retained until %v (retaining never shortens)", id, ses.RetentionStatus, ses.ExpiresAt, want)
				}
			}
			c, err := tx.Certificate(ctx, "c-certs")
			if err != nil {
				return err
			}
			if c.RetentionStatus != consent.RetentionRetained || !c.ExpiresAt.Equal(want) {
				t.Errorf("c-certs: %s until %v; want retained until %v", c.RetentionStatus, c.ExpiresAt, want)
			}
			return nil
		}))
	})
}
