package consent

import (
	"context"
	"time"

	"github.com/consentkit/consentkit/wallet"
)

// Store is a storage backend. The packages under store/ implement it:
// memstore (memory, for tests), sqlitestore (the embedded default) and
// pgstore (PostgreSQL). store/storetest is the suite that every Store must
// pass; a Store written for another database should run it too.
type Store interface {
	// Update runs fn in a read-write transaction: it commits when fn
	// returns nil and rolls back, returning fn's error unchanged, when fn
	// fails. A store may call fn more than once (to retry a transaction its
	// database aborted), so fn must have no effects outside tx.
	//
	// Within Update, Session, Certificate and the wallet operations see and
	// lock the latest committed state of their row until the transaction
	// ends, so a rule checked in fn still holds when it commits.
	Update(ctx context.Context, fn func(tx Tx) error) error

	// View runs fn in a read-only transaction. Writes through tx fail.
	View(ctx context.Context, fn func(tx Tx) error) error

	// Close releases the store's resources. It does not close a connection
	// pool that the caller passed in.
	Close() error
}

// Alone marks ctx for an Update whose function locks one row at most (its
// session's, for capture's append of a chunk) and, holding it, waits for
// no other lock, so it cannot be part of a deadlock. A store that runs
// concurrent calls in shared transactions (group commit) may run it in a
// transaction of its own: PostgreSQL runs it beside its batches (which
// take turns, as two could deadlock), the database flushing its commit
// with others'; SQLite, with one writer, keeps it in its batches.
func Alone(ctx context.Context) context.Context { return context.WithValue(ctx, aloneKey{}, true) }

// IsAlone reports whether ctx was marked by Alone.
func IsAlone(ctx context.Context) bool {
	alone, _ := ctx.Value(aloneKey{}).(bool)
	return alone
}

type aloneKey struct{}

// Tx is what a transaction can read and write: primitive reads and writes,
// with every business rule left to the caller. Values passed in are copied;
// values returned belong to the caller. Times come back in UTC. An empty
// list comes back as an empty slice, never nil, however it was written: a
// list of a value read (a company's AuthorizedThirdParties, a consent's
// Types, a job's Payload, a certificate's Signature…) and a list a method
// returns (Events of a session with no chunks, a list of nothing), so that
// values read from any two stores compare equal.
//
// Every method returns an error of code NotFound (errors.Is(err,
// ErrNotFound)) when a thing it needs does not exist, Conflict when an
// identifier is taken, and an uncoded error for storage failures. A failed write
// ends the transaction, Update committing nothing (PostgreSQL aborts it), unless
// it changed nothing: NotFound or Conflict on a row by its key, a short balance.
//
// # What a store is given
//
// The Service (package consentkit) checks every call before a store sees
// it: the Tx that Service.Store hands out refuses, as Invalid, a value or an
// argument that some store could not keep exactly, and answers a lookup by
// a key that no row can have as finding nothing. So a store is given only:
//
//   - text that is ValidText (valid UTF-8 without C0 controls but tab,
//     line feed and carriage return), kept byte for byte, 4-byte characters
//     included; text kept in keys and indexes — ids, the ids that refer to
//     other rows, job kinds and keys, idempotency scopes and keys — of at
//     most MaxKeyBytes;
//   - times in the years 1 to 9999 (CheckTime; the zero time, where it
//     means none), which it keeps to the microsecond, in UTC;
//   - counts and statuses that fit 32 bits (a job's Attempts at most
//     MaxJobAttempts), ledger amounts of 1 micro-dollar to
//     wallet.MaxBalance, entries of one company in DebitAll and
//     AppendAudits, no repeated id in UpdateSessions, pages and audit
//     queries that pass Page.Check and AuditQuery.Check;
//   - lookups by keys that are ValidText, except CompanyIDs' after, which
//     starts the list where it sorts, byte by byte, whatever it holds.
//
// The rules are in checked.go, once. A store still refuses what only it
// can see: a taken id (Conflict) before a missing parent (NotFound) on a
// create; for a debit, the company and the balance before a taken entry
// id; a credit that would take a balance over wallet.MaxBalance
// (wallet.ErrBalanceLimit). store/storetest: what every store agrees on.
type Tx interface {
	// CreateCompany stores c with a wallet at zero balance.
	// Conflict when c.ID is taken.
	CreateCompany(ctx context.Context, c *Company) error
	// Company returns the company. NotFound when there is none.
	Company(ctx context.Context, id string) (*Company, error)
	// LockCompany locks the company until the Update ends, so that Updates
	// that take it before they count its rows and add one take turns (in
	// a View it locks nothing). NotFound when there is none.
	LockCompany(ctx context.Context, id string) error
	// CompanyIDs returns up to limit company ids in sorted order, starting
	// after the given id ("" for the first page).
	CompanyIDs(ctx context.Context, after string, limit int) ([]string, error)
	// UpdateCompany replaces the name, third-party settings,
	// AttestCertificates and InsightsRules of c.ID.
	// NotFound when there is none.
	UpdateCompany(ctx context.Context, c *Company) error

	// CreateProperty stores p. NotFound when p.CompanyID does not exist;
	// Conflict when p.ID is taken.
	CreateProperty(ctx context.Context, p *Property) error
	// Property returns the property. NotFound when there is none.
	Property(ctx context.Context, id string) (*Property, error)
	// UpdateProperty replaces the name and allowed origins of p.ID.
	// NotFound when there is none.
	UpdateProperty(ctx context.Context, p *Property) error
	// Properties returns the company's properties, oldest first (by
	// CreatedAt, then ID). A company with none, or no such company: an
	// empty slice, no error.
	Properties(ctx context.Context, companyID string) ([]*Property, error)

	// CreateToken stores t. NotFound when t.CompanyID does not exist;
	// Conflict when t.ID or t.Digest is taken.
	CreateToken(ctx context.Context, t *Token) error
	// TokenByDigest returns the token with that digest, revoked or expired
	// ones included. NotFound when there is none.
	TokenByDigest(ctx context.Context, d Digest) (*Token, error)
	// RevokeToken marks the company's token revoked at the given time
	// (never zero); revoking a revoked token keeps its first time.
	// NotFound when the company has no token of that id.
	RevokeToken(ctx context.Context, companyID, id string, at time.Time) error
	// Tokens returns the company's tokens, revoked and expired ones
	// included, oldest first (by CreatedAt, then ID), each with its
	// Digest (never shown to anyone: it is for finding the token). A
	// company with none, or no such company: an empty slice, no error.
	Tokens(ctx context.Context, companyID string) ([]*Token, error)

	// CreateSession stores s with no events. NotFound when s.CompanyID or
	// s.PropertyID does not exist; Conflict when s.ID is taken.
	CreateSession(ctx context.Context, s *Session) error
	// Session returns the session. NotFound when there is none.
	Session(ctx context.Context, id string) (*Session, error)
	// Sessions returns the sessions of ids at once: out[i] is the session
	// ids[i], nil when there is none (no error), so len(out) == len(ids);
	// a repeated id gets a copy of its session at each place. Within
	// Update it locks them as Session does (in an order of their own, so
	// that two transactions locking overlapping sets cannot deadlock).
	Sessions(ctx context.Context, ids []string) ([]*Session, error)
	// AppendEvents adds chunk, stored byte for byte, after the session's
	// other chunks, adds to its EventChunks and EventBytes and sets its
	// LastEventAt to at; the chunk's sequence number is the session's
	// EventChunks before the call. NotFound when the session does not
	// exist.
	AppendEvents(ctx context.Context, sessionID string, chunk []byte, at time.Time) error
	// EventChunk returns the session's chunk of that sequence number (0 for
	// the first). NotFound when the session or the chunk does not exist.
	EventChunk(ctx context.Context, sessionID string, seq int) ([]byte, error)
	// SessionPage returns the page p of p.CompanyID's sessions, newest
	// first (see Page), purged ones included. None matching, or no such
	// company: an empty slice, no error.
	SessionPage(ctx context.Context, p Page) ([]*Session, error)
	// UpdateSession writes s's RetentionStatus, VideoStatus, ExpiresAt,
	// Video and ClosedAt.
	// NotFound when the session does not exist.
	UpdateSession(ctx context.Context, s *Session) error
	// UpdateSessions is UpdateSession for several sessions in one step:
	// all of them are written, or none. NotFound when one of them does
	// not exist.
	UpdateSessions(ctx context.Context, list []*Session) error
	// SetRecording writes the session's Recording (D52). Once r is moved
	// (r.At set) the session's chunks are removed from the database in the
	// same call: its object holds them, and EventChunks and EventBytes
	// stay as they were. NotFound when the session does not exist.
	SetRecording(ctx context.Context, sessionID string, r Recording) error
	// SessionsToMove returns the ids, at most limit, of the sessions whose
	// finished recording is still in the database (D52): chunks held
	// (EventChunks > 0), not purged, Recording not moved, and closed
	// (ClosedAt set), being moved (Recording.Key set) or idle (LastEventAt
	// at or before idleBefore) — Session.ToMove; those idle longest first
	// (by LastEventAt, then ID). None: an empty slice, no error.
	SessionsToMove(ctx context.Context, idleBefore time.Time, limit int) ([]string, error)
	// Events returns the session's chunks in the order they were appended.
	// NotFound when the session does not exist.
	Events(ctx context.Context, sessionID string) ([][]byte, error)
	// EachEventChunk calls fn with each of the session's chunks in the
	// order they were appended, holding one at a time, and stops at fn's
	// first error, which it returns. fn must not keep the chunk after it
	// returns. NotFound when the session does not exist.
	EachEventChunk(ctx context.Context, sessionID string, fn func(chunk []byte) error) error

	// CreateCertificate stores c. NotFound when its company, property or
	// session does not exist; Conflict when c.ID is taken.
	CreateCertificate(ctx context.Context, c *Certificate) error
	// Certificate returns the certificate. NotFound when there is none.
	Certificate(ctx context.Context, id string) (*Certificate, error)
	// CertificatesByEmail returns the ids, sorted, of the company's
	// certificates with that email digest (none: an empty slice, no error).
	CertificatesByEmail(ctx context.Context, companyID string, d Digest) ([]string, error)
	// CertificatesByMobile is CertificatesByEmail for mobile digests.
	CertificatesByMobile(ctx context.Context, companyID string, d Digest) ([]string, error)
	// Velocity counts the other certificates (id not c.ID) of c.CompanyID
	// created from c.CreatedAt less an hour (Hour) or a day (Day) to
	// c.CreatedAt, both included, whose ClientIP, EmailDigest or
	// MobileDigest is c's; a value c does not have (an empty address, a
	// zero digest) counts none. Revoked certificates count. Each count
	// stops at MaxVelocity. Only c's fields are read: c need not be
	// stored.
	Velocity(ctx context.Context, c *Certificate) (Velocity, error)
	// CertificatesBySession returns the ids, sorted, of the session's
	// certificates (none: an empty slice, no error).
	CertificatesBySession(ctx context.Context, sessionID string) ([]string, error)
	// CertificatePage returns the page p of p.CompanyID's certificates,
	// newest first (see Page); purged ones are gone. None matching, or no
	// such company: an empty slice, no error.
	CertificatePage(ctx context.Context, p Page) ([]*Certificate, error)
	// UpdateCertificate writes c's RetentionStatus and ExpiresAt.
	// NotFound when the certificate does not exist.
	UpdateCertificate(ctx context.Context, c *Certificate) error
	// RevokeCertificate marks the certificate revoked at the given time
	// (never zero); revoking a revoked certificate keeps its first time.
	// NotFound when there is none.
	RevokeCertificate(ctx context.Context, id string, at time.Time) error

	// CreateRevocation stores r. NotFound when r.CompanyID does not exist;
	// Conflict when r.ID is taken.
	CreateRevocation(ctx context.Context, r *Revocation) error
	// Revocations returns the company's revocations, oldest first (none,
	// or no such company: an empty slice).
	Revocations(ctx context.Context, companyID string) ([]*Revocation, error)
	// RevokedBefore returns the latest time at which the company revoked
	// consent given with the email or the mobile digest: the latest of its
	// revocations holding either digest, and of the RevokedAt of its
	// certificates holding either. A zero digest matches nothing. The zero
	// time when there is none (or no such company).
	RevokedBefore(ctx context.Context, companyID string, email, mobile Digest) (time.Time, error)
	// RevocationPage returns the page p of p.CompanyID's revocations,
	// newest first (see Page). None matching, or no such company: an
	// empty slice, no error.
	RevocationPage(ctx context.Context, p Page) ([]*Revocation, error)

	// PurgeSessions purges up to limit sessions whose ExpiresAt is not
	// after before and that are not purged yet, earliest ExpiresAt first
	// (then id), passing over any that another transaction is changing: it
	// deletes their recordings (event chunks), clears their page URL,
	// upload capability and video record, sets VideoStatus none and
	// RetentionStatus expired (D26, D43). The rows stay, so that a purged
	// session answers expired. It returns the sessions as they were before,
	// so that the caller can remove their videos.
	PurgeSessions(ctx context.Context, before time.Time, limit int) ([]*Session, error)
	// PurgeCertificates deletes up to limit certificates whose ExpiresAt is
	// not after before, earliest first (then id), passing over any that
	// another transaction is changing, and returns their ids, sorted.
	// Revocations, the ledger and the audit log keep their references.
	PurgeCertificates(ctx context.Context, before time.Time, limit int) ([]string, error)

	// EnqueueJob adds j to the queue. Conflict when a job of j.Kind and
	// j.Key exists (a done job is deleted, so its key can be used again).
	EnqueueJob(ctx context.Context, j *Job) error
	// EnqueueJobs is EnqueueJob for several jobs in one step, all or none.
	// Conflict when a job of one's Kind and Key exists or two share them.
	EnqueueJobs(ctx context.Context, jobs []*Job) error
	// Job returns the job of that kind and key. NotFound when there is none.
	Job(ctx context.Context, kind, key string) (*Job, error)
	// CountJobs returns how many jobs of the kind are queued and not failed
	// for good (FailedAt zero), leased or not: a bounded queue's (D49).
	CountJobs(ctx context.Context, kind string) (int, error)
	// CountCompanyJobs is CountJobs for the jobs of the kind that work for one
	// company (Job.CompanyID; "" counts the jobs that name none): the company's
	// share of a bounded queue (attestations, D49). No such company: 0.
	CountCompanyJobs(ctx context.Context, kind, companyID string) (int, error)
	// DeleteLaneJobs deletes the jobs CountCompanyJobs counts that are in the lane
	// (Job.Lane), leased or not, and returns how many: a webhook endpoint's (D44).
	DeleteLaneJobs(ctx context.Context, kind, companyID, lane string) (int, error)
	// DeleteFailedJobs deletes up to limit jobs of the kind failed for good
	// before before, the oldest first.
	DeleteFailedJobs(ctx context.Context, kind string, before time.Time, limit int) (int, error)
	// LeaseJob takes, among the due jobs of the given kinds — not failed,
	// RunAfter not after now, not leased or its lease run out, and not in a
	// Lane where another job holds a lease that has not run out — the one
	// whose CompanyID holds the fewest such leases of the given kinds, then
	// with the earliest RunAfter (then kind, then key, byte by byte): one
	// company's backlog never stands before another's work (D53). It gives
	// owner the lease until the given time, counts an attempt (at most
	// MaxJobAttempts) and returns the job. Concurrent callers, on any number
	// of machines, never get one job while its lease runs, nor two jobs of
	// one lane. NotFound when no job is due.
	LeaseJob(ctx context.Context, kinds []string, owner string, now, until time.Time) (*Job, error)
	// RenewJob extends owner's lease of the job. Conflict when owner no
	// longer holds it; NotFound when there is no such job.
	RenewJob(ctx context.Context, kind, key, owner string, until time.Time) error
	// EndJob ends owner's lease of the job: a nil next deletes it (done);
	// else it keeps next's Payload, Attempts, RunAfter, LastError and
	// FailedAt, unleased. Conflict when owner no longer holds the lease;
	// NotFound when there is no such job.
	EndJob(ctx context.Context, kind, key, owner string, next *Job) error

	// ClaimIdempotencyKey records r, the claim of a key by the running
	// transaction (r.Status 0), unless a record of r.Scope and r.Key whose
	// ExpiresAt is after now exists: then it records nothing and returns
	// that record. An expired record is replaced. Where transactions run
	// concurrently (PostgreSQL), a claim of a key that another running
	// transaction claimed waits for that transaction to end (D40).
	ClaimIdempotencyKey(ctx context.Context, r *IdempotencyRecord, now time.Time) (*IdempotencyRecord, error)
	// AnswerIdempotencyKey stores the answer of the key claimed in this
	// transaction, its body byte for byte. NotFound when there is no such
	// record.
	AnswerIdempotencyKey(ctx context.Context, scope, key string, status int, body []byte) error
	// ReleaseIdempotencyKey deletes the record of scope and key (a claim
	// whose answer is not kept); none is no error.
	ReleaseIdempotencyKey(ctx context.Context, scope, key string) error
	// PruneIdempotencyKeys deletes up to limit records whose ExpiresAt is
	// not after now, and returns how many it deleted.
	PruneIdempotencyKeys(ctx context.Context, now time.Time, limit int) (int, error)

	// CreateAttestation stores a. NotFound when its certificate does not
	// exist or is not a.CompanyID's; Conflict when the certificate has an
	// attestation already.
	CreateAttestation(ctx context.Context, a *Attestation) error
	// Attestation returns the certificate's attestation; NotFound when
	// none was asked for.
	Attestation(ctx context.Context, certificateID string) (*Attestation, error)
	// UpdateAttestation writes a's Status, Statement, Signature, KeyID,
	// Screenshot and UpdatedAt. NotFound when the certificate has none.
	UpdateAttestation(ctx context.Context, a *Attestation) error

	// CreateInsights stores in. NotFound when its certificate does not
	// exist or is not in.CompanyID's; Conflict when the certificate has
	// insights already.
	CreateInsights(ctx context.Context, in *Insights) error
	// Insights returns the certificate's insights; NotFound when there are
	// none.
	Insights(ctx context.Context, certificateID string) (*Insights, error)
	// UpdateInsights writes in's Status, Statement, Signature, KeyID and
	// UpdatedAt. NotFound when the certificate has none.
	UpdateInsights(ctx context.Context, in *Insights) error

	// PublishKey stores k. Conflict when a key of its id is published
	// already (whatever its bytes: a published key never changes).
	PublishKey(ctx context.Context, k *PublishedKey) error
	// PublishedKey returns the key of the id; NotFound when none.
	PublishedKey(ctx context.Context, id string) (*PublishedKey, error)
	// PublishedKeys returns every published key, oldest first (then by
	// id); none: an empty slice.
	PublishedKeys(ctx context.Context) ([]*PublishedKey, error)

	// CreateOperatorSession stores s. Conflict when a session of that
	// digest exists.
	CreateOperatorSession(ctx context.Context, s *OperatorSession) error
	// OperatorSession returns the session of digest d, expired or not;
	// NotFound when there is none (the caller compares ExpiresAt with its
	// clock).
	OperatorSession(ctx context.Context, d Digest) (*OperatorSession, error)
	// DeleteOperatorSession deletes the session of digest d (a logout);
	// deleting one that does not exist is a no-op and returns nil.
	DeleteOperatorSession(ctx context.Context, d Digest) error
	// PruneOperatorSessions deletes at most limit sessions that expired at
	// or before now (ExpiresAt not after now), earliest first, and returns
	// how many it deleted. The purge job leaves operator sessions alone:
	// the dashboard prunes them when an operator logs in.
	PruneOperatorSessions(ctx context.Context, now time.Time, limit int) (int, error)

	// PutProfile stores p, replacing the company's profile of that name
	// with every field of p. NotFound when p.CompanyID does not exist.
	PutProfile(ctx context.Context, p *Profile) error
	// Profile returns the company's profile of that name. NotFound when
	// there is none.
	Profile(ctx context.Context, companyID, name string) (*Profile, error)
	// Profiles returns the company's profiles ordered by name (byte order;
	// none: an empty slice, no error).
	Profiles(ctx context.Context, companyID string) ([]*Profile, error)
	// DeleteProfile deletes the company's profile of that name. NotFound
	// when there is none.
	DeleteProfile(ctx context.Context, companyID, name string) error

	// CreateWebhookEndpoint stores e. NotFound when e.CompanyID does not
	// exist; Conflict when e.ID is taken.
	CreateWebhookEndpoint(ctx context.Context, e *WebhookEndpoint) error
	// WebhookEndpoint returns the endpoint. NotFound when there is none.
	WebhookEndpoint(ctx context.Context, id string) (*WebhookEndpoint, error)
	// WebhookEndpoints returns the company's endpoints, oldest first (none:
	// an empty slice); inside Update, held against change (PostgreSQL: FOR SHARE).
	WebhookEndpoints(ctx context.Context, companyID string) ([]*WebhookEndpoint, error)
	// DisableWebhookEndpoint sets the endpoint's DisabledAt to at (the
	// zero time enables it again). NotFound when the company has no
	// endpoint of that id.
	DisableWebhookEndpoint(ctx context.Context, companyID, id string, at time.Time) error
	// DeleteWebhookEndpoint deletes the company's endpoint and its
	// delivery log. NotFound when the company has no endpoint of that id.
	DeleteWebhookEndpoint(ctx context.Context, companyID, id string) error
	// AppendWebhookDelivery appends d to its endpoint's delivery log with a
	// Seq above every earlier entry's (d.Seq is ignored). Duration is kept
	// to the microsecond. NotFound when the endpoint does not exist.
	AppendWebhookDelivery(ctx context.Context, d *WebhookDelivery) error
	// WebhookDeliveries returns up to limit entries of the endpoint's
	// delivery log, newest (highest Seq) first, among those with Seq below
	// before; before 0 starts at the newest. An unknown endpoint's is empty.
	WebhookDeliveries(ctx context.Context, endpointID string, before int64, limit int) ([]*WebhookDelivery, error)
	// DeleteWebhookDeliveries deletes up to limit entries of every
	// endpoint's delivery log attempted before before, the oldest first.
	DeleteWebhookDeliveries(ctx context.Context, before time.Time, limit int) (int, error)

	// Balance returns the company's wallet balance. NotFound: no company.
	Balance(ctx context.Context, companyID string) (wallet.Amount, error)
	// Credit adds e.Amount to e.CompanyID's wallet, appends e to its ledger
	// and returns the new balance. wallet.ErrBalanceLimit when the balance
	// would be over wallet.MaxBalance; NotFound: no company.
	Credit(ctx context.Context, e *wallet.Entry) (wallet.Amount, error)
	// Debit takes e.Amount from e.CompanyID's wallet only when the balance
	// covers it, in one step that concurrent debits cannot interleave (D4),
	// appends e to the ledger and returns the new balance. When the balance
	// is short it changes nothing and returns a *wallet.InsufficientFundsError
	// holding the balance. NotFound when the company does not exist.
	Debit(ctx context.Context, e *wallet.Entry) (wallet.Amount, error)
	// DebitAll is Debit for several entries of one company in one step:
	// it takes the sum of their amounts only when the balance covers all
	// of it, appends the entries to the ledger in the order given and
	// returns the new balance. When the balance is short it changes nothing
	// and returns a *wallet.InsufficientFundsError holding the sum and the
	// balance. NotFound when the company does not exist;
	// Conflict when an entry's ID is taken or two of them share one, and
	// then nothing is changed. No entries: nothing changes and the balance is not read (0, nil).
	DebitAll(ctx context.Context, entries []*wallet.Entry) (wallet.Amount, error)
	// Ledger returns the company's entries in the order they were made
	// (none, or no such company: an empty slice).
	Ledger(ctx context.Context, companyID string) ([]*wallet.Entry, error)
	// LedgerPage returns the page p of p.CompanyID's ledger, newest first
	// (see Page; entries made in one microsecond are ordered by ID, not
	// by the order they were made). None matching, or no such company:
	// an empty slice, no error.
	LedgerPage(ctx context.Context, p Page) ([]*wallet.Entry, error)

	// AppendAudit appends e to the audit log of e.CompanyID (D42). The
	// store sets e.At to UTC with microsecond precision, e.Seq to the
	// company's last Seq plus one (1 for its first entry), e.PrevHash to the
	// Hash of that last entry (zero for the first) and e.Hash to
	// audit.Hash(e), and moves the company's head (AuditHead) to e, all
	// under a lock of that company's head: concurrent appends to one
	// company, from any number of connections and machines, take turns and
	// never fork the chain, while appends to different companies do not
	// wait for each other. Writers of one company already take turns on its
	// wallet, so the lock costs them little. NotFound when the company
	// does not exist. Entries are never changed or deleted through Tx,
	// and nothing that deletes sessions or certificates touches them.
	AppendAudit(ctx context.Context, e *AuditEntry) error
	// AppendAudits is AppendAudit for several entries of one company in
	// one step: they are appended in the order given, each chained to the
	// one before it (the first to the company's last entry), under one
	// lock of the head, which moves once to the last of them; all of them
	// are appended, or none. NotFound when the company does not exist.
	AppendAudits(ctx context.Context, entries []*AuditEntry) error
	// AuditEntries returns the entries of q.CompanyID's audit log that q
	// selects, ordered by Seq (descending when q.Newest), at most q.Limit of
	// them (none: an empty slice).
	AuditEntries(ctx context.Context, q AuditQuery) ([]*AuditEntry, error)
	// AuditHead returns the head of the company's audit chain: the Seq and
	// Hash of its last entry, zero when it has none. NotFound when the
	// company does not exist.
	AuditHead(ctx context.Context, companyID string) (*AuditHead, error)
}
