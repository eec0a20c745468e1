package sqlitestore

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/store/internal/sqlrow"
	"github.com/google/go-cmp/cmp"
)

// Upgrading a database that has conversion jobs (schema 0004) to the one
// job queue (0005) keeps every job, its attempts, lease and last error; a
// company of then does not attest its certificates (0016).
func TestMigrateKeepsConversionJobs(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	migrateBefore(t, s, "0005")
	t0 := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	// The company as schema 0004 holds it: later columns are not there yet.
	if _, err := s.write.ExecContext(ctx, `INSERT INTO companies (id, name, created_at) VALUES ('acme', 'Acme', ?);
		INSERT INTO wallets (company_id) VALUES ('acme')`, t0.UnixMicro()); err != nil {
		t.Fatal(err)
	}
	err := s.Update(ctx, func(tx consent.Tx) error {
		if err := tx.CreateProperty(ctx, &consent.Property{ID: "web", CompanyID: "acme", Name: "Web", CreatedAt: t0}); err != nil {
			return err
		}
		return tx.CreateSession(ctx, &consent.Session{ID: "s1", CompanyID: "acme", PropertyID: "web", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)})
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.write.ExecContext(ctx, `INSERT INTO conversion_jobs
		(session_id, attempts, run_after, lease_owner, lease_until, last_error, failed_at, created_at)
		VALUES ('s1', 2, ?, 'w1', ?, 'chromium crashed', NULL, ?)`,
		t0.Add(time.Minute).UnixMicro(), t0.Add(2*time.Minute).UnixMicro(), t0.UnixMicro()); err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	err = s.View(ctx, func(tx consent.Tx) error {
		j, err := tx.Job(ctx, consent.JobConvert, "s1")
		if err != nil {
			return err
		}
		if j.Attempts != 2 || !j.RunAfter.Equal(t0.Add(time.Minute)) || j.LeaseOwner != "w1" ||
			!j.LeaseUntil.Equal(t0.Add(2*time.Minute)) || j.LastError != "chromium crashed" || !j.CreatedAt.Equal(t0) {
			t.Errorf("migrated job = %+v", j)
		}
		c, err := tx.Company(ctx, "acme")
		if err != nil {
			return err
		}
		if c.Name != "Acme" || c.AttestCertificates || !c.CreatedAt.Equal(t0) {
			t.Errorf("migrated company = %+v", c)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Migration 0022 moves the in-flight chunks into a table with rowids: each
// chunk stays, byte for byte and in its order, and the table no longer
// keeps its rows in the primary key's tree.
func TestMigrateKeepsChunks(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	migrateBefore(t, s, "0022")
	t0 := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	chunks := [][]byte{[]byte(`[{"type":4}]`), bytes.Repeat([]byte(`[{"type":3,"data":{}},`), 2000), []byte(`[]`)}
	err := s.Update(ctx, func(tx consent.Tx) error {
		if err := tx.CreateCompany(ctx, &consent.Company{ID: "acme", Name: "Acme", CreatedAt: t0}); err != nil {
			return err
		}
		if err := tx.CreateProperty(ctx, &consent.Property{ID: "web", CompanyID: "acme", Name: "Web", CreatedAt: t0}); err != nil {
			return err
		}
		for _, id := range []string{"s1", "s2"} {
			if err := tx.CreateSession(ctx, &consent.Session{ID: id, CompanyID: "acme", PropertyID: "web", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}); err != nil {
				return err
			}
			for _, c := range chunks {
				if err := tx.AppendEvents(ctx, id, c, t0); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	err = s.View(ctx, func(tx consent.Tx) error {
		for _, id := range []string{"s1", "s2"} {
			got, err := tx.Events(ctx, id)
			if err != nil {
				return err
			}
			if diff := cmp.Diff(chunks, got); diff != "" {
				t.Errorf("%s's chunks after the migration (-want +got):\n%s", id, diff)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.write.QueryRowContext(ctx, `SELECT count(rowid) FROM session_events`).Scan(&n); err != nil || n != 2*len(chunks) {
		t.Errorf("session_events rowids: %d, %v; want %d rows with rowids", n, err, 2*len(chunks))
	}
	// A chunk of a deleted session goes with it, as before.
	if _, err := s.write.ExecContext(ctx, `DELETE FROM sessions WHERE id = 's2'`); err != nil {
		t.Fatal(err)
	}
	if err := s.write.QueryRowContext(ctx, `SELECT count(*) FROM session_events`).Scan(&n); err != nil || n != len(chunks) {
		t.Errorf("chunks after s2 was deleted: %d, %v; want %d", n, err, len(chunks))
	}
}

// Migration 0025 gives the jobs queued before 0021 their company, which
// 0021 gave to webhook jobs only: an attestation's and an insights job's
// is its certificate's, a conversion's its session's. Left empty, the
// company's share of the queue (CountCompanyJobs) did not count them.
func TestMigrateGivesJobsTheirCompany(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	migrateBefore(t, s, "0021")
	t0 := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	err := s.Update(ctx, func(tx consent.Tx) error {
		if err := tx.CreateCompany(ctx, &consent.Company{ID: "acme", Name: "Acme", CreatedAt: t0}); err != nil {
			return err
		}
		if err := tx.CreateProperty(ctx, &consent.Property{ID: "web", CompanyID: "acme", Name: "Web", CreatedAt: t0}); err != nil {
			return err
		}
		if err := tx.CreateSession(ctx, &consent.Session{ID: "s1", CompanyID: "acme", PropertyID: "web", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}); err != nil {
			return err
		}
		return tx.CreateCertificate(ctx, &consent.Certificate{ID: "c1", CompanyID: "acme", PropertyID: "web", SessionID: "s1",
			Records: []consent.Record{{Text: "I agree.", OptInAt: t0}}, EventsCombined: json.RawMessage(`{}`), CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)})
	})
	if err != nil {
		t.Fatal(err)
	}
	// The jobs as schema 0020 holds them: no company column yet.
	for _, j := range [][2]string{{consent.JobAttest, "c1"}, {consent.JobInsights, "c1"}, {consent.JobConvert, "s1"},
		{consent.JobAttest, "c-gone"}, {consent.JobLockRecording, "s1"}} {
		if _, err := s.write.ExecContext(ctx, `INSERT INTO jobs (kind, key, run_after, created_at) VALUES (?, ?, ?, ?)`,
			j[0], j[1], t0.UnixMicro(), t0.UnixMicro()); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	err = s.View(ctx, func(tx consent.Tx) error {
		for _, kind := range []string{consent.JobAttest, consent.JobInsights, consent.JobConvert} {
			if n, err := tx.CountCompanyJobs(ctx, kind, "acme"); err != nil || n != 1 {
				t.Errorf("acme's %s jobs after the migration: %d, %v; want 1", kind, n, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// A job whose certificate is gone, and a kind that works for no
	// company, keep none.
	rows, err := s.write.QueryContext(ctx, `SELECT kind || ' ' || key FROM jobs WHERE company_id = '' ORDER BY kind, key`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var none []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		none = append(none, k)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"attest c-gone", "recording.lock s1"}, none); diff != "" {
		t.Errorf("jobs of no company (-want +got):\n%s", diff)
	}
}

// Migration 0026 gives the webhook jobs queued before 0021 their lane and
// company again: the company of an endpoint created after the job (its id
// taken by another company once the job's endpoint was deleted) is not the
// job's, which keeps none and so is never delivered to that company.
func TestMigrateWebhookJobLanes(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	migrateBefore(t, s, "0021")
	t0 := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	endpoint := func(company, id string, at time.Time) error {
		return s.Update(ctx, func(tx consent.Tx) error {
			if err := tx.CreateCompany(ctx, &consent.Company{ID: company, Name: company, CreatedAt: at}); err != nil {
				return err
			}
			return tx.CreateWebhookEndpoint(ctx, &consent.WebhookEndpoint{ID: id, CompanyID: company, URL: "https://" + company + ".example/hooks",
				Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwWdPS0Ci+mjE=", CreatedAt: at})
		})
	}
	// acme's endpoint "ep:1" is older than its job; the job for "ep-1" was
	// queued before rival created an endpoint "ep-1".
	if err := endpoint("acme", "ep:1", t0); err != nil {
		t.Fatal(err)
	}
	// The jobs as schema 0020 holds them: no lane or company column yet.
	for _, j := range []struct {
		kind, key, endpoint, msg string
		at                       time.Time
	}{
		{consent.JobWebhook, "msg_1:ep:1", "ep:1", "msg_1", t0.Add(time.Minute)},
		{consent.JobWebhook, "msg_2:ep-1", "ep-1", "msg_2", t0},
		{consent.JobWebhook, "msg_3:ep-gone", "ep-gone", "msg_3", t0},
		{consent.JobAttest, "c:1", "", "", t0},
	} {
		payload := `{"endpoint_id":"` + j.endpoint + `","id":"` + j.msg + `","type":"consent.revoked","body":"{}"}`
		if _, err := s.write.ExecContext(ctx, `INSERT INTO jobs (kind, key, payload, run_after, created_at) VALUES (?, ?, ?, ?, ?)`,
			j.kind, j.key, []byte(payload), j.at.UnixMicro(), j.at.UnixMicro()); err != nil {
			t.Fatal(err)
		}
	}
	if err := endpoint("rival", "ep-1", t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	err := s.View(ctx, func(tx consent.Tx) error {
		for _, want := range []struct{ kind, key, lane, company string }{
			{consent.JobWebhook, "msg_1:ep:1", "ep:1", "acme"},
			{consent.JobWebhook, "msg_2:ep-1", "ep-1", ""},
			{consent.JobWebhook, "msg_3:ep-gone", "ep-gone", ""},
			{consent.JobAttest, "c:1", "", ""},
		} {
			j, err := tx.Job(ctx, want.kind, want.key)
			if err != nil {
				return err
			}
			if j.Lane != want.lane || j.CompanyID != want.company {
				t.Errorf("%s %s after the migration: lane %q, company %q; want %q, %q",
					want.kind, want.key, j.Lane, j.CompanyID, want.lane, want.company)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// migrateBefore applies, as Migrate does, the migrations whose versions
// sort before version: the schema a database of then has.
func migrateBefore(t *testing.T, s *Store, version string) {
	t.Helper()
	if _, err := s.write.ExecContext(context.Background(), `CREATE TABLE IF NOT EXISTS schema_migrations (
		version TEXT PRIMARY KEY, applied_at INTEGER NOT NULL) STRICT`); err != nil {
		t.Fatal(err)
	}
	versions, err := sqlrow.Migrations(migrations)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range versions {
		if v >= version {
			break
		}
		if err := s.migrate(context.Background(), v); err != nil {
			t.Fatalf("%s: %v", v, err)
		}
	}
}

// Pending names the migrations a database lacks, in order: all of them
// before Migrate, those from a version on for a database of then, none
// once migrated.
func TestPending(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	all, err := sqlrow.Migrations(migrations)
	if err != nil || len(all) < 25 || all[0] != "0001_init" {
		t.Fatalf("migrations: %v, %v", all, err)
	}
	got, err := s.Pending(ctx)
	if err != nil || !slices.Equal(got, all) {
		t.Fatalf("Pending before any migration: %v, %v; want all %d", got, err, len(all))
	}
	migrateBefore(t, s, "0021")
	got, err = s.Pending(ctx)
	if err != nil || len(got) == 0 || got[0] < "0021" || !slices.Equal(got, all[len(all)-len(got):]) {
		t.Fatalf("Pending of a database of 0020: %v, %v; want those from 0021 on", got, err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Pending(ctx); err != nil || len(got) != 0 {
		t.Errorf("Pending once migrated: %v, %v; want none", got, err)
	}
}
