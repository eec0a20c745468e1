package pgstore

import (
	"context"
	"time"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/store/internal/sqlrow"
)

func (t *tx) CreateOperatorSession(ctx context.Context, s *consent.OperatorSession) error {
	_, err := t.exec(ctx, `INSERT INTO operator_sessions (digest, created_at, expires_at) VALUES ($1, $2, $3)`,
		s.Digest[:], s.CreatedAt, s.ExpiresAt)
	return err
}

func (t *tx) OperatorSession(ctx context.Context, d consent.Digest) (*consent.OperatorSession, error) {
	s := consent.OperatorSession{Digest: d}
	err := t.tx.QueryRow(ctx, `SELECT created_at, expires_at FROM operator_sessions WHERE digest = $1`, d[:]).
		Scan(&s.CreatedAt, &s.ExpiresAt)
	if err != nil {
		return nil, one(err, "operator session")
	}
	s.CreatedAt, s.ExpiresAt = s.CreatedAt.UTC(), s.ExpiresAt.UTC()
	return &s, nil
}

func (t *tx) DeleteOperatorSession(ctx context.Context, d consent.Digest) error {
	_, err := t.exec(ctx, `DELETE FROM operator_sessions WHERE digest = $1`, d[:])
	return err
}

// PruneOperatorSessions passes over sessions that another transaction is
// changing (a logout deleting one), as PruneIdempotencyKeys does: they are
// for a later prune.
func (t *tx) PruneOperatorSessions(ctx context.Context, now time.Time, limit int) (int, error) {
	tag, err := t.exec(ctx, `DELETE FROM operator_sessions WHERE digest IN (SELECT digest FROM operator_sessions
		WHERE expires_at <= $1 ORDER BY expires_at, digest LIMIT $2 FOR UPDATE SKIP LOCKED)`, now, max(limit, 0))
	if err != nil {
		return 0, err
	}
	return int(tag.RowsAffected()), nil
}

func (t *tx) PublishKey(ctx context.Context, k *consent.PublishedKey) error {
	_, err := t.exec(ctx, `INSERT INTO public_keys (`+sqlrow.PublishedKeyColumns+`) VALUES ($1, $2, $3)`, k.ID, k.Key, k.CreatedAt)
	return err
}

func (t *tx) PublishedKey(ctx context.Context, id string) (*consent.PublishedKey, error) {
	k, err := dialect.ScanPublishedKey(t.tx.QueryRow(ctx, `SELECT `+sqlrow.PublishedKeyColumns+` FROM public_keys WHERE id = $1`, id))
	return k, one(err, "published key")
}

func (t *tx) PublishedKeys(ctx context.Context) ([]*consent.PublishedKey, error) {
	rows, err := t.tx.Query(ctx, `SELECT `+sqlrow.PublishedKeyColumns+` FROM public_keys ORDER BY created_at, id`)
	return collect(rows, err, dialect.ScanPublishedKey)
}
