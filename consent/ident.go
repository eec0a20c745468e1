package consent

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/binary"
	"time"

	"github.com/consentkit/consentkit/internal/ident"
)

// MaxIDLength is the longest identifier accepted (D29).
const MaxIDLength = ident.MaxLength

// ValidID reports whether s is an identifier: 1–128 characters of
// [A-Za-z0-9._:-] (D29).
func ValidID(s string) bool { return ident.Valid(s) }

// CheckID returns an Invalid error naming field when id is not an identifier.
func CheckID(field, id string) error {
	if id == "" {
		return Errorf(Invalid, "%s is required", field)
	}
	if !ValidID(id) {
		return Errorf(Invalid, "%s must be 1 to %d characters of A-Z a-z 0-9 . _ : -", field, MaxIDLength)
	}
	return nil
}

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// NewID returns a random identifier with a readable prefix, such as
// "cert_…" (prefix "cert"): 128 random bits.
func NewID(prefix string) string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
	return idString(prefix, &b)
}

// idString writes an identifier of NewID's form: prefix, "_" and b in
// lowercase base32, in one allocation.
func idString(prefix string, b *[16]byte) string {
	var buf [64]byte
	return string(idEncoding.AppendEncode(append(append(buf[:0], prefix...), '_'), b[:]))
}

// newEntryID returns a ledger entry's identifier, of NewID's form: its
// first 48 bits are at's milliseconds since the Unix epoch and the other 80
// random. Entries written close in time then sit next to each other in the
// index on ledger ids, so that a group commit's entries fill a page or two
// of it instead of a page each, which the commit must write (issue 13).
func newEntryID(at time.Time) string {
	var b [16]byte
	ms := uint64(at.UnixMilli())
	binary.BigEndian.PutUint16(b[:2], uint16(ms>>32))
	binary.BigEndian.PutUint32(b[2:6], uint32(ms))
	rand.Read(b[6:])
	return idString("le", &b)
}

// idRun hands out identifiers of NewID's form that share their first 96
// random bits and count up in the last 32: as unique as NewID's, but next
// to each other in an index on them, so that the rows a Batch writes (its
// ledger entries, its webhook messages) fill a page or two of the index
// instead of a page each, which the commit must write (issue 13).
type idRun struct {
	prefix string
	b      [16]byte
}

func newIDRun(prefix string) *idRun {
	r := &idRun{prefix: prefix}
	rand.Read(r.b[:])
	return r
}

func (r *idRun) next() string {
	binary.BigEndian.PutUint32(r.b[12:], binary.BigEndian.Uint32(r.b[12:])+1)
	return idString(r.prefix, &r.b)
}

// UTC returns t in UTC, truncated to the microsecond: the precision that
// every store keeps.
func UTC(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }
