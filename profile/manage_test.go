package profile_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/profile"
)

// acme is a Service on the memory store with one company, acme.
func acme(t *testing.T) *consentkit.Service {
	t.Helper()
	svc, err := consentkit.NewService(teststore.Memory(t), consentkit.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateCompany(context.Background(), consentkit.CompanyParams{ID: "acme", Name: "Acme"}); err != nil {
		t.Fatal(err)
	}
	return svc
}

// A company holds at most consent.MaxProfiles profiles; replacing one at
// the limit is still allowed. An audit entry holds the rules when they
// are short, and only their SHA-256 when they are not.
func TestProfilesLimitAndAudit(t *testing.T) {
	ctx := context.Background()
	svc := acme(t)
	m := profile.Profiles{Service: svc}
	rules := profile.Rules{LeadAge: &profile.LeadAgeRule{MaxSeconds: 60}}
	for i := range consent.MaxProfiles {
		if _, err := m.Put(ctx, "acme", fmt.Sprintf("p%02d", i), rules); err != nil {
			t.Fatalf("profile %d: %v", i, err)
		}
	}
	if _, err := m.Put(ctx, "acme", "one-more", rules); consent.ErrorCode(err) != consent.Invalid {
		t.Errorf("a profile past the limit: %v, want Invalid", err)
	}
	long := profile.Rules{ApprovedLanguage: &profile.LanguageRule{Texts: []string{strings.Repeat("I agree. ", 1000)}}}
	if _, err := m.Put(ctx, "acme", "p00", long); err != nil {
		t.Errorf("replacing a profile at the limit: %v", err)
	}
	list, err := m.List(ctx, "acme")
	if err != nil || len(list) != consent.MaxProfiles || list[0].Rules.ApprovedLanguage == nil {
		t.Errorf("List: %d profiles, %v; want %d, p00 replaced", len(list), err, consent.MaxProfiles)
	}
	entries, err := svc.AuditLog(ctx, consent.AuditQuery{CompanyID: "acme", Target: "p00"})
	if err != nil || len(entries) != 2 {
		t.Fatalf("audit of p00: %v, %v", entries, err)
	}
	for i, want := range []bool{true, false} { // created, then replaced with long rules
		var d map[string]any
		if err := json.Unmarshal([]byte(entries[i].Detail), &d); err != nil {
			t.Fatal(err)
		}
		if d["created"] != want || (d["rules"] != nil) != want || len(d["rules_sha256"].(string)) != 64 {
			t.Errorf("entry %d detail %v: want created %v, rules %v, and their SHA-256", i, d, want, want)
		}
	}
	if _, err := m.List(ctx, "nobody"); consent.ErrorCode(err) != consent.NotFound {
		t.Errorf("List(nobody): %v, want NotFound", err)
	}
}

// Rules within Check's bounds whose JSON is past what a store keeps
// (encoding/json writes '<', '>' and '&' as six bytes each) are refused
// with the reason, before the store; a name of dots alone is refused,
// since a URL path cannot name it ("." and ".." are path steps).
func TestPutRefusals(t *testing.T) {
	ctx := context.Background()
	svc := acme(t)
	m := profile.Profiles{Service: svc}
	texts := make([]string, profile.MaxProfileTexts)
	for i := range texts {
		texts[i] = strings.Repeat("Terms & <b>", profile.MaxApprovedText/11)
	}
	big := profile.Rules{ApprovedLanguage: &profile.LanguageRule{Texts: texts}}
	if err := big.Check(); err != nil {
		t.Fatalf("Check: %v", err)
	}
	if _, err := m.Put(ctx, "acme", "big", big); consent.ErrorCode(err) != consent.Invalid || !strings.Contains(err.Error(), "bytes as JSON") {
		t.Errorf("Put of rules past the store's bound as JSON: %v, want Invalid saying so", err)
	}
	rules := profile.Rules{LeadAge: &profile.LeadAgeRule{MaxSeconds: 60}}
	for _, name := range []string{".", "..", "..."} {
		if _, err := m.Put(ctx, "acme", name, rules); consent.ErrorCode(err) != consent.Invalid {
			t.Errorf("Put of a profile named %q: %v, want Invalid", name, err)
		}
	}
	if _, err := m.Put(ctx, "acme", ".v2.", rules); err != nil {
		t.Errorf("Put of a profile named %q: %v", ".v2.", err)
	}
}

// A put that a store runs again, after another put of the same name got
// in first, is audited as the replacement it is, and keeps that profile's
// creation time: nothing of its first, rolled-back run.
func TestPutRunAgain(t *testing.T) {
	ctx := context.Background()
	st := &teststore.Rerun{Store: teststore.Memory(t)}
	svc, err := consentkit.NewService(st, consentkit.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme"}); err != nil {
		t.Fatal(err)
	}
	m := profile.Profiles{Service: svc}
	rules := profile.Rules{LeadAge: &profile.LeadAgeRule{MaxSeconds: 60}}
	var first *profile.Profile
	st.Between = func() {
		if first, err = m.Put(ctx, "acme", "strict", rules); err != nil {
			t.Fatal(err)
		}
	}
	second, err := m.Put(ctx, "acme", "strict", rules)
	if err != nil {
		t.Fatal(err)
	}
	if !second.CreatedAt.Equal(first.CreatedAt) {
		t.Errorf("created %v, the profile it replaced %v", second.CreatedAt, first.CreatedAt)
	}
	entries, err := svc.AuditLog(ctx, consent.AuditQuery{CompanyID: "acme", Target: "strict"})
	if err != nil {
		t.Fatal(err)
	}
	var created []bool
	for _, e := range entries {
		if e.Action == consent.AuditProfilePut {
			var d struct{ Created bool }
			if err := json.Unmarshal([]byte(e.Detail), &d); err != nil {
				t.Fatal(err)
			}
			created = append(created, d.Created)
		}
	}
	if len(created) != 2 || created[0] == created[1] {
		t.Errorf("the two puts' audit entries say created %v; want one created, one replaced", created)
	}
}
