package behind

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/consentkit/consentkit/audit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/store/internal/group"
	"github.com/consentkit/consentkit/wallet"
)

var ctx = context.Background()

// source is a Source over fixed balances, counting its loads.
type source struct {
	balances map[string]wallet.Amount
	loads    int
}

func (s *source) LoadBalance(_ context.Context, company string) (wallet.Amount, error) {
	s.loads++
	bal, ok := s.balances[company]
	if !ok {
		return 0, consent.Errorf(consent.NotFound, "company not found")
	}
	return bal, nil
}

func (s *source) LoadHead(_ context.Context, company string) (consent.AuditHead, error) {
	s.loads++
	if _, ok := s.balances[company]; !ok {
		return consent.AuditHead{}, consent.Errorf(consent.NotFound, "company not found")
	}
	return consent.AuditHead{CompanyID: company, Seq: 7, Hash: consent.Digest{7}}, nil
}

func entry(id, company string, amount wallet.Amount) *wallet.Entry {
	return &wallet.Entry{ID: id, CompanyID: company, Kind: wallet.ExactMatch, Amount: amount, CreatedAt: time.Unix(0, 0).UTC()}
}

func TestPost(t *testing.T) {
	src := &source{balances: map[string]wallet.Amount{"acme": 10}}
	var b Batch
	if b.Shared() {
		t.Error("a batch whose call began without a savepoint is shared")
	}
	b.BeginCall()
	if !b.Shared() {
		t.Error("a batch whose call began with a savepoint is not shared")
	}
	if bal, err := b.Post(ctx, src, []*wallet.Entry{entry("a", "acme", 4)}, -1); bal != 6 || err != nil {
		t.Fatalf("debit of 4 from 10 = %v, %v", bal, err)
	}
	b.BeginCall()
	if bal, err := b.Post(ctx, src, []*wallet.Entry{entry("b", "acme", 5)}, 1); bal != 11 || err != nil {
		t.Fatalf("credit of 5 to 6 = %v, %v", bal, err)
	}
	b.BeginCall()
	var short *wallet.InsufficientFundsError
	if _, err := b.Post(ctx, src, []*wallet.Entry{entry("c", "acme", 6), entry("d", "acme", 6)}, -1); !errors.As(err, &short) ||
		short.Required != 12 || short.Balance != 11 {
		t.Errorf("debit of 12 from 11: %v", err)
	}
	// Entries of two companies, or of an amount of 0 or less, never reach
	// a store: the checked Tx refuses them (consent's TestCheckedDebitAll
	// and TestCheckedNonPositiveAmounts).
	for _, tt := range []struct {
		what    string
		entries []*wallet.Entry
		code    consent.Code
	}{
		{"an id the batch holds", []*wallet.Entry{entry("a", "acme", 1)}, consent.Conflict},
		{"an id twice", []*wallet.Entry{entry("e", "acme", 1), entry("e", "acme", 1)}, consent.Conflict},
		{"no entries", nil, consent.Invalid},
		{"an unknown company", []*wallet.Entry{entry("i", "other", 1)}, consent.NotFound},
	} {
		if _, err := b.Post(ctx, src, tt.entries, -1); consent.ErrorCode(err) != tt.code {
			t.Errorf("%s: %v, want %s", tt.what, err, tt.code)
		}
	}
	if bal, err := b.Balance(ctx, src, "acme"); bal != 11 || err != nil {
		t.Errorf("Balance = %v, %v after the refusals; want 11", bal, err)
	}
	if src.loads != 2 { // acme once, then the unknown company
		t.Errorf("%d loads, want 2: a balance is read once a batch", src.loads)
	}
	got := b.Ledger()
	if len(got) != 2 || got[0].ID != "a" || got[0].Call != 0 || got[1].ID != "b" || got[1].Call != 1 {
		t.Errorf("ledger %+v, want a (call 0) and b (call 1)", got)
	}
	cos, bals := b.Balances()
	if len(cos) != 1 || cos[0] != "acme" || bals[0] != 11 {
		t.Errorf("Balances = %v %v", cos, bals)
	}
}

// Undoing a call puts back what the buffer held when it began, whatever
// the call wrote after it; the calls after it keep counting; and Written
// keeps the balances and heads.
func TestUndoCall(t *testing.T) {
	src := &source{balances: map[string]wallet.Amount{"acme": 10, "other": 3}}
	var b Batch
	b.BeginCall() // call 0
	if _, err := b.Post(ctx, src, []*wallet.Entry{entry("a", "acme", 1)}, -1); err != nil {
		t.Fatal(err)
	}
	e1 := &consent.AuditEntry{CompanyID: "acme", Action: "verify.match", Outcome: "ok"}
	if err := b.Append(ctx, src, e1); err != nil {
		t.Fatal(err)
	}
	if e1.Seq != 8 || e1.PrevHash != (consent.Digest{7}) || e1.Hash != audit.Hash(e1) {
		t.Errorf("appended as seq %d after %x", e1.Seq, e1.PrevHash[:2])
	}
	b.BeginCall() // call 1, undone
	if _, err := b.Post(ctx, src, []*wallet.Entry{entry("b", "acme", 2)}, -1); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Post(ctx, src, []*wallet.Entry{entry("c", "other", 3)}, -1); err != nil {
		t.Fatal(err)
	}
	e2 := &consent.AuditEntry{CompanyID: "acme", Action: "verify.match", Outcome: "ok"}
	if err := b.Append(ctx, src, e2); err != nil {
		t.Fatal(err)
	}
	if e2.Seq != 9 || e2.PrevHash != e1.Hash {
		t.Errorf("second entry: seq %d, not chained to the first", e2.Seq)
	}
	b.UndoCall()
	if bal, _ := b.Balance(ctx, src, "acme"); bal != 9 {
		t.Errorf("balance %v after undoing the call, want 9", bal)
	}
	if len(b.Ledger()) != 1 || len(b.Audit()) != 1 {
		t.Errorf("%d entries and %d audit entries after undoing the call, want 1 and 1", len(b.Ledger()), len(b.Audit()))
	}
	if heads := b.Heads(); len(heads) != 1 || heads[0].Seq != 8 {
		t.Errorf("heads %+v after undoing the call, want acme at 8", heads)
	}
	b.BeginCall() // call 2
	e3 := &consent.AuditEntry{CompanyID: "acme", Action: "verify.match", Outcome: "ok"}
	if err := b.Append(ctx, src, e3); err != nil || e3.Seq != 9 || e3.PrevHash != e1.Hash {
		t.Errorf("after undoing, the next entry is seq %d (%v), want 9 after the first", e3.Seq, err)
	}
	if _, err := b.Post(ctx, src, []*wallet.Entry{entry("d", "acme", 1)}, -1); err != nil {
		t.Fatal(err)
	}
	if l := b.Ledger(); len(l) != 2 || l[0].Call != 0 || l[1].Call != 2 {
		t.Errorf("ledger %+v, want calls 0 and 2", l)
	}
	b.Written()
	if b.Pending() {
		t.Error("pending after Written")
	}
	if bal, _ := b.Balance(ctx, src, "acme"); bal != 8 || len(b.Heads()) != 1 {
		t.Errorf("Written dropped the balances or heads: %v, %d heads", bal, len(b.Heads()))
	}
}

func TestTaken(t *testing.T) {
	entries := []Entry{{Entry: *entry("a", "acme", 1), Call: 0}, {Entry: *entry("b", "acme", 1), Call: 3}}
	if err := Taken(entries, func(string) bool { return true }); err != nil {
		t.Errorf("all written: %v", err)
	}
	var me *group.MemberError
	err := Taken(entries, func(id string) bool { return id != "b" })
	if !errors.As(err, &me) || me.Index != 3 || consent.ErrorCode(err) != consent.Conflict {
		t.Errorf("b taken: %v, want call 3's conflict", err)
	}
}
