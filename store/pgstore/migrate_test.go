package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/store/internal/sqlrow"
)

// Migration 0025 gives the jobs queued before 0021 their company, which
// 0021 gave to webhook jobs only: an attestation's and an insights job's
// is its certificate's, a conversion's its session's. Left empty, the
// company's share of the queue (CountCompanyJobs) did not count them.
func TestMigrateGivesJobsTheirCompany(t *testing.T) {
	ctx := context.Background()
	s := openSchema(t)
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
		if _, err := s.pool.Exec(ctx, `INSERT INTO jobs (kind, key, run_after, created_at) VALUES ($1, $2, $3, $3)`, j[0], j[1], t0); err != nil {
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
	rows, _ := s.pool.Query(ctx, `SELECT kind || ' ' || key FROM jobs WHERE company_id = '' ORDER BY kind, key`)
	none, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"attest c-gone", "recording.lock s1"}; !slices.Equal(none, want) {
		t.Errorf("jobs of no company: %q; want %q", none, want)
	}
}

// Migration 0026 gives the webhook jobs queued before 0021 their lane and
// company again: an endpoint id may hold ':', and the whole of it is the
// lane; the company of an endpoint created after the job (its id
// taken by another company once the job's endpoint was deleted) is not the
// job's, which keeps none and so is never delivered to that company.
func TestMigrateWebhookJobLanes(t *testing.T) {
	ctx := context.Background()
	s := openSchema(t)
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
		if _, err := s.pool.Exec(ctx, `INSERT INTO jobs (kind, key, payload, run_after, created_at) VALUES ($1, $2, $3, $4, $4)`,
			j.kind, j.key, []byte(payload), j.at); err != nil {
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

// openSchema opens a store in a new schema of the database of
// CONSENT_TEST_POSTGRES_URL, as teststore.PostgresURL does (which this
// package's own tests cannot import), unmigrated. It skips t when the
// variable is unset.
func openSchema(t *testing.T) *Store {
	t.Helper()
	dsn := os.Getenv("CONSENT_TEST_POSTGRES_URL")
	if dsn == "" {
		t.Skip("PostgreSQL tests skipped: set CONSENT_TEST_POSTGRES_URL")
	}
	ctx := context.Background()
	var b [6]byte
	rand.Read(b[:])
	schema := "consent_test_" + hex.EncodeToString(b[:])
	exec := func(sql string) {
		t.Helper()
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = c.Close(ctx) }() // the statement's result is known
		if _, err := c.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	exec("CREATE SCHEMA " + schema)
	t.Cleanup(func() { exec("DROP SCHEMA " + schema + " CASCADE") })
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	s, err := Open(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() }) // a test's store: nothing to lose
	return s
}

// migrateBefore applies, as Migrate does, the migrations whose versions
// sort before version: the schema a database of then has.
func migrateBefore(t *testing.T, s *Store, version string) {
	t.Helper()
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
	s := openSchema(t)
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
