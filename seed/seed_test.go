package seed_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/seed"
	"github.com/consentkit/consentkit/wallet"
)

func parse(t *testing.T, s string) *seed.File {
	t.Helper()
	f, err := seed.Parse(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// The example seed shipped with examples/server loads on every store.
func TestLoadExample(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		r, err := os.Open("../examples/server/seed.example.json")
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		f, err := seed.Parse(r)
		if err != nil {
			t.Fatal(err)
		}
		st := open(t)
		svc := consent.NewService(st, consent.Config{})
		sum, err := seed.Load(t.Context(), svc, f)
		if err != nil {
			t.Fatal(err)
		}
		if *sum != (seed.Summary{Companies: 2, Properties: 1, Tokens: 2, Sessions: 3, Certificates: 1}) {
			t.Errorf("summary %+v", *sum)
		}
		if bal, err := svc.Balance(t.Context(), "acme"); err != nil || bal.String() != "25.5" {
			t.Errorf("acme balance %s, %v", bal, err)
		}
		if bal, err := svc.Balance(t.Context(), "buyer"); err != nil || bal != 5*wallet.Dollar {
			t.Errorf("buyer balance %s, %v", bal, err)
		}
		tok, err := svc.Authenticate(t.Context(), "acme-example-token-0001")
		if err != nil || tok.CompanyID != "acme" || !tok.Has(consent.PermissionRetention) {
			t.Errorf("seed token: %+v, %v", tok, err)
		}
		rec, err := svc.Recording(t.Context(), "s1")
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile("../testdata/rrweb-form-recording.json")
		if err != nil {
			t.Fatal(err)
		}
		var got, wantBuf bytes.Buffer
		if err := json.Compact(&got, rec); err != nil {
			t.Fatal(err)
		}
		if err := json.Compact(&wantBuf, want); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), wantBuf.Bytes()) {
			t.Errorf("recording of s1 (%d bytes compact) is not the test recording (%d bytes)", got.Len(), wantBuf.Len())
		}
		// Loading again is refused: the store is no longer empty.
		if _, err := seed.Load(t.Context(), svc, f); !errors.Is(err, seed.ErrNotEmpty) {
			t.Errorf("second Load: %v, want ErrNotEmpty", err)
		}
	})
}

// An error names the item at fault, and nothing of the file is loaded.
func TestLoadErrors(t *testing.T) {
	for _, tc := range []struct{ name, file, want string }{
		{"duplicate company", `{"companies":[{"id":"a","name":"A"},{"id":"a","name":"A again"}]}`,
			`companies[1] "a": already exists`},
		{"bad id", `{"companies":[{"id":"a b","name":"A"}]}`, `companies[0] "a b": id must be`},
		{"negative balance", `{"companies":[{"id":"a","name":"A","balance":-1}]}`, `companies[0] "a": balance must not be negative`},
		{"short token", `{"companies":[{"id":"a","name":"A","tokens":[{"token":"short"}]}]}`, `companies[0] "a": tokens[0]: token must be`},
		{"unknown permission", `{"companies":[{"id":"a","name":"A","tokens":[{"token":"long-enough-secret","permissions":["admin"]}]}]}`,
			`tokens[0]: permissions: unknown permission "admin"`},
		{"session of unknown property", `{"companies":[{"id":"a","name":"A"}],"sessions":[{"id":"s1","company_id":"a","property_id":"p"}]}`,
			`sessions[0] "s1": property not found`},
		{"bad consent", `{"companies":[{"id":"a","name":"A","properties":[{"id":"p","name":"P"}]}],
			"sessions":[{"id":"s1","company_id":"a","property_id":"p","events":[{"type":4}]}],
			"certificates":[{"id":"c1","company_id":"a","property_id":"p","session_id":"s1","consents":[{"text":""}]}]}`,
			`certificates[0] "c1": consents[0].text must be`},
		{"bad email", `{"companies":[{"id":"a","name":"A","properties":[{"id":"p","name":"P"}]}],
			"sessions":[{"id":"s1","company_id":"a","property_id":"p"}],
			"certificates":[{"id":"c1","company_id":"a","property_id":"p","session_id":"s1","email":"nope"}]}`,
			`certificates[0] "c1": email is not an email address`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := teststore.SQLite(t)
			svc := consent.NewService(st, consent.Config{})
			_, err := seed.Load(t.Context(), svc, parse(t, tc.file))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load: %v, want an error containing %q", err, tc.want)
			}
			err = st.View(t.Context(), func(tx consent.Tx) error {
				ids, err := tx.CompanyIDs(t.Context(), "", 10)
				if len(ids) != 0 {
					t.Errorf("companies %v were loaded from a file that failed", ids)
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{`{"companies":[{"id":"a","nmae":"A"}]}`, `unknown field "nmae"`},
		{`{"companies":[{"id":"a","name":"A","balance":0.1234567}]}`, `more than 6 decimal places`},
		{`{"companies":[{"id":"a","name":"A","balance":true}]}`, `invalid amount`},
		{`{"sessions":[{"id":"s","created_at":"yesterday"}]}`, `cannot parse`},
		{`{} {}`, `data after the JSON object`},
	} {
		if _, err := seed.Parse(strings.NewReader(tc.file)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%s): %v, want an error containing %q", tc.file, err, tc.want)
		}
	}
}
