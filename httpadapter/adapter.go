package httpadapter

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/optout"
	"github.com/consentkit/consentkit/retain"
	"github.com/consentkit/consentkit/verify"
	"github.com/consentkit/consentkit/wallet"
)

// Config configures the handler. Store is required; zero values of the
// other fields mean their defaults.
type Config struct {
	Store  consent.Store
	Prices *wallet.Prices   // default wallet.DefaultPrices() (D2)
	Now    func() time.Time // default time.Now
	Logger *slog.Logger     // default slog.Default()
	// LongTermRetention is how long retained items are kept: default five
	// years (D26).
	LongTermRetention time.Duration
	// PropertyCredentials turns on company-and-property authentication of
	// Verification API requests without an Authorization header (D8). Off by
	// default: a property id is not a secret.
	PropertyCredentials bool
	// TrustedProxies are the peers whose X-Forwarded-For is believed (D20).
	TrustedProxies []netip.Prefix
	// Rate limits per minute (D28); a negative value turns one off.
	OptOutPerMinute int // per client IP; default 10
	RetainPerMinute int // per company, single and batch together; default 500
	VerifyPerMinute int // per company, other verification endpoints; default none
	// MaxLimiterKeys caps the keys each rate limiter holds: default 10,000.
	MaxLimiterKeys int
}

type adapter struct {
	mux     *http.ServeMux
	log     *slog.Logger
	trusted []netip.Prefix
	d8      bool

	consent *consent.Service
	verify  *verify.Service
	optout  *optout.Service
	retain  *retain.Service

	optoutLimit, retainLimit, verifyLimit *keyedLimiter // nil: no limit
}

// New returns the handler serving every endpoint.
func New(cfg Config) (http.Handler, error) {
	if cfg.Store == nil {
		return nil, errors.New("httpadapter: Config.Store is required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxLimiterKeys <= 0 {
		cfg.MaxLimiterKeys = 10_000
	}
	limiter := func(n, def int) *keyedLimiter {
		switch {
		case n == 0:
			n = def
		case n < 0:
			return nil
		}
		if n == 0 {
			return nil
		}
		return newKeyedLimiter(n, cfg.MaxLimiterKeys, cfg.Now)
	}
	policy := consent.Policy{Prices: cfg.Prices, Now: cfg.Now, LongTermRetention: cfg.LongTermRetention}
	a := &adapter{
		mux:         http.NewServeMux(),
		log:         cfg.Logger,
		trusted:     cfg.TrustedProxies,
		d8:          cfg.PropertyCredentials,
		consent:     consent.NewService(cfg.Store, consent.Config{Now: cfg.Now}),
		verify:      verify.New(cfg.Store, policy),
		optout:      optout.New(cfg.Store, cfg.Now),
		retain:      retain.New(cfg.Store, policy),
		optoutLimit: limiter(cfg.OptOutPerMinute, 10),
		retainLimit: limiter(cfg.RetainPerMinute, 500),
		verifyLimit: limiter(cfg.VerifyPerMinute, 0),
	}
	for _, prefix := range []string{"", "/api"} { // D30
		a.mux.HandleFunc("POST "+prefix+"/verify/match", a.match)
		a.mux.HandleFunc("POST "+prefix+"/verify/partial-match", a.partialMatch)
		a.mux.HandleFunc("POST "+prefix+"/verify/certificate-info", a.certificateInfo)
		a.mux.HandleFunc("POST "+prefix+"/verify/session/{company_id}", a.retainSession)
		a.mux.HandleFunc("POST "+prefix+"/verify/certificate/{company_id}", a.retainCertificate)
	}
	a.mux.HandleFunc("POST /opt-out", a.optOut)
	a.mux.HandleFunc("POST /api/integrations/{companyId}/retain/batch", a.retainBatch)
	a.mux.HandleFunc("POST /api/integrations/{companyId}/retain/{sessionId}", a.retainOne)
	a.mux.HandleFunc("GET /api/integrations/{companyId}/sessions/{sessionId}", a.sessionStatus)
	return a, nil
}

func (a *adapter) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.mux.ServeHTTP(w, r) }

// bearer returns the token of an "Authorization: Bearer <token>" header,
// whether the header was present at all, and an error when it is malformed.
func bearer(r *http.Request) (token string, present bool, err error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", false, nil
	}
	scheme, token, ok := strings.Cut(h, " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", true, consent.Errorf(consent.Unauthorized, "the Authorization header must be Bearer <token>")
	}
	return token, true, nil
}

// token authenticates a bearer token (D6).
func (a *adapter) token(r *http.Request) (*consent.Token, error) {
	secret, present, err := bearer(r)
	if err != nil {
		return nil, err
	}
	if !present {
		return nil, consent.Errorf(consent.Unauthorized, "an Authorization: Bearer token is required")
	}
	return a.consent.Authenticate(r.Context(), secret)
}

// propertyCaller authenticates by company and property (D8): the property
// must exist and be the company's.
func (a *adapter) propertyCaller(ctx context.Context, companyID, propertyID string) (string, error) {
	deny := consent.Errorf(consent.Unauthorized, "an Authorization: Bearer token, or company_id and property_id of one of its properties, is required")
	if !consent.ValidID(companyID) || !consent.ValidID(propertyID) {
		return "", deny
	}
	err := a.consent.Store().View(ctx, func(tx consent.Tx) error { return consent.CheckProperty(ctx, tx, companyID, propertyID) })
	switch {
	case consent.ErrorCode(err) == consent.NotFound:
		return "", deny
	case err != nil:
		return "", err
	}
	return companyID, nil
}

// limit takes a token from l for key, answering 429 when there is none.
func limit(w http.ResponseWriter, l *keyedLimiter, key string, st style) bool {
	if l == nil {
		return true
	}
	ok, wait := l.allow(key)
	if !ok {
		writeLimited(w, st, wait)
	}
	return ok
}
