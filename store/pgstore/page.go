package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/store/internal/sqlrow"
	"github.com/consentkit/consentkit/wallet"
)

// dialect is how PostgreSQL keeps what sqlrow scans and pages: times as
// timestamptz, lists as text[], ids compared byte by byte (COLLATE "C", as
// the indexes of migration 0011 order them).
var dialect = sqlrow.Dialect{
	Param:    sqlrow.Numbered("$"),
	Arg:      func(t time.Time) any { return t },
	Time:     func(t *time.Time) any { return timestamptz{t} },
	Strings:  func(s *[]string) any { return s },
	Collate:  ` COLLATE "C"`,
	TimeCast: `::timestamptz`,
	TextCast: `::text`,
}

// timestamptz scans a timestamptz column into *t: in UTC, NULL as the
// zero time.
type timestamptz struct{ t *time.Time }

func (s timestamptz) ScanTimestamptz(v pgtype.Timestamptz) error {
	*s.t = time.Time{}
	if v.Valid {
		*s.t = v.Time.UTC()
	}
	return nil
}

// collect scans every row of a query with scan; none: an empty slice.
func collect[T any](rows pgx.Rows, err error, scan func(sqlrow.Row) (T, error)) ([]T, error) {
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	out, err := sqlrow.Collect(rows, scan)
	return out, mapErr(err)
}

// The lists of the operator surface, each read in the order of
// an index on (company_id, created_at, id COLLATE "C") of migration 0011.
// They never lock: they are reads for people, not for rules.

// readPage reads the page p of table with scan.
func readPage[T any](ctx context.Context, t *tx, table, columns string, p consent.Page, scan func(sqlrow.Row) (T, error)) ([]T, error) {
	q, args := dialect.PageQuery(table, columns, p)
	rows, err := t.tx.Query(ctx, q, args...)
	return collect(rows, err, scan)
}

func (t *tx) LedgerPage(ctx context.Context, p consent.Page) ([]*wallet.Entry, error) {
	if err := t.readBehind(ctx); err != nil {
		return nil, err
	}
	return readPage(ctx, t, "ledger", sqlrow.EntryColumns, p, dialect.ScanEntry)
}

func (t *tx) CertificatePage(ctx context.Context, p consent.Page) ([]*consent.Certificate, error) {
	return readPage(ctx, t, "certificates", certificateColumns, p, dialect.ScanCertificate)
}

func (t *tx) SessionPage(ctx context.Context, p consent.Page) ([]*consent.Session, error) {
	return readPage(ctx, t, "sessions", sqlrow.SessionColumns, p, dialect.ScanSession)
}

func (t *tx) RevocationPage(ctx context.Context, p consent.Page) ([]*consent.Revocation, error) {
	return readPage(ctx, t, "revocations", sqlrow.RevocationColumns, p, dialect.ScanRevocation)
}

func (t *tx) Properties(ctx context.Context, companyID string) ([]*consent.Property, error) {
	rows, err := t.tx.Query(ctx, `SELECT `+sqlrow.PropertyColumns+` FROM properties
		WHERE company_id = $1 ORDER BY created_at, id COLLATE "C"`, companyID)
	return collect(rows, err, dialect.ScanProperty)
}

func (t *tx) Tokens(ctx context.Context, companyID string) ([]*consent.Token, error) {
	rows, err := t.tx.Query(ctx, `SELECT `+sqlrow.TokenColumns+` FROM tokens
		WHERE company_id = $1 ORDER BY created_at, id COLLATE "C"`, companyID)
	return collect(rows, err, dialect.ScanToken)
}
