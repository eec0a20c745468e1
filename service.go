package consentkit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/consentkit/consentkit/blob"
	"github.com/consentkit/consentkit/consent"
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
// re-declares them. The zero value of each field means its default. A
// negative TokenCacheTTL or SignatureCacheSize turns that cache off; any
// other negative duration, size, bound or price is an error from
// NewService.
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
	// PublicKeys are retired keys whose certificates still verify, and
	// the keys of other instances sharing the store that sign with keys of
	// their own.
	PublicKeys []signed.PublicKey
	// TrustPublishedKeys makes every key published in the store
	// (PublishKeys) verify certificates, configured here or not, so that
	// instances with keys of their own need not list each other's. It
	// makes the store a source of trust: whoever can write it can publish
	// a key and re-sign a changed certificate, which then verifies. Off
	// (the default), only SigningKeys and PublicKeys verify, and the store
	// only keeps one key per id (D41).
	TrustPublishedKeys bool
	// RevokedKeys are the ids of keys that verify nothing any more, though
	// the store publishes them: a compromised key, whose signatures anyone
	// may have made. Every certificate and statement signed with one fails
	// its integrity check (409), honest ones too; PublishKeys takes them as
	// known, and they are not published at /.well-known/consentkit-keys.
	// A key merely rotated out stays in PublicKeys instead. None may be in
	// SigningKeys or PublicKeys.
	RevokedKeys []string
	// UnsignedBefore, with keys, lets certificates created before it that
	// carry no signature pass the signature check: those issued before
	// signing was turned on. Zero: every certificate must be signed. Their
	// creation time is not signed, so a writer of the database could strip
	// a signature and move the time before it: leave it zero unless the
	// store holds certificates issued unsigned, and set it no later than
	// signing began (D41).
	UnsignedBefore time.Time
	// LowBalanceThreshold, when positive, makes a charge that takes a
	// wallet from at least this much to below it emit
	// EventWalletLowBalance (D44); zero emits none.
	LowBalanceThreshold wallet.Amount
	// WebhookAllowPrivate lets webhook endpoints have URLs whose host is a
	// loopback or private IP address, never link-local (see webhook.CheckURL):
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
	// Recordings is where finished recordings are moved out of the
	// database, compressed, one object each (D52; MoveRecordings): a
	// blob.Dir by default in examples/server, S3 (blob/s3blob) for many
	// instances. Nil keeps every recording in the database.
	Recordings blob.Store
	// RecordingIdle is how long a session takes no chunk before its
	// recording is finished (D52): default DefaultRecordingIdle. A
	// session closed at consent is finished at once.
	RecordingIdle time.Duration
	// AttestationQueue bounds how many attestations may wait to be run
	// (D49): default DefaultAttestationQueue. AskAttestation refuses more
	// with ErrAttestationQueueFull.
	AttestationQueue int
	// AttestationQueuePerCompany bounds how many of them may be one
	// company's (D49): by default a tenth of AttestationQueue (at least
	// one), 100 of the default 1,000, so that a company whose forms bots
	// fill, attesting every certificate, holds a tenth of the queue and
	// leaves the rest to the others: it takes ten companies at their
	// bound to fill the queue. AskAttestation refuses more with
	// ErrAttestationQueueFull.
	AttestationQueuePerCompany int
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
	store   consent.Store
	cfg     Config // with defaults
	flights flight.Group
	// tokens are the tokens that authenticated lately, by digest: a
	// request finds its token without a transaction. A revocation through
	// this Service removes its token at once; one made elsewhere (another
	// instance, the store directly) is seen when the entry, at most
	// Config.TokenCacheTTL old, is read again. Unknown secrets are never
	// cached.
	tokens ttlcache.Cache[consent.Digest, *consent.Token]
	// keys are PublicKeys(), made once; signatures the good signatures
	// checked lately.
	keys       []signed.PublicKey
	signatures *sigcache.Cache
	// published are the keys of other instances read from the store, by
	// id (a published key never changes), with TrustPublishedKeys;
	// keysPublished is set once this Service's own keys are known to be
	// in the store (PublishKeys).
	published     sync.Map // string → signed.PublicKey
	keysPublished atomic.Bool
	recordings    *recordings // nil without Config.Recordings
}

// NewService returns a Service over store. It fails when store is nil or a
// field of cfg is negative (but TokenCacheTTL and SignatureCacheSize, for
// which negative turns the cache off).
func NewService(store consent.Store, cfg Config) (*Service, error) {
	if store == nil {
		return nil, errors.New("consentkit: NewService needs a Store")
	}
	if cfg.DefaultRetention < 0 || cfg.LongTermRetention < 0 || cfg.MaxChunkBytes < 0 || cfg.MaxRecordingBytes < 0 || cfg.LowBalanceThreshold < 0 ||
		cfg.RecordingIdle < 0 || cfg.IdempotencyWait < 0 || cfg.TokenCacheSize < 0 || cfg.AttestationQueue < 0 || cfg.AttestationQueuePerCompany < 0 {
		return nil, errors.New("consentkit: Config durations and limits must not be negative (zero means the default)")
	}
	if err := checkKeys(cfg.SigningKeys, cfg.PublicKeys, cfg.RevokedKeys); err != nil {
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
			return nil, fmt.Errorf("consentkit: Config.Prices: %w", err)
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
	if cfg.TokenCacheSize == 0 {
		cfg.TokenCacheSize = DefaultTokenCacheSize
	}
	if cfg.AttestationQueue == 0 {
		cfg.AttestationQueue = DefaultAttestationQueue
	}
	if cfg.AttestationQueuePerCompany == 0 {
		cfg.AttestationQueuePerCompany = max(cfg.AttestationQueue/10, 1)
	}
	if cfg.SignatureCacheSize == 0 {
		cfg.SignatureCacheSize = DefaultSignatureCacheSize
	}
	if cfg.RecordingIdle == 0 {
		cfg.RecordingIdle = DefaultRecordingIdle
	}
	checked := Checked(store).(checkedStore)
	if cfg.Recordings != nil {
		checked.recordings = &recordings{blobs: cfg.Recordings}
	}
	s := &Service{store: checked, recordings: checked.recordings, cfg: cfg, tokens: ttlcache.Cache[consent.Digest, *consent.Token]{TTL: cfg.TokenCacheTTL, Size: cfg.TokenCacheSize},
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
func (s *Service) Store() consent.Store { return s.store }

// MaxChunkBytes is the largest chunk of events AppendEvents accepts.
func (s *Service) MaxChunkBytes() int { return s.cfg.MaxChunkBytes }

// MaxRecordingBytes is the most bytes of events a session's recording
// holds (Config.MaxRecordingBytes).
func (s *Service) MaxRecordingBytes() int64 { return s.cfg.MaxRecordingBytes }

// Prices returns the price list in force.
func (s *Service) Prices() wallet.Prices { return *s.cfg.Prices }

// Now returns the service clock's time in UTC, to the microsecond: the time
// every operation records.
func (s *Service) Now() time.Time { return consent.UTC(s.cfg.Now()) }

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
func update[T any](ctx context.Context, s *Service, fn func(tx consent.Tx) (T, error)) (T, error) {
	var out T
	err := s.store.Update(ctx, func(tx consent.Tx) error {
		var err error
		out, err = fn(tx)
		return err
	})
	return out, err
}
