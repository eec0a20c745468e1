package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/consentkit/consentkit/consent"
)

// fullProfile returns a profile of the company holding every rule, as
// JSON whose spacing, order, escapes and characters a store must keep
// byte for byte.
func fullProfile(company, name string, at time.Time) *consent.Profile {
	rules := `{"approved_language": {"texts":["I agree to {{*}} calls from Acme.","Ja, ich stimme zu – 🙂\tbitte"]},
  "brand_names":{"names":["Acme"],"on_miss":"warn"}, "legibility":{"min_font_size_px":12.5,"min_contrast":4.5},
  "opt_in_methods":{"allowed":["manual"]},"attestation":{"on_miss":"fail"},"lead_age":{"max_seconds":86400},
  "verdicts":{"refused":["bot","suspect"]}, "\u00e9":1}`
	return &consent.Profile{CompanyID: company, Name: name, CreatedAt: at, UpdatedAt: at, Rules: []byte(rules)}
}

// putProfiles puts each of ps in one transaction.
func putProfiles(t *testing.T, s consent.Store, ps ...*consent.Profile) {
	t.Helper()
	update(t, s, func(tx consent.Tx) error {
		for _, p := range ps {
			if err := tx.PutProfile(ctx, p); err != nil {
				return err
			}
		}
		return nil
	})
}

// wantProfiles checks that the company's profiles are want, in its order,
// listed by Profiles and read one by one by Profile.
func wantProfiles(t *testing.T, s consent.Store, company string, want ...*consent.Profile) {
	t.Helper()
	view(t, s, func(tx consent.Tx) error {
		list, err := tx.Profiles(ctx, company)
		if err != nil || list == nil {
			t.Errorf("Profiles(%s) = %v, %v; want a slice", company, list, err)
		}
		wantSame(t, want, list, opts, "Profiles(%s)", company)
		for _, p := range want {
			got, err := tx.Profile(ctx, company, p.Name)
			if err != nil {
				t.Errorf("Profile(%s, %s): %v", company, p.Name, err)
			}
			wantSame(t, p, got, opts, "Profile(%s, %s)", company, p.Name)
		}
		return nil
	})
}

func testProfile(t *testing.T, s consent.Store) {
	fixture(t, s)
	full := fullProfile("acme", "strict", t0)
	lean := &consent.Profile{CompanyID: "acme", Name: "B-lean", CreatedAt: t0, UpdatedAt: t0,
		Rules: []byte(`{"lead_age":{"max_seconds":60}}`)}
	theirs := fullProfile("other", "strict", t0.Add(time.Hour))
	putProfiles(t, s, full, theirs, lean)
	wantProfiles(t, s, "acme", lean, full) // byte order: upper case first
	wantProfiles(t, s, "other", theirs)
	wantProfiles(t, s, "nobody")
	view(t, s, func(tx consent.Tx) error {
		_, err := tx.Profile(ctx, "acme", "none")
		wantCode(t, "Profile(none)", err, consent.NotFound)
		_, err = tx.Profile(ctx, "acme", "STRICT")
		wantCode(t, "Profile(STRICT): names are compared exactly", err, consent.NotFound)
		return nil
	})

	// Put again replaces every field, in the company's profile only.
	replaced := &consent.Profile{CompanyID: "acme", Name: "strict", CreatedAt: t0, UpdatedAt: t0.Add(2 * time.Hour),
		Rules: []byte(`{"opt_in_methods":{"allowed":["pre_selected"]}}`)}
	putProfiles(t, s, replaced)
	wantProfiles(t, s, "acme", lean, replaced)
	wantProfiles(t, s, "other", theirs)
	err := s.Update(ctx, func(tx consent.Tx) error { return tx.PutProfile(ctx, fullProfile("nobody", "x", t0)) })
	wantCode(t, "PutProfile(unknown company)", err, consent.NotFound)

	// Delete, only through the profile's company.
	err = s.Update(ctx, func(tx consent.Tx) error { return tx.DeleteProfile(ctx, "acme", "none") })
	wantCode(t, "DeleteProfile(none)", err, consent.NotFound)
	update(t, s, func(tx consent.Tx) error { return tx.DeleteProfile(ctx, "acme", "strict") })
	wantProfiles(t, s, "acme", lean)
	wantProfiles(t, s, "other", theirs)
}

func testProfileRollsBack(t *testing.T, s consent.Store) {
	fixture(t, s)
	kept := fullProfile("acme", "kept", t0)
	putProfiles(t, s, kept)
	err := s.Update(ctx, func(tx consent.Tx) error {
		changed := &consent.Profile{CompanyID: "acme", Name: "kept", CreatedAt: t0, UpdatedAt: t0,
			Rules: []byte(`{"lead_age":{"max_seconds":1}}`)}
		err := errors.Join(tx.PutProfile(ctx, fullProfile("acme", "new", t0)), tx.PutProfile(ctx, changed),
			tx.DeleteProfile(ctx, "acme", "kept"))
		if err != nil {
			return err
		}
		return errBoom
	})
	if !errors.Is(err, errBoom) {
		t.Fatalf("Update = %v, want boom", err)
	}
	wantProfiles(t, s, "acme", kept)
}
