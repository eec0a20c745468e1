package consent

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/consentkit/consentkit/internal/flight"
	"github.com/consentkit/consentkit/internal/sigcache"
	"github.com/consentkit/consentkit/internal/ttlcache"
	"github.com/consentkit/consentkit/signed"
	"github.com/consentkit/consentkit/wallet"
)

// Config holds the settings that shape the domain: the clock, the price
// list, the retention windows and the recording limits. It is declared here
// once; verify, retain, optout, the conversion worker and httpadapter are
// built from a *Service and read these settings from it, so no other package
// re-declares them. The zero value of each field means its default; a
// negative value is an error from NewService.
type Config struct {
	// Now is the clock; default time.Now. Times are stored in UTC.
	Now func() time.Time
	// Prices is the price list; default wallet.DefaultPrices() (D2).
	Prices *wallet.Prices
	// DefaultRetention is how long unretained sessions and certificates
	// are kept: default 90 days (D26).
	DefaultRetention time.Duration
	// LongTermRetention is how long retained sessions and certificates are
	// kept from their retention: default DefaultLongTermYears calendar
	// years (D26).
	LongTermRetention time.Duration
	// MaxChunkBytes bounds one AppendEvents call: default 1 MiB, the
	// request body limit of D29.
	MaxChunkBytes int
	// MaxRecordingBytes bounds a session's whole recording: default 64 MiB.
	MaxRecordingBytes int64
	// SigningKeys sign certificates (D41): the first signs every new
	// certificate; all of them, and PublicKeys, verify. Rotate by putting a
	// new key first and keeping the old one after it (or only its public
	// half in PublicKeys). None: certificates are issued unsigned and only
	// their recording's SHA-256 is checked. With keys, an unsigned
	// certificate fails its integrity check.
	SigningKeys []signed.SigningKey
	// PublicKeys are retired keys whose certificates still verify.
	PublicKeys []signed.PublicKey
	// UnsignedBefore, with keys, lets certificates created before it that
	// carry no signature pass the signature check: those issued before
	// signing was turned on. Zero: every certificate must be signed. (Their
	// creation time is not signed, so set it no later than when signing
	// began.)
	UnsignedBefore time.Time
	// LowBalanceThreshold, when positive, makes a charge that takes a
	// wallet from at least this much to below it emit
	// EventWalletLowBalance (D44); zero emits none.
	LowBalanceThreshold wallet.Amount
	// WebhookAllowPrivate lets webhook endpoints have URLs whose host is a
	// loopback, private or link-local IP address (see webhook.CheckURL):
	// for tests and private deployments. The delivery's own guard is
	// configured in package webhook.
	WebhookAllowPrivate bool
	// IdempotencyWait is how long a call waits for an earlier call with
	// its idempotency key, running on this instance, to end before it is
	// refused with ErrKeyInFlight (D40): default DefaultIdempotencyWait.
	IdempotencyWait time.Duration
	// TokenCacheTTL is how long Authenticate trusts a token it read from
	// the store without reading it again: default DefaultTokenCacheTTL; a
	// negative value turns the cache off. RevokeToken on this Service
	// takes effect here at once; a revocation made anywhere else — another
	// instance on the same database, RevokeTokenTx, the store directly —
	// takes effect here within this long.
	TokenCacheTTL time.Duration
	// TokenCacheSize bounds the tokens the cache holds: default
	// DefaultTokenCacheSize.
	TokenCacheSize int
	// SignatureCacheSize bounds how many good certificate signatures the
	// service remembers, so that a certificate verified again costs a
	// SHA-256 instead of an Ed25519 check (D41; see internal/sigcache: a
	// changed certificate is always checked in full): default
	// DefaultSignatureCacheSize; a negative value turns the cache off.
	SignatureCacheSize int
}

// Defaults of Config.
const (
	DefaultRetention         = 90 * 24 * time.Hour
	DefaultMaxChunkBytes     = 1 << 20
	DefaultMaxRecordingBytes = 64 << 20
	// DefaultLongTermYears is how long a retained item is kept by default:
	// five calendar years from its retention, past the four-year TCPA
	// limitation period (D26).
	DefaultLongTermYears = 5
	// The token cache's defaults (Config.TokenCacheTTL, TokenCacheSize).
	DefaultTokenCacheTTL  = 2 * time.Second
	DefaultTokenCacheSize = 10_000
)

// Service is the root of the library's Go API: a store and the Config that
// every operation follows. It creates the things the rest of the library
// works on — companies, properties, tokens, top-ups, session recordings and
// certificates — and authenticates callers. It is safe for concurrent use.
type Service struct {
	store   Store
	cfg     Config // with defaults
	flights flight.Group
	// tokens are the tokens that authenticated lately, by digest: a
	// request finds its token without a transaction. A revocation through
	// this Service removes its token at once; one made elsewhere (another
	// instance, the store directly) is seen when the entry, at most
	// Config.TokenCacheTTL old, is read again. Unknown secrets are never
	// cached.
	tokens ttlcache.Cache[Digest, *Token]
	// keys are PublicKeys(), made once; signatures the good signatures
	// checked lately.
	keys       []signed.PublicKey
	signatures *sigcache.Cache
}

// NewService returns a Service over store. It fails when store is nil or a
// field of cfg is negative.
func NewService(store Store, cfg Config) (*Service, error) {
	if store == nil {
		return nil, errors.New("consent: NewService needs a Store")
	}
	if cfg.DefaultRetention < 0 || cfg.LongTermRetention < 0 || cfg.MaxChunkBytes < 0 || cfg.MaxRecordingBytes < 0 || cfg.LowBalanceThreshold < 0 {
		return nil, errors.New("consent: Config durations and limits must not be negative (zero means the default)")
	}
	if err := checkKeys(cfg.SigningKeys, cfg.PublicKeys); err != nil {
		return nil, err
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Prices == nil {
		prices := wallet.DefaultPrices()
		cfg.Prices = &prices
	} else {
		prices := *cfg.Prices // a copy: the caller's later edits change nothing
		if err := prices.Check(); err != nil {
			return nil, fmt.Errorf("consent: Config.Prices: %w", err)
		}
		cfg.Prices = &prices
	}
	if cfg.DefaultRetention == 0 {
		cfg.DefaultRetention = DefaultRetention
	}
	if cfg.IdempotencyWait == 0 {
		cfg.IdempotencyWait = DefaultIdempotencyWait
	}
	if cfg.MaxChunkBytes == 0 {
		cfg.MaxChunkBytes = DefaultMaxChunkBytes
	}
	if cfg.MaxRecordingBytes == 0 {
		cfg.MaxRecordingBytes = DefaultMaxRecordingBytes
	}
	if cfg.TokenCacheTTL == 0 {
		cfg.TokenCacheTTL = DefaultTokenCacheTTL
	}
	if cfg.TokenCacheSize <= 0 {
		cfg.TokenCacheSize = DefaultTokenCacheSize
	}
	if cfg.SignatureCacheSize == 0 {
		cfg.SignatureCacheSize = DefaultSignatureCacheSize
	}
	s := &Service{store: Checked(store), cfg: cfg, tokens: ttlcache.Cache[Digest, *Token]{TTL: cfg.TokenCacheTTL, Size: cfg.TokenCacheSize},
		signatures: sigcache.New(cfg.SignatureCacheSize)}
	for _, k := range cfg.SigningKeys {
		s.keys = append(s.keys, k.Public())
	}
	s.keys = append(s.keys, cfg.PublicKeys...)
	return s, nil
}

// Store returns the store the service works on, checked: each Tx it gives
// refuses a value or an argument that no store may keep (Invalid) before
// the store underneath sees it, so that every store, one written for
// another database too, is given the same values (see Tx). Go through it,
// never around it.
func (s *Service) Store() Store { return s.store }

// MaxChunkBytes is the largest chunk of events AppendEvents accepts.
func (s *Service) MaxChunkBytes() int { return s.cfg.MaxChunkBytes }

// Prices returns the price list in force.
func (s *Service) Prices() wallet.Prices { return *s.cfg.Prices }

// Now returns the service clock's time in UTC, to the microsecond: the time
// every operation records.
func (s *Service) Now() time.Time { return UTC(s.cfg.Now()) }

// RetainUntil returns when an item retained at now may be purged: now plus
// Config.LongTermRetention, or DefaultLongTermYears calendar years (D26).
func (s *Service) RetainUntil(now time.Time) time.Time {
	if s.cfg.LongTermRetention == 0 {
		return now.AddDate(DefaultLongTermYears, 0, 0)
	}
	return now.Add(s.cfg.LongTermRetention)
}

// update runs fn in one transaction of the store and returns its result.
// Every XxxTx method has a twin Xxx that runs it this way; the Tx forms let
// a caller do several things in one transaction (a seed file, say).
func update[T any](ctx context.Context, s *Service, fn func(tx Tx) (T, error)) (T, error) {
	var out T
	err := s.store.Update(ctx, func(tx Tx) error {
		var err error
		out, err = fn(tx)
		return err
	})
	return out, err
}

// maxNameLength bounds display names.
const maxNameLength = 200

func checkName(field, name string) error {
	if strings.TrimSpace(name) == "" {
		return Errorf(Invalid, "%s is required", field)
	}
	if len(name) > maxNameLength {
		return Errorf(Invalid, "%s must be at most %d bytes", field, maxNameLength)
	}
	return CheckText(field, name)
}

// CompanyParams describes a new company.
type CompanyParams struct {
	ID                            string // required (D29)
	Name                          string // required
	ThirdPartyVerificationEnabled bool
	AuthorizedThirdParties        []string // company ids (D29)
}

// CreateCompany creates a company with an empty wallet. Conflict when the id
// is taken.
func (s *Service) CreateCompany(ctx context.Context, p CompanyParams) (*Company, error) {
	return update(ctx, s, func(tx Tx) (*Company, error) { return s.CreateCompanyTx(ctx, tx, p) })
}

// CreateCompanyTx is CreateCompany inside tx.
func (s *Service) CreateCompanyTx(ctx context.Context, tx Tx, p CompanyParams) (*Company, error) {
	if err := CheckID("id", p.ID); err != nil {
		return nil, err
	}
	if err := checkName("name", p.Name); err != nil {
		return nil, err
	}
	parties, err := checkParties(p.AuthorizedThirdParties)
	if err != nil {
		return nil, err
	}
	c := &Company{
		ID: p.ID, Name: p.Name,
		ThirdPartyVerificationEnabled: p.ThirdPartyVerificationEnabled,
		AuthorizedThirdParties:        parties,
		CreatedAt:                     s.Now(),
	}
	if err := tx.CreateCompany(ctx, c); err != nil {
		return nil, err
	}
	if err := s.Audit(ctx, tx, companyAudit(AuditCompanyCreate, c.ID, c.ThirdPartyVerificationEnabled, parties)); err != nil {
		return nil, err
	}
	return c, nil
}

// companyAudit describes a change of a company's settings for the audit log.
func companyAudit(action, companyID string, enabled bool, parties []string) AuditParams {
	return AuditParams{CompanyID: companyID, Action: action, Target: companyID, Detail: map[string]any{
		"third_party_verification_enabled": enabled, "authorized_third_parties": parties,
	}}
}

func checkParties(ids []string) ([]string, error) {
	out := make([]string, 0, len(ids))
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if err := CheckID("authorized_third_parties", id); err != nil {
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
// (§4.7). NotFound when the company does not exist.
func (s *Service) SetThirdParty(ctx context.Context, companyID string, enabled bool, authorized []string) (*Company, error) {
	parties, err := checkParties(authorized)
	if err != nil {
		return nil, err
	}
	var c *Company
	p := companyAudit(AuditCompanyUpdate, companyID, enabled, parties)
	err = s.UpdateAudited(ctx, &p, func(tx Tx) error {
		var err error
		if c, err = tx.Company(ctx, companyID); err != nil {
			return err
		}
		c.ThirdPartyVerificationEnabled, c.AuthorizedThirdParties = enabled, parties
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
	CompanyID string
	Name      string
	// AllowedOrigins may capture sessions in the browser (D32); each is
	// normalized by NormalizeOrigin.
	AllowedOrigins []string
}

// AddProperty adds a property to a company. NotFound when the company does
// not exist; Conflict when the id is taken.
func (s *Service) AddProperty(ctx context.Context, p PropertyParams) (*Property, error) {
	return update(ctx, s, func(tx Tx) (*Property, error) { return s.AddPropertyTx(ctx, tx, p) })
}

// AddPropertyTx is AddProperty inside tx.
func (s *Service) AddPropertyTx(ctx context.Context, tx Tx, p PropertyParams) (*Property, error) {
	if p.ID == "" {
		p.ID = NewID("prop")
	}
	if err := CheckID("id", p.ID); err != nil {
		return nil, err
	}
	if err := CheckID("company_id", p.CompanyID); err != nil {
		return nil, err
	}
	if err := checkName("name", p.Name); err != nil {
		return nil, err
	}
	origins, err := normalizeOrigins(p.AllowedOrigins)
	if err != nil {
		return nil, err
	}
	prop := &Property{ID: p.ID, CompanyID: p.CompanyID, Name: p.Name, AllowedOrigins: origins, CreatedAt: s.Now()}
	if err := tx.CreateProperty(ctx, prop); err != nil {
		return nil, err
	}
	if err := s.Audit(ctx, tx, propertyAudit(AuditPropertyCreate, prop.CompanyID, prop.ID, origins)); err != nil {
		return nil, err
	}
	return prop, nil
}

// propertyAudit describes a change of a property for the audit log.
func propertyAudit(action, companyID, propertyID string, origins []string) AuditParams {
	return AuditParams{CompanyID: companyID, Action: action, Target: propertyID,
		Detail: map[string]any{"allowed_origins": origins}}
}

// maxOrigins bounds a property's allowed origins.
const maxOrigins = 100

func normalizeOrigins(list []string) ([]string, error) {
	if len(list) > maxOrigins {
		return nil, Errorf(Invalid, "allowed_origins: at most %d", maxOrigins)
	}
	out := make([]string, 0, len(list))
	for _, o := range list {
		n, err := NormalizeOrigin(o)
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
func (s *Service) SetAllowedOrigins(ctx context.Context, companyID, propertyID string, origins []string) (*Property, error) {
	norm, err := normalizeOrigins(origins)
	if err != nil {
		return nil, err
	}
	if !ValidID(propertyID) {
		return nil, Errorf(NotFound, "property not found")
	}
	var prop *Property
	a := propertyAudit(AuditPropertyUpdate, companyID, propertyID, norm)
	err = s.UpdateAudited(ctx, &a, func(tx Tx) error {
		if err := CheckProperty(ctx, tx, companyID, propertyID); err != nil {
			return err
		}
		p, err := tx.Property(ctx, propertyID)
		if err != nil {
			return err
		}
		p.AllowedOrigins = norm
		prop = p
		return tx.UpdateProperty(ctx, p)
	})
	if err != nil {
		return nil, err
	}
	return prop, nil
}

// TokenParams describes a new integration token.
type TokenParams struct {
	CompanyID   string
	Permissions []Permission
	ExpiresAt   time.Time // zero: never
	// Secret, when set, is used instead of a generated one (to load a
	// token issued elsewhere); it must be at least MinSecretLength bytes.
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
func (s *Service) IssueToken(ctx context.Context, p TokenParams) (*Token, string, error) {
	var secret string
	t, err := update(ctx, s, func(tx Tx) (*Token, error) {
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
func (s *Service) IssueTokenTx(ctx context.Context, tx Tx, p TokenParams) (*Token, string, error) {
	if err := CheckID("company_id", p.CompanyID); err != nil {
		return nil, "", err
	}
	for _, perm := range p.Permissions {
		if perm != PermissionRetention {
			return nil, "", Errorf(Invalid, "permissions: unknown permission %q", perm)
		}
	}
	secret := p.Secret
	switch {
	case secret == "":
		var b [32]byte
		rand.Read(b[:])
		secret = TokenPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	case len(secret) < MinSecretLength || len(secret) > maxSecretLength || strings.ContainsAny(secret, " \t\r\n"):
		return nil, "", Errorf(Invalid, "token must be %d to %d bytes without white space", MinSecretLength, maxSecretLength)
	}
	now := s.Now()
	if !p.ExpiresAt.IsZero() && !UTC(p.ExpiresAt).After(now) {
		return nil, "", Errorf(Invalid, "expires_at must be in the future")
	}
	t := &Token{
		ID:          NewID("tok"),
		CompanyID:   p.CompanyID,
		Digest:      DigestOf(secret),
		Permissions: append([]Permission(nil), p.Permissions...),
		CreatedAt:   now,
	}
	if !p.ExpiresAt.IsZero() {
		t.ExpiresAt = UTC(p.ExpiresAt)
	}
	if err := tx.CreateToken(ctx, t); err != nil {
		return nil, "", err
	}
	detail := map[string]any{"permissions": t.Permissions}
	if !t.ExpiresAt.IsZero() {
		detail["expires_at"] = t.ExpiresAt.Format(time.RFC3339Nano)
	}
	if err := s.Audit(ctx, tx, AuditParams{CompanyID: t.CompanyID, Action: AuditTokenIssue, Target: t.ID, Detail: detail}); err != nil {
		return nil, "", err
	}
	return t, secret, nil
}

// RevokeToken revokes a token of the company; it stops authenticating on
// this Service at once, and on other instances sharing the store within
// their Config.TokenCacheTTL. Revoking it again does nothing. NotFound
// when the company has no such token.
func (s *Service) RevokeToken(ctx context.Context, companyID, tokenID string) error {
	if !ValidID(tokenID) {
		return Errorf(NotFound, "token not found")
	}
	p := AuditParams{CompanyID: companyID, Action: AuditTokenRevoke, Target: tokenID}
	err := s.UpdateAudited(ctx, &p, func(tx Tx) error { return tx.RevokeToken(ctx, companyID, tokenID, s.Now()) })
	// After the commit: a request that read the token before it is not
	// cached (see ttlcache.Cache.Epoch), and an entry it cached is removed.
	s.forgetToken(companyID, tokenID)
	return err
}

// RevokeTokenTx is RevokeToken inside tx. The Service cannot know when tx
// commits, so the token stops authenticating everywhere, this Service
// included, within Config.TokenCacheTTL of the commit.
func (s *Service) RevokeTokenTx(ctx context.Context, tx Tx, companyID, tokenID string) error {
	if err := tx.RevokeToken(ctx, companyID, tokenID, s.Now()); err != nil {
		return err
	}
	s.forgetToken(companyID, tokenID)
	return s.Audit(ctx, tx, AuditParams{CompanyID: companyID, Action: AuditTokenRevoke, Target: tokenID})
}

// forgetToken removes the company's token from the cache of tokens.
func (s *Service) forgetToken(companyID, tokenID string) {
	s.tokens.Remove(func(t *Token) bool { return t.ID == tokenID && t.CompanyID == companyID })
}

// errBadToken is the one answer to a token that does not authenticate:
// unknown, expired and revoked tokens are told apart by nothing (D6).
const errBadToken = "the token is unknown, expired or revoked"

// Authenticate returns the active token whose secret is given. Unauthorized
// when the secret is empty, unknown, expired or revoked (D6), all with the
// same message. A token that authenticated recently is taken from a cache
// (Config.TokenCacheTTL), without a transaction. The token returned is
// shared: do not change it.
func (s *Service) Authenticate(ctx context.Context, secret string) (*Token, error) {
	if secret == "" || len(secret) > maxSecretLength {
		return nil, Errorf(Unauthorized, errBadToken)
	}
	d := DigestOf(secret)
	now := s.Now()
	if t, ok := s.tokens.Get(d, now); ok {
		if !t.Active(now) {
			return nil, Errorf(Unauthorized, errBadToken)
		}
		return t, nil
	}
	epoch := s.tokens.Epoch()
	var t *Token
	err := s.store.View(ctx, func(tx Tx) error {
		var err error
		t, err = tx.TokenByDigest(ctx, d)
		return err
	})
	if err == nil {
		s.tokens.Put(d, t, now, epoch)
	}
	switch {
	case ErrorCode(err) == NotFound || err == nil && !t.Active(s.Now()):
		return nil, Errorf(Unauthorized, errBadToken)
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
	deny := Errorf(Unauthorized, "an Authorization: Bearer token, or company_id and property_id of one of its properties, is required")
	if !ValidID(companyID) || !ValidID(propertyID) {
		return deny
	}
	err := s.store.View(ctx, func(tx Tx) error { return CheckProperty(ctx, tx, companyID, propertyID) })
	if ErrorCode(err) == NotFound {
		return deny
	}
	return err
}

// TopUp credits the company's wallet (D5) and returns the new balance.
// reference names the payment (optional, at most 128 bytes). It runs
// through Paid: when ctx carries an Idempotency (D40), a top-up sent again
// with its key credits nothing more and returns ErrReplayed, the first
// answer being in the Idempotency — the operator API requires a key, so
// that a retried top-up never credits twice.
func (s *Service) TopUp(ctx context.Context, companyID string, amount wallet.Amount, reference string) (wallet.Amount, error) {
	return Paid(ctx, s, nil, func(tx Tx) (wallet.Amount, error) { return s.TopUpTx(ctx, tx, companyID, amount, reference) })
}

// TopUpTx is TopUp inside tx.
func (s *Service) TopUpTx(ctx context.Context, tx Tx, companyID string, amount wallet.Amount, reference string) (wallet.Amount, error) {
	if amount <= 0 {
		return 0, Errorf(Invalid, "amount must be positive")
	}
	if amount > wallet.MaxBalance {
		return 0, wallet.ErrBalanceLimit
	}
	if len(reference) > MaxIDLength {
		return 0, Errorf(Invalid, "reference must be at most %d bytes", MaxIDLength)
	}
	if err := CheckText("reference", reference); err != nil {
		return 0, err
	}
	now := s.Now()
	e := &wallet.Entry{
		ID: newEntryID(now), CompanyID: companyID, Kind: wallet.TopUp,
		Amount: amount, Reference: reference, CreatedAt: now,
	}
	bal, err := tx.Credit(ctx, e)
	if err != nil {
		return 0, err
	}
	err = s.Audit(ctx, tx, AuditParams{CompanyID: companyID, Action: AuditWalletCredit, Target: e.ID,
		Detail: map[string]any{"amount": amount, "reference": reference, "balance": bal}})
	return bal, err
}

// Balance returns the company's wallet balance.
func (s *Service) Balance(ctx context.Context, companyID string) (wallet.Amount, error) {
	var bal wallet.Amount
	err := s.store.View(ctx, func(tx Tx) error {
		var err error
		bal, err = tx.Balance(ctx, companyID)
		return err
	})
	return bal, err
}

// SessionParams describes a new recorded session.
type SessionParams struct {
	ID         string // optional: a random id when empty
	CompanyID  string
	PropertyID string
	CreatedAt  time.Time // optional: now when zero

	// Browser capture (D33) sets these; see package capture.
	UploadDigest  Digest // the SHA-256 of the session's upload token
	CertificateID string // the certificate reserved for the session
	URL           string // the page on which recording started
}

// StartSession creates a session with an empty recording. NotFound when the
// property does not exist or is not the company's.
func (s *Service) StartSession(ctx context.Context, p SessionParams) (*Session, error) {
	return update(ctx, s, func(tx Tx) (*Session, error) { return s.StartSessionTx(ctx, tx, p) })
}

// StartSessionTx is StartSession inside tx.
func (s *Service) StartSessionTx(ctx context.Context, tx Tx, p SessionParams) (*Session, error) {
	if p.ID == "" {
		p.ID = NewID("ses")
	}
	for _, f := range [...]struct{ name, v string }{{"id", p.ID}, {"company_id", p.CompanyID}, {"property_id", p.PropertyID}} {
		if err := CheckID(f.name, f.v); err != nil {
			return nil, err
		}
	}
	created := s.Now()
	if !p.CreatedAt.IsZero() {
		created = UTC(p.CreatedAt)
	}
	if p.CertificateID != "" {
		if err := CheckID("certificate_id", p.CertificateID); err != nil {
			return nil, err
		}
	}
	if err := checkURL("url", p.URL); err != nil {
		return nil, err
	}
	ses := &Session{
		ID: p.ID, CompanyID: p.CompanyID, PropertyID: p.PropertyID,
		RetentionStatus: RetentionNone, VideoStatus: VideoNone,
		CreatedAt: created, ExpiresAt: created.Add(s.cfg.DefaultRetention),
		UploadDigest: p.UploadDigest, CertificateID: p.CertificateID, URL: p.URL,
	}
	if err := CheckProperty(ctx, tx, p.CompanyID, p.PropertyID); err != nil {
		return nil, err
	}
	if err := tx.CreateSession(ctx, ses); err != nil {
		return nil, err
	}
	return ses, nil
}

// AppendEvents adds a chunk of the session's rrweb recording: a JSON array
// of event objects, kept byte for byte. TooLarge when the chunk is over
// MaxChunkBytes or the recording would pass MaxRecordingBytes; NotFound when
// the session does not exist.
func (s *Service) AppendEvents(ctx context.Context, sessionID string, events json.RawMessage) (*Session, error) {
	return update(ctx, s, func(tx Tx) (*Session, error) { return s.AppendEventsTx(ctx, tx, sessionID, events) })
}

// AppendEventsTx is AppendEvents inside tx.
func (s *Service) AppendEventsTx(ctx context.Context, tx Tx, sessionID string, events json.RawMessage) (*Session, error) {
	if len(events) > s.cfg.MaxChunkBytes {
		return nil, Errorf(TooLarge, "events: a chunk may hold at most %d bytes", s.cfg.MaxChunkBytes)
	}
	if err := checkEvents(events); err != nil {
		return nil, err
	}
	ses, err := tx.Session(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	if ses.EventBytes+int64(len(events)) > s.cfg.MaxRecordingBytes {
		return nil, Errorf(TooLarge, "events: a recording may hold at most %d bytes", s.cfg.MaxRecordingBytes)
	}
	if err := tx.AppendEvents(ctx, sessionID, events); err != nil {
		return nil, err
	}
	ses.EventChunks++
	ses.EventBytes += int64(len(events))
	return ses, nil
}

// checkEvents accepts a non-empty JSON array of objects.
func checkEvents(events json.RawMessage) error {
	var list []json.RawMessage
	if err := json.Unmarshal(events, &list); err != nil || len(list) == 0 {
		return Errorf(Invalid, "events must be a non-empty JSON array of event objects")
	}
	for _, e := range list {
		if len(e) == 0 || e[0] != '{' {
			return Errorf(Invalid, "events must be a non-empty JSON array of event objects")
		}
	}
	return nil
}

// Recording returns the session's events as one JSON array: the chunks
// joined in the order they were appended. NotFound when the session does
// not exist or its recording was purged (D43).
func (s *Service) Recording(ctx context.Context, sessionID string) (json.RawMessage, error) {
	var chunks [][]byte
	err := s.store.View(ctx, func(tx Tx) error {
		ses, err := tx.Session(ctx, sessionID)
		if err != nil {
			return err
		}
		if ses.RetentionStatus == RetentionExpired {
			return Errorf(NotFound, "the session's recording was purged: its retention window ended")
		}
		chunks, err = tx.Events(ctx, sessionID)
		return err
	})
	if err != nil {
		return nil, err
	}
	return JoinChunks(chunks), nil
}

// JoinChunks joins JSON arrays into one array.
func JoinChunks(chunks [][]byte) json.RawMessage {
	var buf bytes.Buffer
	buf.WriteByte('[')
	n := 0
	for _, c := range chunks {
		inner := bytes.TrimSpace(c)
		inner = bytes.TrimSpace(inner[1 : len(inner)-1]) // checkEvents admitted only arrays
		if len(inner) == 0 {
			continue
		}
		if n > 0 {
			buf.WriteByte(',')
		}
		buf.Write(inner)
		n++
	}
	buf.WriteByte(']')
	return buf.Bytes()
}

// CertificateParams describes a new certificate.
type CertificateParams struct {
	ID         string // optional: a random id when empty
	CompanyID  string
	PropertyID string
	SessionID  string
	Origin     string // where consent was captured, e.g. a form URL
	Email      string // optional; only its normalized digest is kept (D17)
	Mobile     string // optional; likewise
	Records    []Record
	// EventsCombined is a JSON object; optional ({} when empty).
	EventsCombined json.RawMessage
	CreatedAt      time.Time // optional: now when zero

	// Browser capture (D35) sets these; see package capture.
	ClientIP        string
	UserAgent       string
	RecordingSHA256 Digest
	Visibility      *Visibility
}

// Limits of a certificate's content.
const (
	maxRecords    = 100
	maxTextLength = 64 << 10
	maxOrigin     = 2048
	maxTypes      = 32
	maxUserAgent  = 1024
	maxColor      = 64
)

// checkURL refuses a URL or origin over maxOrigin bytes or that is not text.
func checkURL(field, u string) error {
	if len(u) > maxOrigin {
		return Errorf(Invalid, "%s must be at most %d bytes", field, maxOrigin)
	}
	return CheckText(field, u)
}

// checkVisibility refuses facts no browser measures (D37).
func checkVisibility(v *Visibility) error {
	switch {
	case v == nil:
		return nil
	case !(v.FontSizePx >= 0 && v.FontSizePx <= 10_000):
		return Errorf(Invalid, "visibility.font_size_px must be between 0 and 10000")
	case !(v.ContrastRatio >= 1 && v.ContrastRatio <= 21):
		return Errorf(Invalid, "visibility.contrast_ratio must be between 1 and 21")
	case len(v.TextColor) > maxColor || len(v.BackgroundColor) > maxColor:
		return Errorf(Invalid, "visibility colours must be at most %d bytes", maxColor)
	}
	return checkTexts("visibility.text_color", v.TextColor, "visibility.background_color", v.BackgroundColor)
}

// IssueCertificate issues a certificate for a session of the company.
// NotFound when the property or session does not exist, is not the
// company's, or the session is not of that property.
func (s *Service) IssueCertificate(ctx context.Context, p CertificateParams) (*Certificate, error) {
	return update(ctx, s, func(tx Tx) (*Certificate, error) { return s.IssueCertificateTx(ctx, tx, p) })
}

// IssueCertificateTx is IssueCertificate inside tx.
func (s *Service) IssueCertificateTx(ctx context.Context, tx Tx, p CertificateParams) (*Certificate, error) {
	if p.ID == "" {
		p.ID = NewID("cert")
	}
	c, err := s.newCertificate(p)
	if err != nil {
		return nil, err
	}
	s.sign(c)
	if err := CheckProperty(ctx, tx, c.CompanyID, c.PropertyID); err != nil {
		return nil, err
	}
	ses, err := tx.Session(ctx, c.SessionID)
	if ErrorCode(err) == NotFound || err == nil && (ses.CompanyID != c.CompanyID || ses.PropertyID != c.PropertyID) {
		return nil, Errorf(NotFound, "session not found")
	} else if err != nil {
		return nil, err
	}
	if err := tx.CreateCertificate(ctx, c); err != nil {
		return nil, err
	}
	err = s.EmitEvent(ctx, tx, c.CompanyID, EventCertificateIssued, map[string]any{
		"certificate_id": c.ID, "company_id": c.CompanyID, "property_id": c.PropertyID,
		"session_id": c.SessionID, "created_timestamp": c.CreatedAt,
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

func (s *Service) newCertificate(p CertificateParams) (*Certificate, error) {
	for _, f := range [...]struct{ name, v string }{
		{"id", p.ID}, {"company_id", p.CompanyID}, {"property_id", p.PropertyID}, {"session_id", p.SessionID},
	} {
		if err := CheckID(f.name, f.v); err != nil {
			return nil, err
		}
	}
	if err := checkURL("origin", p.Origin); err != nil {
		return nil, err
	}
	if len(p.UserAgent) > maxUserAgent {
		return nil, Errorf(Invalid, "user_agent must be at most %d bytes", maxUserAgent)
	}
	if err := checkTexts("client_ip", p.ClientIP, "user_agent", p.UserAgent); err != nil {
		return nil, err
	}
	if err := checkVisibility(p.Visibility); err != nil {
		return nil, err
	}
	created := s.Now()
	if !p.CreatedAt.IsZero() {
		created = UTC(p.CreatedAt)
	}
	c := &Certificate{
		ID: p.ID, CompanyID: p.CompanyID, PropertyID: p.PropertyID, SessionID: p.SessionID,
		Origin: p.Origin, RetentionStatus: RetentionNone,
		CreatedAt: created, ExpiresAt: created.Add(s.cfg.DefaultRetention),
		EventsCombined: json.RawMessage("{}"),
		ClientIP:       p.ClientIP, UserAgent: p.UserAgent, RecordingSHA256: p.RecordingSHA256,
	}
	if p.Visibility != nil {
		v := *p.Visibility
		c.Visibility = &v
	}
	var err error
	if strings.TrimSpace(p.Email) != "" {
		if c.EmailDigest, err = EmailDigest(p.Email); err != nil {
			return nil, err
		}
	}
	if strings.TrimSpace(p.Mobile) != "" {
		if c.MobileDigest, err = MobileDigest(p.Mobile); err != nil {
			return nil, err
		}
	}
	if ec := bytes.TrimSpace(p.EventsCombined); len(ec) > 0 && !bytes.Equal(ec, []byte("null")) {
		var obj map[string]json.RawMessage
		if !utf8.Valid(p.EventsCombined) {
			return nil, Errorf(Invalid, "events_combined must be valid UTF-8")
		}
		if err := json.Unmarshal(p.EventsCombined, &obj); err != nil || obj == nil {
			return nil, Errorf(Invalid, "events_combined must be a JSON object")
		}
		c.EventsCombined = append(json.RawMessage(nil), p.EventsCombined...)
	}
	if len(p.Records) > maxRecords {
		return nil, Errorf(Invalid, "consents: at most %d records", maxRecords)
	}
	for i, r := range p.Records {
		if strings.TrimSpace(r.Text) == "" || len(r.Text) > maxTextLength {
			return nil, Errorf(Invalid, "consents[%d].text must be non-empty and at most %d bytes", i, maxTextLength)
		}
		if err := CheckText(fmt.Sprintf("consents[%d].text", i), r.Text); err != nil {
			return nil, err
		}
		if len(r.Types) > maxTypes {
			return nil, Errorf(Invalid, "consents[%d].types: at most %d", i, maxTypes)
		}
		rec := Record{Text: r.Text, Types: make([]string, 0, len(r.Types)), OptInAt: created}
		for _, ty := range r.Types {
			if strings.TrimSpace(ty) == "" || len(ty) > MaxIDLength {
				return nil, Errorf(Invalid, "consents[%d].types must be non-empty labels of at most %d bytes", i, MaxIDLength)
			}
			if err := CheckText(fmt.Sprintf("consents[%d].types", i), ty); err != nil {
				return nil, err
			}
			rec.Types = append(rec.Types, ty)
		}
		if !r.OptInAt.IsZero() {
			rec.OptInAt = UTC(r.OptInAt)
		}
		c.Records = append(c.Records, rec)
	}
	return c, nil
}
