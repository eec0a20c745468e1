package audit

import (
	"crypto/sha256"
	"encoding/binary"

	"github.com/consentkit/consentkit/consent"
)

// domain starts every hashed encoding, so that an audit hash can never
// be mistaken for the hash of anything else.
const domain = "consentkit.audit.v1"

// Encoding returns the canonical encoding of e that Hash hashes:
// every field but Hash, PrevHash included, in a fixed order, each
// length-prefixed or of fixed size, so that no two different entries encode
// alike:
//
//	str("consentkit.audit.v1")
//	str(CompanyID)
//	u64(Seq)
//	u64(At in microseconds since the Unix epoch, two's complement)
//	str(Actor) str(Action) str(Target) str(Outcome) str(RequestID) str(Detail)
//	PrevHash (32 bytes)
//
// where str(s) is the length of s in bytes as a big-endian uint32 followed
// by the bytes of s, and u64 is a big-endian uint64.
func Encoding(e *consent.AuditEntry) []byte {
	return appendEncoding(make([]byte, 0, 8*4+len(domain)+len(e.CompanyID)+8+8+len(e.Actor)+len(e.Action)+
		len(e.Target)+len(e.Outcome)+len(e.RequestID)+len(e.Detail)+len(e.PrevHash)), e)
}

// appendEncoding appends Encoding(e) to b.
func appendEncoding(b []byte, e *consent.AuditEntry) []byte {
	str := func(s string) {
		b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
		b = append(b, s...)
	}
	str(domain)
	str(e.CompanyID)
	b = binary.BigEndian.AppendUint64(b, uint64(e.Seq))
	b = binary.BigEndian.AppendUint64(b, uint64(e.At.UnixMicro()))
	str(e.Actor)
	str(e.Action)
	str(e.Target)
	str(e.Outcome)
	str(e.RequestID)
	str(e.Detail)
	b = append(b, e.PrevHash[:]...)
	return b
}

// Hash returns the SHA-256 of Encoding(e): the Hash a store gives e
// (consent.Tx.AppendAudit), and the PrevHash of the entry after it.
func Hash(e *consent.AuditEntry) consent.Digest {
	var buf [512]byte // most entries' encoding: no allocation
	return sha256.Sum256(appendEncoding(buf[:0], e))
}
