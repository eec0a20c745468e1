package consent_test

import (
	"strings"
	"testing"
	"time"

	"github.com/consentkit/consentkit/consent"
)

// A cursor's text reads back as the same position, to the microsecond;
// text that no cursor wrote is Invalid, naming the field.
func TestCursorText(t *testing.T) {
	at := time.Date(2026, 11, 20, 10, 0, 0, 123456789, time.FixedZone("x", 3600))
	for _, c := range []consent.Cursor{
		consent.CursorOf(at, "cert-1"),
		consent.CursorOf(at, "an id with spaces ✓"),
		consent.CursorOf(time.Unix(0, 0), "x"),
		consent.CursorOf(time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC), strings.Repeat("é", consent.MaxKeyBytes/2)), // the longest id a store keeps
	} {
		got, err := consent.ParseCursor("before", c.String())
		if err != nil || !got.At.Equal(c.At) || got.ID != c.ID || got.At.Location() != time.UTC {
			t.Errorf("ParseCursor(%q) = %+v, %v; want %+v", c.String(), got, err, c)
		}
	}
	if c := consent.CursorOf(at, "x"); !c.At.Equal(at.Truncate(time.Microsecond)) {
		t.Errorf("CursorOf keeps %v, want the microsecond", c.At)
	}
	if c, err := consent.ParseCursor("before", ""); err != nil || !c.IsZero() || c.String() != "" {
		t.Errorf(`ParseCursor("") = %+v, %v; want the zero cursor`, c, err)
	}
	for _, bad := range []string{"nope!", "bm9wZQ", consent.CursorOf(at, "a\x00b").String(), "MTIz", "eCB5"} {
		_, err := consent.ParseCursor("before", bad)
		if consent.ErrorCode(err) != consent.Invalid || err.Error() != "before must be a cursor that this API returned" {
			t.Errorf("ParseCursor(%q): %v; want Invalid naming before", bad, err)
		}
	}
}

// Includes keeps what a page of newest-first items holds: within Since
// and Until, and after the cursor (an earlier time, or the same time and a
// lower id, byte by byte).
func TestPageIncludes(t *testing.T) {
	t0 := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	p := consent.Page{CompanyID: "acme", Limit: 10, Since: t0, Until: t0.Add(time.Hour),
		Before: consent.Cursor{At: t0.Add(time.Minute), ID: "m"}}
	for _, tc := range []struct {
		at   time.Time
		id   string
		want bool
	}{
		{t0, "z", true},
		{t0.Add(-time.Microsecond), "a", false}, // before Since
		{t0.Add(time.Minute), "a", true},        // same time, lower id
		{t0.Add(time.Minute), "B", true},        // "B" < "m" byte by byte
		{t0.Add(time.Minute), "m", false},       // the cursor itself
		{t0.Add(time.Minute), "n", false},       // same time, higher id
		{t0.Add(2 * time.Minute), "a", false},   // newer than the cursor
		{t0.Add(time.Minute - time.Nanosecond), "z", true},
	} {
		if got := p.Includes(tc.at, tc.id); got != tc.want {
			t.Errorf("Includes(%v, %q) = %v, want %v", tc.at, tc.id, got, tc.want)
		}
	}
	for _, bad := range []consent.Page{{Limit: 1}, {CompanyID: "acme"}, {CompanyID: "acme", Limit: consent.MaxPage + 1},
		{CompanyID: "acme", Limit: 1, Before: consent.Cursor{ID: "a\x01"}}} {
		if err := bad.Check(); consent.ErrorCode(err) != consent.Invalid {
			t.Errorf("Check(%+v) = %v; want Invalid", bad, err)
		}
	}
}
