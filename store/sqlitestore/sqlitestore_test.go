package sqlitestore_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/store/storetest"
	"github.com/consentkit/consentkit/wallet"
)

// tamperer writes to the store's file on a connection of its own, as
// someone with access to the database could, without the triggers that
// keep the audit log append-only.
type tamperer struct{ db *sql.DB }

func (m tamperer) ReplaceAudit(t testing.TB, companyID string, seq int64, e *consent.AuditEntry) {
	r, err := m.db.Exec(`UPDATE audit_log SET company_id = ?, seq = ?, at = ?, actor = ?, action = ?, target = ?,
		outcome = ?, request_id = ?, detail = ?, prev_hash = ?, hash = ? WHERE company_id = ? AND seq = ?`,
		e.CompanyID, e.Seq, e.At.UnixMicro(), e.Actor, e.Action, e.Target, e.Outcome, e.RequestID, e.Detail,
		e.PrevHash[:], e.Hash[:], companyID, seq)
	if n, _ := r.RowsAffected(); err != nil || n != 1 {
		t.Fatalf("replace audit entry %s %d: %d rows, %v", companyID, seq, n, err)
	}
}

func (m tamperer) DeleteAudit(t testing.TB, companyID string, seq int64) {
	r, err := m.db.Exec(`DELETE FROM audit_log WHERE company_id = ? AND seq = ?`, companyID, seq)
	if n, _ := r.RowsAffected(); err != nil || n != 1 {
		t.Fatalf("delete audit entry %s %d: %d rows, %v", companyID, seq, n, err)
	}
}

func TestAuditTamper(t *testing.T) {
	storetest.RunAuditTamper(t, func(tb testing.TB) (consent.Store, storetest.AuditTamperer) {
		s, db := teststore.SQLiteWithDB(tb)
		for _, trigger := range []string{"audit_log_no_update", "audit_log_no_delete"} {
			if _, err := db.Exec("DROP TRIGGER " + trigger); err != nil {
				tb.Fatal(err)
			}
		}
		return s, tamperer{db}
	})
}

// The database itself refuses to change or delete an entry, to delete a
// head, or to move a head anywhere but one entry forward.
func TestAuditAppendOnly(t *testing.T) {
	s, db := teststore.SQLiteWithDB(t)
	teststore.CheckAppendOnly(t, s, []string{
		`UPDATE audit_log SET outcome = 'forged' WHERE seq = 1`,
		`DELETE FROM audit_log WHERE seq = 2`,
		`DELETE FROM audit_heads`,
		`UPDATE audit_heads SET seq = 1`,
		`UPDATE audit_heads SET seq = 5`,
		`UPDATE audit_heads SET company_id = 'other'`,
	}, func(stmt string) error {
		_, err := db.Exec(stmt)
		return err
	}, func(query string) (n int, err error) {
		return n, db.QueryRow(query).Scan(&n)
	})
}

// Concurrent calls share transactions; a lone call runs alone.
func TestGroupCommitGroups(t *testing.T) {
	s, off := teststore.SQLite(t), teststore.SQLiteWithoutGroupCommit(t)
	storetest.CheckGrouping(t, s, s.GroupStats)
	storetest.CheckGrouping(t, off, off.GroupStats)
}

// TestBulkWritesAllOrNothing: a write of more rows than one statement
// binds runs in a savepoint, so that a refusal found by its last
// statement leaves nothing of the earlier ones even when the transaction
// goes on to commit (which SQLite, unlike PostgreSQL, allows after a
// failed statement).
func TestBulkWritesAllOrNothing(t *testing.T) {
	s, db := teststore.SQLiteWithDB(t)
	ctx := context.Background()
	if err := s.Update(ctx, func(tx consent.Tx) error {
		if err := tx.CreateCompany(ctx, &consent.Company{ID: "acme", Name: "Acme", CreatedAt: time.Now()}); err != nil {
			return err
		}
		_, err := tx.Credit(ctx, &wallet.Entry{ID: "top", CompanyID: "acme", Kind: wallet.TopUp, Amount: 10000 * wallet.Dollar, CreatedAt: time.Now()})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	const many = 2500
	count := func(table string) int {
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM ` + table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	var jobs []*consent.Job
	var entries []*wallet.Entry
	for i := range many {
		jobs = append(jobs, &consent.Job{Kind: "k", Key: fmt.Sprintf("j%04d", i%(many-1)), RunAfter: time.Now(), CreatedAt: time.Now()})
		entries = append(entries, &wallet.Entry{ID: fmt.Sprintf("e%04d", i%(many-1)), CompanyID: "acme", Kind: wallet.RetainBatch,
			Amount: wallet.Cent, CreatedAt: time.Now()})
	}
	// The last job and the last entry repeat the first one's key.
	if err := s.Update(ctx, func(tx consent.Tx) error {
		if err := tx.EnqueueJobs(ctx, jobs); consent.ErrorCode(err) != consent.Conflict {
			t.Errorf("EnqueueJobs with the last key taken: %v, want a conflict", err)
		}
		if _, err := tx.DebitAll(ctx, entries); consent.ErrorCode(err) != consent.Conflict {
			t.Errorf("DebitAll with the last id taken: %v, want a conflict", err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n := count("jobs"); n != 0 {
		t.Errorf("%d jobs after a refused EnqueueJobs, want 0", n)
	}
	if n := count("ledger"); n != 1 {
		t.Errorf("%d ledger entries after a refused DebitAll, want only the top-up", n)
	}
	var bal int64
	if err := db.QueryRow(`SELECT balance FROM wallets WHERE company_id = 'acme'`).Scan(&bal); err != nil || bal != int64(10000*wallet.Dollar) {
		t.Errorf("balance after a refused DebitAll: %d, %v; want 10000 dollars", bal, err)
	}
	// Without the repeat, all of them.
	if err := s.Update(ctx, func(tx consent.Tx) error {
		if err := tx.EnqueueJobs(ctx, jobs[:many-1]); err != nil {
			return err
		}
		_, err := tx.DebitAll(ctx, entries[:many-1])
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if j, l := count("jobs"), count("ledger"); j != many-1 || l != many {
		t.Errorf("%d jobs and %d ledger entries, want %d and %d", j, l, many-1, many)
	}
	var seqOrder int
	if err := db.QueryRow(`SELECT count(*) FROM ledger a JOIN ledger b ON b.seq = a.seq + 1
		WHERE a.id LIKE 'e%' AND b.id LIKE 'e%' AND b.id < a.id`).Scan(&seqOrder); err != nil || seqOrder != 0 {
		t.Errorf("%d ledger entries out of the order given (%v), want none", seqOrder, err)
	}
}
