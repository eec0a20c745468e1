package verify_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/signed"
	"github.com/consentkit/consentkit/verify"
	"github.com/consentkit/consentkit/wallet"
)

// tamperer changes a store's rows behind its back, as someone with access
// to the database could.
type tamperer interface {
	// ReplaceConsentText replaces old by new in the certificate's stored
	// consents.
	ReplaceConsentText(t testing.TB, certificateID, old, new string)
	// ShiftCreatedAt moves the certificate's creation time by one second.
	ShiftCreatedAt(t testing.TB, certificateID string)
	// ReplaceInRecording replaces old by new in the session's first chunk
	// of events.
	ReplaceInRecording(t testing.TB, sessionID, old, new string)
}

// TestIntegrityTamper checks D41 on every store: a certificate signed at
// issue verifies while untouched; once its consent text, its time or a
// byte of its session's recording is changed in the store's tables, every
// verification refuses it with 409 "certificate integrity check failed"
// and charges nothing.
func TestIntegrityTamper(t *testing.T) {
	for _, k := range []struct {
		name string
		open func(tb testing.TB) (consent.Store, tamperer)
	}{
		{"memory", openMemory},
		{"sqlite", openSQLite},
		{"postgres", func(tb testing.TB) (consent.Store, tamperer) {
			s := teststore.Postgres(tb)
			return s, pgTamperer{s.Pool()}
		}},
	} {
		t.Run(k.name, func(t *testing.T) { testIntegrityTamper(t, k.open) })
	}
}

func testIntegrityTamper(t *testing.T, open func(tb testing.TB) (consent.Store, tamperer)) {
	const text = "I agree to be contacted by Acme."
	recording := `[{"type":4,"data":{"href":"https://acme.example/"},"timestamp":1},{"type":3,"timestamp":2}]`
	for _, tc := range []struct {
		name   string
		tamper func(t testing.TB, tm tamperer)
	}{
		{"intact", func(testing.TB, tamperer) {}},
		{"consent text", func(t testing.TB, tm tamperer) { tm.ReplaceConsentText(t, "cert-1", "contacted", "called") }},
		{"time", func(t testing.TB, tm tamperer) { tm.ShiftCreatedAt(t, "cert-1") }},
		{"recording byte", func(t testing.TB, tm tamperer) { tm.ReplaceInRecording(t, "s1", `"type":4`, `"type":5`) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, tm := open(t)
			key, err := signed.NewSigningKey("k1")
			if err != nil {
				t.Fatal(err)
			}
			svc, err := consentkit.NewService(st, consentkit.Config{SigningKeys: []signed.SigningKey{key}})
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
			must(svc.TopUp(ctx, "acme", wallet.Dollar, ""))
			must(svc.StartSession(ctx, consentkit.SessionParams{ID: "s1", CompanyID: "acme", PropertyID: "web"}))
			must(svc.AppendEvents(ctx, "s1", json.RawMessage(recording)))
			joined, err := svc.Recording(ctx, "s1")
			must(joined, err)
			must(svc.IssueCertificate(ctx, consentkit.CertificateParams{ID: "cert-1", CompanyID: "acme", PropertyID: "web",
				SessionID: "s1", Origin: "https://acme.example/", Records: []consent.Record{{Text: text, Types: []string{"tcpa"}}},
				RecordingSHA256: sha256.Sum256(joined)}))
			tc.tamper(t, tm)
			v := verify.New(svc)
			_, matchErr := v.Match(ctx, "acme", verify.MatchRequest{CertificateID: "cert-1", CompanyID: "acme", Consent: text})
			_, infoErr := v.CertificateInfo(ctx, "acme", verify.InfoRequest{CertificateID: "cert-1", CompanyID: "acme", PropertyID: "web"})
			bal, err := svc.Balance(ctx, "acme")
			must(bal, err)
			if tc.name == "intact" {
				if matchErr != nil || infoErr != nil {
					t.Fatalf("untouched certificate: match %v, info %v", matchErr, infoErr)
				}
				return
			}
			for name, err := range map[string]error{"match": matchErr, "certificate-info": infoErr} {
				if !errors.Is(err, consent.ErrIntegrity) || consent.ErrorCode(err) != consent.Conflict {
					t.Errorf("%s after the %s changed: %v; want 409 certificate integrity check failed", name, tc.name, err)
				}
			}
			if bal != wallet.Dollar {
				t.Errorf("balance %s; want nothing charged for a refused certificate", bal)
			}
		})
	}
}

// openMemory returns a memory store behind a layer that stands for its
// memory: the tamperer's edits are applied to every certificate and event
// chunk read through it, as if they had been made to the stored values.
func openMemory(tb testing.TB) (consent.Store, tamperer) {
	m := &memTamperer{Store: teststore.Memory(tb)}
	return m, m
}

type memTamperer struct {
	consent.Store
	cert   []func(c *consent.Certificate)
	chunks []func(sessionID string, chunks [][]byte)
}

func (m *memTamperer) Update(ctx context.Context, fn func(consent.Tx) error) error {
	return m.Store.Update(ctx, func(tx consent.Tx) error { return fn(memTx{tx, m}) })
}

func (m *memTamperer) View(ctx context.Context, fn func(consent.Tx) error) error {
	return m.Store.View(ctx, func(tx consent.Tx) error { return fn(memTx{tx, m}) })
}

func (m *memTamperer) ReplaceConsentText(_ testing.TB, id, old, new string) {
	m.cert = append(m.cert, func(c *consent.Certificate) {
		if c.ID == id {
			c.Records[0].Text = strings.Replace(c.Records[0].Text, old, new, 1)
		}
	})
}

func (m *memTamperer) ShiftCreatedAt(_ testing.TB, id string) {
	m.cert = append(m.cert, func(c *consent.Certificate) {
		if c.ID == id {
			c.CreatedAt = c.CreatedAt.Add(time.Second)
		}
	})
}

func (m *memTamperer) ReplaceInRecording(_ testing.TB, sessionID, old, new string) {
	m.chunks = append(m.chunks, func(id string, chunks [][]byte) {
		if id == sessionID && len(chunks) > 0 {
			chunks[0] = bytes.Replace(chunks[0], []byte(old), []byte(new), 1)
		}
	})
}

// memTx is a transaction of memTamperer.
type memTx struct {
	consent.Tx
	m *memTamperer
}

func (t memTx) Certificate(ctx context.Context, id string) (*consent.Certificate, error) {
	c, err := t.Tx.Certificate(ctx, id)
	if err == nil {
		for _, edit := range t.m.cert {
			edit(c)
		}
	}
	return c, err
}

func (t memTx) Events(ctx context.Context, sessionID string) ([][]byte, error) {
	chunks, err := t.Tx.Events(ctx, sessionID)
	if err == nil {
		for _, edit := range t.m.chunks {
			edit(sessionID, chunks)
		}
	}
	return chunks, err
}

// openSQLite returns a migrated SQLite store and a tamperer that writes to
// its file on a connection of its own.
func openSQLite(tb testing.TB) (consent.Store, tamperer) {
	s, db := teststore.SQLiteWithDB(tb)
	return s, sqliteTamperer{db}
}

type sqliteTamperer struct{ db *sql.DB }

func (m sqliteTamperer) exec1(t testing.TB, query string, args ...any) {
	t.Helper()
	r, err := m.db.Exec(query, args...)
	if err != nil {
		t.Fatalf("tamper: %v", err)
	}
	if n, _ := r.RowsAffected(); n != 1 {
		t.Fatalf("tamper: %d rows changed, want 1", n)
	}
}

func (m sqliteTamperer) ReplaceConsentText(t testing.TB, id, old, new string) {
	m.exec1(t, `UPDATE certificates SET records = CAST(replace(CAST(records AS TEXT), ?, ?) AS BLOB) WHERE id = ?`, old, new, id)
}

func (m sqliteTamperer) ShiftCreatedAt(t testing.TB, id string) {
	m.exec1(t, `UPDATE certificates SET created_at = created_at + 1000000 WHERE id = ?`, id)
}

func (m sqliteTamperer) ReplaceInRecording(t testing.TB, sessionID, old, new string) {
	m.exec1(t, `UPDATE session_events SET data = CAST(replace(CAST(data AS TEXT), ?, ?) AS BLOB) WHERE session_id = ? AND seq = 0`,
		old, new, sessionID)
}

// pgTamperer writes to the certificate and event tables through the
// store's pool.
type pgTamperer struct{ pool *pgxpool.Pool }

func (m pgTamperer) exec1(t testing.TB, sql string, args ...any) {
	t.Helper()
	tag, err := m.pool.Exec(context.Background(), sql, args...)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("tamper: %d rows, %v", tag.RowsAffected(), err)
	}
}

func (m pgTamperer) ReplaceConsentText(t testing.TB, id, old, new string) {
	m.exec1(t, `UPDATE certificates SET records = replace(records::text, $1, $2)::jsonb WHERE id = $3`, old, new, id)
}

func (m pgTamperer) ShiftCreatedAt(t testing.TB, id string) {
	m.exec1(t, `UPDATE certificates SET created_at = created_at + interval '1 second' WHERE id = $1`, id)
}

func (m pgTamperer) ReplaceInRecording(t testing.TB, sessionID, old, new string) {
	m.exec1(t, `UPDATE session_events SET data = convert_to(replace(convert_from(data, 'UTF8'), $1, $2), 'UTF8')
		WHERE session_id = $3 AND seq = 0`, old, new, sessionID)
}
