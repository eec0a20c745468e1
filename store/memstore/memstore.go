// Package memstore is an in-memory consent.Store for tests, examples and
// the quick start. Nothing survives the process.
//
//	svc, err := consentkit.NewService(memstore.New(), consentkit.Config{})
//	c, err := svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme"})
//
// Update transactions run one at a time under a lock and keep an undo log,
// so a failed transaction leaves no trace; View transactions run
// concurrently with each other.
package memstore

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/consentkit/consentkit/audit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/wallet"
)

// Store is an in-memory consent.Store. The zero value is not usable; call New.
type Store struct {
	mu     sync.RWMutex
	closed bool

	companies     map[string]*consent.Company
	properties    map[string]*consent.Property
	tokens        map[string]*consent.Token
	tokenByDigest map[consent.Digest]string
	sessions      map[string]*consent.Session
	events        map[string][][]byte
	certs         map[string]*consent.Certificate
	// Certificate ids by email digest, mobile digest and session: the
	// indexes of D17, so that an opt-out never scans.
	certsByEmail   map[consent.Digest][]string
	certsByMobile  map[consent.Digest][]string
	certsBySession map[string][]string
	revocations    map[string]*consent.Revocation
	revByCompany   map[string][]string // revocation ids of each company, oldest first
	balances       map[string]wallet.Amount
	ledger         map[string][]*wallet.Entry
	entryIDs       map[string]bool
	jobs           map[jobID]*consent.Job
	audit          map[string][]*consent.AuditEntry // each company's chain, by Seq
	auditHeads     map[string]consent.AuditHead
	endpoints      map[string]*consent.WebhookEndpoint
	epByCompany    map[string][]string // endpoint ids of each company, oldest first
	deliveries     map[string][]*consent.WebhookDelivery
	deliverySeq    int64
	keys           map[keyID]*consent.IdempotencyRecord
	operators      map[consent.Digest]*consent.OperatorSession
	publicKeys     map[string]*consent.PublishedKey
	attestations   map[string]*consent.Attestation // by certificate id
	insights       map[string]*consent.Insights    // by certificate id
	profiles       map[profileID]*consent.Profile
}

// profileID names a profile: its company and its name.
type profileID struct{ company, name string }

// keyID names an idempotency key: its scope and the key.
type keyID struct{ scope, key string }

var _ consent.Store = (*Store)(nil)

// New returns an empty store.
func New() *Store {
	return &Store{
		companies:      map[string]*consent.Company{},
		properties:     map[string]*consent.Property{},
		tokens:         map[string]*consent.Token{},
		tokenByDigest:  map[consent.Digest]string{},
		sessions:       map[string]*consent.Session{},
		events:         map[string][][]byte{},
		certs:          map[string]*consent.Certificate{},
		certsByEmail:   map[consent.Digest][]string{},
		certsByMobile:  map[consent.Digest][]string{},
		certsBySession: map[string][]string{},
		revocations:    map[string]*consent.Revocation{},
		revByCompany:   map[string][]string{},
		balances:       map[string]wallet.Amount{},
		ledger:         map[string][]*wallet.Entry{},
		entryIDs:       map[string]bool{},
		jobs:           map[jobID]*consent.Job{},
		audit:          map[string][]*consent.AuditEntry{},
		auditHeads:     map[string]consent.AuditHead{},
		endpoints:      map[string]*consent.WebhookEndpoint{},
		epByCompany:    map[string][]string{},
		deliveries:     map[string][]*consent.WebhookDelivery{},
		keys:           map[keyID]*consent.IdempotencyRecord{},
		operators:      map[consent.Digest]*consent.OperatorSession{},
		publicKeys:     map[string]*consent.PublishedKey{},
		attestations:   map[string]*consent.Attestation{},
		insights:       map[string]*consent.Insights{},
		profiles:       map[profileID]*consent.Profile{},
	}
}

var errClosed = errors.New("memstore: store is closed")

// Update runs fn with the store locked for writing.
func (s *Store) Update(ctx context.Context, fn func(consent.Tx) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(ctx); err != nil {
		return err
	}
	tx := &tx{s: s}
	tx.undo = tx.first[:0]
	err := tx.run(fn)
	if err == nil {
		err = ctx.Err() // a cancelled request commits nothing, as on the SQL stores
	}
	if err != nil {
		tx.rollback()
	}
	return err
}

// run runs fn on t. A function that panics (or calls runtime.Goexit) has
// its writes undone before the panic goes on up, as a function that fails
// has: the store stays as it was before the call.
func (t *tx) run(fn func(consent.Tx) error) error {
	returned := false
	defer func() {
		if !returned {
			t.rollback()
		}
	}()
	err := fn(t)
	returned = true
	return err
}

// rollback undoes t's writes, the latest first.
func (t *tx) rollback() {
	for i := len(t.undo) - 1; i >= 0; i-- {
		t.undo[i]()
	}
	t.undo = t.undo[:0]
}

// View runs fn with the store locked for reading.
func (s *Store) View(ctx context.Context, fn func(consent.Tx) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.usable(ctx); err != nil {
		return err
	}
	return fn(&tx{s: s, readOnly: true})
}

// usable returns why a transaction cannot begin, with the store's lock
// held: ctx ended, or the store is closed.
func (s *Store) usable(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.closed {
		return errClosed
	}
	return nil
}

// Close makes later transactions fail.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

type tx struct {
	s        *Store
	readOnly bool
	undo     []func()
	// first holds the undo log of a short transaction, such as a
	// verification's (a debit and an audit entry), which so needs no
	// allocation of its own.
	first [8]func()
}

var errReadOnly = errors.New("memstore: write in a read-only transaction")

func (t *tx) write() error {
	if t.readOnly {
		return errReadOnly
	}
	return nil
}

// set stores v under k in m and records how to undo it.
func set[K comparable, V any](t *tx, m map[K]V, k K, v V) {
	old, had := m[k]
	m[k] = v
	t.undo = append(t.undo, func() {
		if had {
			m[k] = old
		} else {
			delete(m, k)
		}
	})
}

// del deletes k from m, when it is there, and records how to undo it.
func del[K comparable, V any](t *tx, m map[K]V, k K) {
	old, had := m[k]
	if !had {
		return
	}
	delete(m, k)
	t.undo = append(t.undo, func() { m[k] = old })
}

// setAll stores vs[i] under ks[i] in m, for keys that are all different,
// and records one undo step for them all: a bulk write (UpdateSessions,
// EnqueueJobs, DebitAll) costs no closure per row.
func setAll[K comparable, V any](t *tx, m map[K]V, ks []K, vs []V) {
	type was struct {
		v   V
		had bool
	}
	olds := make([]was, len(ks))
	for i, k := range ks {
		olds[i].v, olds[i].had = m[k]
		m[k] = vs[i]
	}
	t.undo = append(t.undo, func() {
		for i, k := range ks {
			if olds[i].had {
				m[k] = olds[i].v
			} else {
				delete(m, k)
			}
		}
	})
}

// appendUndo appends vs to m[k] and records how to undo it: the slice is
// cut back to its old length. Writers hold the store's lock, and readers
// copy what they return, so appending in place is safe.
func appendUndo[K comparable, V any](t *tx, m map[K][]V, k K, vs ...V) {
	old := m[k]
	m[k] = append(old, vs...)
	n := len(old)
	t.undo = append(t.undo, func() { m[k] = m[k][:n] })
}

func notFound(what string) error { return consent.Errorf(consent.NotFound, "%s not found", what) }
func conflict(what string) error { return consent.Errorf(consent.Conflict, "%s already exists", what) }

// get returns a copy of the value under k in m, or what's NotFound error.
func get[K comparable, V any](m map[K]V, k K, what string, clone func(V) V) (V, error) {
	v, ok := m[k]
	if !ok {
		var zero V
		return zero, notFound(what)
	}
	return clone(v), nil
}

// create stores v under k in m for a Create method: in a write
// transaction, under a key not taken (a Conflict on what), when each of
// refs is nil: the rows v refers to, checked in order (see has).
func create[K comparable, V any](t *tx, m map[K]V, k K, v V, what string, refs ...error) error {
	if err := t.write(); err != nil {
		return err
	}
	if _, ok := m[k]; ok {
		return conflict(what)
	}
	for _, err := range refs {
		if err != nil {
			return err
		}
	}
	set(t, m, k, v)
	return nil
}

// has returns nil when k is in m, and what's NotFound error otherwise.
func has[K comparable, V any](m map[K]V, k K, what string) error {
	if _, ok := m[k]; !ok {
		return notFound(what)
	}
	return nil
}

// change replaces the value under k in m by edit's new copy of it, in a
// write transaction; a missing k is what's NotFound error.
func change[K comparable, V any](t *tx, m map[K]V, k K, what string, edit func(old V) V) error {
	if err := t.write(); err != nil {
		return err
	}
	old, ok := m[k]
	if !ok {
		return notFound(what)
	}
	set(t, m, k, edit(old))
	return nil
}

// utc is a time as the store keeps it: in UTC, to the microsecond, as the
// SQL stores keep times (consent.UTC).
func utc(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return consent.UTC(t)
}

func cloneCompany(c *consent.Company) *consent.Company {
	n := *c
	n.AuthorizedThirdParties, n.CreatedAt = list(c.AuthorizedThirdParties), utc(n.CreatedAt)
	return &n
}

func (t *tx) CreateCompany(_ context.Context, c *consent.Company) error {
	if err := create(t, t.s.companies, c.ID, cloneCompany(c), "company"); err != nil {
		return err
	}
	set(t, t.s.balances, c.ID, 0)
	return nil
}

func (t *tx) Company(_ context.Context, id string) (*consent.Company, error) {
	return get(t.s.companies, id, "company", cloneCompany)
}

// LockCompany has nothing to lock: an Update is the only writer.
func (t *tx) LockCompany(ctx context.Context, id string) error {
	_, err := t.Company(ctx, id)
	return err
}

func (t *tx) CompanyIDs(_ context.Context, after string, limit int) ([]string, error) {
	ids := []string{}
	for id := range t.s.companies {
		if id > after {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids[:min(len(ids), max(limit, 0))], nil
}

func (t *tx) UpdateCompany(_ context.Context, c *consent.Company) error {
	return change(t, t.s.companies, c.ID, "company", func(old *consent.Company) *consent.Company {
		n := cloneCompany(c)
		n.CreatedAt = old.CreatedAt
		return n
	})
}

func cloneProperty(p *consent.Property) *consent.Property {
	n := *p
	n.AllowedOrigins, n.CreatedAt = list(p.AllowedOrigins), utc(n.CreatedAt)
	return &n
}

func (t *tx) CreateProperty(_ context.Context, p *consent.Property) error {
	return create(t, t.s.properties, p.ID, cloneProperty(p), "property", has(t.s.companies, p.CompanyID, "company"))
}

func (t *tx) Property(_ context.Context, id string) (*consent.Property, error) {
	return get(t.s.properties, id, "property", cloneProperty)
}

func (t *tx) UpdateProperty(_ context.Context, p *consent.Property) error {
	return change(t, t.s.properties, p.ID, "property", func(old *consent.Property) *consent.Property {
		n := cloneProperty(old)
		n.Name, n.AllowedOrigins = p.Name, list(p.AllowedOrigins)
		return n
	})
}

// byCreation sorts items oldest first, by creation time and then id.
func byCreation[V any](items []V, key func(V) (time.Time, string)) {
	slices.SortFunc(items, func(a, b V) int {
		at, aid := key(a)
		bt, bid := key(b)
		if c := at.Compare(bt); c != 0 {
			return c
		}
		return strings.Compare(aid, bid)
	})
}

// page returns the items of the page p: those of p's company that p
// includes, newest first, at most p.Limit. The memory store scans; the
// SQL stores read an index on (company_id, created_at, id).
func page[V any](p consent.Page, items []V, key func(V) (company string, at time.Time, id string), clone func(V) V) ([]V, error) {
	var in []V
	for _, v := range items {
		company, at, id := key(v)
		if company == p.CompanyID && p.Includes(at, id) {
			in = append(in, v)
		}
	}
	byCreation(in, func(v V) (time.Time, string) { _, at, id := key(v); return at, id })
	slices.Reverse(in)
	out := make([]V, 0, min(len(in), p.Limit))
	for _, v := range in[:min(len(in), p.Limit)] {
		out = append(out, clone(v))
	}
	return out, nil
}

// companyList returns copies of the items of m that are companyID's,
// oldest first (byCreation).
func companyList[V any](m map[string]V, companyID string, key func(V) (company string, at time.Time, id string), clone func(V) V) []V {
	out := []V{}
	for _, v := range m {
		if company, _, _ := key(v); company == companyID {
			out = append(out, clone(v))
		}
	}
	byCreation(out, func(v V) (time.Time, string) { _, at, id := key(v); return at, id })
	return out
}

func (t *tx) Properties(_ context.Context, companyID string) ([]*consent.Property, error) {
	return companyList(t.s.properties, companyID, func(p *consent.Property) (string, time.Time, string) {
		return p.CompanyID, p.CreatedAt, p.ID
	}, cloneProperty), nil
}

func cloneToken(tok *consent.Token) *consent.Token {
	n := *tok
	n.Permissions, n.ExpiresAt, n.RevokedAt, n.CreatedAt = list(tok.Permissions), utc(n.ExpiresAt), utc(n.RevokedAt), utc(n.CreatedAt)
	return &n
}

func (t *tx) CreateToken(_ context.Context, tok *consent.Token) error {
	var taken error
	if _, ok := t.s.tokenByDigest[tok.Digest]; ok {
		taken = conflict("token")
	}
	if err := create(t, t.s.tokens, tok.ID, cloneToken(tok), "token", taken, has(t.s.companies, tok.CompanyID, "company")); err != nil {
		return err
	}
	set(t, t.s.tokenByDigest, tok.Digest, tok.ID)
	return nil
}

func (t *tx) TokenByDigest(_ context.Context, d consent.Digest) (*consent.Token, error) {
	id, ok := t.s.tokenByDigest[d]
	if !ok {
		return nil, notFound("token")
	}
	return cloneToken(t.s.tokens[id]), nil
}

func (t *tx) Tokens(_ context.Context, companyID string) ([]*consent.Token, error) {
	return companyList(t.s.tokens, companyID, func(tok *consent.Token) (string, time.Time, string) {
		return tok.CompanyID, tok.CreatedAt, tok.ID
	}, cloneToken), nil
}

func (t *tx) RevokeToken(_ context.Context, companyID, id string, at time.Time) error {
	if err := t.write(); err != nil {
		return err
	}
	tok, ok := t.s.tokens[id]
	if !ok || tok.CompanyID != companyID {
		return notFound("token")
	}
	if tok.RevokedAt.IsZero() {
		n := cloneToken(tok)
		n.RevokedAt = utc(at)
		set(t, t.s.tokens, id, n)
	}
	return nil
}

func cloneSession(s *consent.Session) *consent.Session {
	n := *s
	n.CreatedAt, n.ExpiresAt, n.ClosedAt = utc(n.CreatedAt), utc(n.ExpiresAt), utc(n.ClosedAt)
	n.LastEventAt, n.Recording.At = utc(n.LastEventAt), utc(n.Recording.At)
	n.Video.Duration = n.Video.Duration.Truncate(time.Millisecond) // as the SQL stores keep it
	return &n
}

func (t *tx) CreateSession(_ context.Context, ses *consent.Session) error {
	n := cloneSession(ses)
	n.EventChunks, n.EventBytes, n.LastEventAt, n.Recording = 0, 0, time.Time{}, consent.Recording{}
	err := create(t, t.s.sessions, ses.ID, n, "session",
		has(t.s.companies, ses.CompanyID, "company"), has(t.s.properties, ses.PropertyID, "property"))
	if err != nil {
		return err
	}
	set(t, t.s.events, ses.ID, nil)
	return nil
}

func (t *tx) Session(_ context.Context, id string) (*consent.Session, error) {
	return get(t.s.sessions, id, "session", cloneSession)
}

func (t *tx) Sessions(_ context.Context, ids []string) ([]*consent.Session, error) {
	out := make([]*consent.Session, len(ids))
	for i, id := range ids {
		if ses, ok := t.s.sessions[id]; ok {
			out[i] = cloneSession(ses)
		}
	}
	return out, nil
}

func (t *tx) SessionPage(_ context.Context, p consent.Page) ([]*consent.Session, error) {
	return page(p, mapValues(t.s.sessions), func(s *consent.Session) (string, time.Time, string) {
		return s.CompanyID, s.CreatedAt, s.ID
	}, cloneSession)
}

// mapValues returns the values of m, in no order.
func mapValues[V any](m map[string]V) []V {
	out := make([]V, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func (t *tx) AppendEvents(_ context.Context, sessionID string, chunk []byte, at time.Time) error {
	err := change(t, t.s.sessions, sessionID, "session", func(old *consent.Session) *consent.Session {
		n := cloneSession(old)
		n.EventChunks++
		n.EventBytes += int64(len(chunk))
		n.LastEventAt = utc(at)
		return n
	})
	if err != nil {
		return err
	}
	appendUndo(t, t.s.events, sessionID, list(chunk))
	return nil
}

func (t *tx) EventChunk(_ context.Context, sessionID string, seq int) ([]byte, error) {
	if _, ok := t.s.sessions[sessionID]; !ok {
		return nil, notFound("session")
	}
	chunks := t.s.events[sessionID]
	if seq < 0 || seq >= len(chunks) {
		return nil, notFound("event chunk")
	}
	return list(chunks[seq]), nil
}

func (t *tx) UpdateSession(_ context.Context, ses *consent.Session) error {
	return change(t, t.s.sessions, ses.ID, "session", func(old *consent.Session) *consent.Session { return updated(old, ses) })
}

// updated returns a copy of the stored session old with what UpdateSession
// changes taken from ses.
func updated(old, ses *consent.Session) *consent.Session {
	n := cloneSession(old)
	n.RetentionStatus, n.VideoStatus, n.ExpiresAt, n.Video = ses.RetentionStatus, ses.VideoStatus, utc(ses.ExpiresAt), ses.Video
	n.Video.Duration = ses.Video.Duration.Truncate(time.Millisecond) // as the SQL stores keep it
	n.ClosedAt = utc(ses.ClosedAt)
	return n
}

// UpdateSessions finds every session before it writes one, so that it
// writes all of them or none.
func (t *tx) UpdateSessions(ctx context.Context, list []*consent.Session) error {
	if err := t.write(); err != nil {
		return err
	}
	ids, news := make([]string, len(list)), make([]*consent.Session, len(list))
	for i, ses := range list {
		old, ok := t.s.sessions[ses.ID]
		if !ok {
			return notFound("session")
		}
		ids[i], news[i] = ses.ID, updated(old, ses)
	}
	setAll(t, t.s.sessions, ids, news)
	return nil
}

func (t *tx) SetRecording(_ context.Context, sessionID string, r consent.Recording) error {
	err := change(t, t.s.sessions, sessionID, "session", func(old *consent.Session) *consent.Session {
		n := cloneSession(old)
		n.Recording = r
		n.Recording.At = utc(r.At)
		return n
	})
	if err == nil && r.Moved() {
		set(t, t.s.events, sessionID, nil)
	}
	return err
}

func (t *tx) SessionsToMove(_ context.Context, idleBefore time.Time, limit int) ([]string, error) {
	idleBefore = utc(idleBefore)
	return earliest(t.s.sessions, func(s *consent.Session) (time.Time, bool) {
		return s.LastEventAt, s.ToMove(idleBefore)
	}, limit), nil
}

func (t *tx) Events(_ context.Context, sessionID string) ([][]byte, error) {
	if _, ok := t.s.sessions[sessionID]; !ok {
		return nil, notFound("session")
	}
	chunks := t.s.events[sessionID]
	out := make([][]byte, len(chunks))
	for i, c := range chunks {
		out[i] = list(c)
	}
	return out, nil
}

func (t *tx) EachEventChunk(_ context.Context, sessionID string, fn func([]byte) error) error {
	if _, ok := t.s.sessions[sessionID]; !ok {
		return notFound("session")
	}
	for _, c := range t.s.events[sessionID] {
		if err := fn(list(c)); err != nil {
			return err
		}
	}
	return nil
}

func cloneVisibility(v *consent.Visibility) *consent.Visibility {
	if v == nil {
		return nil
	}
	n := *v
	n.HiddenText = list(v.HiddenText)
	return &n
}

func cloneCertificate(c *consent.Certificate) *consent.Certificate {
	n := *c
	n.Records = make([]consent.Record, len(c.Records))
	for i, r := range c.Records {
		n.Records[i] = consent.Record{Text: r.Text, Types: list(r.Types), OptInAt: utc(r.OptInAt),
			OptInMethod: r.OptInMethod, Visibility: cloneVisibility(r.Visibility), NodeID: r.NodeID}
	}
	n.EventsCombined = list(c.EventsCombined)
	n.Signature = list(c.Signature)
	n.Visibility = cloneVisibility(c.Visibility)
	n.CreatedAt, n.ExpiresAt, n.RevokedAt = utc(n.CreatedAt), utc(n.ExpiresAt), utc(n.RevokedAt)
	n.RevokedBefore = utc(n.RevokedBefore)
	return &n
}

func (t *tx) CreateCertificate(_ context.Context, c *consent.Certificate) error {
	err := create(t, t.s.certs, c.ID, cloneCertificate(c), "certificate", has(t.s.companies, c.CompanyID, "company"),
		has(t.s.properties, c.PropertyID, "property"), has(t.s.sessions, c.SessionID, "session"))
	if err != nil {
		return err
	}
	if !c.EmailDigest.IsZero() {
		appendUndo(t, t.s.certsByEmail, c.EmailDigest, c.ID)
	}
	if !c.MobileDigest.IsZero() {
		appendUndo(t, t.s.certsByMobile, c.MobileDigest, c.ID)
	}
	appendUndo(t, t.s.certsBySession, c.SessionID, c.ID)
	return nil
}

// unindex takes id out of m[k], in a new slice so that undo can put the
// old one back.
func unindex[K comparable](t *tx, m map[K][]string, k K, id string) {
	ids := slices.DeleteFunc(slices.Clone(m[k]), func(x string) bool { return x == id })
	if len(ids) == 0 {
		del(t, m, k)
		return
	}
	set(t, m, k, ids)
}

func (t *tx) Certificate(_ context.Context, id string) (*consent.Certificate, error) {
	return get(t.s.certs, id, "certificate", cloneCertificate)
}

// certificatesOf returns the ids among those of an index's entry that are
// companyID's (all of them when companyID is ""), sorted.
func (t *tx) certificatesOf(ids []string, companyID string) []string {
	out := []string{}
	for _, id := range ids {
		if companyID == "" || t.s.certs[id].CompanyID == companyID {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

func (t *tx) CertificatesByEmail(_ context.Context, companyID string, d consent.Digest) ([]string, error) {
	if d.IsZero() {
		return []string{}, nil
	}
	return t.certificatesOf(t.s.certsByEmail[d], companyID), nil
}

func (t *tx) CertificatesByMobile(_ context.Context, companyID string, d consent.Digest) ([]string, error) {
	if d.IsZero() {
		return []string{}, nil
	}
	return t.certificatesOf(t.s.certsByMobile[d], companyID), nil
}

// Velocity scans every certificate: the memory store is for tests and
// small deployments.
func (t *tx) Velocity(_ context.Context, c *consent.Certificate) (consent.Velocity, error) {
	var v consent.Velocity
	count := func(n *int, same bool) {
		if same && *n < consent.MaxVelocity {
			*n++
		}
	}
	for _, o := range t.s.certs {
		if o.CompanyID != c.CompanyID || o.ID == c.ID || o.CreatedAt.After(c.CreatedAt) {
			continue
		}
		for _, w := range []struct {
			counts *consent.VelocityCounts
			span   time.Duration
		}{{&v.Hour, time.Hour}, {&v.Day, 24 * time.Hour}} {
			if o.CreatedAt.Before(c.CreatedAt.Add(-w.span)) {
				continue
			}
			count(&w.counts.ClientIP, c.ClientIP != "" && o.ClientIP == c.ClientIP)
			count(&w.counts.Email, !c.EmailDigest.IsZero() && o.EmailDigest == c.EmailDigest)
			count(&w.counts.Mobile, !c.MobileDigest.IsZero() && o.MobileDigest == c.MobileDigest)
		}
	}
	return v, nil
}

func (t *tx) CertificatesBySession(_ context.Context, sessionID string) ([]string, error) {
	return t.certificatesOf(t.s.certsBySession[sessionID], ""), nil
}

func (t *tx) CertificatePage(_ context.Context, p consent.Page) ([]*consent.Certificate, error) {
	return page(p, mapValues(t.s.certs), func(c *consent.Certificate) (string, time.Time, string) {
		return c.CompanyID, c.CreatedAt, c.ID
	}, cloneCertificate)
}

func (t *tx) UpdateCertificate(_ context.Context, c *consent.Certificate) error {
	return change(t, t.s.certs, c.ID, "certificate", func(old *consent.Certificate) *consent.Certificate {
		n := cloneCertificate(old)
		n.RetentionStatus, n.ExpiresAt = c.RetentionStatus, utc(c.ExpiresAt)
		return n
	})
}

// RevokeCertificate keeps the first revocation's time.
func (t *tx) RevokeCertificate(_ context.Context, id string, at time.Time) error {
	return change(t, t.s.certs, id, "certificate", func(old *consent.Certificate) *consent.Certificate {
		if !old.RevokedAt.IsZero() {
			return old
		}
		n := cloneCertificate(old)
		n.RevokedAt = utc(at)
		return n
	})
}

func (t *tx) CreateRevocation(_ context.Context, r *consent.Revocation) error {
	if err := create(t, t.s.revocations, r.ID, cloneRevocation(r), "revocation", has(t.s.companies, r.CompanyID, "company")); err != nil {
		return err
	}
	appendUndo(t, t.s.revByCompany, r.CompanyID, r.ID)
	return nil
}

func cloneRevocation(r *consent.Revocation) *consent.Revocation {
	n := *r
	n.CertificateIDs, n.CreatedAt = list(r.CertificateIDs), utc(n.CreatedAt)
	return &n
}

func (t *tx) Revocations(_ context.Context, companyID string) ([]*consent.Revocation, error) {
	out := []*consent.Revocation{}
	for _, id := range t.s.revByCompany[companyID] {
		out = append(out, cloneRevocation(t.s.revocations[id]))
	}
	return out, nil
}

func (t *tx) RevokedBefore(_ context.Context, companyID string, email, mobile consent.Digest) (time.Time, error) {
	var latest time.Time
	later := func(at time.Time) {
		if at.After(latest) {
			latest = at
		}
	}
	matches := func(e, m consent.Digest) bool {
		return !email.IsZero() && e == email || !mobile.IsZero() && m == mobile
	}
	for _, id := range t.s.revByCompany[companyID] {
		if r := t.s.revocations[id]; matches(r.EmailDigest, r.MobileDigest) {
			later(r.CreatedAt)
		}
	}
	for _, d := range []consent.Digest{email, mobile} {
		if d.IsZero() {
			continue
		}
		for _, id := range append(t.certificatesOf(t.s.certsByEmail[d], companyID), t.certificatesOf(t.s.certsByMobile[d], companyID)...) {
			if c := t.s.certs[id]; matches(c.EmailDigest, c.MobileDigest) {
				later(c.RevokedAt)
			}
		}
	}
	return utc(latest), nil
}

func (t *tx) RevocationPage(_ context.Context, p consent.Page) ([]*consent.Revocation, error) {
	var revs []*consent.Revocation
	for _, id := range t.s.revByCompany[p.CompanyID] {
		revs = append(revs, t.s.revocations[id])
	}
	return page(p, revs, func(r *consent.Revocation) (string, time.Time, string) {
		return r.CompanyID, r.CreatedAt, r.ID
	}, cloneRevocation)
}

// expiring returns up to limit keys of items whose expiry is not after
// before, earliest first, then by key. The memory store scans; the SQL
// stores use an index on the expiry.
func expiring[V any](m map[string]V, expiry func(V) (time.Time, bool), before time.Time, limit int) []string {
	return earliest(m, func(v V) (time.Time, bool) {
		at, ok := expiry(v)
		return at, ok && !at.After(before)
	}, limit)
}

// earliest returns up to limit keys of the items pick takes, by the time
// it gives them, earliest first, then by key.
func earliest[V any](m map[string]V, pick func(V) (time.Time, bool), limit int) []string {
	type item struct {
		at time.Time
		id string
	}
	var due []item
	for id, v := range m {
		if at, ok := pick(v); ok {
			due = append(due, item{at, id})
		}
	}
	slices.SortFunc(due, func(a, b item) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	ids := []string{}
	for _, d := range due[:min(len(due), max(limit, 0))] {
		ids = append(ids, d.id)
	}
	return ids
}

func (t *tx) PurgeSessions(_ context.Context, before time.Time, limit int) ([]*consent.Session, error) {
	if err := t.write(); err != nil {
		return nil, err
	}
	before = utc(before) // compared to the microsecond, as stored
	ids := expiring(t.s.sessions, func(s *consent.Session) (time.Time, bool) {
		return s.ExpiresAt, s.RetentionStatus != consent.RetentionExpired
	}, before, limit)
	out := []*consent.Session{}
	for _, id := range ids {
		old := t.s.sessions[id]
		out = append(out, cloneSession(old))
		n := cloneSession(old)
		n.RetentionStatus, n.VideoStatus, n.Video = consent.RetentionExpired, consent.VideoNone, consent.Video{}
		n.EventChunks, n.EventBytes, n.URL, n.UploadDigest = 0, 0, "", consent.Digest{}
		n.Recording = consent.Recording{}
		set(t, t.s.sessions, id, n)
		del(t, t.s.events, id)
	}
	return out, nil
}

func (t *tx) PurgeCertificates(_ context.Context, before time.Time, limit int) ([]string, error) {
	if err := t.write(); err != nil {
		return nil, err
	}
	before = utc(before)
	ids := expiring(t.s.certs, func(c *consent.Certificate) (time.Time, bool) { return c.ExpiresAt, true }, before, limit)
	for _, id := range ids {
		old := t.s.certs[id]
		del(t, t.s.certs, id)
		del(t, t.s.attestations, id)
		del(t, t.s.insights, id)
		if !old.EmailDigest.IsZero() {
			unindex(t, t.s.certsByEmail, old.EmailDigest, id)
		}
		if !old.MobileDigest.IsZero() {
			unindex(t, t.s.certsByMobile, old.MobileDigest, id)
		}
		unindex(t, t.s.certsBySession, old.SessionID, id)
	}
	sort.Strings(ids)
	return ids, nil
}

// jobID is a job's kind and key.
type jobID struct{ kind, key string }

func (t *tx) EnqueueJob(_ context.Context, j *consent.Job) error {
	return create(t, t.s.jobs, jobID{j.Kind, j.Key}, cloneJob(j), "job")
}

// EnqueueJobs looks every job up before it adds one, so that it adds all
// of them or none.
func (t *tx) EnqueueJobs(ctx context.Context, jobs []*consent.Job) error {
	if err := t.write(); err != nil {
		return err
	}
	seen := make(map[jobID]bool, len(jobs))
	ids, copies := make([]jobID, len(jobs)), make([]*consent.Job, len(jobs))
	for i, j := range jobs {
		id := jobID{j.Kind, j.Key}
		if _, ok := t.s.jobs[id]; ok || seen[id] {
			return conflict("job")
		}
		seen[id] = true
		ids[i], copies[i] = id, cloneJob(j)
	}
	setAll(t, t.s.jobs, ids, copies)
	return nil
}

func cloneJob(j *consent.Job) *consent.Job {
	n := *j
	n.Payload = list(j.Payload)
	n.RunAfter, n.LeaseUntil, n.FailedAt, n.CreatedAt = utc(n.RunAfter), utc(n.LeaseUntil), utc(n.FailedAt), utc(n.CreatedAt)
	return &n
}

func (t *tx) Job(_ context.Context, kind, key string) (*consent.Job, error) {
	return get(t.s.jobs, jobID{kind, key}, "job", cloneJob)
}

func (t *tx) CountJobs(_ context.Context, kind string) (int, error) {
	return t.countJobs(func(j *consent.Job) bool { return j.Kind == kind }), nil
}

func (t *tx) CountCompanyJobs(_ context.Context, kind, companyID string) (int, error) {
	return t.countJobs(func(j *consent.Job) bool { return j.Kind == kind && j.CompanyID == companyID }), nil
}

func (t *tx) DeleteLaneJobs(_ context.Context, kind, companyID, lane string) (int, error) {
	if err := t.write(); err != nil {
		return 0, err
	}
	var ids []jobID
	for id, j := range t.s.jobs {
		if j.Kind == kind && j.CompanyID == companyID && j.Lane == lane && j.FailedAt.IsZero() {
			ids = append(ids, id)
		}
	}
	for _, id := range ids {
		del(t, t.s.jobs, id)
	}
	return len(ids), nil
}

func (t *tx) DeleteFailedJobs(_ context.Context, kind string, before time.Time, limit int) (int, error) {
	if err := t.write(); err != nil {
		return 0, err
	}
	var ids []jobID
	for id, j := range t.s.jobs {
		if j.Kind == kind && !j.FailedAt.IsZero() && j.FailedAt.Before(before) {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b jobID) int {
		return cmp.Or(t.s.jobs[a].FailedAt.Compare(t.s.jobs[b].FailedAt), cmp.Compare(a.key, b.key))
	})
	ids = ids[:min(len(ids), limit)]
	for _, id := range ids {
		del(t, t.s.jobs, id)
	}
	return len(ids), nil
}

// countJobs counts the jobs not failed for good that match.
func (t *tx) countJobs(match func(*consent.Job) bool) int {
	n := 0
	for _, j := range t.s.jobs {
		if match(j) && j.FailedAt.IsZero() {
			n++
		}
	}
	return n
}

// LeaseJob counts the leases held per company (of the kinds asked for)
// and per lane, then takes the due job of the company with fewest, in a
// free lane, the earliest first (D53).
func (t *tx) LeaseJob(_ context.Context, kinds []string, owner string, now, until time.Time) (*consent.Job, error) {
	if err := t.write(); err != nil {
		return nil, err
	}
	now = utc(now)
	held := func(j *consent.Job) bool { return j.LeaseOwner != "" && j.LeaseUntil.After(now) }
	companies, lanes := map[string]int{}, map[string]bool{}
	for _, j := range t.s.jobs {
		if held(j) {
			lanes[j.Lane] = true
			if slices.Contains(kinds, j.Kind) {
				companies[j.CompanyID]++
			}
		}
	}
	var due *consent.Job
	for _, j := range t.s.jobs {
		if !slices.Contains(kinds, j.Kind) || !j.FailedAt.IsZero() || j.RunAfter.After(now) || held(j) ||
			j.Lane != "" && lanes[j.Lane] {
			continue
		}
		if due == nil || cmp.Or(cmp.Compare(companies[j.CompanyID], companies[due.CompanyID]),
			j.RunAfter.Compare(due.RunAfter), cmp.Compare(j.Kind, due.Kind), cmp.Compare(j.Key, due.Key)) < 0 {
			due = j
		}
	}
	if due == nil {
		return nil, notFound("due job")
	}
	n := cloneJob(due)
	n.LeaseOwner, n.LeaseUntil = owner, utc(until)
	n.Attempts = min(n.Attempts+1, consent.MaxJobAttempts)
	set(t, t.s.jobs, jobID{n.Kind, n.Key}, n)
	return cloneJob(n), nil
}

// leased returns the job when owner holds its lease.
func (t *tx) leased(kind, key, owner string) (*consent.Job, error) {
	j, ok := t.s.jobs[jobID{kind, key}]
	switch {
	case !ok:
		return nil, notFound("job")
	case j.LeaseOwner != owner:
		return nil, consent.Errorf(consent.Conflict, "the lease of the job is held by another runner")
	}
	return cloneJob(j), nil
}

func (t *tx) RenewJob(_ context.Context, kind, key, owner string, until time.Time) error {
	if err := t.write(); err != nil {
		return err
	}
	j, err := t.leased(kind, key, owner)
	if err != nil {
		return err
	}
	j.LeaseUntil = utc(until)
	set(t, t.s.jobs, jobID{kind, key}, j)
	return nil
}

func (t *tx) EndJob(_ context.Context, kind, key, owner string, next *consent.Job) error {
	if err := t.write(); err != nil {
		return err
	}
	j, err := t.leased(kind, key, owner)
	if err != nil {
		return err
	}
	id := jobID{kind, key}
	if next == nil {
		del(t, t.s.jobs, id)
		return nil
	}
	n := cloneJob(next)
	j.Payload, j.Attempts, j.RunAfter, j.LastError, j.FailedAt = n.Payload, n.Attempts, n.RunAfter, n.LastError, n.FailedAt
	j.LeaseOwner, j.LeaseUntil = "", time.Time{}
	set(t, t.s.jobs, id, j)
	return nil
}

func cloneProfile(p *consent.Profile) *consent.Profile {
	n := *p
	n.Rules, n.CreatedAt, n.UpdatedAt = list(p.Rules), utc(n.CreatedAt), utc(n.UpdatedAt)
	return &n
}

func (t *tx) PutProfile(_ context.Context, p *consent.Profile) error {
	if err := t.write(); err != nil {
		return err
	}
	if err := has(t.s.companies, p.CompanyID, "company"); err != nil {
		return err
	}
	set(t, t.s.profiles, profileID{p.CompanyID, p.Name}, cloneProfile(p))
	return nil
}

func (t *tx) Profile(_ context.Context, companyID, name string) (*consent.Profile, error) {
	return get(t.s.profiles, profileID{companyID, name}, "profile", cloneProfile)
}

func (t *tx) Profiles(_ context.Context, companyID string) ([]*consent.Profile, error) {
	out := []*consent.Profile{}
	for id, p := range t.s.profiles {
		if id.company == companyID {
			out = append(out, cloneProfile(p))
		}
	}
	slices.SortFunc(out, func(a, b *consent.Profile) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func (t *tx) DeleteProfile(_ context.Context, companyID, name string) error {
	if err := t.write(); err != nil {
		return err
	}
	id := profileID{companyID, name}
	if err := has(t.s.profiles, id, "profile"); err != nil {
		return err
	}
	del(t, t.s.profiles, id)
	return nil
}

func (t *tx) CreateWebhookEndpoint(_ context.Context, e *consent.WebhookEndpoint) error {
	err := create(t, t.s.endpoints, e.ID, cloneEndpoint(e), "webhook endpoint", has(t.s.companies, e.CompanyID, "company"))
	if err != nil {
		return err
	}
	appendUndo(t, t.s.epByCompany, e.CompanyID, e.ID)
	return nil
}

func cloneEndpoint(e *consent.WebhookEndpoint) *consent.WebhookEndpoint {
	n := *e
	n.Events = list(e.Events)
	n.CreatedAt, n.DisabledAt = utc(n.CreatedAt), utc(n.DisabledAt)
	return &n
}

func (t *tx) WebhookEndpoint(_ context.Context, id string) (*consent.WebhookEndpoint, error) {
	return get(t.s.endpoints, id, "webhook endpoint", cloneEndpoint)
}

func (t *tx) WebhookEndpoints(_ context.Context, companyID string) ([]*consent.WebhookEndpoint, error) {
	out := []*consent.WebhookEndpoint{}
	for _, id := range t.s.epByCompany[companyID] {
		out = append(out, cloneEndpoint(t.s.endpoints[id]))
	}
	return out, nil
}

// companyEndpoint returns the company's endpoint for writing.
func (t *tx) companyEndpoint(companyID, id string) (*consent.WebhookEndpoint, error) {
	if err := t.write(); err != nil {
		return nil, err
	}
	e, ok := t.s.endpoints[id]
	if !ok || e.CompanyID != companyID {
		return nil, notFound("webhook endpoint")
	}
	return e, nil
}

func (t *tx) DisableWebhookEndpoint(_ context.Context, companyID, id string, at time.Time) error {
	e, err := t.companyEndpoint(companyID, id)
	if err != nil {
		return err
	}
	n := cloneEndpoint(e)
	n.DisabledAt = utc(at)
	set(t, t.s.endpoints, id, n)
	return nil
}

func (t *tx) DeleteWebhookEndpoint(_ context.Context, companyID, id string) error {
	if _, err := t.companyEndpoint(companyID, id); err != nil {
		return err
	}
	old, oldIDs := t.s.endpoints[id], t.s.epByCompany[companyID]
	oldLog, hadLog := t.s.deliveries[id]
	delete(t.s.endpoints, id)
	delete(t.s.deliveries, id)
	t.s.epByCompany[companyID] = slices.DeleteFunc(slices.Clone(oldIDs), func(s string) bool { return s == id })
	t.undo = append(t.undo, func() {
		t.s.endpoints[id], t.s.epByCompany[companyID] = old, oldIDs
		if hadLog {
			t.s.deliveries[id] = oldLog
		}
	})
	return nil
}

func (t *tx) AppendWebhookDelivery(_ context.Context, d *consent.WebhookDelivery) error {
	if err := t.write(); err != nil {
		return err
	}
	if _, ok := t.s.endpoints[d.EndpointID]; !ok {
		return notFound("webhook endpoint")
	}
	n := *d
	n.At, n.Duration = utc(n.At), n.Duration.Truncate(time.Microsecond)
	seq := t.s.deliverySeq
	t.s.deliverySeq++
	n.Seq = t.s.deliverySeq
	t.undo = append(t.undo, func() { t.s.deliverySeq = seq })
	appendUndo(t, t.s.deliveries, d.EndpointID, &n)
	return nil
}

func (t *tx) WebhookDeliveries(_ context.Context, endpointID string, before int64, limit int) ([]*consent.WebhookDelivery, error) {
	out := []*consent.WebhookDelivery{}
	log := t.s.deliveries[endpointID]
	for i := len(log) - 1; i >= 0 && len(out) < limit; i-- {
		if before > 0 && log[i].Seq >= before {
			continue
		}
		n := *log[i]
		out = append(out, &n)
	}
	return out, nil
}

func (t *tx) DeleteWebhookDeliveries(_ context.Context, before time.Time, limit int) (int, error) {
	if err := t.write(); err != nil {
		return 0, err
	}
	var old []*consent.WebhookDelivery
	for _, log := range t.s.deliveries {
		for _, d := range log {
			if d.At.Before(before) {
				old = append(old, d)
			}
		}
	}
	slices.SortFunc(old, func(a, b *consent.WebhookDelivery) int {
		return cmp.Or(a.At.Compare(b.At), cmp.Compare(a.Seq, b.Seq))
	})
	gone := map[*consent.WebhookDelivery]bool{}
	for _, d := range old[:min(len(old), limit)] {
		gone[d] = true
	}
	for id, log := range t.s.deliveries {
		if kept := slices.DeleteFunc(slices.Clone(log), func(d *consent.WebhookDelivery) bool { return gone[d] }); len(kept) < len(log) {
			set(t, t.s.deliveries, id, kept)
		}
	}
	return len(gone), nil
}

func (t *tx) Balance(_ context.Context, companyID string) (wallet.Amount, error) {
	bal, ok := t.s.balances[companyID]
	if !ok {
		return 0, notFound("company")
	}
	return bal, nil
}

func (t *tx) Credit(_ context.Context, e *wallet.Entry) (wallet.Amount, error) {
	return t.post(e, e.Amount)
}

func (t *tx) Debit(_ context.Context, e *wallet.Entry) (wallet.Amount, error) {
	return t.post(e, -e.Amount)
}

// DebitAll checks the entries and the balance before it posts one, so
// that it posts all of them or none.
func (t *tx) DebitAll(_ context.Context, entries []*wallet.Entry) (wallet.Amount, error) {
	if len(entries) == 0 {
		return 0, nil
	}
	if err := t.write(); err != nil {
		return 0, err
	}
	company := entries[0].CompanyID
	sum, err := wallet.Sum(entries)
	if err != nil {
		return 0, err
	}
	// The refusals come in the SQL stores' order: the entries, the
	// company, the balance, then a taken id (which they find on insert).
	bal, ok := t.s.balances[company]
	if !ok {
		return 0, notFound("company")
	}
	if bal < sum {
		return 0, &wallet.InsufficientFundsError{Required: sum, Balance: bal}
	}
	ids := make(map[string]bool, len(entries))
	for _, e := range entries {
		if t.s.entryIDs[e.ID] || ids[e.ID] {
			return 0, conflict("ledger entry")
		}
		ids[e.ID] = true
	}
	// Checked above: each entry is new and the balance covers them all.
	// The entries are copied into one array (the ledger is append-only, so
	// none of them is ever dropped alone).
	copies, added, keys, marks := make([]wallet.Entry, len(entries)), make([]*wallet.Entry, len(entries)),
		make([]string, len(entries)), make([]bool, len(entries))
	for i, e := range entries {
		copies[i] = *e
		copies[i].CreatedAt = utc(e.CreatedAt)
		added[i], keys[i], marks[i] = &copies[i], e.ID, true
	}
	set(t, t.s.balances, company, bal-sum)
	setAll(t, t.s.entryIDs, keys, marks)
	appendUndo(t, t.s.ledger, company, added...)
	return bal - sum, nil
}

// post applies delta to the wallet and appends e to the ledger. A debit
// that would take the balance below zero changes nothing (D4).
func (t *tx) post(e *wallet.Entry, delta wallet.Amount) (wallet.Amount, error) {
	if err := t.write(); err != nil {
		return 0, err
	}
	bal, ok := t.s.balances[e.CompanyID]
	if !ok {
		return 0, notFound("company")
	}
	if delta < 0 && bal < -delta {
		return 0, &wallet.InsufficientFundsError{Required: -delta, Balance: bal}
	}
	if delta > 0 {
		if _, err := wallet.Add(bal, delta); err != nil {
			return 0, err
		}
	}
	if t.s.entryIDs[e.ID] {
		return 0, conflict("ledger entry")
	}
	// The balance, the id and the ledger change together, with one undo
	// step: the company's balance was there and the id was not.
	n := *e
	n.CreatedAt = utc(n.CreatedAt)
	company, id, k := e.CompanyID, e.ID, len(t.s.ledger[e.CompanyID])
	t.s.balances[company] = bal + delta
	t.s.entryIDs[id] = true
	t.s.ledger[company] = append(t.s.ledger[company], &n)
	t.undo = append(t.undo, func() {
		t.s.balances[company] = bal
		delete(t.s.entryIDs, id)
		t.s.ledger[company] = t.s.ledger[company][:k]
	})
	return bal + delta, nil
}

func (t *tx) Ledger(_ context.Context, companyID string) ([]*wallet.Entry, error) {
	out := []*wallet.Entry{}
	for _, e := range t.s.ledger[companyID] {
		n := *e
		out = append(out, &n)
	}
	return out, nil
}

func (t *tx) LedgerPage(_ context.Context, p consent.Page) ([]*wallet.Entry, error) {
	return page(p, t.s.ledger[p.CompanyID], func(e *wallet.Entry) (string, time.Time, string) {
		return e.CompanyID, e.CreatedAt, e.ID
	}, func(e *wallet.Entry) *wallet.Entry { n := *e; return &n })
}

// AppendAudit needs no lock of its own: Update runs one writer at a time.
func (t *tx) AppendAudit(ctx context.Context, e *consent.AuditEntry) error {
	return t.AppendAudits(ctx, []*consent.AuditEntry{e})
}

// AppendAudits appends all of the entries or none.
func (t *tx) AppendAudits(ctx context.Context, entries []*consent.AuditEntry) error {
	if err := t.write(); err != nil {
		return err
	}
	if len(entries) == 0 {
		return nil
	}
	company := entries[0].CompanyID
	if _, ok := t.s.companies[company]; !ok {
		return notFound("company")
	}
	// The chain goes on from the head; the copies are appended at once and
	// the head is set once.
	old, hadHead := t.s.auditHeads[company]
	head, chain := old, t.s.audit[company]
	k := len(chain)
	copies := make([]consent.AuditEntry, len(entries))
	for i, e := range entries {
		e.At = consent.UTC(e.At)
		e.Seq, e.PrevHash = head.Seq+1, head.Hash
		e.Hash = audit.Hash(e)
		head = consent.AuditHead{CompanyID: company, Seq: e.Seq, Hash: e.Hash}
		copies[i] = *e
		chain = append(chain, &copies[i])
	}
	t.s.audit[company], t.s.auditHeads[company] = chain, head
	t.undo = append(t.undo, func() {
		t.s.audit[company] = t.s.audit[company][:k]
		if hadHead {
			t.s.auditHeads[company] = old
		} else {
			delete(t.s.auditHeads, company)
		}
	})
	return nil
}

func (t *tx) AuditEntries(_ context.Context, q consent.AuditQuery) ([]*consent.AuditEntry, error) {
	chain := t.s.audit[q.CompanyID]
	out := []*consent.AuditEntry{}
	for i := range chain {
		e := chain[i]
		if q.Newest {
			e = chain[len(chain)-1-i]
		}
		if len(out) == q.Limit {
			break
		}
		if q.Match(e) {
			n := *e
			out = append(out, &n)
		}
	}
	return out, nil
}

func (t *tx) AuditHead(_ context.Context, companyID string) (*consent.AuditHead, error) {
	if _, ok := t.s.companies[companyID]; !ok {
		return nil, notFound("company")
	}
	h := t.s.auditHeads[companyID]
	h.CompanyID = companyID
	return &h, nil
}

// list returns a copy of s: an empty slice, never nil, when s has no
// elements, as the SQL stores read an empty list (or no bytes) back, so
// that a value reads back alike from every store.
func list[S ~[]E, E any](s S) S { return append(S{}, s...) }

func cloneKey(r *consent.IdempotencyRecord) *consent.IdempotencyRecord {
	n := *r
	n.Body, n.CreatedAt, n.ExpiresAt = list(r.Body), utc(n.CreatedAt), utc(n.ExpiresAt)
	return &n
}

func (t *tx) ClaimIdempotencyKey(_ context.Context, r *consent.IdempotencyRecord, now time.Time) (*consent.IdempotencyRecord, error) {
	if err := t.write(); err != nil {
		return nil, err
	}
	id := keyID{r.Scope, r.Key}
	if old, ok := t.s.keys[id]; ok && old.ExpiresAt.After(utc(now)) {
		return cloneKey(old), nil
	}
	n := cloneKey(r)
	n.Status, n.Body = 0, nil
	set(t, t.s.keys, id, n)
	return nil, nil
}

func (t *tx) AnswerIdempotencyKey(_ context.Context, scope, key string, status int, body []byte) error {
	return change(t, t.s.keys, keyID{scope, key}, "idempotency key", func(old *consent.IdempotencyRecord) *consent.IdempotencyRecord {
		n := cloneKey(old)
		n.Status, n.Body = status, list(body)
		return n
	})
}

func (t *tx) ReleaseIdempotencyKey(_ context.Context, scope, key string) error {
	if err := t.write(); err != nil {
		return err
	}
	id := keyID{scope, key}
	del(t, t.s.keys, id)
	return nil
}

func (t *tx) PruneIdempotencyKeys(_ context.Context, now time.Time, limit int) (int, error) {
	if err := t.write(); err != nil {
		return 0, err
	}
	n, now := 0, utc(now)
	for id, r := range t.s.keys {
		if n >= limit {
			break
		}
		if r.ExpiresAt.After(now) {
			continue
		}
		del(t, t.s.keys, id)
		n++
	}
	return n, nil
}
