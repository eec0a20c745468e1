package seed_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/profile"
	"github.com/consentkit/consentkit/seed"
	"github.com/consentkit/consentkit/wallet"
	"github.com/consentkit/consentkit/webhook"
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
		defer func() { _ = r.Close() }() // read only: its Close loses nothing
		f, err := seed.Parse(r)
		if err != nil {
			t.Fatal(err)
		}
		st := open(t)
		svc, err := consentkit.NewService(st, consentkit.Config{})
		if err != nil {
			t.Fatal(err)
		}
		sum, err := seed.Load(t.Context(), svc, f)
		if err != nil {
			t.Fatal(err)
		}
		if *sum != (seed.Summary{Companies: 2, Properties: 1, Tokens: 2, Sessions: 3, Certificates: 2, Profiles: 1}) {
			t.Errorf("summary %+v", *sum)
		}
		// The buyer's audit profile (D51), put with an audit entry.
		p, err := profile.Profiles{Service: svc}.Get(t.Context(), "buyer", "tcpa-strict")
		if err != nil || p.Rules.BrandNames == nil || p.Rules.OptInMethods.OnMiss != profile.MissWarn || p.Rules.LeadAge.MaxSeconds != 2592000 {
			t.Errorf("the buyer's profile: %+v, %v", p, err)
		}
		if entries, err := svc.AuditLog(t.Context(), consent.AuditQuery{CompanyID: "buyer", ActionPrefix: consent.AuditProfilePut}); err != nil || len(entries) != 1 {
			t.Errorf("audit entries of the profile: %d, %v; want 1", len(entries), err)
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
		// cert-1, of s1, holds the SHA-256 of the recording as stored, as
		// a certificate issued through capture does.
		var cert *consent.Certificate
		if err := svc.Store().View(t.Context(), func(tx consent.Tx) error {
			cert, err = tx.Certificate(t.Context(), "cert-1")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if cert.RecordingSHA256 != sha256.Sum256(rec) {
			t.Errorf("cert-1's recording SHA-256 %x; want that of s1's recording, %x", cert.RecordingSHA256, sha256.Sum256(rec))
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
			`companies[1] "a": company already exists`}, // every store names what exists
		{"duplicate session", `{"companies":[{"id":"a","name":"A","properties":[{"id":"p","name":"P"}]}],
			"sessions":[{"id":"s1","company_id":"a","property_id":"p"},{"id":"s1","company_id":"a","property_id":"p"}]}`,
			`sessions[1] "s1": session already exists`},
		{"duplicate certificate", `{"companies":[{"id":"a","name":"A","properties":[{"id":"p","name":"P"}]}],
			"sessions":[{"id":"s1","company_id":"a","property_id":"p","events":[{"type":4}]}],
			"certificates":[{"id":"c1","company_id":"a","property_id":"p","session_id":"s1","consents":[{"text":"I agree"}]},
				{"id":"c1","company_id":"a","property_id":"p","session_id":"s1","consents":[{"text":"I agree"}]}]}`,
			`certificates[1] "c1": certificate already exists`},
		{"bad id", `{"companies":[{"id":"a b","name":"A"}]}`, `companies[0] "a b": id must be`},
		{"negative balance", `{"companies":[{"id":"a","name":"A","balance":-1}]}`, `companies[0] "a": balance must not be negative`},
		{"short token", `{"companies":[{"id":"a","name":"A","tokens":[{"token":"short"}]}]}`, `companies[0] "a": tokens[0]: token must be`},
		// The zero instant is a past time, refused as the operator API
		// refuses it (D6): TokenParams would read it as "never expires".
		{"zero expiry", `{"companies":[{"id":"a","name":"A","tokens":[{"token":"long-enough-secret-0001","expires_at":"0001-01-01T00:00:00Z"}]}]}`,
			`companies[0] "a": tokens[0]: expires_at must be in the future`},
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
		// Text that one store would refuse is refused on all of them, naming
		// the field (Postgres refuses NUL in text and \u0000 in jsonb).
		{"NUL in consent text", `{"companies":[{"id":"a","name":"A","properties":[{"id":"p","name":"P"}]}],
			"sessions":[{"id":"s1","company_id":"a","property_id":"p"}],
			"certificates":[{"id":"c1","company_id":"a","property_id":"p","session_id":"s1","consents":[{"text":"I agree\u0000"}]}]}`,
			`certificates[0] "c1": consents[0].text must be valid UTF-8 without control characters`},
		{"control character in a consent type", `{"companies":[{"id":"a","name":"A","properties":[{"id":"p","name":"P"}]}],
			"sessions":[{"id":"s1","company_id":"a","property_id":"p"}],
			"certificates":[{"id":"c1","company_id":"a","property_id":"p","session_id":"s1","consents":[{"text":"I agree","types":["tcpa\u0007"]}]}]}`,
			`certificates[0] "c1": consents[0].types must be valid UTF-8 without control characters`},
		{"NUL in an origin", `{"companies":[{"id":"a","name":"A","properties":[{"id":"p","name":"P"}]}],
			"sessions":[{"id":"s1","company_id":"a","property_id":"p"}],
			"certificates":[{"id":"c1","company_id":"a","property_id":"p","session_id":"s1","origin":"https://a.example/\u0000"}]}`,
			`certificates[0] "c1": origin must be valid UTF-8 without control characters`},
		{"allowed origin with a path", `{"companies":[{"id":"a","name":"A","properties":[{"id":"p","name":"P","allowed_origins":["https://a.example/form"]}]}]}`,
			`companies[0] "a": properties[0] "p": allowed origin "https://a.example/form" must be scheme://host[:port]`},
		{"NUL in a company name", `{"companies":[{"id":"a","name":"A\u0000"}]}`,
			`companies[0] "a": name must be valid UTF-8 without control characters`},
		{"NUL in a property name", `{"companies":[{"id":"a","name":"A","properties":[{"id":"p","name":"\u0000P"}]}]}`,
			`companies[0] "a": properties[0] "p": name must be valid UTF-8 without control characters`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
				st := open(t)
				svc, err := consentkit.NewService(st, consentkit.Config{})
				if err != nil {
					t.Fatal(err)
				}
				_, err = seed.Load(t.Context(), svc, parse(t, tc.file))
				for _, part := range strings.Split(tc.want, "…") {
					if err == nil || !strings.Contains(err.Error(), part) {
						t.Fatalf("Load: %v, want an error containing %q", err, part)
					}
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
		})
	}
}

// Consent text with 4-byte characters, tabs and newlines loads and reads
// back exactly on every store.
func TestLoadKeepsText(t *testing.T) {
	const text = "J'accepte 😀 d'être contacté\t(𝄞)\r\npar Acme."
	file := `{"companies":[{"id":"a","name":"Ärzte 👩‍⚕️","properties":[{"id":"p","name":"Formulär"}]}],
		"sessions":[{"id":"s1","company_id":"a","property_id":"p"}],
		"certificates":[{"id":"c1","company_id":"a","property_id":"p","session_id":"s1","origin":"https://ä.example/😀",
			"consents":[{"text":` + strconv.Quote(text) + `,"types":["tcpa ✓"]}]}]}`
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		st := load(t, open(t), file)
		err := st.View(t.Context(), func(tx consent.Tx) error {
			c, err := tx.Certificate(t.Context(), "c1")
			if err != nil {
				return err
			}
			if c.Records[0].Text != text || c.Records[0].Types[0] != "tcpa ✓" || c.Origin != "https://ä.example/😀" {
				t.Errorf("certificate read back as %q %q %q", c.Records[0].Text, c.Records[0].Types, c.Origin)
			}
			co, err := tx.Company(t.Context(), "a")
			if err == nil && co.Name != "Ärzte 👩‍⚕️" {
				t.Errorf("company name read back as %q", co.Name)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{`{"companies":[{"id":"a","nmae":"A"}]}`, `unknown field "nmae"`},
		{`{"companies":[{"id":"a","name":"A","balance":0.1234567}]}`, `more than 6 decimal places`},
		{`{"companies":[{"id":"a","name":"A","balance":true}]}`, `invalid amount`},
		{`{"sessions":[{"id":"s","created_at":"yesterday"}]}`, `cannot parse`},
		{`{} {}`, `data after the JSON object`},
		{`{"companies":[]} ]`, `data after the JSON object`}, // More is false at a ]
		{`{"companies":[]}}`, `data after the JSON object`},
		{`{"companies":[]} x`, `data after the JSON object`},
		{"{\"companies\":[{\"id\":\"a\",\"name\":\"A\xff\"}]}", `not valid UTF-8`},
		{`{"companies":[{"id":"a","name":"A\udc00"}]}`, `unpaired surrogate`},
	} {
		if _, err := seed.Parse(strings.NewReader(tc.file)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%s): %v, want an error containing %q", tc.file, err, tc.want)
		}
	}
}

// A property's allowed origins load as browsers write them (D32).
func TestLoadAllowedOrigins(t *testing.T) {
	file := `{"companies":[{"id":"a","name":"A","properties":[{"id":"p","name":"P",
		"allowed_origins":["HTTPS://Forms.Example:443","http://localhost:8080","https://forms.example"]}]}]}`
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		st := load(t, open(t), file)
		err := st.View(t.Context(), func(tx consent.Tx) error {
			p, err := tx.Property(t.Context(), "p")
			if err == nil && strings.Join(p.AllowedOrigins, " ") != "https://forms.example http://localhost:8080" {
				t.Errorf("allowed origins %q", p.AllowedOrigins)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

// A company may attest every certificate it issues (D49); left out, it
// does not.
func TestLoadAttestCertificates(t *testing.T) {
	file := `{"companies":[{"id":"a","name":"A","attest_certificates":true},{"id":"b","name":"B"},
		{"id":"c","name":"C","attest_certificates":false}]}`
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		st := load(t, open(t), file)
		err := st.View(t.Context(), func(tx consent.Tx) error {
			for id, want := range map[string]bool{"a": true, "b": false, "c": false} {
				c, err := tx.Company(t.Context(), id)
				if err != nil {
					return err
				}
				if c.AttestCertificates != want {
					t.Errorf("company %s: AttestCertificates %v, want %v", id, c.AttestCertificates, want)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
	if _, err := seed.Parse(strings.NewReader(`{"companies":[{"id":"a","name":"A","attest_certificates":"yes"}]}`)); err == nil {
		t.Error("Parse took attest_certificates of a string")
	}
}

// load loads file into st, failing t on an error, and returns st.
func load(t *testing.T, st consent.Store, file string) consent.Store {
	t.Helper()
	svc, err := consentkit.NewService(st, consentkit.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := seed.Load(t.Context(), svc, parse(t, file)); err != nil {
		t.Fatal(err)
	}
	return st
}

// Webhooks load per company, after everything else: the file's own
// certificates send no webhook. A bad webhook fails the whole file.
func TestLoadWebhooks(t *testing.T) {
	const file = `{"companies":[{"id":"acme","name":"Acme","properties":[{"id":"web","name":"Form"}],
		"webhooks":[{"url":"https://hooks.acme.example/consent","secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
		             "events":["session.retained","consent.revoked"]},
		            {"url":"%s","events":["certificate.issued"]}]}],
		"sessions":[{"id":"s1","company_id":"acme","property_id":"web"}],
		"certificates":[{"id":"cert-1","company_id":"acme","property_id":"web","session_id":"s1",
		                 "consents":[{"text":"I agree."}]}]}`
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		st := open(t)
		svc, err := consentkit.NewService(st, consentkit.Config{})
		if err != nil {
			t.Fatal(err)
		}
		// A private address is refused by default, and nothing loads.
		_, err = seed.Load(t.Context(), svc, parse(t, strings.Replace(file, "%s", "http://10.0.0.7/hook", 1)))
		if consent.ErrorCode(err) != consent.Invalid || !strings.Contains(err.Error(), `companies[0] "acme": webhooks[1]: url`) {
			t.Fatalf("private webhook URL: %v; want Invalid naming companies[0] webhooks[1] url", err)
		}
		err = st.View(t.Context(), func(tx consent.Tx) error {
			empty, err := seed.Empty(t.Context(), tx)
			if err == nil && !empty {
				t.Error("the store holds a company after a failed load")
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		sum, err := seed.Load(t.Context(), svc, parse(t, strings.Replace(file, "%s", "https://hooks.acme.example/certs", 1)))
		if err != nil {
			t.Fatal(err)
		}
		if sum.Webhooks != 2 || sum.Certificates != 1 {
			t.Errorf("summary %+v; want 2 webhooks and 1 certificate", *sum)
		}
		eps, err := webhook.Endpoints{Service: svc}.List(t.Context(), "acme")
		if err != nil || len(eps) != 2 {
			t.Fatalf("endpoints %v, %v", eps, err)
		}
		if eps[0].URL != "https://hooks.acme.example/consent" || eps[0].Secret != "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" ||
			strings.Join(eps[0].Events, ",") != "consent.revoked,session.retained" {
			t.Errorf("first endpoint %+v", eps[0])
		}
		if _, err := webhook.SecretKey(eps[1].Secret); err != nil || eps[1].URL != "https://hooks.acme.example/certs" {
			t.Errorf("second endpoint %+v: %v; want a generated secret", eps[1], err)
		}
		err = st.Update(t.Context(), func(tx consent.Tx) error {
			_, err := tx.LeaseJob(t.Context(), []string{consent.JobWebhook}, "test", time.Now().Add(time.Hour), time.Now().Add(2*time.Hour))
			return err
		})
		if consent.ErrorCode(err) != consent.NotFound {
			t.Errorf("a webhook job after loading the file (%v); want none", err)
		}
	})
	// With private addresses allowed, the same file loads.
	svc, err := consentkit.NewService(teststore.Memory(t), consentkit.Config{WebhookAllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := seed.Load(t.Context(), svc, parse(t, strings.Replace(file, "%s", "http://10.0.0.7/hook", 1))); err != nil {
		t.Errorf("private webhook URL with WebhookAllowPrivate: %v", err)
	}
}

// Parse bounds what a file's lists hold, each kind together, before it
// decodes anything: a few bytes such as "{}," decode into a value of
// hundreds, so that a file under MaxFileBytes could take gigabytes.
func TestParseBounds(t *testing.T) {
	// list is a JSON array of n copies of elem.
	list := func(elem string, n int) string {
		return "[" + strings.Repeat(elem+",", n-1) + elem + "]"
	}
	company := func(members string) string { return `{"id":"a","name":"A"` + members + `}` }
	for _, tc := range []struct{ name, file, want string }{
		{"companies", `{"companies":` + list(`{}`, seed.MaxItems+1) + `}`,
			"seed: companies[100000]: the file holds more than 100000 items"},
		{"items of several lists together", `{"companies":[` + company(`,"properties":`+list(`{}`, seed.MaxItems/2)) + `],
			"sessions":` + list(`{}`, seed.MaxItems/2) + `}`, "seed: sessions[49999]: the file holds more than 100000 items"},
		{"profiles", `{"companies":[` + company(`,"tokens":`+list(`{}`, seed.MaxItems-2)) + `,` +
			company(`,"profiles":{"a":{},"b":{}}`) + `]}`, "seed: companies[1].profiles: the file holds more than 100000 items"},
		{"certificates' consents", `{"certificates":[{"consents":` + list(`{}`, seed.MaxItems) + `}]}`,
			"seed: certificates[0].consents[99999]: the file holds more than 100000 items"},
		{"events", `{"sessions":[{"events":` + list(`0`, seed.MaxEvents/2) + `},{"events":` + list(`0`, seed.MaxEvents/2+1) + `}]}`,
			"seed: sessions[1].events[2000000]: the file holds more than 4000000 events"},
		{"strings", `{"certificates":[{"consents":[{"types":` + list(`""`, seed.MaxValues+1) + `}]}]}`,
			"seed: certificates[0].consents[0].types[1000000]: the file holds more than 1000000 list elements"},
		{"a profile's rules", `{"companies":[` + company(`,"profiles":{"p":{"brand_names":{"names":`+list(`""`, seed.MaxValues+1)+`}}}`) + `]}`,
			"seed: companies[0].profiles.p.brand_names.names[1000000]: the file holds more than 1000000"},
		{"names in another case", `{"COMPANIES":` + list(`{}`, seed.MaxItems+1) + `}`, "seed: companies[100000]: the file holds more than 100000 items"},
		{"escaped names", `{"compan\u0069es":` + list(`{}`, seed.MaxItems+1) + `}`, "seed: companies[100000]: the file holds more than 100000 items"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := seed.Parse(strings.NewReader(tc.file))
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("Parse: %v; want an error starting %q", err, tc.want)
			}
		})
	}
	// What an event or events_combined holds is text, not counted.
	ev := `{"type":3,"data":{"positions":` + list(`0`, seed.MaxValues+1) + `}}`
	file := `{"sessions":[{"events":[` + ev + `]}],"certificates":[{"events_combined":` + ev + `}]}`
	if f, err := seed.Parse(strings.NewReader(file)); err != nil || len(f.Sessions[0].Events[0]) != len(ev) {
		t.Errorf("Parse of events holding long lists: %v", err)
	}
}

// A session's events load in chunks the service accepts: of at most its
// Config.MaxChunkBytes, not the default's.
func TestLoadChunksOfServiceMax(t *testing.T) {
	svc, err := consentkit.NewService(teststore.Memory(t), consentkit.Config{MaxChunkBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	var events []string
	for i := range 200 {
		events = append(events, `{"type":3,"timestamp":`+strconv.Itoa(i)+`,"data":{}}`)
	}
	f := parse(t, `{"companies":[{"id":"a","name":"A","properties":[{"id":"p","name":"P"}]}],
		"sessions":[{"id":"s","company_id":"a","property_id":"p","events":[`+strings.Join(events, ",")+`]}]}`)
	if _, err := seed.Load(t.Context(), svc, f); err != nil {
		t.Fatalf("200 events of %d bytes together, with MaxChunkBytes 4096: %v", len(strings.Join(events, ",")), err)
	}
	rec, err := svc.Recording(t.Context(), "s")
	if err != nil {
		t.Fatal(err)
	}
	var got []json.RawMessage
	if err := json.Unmarshal(rec, &got); err != nil || len(got) != len(events) {
		t.Errorf("the recording holds %d events (%v); want %d", len(got), err, len(events))
	}
}
