package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/store/internal/sqlrow"
	"github.com/consentkit/consentkit/wallet"
)

// dialect is how SQLite keeps what sqlrow scans and pages: times as
// microseconds since the epoch (sqlrow.Micros), lists as JSON text, ids
// compared byte by byte (the BINARY collation).
var dialect = sqlrow.Dialect{
	Param:   sqlrow.Numbered("?"),
	Arg:     func(t time.Time) any { return t.UnixMicro() },
	Time:    func(t *time.Time) any { return micros{t} },
	Strings: func(s *[]string) any { return jsonList{s} },
}

// micros scans a time column into *t (sqlrow.Time).
type micros struct{ t *time.Time }

func (m micros) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*m.t = time.Time{}
	case int64:
		*m.t = sqlrow.Time(&v)
	default:
		return fmt.Errorf("time column holds %T", src)
	}
	return nil
}

// jsonList scans a list of text kept as JSON into *s.
type jsonList struct{ s *[]string }

func (l jsonList) Scan(src any) error {
	switch v := src.(type) {
	case string:
		return json.Unmarshal([]byte(v), l.s)
	case []byte:
		return json.Unmarshal(v, l.s)
	}
	return fmt.Errorf("list column holds %T", src)
}

// collect scans every row of a query with scan; none: an empty slice.
func collect[T any](rows *sql.Rows, err error, scan func(sqlrow.Row) (T, error)) ([]T, error) {
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	out, err := sqlrow.Collect(rows, scan)
	return out, mapErr(err)
}

// The lists of the operator surface, each read in the order of
// an index on (company_id, created_at, id) of migration 0011.

// readPage reads the page p of table with scan.
func readPage[T any](ctx context.Context, t *tx, table, columns string, p consent.Page, scan func(sqlrow.Row) (T, error)) ([]T, error) {
	q, args := dialect.PageQuery(table, columns, p)
	rows, err := t.tx.QueryContext(ctx, q, args...)
	return collect(rows, err, scan)
}

func (t *tx) LedgerPage(ctx context.Context, p consent.Page) ([]*wallet.Entry, error) {
	if err := t.readBehind(ctx); err != nil {
		return nil, err
	}
	return readPage(ctx, t, "ledger", sqlrow.EntryColumns, p, dialect.ScanEntry)
}

func (t *tx) CertificatePage(ctx context.Context, p consent.Page) ([]*consent.Certificate, error) {
	return readPage(ctx, t, "certificates", sqlrow.CertificateColumns, p, dialect.ScanCertificate)
}

func (t *tx) SessionPage(ctx context.Context, p consent.Page) ([]*consent.Session, error) {
	return readPage(ctx, t, "sessions", sqlrow.SessionColumns, p, dialect.ScanSession)
}

func (t *tx) RevocationPage(ctx context.Context, p consent.Page) ([]*consent.Revocation, error) {
	return readPage(ctx, t, "revocations", sqlrow.RevocationColumns, p, dialect.ScanRevocation)
}

func (t *tx) Properties(ctx context.Context, companyID string) ([]*consent.Property, error) {
	rows, err := t.tx.QueryContext(ctx, `SELECT `+sqlrow.PropertyColumns+` FROM properties
		WHERE company_id = ? ORDER BY created_at, id`, companyID)
	return collect(rows, err, dialect.ScanProperty)
}

func (t *tx) Tokens(ctx context.Context, companyID string) ([]*consent.Token, error) {
	rows, err := t.tx.QueryContext(ctx, `SELECT `+sqlrow.TokenColumns+` FROM tokens
		WHERE company_id = ? ORDER BY created_at, id`, companyID)
	return collect(rows, err, dialect.ScanToken)
}
