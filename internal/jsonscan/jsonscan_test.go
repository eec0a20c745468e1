package jsonscan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

var seeds = []string{
	``, ` `, `null`, `true`, `false`, `tru`, `nul`, `0`, `-0`, `01`, `-`, `1.`, `1.5`, `1e5`, `1E+5`, `1e-`, `.5`, `-.5`,
	`"x"`, `"\u00e9"`, `"\u00g9"`, `"\x"`, "\"a\x01\"", "\"\xff\"", `"\"\\\/\b\f\n\r\t"`, `"`, `"abc`,
	`[]`, `[1,]`, `[,1]`, `[1 2]`, ` [ 1 , "a" , {} , [ ] ] `, `{}`, `{"a":1}`, `{"a" 1}`, `{"a":}`, `{a:1}`, `{"a":1,}`,
	`{"a":1}x`, `[1]]`, `{"a":{"b":[1,{"c":null}]}}`, `[{"type":4,"timestamp":1,"data":{"x":[1,2]}}]`,
	`[{"type":4,"type":"x"}]`, "[\t{\"typ\\u0065\":1}\r\n]", `{"":1}`,
}

// Valid agrees with encoding/json on every input.
func FuzzValid(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := Valid(b), json.Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, json.Valid %v", b, got, want)
		}
	})
}

// Array and Object hand out exactly the elements and members encoding/json
// reads, and refuse exactly what it refuses.
func FuzzArrayObject(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var elems []json.RawMessage
		wantErr := json.Unmarshal(b, &elems)
		if wantErr == nil && elems == nil { // null: encoding/json leaves the slice nil
			wantErr = ErrKind
		}
		var got [][]byte
		err := Array(b, func(_ int, e []byte) error { got = append(got, e); return nil })
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("Array(%q) = %v, json %v", b, err, wantErr)
		}
		if err == nil {
			if len(got) != len(elems) {
				t.Fatalf("Array(%q): %d elements, json %d", b, len(got), len(elems))
			}
			for i := range got {
				if !bytes.Equal(got[i], elems[i]) {
					t.Fatalf("Array(%q)[%d] = %q, json %q", b, i, got[i], elems[i])
				}
			}
		}
		if !json.Valid(b) && (errors.Is(err, ErrKind) || err == nil) {
			t.Fatalf("Array(%q) = %v on invalid JSON", b, err)
		}

		// Objects: the members of each object of an array of objects, as
		// Object reads each element.
		allObjects := wantErr == nil
		for _, e := range elems {
			allObjects = allObjects && e[0] == '{'
		}
		type member struct{ name, value string }
		byObject := map[int][]member{}
		ends := 0
		serr := Objects(b, func(i int, n, v []byte) error {
			byObject[i] = append(byObject[i], member{string(n), string(v)})
			return nil
		}, func(i int) error {
			if i != ends {
				t.Fatalf("Objects(%q): end(%d) after %d ends", b, i, ends)
			}
			ends++
			return nil
		})
		if (serr == nil) != allObjects {
			t.Fatalf("Objects(%q) = %v; array of objects %v", b, serr, allObjects)
		}
		if serr == nil {
			if ends != len(elems) {
				t.Fatalf("Objects(%q): %d ends, %d elements", b, ends, len(elems))
			}
			for i, e := range elems {
				var want []member
				if err := Object(e, func(n, v []byte) error { want = append(want, member{string(n), string(v)}); return nil }); err != nil {
					t.Fatal(err)
				}
				if len(want) != len(byObject[i]) {
					t.Fatalf("Objects(%q)[%d] = %v, Object %v", b, i, byObject[i], want)
				}
				for j := range want {
					if want[j] != byObject[i][j] {
						t.Fatalf("Objects(%q)[%d] = %v, Object %v", b, i, byObject[i], want)
					}
				}
			}
		}

		var names, values []string
		oerr := Object(b, func(n, v []byte) error {
			names, values = append(names, string(n)), append(values, string(v))
			return nil
		})
		isObject := json.Valid(b) && bytes.HasPrefix(bytes.TrimLeft(b, " \t\r\n"), []byte("{"))
		if (oerr == nil) != isObject {
			t.Fatalf("Object(%q) = %v; valid object %v", b, oerr, isObject)
		}
		if oerr == nil {
			dec := json.NewDecoder(bytes.NewReader(b))
			if _, err := dec.Token(); err != nil {
				t.Fatal(err)
			}
			for i := 0; dec.More(); i++ {
				if _, err := dec.Token(); err != nil {
					t.Fatal(err)
				}
				var v json.RawMessage
				if err := dec.Decode(&v); err != nil {
					t.Fatal(err)
				}
				if i >= len(values) || values[i] != string(v) {
					t.Fatalf("Object(%q) member %d = %q, json %q", b, i, values, v)
				}
			}
		}
	})
}

// Nesting deeper than encoding/json's limit is refused as it refuses it.
func TestDepth(t *testing.T) {
	for _, n := range []int{maxDepth - 1, maxDepth, maxDepth + 1} {
		b := []byte(strings.Repeat("[", n) + strings.Repeat("]", n))
		if got, want := Valid(b), json.Valid(b); got != want {
			t.Errorf("depth %d: Valid %v, json.Valid %v", n, got, want)
		}
		o := []byte(strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n))
		if got, want := Valid(o), json.Valid(o); got != want {
			t.Errorf("object depth %d: Valid %v, json.Valid %v", n, got, want)
		}
		if err := Array(b, func(int, []byte) error { return nil }); (err == nil) != json.Valid(b) {
			t.Errorf("Array at depth %d: %v, json.Valid %v", n, err, json.Valid(b))
		}
	}
}

// Array stops at fn's error and returns it; a value of another kind is
// ErrKind, invalid text ErrSyntax.
func TestErrors(t *testing.T) {
	stop := errors.New("stop")
	n := 0
	if err := Array([]byte(`[1,2,3]`), func(i int, _ []byte) error {
		n++
		if i == 1 {
			return stop
		}
		return nil
	}); !errors.Is(err, stop) || n != 2 {
		t.Errorf("Array = %v after %d calls, want stop after 2", err, n)
	}
	if err := Array([]byte(`{"a":1}`), nil); !errors.Is(err, ErrKind) {
		t.Errorf("Array(object) = %v, want ErrKind", err)
	}
	if err := Object([]byte(`[1]`), nil); !errors.Is(err, ErrKind) {
		t.Errorf("Object(array) = %v, want ErrKind", err)
	}
	if err := Array([]byte(`[1,`), func(int, []byte) error { return nil }); !errors.Is(err, ErrSyntax) {
		t.Errorf("Array(cut short) = %v, want ErrSyntax", err)
	}
	if err := Object([]byte(`{"a":1`), func(_, _ []byte) error { return nil }); !errors.Is(err, ErrSyntax) {
		t.Errorf("Object(cut short) = %v, want ErrSyntax", err)
	}
}

// chunk is 16 KiB of events shaped as the load program's capture sends.
func chunk() []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i := 0; b.Len() < 16<<10-120; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"type":3,"data":{"source":5,"text":%q,"isChecked":false,"id":%d},"timestamp":%d}`,
			strings.Repeat("x", 40), 10+i%50, 1795301391553+i*16)
	}
	b.WriteByte(']')
	return b.Bytes()
}

// go test -run '^$' -bench . -benchmem ./internal/jsonscan
func BenchmarkObjects(b *testing.B) {
	c := chunk()
	b.SetBytes(int64(len(c)))
	b.ReportAllocs()
	for b.Loop() {
		if err := Objects(c, func(int, []byte, []byte) error { return nil }, func(int) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodingJSONValid(b *testing.B) {
	c := chunk()
	b.SetBytes(int64(len(c)))
	for b.Loop() {
		if !json.Valid(c) {
			b.Fatal("invalid")
		}
	}
}

// ObjectValues hands out the members Object does, whether a value is read
// raw, read as an array of objects or left unread, and agrees with Object
// and Objects on what is valid.
func FuzzObjectValues(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":[{"x":1},{"y":[2]}],"c":"s"}`, `{"a":[1]}`, `{"a":[{"b":}]}`, `{}`, `[]`, `{"a":[{}],}`,
		`{"a":[{"":0`, `{"a":[{"":0}`, `{"a":"x`, `{"a":[1,{`} { // cut short: the scanner ends past the text
		f.Add([]byte(s), uint8(5))
	}
	f.Fuzz(func(t *testing.T, b []byte, how uint8) {
		b = b[:len(b):len(b)] // no room past the end: reading there panics
		type member struct{ name, value string }
		var want []member
		wantErr := Object(b, func(name, value []byte) error {
			want = append(want, member{string(name), string(value)})
			return nil
		})
		var got []member
		i := 0
		gotErr := ObjectValues(b, func(name []byte, v *Value) error {
			defer func() { i++ }()
			switch (int(how) >> (i % 8) & 1) + (i%2)*2 {
			case 0: // left unread
				got = append(got, member{string(name), ""})
				return nil
			case 1, 3:
				raw, err := v.Raw()
				got = append(got, member{string(name), string(raw)})
				return err
			}
			var objects [][2]string
			raw, err := v.Objects(func(_ int, n, val []byte) error {
				objects = append(objects, [2]string{string(n), string(val)})
				return nil
			}, func(int) error { return nil })
			got = append(got, member{string(name), string(raw)})
			if err == nil {
				var again [][2]string
				if err := Objects(raw, func(_ int, n, val []byte) error {
					again = append(again, [2]string{string(n), string(val)})
					return nil
				}, func(int) error { return nil }); err != nil || !reflect.DeepEqual(objects, again) {
					t.Fatalf("%q: Value.Objects read %q, Objects of its bytes %q, %v", b, objects, again, err)
				}
			}
			if errors.Is(err, ErrKind) {
				return nil // the value is valid, of another kind: go on
			}
			return err
		})
		if (wantErr == nil) != (gotErr == nil) {
			t.Fatalf("%q: Object %v, ObjectValues %v", b, wantErr, gotErr)
		}
		if wantErr != nil {
			return
		}
		if len(got) != len(want) {
			t.Fatalf("%q: %d members, Object read %d", b, len(got), len(want))
		}
		for k := range got {
			if got[k].name != want[k].name || got[k].value != "" && got[k].value != want[k].value {
				t.Fatalf("%q: member %d is %q, Object read %q", b, k, got[k], want[k])
			}
		}
	})
}

// NameIs compares a name as written with its escapes read, as
// encoding/json decodes it, case and all.
func TestNameIs(t *testing.T) {
	for _, raw := range []string{`type`, `typ\u0065`, `\u0074ype`, `ty\u0070e`} {
		if !NameIs([]byte(raw), "type") {
			t.Errorf("NameIs(%s, type) = false", raw)
		}
	}
	for _, raw := range []string{`Type`, `TYPE`, `typ`, `types`, `typ\u0045`, `typ\u00e9`, `typ\`, `typ\u006`, `ty\npe`, ``} {
		if NameIs([]byte(raw), "type") {
			t.Errorf("NameIs(%s, type) = true", raw)
		}
	}
	for raw, want := range map[string]string{`a\"b`: `a"b`, `a\\b`: `a\b`, `a\/b`: `a/b`, `a\tb`: "a\tb", `a\nb`: "a\nb"} {
		var decoded string
		if err := json.Unmarshal([]byte(`"`+raw+`"`), &decoded); err != nil || decoded != want {
			t.Fatalf("%s decodes to %q, %v", raw, decoded, err)
		}
		if !NameIs([]byte(raw), want) {
			t.Errorf("NameIs(%s, %q) = false", raw, want)
		}
	}
}
