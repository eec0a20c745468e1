// Package seed loads a whole scenario — companies with wallets, properties
// and tokens, recorded sessions, certificates — from one JSON file into an
// empty store, in one transaction: either everything loads or nothing does.
// examples/server uses it for its -seed flag; tests can use it too.
//
//	f, err := seed.Parse(file) // an *os.File, say
//	sum, err := seed.Load(ctx, svc, f)
//	fmt.Println(sum.Companies, sum.Certificates)
//
// The format:
//
//	{
//	  "companies": [{
//	    "id": "acme", "name": "Acme Insurance", "balance": 25.5,
//	    "third_party_verification_enabled": true, "authorized_third_parties": ["buyer"],
//	    "attest_certificates": false,
//	    "properties": [{"id": "acme-web", "name": "Quote form",
//	                    "allowed_origins": ["https://forms.acme.example"]}],
//	    "tokens": [{"token": "any-secret-string", "permissions": ["vzew_retention"],
//	                "expires_at": "2030-01-01T00:00:00Z", "revoked": false}],
//	    "webhooks": [{"url": "https://hooks.acme.example/consent",
//	                  "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
//	                  "events": ["consent.revoked", "session.retained"]}]
//	  }],
//	  "sessions": [{
//	    "id": "s1", "company_id": "acme", "property_id": "acme-web",
//	    "created_at": "2026-11-20T10:00:00Z", "events": [ … rrweb events … ]
//	  }],
//	  "certificates": [{
//	    "id": "cert-1", "company_id": "acme", "property_id": "acme-web", "session_id": "s1",
//	    "created_at": "2026-11-20T10:00:00Z", "origin": "https://acme.example/quote",
//	    "email": "Jane@Example.com", "mobile": "(555) 010-2000",
//	    "consents": [{"text": "I agree to be contacted…", "types": ["tcpa"],
//	                  "opt_in_at": "2026-11-20T10:00:05Z"}],
//	    "events_combined": {"any": "json object"}
//	  }]
//	}
//
// webhooks (D44) are optional; a webhook's secret is optional too (a new one
// is made, and can be read back with webhook.Endpoints.List). They
// are added after the sessions and certificates, so loading a file sends no
// webhook about what it loads. A webhook URL whose host is a loopback or
// private IP address is refused unless the service's
// Config.WebhookAllowPrivate is on.
//
// balance is dollars, parsed exactly (a number or a string; at most six
// decimals). allowed_origins (D32), permissions, expires_at, revoked, email, mobile, the
// third-party fields, attest_certificates (D49; off when left out),
// created_at and events_combined are optional. A token is stored as its
// SHA-256 digest like any other and must be 16 to 512 bytes. Unknown fields are errors, since in a hand-written file they are
// typos. Every error names the item at fault, as in
// `certificates[0] "cert-1": consents[0].text must be …`.
//
// A file is at most MaxFileBytes (128 MiB), and since a few bytes of JSON
// can decode into a value of hundreds, Parse also bounds what its lists
// hold, all lists of a kind together, before it decodes anything: at most
// MaxItems (100,000) companies, properties, tokens, webhooks, profiles,
// sessions, certificates and consents; MaxEvents (4,000,000) events of
// sessions; MaxValues (1,000,000) elements of the other lists (the strings
// of authorized_third_parties, allowed_origins, permissions, a webhook's
// events, a consent's types, and the lists of a profile's rules). The
// error names the element past the bound, as in
// `seed: companies[100000]: the file holds more than 100000 items …`.
//
// Load appends a session's events in chunks of at most the service's
// Config.MaxChunkBytes. A certificate of a session with events holds the
// SHA-256 of its recording, as one issued through capture does, and
// verifications check it; one of a session without events holds none.
package seed

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/jsontext"
	"github.com/consentkit/consentkit/profile"
	"github.com/consentkit/consentkit/wallet"
	"github.com/consentkit/consentkit/webhook"
)

// File is a parsed seed file.
type File struct {
	Companies    []Company     `json:"companies"`
	Sessions     []Session     `json:"sessions"`
	Certificates []Certificate `json:"certificates"`
}

// Company is a company of a seed file.
type Company struct {
	ID                            string        `json:"id"`
	Name                          string        `json:"name"`
	Balance                       wallet.Amount `json:"balance"`
	ThirdPartyVerificationEnabled bool          `json:"third_party_verification_enabled"`
	AuthorizedThirdParties        []string      `json:"authorized_third_parties"`
	Properties                    []Property    `json:"properties"`
	Tokens                        []Token       `json:"tokens"`
	Webhooks                      []Webhook     `json:"webhooks"`
	// AttestCertificates has every certificate the company issues
	// attested (D49).
	AttestCertificates bool `json:"attest_certificates"`
	// InsightsRules are the thresholds of its certificates' bot verdict
	// (D50); left out, the defaults.
	InsightsRules consent.InsightsRules `json:"insights_rules"`
	// Profiles are its audit profiles (D51), by name.
	Profiles map[string]profile.Rules `json:"profiles"`
}

// Webhook is a webhook endpoint of a seed company (D44).
type Webhook struct {
	URL    string   `json:"url"`
	Secret string   `json:"secret"`
	Events []string `json:"events"`
}

// Property is a property of a seed company.
type Property struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// AllowedOrigins may capture sessions for the property in the browser
	// (D32), such as "https://forms.example.com".
	AllowedOrigins []string `json:"allowed_origins"`
}

// Token is an integration token of a seed company.
type Token struct {
	Token       string               `json:"token"`
	Permissions []consent.Permission `json:"permissions"`
	// ExpiresAt is when the token stops working; nil (absent, or null):
	// never. The zero instant, 0001-01-01T00:00:00Z, is a past time and
	// is refused, as the operator API refuses it (D6).
	ExpiresAt *time.Time `json:"expires_at"`
	Revoked   bool       `json:"revoked"`
}

// Session is a recorded session of a seed file.
type Session struct {
	ID         string            `json:"id"`
	CompanyID  string            `json:"company_id"`
	PropertyID string            `json:"property_id"`
	CreatedAt  time.Time         `json:"created_at"`
	Events     []json.RawMessage `json:"events"`
}

// Certificate is a certificate of a seed file.
type Certificate struct {
	ID             string          `json:"id"`
	CompanyID      string          `json:"company_id"`
	PropertyID     string          `json:"property_id"`
	SessionID      string          `json:"session_id"`
	CreatedAt      time.Time       `json:"created_at"`
	Origin         string          `json:"origin"`
	Email          string          `json:"email"`
	Mobile         string          `json:"mobile"`
	Consents       []Consent       `json:"consents"`
	EventsCombined json.RawMessage `json:"events_combined"`
}

// Consent is one consent record of a seed certificate.
type Consent struct {
	Text    string    `json:"text"`
	Types   []string  `json:"types"`
	OptInAt time.Time `json:"opt_in_at"`
}

// Parse reads a seed file. Unknown fields, wrong types and trailing data are
// errors naming what is wrong.
//
// The file must be valid UTF-8 without unpaired \u surrogate escapes, which
// encoding/json would silently turn into U+FFFD, at most MaxFileBytes, and
// hold at most MaxItems items, MaxEvents events and MaxValues other list
// elements: those are counted before anything is decoded.
func Parse(r io.Reader) (*File, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxFileBytes+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("seed: %w", err)
	case len(data) > MaxFileBytes:
		return nil, fmt.Errorf("seed: the file is over %d bytes", MaxFileBytes)
	case !jsontext.Valid(data):
		return nil, errors.New("seed: the file is not valid UTF-8, or has a \\u escape of an unpaired surrogate")
	}
	if err := checkCounts(data); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f File
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("seed: %w", err)
	}
	// More reports false at a closing ] or }: only the end of the text
	// ends the file.
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("seed: data after the JSON object")
	}
	return &f, nil
}

// MaxFileBytes is the largest seed file Parse reads.
const MaxFileBytes = 128 << 20

// Summary counts what Load loaded.
type Summary struct {
	Companies, Properties, Tokens, Sessions, Certificates, Webhooks, Profiles int
}

// ErrNotEmpty is returned by Load when the store already holds a company.
var ErrNotEmpty = errors.New("seed: the store already has data; a seed file loads only into an empty store")

// Load loads f into the empty store of svc in one transaction.
func Load(ctx context.Context, svc *consentkit.Service, f *File) (*Summary, error) {
	var sum *Summary
	err := svc.Store().Update(ctx, func(tx consent.Tx) error {
		var err error
		sum, err = LoadTx(ctx, svc, tx, f)
		return err
	})
	if err != nil {
		return nil, err
	}
	return sum, nil
}

// LoadTx is Load inside tx, so that a caller can do more in the same
// transaction.
func LoadTx(ctx context.Context, svc *consentkit.Service, tx consent.Tx, f *File) (*Summary, error) {
	empty, err := Empty(ctx, tx)
	if err != nil {
		return nil, err
	}
	if !empty {
		return nil, ErrNotEmpty
	}
	sum := &Summary{}
	if err := load(ctx, svc, tx, f, sum); err != nil {
		return nil, err
	}
	return sum, nil
}

// Empty reports whether the store holds no company.
func Empty(ctx context.Context, tx consent.Tx) (bool, error) {
	ids, err := tx.CompanyIDs(ctx, "", 1)
	return len(ids) == 0, err
}

func load(ctx context.Context, svc *consentkit.Service, tx consent.Tx, f *File, sum *Summary) error {
	for i, c := range f.Companies {
		if err := loadCompany(ctx, svc, tx, c, sum); err != nil {
			return fmt.Errorf("companies[%d] %q: %w", i, c.ID, err)
		}
	}
	for i, s := range f.Sessions {
		if err := loadSession(ctx, svc, tx, s); err != nil {
			return fmt.Errorf("sessions[%d] %q: %w", i, s.ID, err)
		}
		sum.Sessions++
	}
	// The SHA-256 of each session's recording, by session id, hashed once
	// however many certificates the file gives the session: the
	// recordings do not change while the certificates load, and a
	// certificate-by-certificate hash would make a small file cost
	// certificates × recording bytes of work inside the transaction.
	digests := map[string]consent.Digest{}
	for i, c := range f.Certificates {
		if err := loadCertificate(ctx, svc, tx, c, digests); err != nil {
			return fmt.Errorf("certificates[%d] %q: %w", i, c.ID, err)
		}
		sum.Certificates++
	}
	for i, c := range f.Companies {
		for j, w := range c.Webhooks {
			_, err := webhook.Endpoints{Service: svc}.AddTx(ctx, tx, webhook.Params{CompanyID: c.ID, URL: w.URL, Secret: w.Secret, Events: w.Events})
			if err != nil {
				return fmt.Errorf("companies[%d] %q: webhooks[%d]: %w", i, c.ID, j, err)
			}
			sum.Webhooks++
		}
	}
	return nil
}

func loadCompany(ctx context.Context, svc *consentkit.Service, tx consent.Tx, c Company, sum *Summary) error {
	if c.ID == "" {
		return consent.Errorf(consent.Invalid, "id is required")
	}
	_, err := svc.CreateCompanyTx(ctx, tx, consentkit.CompanyParams{
		ID: c.ID, Name: c.Name, ThirdPartyVerificationEnabled: c.ThirdPartyVerificationEnabled,
		AuthorizedThirdParties: c.AuthorizedThirdParties, AttestCertificates: c.AttestCertificates,
		InsightsRules: c.InsightsRules,
	})
	if err != nil {
		return err
	}
	sum.Companies++
	switch {
	case c.Balance < 0:
		return consent.Errorf(consent.Invalid, "balance must not be negative")
	case c.Balance > 0:
		if _, err := svc.TopUpTx(ctx, tx, c.ID, c.Balance, "seed"); err != nil {
			return fmt.Errorf("balance: %w", err)
		}
	}
	for j, p := range c.Properties {
		if p.ID == "" {
			return fmt.Errorf("properties[%d]: %w", j, consent.Errorf(consent.Invalid, "id is required"))
		}
		if _, err := svc.AddPropertyTx(ctx, tx, consentkit.PropertyParams{ID: p.ID, CompanyID: c.ID, Name: p.Name, AllowedOrigins: p.AllowedOrigins}); err != nil {
			return fmt.Errorf("properties[%d] %q: %w", j, p.ID, err)
		}
		sum.Properties++
	}
	for j, t := range c.Tokens {
		if t.Token == "" {
			return fmt.Errorf("tokens[%d]: %w", j, consent.Errorf(consent.Invalid, "token is required"))
		}
		p := consentkit.TokenParams{CompanyID: c.ID, Permissions: t.Permissions, Secret: t.Token}
		if t.ExpiresAt != nil {
			// TokenParams reads the zero time as "never expires".
			if t.ExpiresAt.IsZero() {
				return fmt.Errorf("tokens[%d]: %w", j, consent.Errorf(consent.Invalid, "expires_at must be in the future"))
			}
			p.ExpiresAt = *t.ExpiresAt
		}
		tok, _, err := svc.IssueTokenTx(ctx, tx, p)
		if err == nil && t.Revoked {
			err = svc.RevokeTokenTx(ctx, tx, c.ID, tok.ID)
		}
		if err != nil {
			return fmt.Errorf("tokens[%d]: %w", j, err)
		}
		sum.Tokens++
	}
	for _, name := range slices.Sorted(maps.Keys(c.Profiles)) {
		if _, err := (profile.Profiles{Service: svc}).PutTx(ctx, tx, c.ID, name, c.Profiles[name]); err != nil {
			return fmt.Errorf("profiles[%q]: %w", name, err)
		}
		sum.Profiles++
	}
	return nil
}

func loadSession(ctx context.Context, svc *consentkit.Service, tx consent.Tx, s Session) error {
	if s.ID == "" {
		return consent.Errorf(consent.Invalid, "id is required")
	}
	if _, err := svc.StartSessionTx(ctx, tx, consentkit.SessionParams{
		ID: s.ID, CompanyID: s.CompanyID, PropertyID: s.PropertyID, CreatedAt: s.CreatedAt,
	}); err != nil {
		return err
	}
	for _, chunk := range chunks(s.Events, svc.MaxChunkBytes()) {
		if _, err := svc.AppendEventsTx(ctx, tx, s.ID, chunk); err != nil {
			return fmt.Errorf("events: %w", err)
		}
	}
	return nil
}

// chunks packs events into JSON arrays of at most max bytes each (an event
// larger than that goes alone, and AppendEvents will refuse it).
func chunks(events []json.RawMessage, max int) []json.RawMessage {
	var out []json.RawMessage
	var buf bytes.Buffer
	flush := func() {
		if buf.Len() > 0 {
			buf.WriteByte(']')
			out = append(out, bytes.Clone(buf.Bytes()))
			buf.Reset()
		}
	}
	for _, e := range events {
		if buf.Len() > 0 && buf.Len()+len(e)+2 > max {
			flush()
		}
		if buf.Len() == 0 {
			buf.WriteByte('[')
		} else {
			buf.WriteByte(',')
		}
		buf.Write(e)
	}
	flush()
	return out
}

func loadCertificate(ctx context.Context, svc *consentkit.Service, tx consent.Tx, c Certificate, digests map[string]consent.Digest) error {
	if c.ID == "" {
		return consent.Errorf(consent.Invalid, "id is required")
	}
	records := make([]consent.Record, len(c.Consents))
	for i, r := range c.Consents {
		records[i] = consent.Record{Text: r.Text, Types: r.Types, OptInAt: r.OptInAt}
	}
	p := consentkit.CertificateParams{
		ID: c.ID, CompanyID: c.CompanyID, PropertyID: c.PropertyID, SessionID: c.SessionID,
		Origin: c.Origin, Email: c.Email, Mobile: c.Mobile, Records: records,
		EventsCombined: c.EventsCombined, CreatedAt: c.CreatedAt,
	}
	// A certificate of a session the file recorded holds the SHA-256 of its
	// recording, as one issued through capture does, so that verifications
	// check it (D41); one of a session without events holds none. Each
	// session's recording is read and hashed once (digests).
	if d, ok := digests[c.SessionID]; ok {
		p.RecordingSHA256 = d
	} else if c.SessionID != "" {
		ses, err := tx.Session(ctx, c.SessionID)
		if err != nil && consent.ErrorCode(err) != consent.NotFound {
			return err
		}
		if err == nil {
			if ses.EventChunks > 0 {
				if p.RecordingSHA256, err = consent.RecordingDigest(ctx, tx, c.SessionID); err != nil {
					return err
				}
			}
			digests[c.SessionID] = p.RecordingSHA256 // zero: no events
		}
	}
	_, err := svc.IssueCertificateTx(ctx, tx, p)
	return err
}
