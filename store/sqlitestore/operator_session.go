package sqlitestore

import (
	"context"
	"time"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/store/internal/sqlrow"
)

func (t *tx) CreateOperatorSession(ctx context.Context, s *consent.OperatorSession) error {
	_, err := t.exec(ctx, `INSERT INTO operator_sessions (digest, created_at, expires_at) VALUES (?, ?, ?)`,
		s.Digest[:], s.CreatedAt.UnixMicro(), s.ExpiresAt.UnixMicro())
	return err
}

func (t *tx) OperatorSession(ctx context.Context, d consent.Digest) (*consent.OperatorSession, error) {
	s := consent.OperatorSession{Digest: d}
	var created, expires int64
	err := t.tx.QueryRowContext(ctx, `SELECT created_at, expires_at FROM operator_sessions WHERE digest = ?`, d[:]).
		Scan(&created, &expires)
	if err != nil {
		return nil, one(err, "operator session")
	}
	s.CreatedAt, s.ExpiresAt = sqlrow.Time(&created), sqlrow.Time(&expires)
	return &s, nil
}

func (t *tx) DeleteOperatorSession(ctx context.Context, d consent.Digest) error {
	_, err := t.exec(ctx, `DELETE FROM operator_sessions WHERE digest = ?`, d[:])
	return err
}

func (t *tx) PruneOperatorSessions(ctx context.Context, now time.Time, limit int) (int, error) {
	res, err := t.exec(ctx, `DELETE FROM operator_sessions WHERE digest IN (SELECT digest FROM operator_sessions
		WHERE expires_at <= ? ORDER BY expires_at, digest LIMIT ?)`, now.UnixMicro(), max(limit, 0))
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

func (t *tx) PublishKey(ctx context.Context, k *consent.PublishedKey) error {
	_, err := t.exec(ctx, `INSERT INTO public_keys (`+sqlrow.PublishedKeyColumns+`) VALUES (?, ?, ?)`, k.ID, k.Key, k.CreatedAt.UnixMicro())
	return err
}

func (t *tx) PublishedKey(ctx context.Context, id string) (*consent.PublishedKey, error) {
	k, err := dialect.ScanPublishedKey(t.tx.QueryRowContext(ctx, `SELECT `+sqlrow.PublishedKeyColumns+` FROM public_keys WHERE id = ?`, id))
	return k, one(err, "published key")
}

func (t *tx) PublishedKeys(ctx context.Context) ([]*consent.PublishedKey, error) {
	rows, err := t.tx.QueryContext(ctx, `SELECT `+sqlrow.PublishedKeyColumns+` FROM public_keys ORDER BY created_at, id`)
	return collect(rows, err, dialect.ScanPublishedKey)
}
