package insights

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrMalformed is the error of a recording that is not a JSON array of
// rrweb events, each an object with a numeric type and a non-negative
// numeric timestamp (D34).
var ErrMalformed = errors.New("insights: malformed recording")

// ErrTooLarge is the error of a recording past one of the [Limits].
var ErrTooLarge = errors.New("insights: recording past the limits")

// Limits bound the work and memory of [Extract]; a zero field means its
// default.
type Limits struct {
	// MaxBytes is the most bytes read (default 64 MiB, the capture
	// routes' default bound of a session; [Handler]'s default is the
	// service's Config.MaxRecordingBytes).
	MaxBytes int64
	// MaxDepth is the deepest nesting of JSON arrays and objects (default
	// 4096; a page's DOM takes two levels a node).
	MaxDepth int
	// MaxInputs is the most text fields in the page at once (by their
	// key; those no longer in it are let go past twice as many), and the
	// most fields the snippet's report may name (default 10,000).
	MaxInputs int
	// MaxNodes is the most text-field nodes tracked (default 100,000, a
	// few MiB): a page that draws its form anew, with new nodes for the
	// same fields, adds nodes at every drawing, and a long session of it
	// must not pass for a recording past the limits.
	MaxNodes int
}

func (l Limits) withDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = 64 << 20
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = 4096
	}
	if l.MaxInputs <= 0 {
		l.MaxInputs = 10_000
	}
	if l.MaxNodes <= 0 {
		l.MaxNodes = 100_000
	}
	return l
}

// capped reads at most left bytes of r; past them it fails with
// ErrTooLarge, unless r has ended.
type capped struct {
	r    io.Reader
	max  int64 // the bound, for the error
	left int64
	err  error // the last error of r, or ErrTooLarge
}

func (c *capped) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err // the decoder may ask again after a failure (Decoder.More hides it)
	}
	if c.left <= 0 {
		var one [1]byte
		n, err := io.ReadFull(c.r, one[:])
		if n == 0 && errors.Is(err, io.EOF) {
			return 0, io.EOF
		}
		c.err = fmt.Errorf("%w: over %d bytes", ErrTooLarge, c.max)
		return 0, c.err
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if err != nil && !errors.Is(err, io.EOF) {
		c.err = err
	}
	return n, err
}

// walker reads JSON tokens, keeping the depth of nesting within bounds.
type walker struct {
	dec      *json.Decoder
	in       *capped
	depth    int
	maxDepth int
}

func newWalker(r io.Reader, lim Limits) *walker {
	in := &capped{r: r, max: lim.MaxBytes, left: lim.MaxBytes}
	dec := json.NewDecoder(in)
	// Numbers are read as written: a number past float64's range (1e999,
	// which JSON.parse reads as Infinity) is valid JSON that capture stores,
	// and must not fail the whole recording where it is only skipped.
	dec.UseNumber()
	return &walker{dec: dec, in: in, maxDepth: lim.MaxDepth}
}

// fail returns the error of the recording: the reader's own error as it
// is, anything else the decoder found as ErrMalformed.
func (w *walker) fail(err error) error {
	if w.in.err != nil && errors.Is(err, w.in.err) {
		if errors.Is(err, ErrTooLarge) {
			return err
		}
		return fmt.Errorf("insights: reading the recording: %w", err)
	}
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("%w: at byte %d: %w", ErrMalformed, w.dec.InputOffset(), err)
}

func (w *walker) malformed(format string, args ...any) error {
	return fmt.Errorf("%w: at byte %d: %s", ErrMalformed, w.dec.InputOffset(), fmt.Sprintf(format, args...))
}

func (w *walker) next() (json.Token, error) {
	tok, err := w.dec.Token()
	if err != nil {
		return nil, w.fail(err)
	}
	if d, ok := tok.(json.Delim); ok {
		switch d {
		case '[', '{':
			w.depth++
			if w.depth > w.maxDepth {
				return nil, fmt.Errorf("%w: nested deeper than %d", ErrTooLarge, w.maxDepth)
			}
		default:
			w.depth--
		}
	}
	return tok, nil
}

// finish reads the rest of a value whose opening delimiter tok was.
func (w *walker) finish(tok json.Token) error {
	d, ok := tok.(json.Delim)
	if !ok || d != '[' && d != '{' {
		return nil
	}
	for base := w.depth - 1; w.depth > base; {
		if _, err := w.next(); err != nil {
			return err
		}
	}
	return nil
}

// skip reads one value and forgets it.
func (w *walker) skip() error {
	tok, err := w.next()
	if err != nil {
		return err
	}
	return w.finish(tok)
}

// scalar reads one value: a string, float64, bool or nil; a composite
// value is read whole and returned as nil, ok false.
func (w *walker) scalar() (json.Token, bool, error) {
	tok, err := w.next()
	if err != nil {
		return nil, false, err
	}
	if _, ok := tok.(json.Delim); ok {
		return nil, false, w.finish(tok)
	}
	return tok, true, nil
}

func (w *walker) number() (float64, bool, error) {
	tok, _, err := w.scalar()
	n, ok := tok.(json.Number)
	if !ok || err != nil {
		return 0, false, err
	}
	f, perr := strconv.ParseFloat(string(n), 64)
	if perr != nil { // past float64's range: no number this reading can use
		return 0, false, nil
	}
	return f, true, nil
}

func (w *walker) str() (string, bool, error) {
	tok, _, err := w.scalar()
	s, ok := tok.(string)
	return s, ok, err
}

func (w *walker) boolean() (bool, bool, error) {
	tok, _, err := w.scalar()
	b, ok := tok.(bool)
	return b, ok, err
}

// object reads an object, calling member for each member's name with the
// value still to read, which member must read. A value that is not an
// object is read and skipped: found is false.
func (w *walker) object(member func(name string) error) (found bool, err error) {
	tok, err := w.next()
	if err != nil {
		return false, err
	}
	if tok != json.Delim('{') {
		return false, w.finish(tok)
	}
	for w.dec.More() {
		name, err := w.next()
		if err != nil {
			return true, err
		}
		if err := member(name.(string)); err != nil {
			return true, err
		}
	}
	_, err = w.next() // '}'
	return true, err
}

// array reads an array, calling elem for each element, which elem must
// read. A value that is not an array is read and skipped: found is false.
func (w *walker) array(elem func() error) (found bool, err error) {
	tok, err := w.next()
	if err != nil {
		return false, err
	}
	if tok != json.Delim('[') {
		return false, w.finish(tok)
	}
	for w.dec.More() {
		if err := elem(); err != nil {
			return true, err
		}
	}
	_, err = w.next() // ']'
	return true, err
}

// count reads an array and returns its length; not an array is 0.
func (w *walker) count() (int, error) {
	n := 0
	_, err := w.array(func() error { n++; return w.skip() })
	return n, err
}

// maxKey is the longest field key, in UTF-16 code units, as the snippet
// cuts it (String.prototype.slice).
const maxKey = 128

// cutKey cuts s to maxKey UTF-16 code units, as the snippet does, so that
// the page's field and the snippet's count meet under one key. A
// character of two units that the cut splits ends the key as U+FFFD: the
// snippet's slice keeps its first unit, a lone surrogate, which its JSON
// holds as an escape that Go reads as U+FFFD. A cut key is a copy, so that
// a key kept does not keep the whole of a long name.
func cutKey(s string) string {
	units := 0
	for i, r := range s {
		n := utf16.RuneLen(r)
		if n < 0 {
			n = 1
		}
		if units+n > maxKey {
			if units < maxKey { // a surrogate pair, cut between its halves
				return s[:i] + string(utf8.RuneError)
			}
			return strings.Clone(s[:i])
		}
		units += n
	}
	return s
}

// cutText cuts a reported text to at most n bytes, at a character's
// boundary; a cut text is a copy, as a cut key is.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return strings.Clone(s[:n])
}
