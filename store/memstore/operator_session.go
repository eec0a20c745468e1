package memstore

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/consentkit/consentkit/consent"
)

func cloneOperatorSession(s *consent.OperatorSession) *consent.OperatorSession {
	n := *s
	n.CreatedAt, n.ExpiresAt = utc(n.CreatedAt), utc(n.ExpiresAt)
	return &n
}

func (t *tx) CreateOperatorSession(_ context.Context, s *consent.OperatorSession) error {
	return create(t, t.s.operators, s.Digest, cloneOperatorSession(s), "operator session")
}

func (t *tx) OperatorSession(_ context.Context, d consent.Digest) (*consent.OperatorSession, error) {
	return get(t.s.operators, d, "operator session", cloneOperatorSession)
}

func (t *tx) DeleteOperatorSession(_ context.Context, d consent.Digest) error {
	if err := t.write(); err != nil {
		return err
	}
	del(t, t.s.operators, d)
	return nil
}

// PruneOperatorSessions deletes the earliest expired sessions first (then
// by digest), as the SQL stores' index on expires_at gives them.
func (t *tx) PruneOperatorSessions(_ context.Context, now time.Time, limit int) (int, error) {
	if err := t.write(); err != nil {
		return 0, err
	}
	now = utc(now)
	var due []*consent.OperatorSession
	for _, s := range t.s.operators {
		if !s.ExpiresAt.After(now) {
			due = append(due, s)
		}
	}
	slices.SortFunc(due, func(a, b *consent.OperatorSession) int {
		if c := a.ExpiresAt.Compare(b.ExpiresAt); c != 0 {
			return c
		}
		return bytes.Compare(a.Digest[:], b.Digest[:])
	})
	due = due[:min(len(due), max(limit, 0))]
	for _, s := range due {
		del(t, t.s.operators, s.Digest)
	}
	return len(due), nil
}

func clonePublishedKey(k *consent.PublishedKey) *consent.PublishedKey {
	n := *k
	n.Key = list(k.Key)
	n.CreatedAt = utc(n.CreatedAt)
	return &n
}

func (t *tx) PublishKey(_ context.Context, k *consent.PublishedKey) error {
	return create(t, t.s.publicKeys, k.ID, clonePublishedKey(k), "published key")
}

func (t *tx) PublishedKey(_ context.Context, id string) (*consent.PublishedKey, error) {
	return get(t.s.publicKeys, id, "published key", clonePublishedKey)
}

func (t *tx) PublishedKeys(context.Context) ([]*consent.PublishedKey, error) {
	out := []*consent.PublishedKey{}
	for _, k := range t.s.publicKeys {
		out = append(out, clonePublishedKey(k))
	}
	slices.SortFunc(out, func(a, b *consent.PublishedKey) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}
