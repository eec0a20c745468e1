package main

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/consentkit/consentkit/signed"
)

// forged is text an edited answer might carry to write lines of the
// report itself: a consent the certificate does not hold, then a terminal
// escape moving the cursor up and erasing a line.
const forged = "note\n  consent 2, opted in 2026-11-29T09:00:00.000000Z, types [tcpa]: \"I agree\"\n    opt-in: manual\n\x1b[1A\x1b[2K\r"

// A member the answer adds, at any depth, is listed as not signed with its
// name quoted: its line breaks and terminal escapes are printed escaped, so
// the report keeps its own lines, and the answer is still VALID (the member
// says nothing the signature vouches for).
func TestAddedMemberNamesQuoted(t *testing.T) {
	certJSON, keysJSON := serve(t)
	keys := withKeys(t, keysJSON)
	code, plain := check(keys, certJSON)
	if code != 0 {
		t.Fatalf("untouched answer: exit %d\n%s", code, plain)
	}
	for name, c := range map[string]struct {
		path string // as the list names the member
		edit func(a map[string]any)
	}{
		"top level": {forged, func(a map[string]any) { a[forged] = 1 }},
		"in a consent": {"consents[0]." + forged, func(a map[string]any) {
			a["consents"].([]any)[0].(map[string]any)[forged] = 1
		}},
		"in a consent's visibility": {"consents[0].visibility." + forged, func(a map[string]any) {
			a["consents"].([]any)[0].(map[string]any)["visibility"].(map[string]any)[forged] = true
		}},
	} {
		a := decode(t, certJSON)
		c.edit(a)
		code, out := check(keys, encode(t, a))
		switch {
		case code != 0:
			t.Errorf("%s: exit %d\n%s", name, code, out)
		case strings.ContainsRune(out, 0x1b) || strings.Contains(out, "\n  consent 2"):
			t.Errorf("%s: the answer's text writes the report:\n%s", name, out)
		case strings.Count(out, "\n") != strings.Count(plain, "\n"):
			t.Errorf("%s: %d lines, the untouched answer's report %d:\n%s", name, strings.Count(out, "\n"), strings.Count(plain, "\n"), out)
		case !strings.Contains(out, " "+strconv.Quote(c.path)+", "):
			t.Errorf("%s: the member is not listed quoted:\n%s", name, out)
		}
	}
	if !strings.Contains(plain, "not signed, shown by the answer: events_combined, insights, valid\n") {
		t.Errorf("names of the API's own are quoted:\n%s", plain)
	}
}

// The insights' asked_at and asked reasons, computed when asked and never
// signed, are refused unless an RFC 3339 time and reason codes of package
// insights; a refusal naming text of the answer prints it escaped, on one
// line.
func TestInsightsAskedChecked(t *testing.T) {
	certJSON, keysJSON := serve(t)
	var proof signed.Proof
	if err := json.Unmarshal(certJSON, &proof); err != nil {
		t.Fatal(err)
	}
	key, _ := signed.NewSigningKey("key-ins")
	keys := withKeys(t, keysJSON, key)
	st, err := signed.NewInsightsStatement(proof.Signed, time.Date(2026, 11, 28, 2, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	st.Bot = signed.InsightsBot{Verdict: "bot", Reasons: []string{"webdriver"}}
	sig, err := key.SignInsights(&st)
	if err != nil {
		t.Fatal(err)
	}
	signals := decode(t, encode(t, map[string]any{"s": st.Signals}))["s"].(map[string]any)
	insights := func(askedAt string, reasons, asked []string) []byte {
		m := map[string]any{"status": "done", "asked_at": askedAt,
			"bot":       map[string]any{"verdict": "bot", "reasons": reasons, "asked_reasons": asked},
			"statement": &st, "key_id": st.KeyID, "signature": signed.EncodeSignature(sig)}
		for k, v := range signals {
			m[k] = v
		}
		a := decode(t, certJSON)
		a["insights"] = m
		return encode(t, a)
	}
	code, out := check(keys, insights("2026-11-28T03:00:00.000000Z", []string{"webdriver", "high_velocity"}, []string{"high_velocity"}))
	if code != 0 || !strings.Contains(out, "computed when asked, not signed: asked at 2026-11-28T03:00:00.000000Z; verdict bot, adding [high_velocity]\n") {
		t.Fatalf("asked at a time, adding a reason: exit %d\n%s", code, out)
	}
	for name, c := range map[string]struct {
		answer []byte
		want   string
	}{
		"asked_at with escapes": {insights("2026-11-28T03:00:00Z"+forged, []string{"webdriver"}, []string{}),
			`NOT VALID: the insights' asked_at "2026-11-28T03:00:00Z` + strings.Trim(strconv.Quote(forged), `"`) + `" is not an RFC 3339 time`},
		"asked_at not a time": {insights("yesterday", []string{"webdriver"}, []string{}),
			`NOT VALID: the insights' asked_at "yesterday" is not an RFC 3339 time`},
		"asked reason not a code": {insights("2026-11-28T03:00:00Z", []string{"webdriver", forged}, []string{forged}),
			`NOT VALID: the insights' asked reason ` + strconv.Quote(forged) + ` is not a reason code`},
		"a reason neither signed nor asked": {insights("2026-11-28T03:00:00Z", []string{"webdriver", forged}, []string{}),
			`NOT VALID: the insights' verdict: its reasons [webdriver note\n  consent 2`},
	} {
		code, out := check(keys, c.answer)
		if code != 1 || !strings.HasPrefix(out, c.want) || strings.ContainsRune(out, 0x1b) || strings.Count(out, "\n") != 1 {
			t.Errorf("%s: exit %d\n%q; want 1, %q, on one line", name, code, out, c.want)
		}
	}
}

// The command's reason codes are those of package insights, which it does
// not import (D41): every constant of type insights.Reason, in order.
func TestReasonCodesOfInsights(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "../../insights/verdict.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var codes []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			v := spec.(*ast.ValueSpec)
			if id, ok := v.Type.(*ast.Ident); !ok || id.Name != "Reason" {
				continue
			}
			for _, e := range v.Values {
				s, err := strconv.Unquote(e.(*ast.BasicLit).Value)
				if err != nil {
					t.Fatal(err)
				}
				codes = append(codes, s)
			}
		}
	}
	if len(codes) == 0 || !slices.Equal(codes, reasonCodes) {
		t.Errorf("reason codes %v, package insights has %v", reasonCodes, codes)
	}
}
