package jsontext

import (
	"testing"
)

func TestValid(t *testing.T) {
	for raw, want := range map[string]bool{
		`"plain"`:               true,
		`"tab\tand \"quotes\""`: true,
		`"😀 and 𝄞"`:             true,
		`"\ud83d\ude00"`:        true, // a pair: 😀
		`"\u00e9\u0000"`:        true, // é and NUL: valid Unicode (NUL is refused later, as text)
		"\"a\xffb\"":            false,
		`"\ud800"`:              false, // high surrogate alone
		`"\ude00"`:              false, // low surrogate alone
		`"\ud83d\u0041"`:        false, // high surrogate before a non-surrogate
		`"\ud83d`:               false, // cut short
		`"\u12`:                 false,
		`\`:                     true, // not JSON, but nothing invalid in it
	} {
		if got := Valid([]byte(raw)); got != want {
			t.Errorf("Valid(%q) = %v, want %v", raw, got, want)
		}
	}
}

func TestCheckMembers(t *testing.T) {
	for _, tc := range []struct {
		data  string
		field string
		ok    bool
	}{
		{`{"a":"x","b":["y"]}`, "", true},
		{`{"a":"x","b":"\ud800"}`, "b", false},
		{"{\"a\":\"x\",\"b\":[\"\xff\"]}", "b", false},
		{"{\"a\":\"\xc3\",\"b\":\"\xff\"}", "a", false}, // the first at fault
		{"{\"\xff\":\"x\"}", "", false},                 // in a name
		{`{"a":"\ud83d\ude00"}`, "", true},
	} {
		field, ok := CheckMembers([]byte(tc.data))
		if field != tc.field || ok != tc.ok {
			t.Errorf("CheckMembers(%q) = %q, %v; want %q, %v", tc.data, field, ok, tc.field, tc.ok)
		}
	}
}

func FuzzValid(f *testing.F) {
	f.Add([]byte(`"\ud83d\ude00"`))
	f.Add([]byte(`"\ud83d\`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		Valid(raw) // never panics, whatever the input
	})
}
