package pgstore

import (
	"context"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/store/internal/sqlrow"
	"github.com/consentkit/consentkit/wallet"
)

// The lists of the operator surface (issue 14), each read in the order of
// an index on (company_id, created_at, id COLLATE "C") of migration 0011.
// They never lock: they are reads for people, not for rules.

// collect scans every row of a query with scan; none: an empty slice.
func collect[T any](rows pgx.Rows, err error, scan func(pgx.Row) (*T, error)) ([]*T, error) {
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	out := []*T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, mapErr(rows.Err())
}

// pageQuery returns the query of the page p of a table whose rows columns
// names, newest first. Only the bounds p sets are in the WHERE clause, so
// that the plan reads the index as one range down to the limit; ids
// compare byte by byte (COLLATE "C"), as the index orders them.
func pageQuery(table, columns string, p consent.Page) (string, []any) {
	args := []any{p.CompanyID}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	q := `SELECT ` + columns + ` FROM ` + table + ` WHERE company_id = $1`
	if !p.Since.IsZero() {
		q += ` AND created_at >= ` + arg(p.Since)
	}
	if !p.Until.IsZero() {
		q += ` AND created_at < ` + arg(p.Until)
	}
	if !p.Before.IsZero() {
		at, id := arg(p.Before.At), arg(p.Before.ID)
		q += ` AND (created_at, id COLLATE "C") < (` + at + `::timestamptz, ` + id + `::text COLLATE "C")`
	}
	q += ` ORDER BY created_at DESC, id COLLATE "C" DESC LIMIT ` + arg(p.Limit)
	return q, args
}

// readPage reads the page p of table with scan.
func readPage[T any](ctx context.Context, t *tx, table, columns string, p consent.Page, scan func(pgx.Row) (*T, error)) ([]*T, error) {
	q, args := pageQuery(table, columns, p)
	rows, err := t.tx.Query(ctx, q, args...)
	return collect(rows, err, scan)
}

func (t *tx) LedgerPage(ctx context.Context, p consent.Page) ([]*wallet.Entry, error) {
	if err := t.readBehind(ctx); err != nil {
		return nil, err
	}
	return readPage(ctx, t, "ledger", entryColumns, p, scanEntry)
}

func (t *tx) CertificatePage(ctx context.Context, p consent.Page) ([]*consent.Certificate, error) {
	return readPage(ctx, t, "certificates", certificateColumns, p, scanCertificate)
}

func (t *tx) SessionPage(ctx context.Context, p consent.Page) ([]*consent.Session, error) {
	return readPage(ctx, t, "sessions", sessionColumns, p, scanSession)
}

func (t *tx) RevocationPage(ctx context.Context, p consent.Page) ([]*consent.Revocation, error) {
	return readPage(ctx, t, "revocations", revocationColumns, p, scanRevocation)
}

func (t *tx) Properties(ctx context.Context, companyID string) ([]*consent.Property, error) {
	rows, err := t.tx.Query(ctx, `SELECT id, company_id, name, allowed_origins, created_at FROM properties
		WHERE company_id = $1 ORDER BY created_at, id COLLATE "C"`, companyID)
	return collect(rows, err, func(row pgx.Row) (*consent.Property, error) {
		var (
			p       consent.Property
			created time.Time
		)
		if err := row.Scan(&p.ID, &p.CompanyID, &p.Name, &p.AllowedOrigins, &created); err != nil {
			return nil, err
		}
		p.CreatedAt = created.UTC()
		return &p, nil
	})
}

func (t *tx) Tokens(ctx context.Context, companyID string) ([]*consent.Token, error) {
	rows, err := t.tx.Query(ctx, `SELECT id, company_id, digest, permissions, expires_at, revoked_at, created_at
		FROM tokens WHERE company_id = $1 ORDER BY created_at, id COLLATE "C"`, companyID)
	return collect(rows, err, func(row pgx.Row) (*consent.Token, error) {
		var (
			tok              consent.Token
			digest           []byte
			perms            []string
			expires, revoked *time.Time
			created          time.Time
		)
		err := row.Scan(&tok.ID, &tok.CompanyID, &digest, &perms, &expires, &revoked, &created)
		if err != nil {
			return nil, err
		}
		if tok.Digest, err = sqlrow.ScanDigest(digest); err != nil {
			return nil, err
		}
		tok.Permissions = permissions(perms)
		tok.ExpiresAt, tok.RevokedAt, tok.CreatedAt = utc(expires), utc(revoked), created.UTC()
		return &tok, nil
	})
}
