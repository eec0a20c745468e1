package httpadapter_test

import (
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/retain"
)

// A session an anonymous caller starts is purged at its retention's end
// but its row is kept (retention_status expired): what D52 bounds. On
// SQLite a purged session started through the capture API, with a chunk
// of events, keeps at most 512 bytes of the database (about 300).
func TestPurgedSessionsKeep(t *testing.T) {
	st, db := teststore.SQLiteWithDB(t)
	var (
		mu  sync.Mutex
		now = time.Now()
	)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	svc, err := consentkit.NewService(st, consentkit.Config{Now: clock})
	must(t, err)
	_, err = svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme"})
	must(t, err)
	_, err = svc.AddProperty(ctx, consentkit.PropertyParams{ID: "acme-form", CompanyID: "acme", Name: "Quote form", AllowedOrigins: []string{formOrigin}})
	must(t, err)
	h, err := httpadapter.New(httpadapter.Config{Service: svc, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		CaptureStartsPerMinute: 100_000, CapturePropertyPerMinute: 100_000, CapturePerMinute: 100_000, CaptureBytesPerMinute: 1 << 30})
	must(t, err)
	e := &finishedEnv{svc: svc, db: db, h: h}
	start := func() {
		s := startSession(t, h)
		rec := call(h, "POST", "/capture/sessions/"+s.SessionID+"/events", formOrigin, s.UploadToken,
			fmt.Sprintf(`{"seq":0,"events":%s}`, rrwebChunk))
		if rec.Code != 200 {
			t.Fatalf("chunk: %d %s", rec.Code, rec.Body)
		}
	}
	purge := func() {
		p, err := retain.NewPurger(retain.PurgeConfig{Service: svc, Videos: retain.Dir{Root: t.TempDir()}, Pause: -1})
		must(t, err)
		for {
			n, err := p.Purge(ctx)
			must(t, err)
			if n.Sessions == 0 {
				return
			}
		}
	}
	start() // the first pays for the tables' first pages
	const n = 1000
	before := e.usedBytes(t)
	for range n {
		start()
	}
	started := e.usedBytes(t)
	mu.Lock()
	now = now.Add(consentkit.DefaultRetention + time.Hour)
	mu.Unlock()
	purge()
	perStarted, perPurged := (started-before)/n, (e.usedBytes(t)-before)/n
	t.Logf("a session started with a chunk of %d bytes: %d bytes of the database; purged, %d", len(rrwebChunk), perStarted, perPurged)
	if perPurged > 512 {
		t.Errorf("a purged session keeps %d bytes of the database; want at most 512", perPurged)
	}
}
