package dashboard

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/consentkit/consentkit/consent"
)

// localPath keeps a login on the dashboard's pages, whatever next says,
// and keeps a page's query; at the root too, never a "//host" URL.
func TestLocalPath(t *testing.T) {
	for _, tc := range []struct{ prefix, next, want string }{
		{"/dashboard", "/dashboard/companies/acme", "/dashboard/companies/acme"},
		{"/dashboard", "/dashboard/companies/acme/certificates/c1?company=other&profile=strict", "/dashboard/companies/acme/certificates/c1?company=other&profile=strict"},
		{"/dashboard", "/dashboard/", "/dashboard/"},
		{"/dashboard", "/dashboard/../operator/companies", "/dashboard/"},
		{"/dashboard", "/dashboard/%2e%2e/operator/companies", "/dashboard/"},
		{"/dashboard", "/dashboard/./companies/../companies/acme/", "/dashboard/companies/acme/"},
		{"/dashboard", "/dashboardx/", "/dashboard/"},
		{"/dashboard", "//evil.example/dashboard/", "/dashboard/"},
		{"/dashboard", "https://evil.example/dashboard/", "/dashboard/"},
		{"/dashboard", "/dashboard/\\evil", "/dashboard/"},
		{"/dashboard", "/dashboard/\t/x", "/dashboard/"},
		{"/dashboard", "", "/dashboard/"},
		{"", "/companies/acme?x=1", "/companies/acme?x=1"},
		{"", "//evil.example/", "/"},
		{"", "/..//evil.example/", "/evil.example/"},
		{"", "/%2F/evil.example", "/evil.example"},
	} {
		if got := localPath(tc.prefix, tc.next); got != tc.want {
			t.Errorf("localPath(%q, %q) = %q, want %q", tc.prefix, tc.next, got, tc.want)
		}
	}
}

// mark must mark the occurrences of the term, never other bytes, even
// when the text holds letters whose lower case is longer (Ⱥ) or shorter
// (the Kelvin sign K) so that the total length is unchanged.
func TestMarkCaseMappingChangesLength(t *testing.T) {
	text := "ȺȺ quote \u212A" // Ⱥ: 2 bytes -> 3 lower; K (Kelvin): 3 bytes -> 1 lower
	if len(strings.ToLower(text)) != len(text) {
		t.Fatalf("setup: lengths differ")
	}
	for _, p := range mark(text, "quote") {
		if p.Mark && !strings.EqualFold(p.Text, "quote") {
			t.Errorf("marked %q, want %q", p.Text, "quote")
		}
	}
}

// mark marks every case-insensitive occurrence of the term, and only
// them, its parts making up the text again; also where lowering changes
// a letter's length, and never splitting a rune.
func TestMark(t *testing.T) {
	for _, tc := range []struct {
		text, term string
		want       []textPart
	}{
		{"I agree. Agree!", "agree", []textPart{{"I ", false}, {"agree", true}, {". ", false}, {"Agree", true}, {"!", false}}},
		{"no match", "quote", []textPart{{"no match", false}}},
		{"İstanbul quote", "QUOTE", []textPart{{"İstanbul ", false}, {"quote", true}}},
		{"ȺȺ quote \u212A", "quote", []textPart{{"ȺȺ ", false}, {"quote", true}, {" \u212A", false}}},
		{"ȺȺ quote \u212A", "k", []textPart{{"ȺȺ quote ", false}, {"\u212A", true}}},
		{"Ⱥb", "ⱥb", []textPart{{"Ⱥb", true}}},
		{"x", "", []textPart{{"x", false}}},
	} {
		got := mark(tc.text, tc.term)
		if !slices.Equal(got, tc.want) {
			t.Errorf("mark(%q, %q) = %+v, want %+v", tc.text, tc.term, got, tc.want)
		}
	}
}

// The forms' pattern of an identifier takes the characters that
// consent.ValidID takes, and no other.
func TestIDClass(t *testing.T) {
	re := regexp.MustCompile(`^` + idClass + `+$`)
	for c := range 256 {
		s := string([]byte{byte(c)})
		if re.MatchString(s) != consent.ValidID(s) {
			t.Errorf("byte %#x: the forms' pattern says %v, consent.ValidID %v", c, re.MatchString(s), consent.ValidID(s))
		}
	}
}
