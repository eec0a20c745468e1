package signed_test

import (
	"strings"
	"testing"
	"time"

	"github.com/consentkit/consentkit/signed"
)

// zeroSpelled is Go's zero time written out in the canonical encoding's
// layout: the encoding writes that time as "" (or leaves revoked_before
// out), so no signature covers this spelling.
const zeroSpelled = "0001-01-01T00:00:00.000000Z"

// A time the signed content shows as the zero time written out is refused,
// and no signature of content without that time covers it: revoked_before,
// created_at and opt_in_at, in either version. Each time has one spelling.
func TestZeroTimeSpelledRefused(t *testing.T) {
	key, err := signed.NewSigningKey("key-1")
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		v    string
		none func(d *signed.Document)
		show func(c *signed.Content)
	}{
		"revoked_before": {signed.Version2, func(d *signed.Document) { d.RevokedBefore = time.Time{} },
			func(c *signed.Content) { c.RevokedBefore = zeroSpelled }},
		"created_at v2": {signed.Version2, func(d *signed.Document) { d.CreatedAt = time.Time{} },
			func(c *signed.Content) { c.CreatedAt = zeroSpelled }},
		"opt_in_at v2": {signed.Version2, func(d *signed.Document) { d.Consents[1].OptInAt = time.Time{} },
			func(c *signed.Content) { c.Consents[1].OptInAt = zeroSpelled }},
		"created_at v1": {signed.Version1, func(d *signed.Document) { d.CreatedAt = time.Time{} },
			func(c *signed.Content) { c.CreatedAt = zeroSpelled }},
		"opt_in_at v1": {signed.Version1, func(d *signed.Document) { d.Consents[0].OptInAt = time.Time{} },
			func(c *signed.Content) { c.Consents[0].OptInAt = zeroSpelled }},
	} {
		d := documentV2()
		if c.v == signed.Version1 {
			d = document()
		}
		c.none(&d)
		sig := key.Sign(&d)
		content := d.Content()
		if err := signed.Verify(&content, key.Public(), sig); err != nil {
			t.Fatalf("%s: the content as signed: %v", name, err)
		}
		c.show(&content)
		if _, err := content.Document(); err == nil || !strings.Contains(err.Error(), "not a time of the canonical encoding") {
			t.Errorf("%s %s: Content.Document: %v; want it refused", name, zeroSpelled, err)
		}
		if err := signed.Verify(&content, key.Public(), sig); err == nil {
			t.Errorf("%s %s: verifies under the signature of content without it", name, zeroSpelled)
		}
	}
	// The first instant after it has its one spelling, and reads back.
	d := documentV2()
	d.RevokedBefore = time.Date(1, 1, 1, 0, 0, 0, 1000, time.UTC)
	c := d.Content()
	if back, err := c.Document(); err != nil || !back.RevokedBefore.Equal(d.RevokedBefore) || c.RevokedBefore != "0001-01-01T00:00:00.000001Z" {
		t.Errorf("revoked_before %q: %v, %v", c.RevokedBefore, back.RevokedBefore, err)
	}
}

// The answer shows a time the signature covers none of only as null, ""
// or not at all: a time shown, the zero time written out included, is not
// what is signed.
func TestShownZeroTimeDiffers(t *testing.T) {
	d := documentV2()
	d.RevokedBefore = time.Time{}
	answer := shownAnswer(t, d)
	if s := checkShown(t, answer); s.Differs != "" {
		t.Fatalf("the answer as the API writes it: %+v", s)
	}
	for _, shown := range []any{nil, ""} {
		answer["revoked_before"] = shown
		if s := checkShown(t, answer); s.Differs != "" {
			t.Errorf("revoked_before %#v for none: %+v", shown, s)
		}
	}
	for _, shown := range []string{"0001-01-01T00:00:00Z", "0001-01-01T00:00:00.000000Z", "0001-01-01T01:00:00+01:00"} {
		answer["revoked_before"] = shown
		if s := checkShown(t, answer); s.Differs != "revoked_before" {
			t.Errorf("revoked_before %q, none signed: %+v; want it named as differing", shown, s)
		}
	}

	d = documentV2()
	d.Consents[0].OptInAt = time.Time{} // the earliest, consent_opt_in, is none too
	answer = shownAnswer(t, d)
	first := answer["consents"].([]any)[0].(map[string]any)
	delete(first, "opt_in")
	if s := checkShown(t, answer); s.Differs != "" {
		t.Errorf("a consent's opt_in left out, none signed: %+v", s)
	}
	first["opt_in"] = "0001-01-01T00:00:00Z"
	if s := checkShown(t, answer); s.Differs != "consents" {
		t.Errorf("a consent's opt_in %q, none signed: %+v; want consents named as differing", first["opt_in"], s)
	}
}
