// Package byterange serves files with Range requests read as RFC 9110
// reads them, and bounded: the routes of httpadapter and of the dashboard
// that serve a video, a screenshot or a script answer ranges through it.
package byterange

import (
	"cmp"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ServeContent is http.ServeContent with the request's Range read as RFC
// 9110 reads it (servableRange): overlapping ranges merged, too many
// ignored, so that no Range header makes an answer larger than the file.
func ServeContent(w http.ResponseWriter, r *http.Request, name string, modified time.Time, content io.ReadSeeker) {
	if rg := r.Header.Get("Range"); rg != "" {
		// The size as ServeContent finds it; on an error it fails alike.
		if size, err := content.Seek(0, io.SeekEnd); err == nil {
			if _, err := content.Seek(0, io.SeekStart); err == nil {
				r = r.Clone(r.Context())
				if rg = servableRange(rg, size); rg == "" {
					r.Header.Del("Range")
				} else {
					r.Header.Set("Range", rg)
				}
			}
		}
	}
	http.ServeContent(w, r, name, modified, content)
}

// servableRange is the Range header that ServeContent hands
// http.ServeContent for a request's Range h and a file of size bytes, so
// that the answer is RFC 9110's (§14.1.1, §14.2, §15.3.7, §15.5.17) where
// ServeContent's own reading is not:
//
//   - A suffix-length of 0 (bytes=-0) is unsatisfiable; ServeContent took
//     it for an empty range at the end and answered 206 with the invalid
//     Content-Range "bytes <size>-<size-1>/<size>", or, among other ranges,
//     an empty part. It is dropped, as is an int-range starting at or past
//     the end; the others are served.
//   - A Range of no satisfiable range, or one that is invalid for the
//     bytes unit (bytes=5-4, bytes=, bytes=+1-2, bytes=a-b), is answered
//     416 with Content-Range: bytes */<size>, which ServeContent left out
//     of an invalid one's 416. The rewritten header is bytes=<size>-,
//     which ServeContent answers so.
//   - A first-pos or last-pos too large for an int64 is a position past
//     the end, not an invalid range: ServeContent refused it.
//   - A range unit other than bytes, in any case, is ignored (§14.2: "MUST
//     ignore"), as is a Range of anything but a unit and "=": the whole
//     file, 200. ServeContent answered 416, and took only "bytes" in lower
//     case.
//   - A Range on an empty file is ignored, since no Content-Range can
//     describe a part of nothing: 200 with the empty file.
//   - Ranges that overlap or touch are coalesced into one (§14.2 allows
//     it), the parts then sent in the order of their first bytes; ranges
//     that do not are kept as asked, in their order. ServeContent wrote
//     one multipart part for each range, so that bytes=0-0,0-0,… (16,000
//     of them in a 64 KiB header) made an answer of 2.35 MB from the 42 KB
//     capture.js, and of a video in S3 one GetObject each.
//   - A Range of more than maxRanges ranges once coalesced is ignored
//     (§14.2: many small ranges are a sign of an attack or a broken
//     client), as is one of more than maxAsked satisfiable ranges before,
//     or whose ranges add up to more than the file (ServeContent's own
//     rule, which coalescing would hide): the whole file, 200.
//
// "" means no Range. The answer to a Range kept is ServeContent's,
// If-Range and the other preconditions first.
func servableRange(h string, size int64) string {
	unit, set, ok := strings.Cut(h, "=")
	if !ok || !strings.EqualFold(unit, "bytes") || size <= 0 {
		return ""
	}
	unsatisfiable := "bytes=" + strconv.FormatInt(size, 10) + "-"
	var asked []byteRange
	var sum int64 // of asked's lengths, which stops growing past size
	// A list's empty elements are allowed and ignored (RFC 9110 §5.6.1).
	for spec := range strings.SplitSeq(set, ",") {
		spec = strings.Trim(spec, " \t")
		if spec == "" {
			continue
		}
		first, last, ok := strings.Cut(spec, "-")
		if !ok {
			return unsatisfiable
		}
		if len(asked) == maxAsked {
			return ""
		}
		var rg byteRange
		if first == "" { // suffix-range
			n, ok := position(last)
			if !ok {
				return unsatisfiable
			}
			if n == 0 {
				continue
			}
			rg = byteRange{size - min(n, size), size - 1}
		} else {
			f, ok := position(first)
			if !ok {
				return unsatisfiable
			}
			l := int64(math.MaxInt64)
			if last != "" {
				if l, ok = position(last); !ok || l < f {
					return unsatisfiable
				}
			}
			if f >= size {
				continue
			}
			rg = byteRange{f, min(l, size-1)}
		}
		asked = append(asked, rg)
		if sum <= size {
			sum += rg.last - rg.first + 1
		}
	}
	if len(asked) == 0 {
		return unsatisfiable
	}
	if sum > size {
		return ""
	}
	served := coalesce(asked)
	if len(served) > maxRanges {
		return ""
	}
	if len(served) == len(asked) { // none coalesced: the order asked
		served = asked
	}
	var b strings.Builder
	b.WriteString("bytes=")
	for i, rg := range served {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(rg.first, 10))
		b.WriteByte('-')
		b.WriteString(strconv.FormatInt(rg.last, 10))
	}
	return b.String()
}

// maxRanges is the most ranges, once coalesced, that a Range may ask for
// and be served: a player or a download manager asks for one or a few.
// maxAsked is the most it may list before that, satisfiable or not: more
// are not read, sorted or coalesced (a 64 KiB header holds 16,000).
const (
	maxRanges = 16
	maxAsked  = 256
)

// byteRange is a range of a file's bytes, first to last, both within it.
type byteRange struct{ first, last int64 }

// coalesce returns the ranges of asked, sorted, with those that overlap or
// touch made one. asked is left as it was.
func coalesce(asked []byteRange) []byteRange {
	sorted := slices.Clone(asked)
	slices.SortFunc(sorted, func(a, b byteRange) int { return cmp.Compare(a.first, b.first) })
	out := sorted[:1]
	for _, rg := range sorted[1:] {
		if cur := &out[len(out)-1]; rg.first <= cur.last+1 {
			cur.last = max(cur.last, rg.last)
		} else {
			out = append(out, rg)
		}
	}
	return out
}

// position reads RFC 9110's 1*DIGIT, saturating at the largest int64: a
// position past any file's end.
func position(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	var n int64
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, false
		}
		if n > (math.MaxInt64-9)/10 {
			n = math.MaxInt64
			continue
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}
