// Package recfile writes and reads the object that a finished session's
// recording is moved to (D52): its chunks, byte for byte and in order,
// compressed together in one gzip stream, each after its length, so that
// the chunk index is inside the object and a reader streams it a chunk at
// a time.
//
// The object is the header "consentkit-recording 1\n" and then one gzip
// stream of: for each chunk, its length as a uvarint (never 0) and its
// bytes; a 0; the number of chunks as a uvarint; and the recording's
// SHA-256 as consent.RecordingHash computes it (32 bytes). Read checks the
// count and the digest, so a cut or changed object is an error, never a
// shorter recording.
package recfile

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"

	"github.com/consentkit/consentkit/consent"
)

const header = "consentkit-recording 1\n"

// Summary describes a recording written or read.
type Summary struct {
	Chunks int
	Bytes  int64          // the chunks' bytes, uncompressed
	SHA256 consent.Digest // as consent.RecordingHash computes it
}

// ErrCorrupt is returned, wrapped, for an object that is not one Write
// wrote, or not all of one.
var ErrCorrupt = errors.New("recfile: not a whole recording object")

// Writer writes a recording object; Add each chunk in order, then Close.
type Writer struct {
	w   io.Writer
	gz  *gzip.Writer
	h   *consent.RecordingHash
	sum Summary
	buf [binary.MaxVarintLen64]byte
	err error
}

// gzips keeps gzip writers between objects: each holds about 800 kB of
// compressor state, which would otherwise be made and zeroed per object.
var gzips = sync.Pool{New: func() any { return gzip.NewWriter(io.Discard) }}

// NewWriter starts a recording object on w.
func NewWriter(w io.Writer) *Writer {
	rw := &Writer{w: w, h: consent.NewRecordingHash()}
	if _, err := io.WriteString(w, header); err != nil {
		rw.err = err
	}
	rw.gz = gzips.Get().(*gzip.Writer)
	rw.gz.Reset(w)
	return rw
}

// Add writes the next chunk, which must not be empty.
func (w *Writer) Add(chunk []byte) error {
	if w.err != nil {
		return w.err
	}
	if len(chunk) == 0 {
		w.err = errors.New("recfile: an empty chunk")
		return w.err
	}
	w.uvarint(uint64(len(chunk)))
	if w.err == nil {
		_, w.err = w.gz.Write(chunk)
	}
	w.h.Add(chunk)
	w.sum.Chunks++
	w.sum.Bytes += int64(len(chunk))
	return w.err
}

// Close writes the trailer and ends the gzip stream; it does not close the
// underlying writer. The Writer takes no more after it.
func (w *Writer) Close() (Summary, error) {
	w.sum.SHA256 = w.h.Sum()
	w.uvarint(0)
	w.uvarint(uint64(w.sum.Chunks))
	if w.err == nil {
		_, w.err = w.gz.Write(w.sum.SHA256[:])
	}
	if w.err == nil {
		w.err = w.gz.Close()
	}
	sum, err := w.sum, w.err
	if w.gz != nil {
		w.gz.Reset(io.Discard) // lets go of w's writer
		gzips.Put(w.gz)
		w.gz = nil
	}
	if w.err == nil {
		w.err = errors.New("recfile: the writer is closed")
	}
	return sum, err
}

func (w *Writer) uvarint(n uint64) {
	if w.err == nil {
		_, w.err = w.gz.Write(w.buf[:binary.PutUvarint(w.buf[:], n)])
	}
}

// errStop ends a Read early without an error.
var errStop = errors.New("recfile: stop")

// Limits bounds an object that Read reads: at most Chunks chunks of
// Bytes bytes in all, what the session's row says the recording holds.
type Limits struct {
	Chunks int
	Bytes  int64
}

// Read calls fn with each chunk of the object in r, in order, and checks
// the trailer once all are read. A chunk past lim.Chunks, or one that
// takes the chunks past lim.Bytes, is ErrCorrupt before it is read or fn
// is called, so a damaged or hostile object can never make Read allocate,
// decompress or hand fn more than the recording that its row names. fn
// must not keep the chunk after it returns (its buffer is reused); Read
// stops at fn's first error and returns it.
func Read(r io.Reader, lim Limits, fn func(seq int, chunk []byte) error) (Summary, error) {
	var sum Summary
	src := &source{r: r}
	br := bufio.NewReader(src)
	head := make([]byte, len(header))
	if _, err := io.ReadFull(br, head); err != nil || string(head) != header {
		return sum, src.fail(errors.New("no header"))
	}
	gz, err := gzip.NewReader(br)
	if err != nil {
		return sum, src.fail(err)
	}
	defer func() { _ = gz.Close() }() // a reader's Close loses nothing
	zr := bufio.NewReader(gz)
	h := consent.NewRecordingHash()
	var buf []byte
	for {
		n, err := binary.ReadUvarint(zr)
		if err != nil {
			return sum, src.fail(err)
		}
		if n == 0 {
			break
		}
		if sum.Chunks >= lim.Chunks {
			return sum, fmt.Errorf("%w: more than %d chunks", ErrCorrupt, lim.Chunks)
		}
		if n > uint64(max(lim.Bytes-sum.Bytes, 0)) || n > math.MaxInt32 {
			return sum, fmt.Errorf("%w: a chunk of %d bytes after %d, of at most %d", ErrCorrupt, n, sum.Bytes, lim.Bytes)
		}
		if cap(buf) < int(n) {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := io.ReadFull(zr, buf); err != nil {
			return sum, src.fail(err)
		}
		if err := fn(sum.Chunks, buf); err != nil {
			return sum, err
		}
		h.Add(buf)
		sum.Chunks++
		sum.Bytes += int64(n)
	}
	count, err := binary.ReadUvarint(zr)
	if err != nil {
		return sum, src.fail(err)
	}
	var digest consent.Digest
	if _, err := io.ReadFull(zr, digest[:]); err != nil {
		return sum, src.fail(err)
	}
	sum.SHA256 = h.Sum()
	if count != uint64(sum.Chunks) || digest != sum.SHA256 {
		return sum, fmt.Errorf("%w: its trailer does not match its chunks", ErrCorrupt)
	}
	if _, err := zr.ReadByte(); err != io.EOF {
		return sum, src.fail(errors.New("bytes after its trailer"))
	}
	return sum, nil
}

// Chunk returns the chunk of sequence number seq (0 for the first), read
// as far as it and no further. ok is false when the object has fewer. It
// decompresses every chunk before seq, so it costs the recording's bytes
// up to seq, not the chunk's: capture, whose requests must cost their own
// bytes, never calls it (D52). It holds the chunks it reads to lim as Read
// does, but checks no trailer or digest: Read does, reading the whole.
func Chunk(r io.Reader, lim Limits, seq int) (chunk []byte, ok bool, err error) {
	_, err = Read(r, lim, func(i int, c []byte) error {
		if i < seq {
			return nil
		}
		chunk, ok = append([]byte(nil), c...), true
		return errStop
	})
	if errors.Is(err, errStop) {
		err = nil
	}
	return chunk, ok, err
}

// source remembers the first error, other than io.EOF, of the reader
// the object comes from: a read that fails for that reason (a network
// read's) is that error, and any other failure is ErrCorrupt.
type source struct {
	r   io.Reader
	err error
}

func (s *source) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF && s.err == nil {
		s.err = err
	}
	return n, err
}

func (s *source) fail(err error) error {
	if s.err != nil {
		return s.err
	}
	return fmt.Errorf("%w: %w", ErrCorrupt, err)
}
