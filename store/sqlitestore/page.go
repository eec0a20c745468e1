package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/store/internal/sqlrow"
	"github.com/consentkit/consentkit/wallet"
)

// The lists of the operator surface (issue 14), each read in the order of
// an index on (company_id, created_at, id) of migration 0011.

// collect scans every row of a query with scan; none: an empty slice.
func collect[T any](rows *sql.Rows, err error, scan func(interface{ Scan(...any) error }) (*T, error)) ([]*T, error) {
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

// pageQuery returns the query of the page p of a table whose rows
// columns names, newest first. Only the bounds p sets are in the WHERE
// clause, so that SQLite reads the index as a range from the first row to
// the limit. ids compare byte by byte (SQLite's BINARY collation).
func pageQuery(table, columns string, p consent.Page) (string, []any) {
	q := `SELECT ` + columns + ` FROM ` + table + ` WHERE company_id = ?`
	args := []any{p.CompanyID}
	if !p.Since.IsZero() {
		q += ` AND created_at >= ?`
		args = append(args, p.Since.UnixMicro())
	}
	if !p.Until.IsZero() {
		q += ` AND created_at < ?`
		args = append(args, p.Until.UnixMicro())
	}
	if !p.Before.IsZero() {
		q += ` AND (created_at, id) < (?, ?)`
		args = append(args, p.Before.At.UnixMicro(), p.Before.ID)
	}
	return q + ` ORDER BY created_at DESC, id DESC LIMIT ?`, append(args, p.Limit)
}

// readPage reads the page p of table with scan.
func readPage[T any](ctx context.Context, t *tx, table, columns string, p consent.Page, scan func(interface{ Scan(...any) error }) (*T, error)) ([]*T, error) {
	q, args := pageQuery(table, columns, p)
	rows, err := t.tx.QueryContext(ctx, q, args...)
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
	rows, err := t.tx.QueryContext(ctx, `SELECT id, company_id, name, allowed_origins, created_at FROM properties
		WHERE company_id = ? ORDER BY created_at, id`, companyID)
	return collect(rows, err, func(row interface{ Scan(...any) error }) (*consent.Property, error) {
		var (
			p       consent.Property
			origins string
			created int64
		)
		if err := row.Scan(&p.ID, &p.CompanyID, &p.Name, &origins, &created); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(origins), &p.AllowedOrigins); err != nil {
			return nil, fmt.Errorf("property %s: allowed_origins: %w", p.ID, err)
		}
		p.CreatedAt = sqlrow.Time(&created)
		return &p, nil
	})
}

func (t *tx) Tokens(ctx context.Context, companyID string) ([]*consent.Token, error) {
	rows, err := t.tx.QueryContext(ctx, `SELECT id, company_id, digest, permissions, expires_at, revoked_at, created_at
		FROM tokens WHERE company_id = ? ORDER BY created_at, id`, companyID)
	return collect(rows, err, func(row interface{ Scan(...any) error }) (*consent.Token, error) {
		var (
			tok              consent.Token
			digest           []byte
			perms            string
			expires, revoked *int64
			created          int64
		)
		err := row.Scan(&tok.ID, &tok.CompanyID, &digest, &perms, &expires, &revoked, &created)
		if err != nil {
			return nil, err
		}
		if tok.Digest, err = sqlrow.ScanDigest(digest); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(perms), &tok.Permissions); err != nil {
			return nil, fmt.Errorf("token %s: permissions: %w", tok.ID, err)
		}
		tok.ExpiresAt, tok.RevokedAt, tok.CreatedAt = sqlrow.Time(expires), sqlrow.Time(revoked), sqlrow.Time(&created)
		return &tok, nil
	})
}
