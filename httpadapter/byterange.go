package httpadapter

import (
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// serveContent is http.ServeContent with the request's Range read as RFC
// 9110 reads it (servableRange): every route that serves a file or a script
// answers ranges through it.
func serveContent(w http.ResponseWriter, r *http.Request, name string, modified time.Time, content io.ReadSeeker) {
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

// servableRange is the Range header that serveContent hands
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
//
// "" means no Range. The answer to a Range kept is ServeContent's,
// If-Range and the other preconditions first.
func servableRange(h string, size int64) string {
	unit, set, ok := strings.Cut(h, "=")
	if !ok || !strings.EqualFold(unit, "bytes") || size <= 0 {
		return ""
	}
	unsatisfiable := "bytes=" + strconv.FormatInt(size, 10) + "-"
	var out []string
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
		if first == "" { // suffix-range
			n, ok := position(last)
			if !ok {
				return unsatisfiable
			}
			if n > 0 {
				out = append(out, "-"+strconv.FormatInt(min(n, size), 10))
			}
			continue
		}
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
		out = append(out, strconv.FormatInt(f, 10)+"-"+strconv.FormatInt(min(l, size-1), 10))
	}
	if len(out) == 0 {
		return unsatisfiable
	}
	return "bytes=" + strings.Join(out, ",")
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
