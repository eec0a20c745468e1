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
	// ReplaceIn replaces old by new in a text or JSON column of the
	// certificate: records (its consents), visibility, client_ip,
	// user_agent, origin or key_id.
	ReplaceIn(t testing.TB, certificateID, column, old, new string)
	// Shift moves a time of the certificate, created_at, revoked_before or
	// opt_in_at (its first consent's), by one second.
	Shift(t testing.TB, certificateID, column string)
	// Flip changes a digest of the certificate: email_digest,
	// mobile_digest or recording_sha256.
	Flip(t testing.TB, certificateID, column string)
	// SetVersion sets the version of the encoding the certificate's
	// signature is said to cover.
	SetVersion(t testing.TB, certificateID string, version int)
	// ReplaceInRecording replaces old by new in the session's first chunk
	// of events.
	ReplaceInRecording(t testing.TB, sessionID, old, new string)
}

// TestIntegrityTamper checks D41 on every store: a certificate signed at
// issue verifies while untouched; once any of its evidence — consent text,
// a consent's visibility, hidden text, opt-in method or opt-in time, the
// certificate's visibility, page URL, client address, user agent, times,
// revoked_before, email, mobile and recording digests, key id, the
// signature's version — or a byte of its session's recording is changed in
// the store's tables, every verification refuses it with 409 "certificate
// integrity check failed" and charges nothing.
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
		{"consent text", func(t testing.TB, tm tamperer) { tm.ReplaceIn(t, "cert-1", "records", "contacted", "called") }},
		{"consent visibility", func(t testing.TB, tm tamperer) {
			tm.ReplaceIn(t, "cert-1", "records", `"contrast_ratio":21`, `"contrast_ratio":4.5`)
		}},
		{"hidden text", func(t testing.TB, tm tamperer) {
			tm.ReplaceIn(t, "cert-1", "records", "and 500 partners", "and 5 partners")
		}},
		{"opt-in method", func(t testing.TB, tm tamperer) { tm.ReplaceIn(t, "cert-1", "records", `"scripted"`, `"manual"`) }},
		{"certificate visibility", func(t testing.TB, tm tamperer) {
			tm.ReplaceIn(t, "cert-1", "visibility", `"font_size_px":16`, `"font_size_px":24`)
		}},
		{"client address", func(t testing.TB, tm tamperer) { tm.ReplaceIn(t, "cert-1", "client_ip", "203.0.113.7", "203.0.113.8") }},
		{"user agent", func(t testing.TB, tm tamperer) { tm.ReplaceIn(t, "cert-1", "user_agent", "Firefox", "Chrome") }},
		{"time", func(t testing.TB, tm tamperer) { tm.Shift(t, "cert-1", "created_at") }},
		{"opt-in time", func(t testing.TB, tm tamperer) { tm.Shift(t, "cert-1", "opt_in_at") }},
		{"page URL", func(t testing.TB, tm tamperer) {
			tm.ReplaceIn(t, "cert-1", "origin", "acme.example", "acme.example.net")
		}},
		{"email digest", func(t testing.TB, tm tamperer) { tm.Flip(t, "cert-1", "email_digest") }},
		{"mobile digest", func(t testing.TB, tm tamperer) { tm.Flip(t, "cert-1", "mobile_digest") }},
		{"recording digest", func(t testing.TB, tm tamperer) { tm.Flip(t, "cert-1", "recording_sha256") }},
		{"key id", func(t testing.TB, tm tamperer) { tm.ReplaceIn(t, "cert-1", "key_id", "k1", "k2") }},
		{"revoked before", func(t testing.TB, tm tamperer) { tm.Shift(t, "cert-1", "revoked_before") }},
		{"signature version", func(t testing.TB, tm tamperer) { tm.SetVersion(t, "cert-1", 1) }},
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
			// A consumer who opted out before consents again: revoked_before.
			must(svc.IssueCertificate(ctx, consentkit.CertificateParams{ID: "cert-0", CompanyID: "acme", PropertyID: "web",
				SessionID: "s1", Email: "jane@example.com", Records: []consent.Record{{Text: text}}}))
			err = svc.Store().Update(ctx, func(tx consent.Tx) error { return tx.RevokeCertificate(ctx, "cert-0", svc.Now()) })
			must(nil, err)
			cert, err := svc.IssueCertificate(ctx, consentkit.CertificateParams{ID: "cert-1", CompanyID: "acme", PropertyID: "web",
				SessionID: "s1", Origin: "https://acme.example/", Email: "jane@example.com", Mobile: "+1 555 0100",
				Records: []consent.Record{{Text: text + " and 500 partners", Types: []string{"tcpa"}, OptInMethod: consent.OptInScripted,
					Visibility: &consent.Visibility{InViewport: true, FontSizePx: 12, ContrastRatio: 21, HiddenText: []string{"and 500 partners"}}}},
				ClientIP: "203.0.113.7", UserAgent: "Mozilla/5.0 Firefox/140.0",
				Visibility:      &consent.Visibility{InViewport: true, Visible: true, FontSizePx: 16, ContrastRatio: 18.88},
				RecordingSHA256: sha256.Sum256(joined)})
			must(cert, err)
			if cert.RevokedBefore.IsZero() || cert.SignatureVersion != 2 {
				t.Fatalf("issued after an opt-out: revoked_before %v, signature version %d", cert.RevokedBefore, cert.SignatureVersion)
			}
			tc.tamper(t, tm)
			v := verify.New(svc)
			_, matchErr := v.Match(ctx, "acme", verify.MatchRequest{CertificateID: "cert-1", CompanyID: "acme", Consent: text + " and 500 partners"})
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

func (m *memTamperer) ReplaceIn(t testing.TB, id, column, old, new string) {
	replaceJSON := func(v any) {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(bytes.Replace(b, []byte(old), []byte(new), 1), v); err != nil {
			t.Fatal(err)
		}
	}
	m.cert = append(m.cert, func(c *consent.Certificate) {
		if c.ID != id {
			return
		}
		switch column {
		case "records":
			replaceJSON(&c.Records)
		case "visibility":
			replaceJSON(&c.Visibility)
		case "client_ip":
			c.ClientIP = strings.Replace(c.ClientIP, old, new, 1)
		case "user_agent":
			c.UserAgent = strings.Replace(c.UserAgent, old, new, 1)
		case "origin":
			c.Origin = strings.Replace(c.Origin, old, new, 1)
		case "key_id":
			c.KeyID = strings.Replace(c.KeyID, old, new, 1)
		default:
			t.Fatalf("tamper: no column %s", column)
		}
	})
}

func (m *memTamperer) Shift(t testing.TB, id, column string) {
	m.cert = append(m.cert, func(c *consent.Certificate) {
		if c.ID != id {
			return
		}
		switch column {
		case "created_at":
			c.CreatedAt = c.CreatedAt.Add(time.Second)
		case "revoked_before":
			c.RevokedBefore = c.RevokedBefore.Add(time.Second)
		case "opt_in_at":
			c.Records[0].OptInAt = c.Records[0].OptInAt.Add(time.Second)
		default:
			t.Fatalf("tamper: no time %s", column)
		}
	})
}

func (m *memTamperer) Flip(t testing.TB, id, column string) {
	m.cert = append(m.cert, func(c *consent.Certificate) {
		if c.ID != id {
			return
		}
		switch column {
		case "email_digest":
			c.EmailDigest[0] ^= 1
		case "mobile_digest":
			c.MobileDigest[0] ^= 1
		case "recording_sha256":
			c.RecordingSHA256[0] ^= 1
		default:
			t.Fatalf("tamper: no digest %s", column)
		}
	})
}

func (m *memTamperer) SetVersion(_ testing.TB, id string, version int) {
	m.cert = append(m.cert, func(c *consent.Certificate) {
		if c.ID == id {
			c.SignatureVersion = version
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

func (t memTx) EachEventChunk(ctx context.Context, sessionID string, fn func([]byte) error) error {
	chunks, err := t.Events(ctx, sessionID)
	if err != nil {
		return err
	}
	for _, c := range chunks {
		if err := fn(c); err != nil {
			return err
		}
	}
	return nil
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

func (m sqliteTamperer) ReplaceIn(t testing.TB, id, column, old, new string) {
	m.exec1(t, `UPDATE certificates SET `+column+` = CAST(replace(CAST(`+column+` AS TEXT), ?, ?) AS `+
		map[bool]string{true: "BLOB", false: "TEXT"}[column == "records"]+`) WHERE id = ? AND instr(CAST(`+column+` AS TEXT), ?) > 0`,
		old, new, id, old)
}

func (m sqliteTamperer) Shift(t testing.TB, id, column string) {
	if column == "opt_in_at" {
		m.exec1(t, `UPDATE certificates SET records = CAST(json_set(CAST(records AS TEXT), '$[0].opt_in_at_us',
			json_extract(CAST(records AS TEXT), '$[0].opt_in_at_us') + 1000000) AS BLOB) WHERE id = ?`, id)
		return
	}
	m.exec1(t, `UPDATE certificates SET `+column+` = `+column+` + 1000000 WHERE id = ?`, id)
}

// Flip sets the first byte of the digest to another value.
func (m sqliteTamperer) Flip(t testing.TB, id, column string) {
	m.exec1(t, `UPDATE certificates SET `+column+` = CAST(iif(substr(`+column+`, 1, 1) = x'00', x'01', x'00') || substr(`+column+`, 2) AS BLOB)
		WHERE id = ? AND length(`+column+`) = 32`, id)
}

func (m sqliteTamperer) SetVersion(t testing.TB, id string, version int) {
	m.exec1(t, `UPDATE certificates SET signature_version = ? WHERE id = ?`, version, id)
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

// ReplaceIn edits jsonb as text, which PostgreSQL writes with a space
// after each colon.
func (m pgTamperer) ReplaceIn(t testing.TB, id, column, old, new string) {
	cast := ""
	if column == "records" {
		cast = "::jsonb"
		old, new = strings.ReplaceAll(old, `":`, `": `), strings.ReplaceAll(new, `":`, `": `)
	}
	m.exec1(t, `UPDATE certificates SET `+column+` = replace(`+column+`::text, $1, $2)`+cast+
		` WHERE id = $3 AND strpos(`+column+`::text, $1) > 0`, old, new, id)
}

func (m pgTamperer) Shift(t testing.TB, id, column string) {
	if column == "opt_in_at" {
		m.exec1(t, `UPDATE certificates SET records = jsonb_set(records, '{0,opt_in_at_us}',
			to_jsonb((records->0->>'opt_in_at_us')::bigint + 1000000)) WHERE id = $1`, id)
		return
	}
	m.exec1(t, `UPDATE certificates SET `+column+` = `+column+` + interval '1 second' WHERE id = $1`, id)
}

// Flip sets the first byte of the digest to another value.
func (m pgTamperer) Flip(t testing.TB, id, column string) {
	m.exec1(t, `UPDATE certificates SET `+column+` = set_byte(`+column+`, 0, (get_byte(`+column+`, 0) + 1) % 256)
		WHERE id = $1 AND length(`+column+`) = 32`, id)
}

func (m pgTamperer) SetVersion(t testing.TB, id string, version int) {
	m.exec1(t, `UPDATE certificates SET signature_version = $1 WHERE id = $2`, version, id)
}

func (m pgTamperer) ReplaceInRecording(t testing.TB, sessionID, old, new string) {
	m.exec1(t, `UPDATE session_events SET data = convert_to(replace(convert_from(data, 'UTF8'), $1, $2), 'UTF8')
		WHERE session_id = $3 AND seq = 0`, old, new, sessionID)
}
