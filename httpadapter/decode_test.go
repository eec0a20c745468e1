package httpadapter

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/store/memstore"
	jsonv2 "github.com/go-json-experiment/json"
)

// requestRoutes are the routes whose requests have JSON fields.
func requestRoutes(t testing.TB) []*route {
	svc, err := consentkit.NewService(memstore.New(), consentkit.Config{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(Config{Service: svc})
	if err != nil {
		t.Fatal(err)
	}
	var rs []*route
	for _, rt := range h.routes {
		if rt.body {
			rs = append(rs, rt)
		}
	}
	return rs
}

// decode reads the ordinary requests as encoding/json does (the last
// member of a name wins, escapes are read, unknown members are ignored)
// but for names, which match exactly (D29): a member whose name differs
// from a field's in case only is unknown. It refuses text that is not
// valid Unicode.
func TestDecodeOrdinaryRequests(t *testing.T) {
	byPattern := map[string]*route{}
	for _, rt := range requestRoutes(t) {
		byPattern[rt.Pattern] = rt
	}
	for _, tc := range []struct {
		pattern, body string
		invalid       string // the error's message; "": decoded as encoding/json decodes it
		unknown       bool   // every member's name is a field's in another case: nothing is decoded
	}{
		{"/verify/match", `{"certificate_id":"cert-1","company_id":"acme","consent":"I agree to be contacted by Acme."}`, "", false},
		{"/verify/match", ` {"consent" : "é 😀", "email":"jane@example.com", "consent":"last wins"} ` + "\n", "", false},
		{"/verify/partial-match", `{"certificate_id":"cert-1","company_id":"acme","term":"agree"}`, "", false},
		{"/verify/certificate-info", `{"certificate_id":"cert-1","company_id":"acme","property_id":"acme-web"}`, "", false},
		{"/opt-out", `{"company_id":"acme","email":"jane@example.com"}`, "", false},
		{"/verify/match", `{}`, "", false},
		{"/verify/match", `{"Company_ID":"acme"}`, "", true},
		{"/verify/match", `{"CERTIFICATE_ID":"cert-1","Consent":"x"}`, "", true},
		{"/verify/match", `{"company_id":"ac\u006de"}`, "", false},
		{"/verify/match", `{"unknown":"x"}`, "", false},
		{"/verify/match", `{"company_id":null}`, "", false},
		{"/verify/match", "{\"consent\":\"\xff\"}", "consent must be valid UTF-8", false},
		{"/verify/session/{company_id}", `{"CompanyID":"x"}`, "", false},
		{"/api/integrations/{companyId}/retain/batch", `{"session_ids":["s1"]}`, "", false},
		{"/verify/match", `{"company_id":"acme","consent":"` + strings.Repeat("I agree. ", 200) + `","certificate_id":"cert-1"}`, "", false},
	} {
		rt := byPattern[tc.pattern]
		if rt == nil {
			t.Fatalf("%s: no route with a request body", tc.pattern)
		}
		v := reflect.New(rt.Request)
		err := decode(httptest.NewRecorder(), httptest.NewRequest(rt.Method, "/", strings.NewReader(tc.body)), v.Interface(), rt.MaxBody, nil)
		if tc.invalid != "" {
			if consent.ErrorCode(err) != consent.Invalid || consent.ErrorMessage(err) != tc.invalid {
				t.Errorf("%s %q: %v, want Invalid %q", tc.pattern, tc.body, err, tc.invalid)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s %s: %v", tc.pattern, tc.body, err)
		}
		want := reflect.New(rt.Request)
		if err := json.Unmarshal([]byte(tc.body), want.Interface()); err != nil {
			t.Fatalf("%s %s: %v", tc.pattern, tc.body, err)
		}
		if tc.unknown {
			if want.Elem().IsZero() {
				t.Fatalf("%s %s: encoding/json decodes nothing either", tc.pattern, tc.body)
			}
			want = reflect.New(rt.Request)
		}
		if !reflect.DeepEqual(v.Interface(), want.Interface()) {
			t.Errorf("%s %s: decoded %+v, encoding/json %+v", tc.pattern, tc.body, v.Elem(), want.Elem())
		}
	}
}

type selfDecoding string

func (s *selfDecoding) UnmarshalText(b []byte) error {
	*s = selfDecoding(strings.ToUpper(string(b)))
	return nil
}

// A body longer than it declared (a middleware replaced it) is still held
// to the route's limit: 413.
func TestDecodeLimitBeyondDeclaredLength(t *testing.T) {
	big := `{"company_id":"acme","consent":"` + strings.Repeat("x", MaxBodyBytes) + `"}`
	r := httptest.NewRequest(http.MethodPost, "/verify/match", strings.NewReader(`{}`))
	r.Body = io.NopCloser(strings.NewReader(big)) // ContentLength stays 2
	var v struct {
		CompanyID string `json:"company_id"`
	}
	err := decode(httptest.NewRecorder(), r, &v, 0, nil)
	if consent.ErrorCode(err) != consent.TooLarge {
		t.Errorf("decode of %d bytes declared as 2: %v, want TooLarge", len(big), err)
	}
}

// writeBody's two header values share one allocation; adding to one leaves
// the other as it was.
func TestWriteBodyHeaders(t *testing.T) {
	rec := httptest.NewRecorder()
	writeBody(rec, 200, []byte("{}\n"))
	h := rec.Header()
	h.Add("Content-Type", "text/plain")
	if got := h.Values("Cache-Control"); len(got) != 1 || got[0] != "no-store" {
		t.Errorf("Cache-Control = %q after an Add to Content-Type, want [no-store]", got)
	}
	if got := rec.Result().Header.Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type sent = %q, want application/json", got)
	}
}

// wrongValues are JSON values of other kinds than the schema's type says,
// each the kind a client is likely to send by mistake, and for an array
// an array of wrong items too.
func wrongValues(t *testing.T, schema map[string]any) []string {
	switch schemaType(schema) {
	case "integer":
		return []string{`"1"`, `1.5`, `true`, `{}`, `[]`}
	case "number":
		return []string{`"x"`, `true`, `{}`, `[]`} // "1" is a wallet.Amount
	case "string":
		return []string{`1`, `true`, `{}`, `[]`}
	case "boolean":
		return []string{`"true"`, `1`, `{}`, `[]`}
	case "object":
		return []string{`"x"`, `1`, `true`, `[]`}
	case "array":
		out := []string{`"x"`, `1`, `true`, `{}`}
		for _, v := range wrongValues(t, schema["items"].(map[string]any)) {
			out = append(out, "["+v+"]")
		}
		return out
	case "":
		return nil // any JSON value
	}
	t.Fatalf("no wrong values known for the schema %v", schema)
	return nil
}

// schemaType is a schema's type, less the null of a nullable one.
func schemaType(schema map[string]any) string {
	switch typ := schema["type"].(type) {
	case string:
		return typ
	case []any:
		for _, s := range typ {
			if s != "null" {
				return s.(string)
			}
		}
	}
	return ""
}

// kindText is what a 400 says a value of the schema must be.
func kindText(schema map[string]any) string {
	switch typ := schemaType(schema); typ {
	case "array":
		items := strings.SplitN(kindText(schema["items"].(map[string]any)), " ", 2)[1]
		items, rest, _ := strings.Cut(items, " ")
		if rest != "" {
			rest = " " + rest
		}
		return "an array of " + items + "s" + rest
	case "integer", "object":
		return "an " + typ
	default:
		return "a " + typ
	}
}

// A member of a wrong JSON type is a 400 that names the field and the kind
// of value the document declares for it (D29), for every field of every
// route's request, nested ones included: seq was told "must be a string".
func TestDecodeWrongTypeNamesTheKind(t *testing.T) {
	h, _ := newTestHandler(t)
	doc := openAPIJSON(t, h)
	tested := map[string]bool{}
	for _, rt := range h.routes {
		if !rt.body {
			continue
		}
		op := operationOf(doc, rt.Method, rt.Pattern)
		body := op["requestBody"].(map[string]any)["content"].(map[string]any)["application/json"].(map[string]any)["schema"].(map[string]any)
		// visit tries every field of the object schema s at prefix,
		// wrap putting an object in its place in the request's body.
		var visit func(s map[string]any, prefix string, wrap func(object string) string)
		visit = func(s map[string]any, prefix string, wrap func(string) string) {
			for name, p := range s["properties"].(map[string]any) {
				p := p.(map[string]any)
				field := prefix + name
				want := field + " must be " + kindText(p)
				for _, v := range wrongValues(t, p) {
					data := wrap(`{"` + name + `":` + v + `}`)
					r := httptest.NewRequest(rt.Method, rt.Pattern, strings.NewReader(data))
					err := decode(httptest.NewRecorder(), r, reflect.New(rt.Request).Interface(), rt.MaxBody, nil)
					// A wallet.Amount says what more a number of dollars must be.
					if msg := consent.ErrorMessage(err); consent.ErrorCode(err) != consent.Invalid ||
						msg != want && !strings.HasPrefix(msg, want+" ") {
						t.Errorf("%s %s %s: %v, want %q", rt.Method, rt.Pattern, data, err, want)
					}
				}
				tested[rt.Pattern+" "+field] = true
				switch schemaType(p) {
				case "object":
					visit(p, field+".", func(o string) string { return wrap(`{"` + name + `":` + o + `}`) })
				case "array":
					if items := p["items"].(map[string]any); schemaType(items) == "object" {
						visit(items, field+"[].", func(o string) string { return wrap(`{"` + name + `":[` + o + `]}`) })
					}
				}
			}
		}
		visit(body, "", func(o string) string { return o })
	}
	// Through the handler, as the issue saw it.
	for _, seq := range []string{`"1"`, `1.5`, `true`} {
		r := httptest.NewRequest(http.MethodPost, "/capture/sessions/s1/events", strings.NewReader(`{"seq":`+seq+`,"events":[]}`))
		r.Header.Set("Authorization", "Bearer upload-token")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if want := `{"status":400,"error":"seq must be an integer"}` + "\n"; rec.Code != http.StatusBadRequest || rec.Body.String() != want {
			t.Errorf("events with seq %s: %d %s, want 400 %s", seq, rec.Code, rec.Body, want)
		}
	}
	for _, f := range []string{"/capture/sessions/{session_id}/events seq", "/capture/sessions/{session_id}/consent consents[].types",
		"/capture/sessions/{session_id}/consent visibility.font_size_px", "/operator/companies third_party_verification_enabled",
		"/operator/companies/{company_id}/wallet/top-ups amount"} {
		if !tested[f] {
			t.Errorf("%s was not tried", f)
		}
	}
}

// decodeError names fields that no route's request has yet as json/v2
// reports them: promoted from an embedded struct, untagged, in a map, of a
// type that decodes itself from text, or bytes.
func TestDecodeErrorNamesFields(t *testing.T) {
	type Inner struct {
		Deep []struct {
			N []int `json:"n"`
		} `json:"deep"`
	}
	type request struct {
		Inner
		Untagged bool
		Counts   map[string]int `json:"counts"`
		Self     selfDecoding   `json:"self"`
		Bytes    []byte         `json:"bytes"`
		Grid     [][]float64    `json:"grid"`
	}
	for _, tc := range []struct{ body, want string }{
		{`{"deep":[{"n":["x"]}]}`, "deep[].n must be an array of integers"},
		{`{"deep":{}}`, "deep must be an array of objects"},
		{`{"Untagged":1}`, "Untagged must be a boolean"},
		{`{"counts":{"a":"1"}}`, "counts must be an object"},
		{`{"self":1}`, "self must be a string"},
		{`{"bytes":1}`, "bytes must be a base64 string"},
		{`{"grid":[[true]]}`, "grid must be an array of arrays of numbers"},
		{`[1]`, "request body must be a JSON object"},
		{`{"untagged":1,"Deep":1}`, ""}, // names match exactly: these are unknown, and ignored (D29)
	} {
		var v request
		err := jsonv2.Unmarshal([]byte(tc.body), &v, decodeOptions)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v, want no error", tc.body, err)
			}
			continue
		}
		if err == nil {
			t.Fatalf("%s: decoded, want %s", tc.body, tc.want)
		}
		if got := decodeError(reflect.TypeFor[request](), []byte(tc.body), err); got.Error() != tc.want {
			t.Errorf("%s (%v): %v, want %s", tc.body, err, got, tc.want)
		}
	}
}

// readAll reads every body whole, whatever length it declared: none
// (chunked), its own, more or less than it holds, more than it presizes.
func TestReadAllWhateverTheDeclaredLength(t *testing.T) {
	for _, size := range []int{0, 1, 511, 512, 513, 16 << 10, presize, presize + 1, 3*presize + 7} {
		body := bytes.Repeat([]byte("0123456789abcdef"), size/16+1)[:size]
		for _, declared := range []int64{-1, 0, int64(size), int64(size) / 2, int64(size) * 2, 1 << 40} {
			got, err := readAll(iotest.OneByteReader(bytes.NewReader(body)), declared)
			if err != nil || !bytes.Equal(got, body) {
				t.Errorf("size %d declared %d: read %d bytes, %v", size, declared, len(got), err)
			}
			if got, err := readAll(bytes.NewReader(body), declared); err != nil || !bytes.Equal(got, body) {
				t.Errorf("size %d declared %d, in one read: %d bytes, %v", size, declared, len(got), err)
			}
		}
	}
	boom := errors.New("boom")
	if _, err := readAll(iotest.ErrReader(boom), 10); !errors.Is(err, boom) {
		t.Errorf("a failing body: %v", err)
	}
}
