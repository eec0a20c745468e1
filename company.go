package consentkit

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/consentkit/consentkit/consent"
)

// Companies, their properties and their integration tokens.

// maxNameLength bounds display names.
const maxNameLength = 200

func checkName(field, name string) error {
	if strings.TrimSpace(name) == "" {
		return consent.Errorf(consent.Invalid, "%s is required", field)
	}
	if len(name) > maxNameLength {
		return consent.Errorf(consent.Invalid, "%s must be at most %d bytes", field, maxNameLength)
	}
	return consent.CheckText(field, name)
}

// CompanyParams describes a new company.
type CompanyParams struct {
	ID                            string // required (D29)
	Name                          string // required
	ThirdPartyVerificationEnabled bool
	AuthorizedThirdParties        []string // company ids (D29)
	// AttestCertificates has every certificate the company issues
	// attested (D49).
	AttestCertificates bool
	// InsightsRules are the thresholds of its certificates' bot verdict
	// (D50); the zero value holds the defaults (SetInsightsRules).
	InsightsRules consent.InsightsRules
}

// CheckNewID is CheckID for the id of something being made, which routes
// name in their paths: it also refuses "." and "..", which a URL path
// reads as steps, so that nothing is made that no route could reach.
// Stored ids are read with consent.CheckID, as they were made.
func CheckNewID(field, id string) error {
	if err := consent.CheckID(field, id); err != nil {
		return err
	}
	if id == "." || id == ".." {
		return consent.Errorf(consent.Invalid, "%s may not be %q: a URL path reads it as a step", field, id)
	}
	return nil
}

// CreateCompany creates a company with an empty wallet. Conflict when the id
// is taken.
func (s *Service) CreateCompany(ctx context.Context, p CompanyParams) (*consent.Company, error) {
	return update(ctx, s, func(tx consent.Tx) (*consent.Company, error) { return s.CreateCompanyTx(ctx, tx, p) })
}

// CreateCompanyTx is CreateCompany inside tx.
func (s *Service) CreateCompanyTx(ctx context.Context, tx consent.Tx, p CompanyParams) (*consent.Company, error) {
	if err := CheckNewID("id", p.ID); err != nil {
		return nil, err
	}
	if err := checkName("name", p.Name); err != nil {
		return nil, err
	}
	parties, err := checkParties(p.AuthorizedThirdParties)
	if err != nil {
		return nil, err
	}
	if err := p.InsightsRules.Check(); err != nil {
		return nil, err
	}
	c := &consent.Company{
		ID: p.ID, Name: p.Name,
		ThirdPartyVerificationEnabled: p.ThirdPartyVerificationEnabled,
		AuthorizedThirdParties:        parties,
		AttestCertificates:            p.AttestCertificates,
		InsightsRules:                 p.InsightsRules,
		CreatedAt:                     s.Now(),
	}
	if err := tx.CreateCompany(ctx, c); err != nil {
		return nil, err
	}
	detail := thirdPartyDetail(c.ThirdPartyVerificationEnabled, parties)
	detail["attest_certificates"], detail["insights_rules"] = c.AttestCertificates, c.InsightsRules
	a := AuditParams{CompanyID: c.ID, Action: consent.AuditCompanyCreate, Target: c.ID, Detail: detail}
	if err := s.Audit(ctx, tx, a); err != nil {
		return nil, err
	}
	return c, nil
}

// companyAudit describes a change of a company's third-party settings for
// the audit log.
func companyAudit(action, companyID string, enabled bool, parties []string) AuditParams {
	return AuditParams{CompanyID: companyID, Action: action, Target: companyID, Detail: thirdPartyDetail(enabled, parties)}
}

// thirdPartyDetail is the audit detail of a company's third-party settings.
func thirdPartyDetail(enabled bool, parties []string) map[string]any {
	detail := map[string]any{"third_party_verification_enabled": enabled}
	auditList(detail, "authorized_third_parties", parties)
	return detail
}

// maxAuditedList is the most bytes of JSON a list of settings (authorized
// third parties, allowed origins) may take in an audit entry; a longer one
// is recorded by its length and SHA-256 alone, since consent.MaxAuditDetail
// bounds an entry's detail and a setting the caller may make must not be
// refused for its record.
const maxAuditedList = 4 << 10

// auditList puts list in detail under name when its JSON takes at most
// maxAuditedList bytes; otherwise its length under name+"_count" and the
// SHA-256 of its JSON, in hex, under name+"_sha256".
func auditList(detail map[string]any, name string, list []string) {
	enc, err := json.Marshal(list)
	if err != nil || len(enc) <= maxAuditedList { // a []string always encodes
		detail[name] = list
		return
	}
	sum := sha256.Sum256(enc)
	detail[name+"_count"], detail[name+"_sha256"] = len(list), hex.EncodeToString(sum[:])
}

func checkParties(ids []string) ([]string, error) {
	out := make([]string, 0, len(ids))
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if err := consent.CheckID("authorized_third_parties", id); err != nil {
			return nil, err
		}
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out, nil
}

// SetThirdParty replaces the company's third-party verification settings
// (D9). NotFound when the company does not exist.
func (s *Service) SetThirdParty(ctx context.Context, companyID string, enabled bool, authorized []string) (*consent.Company, error) {
	parties, err := checkParties(authorized)
	if err != nil {
		return nil, err
	}
	p := companyAudit(consent.AuditCompanyUpdate, companyID, enabled, parties)
	return s.updateCompany(ctx, &p, func(c *consent.Company) {
		c.ThirdPartyVerificationEnabled, c.AuthorizedThirdParties = enabled, parties
	})
}

// SetAttestCertificates turns on or off the attestation of every
// certificate the company issues (D49) and returns the company; turning it
// on attests the certificates issued from then on, not those issued
// before. Setting it as it is changes nothing but is audited all the same.
// NotFound when the company does not exist.
func (s *Service) SetAttestCertificates(ctx context.Context, companyID string, on bool) (*consent.Company, error) {
	p := AuditParams{CompanyID: companyID, Action: consent.AuditCompanyAttestation, Target: companyID,
		Detail: map[string]any{"attest_certificates": on}}
	return s.updateCompany(ctx, &p, func(c *consent.Company) { c.AttestCertificates = on })
}

// SetInsightsRules replaces the thresholds of the bot verdict of the
// company's certificates (D50; package insights documents each rule and
// its default: a zero threshold is the default, a negative one turns its
// rule off) and returns the company. The insights job judges the
// certificates issued from then on by them, and every answer's verdict
// when asked uses them (never milder than the signed verdict). Invalid
// when a threshold is not a finite number within ±1e6 (Check); NotFound
// when the company does not exist.
func (s *Service) SetInsightsRules(ctx context.Context, companyID string, rules consent.InsightsRules) (*consent.Company, error) {
	if err := rules.Check(); err != nil {
		return nil, err
	}
	p := AuditParams{CompanyID: companyID, Action: consent.AuditCompanyInsightsRules, Target: companyID,
		Detail: map[string]any{"insights_rules": rules}}
	return s.updateCompany(ctx, &p, func(c *consent.Company) { c.InsightsRules = rules })
}

// updateCompany changes the company as set says and records p with it.
func (s *Service) updateCompany(ctx context.Context, p *AuditParams, set func(*consent.Company)) (*consent.Company, error) {
	var c *consent.Company
	err := s.UpdateAudited(ctx, p, func(tx consent.Tx) error {
		var err error
		if c, err = tx.Company(ctx, p.CompanyID); err != nil {
			return err
		}
		set(c)
		return tx.UpdateCompany(ctx, c)
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// PropertyParams describes a new property.
type PropertyParams struct {
	ID        string // optional: a random id when empty
	CompanyID string // required: an existing company
	Name      string // required
	// AllowedOrigins may capture sessions in the browser (D32); each is
	// normalized by NormalizeOrigin.
	AllowedOrigins []string
}

// AddProperty adds a property to a company. NotFound when the company does
// not exist; Conflict when the id is taken.
func (s *Service) AddProperty(ctx context.Context, p PropertyParams) (*consent.Property, error) {
	return update(ctx, s, func(tx consent.Tx) (*consent.Property, error) { return s.AddPropertyTx(ctx, tx, p) })
}

// AddPropertyTx is AddProperty inside tx.
func (s *Service) AddPropertyTx(ctx context.Context, tx consent.Tx, p PropertyParams) (*consent.Property, error) {
	if p.ID == "" {
		p.ID = consent.NewID("prop")
	}
	if err := CheckNewID("id", p.ID); err != nil {
		return nil, err
	}
	if err := consent.CheckID("company_id", p.CompanyID); err != nil {
		return nil, err
	}
	if err := checkName("name", p.Name); err != nil {
		return nil, err
	}
	origins, err := normalizeOrigins(p.AllowedOrigins)
	if err != nil {
		return nil, err
	}
	prop := &consent.Property{ID: p.ID, CompanyID: p.CompanyID, Name: p.Name, AllowedOrigins: origins, CreatedAt: s.Now()}
	if err := tx.CreateProperty(ctx, prop); err != nil {
		return nil, err
	}
	if err := s.Audit(ctx, tx, propertyAudit(consent.AuditPropertyCreate, prop.CompanyID, prop.ID, origins)); err != nil {
		return nil, err
	}
	return prop, nil
}

// propertyAudit describes a change of a property for the audit log.
func propertyAudit(action, companyID, propertyID string, origins []string) AuditParams {
	detail := map[string]any{}
	auditList(detail, "allowed_origins", origins)
	return AuditParams{CompanyID: companyID, Action: action, Target: propertyID, Detail: detail}
}

// maxOrigins bounds a property's allowed origins.
const maxOrigins = 100

func normalizeOrigins(list []string) ([]string, error) {
	if len(list) > maxOrigins {
		return nil, consent.Errorf(consent.Invalid, "allowed_origins: at most %d", maxOrigins)
	}
	out := make([]string, 0, len(list))
	for _, o := range list {
		n, err := consent.NormalizeOrigin(o)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// SetAllowedOrigins replaces the origins allowed to capture sessions for the
// company's property (D32) and returns the property. NotFound when the
// property does not exist or is not the company's.
func (s *Service) SetAllowedOrigins(ctx context.Context, companyID, propertyID string, origins []string) (*consent.Property, error) {
	norm, err := originsFor(propertyID, origins)
	if err != nil {
		return nil, err
	}
	var prop *consent.Property
	a := propertyAudit(consent.AuditPropertyUpdate, companyID, propertyID, norm)
	err = s.UpdateAudited(ctx, &a, func(tx consent.Tx) error {
		p, err := setAllowedOrigins(ctx, tx, companyID, propertyID, norm)
		prop = p
		return err
	})
	if err != nil {
		return nil, err
	}
	return prop, nil
}

// SetAllowedOriginsTx is SetAllowedOrigins inside tx, audited when it
// succeeds. A caller that adds to the origins it reads in tx loses no
// change made meanwhile: in an Update, the property stays locked from the
// read to the commit.
func (s *Service) SetAllowedOriginsTx(ctx context.Context, tx consent.Tx, companyID, propertyID string, origins []string) (*consent.Property, error) {
	norm, err := originsFor(propertyID, origins)
	if err != nil {
		return nil, err
	}
	prop, err := setAllowedOrigins(ctx, tx, companyID, propertyID, norm)
	if err != nil {
		return nil, err
	}
	if err := s.Audit(ctx, tx, propertyAudit(consent.AuditPropertyUpdate, companyID, propertyID, norm)); err != nil {
		return nil, err
	}
	return prop, nil
}

// originsFor returns origins normalized for propertyID, refused before
// any read: origins that are not origins (Invalid), an id that names no
// property (NotFound).
func originsFor(propertyID string, origins []string) ([]string, error) {
	norm, err := normalizeOrigins(origins)
	if err != nil {
		return nil, err
	}
	if !consent.ValidID(propertyID) {
		return nil, consent.Errorf(consent.NotFound, "property not found")
	}
	return norm, nil
}

// setAllowedOrigins writes the normalized origins to the company's
// property.
func setAllowedOrigins(ctx context.Context, tx consent.Tx, companyID, propertyID string, norm []string) (*consent.Property, error) {
	if err := consent.CheckProperty(ctx, tx, companyID, propertyID); err != nil {
		return nil, err
	}
	p, err := tx.Property(ctx, propertyID)
	if err != nil {
		return nil, err
	}
	p.AllowedOrigins = norm
	if err := tx.UpdateProperty(ctx, p); err != nil {
		return nil, err
	}
	return p, nil
}

// TokenParams describes a new integration token.
type TokenParams struct {
	CompanyID string // required: an existing company
	// Permissions are optional: none lets the token call the Verification
	// API; consent.PermissionRetention adds the Retain API.
	Permissions []consent.Permission
	ExpiresAt   time.Time // optional, in the future; zero: never
	// Secret, when set, is used instead of a generated one (to load a
	// token issued elsewhere); it must be at least MinSecretLength bytes,
	// each a visible ASCII character ('!' to '~'), as an Authorization
	// header carries it.
	Secret string
}

// Token secrets.
const (
	TokenPrefix     = "ck_" // readable prefix of generated secrets (D6)
	MinSecretLength = 16
	maxSecretLength = 512
)

// IssueToken creates a token and returns it with its secret. The secret is
// not stored (only its SHA-256 digest is, D6) and cannot be shown again.
func (s *Service) IssueToken(ctx context.Context, p TokenParams) (*consent.Token, string, error) {
	var secret string
	t, err := update(ctx, s, func(tx consent.Tx) (*consent.Token, error) {
		t, sec, err := s.IssueTokenTx(ctx, tx, p)
		secret = sec
		return t, err
	})
	if err != nil {
		return nil, "", err
	}
	return t, secret, nil
}

// IssueTokenTx is IssueToken inside tx.
func (s *Service) IssueTokenTx(ctx context.Context, tx consent.Tx, p TokenParams) (*consent.Token, string, error) {
	if err := consent.CheckID("company_id", p.CompanyID); err != nil {
		return nil, "", err
	}
	for _, perm := range p.Permissions {
		if perm != consent.PermissionRetention {
			return nil, "", consent.Errorf(consent.Invalid, "permissions: unknown permission %q", perm)
		}
	}
	secret := p.Secret
	switch {
	case secret == "":
		var b [32]byte
		rand.Read(b[:])
		secret = TokenPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	case len(secret) < MinSecretLength || len(secret) > maxSecretLength || strings.ContainsFunc(secret, notVisibleASCII):
		// What an Authorization header carries as it is: a token that
		// no request can present is of no use.
		return nil, "", consent.Errorf(consent.Invalid, "token must be %d to %d visible ASCII characters (no white space)", MinSecretLength, maxSecretLength)
	}
	now := s.Now()
	if !p.ExpiresAt.IsZero() && !consent.UTC(p.ExpiresAt).After(now) {
		return nil, "", consent.Errorf(consent.Invalid, "expires_at must be in the future")
	}
	t := &consent.Token{
		ID:        consent.NewID("tok"),
		CompanyID: p.CompanyID,
		Digest:    consent.DigestOf(secret),
		// Each once, as a company's third parties and an endpoint's events.
		Permissions: slices.Compact(slices.Sorted(slices.Values(p.Permissions))),
		CreatedAt:   now,
	}
	if !p.ExpiresAt.IsZero() {
		t.ExpiresAt = consent.UTC(p.ExpiresAt)
	}
	if err := tx.CreateToken(ctx, t); err != nil {
		return nil, "", err
	}
	detail := map[string]any{"permissions": t.Permissions}
	if !t.ExpiresAt.IsZero() {
		detail["expires_at"] = t.ExpiresAt.Format(time.RFC3339Nano)
	}
	if err := s.Audit(ctx, tx, AuditParams{CompanyID: t.CompanyID, Action: consent.AuditTokenIssue, Target: t.ID, Detail: detail}); err != nil {
		return nil, "", err
	}
	return t, secret, nil
}

// RevokeToken revokes a token of the company; it stops authenticating on
// this Service at once, and on other instances sharing the store within
// their Config.TokenCacheTTL. Revoking it again does nothing. NotFound
// when the company has no such token.
func (s *Service) RevokeToken(ctx context.Context, companyID, tokenID string) error {
	if !consent.ValidID(tokenID) {
		return consent.Errorf(consent.NotFound, "token not found")
	}
	p := AuditParams{CompanyID: companyID, Action: consent.AuditTokenRevoke, Target: tokenID}
	err := s.UpdateAudited(ctx, &p, func(tx consent.Tx) error { return tx.RevokeToken(ctx, companyID, tokenID, s.Now()) })
	// After the commit: a request that read the token before it is not
	// cached (see ttlcache.Cache.Epoch), and an entry it cached is removed.
	s.forgetToken(companyID, tokenID)
	return err
}

// RevokeTokenTx is RevokeToken inside tx. The Service cannot know when tx
// commits, so the token stops authenticating everywhere, this Service
// included, within Config.TokenCacheTTL of the commit.
func (s *Service) RevokeTokenTx(ctx context.Context, tx consent.Tx, companyID, tokenID string) error {
	if err := tx.RevokeToken(ctx, companyID, tokenID, s.Now()); err != nil {
		return err
	}
	s.forgetToken(companyID, tokenID)
	return s.Audit(ctx, tx, AuditParams{CompanyID: companyID, Action: consent.AuditTokenRevoke, Target: tokenID})
}

// forgetToken removes the company's token from the cache of tokens.
func (s *Service) forgetToken(companyID, tokenID string) {
	s.tokens.Remove(func(t *consent.Token) bool { return t.ID == tokenID && t.CompanyID == companyID })
}

// errBadToken is the one answer to a token that does not authenticate:
// unknown, expired and revoked tokens are told apart by nothing (D6).
const errBadToken = "the token is unknown, expired or revoked"

// Authenticate returns the active token whose secret is given. Unauthorized
// when the secret is empty, unknown, expired or revoked (D6), all with the
// same message. A token that authenticated recently is taken from a cache
// (Config.TokenCacheTTL), without a transaction. The token returned is
// shared: do not change it.
func (s *Service) Authenticate(ctx context.Context, secret string) (*consent.Token, error) {
	if secret == "" || len(secret) > maxSecretLength {
		return nil, consent.Errorf(consent.Unauthorized, errBadToken)
	}
	d := consent.DigestOf(secret)
	now := s.Now()
	if t, ok := s.tokens.Get(d, now); ok {
		if !t.Active(now) {
			return nil, consent.Errorf(consent.Unauthorized, errBadToken)
		}
		return t, nil
	}
	epoch := s.tokens.Epoch()
	var t *consent.Token
	err := s.store.View(ctx, func(tx consent.Tx) error {
		var err error
		t, err = tx.TokenByDigest(ctx, d)
		return err
	})
	if err == nil {
		s.tokens.Put(d, t, now, epoch)
	}
	switch {
	case consent.ErrorCode(err) == consent.NotFound || err == nil && !t.Active(s.Now()):
		return nil, consent.Errorf(consent.Unauthorized, errBadToken)
	case err != nil:
		return nil, err
	}
	return t, nil
}

// AuthenticateProperty authenticates a caller by company and property ids,
// the opt-in credentials of D8: nil when propertyID names a property of
// companyID. Unauthorized otherwise, with one message whatever was wrong.
// A property id is not a secret, so a host enables this mode knowingly.
func (s *Service) AuthenticateProperty(ctx context.Context, companyID, propertyID string) error {
	deny := consent.Errorf(consent.Unauthorized, "an Authorization: Bearer token, or company_id and property_id of one of its properties, is required")
	if !consent.ValidID(companyID) || !consent.ValidID(propertyID) {
		return deny
	}
	err := s.store.View(ctx, func(tx consent.Tx) error { return consent.CheckProperty(ctx, tx, companyID, propertyID) })
	if consent.ErrorCode(err) == consent.NotFound {
		return deny
	}
	return err
}

// notVisibleASCII reports whether r is outside ASCII's visible characters,
// '!' to '~'.
func notVisibleASCII(r rune) bool { return r < '!' || r > '~' }
