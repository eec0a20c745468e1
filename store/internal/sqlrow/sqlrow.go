// Package sqlrow converts between consent's values and the column values
// that the SQL stores keep, so that sqlitestore and pgstore encode them the
// same way.
//
//	rows, err := tx.QueryContext(ctx, "SELECT "+sqlrow.PropertyColumns+" FROM properties WHERE company_id = ?", id)
//	props, err := sqlrow.Collect(rows, scanProperty) // scanProperty(sqlrow.Row) (*consent.Property, error)
//	records, err := sqlrow.EncodeRecords(cert.Records) // a certificate's consents, as a column keeps them
package sqlrow

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/consentkit/consentkit/consent"
)

// Micros returns t as microseconds since the Unix epoch, or nil for the zero
// time (stored as NULL).
func Micros(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMicro()
}

// Time returns the UTC time of a microsecond count; NULL (nil) is the zero time.
func Time(us *int64) time.Time {
	if us == nil {
		return time.Time{}
	}
	return time.UnixMicro(*us).UTC()
}

// JSON returns v as JSON text, for a text column: v is a value of the
// library's own types, which always marshal.
func JSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// Digest returns d's bytes, or nil for the zero digest (stored as NULL).
func Digest(d consent.Digest) any {
	if d.IsZero() {
		return nil
	}
	return d[:]
}

// ScanDigest returns the digest held in b (NULL or 32 bytes).
func ScanDigest(b []byte) (consent.Digest, error) {
	var d consent.Digest
	if b == nil {
		return d, nil
	}
	if len(b) != len(d) {
		return d, fmt.Errorf("digest column holds %d bytes", len(b))
	}
	copy(d[:], b)
	return d, nil
}

// record is how a consent.Record is kept inside a certificate's records
// column: times as microseconds, so nothing is lost to a time format.
type record struct {
	Text        string              `json:"text"`
	Types       []string            `json:"types,omitempty"`
	OptInAt     int64               `json:"opt_in_at_us"`
	OptInMethod string              `json:"opt_in_method,omitempty"`
	Visibility  *consent.Visibility `json:"visibility,omitempty"`
	NodeID      int                 `json:"node_id,omitempty"`
}

// EncodeRecords returns the JSON kept in a certificate's records column.
func EncodeRecords(rs []consent.Record) ([]byte, error) {
	out := make([]record, len(rs))
	for i, r := range rs {
		out[i] = record{Text: r.Text, Types: r.Types, OptInAt: r.OptInAt.UnixMicro(), OptInMethod: r.OptInMethod, Visibility: r.Visibility, NodeID: r.NodeID}
	}
	return json.Marshal(out)
}

// DecodeRecords reverses EncodeRecords. Records, and a record's types,
// decode to an empty slice, never nil, when there are none.
func DecodeRecords(b []byte) ([]consent.Record, error) {
	var in []record
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, fmt.Errorf("records column: %w", err)
	}
	out := make([]consent.Record, len(in))
	for i, r := range in {
		types := r.Types
		if types == nil { // none encodes as no "types" (omitempty)
			types = []string{}
		}
		out[i] = consent.Record{Text: r.Text, Types: types, OptInAt: time.UnixMicro(r.OptInAt).UTC(),
			OptInMethod: r.OptInMethod, Visibility: visibilityRead(r.Visibility), NodeID: r.NodeID}
	}
	return out, nil
}

// EncodeVisibility returns the JSON kept in a certificate's visibility
// column: "" for none.
func EncodeVisibility(v *consent.Visibility) (string, error) {
	if v == nil {
		return "", nil
	}
	b, err := json.Marshal(v)
	return string(b), err
}

// DecodeVisibility reverses EncodeVisibility.
func DecodeVisibility(s string) (*consent.Visibility, error) {
	if s == "" {
		return nil, nil
	}
	var v consent.Visibility
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, fmt.Errorf("visibility column: %w", err)
	}
	return visibilityRead(&v), nil
}

// visibilityRead returns v as a store reads it back: its hidden text an
// empty list, never nil, when there is none.
func visibilityRead(v *consent.Visibility) *consent.Visibility {
	if v != nil && v.HiddenText == nil {
		v.HiddenText = []string{}
	}
	return v
}
