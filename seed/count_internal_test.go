package seed

import (
	"strings"
	"testing"
)

// A file at the bounds passes the count; one more element does not.
func TestCheckCountsAtBounds(t *testing.T) {
	list := func(elem string, n int) string {
		return "[" + strings.Repeat(elem+",", n-1) + elem + "]"
	}
	for _, tc := range []struct {
		name string
		file func(n int) string
		max  int
	}{
		{"items", func(n int) string { return `{"companies":` + list(`{}`, n) + `}` }, MaxItems},
		{"events", func(n int) string { return `{"sessions":[{"events":` + list(`0`, n) + `}]}` }, MaxEvents},
		{"values", func(n int) string {
			return `{"companies":[{"authorized_third_parties":` + list(`"b"`, n) + `}]}`
		}, MaxValues},
	} {
		if err := checkCounts([]byte(tc.file(tc.max))); err != nil {
			t.Errorf("%s: %d: %v", tc.name, tc.max, err)
		}
		if err := checkCounts([]byte(tc.file(tc.max + 1))); err == nil {
			t.Errorf("%s: %d: no error", tc.name, tc.max+1)
		}
	}
	// Text that is not JSON is left to the decoder.
	for _, s := range []string{``, `]]]`, `{"companies":[{`, `{"a":"\`, strings.Repeat("[", 20000)} {
		if err := checkCounts([]byte(s)); err != nil {
			t.Errorf("checkCounts(%.20q): %v", s, err)
		}
	}
}
