package verify_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/retain"
	"github.com/consentkit/consentkit/verify"
	"github.com/consentkit/consentkit/wallet"
)

const purgedText = "I agree to be contacted by Acme."

// hookStore runs hook once, from inside a View, just before the first
// EachEventChunk statement: as another instance's purge committing then.
type hookStore struct {
	consent.Store
	once sync.Once
	hook func()
	arm  bool
}

func (s *hookStore) View(ctx context.Context, fn func(consent.Tx) error) error {
	return s.Store.View(ctx, func(tx consent.Tx) error { return fn(hookTx{tx, s}) })
}

type hookTx struct {
	consent.Tx
	s *hookStore
}

func (t hookTx) EachEventChunk(ctx context.Context, id string, fn func([]byte) error) error {
	if t.s.arm {
		t.s.once.Do(t.s.hook)
	}
	return t.Tx.EachEventChunk(ctx, id, fn)
}

// On PostgreSQL a View reads committed rows statement by statement. A
// verification that reads the certificate's session (not yet purged) and
// then its chunks, while another instance's purge of that session commits
// in between, hashes an emptied recording: it must not refuse the sound
// certificate as tampered (409), since a purged session's recording is
// gone by design and is not checked (RecordingOf).
func TestVerifyDuringOtherInstancePurgeIsNoTamper(t *testing.T) {
	inner := teststore.Postgres(t)
	st := &hookStore{Store: inner}
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	svc, err := consentkit.NewService(st, consentkit.Config{Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme"}))
	must(svc.AddProperty(ctx, consentkit.PropertyParams{ID: "web", CompanyID: "acme", Name: "Form"}))
	must(svc.TopUp(ctx, "acme", 100*wallet.Dollar, ""))
	must(svc.StartSession(ctx, consentkit.SessionParams{ID: "s1", CompanyID: "acme", PropertyID: "web"}))
	must(svc.AppendEvents(ctx, "s1", json.RawMessage(`[{"type":4,"data":{"session":"s1"}}]`)))
	now = now.Add(24 * time.Hour)
	rec, err := svc.Recording(ctx, "s1")
	must(rec, err)
	must(svc.IssueCertificate(ctx, consentkit.CertificateParams{ID: "c1", CompanyID: "acme", PropertyID: "web", SessionID: "s1",
		Origin: "https://acme.example/quote", Records: []consent.Record{{Text: purgedText}},
		RecordingSHA256: sha256.Sum256(rec)}))
	// Another instance's purger, on its own service over the same database.
	other, err := consentkit.NewService(inner, consentkit.Config{Now: clock})
	must(other, err)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	p, err := retain.NewPurger(retain.PurgeConfig{Service: other, Videos: retain.Dir{Root: t.TempDir()}, Pause: -1, Logger: quiet})
	must(p, err)
	now = now.Add(89*24*time.Hour + time.Minute) // the session's window has ended, the certificate's has not
	st.hook = func() {
		n, err := p.Purge(ctx)
		if err != nil || n.Sessions != 1 {
			t.Errorf("the other instance's purge = %+v, %v", n, err)
		}
	}
	st.arm = true
	_, err = verify.New(svc).Match(ctx, "acme", verify.MatchRequest{CertificateID: "c1", CompanyID: "acme", Consent: purgedText})
	if err != nil {
		t.Errorf("Match of a sound certificate while its session is purged: %v; want a match (the recording is gone by design)", err)
	}
}
