package sqlrow

import (
	"strconv"
	"time"

	"github.com/consentkit/consentkit/consent"
)

// A Dialect is what the Go around the SQL stores' queries needs to know
// of their SQL: how a parameter is written, how a time and a list of text
// are kept, and how ids are compared. The SQL itself stays in each store.
type Dialect struct {
	// Param returns the placeholder of the nth parameter, from 1.
	Param func(n int) string
	// Arg returns the parameter value of a time.
	Arg func(time.Time) any
	// Time returns the scan destination that reads a time column into *t:
	// in UTC, and NULL as the zero time.
	Time func(t *time.Time) any
	// Strings returns the scan destination that reads a list of text into
	// *s: an empty list, never nil, when it has none.
	Strings func(s *[]string) any
	// Collate follows an id that must compare byte by byte; TimeCast and
	// TextCast give a parameter compared with a row value its type.
	Collate, TimeCast, TextCast string
}

// PageQuery returns the query of the page p of a table whose rows columns
// names, newest first, and its parameters. Only the bounds p sets are in
// the WHERE clause, so that the plan reads the index on (company_id,
// created_at, id) as one range down to the limit.
func (d Dialect) PageQuery(table, columns string, p consent.Page) (string, []any) {
	args := []any{p.CompanyID}
	arg := func(v any) string {
		args = append(args, v)
		return d.Param(len(args))
	}
	q := `SELECT ` + columns + ` FROM ` + table + ` WHERE company_id = ` + d.Param(1)
	if !p.Since.IsZero() {
		q += ` AND created_at >= ` + arg(d.Arg(p.Since))
	}
	if !p.Until.IsZero() {
		q += ` AND created_at < ` + arg(d.Arg(p.Until))
	}
	if !p.Before.IsZero() {
		at, id := arg(d.Arg(p.Before.At)), arg(p.Before.ID)
		q += ` AND (created_at, id` + d.Collate + `) < (` + at + d.TimeCast + `, ` + id + d.TextCast + d.Collate + `)`
	}
	q += ` ORDER BY created_at DESC, id` + d.Collate + ` DESC LIMIT ` + arg(p.Limit)
	return q, args
}

// Numbered returns the placeholder of the nth parameter written as
// prefix and n: "$1" for PostgreSQL, "?1" for SQLite.
func Numbered(prefix string) func(n int) string {
	return func(n int) string { return prefix + strconv.Itoa(n) }
}

// A Row is a row to scan: a single row's, or the current one of Rows.
type Row interface {
	Scan(dest ...any) error
}

// Rows are the rows of a query, as both drivers give them.
type Rows interface {
	Row
	Next() bool
	Err() error
}

// Collect scans every row of rows with scan; none is an empty slice. The
// caller closes rows.
func Collect[T any](rows Rows, scan func(Row) (T, error)) ([]T, error) {
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// ScanText scans a row of one text column, such as an id.
func ScanText(row Row) (string, error) {
	var s string
	err := row.Scan(&s)
	return s, err
}

// ScanBytes scans a row of one bytes column, such as an event chunk.
func ScanBytes(row Row) ([]byte, error) {
	var b []byte
	err := row.Scan(&b)
	return b, err
}
