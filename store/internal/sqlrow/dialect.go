package sqlrow

import (
	"fmt"
	"strconv"
	"strings"
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

// VelocityQuery returns the query of Tx.Velocity for c and its
// parameters: six counts (the hour's address, email and mobile, then the
// day's), each a range of one of the indexes on (company_id, column,
// created_at) read to at most consent.MaxVelocity rows. A value not given
// (an empty address, a zero digest) is NULL, which no row equals.
func (d Dialect) VelocityQuery(c *consent.Certificate) (string, []any) {
	var ip any
	if c.ClientIP != "" {
		ip = c.ClientIP
	}
	args := []any{c.CompanyID, c.ID, d.Arg(c.CreatedAt)}
	arg := func(v any) string {
		args = append(args, v)
		return d.Param(len(args))
	}
	var counts []string
	for _, from := range []time.Time{c.CreatedAt.Add(-time.Hour), c.CreatedAt.Add(-24 * time.Hour)} {
		since := arg(d.Arg(from))
		for _, col := range []struct {
			name, value string
		}{
			// The partial index's own condition, written out: neither
			// planner proves it from an equality with a parameter.
			{"client_ip", arg(ip) + " AND client_ip <> ''"},
			{"email_digest", arg(Digest(c.EmailDigest))},
			{"mobile_digest", arg(Digest(c.MobileDigest))},
		} {
			counts = append(counts, fmt.Sprintf(`(SELECT count(*) FROM (SELECT 1 FROM certificates
				WHERE company_id = %s AND %s = %s AND created_at >= %s AND created_at <= %s AND id <> %s LIMIT %d) AS v)`,
				d.Param(1), col.name, col.value, since, d.Param(3), d.Param(2), consent.MaxVelocity))
		}
	}
	return "SELECT " + strings.Join(counts, ", "), args
}

// ScanVelocity reads the answer of VelocityQuery.
func ScanVelocity(row Row) (consent.Velocity, error) {
	var v consent.Velocity
	err := row.Scan(&v.Hour.ClientIP, &v.Hour.Email, &v.Hour.Mobile, &v.Day.ClientIP, &v.Day.Email, &v.Day.Mobile)
	return v, err
}
