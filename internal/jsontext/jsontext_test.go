package jsontext

import (
	"bytes"
	"encoding/json"
	"fmt"
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

// AppendString writes what encoding/json writes.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "exact", "cert-1", `a"b\c`, "<&>", "tab\there", "é", "\u2028", "\xff", "~\x7f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := AppendString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Fatalf("AppendString(%q) = %s, want x%s", s, got, want)
		}
	})
}

func TestFlat(t *testing.T) {
	type member struct{ name, value string }
	for _, tc := range []struct {
		data string
		want []member // nil: not walked
	}{
		{`{}`, []member{}},
		{" \t\r\n{ } \n", []member{}},
		{`{"a":"x"}`, []member{{"a", "x"}}},
		{` { "a" : "x" , "b":"" , "a":"é 😀 <&>" } `, []member{{"a", "x"}, {"b", ""}, {"a", "é 😀 <&>"}}},
		{`{"a":"x\"y"}`, nil},     // an escape
		{`{"a":"x\u0041"}`, nil},  // likewise
		{"{\"a\":\"x\ty\"}", nil}, // a control character, which JSON refuses
		{"{\"a\":\"\xff\"}", nil}, // invalid UTF-8
		{"{\"\xff\":\"x\"}", nil},
		{`{"a":1}`, nil},
		{`{"a":null}`, nil},
		{`{"a":["x"]}`, nil},
		{`{"a":"x",}`, nil},
		{`{"a":"x"} {}`, nil},
		{`{"a":"x"`, nil},
		{`{"a" "x"}`, nil},
		{`{"a":"x`, nil},
		{`{a:"x"}`, nil},
		{`["x"]`, nil},
		{``, nil},
		{`{`, nil},
	} {
		var got []member
		if Flat([]byte(tc.data), func(name, value []byte) bool {
			got = append(got, member{string(name), string(value)})
			return true
		}) {
			if got == nil {
				got = []member{}
			}
		} else {
			got = nil
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) || (got == nil) != (tc.want == nil) {
			t.Errorf("Flat(%q) walked %v, want %v", tc.data, got, tc.want)
		}
	}
	if Flat([]byte(`{"a":"x","b":"y"}`), func(name, _ []byte) bool { return string(name) == "a" }) {
		t.Error("Flat went on after member gave up")
	}
}

// Whatever Flat walks, encoding/json reads as the same members: valid JSON,
// an object whose members are the strings Flat handed out.
func FuzzFlat(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":"x","b":"y","a":"z"}`, ` {"a" : "é"} `, `{"a":"x\"y"}`, `{"a":1}`, "{\"a\":\"\xff\"}", `{"a":"x"}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var names, values []string
		if !Flat(data, func(name, value []byte) bool {
			names, values = append(names, string(name)), append(values, string(value))
			return true
		}) {
			return
		}
		if _, ok := CheckMembers(data); !ok || !json.Valid(data) {
			t.Fatalf("Flat walked %q, which is not valid JSON of valid Unicode", data)
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			t.Fatalf("%q: Flat walked what is not an object", data)
		}
		i := 0
		for ; dec.More(); i++ {
			var name, value string
			tok, err := dec.Token()
			if err == nil {
				name, _ = tok.(string)
				err = dec.Decode(&value)
			}
			if err != nil || i >= len(names) || name != names[i] || value != values[i] {
				t.Fatalf("%q: member %d is %q: %q (%v); Flat said %q", data, i, name, value, err, names)
			}
		}
		if i != len(names) {
			t.Fatalf("%q has %d members; Flat walked %q", data, i, names)
		}
	})
}
