package ident

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/binary"
	"time"
)

var encoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// New returns a random identifier with a readable prefix, such as "cert_…"
// (prefix "cert"): 128 random bits in lowercase base32.
func New(prefix string) string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
	return format(prefix, &b)
}

// format writes an identifier of New's form: prefix, "_" and b in
// lowercase base32, in one allocation.
func format(prefix string, b *[16]byte) string {
	var buf [64]byte
	return string(encoding.AppendEncode(append(append(buf[:0], prefix...), '_'), b[:]))
}

// Entry returns a ledger entry's identifier, of New's form with prefix
// "le": its first 48 bits are at's milliseconds since the Unix epoch and
// the other 80 random. Entries written close in time then sit next to each
// other in the index on ledger ids, so that a group commit's entries fill a
// page or two of it instead of a page each, which the commit must write.
func Entry(at time.Time) string {
	var b [16]byte
	ms := uint64(at.UnixMilli())
	binary.BigEndian.PutUint16(b[:2], uint16(ms>>32))
	binary.BigEndian.PutUint32(b[2:6], uint32(ms))
	rand.Read(b[6:])
	return format("le", &b)
}

// Run hands out identifiers of New's form that share their first 96 random
// bits and count up in the last 32: as unique as New's, but next to each
// other in an index on them, so that the rows one transaction writes (a
// batch's ledger entries, its webhook messages) fill a page or two of the
// index instead of a page each.
type Run struct {
	prefix string
	b      [16]byte
}

// NewRun starts a run of identifiers with the prefix.
func NewRun(prefix string) *Run {
	r := &Run{prefix: prefix}
	rand.Read(r.b[:])
	return r
}

// Next returns the run's next identifier.
func (r *Run) Next() string {
	binary.BigEndian.PutUint32(r.b[12:], binary.BigEndian.Uint32(r.b[12:])+1)
	return format(r.prefix, &r.b)
}
