// Package blob stores opaque objects — finished recordings (D52), videos
// and attestation screenshots (retain.Dir on the filesystem, retain/s3video
// on S3) — under short keys, behind one small interface with memory,
// filesystem (the default) and S3 implementations.
//
// A store streams: [Store.Put] reads its input once, computing the size and
// SHA-256 as it goes, and a reader never sees half an object. [Store.Lock]
// keeps an object until a date; every implementation refuses an earlier
// [Store.Delete] with [ErrLocked], so the contract is the same everywhere.
// [Store.ListAfter] lists keys a page at a time, in key order, each page
// resuming after the last key of the one before.
//
//	s := blob.NewMemory()
//	info, err := s.Put(ctx, "s_1.mp4", r)
//	rc, _, err := s.OpenRange(ctx, "s_1.mp4", 0, 1024)
//
// retain.Dir's keys are the file names it wrote before this package
// (<session>.mp4, <certificate>.png), so its directories keep working.
package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// ErrNotFound is returned, wrapped, when a key names no object.
var ErrNotFound = errors.New("blob: not found")

// ErrLocked is returned, wrapped, by Delete before an object's lock expires.
var ErrLocked = errors.New("blob: locked")

// ErrInvalidKey is returned, wrapped, for a key outside the documented alphabet.
var ErrInvalidKey = errors.New("blob: invalid key")

// Info describes a stored object.
type Info struct {
	Key    string
	Size   int64
	SHA256 [32]byte
}

// Store keeps objects. Implementations are safe for concurrent use.
type Store interface {
	// Put stores r's bytes under key, replacing any object there. It
	// streams, and a concurrent reader sees the old object or the new one,
	// never a part. Putting over a locked object returns ErrLocked.
	Put(ctx context.Context, key string, r io.Reader) (Info, error)
	// Open reads a whole object. It returns ErrNotFound for a missing key.
	// Its Info carries Key and Size; SHA256 may be zero (keep Put's).
	Open(ctx context.Context, key string) (io.ReadCloser, Info, error)
	// OpenRange reads length bytes from offset; length < 0 reads to the
	// end. A range past the end is cut short (an offset at or past the
	// end reads nothing). Info describes the whole object.
	OpenRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, Info, error)
	// Delete removes an object; a missing key is not an error. Before the
	// object's lock expires it returns ErrLocked.
	Delete(ctx context.Context, key string) error
	// Lock keeps the object until until; a later lock extends, an earlier
	// one is ignored. It returns ErrNotFound for a missing key.
	Lock(ctx context.Context, key string, until time.Time) error
	// ListAfter returns, in byte order, the keys of at most limit objects
	// that start with prefix and sort after after ("" for the first), so
	// that a listing resumes from the last key of the page before. An
	// object written or deleted while it lists may be in it or not.
	ListAfter(ctx context.Context, prefix, after string, limit int) ([]string, error)
}

// ValidKey reports whether key may name an object: 1 to 200 bytes of
// A–Z a–z 0–9 and "-_.:" (consent's identifier alphabet), and "/" between non-empty segments, no segment
// starting with "." (so no "." or "..", and the filesystem store's own
// ".tmp" and ".locks" directories never collide with a key). Such a key
// is never a path escape on any implementation.
func ValidKey(key string) error {
	if key == "" || len(key) > 200 {
		return fmt.Errorf("%w: %q", ErrInvalidKey, key)
	}
	seg := 0
	for i := 0; i <= len(key); i++ {
		if i == len(key) || key[i] == '/' {
			s := key[seg:i]
			if s == "" || s[0] == '.' {
				return fmt.Errorf("%w: %q", ErrInvalidKey, key)
			}
			seg = i + 1
			continue
		}
		c := key[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':'
		if !ok {
			return fmt.Errorf("%w: %q", ErrInvalidKey, key)
		}
	}
	return nil
}

// clip turns a requested range into one within size.
func clip(size, offset, length int64) (int64, int64, error) {
	if offset < 0 {
		return 0, 0, fmt.Errorf("blob: negative offset %d", offset)
	}
	if offset > size {
		offset = size
	}
	if length < 0 || length > size-offset { // offset+length may overflow
		length = size - offset
	}
	return offset, length, nil
}
