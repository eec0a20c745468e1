package storetest

import (
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/wallet"
)

// The Tx methods that read or write many rows in one step (issue 13):
// each does what its one-row form does for every row, in the order given,
// and a refusal leaves nothing written. A refusal that a SQL store finds
// before it runs a statement (Invalid, NotFound of a row, a short wallet)
// is checked by committing the transaction after it; one that a statement
// finds (Conflict) aborts a PostgreSQL transaction, so it is checked after
// a rollback.

// sessions returns the sessions of ids as Sessions reads them.
func sessions(t testing.TB, s consent.Store, ids ...string) []*consent.Session {
	t.Helper()
	var out []*consent.Session
	view(t, s, func(tx consent.Tx) error {
		var err error
		out, err = tx.Sessions(ctx, ids)
		return err
	})
	return out
}

// testSessions: out[i] is ids[i]'s session or nil, a repeated id gets a
// copy of its own, and the read sees the transaction's own writes.
func testSessions(t *testing.T, s consent.Store) {
	fixture(t, s)
	update(t, s, func(tx consent.Tx) error {
		for i := range 3 {
			if err := tx.CreateSession(ctx, session(fmt.Sprintf("b%d", i), "acme", "acme-web")); err != nil {
				return err
			}
		}
		return nil
	})
	one := func(id string) *consent.Session {
		var ses *consent.Session
		view(t, s, func(tx consent.Tx) error {
			var err error
			ses, err = tx.Session(ctx, id)
			return err
		})
		return ses
	}
	ids := []string{"b2", "nobody", "s2", "b0", "b2", "s1"}
	got := sessions(t, s, ids...)
	want := []*consent.Session{one("b2"), nil, one("s2"), one("b0"), one("b2"), one("s1")}
	if d := cmp.Diff(want, got, opts); d != "" {
		t.Errorf("Sessions(%q) (-want +got):\n%s", ids, d)
	}
	if len(got) == len(ids) && got[0] == got[4] {
		t.Errorf("Sessions gave a repeated id one *Session for both places, want a copy each")
	}
	if got := sessions(t, s); len(got) != 0 {
		t.Errorf("Sessions() = %v, want none", got)
	}
	if got := sessions(t, s, "x", "y"); len(got) != 2 || got[0] != nil || got[1] != nil {
		t.Errorf("Sessions(unknown, unknown) = %v, want [nil nil]", got)
	}
	update(t, s, func(tx consent.Tx) error {
		ses := session("b9", "acme", "acme-web")
		if err := tx.CreateSession(ctx, ses); err != nil {
			return err
		}
		ses.RetentionStatus = consent.RetentionRetained
		if err := tx.UpdateSession(ctx, ses); err != nil {
			return err
		}
		got, err := tx.Sessions(ctx, []string{"b9", "b1"})
		if err != nil {
			return err
		}
		if len(got) != 2 || got[0] == nil || got[0].RetentionStatus != consent.RetentionRetained || got[1] == nil || got[1].ID != "b1" {
			t.Errorf("Sessions in the transaction that wrote them = %+v, want b9 retained and b1", got)
		}
		return nil
	})
}

// testUpdateSessions: every session is written as UpdateSession writes
// it; an unknown one writes none.
func testUpdateSessions(t *testing.T, s consent.Store) {
	fixture(t, s)
	update(t, s, func(tx consent.Tx) error {
		for i := range 4 {
			if err := tx.CreateSession(ctx, session(fmt.Sprintf("b%d", i), "acme", "acme-web")); err != nil {
				return err
			}
		}
		return nil
	})
	before := sessions(t, s, "b0", "b1", "b2", "b3", "s1")
	retained := func(ses *consent.Session, i int) *consent.Session {
		n := *ses
		n.RetentionStatus, n.VideoStatus, n.ExpiresAt = consent.RetentionRetained, consent.VideoPending, t0.AddDate(5, 0, i)
		if i == 1 { // every field UpdateSession writes, NULL columns included
			n.Video = consent.Video{Path: "videos/b1.mp4", Bytes: 4242, SHA256: consent.DigestOf("mp4"), Duration: 1500 * time.Millisecond}
			n.ClosedAt = t0.Add(time.Minute)
		}
		return &n
	}
	list := []*consent.Session{retained(before[2], 2), retained(before[0], 0), retained(before[1], 1)}
	written := make([]*consent.Session, len(list))
	for i, ses := range list {
		n := *ses
		written[i] = &n
		ses.CompanyID, ses.PropertyID, ses.CreatedAt = "other", "other-web", t0.Add(time.Hour) // not written
	}
	update(t, s, func(tx consent.Tx) error { return tx.UpdateSessions(ctx, list) })
	want := []*consent.Session{written[1], written[2], written[0], before[3], before[4]}
	if d := cmp.Diff(want, sessions(t, s, "b0", "b1", "b2", "b3", "s1"), opts); d != "" {
		t.Errorf("sessions after UpdateSessions (-want +got):\n%s", d)
	}
	// Back to where they were, in one more call: it writes over anything.
	update(t, s, func(tx consent.Tx) error { return tx.UpdateSessions(ctx, before[:3]) })
	if d := cmp.Diff(before, sessions(t, s, "b0", "b1", "b2", "b3", "s1"), opts); d != "" {
		t.Errorf("sessions after a second UpdateSessions (-want +got):\n%s", d)
	}
	update(t, s, func(tx consent.Tx) error { return tx.UpdateSessions(ctx, nil) })

	for _, c := range []struct {
		name string
		list []*consent.Session
		code consent.Code
	}{
		{"an unknown session", []*consent.Session{retained(before[0], 0), retained(session("b9", "acme", "acme-web"), 9)}, consent.NotFound},
	} {
		update(t, s, func(tx consent.Tx) error {
			wantCode(t, "UpdateSessions with "+c.name, tx.UpdateSessions(ctx, c.list), c.code)
			return nil // commit: the refusal wrote nothing
		})
		if d := cmp.Diff(before, sessions(t, s, "b0", "b1", "b2", "b3", "s1"), opts); d != "" {
			t.Errorf("UpdateSessions with %s changed sessions (-want +got):\n%s", c.name, d)
		}
	}

	// More sessions than one statement binds on SQLite: all are written,
	// or, when the last is unknown, none.
	const many = 2500
	var ids []string
	update(t, s, func(tx consent.Tx) error {
		for i := range many {
			ids = append(ids, fmt.Sprintf("m%04d", i))
			if err := tx.CreateSession(ctx, session(ids[i], "acme", "acme-web")); err != nil {
				return err
			}
		}
		return nil
	})
	fresh := sessions(t, s, ids...)
	list = make([]*consent.Session, many)
	for i, ses := range fresh {
		list[i] = retained(ses, i)
	}
	unknown := append(list[1:], retained(session("m9999", "acme", "acme-web"), 0))
	update(t, s, func(tx consent.Tx) error {
		wantCode(t, "UpdateSessions of 2,500 with the last unknown", tx.UpdateSessions(ctx, unknown), consent.NotFound)
		return nil // commit: the refusal wrote nothing
	})
	if d := cmp.Diff(fresh, sessions(t, s, ids...), opts); d != "" {
		t.Errorf("UpdateSessions of 2,500 with the last unknown changed sessions (-want +got):\n%s", d)
	}
	update(t, s, func(tx consent.Tx) error { return tx.UpdateSessions(ctx, list) })
	if d := cmp.Diff(list, sessions(t, s, ids...), opts); d != "" {
		t.Errorf("sessions after UpdateSessions of 2,500 (-want +got):\n%s", d)
	}
}

// jobs returns the jobs of kind and keys (nil where there is none).
func jobsOf(t testing.TB, s consent.Store, kind string, keys ...string) []*consent.Job {
	t.Helper()
	out := make([]*consent.Job, len(keys))
	view(t, s, func(tx consent.Tx) error {
		for i, k := range keys {
			j, err := tx.Job(ctx, kind, k)
			if consent.ErrorCode(err) == consent.NotFound {
				continue
			}
			if err != nil {
				return err
			}
			out[i] = j
		}
		return nil
	})
	return out
}

// testEnqueueJobs: every job is added as EnqueueJob adds it, payloads
// byte for byte; a taken kind and key, or one listed twice, adds none.
func testEnqueueJobs(t *testing.T, s consent.Store) {
	withPayload := func(j *consent.Job, p []byte) *consent.Job { j.Payload = p; return j }
	list := []*consent.Job{
		withPayload(job("webhook", "msg_1:ep_1", t0), []byte("{\"id\":1}\x00\xff\xfe")),
		job(consent.JobConvert, "s1", t0.Add(time.Second)),
		withPayload(job("webhook", "msg_1:ep_2", t0), []byte{}),
		{Kind: "purge", Key: "p1", Attempts: 2, LastError: "line 1\nline \"2\"\t\\ ünï ✓ 𝄞", RunAfter: t0.Add(time.Hour), CreatedAt: t0},
	}
	update(t, s, func(tx consent.Tx) error { return tx.EnqueueJobs(ctx, list) })
	update(t, s, func(tx consent.Tx) error { return tx.EnqueueJobs(ctx, nil) })
	got := append(jobsOf(t, s, "webhook", "msg_1:ep_1"), jobsOf(t, s, consent.JobConvert, "s1")[0],
		jobsOf(t, s, "webhook", "msg_1:ep_2")[0], jobsOf(t, s, "purge", "p1")[0])
	want := make([]*consent.Job, len(list))
	for i, j := range list {
		n := *j
		if n.Payload == nil {
			n.Payload = []byte{}
		}
		want[i] = &n
	}
	if d := cmp.Diff(want, got, opts); d != "" {
		t.Errorf("jobs after EnqueueJobs (-want +got):\n%s", d)
	}
	if got := jobsOf(t, s, "webhook", "msg_1:ep_2")[0]; got == nil || got.Payload == nil || len(got.Payload) != 0 {
		t.Errorf("an empty payload came back as %+v, want empty", got)
	}

	for _, c := range []struct {
		name string
		list []*consent.Job
		code consent.Code
	}{
		{"a taken key", []*consent.Job{job("webhook", "new-1", t0), job(consent.JobConvert, "s1", t0)}, consent.Conflict},
		{"a key twice", []*consent.Job{job("webhook", "new-1", t0), job("webhook", "new-2", t0), job("webhook", "new-1", t0)}, consent.Conflict},
	} {
		err := s.Update(ctx, func(tx consent.Tx) error { return tx.EnqueueJobs(ctx, c.list) })
		wantCode(t, "EnqueueJobs with "+c.name, err, c.code)
		if got := jobsOf(t, s, "webhook", "new-1", "new-2"); got[0] != nil || got[1] != nil {
			t.Errorf("EnqueueJobs with %s added %+v", c.name, got)
		}
	}
}

func ledgerOf(t testing.TB, s consent.Store, companyID string) []*wallet.Entry {
	t.Helper()
	var out []*wallet.Entry
	view(t, s, func(tx consent.Tx) error {
		var err error
		out, err = tx.Ledger(ctx, companyID)
		return err
	})
	return out
}

func balanceOf(t testing.TB, s consent.Store, companyID string) wallet.Amount {
	t.Helper()
	var bal wallet.Amount
	view(t, s, func(tx consent.Tx) error {
		var err error
		bal, err = tx.Balance(ctx, companyID)
		return err
	})
	return bal
}

// testDebitAll: the entries are debited together, in the ledger in the
// order given, only when the balance covers their sum; otherwise, and on
// every other refusal, nothing changes.
func testDebitAll(t *testing.T, s consent.Store) {
	fixture(t, s)
	topup := entry("top", "acme", wallet.TopUp, 50*wallet.Cent, t0)
	update(t, s, func(tx consent.Tx) error {
		_, err := tx.Credit(ctx, topup)
		return err
	})
	var list []*wallet.Entry
	for i := range 4 {
		e := entry(fmt.Sprintf("b%d", 3-i), "acme", wallet.RetainBatch, 10*wallet.Cent, t0.Add(time.Duration(i)*time.Second))
		e.Reference = fmt.Sprintf("ses-%d", i)
		list = append(list, e)
	}
	update(t, s, func(tx consent.Tx) error {
		bal, err := tx.DebitAll(ctx, list)
		if err != nil || bal != 10*wallet.Cent {
			t.Errorf("DebitAll(4 × 0.1 of 0.5) = %v, %v; want 0.1", bal, err)
		}
		return err
	})
	if d := cmp.Diff(append([]*wallet.Entry{topup}, list...), ledgerOf(t, s, "acme"), opts); d != "" {
		t.Errorf("Ledger after DebitAll (-want +got):\n%s", d)
	}
	update(t, s, func(tx consent.Tx) error {
		if bal, err := tx.DebitAll(ctx, nil); bal != 0 || err != nil {
			t.Errorf("DebitAll(none) = %v, %v; want 0, nil", bal, err)
		}
		return nil
	})

	ledger := ledgerOf(t, s, "acme")
	two := func(a, b wallet.Amount) []*wallet.Entry {
		return []*wallet.Entry{entry("n1", "acme", wallet.RetainBatch, a, t0), entry("n2", "acme", wallet.RetainBatch, b, t0)}
	}
	unknown := two(1, 1)
	unknown[0].CompanyID, unknown[1].CompanyID = "nobody", "nobody"
	// A taken id is found last, as the SQL stores find it on insert: after
	// the company and the balance.
	takenShort := two(6*wallet.Cent, 5*wallet.Cent)
	takenShort[0].ID = "b0"
	takenUnknown := two(1, 1)
	takenUnknown[0].ID, takenUnknown[0].CompanyID, takenUnknown[1].CompanyID = "b0", "nobody", "nobody"
	for _, c := range []struct {
		name string
		list []*wallet.Entry
		code consent.Code
	}{
		// 0.06 + 0.05 of 0.1: each would pass alone, not both.
		{"a sum over the balance", two(6*wallet.Cent, 5*wallet.Cent), consent.Payment},
		{"an unknown company", unknown, consent.NotFound},
		{"a taken id and a sum over the balance", takenShort, consent.Payment},
		{"a taken id of an unknown company", takenUnknown, consent.NotFound},
	} {
		update(t, s, func(tx consent.Tx) error {
			_, err := tx.DebitAll(ctx, c.list)
			wantCode(t, "DebitAll with "+c.name, err, c.code)
			var ife *wallet.InsufficientFundsError
			if c.code == consent.Payment && (!errors.As(err, &ife) || ife.Required != 11*wallet.Cent || ife.Balance != 10*wallet.Cent) {
				t.Errorf("DebitAll with %s: %v, want InsufficientFundsError{0.11, 0.1}", c.name, err)
			}
			return nil // commit: the refusal changed nothing
		})
		if bal := balanceOf(t, s, "acme"); bal != 10*wallet.Cent {
			t.Errorf("DebitAll with %s: balance %v, want 0.1", c.name, bal)
		}
		if d := cmp.Diff(ledger, ledgerOf(t, s, "acme"), opts); d != "" {
			t.Errorf("DebitAll with %s changed the ledger (-want +got):\n%s", c.name, d)
		}
	}
	for _, c := range []struct {
		name string
		list []*wallet.Entry
	}{
		{"a taken id", []*wallet.Entry{entry("n1", "acme", wallet.RetainBatch, 1, t0), entry("b0", "acme", wallet.RetainBatch, 1, t0)}},
		{"an id twice", []*wallet.Entry{entry("n1", "acme", wallet.RetainBatch, 1, t0), entry("n1", "acme", wallet.RetainBatch, 1, t0)}},
	} {
		err := s.Update(ctx, func(tx consent.Tx) error {
			_, err := tx.DebitAll(ctx, c.list)
			return err
		})
		wantCode(t, "DebitAll with "+c.name, err, consent.Conflict)
		if bal := balanceOf(t, s, "acme"); bal != 10*wallet.Cent {
			t.Errorf("DebitAll with %s: balance %v, want 0.1", c.name, bal)
		}
	}
	// The whole balance may go, leaving exactly zero.
	update(t, s, func(tx consent.Tx) error {
		bal, err := tx.DebitAll(ctx, two(4*wallet.Cent, 6*wallet.Cent))
		if err != nil || bal != 0 {
			t.Errorf("DebitAll of the whole balance = %v, %v; want 0", bal, err)
		}
		return err
	})
}

// testAppendAudits: entries appended in one step chain on from the head
// as one-by-one appends would — to a new chain, after single appends and
// before them — and a refusal appends none.
func testAppendAudits(t *testing.T, s consent.Store) {
	fixture(t, s)
	batch := func(company string, n int, tag string) []*consent.AuditEntry {
		var out []*consent.AuditEntry
		for i := range n {
			out = append(out, &consent.AuditEntry{CompanyID: company, At: t0.Add(time.Duration(i) * time.Millisecond),
				Actor: "tok_1", Action: consent.AuditRetainBatch, Target: fmt.Sprintf("%s-%d", tag, i),
				Outcome: []string{"ok", "not_found", "conflict", "payment"}[i%4], RequestID: "req-" + tag,
				Detail: fmt.Sprintf(`{"index":%d,"note":"ünï \"q\"\n"}`, i)})
		}
		return out
	}
	first := batch("acme", 3, "a") // a new chain
	update(t, s, func(tx consent.Tx) error { return tx.AppendAudits(ctx, first) })
	for i, e := range first {
		if e.Seq != int64(i+1) || e.Hash != consent.AuditHash(e) || (i > 0 && e.PrevHash != first[i-1].Hash) {
			t.Errorf("entry %d as AppendAudits completed it: %+v", i, e)
		}
	}
	checkChain(t, s, "acme", 3)
	appendAudit(t, s, *batch("acme", 1, "single")[0])
	second := batch("acme", 2620, "b") // the head moves by many, more than one statement's rows on SQLite
	update(t, s, func(tx consent.Tx) error { return tx.AppendAudits(ctx, second) })
	update(t, s, func(tx consent.Tx) error { return tx.AppendAudits(ctx, batch("acme", 1, "c")) })
	update(t, s, func(tx consent.Tx) error { return tx.AppendAudits(ctx, nil) })
	appendAudit(t, s, *batch("acme", 1, "single2")[0])
	checkChain(t, s, "acme", 2626)
	var got []*consent.AuditEntry
	for after := int64(4); after < 2624; after += 1000 {
		got = append(got, auditEntries(t, s, consent.AuditQuery{CompanyID: "acme", AfterSeq: after, BeforeSeq: 2625, Limit: 1000})...)
	}
	if d := cmp.Diff(second, got, opts); d != "" {
		t.Errorf("entries appended by AppendAudits, read back (-want +got):\n%s", d)
	}
	// Two transactions that each append and then roll back leave nothing.
	err := s.Update(ctx, func(tx consent.Tx) error {
		if err := tx.AppendAudits(ctx, batch("acme", 5, "gone")); err != nil {
			return err
		}
		return errBulk
	})
	if !errors.Is(err, errBulk) {
		t.Errorf("Update = %v, want the callback's error", err)
	}
	checkChain(t, s, "acme", 2626)

	err = s.Update(ctx, func(tx consent.Tx) error { return tx.AppendAudits(ctx, batch("nobody", 2, "x")) })
	wantCode(t, "AppendAudits of an unknown company", err, consent.NotFound)
	checkChain(t, s, "acme", 2626)
	checkChain(t, s, "other", 0)
}

var errBulk = errors.New("boom")

// testConcurrentAppendAudits: appends in one step and one by one, from
// many transactions at once, never fork a company's chain.
func testConcurrentAppendAudits(t *testing.T, s consent.Store) {
	fixture(t, s)
	const workers, each, size = 8, 4, 10
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		errs  []error
		start = make(chan struct{})
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			company := []string{"acme", "other"}[w%2]
			for i := range each {
				err := s.Update(ctx, func(tx consent.Tx) error {
					if w%4 < 2 { // one by one
						return tx.AppendAudit(ctx, &consent.AuditEntry{CompanyID: company, At: t0, Actor: fmt.Sprintf("w%d", w),
							Action: consent.AuditVerifyMatch, Target: fmt.Sprint(i), Outcome: "ok"})
					}
					var list []*consent.AuditEntry
					for k := range size {
						list = append(list, &consent.AuditEntry{CompanyID: company, At: t0, Actor: fmt.Sprintf("w%d", w),
							Action: consent.AuditRetainBatch, Target: fmt.Sprintf("%d-%d", i, k), Outcome: "ok"})
					}
					return tx.AppendAudits(ctx, list)
				})
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	for _, err := range errs {
		t.Errorf("concurrent append: %v", err)
	}
	// Per company: half the workers append one at a time, half ten at a time.
	n := workers / 4 * each * (1 + size)
	checkChain(t, s, "acme", n)
	checkChain(t, s, "other", n)
}

// testConcurrentTakenEntryIDs: among concurrent calls that each debit and
// append an audit entry, the ones whose ledger entry id is taken fail with
// a conflict and the others commit, each exactly once — also where a store
// finds the taken id only when it writes a shared transaction's entries
// (write-behind), after the call's function returned.
func testConcurrentTakenEntryIDs(t *testing.T, s consent.Store) {
	fixture(t, s)
	update(t, s, func(tx consent.Tx) error {
		if _, err := tx.Credit(ctx, entry("topup", "acme", wallet.TopUp, 100*wallet.Dollar, t0)); err != nil {
			return err
		}
		_, err := tx.Debit(ctx, entry("taken", "acme", wallet.ExactMatch, wallet.Cent, t0))
		return err
	})
	const rounds, workers = 4, 16
	ok := 0
	for r := range rounds {
		var (
			wg    sync.WaitGroup
			start = make(chan struct{})
			errs  = make([]error, workers)
		)
		for w := range workers {
			wg.Go(func() {
				<-start
				id := fmt.Sprintf("e-%d-%d", r, w)
				if w%5 == 2 {
					id = "taken"
				}
				errs[w] = s.Update(ctx, func(tx consent.Tx) error {
					if _, err := tx.Debit(ctx, entry(id, "acme", wallet.ExactMatch, wallet.Cent, t0)); err != nil {
						return err
					}
					return tx.AppendAudit(ctx, &consent.AuditEntry{CompanyID: "acme", At: t0, Actor: "t",
						Action: consent.AuditVerifyMatch, Target: id, Outcome: "ok"})
				})
			})
		}
		close(start)
		wg.Wait()
		for w, err := range errs {
			if w%5 == 2 {
				wantCode(t, fmt.Sprintf("round %d, call %d with a taken id", r, w), err, consent.Conflict)
				continue
			}
			if err != nil {
				t.Errorf("round %d, call %d: %v", r, w, err)
				continue
			}
			ok++
		}
	}
	ledger := ledgerOf(t, s, "acme")
	if len(ledger) != 2+ok {
		t.Errorf("%d ledger entries, want %d", len(ledger), 2+ok)
	}
	if bal := balanceOf(t, s, "acme"); bal != 100*wallet.Dollar-wallet.Amount(1+ok)*wallet.Cent {
		t.Errorf("balance %v after %d debits of 0.01 from 100", bal, 1+ok)
	}
	checkChain(t, s, "acme", ok)
}

// testConcurrentChargesReadBack: concurrent calls each credit, read the
// balance, debit and read the ledger back in one transaction — on a store
// that writes charges behind, the read writes them first — and every third
// fails at the end. Each call sees its own work, and what stays is exactly
// the kept calls' work.
func testConcurrentChargesReadBack(t *testing.T, s consent.Store) {
	fixture(t, s)
	const workers, each = 12, 5
	errBoom := errors.New("boom")
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		kept  int
		start = make(chan struct{})
	)
	for w := range workers {
		wg.Go(func() {
			<-start
			for i := range each {
				fail := (w+i)%3 == 0
				err := s.Update(ctx, func(tx consent.Tx) error {
					in := entry(fmt.Sprintf("in-%d-%d", w, i), "acme", wallet.TopUp, 3*wallet.Cent, t0)
					after, err := tx.Credit(ctx, in)
					if err != nil {
						return err
					}
					if bal, err := tx.Balance(ctx, "acme"); err != nil || bal != after {
						return fmt.Errorf("Balance after a credit to %v = %v, %v", after, bal, err)
					}
					out := entry(fmt.Sprintf("out-%d-%d", w, i), "acme", wallet.ExactMatch, wallet.Cent, t0)
					if bal, err := tx.Debit(ctx, out); err != nil || bal != after-wallet.Cent {
						return fmt.Errorf("Debit after a credit to %v = %v, %v", after, bal, err)
					}
					ledger, err := tx.Ledger(ctx, "acme")
					if err != nil {
						return err
					}
					if n := len(ledger); n < 2 || ledger[n-2].ID != in.ID || ledger[n-1].ID != out.ID {
						return fmt.Errorf("the ledger read back does not end with the call's two entries: %d entries", n)
					}
					if fail {
						return errBoom
					}
					return nil
				})
				if keptCall(t, fmt.Sprintf("call %d-%d", w, i), fail, err, errBoom) {
					mu.Lock()
					kept++
					mu.Unlock()
				}
			}
		})
	}
	close(start)
	wg.Wait()
	if n := len(ledgerOf(t, s, "acme")); n != 2*kept {
		t.Errorf("%d ledger entries after %d kept calls, want %d", n, kept, 2*kept)
	}
	if bal := balanceOf(t, s, "acme"); bal != wallet.Amount(kept)*2*wallet.Cent {
		t.Errorf("balance %v after %d kept calls of +0.03 −0.01", bal, kept)
	}
}

// keptCall checks the outcome of a call that was to fail with errBoom, or
// to succeed, and reports whether it was kept.
func keptCall(t *testing.T, what string, fail bool, err, errBoom error) bool {
	t.Helper()
	switch {
	case fail && !errors.Is(err, errBoom):
		t.Errorf("%s, a failing call: %v, want boom", what, err)
	case !fail && err != nil:
		t.Errorf("%s: %v", what, err)
	}
	return !fail && err == nil
}

// testConcurrentDirectAndBehind: concurrent calls each make a row of their
// own (a session) and charge and audit themselves, in one order or the
// other, and every third fails after both. On the SQL stores the charge and
// the audit entry are written behind and the session is written at once
// (the call's savepoint is made before it): exactly the kept calls' sessions,
// ledger entries and audit entries stay.
func testConcurrentDirectAndBehind(t *testing.T, s consent.Store) {
	funded(t, s)
	errBoom := errors.New("boom")
	const workers, each = 12, 6
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		kept  = map[string]bool{}
		start = make(chan struct{})
	)
	for w := range workers {
		wg.Go(func() {
			<-start
			for i := range each {
				id := fmt.Sprintf("c-%d-%d", w, i)
				fail := (w+i)%3 == 0
				err := s.Update(ctx, func(tx consent.Tx) error {
					direct := func() error { return tx.CreateSession(ctx, session(id, "acme", "acme-web")) }
					behind := func() error {
						if _, err := tx.Debit(ctx, entry(id, "acme", wallet.SessionRetention, wallet.Cent, t0)); err != nil {
							return err
						}
						return tx.AppendAudit(ctx, &consent.AuditEntry{CompanyID: "acme", At: t0, Actor: "t",
							Action: consent.AuditRetainSession, Target: id, Outcome: "ok"})
					}
					first, second := direct, behind
					if i%2 == 1 {
						first, second = behind, direct
					}
					if err := first(); err != nil {
						return err
					}
					if err := second(); err != nil {
						return err
					}
					if fail {
						return errBoom
					}
					return nil
				})
				if keptCall(t, "call "+id, fail, err, errBoom) {
					mu.Lock()
					kept[id] = true
					mu.Unlock()
				}
			}
		})
	}
	close(start)
	wg.Wait()
	var ids []string
	for w := range workers {
		for i := range each {
			ids = append(ids, fmt.Sprintf("c-%d-%d", w, i))
		}
	}
	for i, got := range sessions(t, s, ids...) {
		if (got != nil) != kept[ids[i]] {
			t.Errorf("session %s stored: %v, its call kept: %v", ids[i], got != nil, kept[ids[i]])
		}
	}
	charged := map[string]bool{}
	for _, e := range ledgerOf(t, s, "acme") {
		if e.ID != "topup" {
			charged[e.ID] = true
		}
	}
	audited := map[string]bool{}
	view(t, s, func(tx consent.Tx) error {
		entries, err := tx.AuditEntries(ctx, consent.AuditQuery{CompanyID: "acme", Limit: 1000})
		for _, e := range entries {
			audited[e.Target] = true
		}
		return err
	})
	if !maps.Equal(charged, kept) || !maps.Equal(audited, kept) {
		t.Errorf("%d calls kept; %d charged and %d audited, not the same calls", len(kept), len(charged), len(audited))
	}
	if bal := balanceOf(t, s, "acme"); bal != 10*wallet.Dollar-wallet.Amount(len(kept))*wallet.Cent {
		t.Errorf("balance %v after %d kept calls of −0.01", bal, len(kept))
	}
}

// testBulkRollsBack: the bulk writes of a transaction that then fails are
// undone whole — sessions, jobs, balance, ledger — and the ids they took
// are free again.
func testBulkRollsBack(t *testing.T, s consent.Store) {
	funded(t, s)
	before := sessions(t, s, "s1")
	ledger := ledgerOf(t, s, "acme")
	retained := *before[0]
	retained.RetentionStatus, retained.VideoStatus, retained.ExpiresAt = consent.RetentionRetained, consent.VideoPending, t0.AddDate(5, 0, 0)
	jobs := func() []*consent.Job {
		return []*consent.Job{job(consent.JobConvert, "s1", t0), job("webhook", "msg_9:ep_1", t0)}
	}
	debits := func() []*wallet.Entry {
		return []*wallet.Entry{entry("d1", "acme", wallet.RetainBatch, 10*wallet.Cent, t0), entry("d2", "acme", wallet.RetainBatch, 10*wallet.Cent, t0)}
	}
	errBoom := errors.New("boom")
	err := s.Update(ctx, func(tx consent.Tx) error {
		if err := tx.UpdateSessions(ctx, []*consent.Session{&retained}); err != nil {
			return err
		}
		if err := tx.EnqueueJobs(ctx, jobs()); err != nil {
			return err
		}
		if _, err := tx.DebitAll(ctx, debits()); err != nil {
			return err
		}
		return errBoom
	})
	if !errors.Is(err, errBoom) {
		t.Fatalf("Update returned %v, want fn's error", err)
	}
	if d := cmp.Diff(before, sessions(t, s, "s1"), opts); d != "" {
		t.Errorf("session after the rollback (-want +got):\n%s", d)
	}
	if got := jobsOf(t, s, consent.JobConvert, "s1"); got[0] != nil {
		t.Errorf("job after the rollback: %+v", got[0])
	}
	if got := jobsOf(t, s, "webhook", "msg_9:ep_1"); got[0] != nil {
		t.Errorf("job after the rollback: %+v", got[0])
	}
	if bal := balanceOf(t, s, "acme"); bal != 10*wallet.Dollar {
		t.Errorf("balance after the rollback: %v, want 10", bal)
	}
	if d := cmp.Diff(ledger, ledgerOf(t, s, "acme"), opts); d != "" {
		t.Errorf("ledger after the rollback (-want +got):\n%s", d)
	}
	// The same writes commit afterwards: nothing of the first try is left
	// to conflict with them.
	update(t, s, func(tx consent.Tx) error {
		if err := tx.UpdateSessions(ctx, []*consent.Session{&retained}); err != nil {
			return err
		}
		if err := tx.EnqueueJobs(ctx, jobs()); err != nil {
			return err
		}
		_, err := tx.DebitAll(ctx, debits())
		return err
	})
	if d := cmp.Diff(append(ledger, debits()...), ledgerOf(t, s, "acme"), opts); d != "" {
		t.Errorf("ledger after the retry (-want +got):\n%s", d)
	}
}

// testBalanceLimit: a wallet holds at most wallet.MaxBalance, on every
// store: a credit that would take it over is refused as Invalid
// (wallet.ErrBalanceLimit) and changes nothing, so no balance ever
// overflows. Concurrent credits that would together pass it (sharing a
// group-commit batch, on the SQL stores) are refused alone. (An entry of
// more, or a debit whose entries sum to more, is refused by the checked
// Tx before a store sees it: consent's tests.)
func testBalanceLimit(t *testing.T, s consent.Store) {
	funded(t, s) // $10
	ledger := ledgerOf(t, s, "acme")
	refused := func(name string, write func(tx consent.Tx) error) {
		t.Helper()
		err := s.Update(ctx, write)
		if !errors.Is(err, wallet.ErrBalanceLimit) || consent.ErrorCode(err) != consent.Invalid {
			t.Errorf("%s: %v, want ErrBalanceLimit (Invalid)", name, err)
		}
		if d := cmp.Diff(ledger, ledgerOf(t, s, "acme"), opts); d != "" {
			t.Errorf("%s changed the ledger (-want +got):\n%s", name, d)
		}
	}
	refused("a credit over the limit", func(tx consent.Tx) error {
		_, err := tx.Credit(ctx, entry("over", "acme", wallet.TopUp, wallet.MaxBalance-10*wallet.Dollar+1, t0))
		return err
	})
	if bal := balanceOf(t, s, "acme"); bal != 10*wallet.Dollar {
		t.Fatalf("balance after the refusals: %v, want 10", bal)
	}
	// Up to the limit exactly is fine, and spends back down.
	update(t, s, func(tx consent.Tx) error {
		bal, err := tx.Credit(ctx, entry("to-limit", "acme", wallet.TopUp, wallet.MaxBalance-10*wallet.Dollar, t0))
		if err == nil && bal != wallet.MaxBalance {
			t.Errorf("credit to the limit: balance %v, want %v", bal, wallet.MaxBalance)
		}
		return err
	})
	ledger = ledgerOf(t, s, "acme")
	refused("a credit of one micro-dollar at the limit", func(tx consent.Tx) error {
		_, err := tx.Credit(ctx, entry("one", "acme", wallet.TopUp, 1, t0))
		return err
	})
	update(t, s, func(tx consent.Tx) error {
		bal, err := tx.Debit(ctx, entry("all", "acme", wallet.ExactMatch, wallet.MaxBalance, t0))
		if err == nil && bal != 0 {
			t.Errorf("debit of the whole limit: balance %v, want 0", bal)
		}
		return err
	})

	// Eight credits of just over half the limit at once: exactly one can
	// be made.
	half := wallet.MaxBalance/2 + 1
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.Update(ctx, func(tx consent.Tx) error {
				_, err := tx.Credit(ctx, entry(fmt.Sprintf("half-%d", i), "acme", wallet.TopUp, half, t0))
				return err
			})
		}()
	}
	wg.Wait()
	made := 0
	for i, err := range errs {
		switch {
		case err == nil:
			made++
		case !errors.Is(err, wallet.ErrBalanceLimit):
			t.Errorf("concurrent credit %d: %v, want nil or ErrBalanceLimit", i, err)
		}
	}
	if bal := balanceOf(t, s, "acme"); made != 1 || bal != half {
		t.Errorf("concurrent credits of half the limit: %d made, balance %v; want 1 and %v", made, bal, half)
	}
}
