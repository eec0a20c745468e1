package verify_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/profile"
	"github.com/consentkit/consentkit/store/memstore"
	"github.com/consentkit/consentkit/verify"
	"github.com/consentkit/consentkit/wallet"
)

// profileReads counts where a verification reads a profile: in a
// read-only transaction or in a write transaction. after, when set, runs
// once after the first read-only transaction that read one.
type profileReads struct {
	consent.Store
	inView, inUpdate int
	after            func()
}

func (p *profileReads) View(ctx context.Context, fn func(consent.Tx) error) error {
	read := false
	err := p.Store.View(ctx, func(tx consent.Tx) error { return fn(profileTx{tx, &p.inView, &read}) })
	if read && p.after != nil {
		after := p.after
		p.after = nil
		after()
	}
	return err
}

func (p *profileReads) Update(ctx context.Context, fn func(consent.Tx) error) error {
	var read bool
	return p.Store.Update(ctx, func(tx consent.Tx) error { return fn(profileTx{tx, &p.inUpdate, &read}) })
}

type profileTx struct {
	consent.Tx
	n    *int
	read *bool
}

func (t profileTx) Profile(ctx context.Context, companyID, name string) (*consent.Profile, error) {
	*t.n++
	*t.read = true
	return t.Tx.Profile(ctx, companyID, name)
}

// textEnv is a service with a certificate of one short consent and one of
// 20 consents of 60 KiB, and a profile with text rules.
func textEnv(t *testing.T, st consent.Store, rules profile.Rules) *consentkit.Service {
	t.Helper()
	svc, err := consentkit.NewService(st, consentkit.Config{})
	if err != nil {
		t.Fatal(err)
	}
	long := make([]consent.Record, 20)
	for i := range long {
		long[i] = consent.Record{Text: "I agree to be called by Acme. " + strings.Repeat("Terms apply. ", 5000)}
	}
	for _, step := range []func() error{
		func() error {
			_, err := svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme"})
			return err
		},
		func() error {
			_, err := svc.AddProperty(ctx, consentkit.PropertyParams{ID: "web", CompanyID: "acme", Name: "Form"})
			return err
		},
		func() error { _, err := svc.TopUp(ctx, "acme", wallet.Dollar, ""); return err },
		func() error {
			_, err := svc.StartSession(ctx, consentkit.SessionParams{ID: "s1", CompanyID: "acme", PropertyID: "web"})
			return err
		},
		func() error {
			_, err := svc.IssueCertificate(ctx, consentkit.CertificateParams{ID: "short", CompanyID: "acme", PropertyID: "web", SessionID: "s1",
				Records: []consent.Record{{Text: "I agree to be called by Acme."}}})
			return err
		},
		func() error {
			_, err := svc.IssueCertificate(ctx, consentkit.CertificateParams{ID: "long", CompanyID: "acme", PropertyID: "web", SessionID: "s1", Records: long})
			return err
		},
		func() error { _, err := profile.Profiles{Service: svc}.Put(ctx, "acme", "texts", rules); return err },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	return svc
}

// A grade whose text rules read more of the consents than a write
// transaction may hold the store for (about 4 MiB) is made before it, in
// a read-only transaction: the answer, the charge and the audit entry are
// those of a grade made inside. A short certificate is graded inside.
func TestLargeTextGradedBeforeTheTransaction(t *testing.T) {
	rules := profile.Rules{
		ApprovedLanguage: &profile.LanguageRule{Texts: []string{"{{*}} called by Acme. {{*}}", "Nothing like it {{*}}"}},
		BrandNames:       &profile.BrandNamesRule{Names: []string{"Acme", "Zeta"}, Miss: profile.Miss{OnMiss: profile.MissWarn}},
	}
	st := &profileReads{Store: memstore.New()}
	svc := textEnv(t, st, rules)
	v := verify.New(svc)
	for _, c := range []struct {
		id     string
		inView int // profile reads in a read-only transaction
	}{{"short", 0}, {"long", 1}} {
		st.inView, st.inUpdate = 0, 0
		before, err := svc.Balance(ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}
		res, err := v.Match(ctx, "acme", verify.MatchRequest{CertificateID: c.id, CompanyID: "acme", Consent: "x", Profile: "texts"})
		if err != nil {
			t.Fatalf("%s: %v", c.id, err)
		}
		cert, err := svc.CompanyCertificate(ctx, "acme", c.id)
		if err != nil {
			t.Fatal(err)
		}
		want := profile.Grade(&rules, verify.Facts(cert, svc.Now(), nil, nil))
		if diff := cmp.Diff(&want, res.Audit); diff != "" {
			t.Errorf("%s: grade (-made inside +answered):\n%s", c.id, diff)
		}
		after, err := svc.Balance(ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}
		if st.inView != c.inView || before-after != wallet.DefaultPrices().ExactMatch {
			t.Errorf("%s: profile read in %d read-only transactions (want %d), charged %s", c.id, st.inView, c.inView, before-after)
		}
	}
}

// The profile replaced between the grade made before the transaction and
// the transaction: the answer is graded by the rules the transaction
// reads.
func TestLargeTextGradedByTheRulesRead(t *testing.T) {
	// Five names over the long certificate's 1.2 MB: graded before.
	first := profile.Rules{BrandNames: &profile.BrandNamesRule{Names: []string{"Acme", "Terms", "apply", "called", "agree"}}}
	then := profile.Rules{BrandNames: &profile.BrandNamesRule{Names: []string{"Zeta", "Terms", "apply", "called", "agree"}}}
	st := &profileReads{Store: memstore.New()}
	svc := textEnv(t, st, first)
	st.after = func() {
		if _, err := (profile.Profiles{Service: svc}).Put(ctx, "acme", "texts", then); err != nil {
			t.Error(err)
		}
	}
	res, err := verify.New(svc).Match(ctx, "acme", verify.MatchRequest{CertificateID: "long", CompanyID: "acme", Consent: "x", Profile: "texts"})
	if err != nil {
		t.Fatal(err)
	}
	if st.after != nil || res.Audit == nil || res.Audit.Result != profile.Fail || len(res.Audit.Rules) != 1 ||
		!cmp.Equal(res.Audit.Rules[0].Found.Missing, []string{"Zeta"}) {
		t.Errorf("graded %+v; want fail, Zeta missing, by the rules replaced before the transaction", res.Audit)
	}
}

// A profile whose text rules, reading much, change after each grade made
// before the transaction is never graded inside a write transaction: the
// verification asks for a new grade, up to its last run, which refuses it
// (409, uncharged) rather than grade there.
func TestLargeTextRulesChangingRefused(t *testing.T) {
	rules := func(i int) profile.Rules {
		return profile.Rules{BrandNames: &profile.BrandNamesRule{Names: []string{"Acme", "Terms", "apply", "called", strings.Repeat("z", i+1)}}}
	}
	st := &profileReads{Store: memstore.New()}
	svc := textEnv(t, st, rules(0))
	changes := 0
	var change func()
	change = func() {
		changes++
		if _, err := (profile.Profiles{Service: svc}).Put(ctx, "acme", "texts", rules(changes)); err != nil {
			t.Error(err)
		}
		st.after = change // after the next grade too
	}
	st.after = change
	before, err := svc.Balance(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	st.inView, st.inUpdate = 0, 0
	_, err = verify.New(svc).Match(ctx, "acme", verify.MatchRequest{CertificateID: "long", CompanyID: "acme", Consent: "x", Profile: "texts"})
	if consent.ErrorCode(err) != consent.Conflict {
		t.Errorf("a verification whose profile changed under each grade: %v, want a conflict", err)
	}
	after, _ := svc.Balance(ctx, "acme")
	if after != before {
		t.Errorf("the balance went from %v to %v: the refusal was charged", before, after)
	}
	if st.inView != 2 || changes != 2 {
		t.Errorf("profile read in %d read-only transactions, changed %d times; want 2 grades before the transaction, each followed by a change", st.inView, changes)
	}
}
