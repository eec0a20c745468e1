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
	"github.com/consentkit/consentkit/verify"
)

// A certificate issued some days after its session started outlives the
// session's default window (each counts from its own creation). Once the
// purge has emptied the session, the certificate still verifies, and
// /verify/certificate retains it, charged as usual, while the session
// stays expired (its recording is gone); the next purges keep it. The
// session itself still cannot be retained (409), nor the certificate twice.
func TestRetainLiveCertificatesOfExpiredSession(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(tb testing.TB) consent.Store) {
		st := open(t)
		e := setup(t, st, 0)
		must := func(_ any, err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		must(e.svc.StartSession(ctx, consentkit.SessionParams{ID: "late", CompanyID: "acme", PropertyID: "web"}))
		must(e.svc.AppendEvents(ctx, "late", json.RawMessage(`[{"type":4,"data":{"session":"late"}}]`)))
		e.clock.Add(10 * 24 * time.Hour)
		must(e.svc.IssueCertificate(ctx, consentkit.CertificateParams{ID: "c-late", CompanyID: "acme", PropertyID: "web", SessionID: "late",
			Origin: "https://acme.example/quote", Records: []consent.Record{{Text: consentText}}}))
		quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
		p, err := retain.NewPurger(retain.PurgeConfig{Service: e.svc, Videos: retain.Dir{Root: e.videos}, Pause: -1, Logger: quiet})
		must(p, err)
		e.clock.Add(81 * 24 * time.Hour) // day 91: the session's window ended, the certificate's runs to day 100
		if n, err := p.Purge(ctx); err != nil || n.Sessions != 1 || n.Certificates != 0 {
			t.Fatalf("Purge on day 91 = %+v, %v; want the session purged, not its certificate", n, err)
		}
		match := func() error {
			_, err := verify.New(e.svc).Match(ctx, "acme", verify.MatchRequest{CertificateID: "c-late", CompanyID: "acme", Consent: consentText})
			return err
		}
		must(nil, match())
		for name, retainSession := range map[string]func() (*retain.Retention, error){
			"Retain":        func() (*retain.Retention, error) { return e.retain.Retain(ctx, "acme", "acme", "late") },
			"RetainSession": func() (*retain.Retention, error) { return e.retain.RetainSession(ctx, "acme", "acme", "late") },
		} {
			if _, err := retainSession(); consent.ErrorCode(err) != consent.Conflict {
				t.Errorf("%s of a purged session: %v; want a conflict", name, err)
			}
		}
		before, err := e.svc.Balance(ctx, "acme")
		must(before, err)
		out, err := e.retain.RetainCertificates(ctx, "acme", "acme", "late")
		if err != nil {
			t.Fatalf("RetainCertificates of a live certificate whose session was purged: %v; want it retained", err)
		}
		until := e.svc.RetainUntil(e.clock.Now())
		price := e.svc.Prices().CertificateRetention
		if out.RetentionStatus != consent.RetentionExpired || !out.RetainedUntil.Equal(until) || out.Charged != price ||
			out.Balance != before-price || len(out.CertificateIDs) != 1 || out.CertificateIDs[0] != "c-late" {
			t.Errorf("RetainCertificates = %+v; want the session expired, c-late retained until %v for %v", out, until, price)
		}
		if _, err := e.retain.RetainCertificates(ctx, "acme", "acme", "late"); consent.ErrorCode(err) != consent.Conflict {
			t.Errorf("RetainCertificates again: %v; want a conflict", err)
		}
		must(nil, st.View(ctx, func(tx consent.Tx) error {
			ses, err := tx.Session(ctx, "late")
			if err != nil {
				return err
			}
			if ses.RetentionStatus != consent.RetentionExpired {
				t.Errorf("the purged session is now %s; want it still expired", ses.RetentionStatus)
			}
			c, err := tx.Certificate(ctx, "c-late")
			if err != nil {
				return err
			}
			if c.RetentionStatus != consent.RetentionRetained || !c.ExpiresAt.Equal(until) {
				t.Errorf("c-late: %s until %v; want retained until %v", c.RetentionStatus, c.ExpiresAt, until)
			}
			return nil
		}))
		e.clock.Add(30 * 24 * time.Hour) // past the certificate's default window
		if n, err := p.Purge(ctx); err != nil || n.Certificates != 0 {
			t.Fatalf("Purge on day 121 = %+v, %v; want the retained certificate kept", n, err)
		}
		if err := match(); err != nil {
			t.Errorf("the retained certificate on day 121: %v; want it to verify", err)
		}
	})
}
