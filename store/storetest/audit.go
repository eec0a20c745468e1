package storetest

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/consentkit/consentkit/audit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/wallet"
)

// appendAudit appends e in a transaction of its own and returns it as the
// store completed it.
func appendAudit(t testing.TB, s consent.Store, e consent.AuditEntry) *consent.AuditEntry {
	t.Helper()
	update(t, s, func(tx consent.Tx) error { return tx.AppendAudit(ctx, &e) })
	return &e
}

func headErr(s consent.Store, companyID string) (*consent.AuditHead, error) {
	var h *consent.AuditHead
	err := s.View(ctx, func(tx consent.Tx) error {
		var err error
		h, err = tx.AuditHead(ctx, companyID)
		return err
	})
	return h, err
}

// testAuditAppend: the store numbers each company's entries from 1, links
// and hashes them with audit.Hash, moves the head, and reads every
// field back byte for byte; it refuses unknown companies.
func testAuditAppend(t *testing.T, s consent.Store) {
	fixture(t, s)
	if h := auditHead(t, s, "acme"); h.Seq != 0 || !h.Hash.IsZero() || h.CompanyID != "acme" {
		t.Errorf("head of an empty log = %+v, want zero", h)
	}
	plus2 := time.FixedZone("+2", 2*3600)
	in := []consent.AuditEntry{
		{CompanyID: "acme", At: t0.In(plus2).Add(789 * time.Nanosecond), Actor: "tok_abc", Action: consent.AuditVerifyMatch,
			Target: "cert-1", Outcome: consent.AuditOK, RequestID: "req-1", Detail: `{"valid":true,"charged":0.015}`},
		{CompanyID: "other", At: t0, Actor: consent.ActorOperator, Action: consent.AuditWalletCredit, Outcome: consent.AuditOK},
		{CompanyID: "acme", At: t0.Add(time.Second), Actor: "property:acme-web", Action: consent.AuditVerifyPartialMatch,
			Target: "cert-2", Outcome: string(consent.Payment), Detail: "ünïcødé 𝄞 ✓\ttab\nline\r\n"},
		{CompanyID: "acme", At: t0.Add(-time.Hour), Actor: consent.ActorConsumer, Action: consent.AuditOptOut,
			Target: "rev-1", Outcome: consent.AuditOK, Detail: strings.Repeat("x", consent.MaxAuditDetail)},
	}
	var got []*consent.AuditEntry
	for _, e := range in {
		got = append(got, appendAudit(t, s, e))
	}
	for i, wantSeq := range []int64{1, 1, 2, 3} {
		e := got[i]
		if e.Seq != wantSeq {
			t.Errorf("entry %d: Seq = %d, want %d", i, e.Seq, wantSeq)
		}
		if want := consent.UTC(in[i].At); !e.At.Equal(want) || e.At.Location() != time.UTC || e.At != want {
			t.Errorf("entry %d: At = %v, want %v (UTC, to the microsecond)", i, e.At, want)
		}
		if e.Hash != audit.Hash(e) {
			t.Errorf("entry %d: Hash is not audit.Hash of the entry", i)
		}
	}
	if !got[0].PrevHash.IsZero() || got[2].PrevHash != got[0].Hash || got[3].PrevHash != got[2].Hash || !got[1].PrevHash.IsZero() {
		t.Errorf("entries are not chained per company")
	}
	acme := auditEntries(t, s, consent.AuditQuery{CompanyID: "acme", Limit: 10})
	if d := cmp.Diff([]*consent.AuditEntry{got[0], got[2], got[3]}, acme); d != "" {
		t.Errorf("AuditEntries(acme) (-appended +read):\n%s", d)
	}
	other := auditEntries(t, s, consent.AuditQuery{CompanyID: "other", Limit: 10})
	if d := cmp.Diff([]*consent.AuditEntry{got[1]}, other); d != "" {
		t.Errorf("AuditEntries(other) (-appended +read):\n%s", d)
	}
	if h := auditHead(t, s, "acme"); h.Seq != 3 || h.Hash != got[3].Hash {
		t.Errorf("head of acme = %d %s, want 3 %s", h.Seq, h.Hash, got[3].Hash)
	}

	err := s.Update(ctx, func(tx consent.Tx) error {
		return tx.AppendAudit(ctx, &consent.AuditEntry{CompanyID: "nobody", Actor: "a", Action: "x.y", Outcome: "ok", At: t0})
	})
	wantCode(t, "AppendAudit(unknown company)", err, consent.NotFound)
	checkChain(t, s, "acme", 3)
	_, err = headErr(s, "nobody")
	wantCode(t, "AuditHead(nobody)", err, consent.NotFound)
	err = s.View(ctx, func(tx consent.Tx) error {
		return tx.AppendAudit(ctx, &consent.AuditEntry{CompanyID: "acme", Actor: "a", Action: "x.y", Outcome: "ok", At: t0})
	})
	if err == nil {
		t.Errorf("AppendAudit in View succeeded")
	}
	checkChain(t, s, "acme", 3)
}

// testAuditQuery: every filter, alone and together, both orders, and
// keyset pages that add up to the whole selection.
func testAuditQuery(t *testing.T, s consent.Store) {
	fixture(t, s)
	actions := []string{consent.AuditVerifyMatch, consent.AuditVerifyPartialMatch, consent.AuditRetainSingle,
		consent.AuditRetainBatch, "verifyx.other", consent.AuditTokenIssue}
	update(t, s, func(tx consent.Tx) error {
		for i := range 40 {
			e := &consent.AuditEntry{
				CompanyID: "acme", At: t0.Add(time.Duration(i) * time.Minute), Actor: fmt.Sprintf("tok_%d", i%3),
				Action: actions[i%len(actions)], Target: fmt.Sprintf("cert-%d", i%4), Outcome: consent.AuditOK,
			}
			if err := tx.AppendAudit(ctx, e); err != nil {
				return err
			}
			// Another company's entries never show.
			if err := tx.AppendAudit(ctx, &consent.AuditEntry{CompanyID: "other", At: e.At, Actor: e.Actor,
				Action: e.Action, Target: e.Target, Outcome: "ok"}); err != nil {
				return err
			}
		}
		return nil
	})
	// seqs lists the Seq of acme's entries (i+1) for which keep(i) holds.
	seqs := func(keep func(i int) bool) []int64 {
		out := []int64{}
		for i := range 40 {
			if keep(i) {
				out = append(out, int64(i+1))
			}
		}
		return out
	}
	for _, tc := range []struct {
		name string
		q    consent.AuditQuery
		want []int64
	}{
		{"all", consent.AuditQuery{}, seqs(func(int) bool { return true })},
		{"verify. prefix", consent.AuditQuery{ActionPrefix: "verify."}, seqs(func(i int) bool { return i%6 < 2 })},
		{"verify prefix", consent.AuditQuery{ActionPrefix: "verify"}, seqs(func(i int) bool { return i%6 < 2 || i%6 == 4 })},
		{"whole action", consent.AuditQuery{ActionPrefix: consent.AuditRetainBatch}, seqs(func(i int) bool { return i%6 == 3 })},
		{"no such action", consent.AuditQuery{ActionPrefix: "verify.match.x"}, []int64{}},
		{"target", consent.AuditQuery{Target: "cert-1"}, seqs(func(i int) bool { return i%4 == 1 })},
		{"actor", consent.AuditQuery{Actor: "tok_2"}, seqs(func(i int) bool { return i%3 == 2 })},
		{"since", consent.AuditQuery{Since: t0.Add(30 * time.Minute)}, seqs(func(i int) bool { return i >= 30 })},
		{"until", consent.AuditQuery{Until: t0.Add(5 * time.Minute)}, seqs(func(i int) bool { return i < 5 })},
		{"range", consent.AuditQuery{Since: t0.Add(10*time.Minute - time.Microsecond), Until: t0.Add(12*time.Minute + time.Microsecond)},
			[]int64{11, 12, 13}},
		// Bounds are kept to the microsecond, as times are: a bound within
		// an entry's microsecond is that microsecond.
		{"since within a microsecond", consent.AuditQuery{Since: t0.Add(10*time.Minute + 500*time.Nanosecond)},
			seqs(func(i int) bool { return i >= 10 })},
		{"until within a microsecond", consent.AuditQuery{Until: t0.Add(10*time.Minute + 500*time.Nanosecond)},
			seqs(func(i int) bool { return i < 10 })},
		{"together", consent.AuditQuery{ActionPrefix: "verify.", Actor: "tok_0", Target: "cert-0"},
			seqs(func(i int) bool { return i%6 < 2 && i%3 == 0 && i%4 == 0 })},
		{"after", consent.AuditQuery{AfterSeq: 35}, []int64{36, 37, 38, 39, 40}},
		{"before", consent.AuditQuery{BeforeSeq: 4}, []int64{1, 2, 3}},
		{"between", consent.AuditQuery{AfterSeq: 10, BeforeSeq: 13}, []int64{11, 12}},
		// Sequence numbers are 64-bit: a bound past 2^31-1 is a bound.
		{"before past int32", consent.AuditQuery{AfterSeq: 37, BeforeSeq: 1 << 31}, []int64{38, 39, 40}},
		{"before the greatest", consent.AuditQuery{Newest: true, BeforeSeq: math.MaxInt64, Limit: 2}, []int64{40, 39}},
		{"after past int32", consent.AuditQuery{AfterSeq: 1 << 31}, []int64{}},
		{"limit", consent.AuditQuery{Limit: 3, ActionPrefix: "retain."}, []int64{3, 4, 9}},
		{"newest", consent.AuditQuery{Newest: true, Limit: 3}, []int64{40, 39, 38}},
		{"newest before", consent.AuditQuery{Newest: true, BeforeSeq: 20, Limit: 2, Actor: "tok_1"}, []int64{17, 14}},
		{"unknown company", consent.AuditQuery{CompanyID: "nobody"}, []int64{}},
	} {
		q := tc.q
		if q.CompanyID == "" {
			q.CompanyID = "acme"
		}
		if q.Limit == 0 {
			q.Limit = consent.MaxAuditPage
		}
		var got []int64
		for _, e := range auditEntries(t, s, q) {
			if e.CompanyID != q.CompanyID {
				t.Errorf("%s: entry of company %s", tc.name, e.CompanyID)
			}
			got = append(got, e.Seq)
		}
		wantSame(t, tc.want, got, opts, "%s: seqs", tc.name)
	}

	// Pages of 7, both ways, add up to the whole selection in order.
	for _, newest := range []bool{false, true} {
		want := seqs(func(i int) bool { return i%6 < 2 || i%6 == 4 })
		if newest {
			slices.Reverse(want)
		}
		var got []int64
		q := consent.AuditQuery{CompanyID: "acme", ActionPrefix: "verify", Limit: 7, Newest: newest}
		for pages := 0; ; pages++ {
			if pages > 10 {
				t.Fatalf("paging does not end")
			}
			page := auditEntries(t, s, q)
			for _, e := range page {
				got = append(got, e.Seq)
			}
			if len(page) < q.Limit {
				break
			}
			if newest {
				q.BeforeSeq = page[len(page)-1].Seq
			} else {
				q.AfterSeq = page[len(page)-1].Seq
			}
		}
		wantSame(t, want, got, exact, "paging (newest %v)", newest)
	}
}

// testConcurrentAudit: many goroutines appending to two companies at once,
// each append in a transaction with a debit as the domain does, some of
// those transactions failing after their append, give each company one
// gapless, unforked chain of the appends that were kept.
func testConcurrentAudit(t *testing.T, s consent.Store) {
	fixture(t, s)
	update(t, s, func(tx consent.Tx) error {
		for _, c := range []string{"acme", "other"} {
			if _, err := tx.Credit(ctx, entry("topup-"+c, c, wallet.TopUp, wallet.Dollar, t0)); err != nil {
				return err
			}
		}
		return nil
	})
	const workers, each = 20, 6
	var (
		errs []error
		kept = map[string]int{}
		want = map[string][]string{} // the targets of the kept entries of each company, in no order
	)
	concurrently(workers, func(w int, locked func(func())) {
		company := []string{"acme", "other"}[w%2]
		for i := range each {
			// Every third call fails after its append: its entry
			// and head move are undone, and the calls after it in
			// the same batch chain on from the head before it. Every
			// fourth reads the head after its first append (which
			// sees it) and appends a second entry.
			fail, reads := (w+i)%3 == 2, (w+i)%4 == 1
			var targets []string
			err := s.Update(ctx, func(tx consent.Tx) error {
				targets = nil
				if _, err := tx.Debit(ctx, entry(fmt.Sprintf("d-%d-%d", w, i), company, wallet.ExactMatch, wallet.Cent/100, t0)); err != nil {
					return err
				}
				e := &consent.AuditEntry{CompanyID: company, At: t0, Actor: fmt.Sprintf("w%d", w),
					Action: consent.AuditVerifyMatch, Target: fmt.Sprintf("%d-%d", w, i), Outcome: "ok"}
				err := tx.AppendAudit(ctx, e)
				targets = append(targets, e.Target)
				if err == nil && reads {
					var head *consent.AuditHead
					if head, err = tx.AuditHead(ctx, company); err == nil && (head.Seq != e.Seq || head.Hash != e.Hash) {
						err = fmt.Errorf("the head after an append is %d %x, want the entry's %d %x", head.Seq, head.Hash, e.Seq, e.Hash)
					}
					if err == nil {
						second := &consent.AuditEntry{CompanyID: company, At: t0, Actor: fmt.Sprintf("w%d", w),
							Action: consent.AuditVerifyMatch, Target: fmt.Sprintf("%d-%d-second", w, i), Outcome: "ok"}
						err = tx.AppendAudit(ctx, second)
						targets = append(targets, second.Target)
					}
				}
				if err == nil && fail {
					err = errBoom
				}
				return err
			})
			locked(func() {
				switch {
				case fail && !errors.Is(err, errBoom):
					errs = append(errs, fmt.Errorf("a failing call: %w, want boom", err))
				case !fail && err != nil:
					errs = append(errs, err)
				case !fail:
					kept[company] += len(targets)
					want[company] = append(want[company], targets...)
				}
			})
		}
	})
	for _, err := range errs {
		t.Errorf("concurrent append: %v", err)
	}
	for _, c := range []string{"acme", "other"} {
		checkChain(t, s, c, kept[c])
		var got []string
		for _, e := range auditEntries(t, s, consent.AuditQuery{CompanyID: c, Limit: consent.MaxAuditPage}) {
			got = append(got, e.Target)
		}
		slices.Sort(got)
		slices.Sort(want[c])
		if d := cmp.Diff(want[c], got); d != "" {
			t.Errorf("the targets in %s's chain (-kept calls' +chain's):\n%s", c, d)
		}
	}
}

// testAuditRollback: an append rolls back with its transaction, head
// included, and the next append takes the Seq it freed.
func testAuditRollback(t *testing.T, s consent.Store) {
	fixture(t, s)
	first := appendAudit(t, s, consent.AuditEntry{CompanyID: "acme", At: t0, Actor: "a", Action: "x.one", Outcome: "ok"})
	err := s.Update(ctx, func(tx consent.Tx) error {
		for range 3 {
			if err := tx.AppendAudit(ctx, &consent.AuditEntry{CompanyID: "acme", At: t0, Actor: "a", Action: "x.gone", Outcome: "ok"}); err != nil {
				return err
			}
		}
		return errBoom
	})
	if !errors.Is(err, errBoom) {
		t.Fatalf("Update = %v, want boom", err)
	}
	if h := auditHead(t, s, "acme"); h.Seq != 1 || h.Hash != first.Hash {
		t.Errorf("head after rollback = %d %s, want 1 %s", h.Seq, h.Hash, first.Hash)
	}
	second := appendAudit(t, s, consent.AuditEntry{CompanyID: "acme", At: t0, Actor: "a", Action: "x.two", Outcome: "ok"})
	if second.Seq != 2 || second.PrevHash != first.Hash {
		t.Errorf("append after rollback: Seq %d, linked %v; want 2, linked to entry 1", second.Seq, second.PrevHash == first.Hash)
	}
	if got := auditEntries(t, s, consent.AuditQuery{CompanyID: "acme", ActionPrefix: "x.gone", Limit: 10}); len(got) != 0 {
		t.Errorf("rolled-back entries are stored: %d", len(got))
	}
	checkChain(t, s, "acme", 2)
}

var errBulk = errors.New("boom")

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
		if e.Seq != int64(i+1) || e.Hash != audit.Hash(e) || (i > 0 && e.PrevHash != first[i-1].Hash) {
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
	wantSame(t, second, got, opts, "entries appended by AppendAudits, read back")
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

// testConcurrentAppendAudits: appends in one step and one by one, from
// many transactions at once, never fork a company's chain.
func testConcurrentAppendAudits(t *testing.T, s consent.Store) {
	fixture(t, s)
	const workers, each, size = 8, 4, 10
	var (
		errs []error
	)
	concurrently(workers, func(w int, locked func(func())) {
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
				locked(func() {
					errs = append(errs, err)
				})
			}
		}
	})
	for _, err := range errs {
		t.Errorf("concurrent append: %v", err)
	}
	// Per company: half the workers append one at a time, half ten at a time.
	n := workers / 4 * each * (1 + size)
	checkChain(t, s, "acme", n)
	checkChain(t, s, "other", n)
}

// AuditTamperer changes a store's audit log behind its back, as someone
// with access to its database could (for RunAuditTamper): it bypasses
// whatever the store does to keep the log append-only.
type AuditTamperer interface {
	// ReplaceAudit overwrites the stored fields of the company's entry seq
	// with e's, as they are: Hash and PrevHash are not recomputed, and a
	// changed CompanyID or Seq moves the entry.
	ReplaceAudit(t testing.TB, companyID string, seq int64, e *consent.AuditEntry)
	// DeleteAudit deletes the company's entry seq, leaving the head alone.
	DeleteAudit(t testing.TB, companyID string, seq int64)
}

// RunAuditTamper checks that audit.VerifyChain finds every
// edit of any field of an entry, and the deletion of a first, middle or last
// entry, in the store's own tables. open returns a new, empty, migrated
// store and a tamperer of it; the cases run in parallel, each on a store
// of its own, so open must be safe to call from parallel tests.
func RunAuditTamper(t *testing.T, open func(tb testing.TB) (consent.Store, AuditTamperer)) {
	// Each case builds acme's chain of 5 entries and other's of 2, tampers,
	// and expects audit.VerifyChain to name acme's entry wantSeq (0: intact).
	type tc struct {
		name    string
		tamper  func(t testing.TB, tm AuditTamperer, chain []*consent.AuditEntry)
		wantSeq int64
	}
	edit := func(seq int64, fn func(e *consent.AuditEntry)) func(testing.TB, AuditTamperer, []*consent.AuditEntry) {
		return func(t testing.TB, tm AuditTamperer, chain []*consent.AuditEntry) {
			e := *chain[seq-1]
			fn(&e)
			tm.ReplaceAudit(t, "acme", seq, &e)
		}
	}
	rehash := func(fn func(e *consent.AuditEntry)) func(e *consent.AuditEntry) {
		return func(e *consent.AuditEntry) { fn(e); e.Hash = audit.Hash(e) }
	}
	del := func(seq int64) func(testing.TB, AuditTamperer, []*consent.AuditEntry) {
		return func(t testing.TB, tm AuditTamperer, _ []*consent.AuditEntry) { tm.DeleteAudit(t, "acme", seq) }
	}
	cases := []tc{
		{"intact", func(testing.TB, AuditTamperer, []*consent.AuditEntry) {}, 0},
		{"edit at", edit(3, func(e *consent.AuditEntry) { e.At = e.At.Add(time.Microsecond) }), 3},
		{"edit actor", edit(3, func(e *consent.AuditEntry) { e.Actor = "operator" }), 3},
		{"edit action", edit(3, func(e *consent.AuditEntry) { e.Action = "verify.partial_match" }), 3},
		{"edit target", edit(3, func(e *consent.AuditEntry) { e.Target = "cert-x" }), 3},
		{"edit outcome", edit(3, func(e *consent.AuditEntry) { e.Outcome = "ok" }), 3},
		{"edit request id", edit(3, func(e *consent.AuditEntry) { e.RequestID = "req-forged" }), 3},
		{"edit detail", edit(3, func(e *consent.AuditEntry) { e.Detail = `{"charged":0}` }), 3},
		{"edit prev hash", edit(3, func(e *consent.AuditEntry) { e.PrevHash[0] ^= 1 }), 3},
		{"edit hash", edit(3, func(e *consent.AuditEntry) { e.Hash[31] ^= 1 }), 3},
		{"edit first", edit(1, func(e *consent.AuditEntry) { e.Actor = "someone" }), 1},
		{"edit last", edit(5, func(e *consent.AuditEntry) { e.Detail = "" }), 5},
		{"renumber", edit(3, func(e *consent.AuditEntry) { e.Seq = 99 }), 3},
		{"move to another company", edit(3, func(e *consent.AuditEntry) { e.CompanyID = "other" }), 3},
		{"edit and rehash", edit(3, rehash(func(e *consent.AuditEntry) { e.Outcome = "ok" })), 4},
		{"edit and rehash last", edit(5, rehash(func(e *consent.AuditEntry) { e.Outcome = "ok" })), 5},
		{"delete first", del(1), 1},
		{"delete middle", del(3), 3},
		{"delete last", del(5), 5},
		{"delete two last", func(t testing.TB, tm AuditTamperer, _ []*consent.AuditEntry) {
			tm.DeleteAudit(t, "acme", 5)
			tm.DeleteAudit(t, "acme", 4)
		}, 4},
	}
	for _, c := range cases {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			t.Parallel() // a store of its own
			s, tm := open(t)
			fixture(t, s)
			// The entries consentkit.Service.Audit would append for these
			// outcomes, seeded through the store alone.
			outcomes := []error{nil, consent.ErrNotFound, &wallet.InsufficientFundsError{}, nil, consent.ErrOptedOut}
			for i, err := range outcomes {
				outcome := consent.AuditOK
				if err != nil {
					outcome = string(consent.ErrorCode(err))
				}
				appendAudit(t, s, consent.AuditEntry{CompanyID: "acme", At: t0, Actor: "tok_x", Action: consent.AuditVerifyMatch,
					Target: fmt.Sprintf("cert-%d", i), Outcome: outcome, RequestID: fmt.Sprintf("req-%d", i), Detail: fmt.Sprintf(`{"i":%d}`, i)})
			}
			for range 2 {
				appendAudit(t, s, consent.AuditEntry{CompanyID: "other", At: t0, Actor: consent.ActorOperator,
					Action: consent.AuditWalletCredit, Outcome: consent.AuditOK})
			}
			chain := auditEntries(t, s, consent.AuditQuery{CompanyID: "acme", Limit: 10})
			if len(chain) != 5 {
				t.Fatalf("acme has %d entries, want 5", len(chain))
			}
			c.tamper(t, tm, chain)

			n, err := audit.VerifyChain(ctx, s, "acme")
			var ce *audit.ChainError
			switch {
			case c.wantSeq == 0 && (err != nil || n != 5):
				t.Errorf("VerifyChain = %d, %v; want 5 entries, intact", n, err)
			case c.wantSeq == 0:
			case !errors.As(err, &ce):
				t.Errorf("VerifyChain = %d, %v; want an *audit.ChainError at entry %d", n, err, c.wantSeq)
			case ce.Seq != c.wantSeq || ce.CompanyID != "acme":
				t.Errorf("VerifyChain names %s entry %d (%v), want acme entry %d", ce.CompanyID, ce.Seq, err, c.wantSeq)
			}

			// In bounded runs, each resuming where the last stopped, the
			// same entry is found broken.
			for _, limit := range []int{1, 2} {
				var checked int64
				from := int64(1)
				for {
					run, err := audit.CheckChain(ctx, s, "acme", from, limit)
					checked += run.Checked
					switch {
					case run.Checked > int64(limit):
						t.Fatalf("limit %d: CheckChain checked %d entries", limit, run.Checked)
					case err != nil && (!errors.As(err, &ce) || ce.Seq != c.wantSeq):
						t.Errorf("limit %d: CheckChain from %d = %v; want entry %d broken", limit, from, err, c.wantSeq)
					case err == nil && run.Next == 0 && (c.wantSeq != 0 || checked != 5):
						t.Errorf("limit %d: the runs checked %d entries and found the chain intact; want entry %d broken", limit, checked, c.wantSeq)
					case err == nil && run.Next != 0:
						from = run.Next
						continue
					}
					break
				}
			}

			// All companies at once: acme as above; other is intact unless
			// an entry was moved into it.
			_, err = audit.VerifyChains(ctx, s)
			broken := map[string]bool{}
			for _, e := range unjoin(err) {
				if errors.As(e, &ce) {
					broken[ce.CompanyID] = true
				} else {
					t.Errorf("VerifyChains: %v", e)
				}
			}
			want := map[string]bool{}
			if c.wantSeq != 0 {
				want["acme"] = true
			}
			if c.name == "move to another company" {
				want["other"] = true
			}
			wantSame(t, want, broken, opts, "VerifyChains: broken chains")
		})
	}
}

// unjoin returns the errors joined in err (errors.Join), or err alone.
func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
