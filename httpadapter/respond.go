package httpadapter

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/capture"
	"github.com/consentkit/consentkit/consent"
	utf8text "github.com/consentkit/consentkit/internal/jsontext"
	"github.com/consentkit/consentkit/wallet"
)

// statuses is the one table from error codes to HTTP statuses.
var statuses = map[consent.Code]int{
	consent.Invalid:       http.StatusBadRequest,
	consent.Unauthorized:  http.StatusUnauthorized,
	consent.Payment:       http.StatusPaymentRequired,
	consent.Forbidden:     http.StatusForbidden,
	consent.OptedOut:      http.StatusForbidden,
	consent.NotFound:      http.StatusNotFound,
	consent.Conflict:      http.StatusConflict,
	consent.TooLarge:      http.StatusRequestEntityTooLarge,
	consent.Unprocessable: http.StatusUnprocessableEntity,
	consent.Internal:      http.StatusInternalServerError,
}

// StatusClientClosedRequest is the status recorded for a request whose
// client went away before it was answered (the convention of nginx). Nobody
// receives it; a host's request log shows it instead of a 500, since the
// server did nothing wrong.
const StatusClientClosedRequest = 499

// httpError is an error of the HTTP layer itself, with its own status: a
// rate limit, an unknown path or method, a cancelled request.
type httpError struct {
	status int
	msg    string
	header http.Header // added to the response
}

func (e *httpError) Error() string { return e.msg }

// ErrorShape is the shape of a route's error bodies (D14).
type ErrorShape int

const (
	// VerifyErrors is the Verification API's {"status":<code>,"error":…}.
	VerifyErrors ErrorShape = iota
	// RetainErrors is the Retain API's {"success":false,"error":…}.
	RetainErrors
)

// ErrorBody is the body of every error answer, of both shapes (D14),
// the operator API's included; the fields a shape does not use are
// omitted.
type ErrorBody struct {
	Status         int            `json:"status,omitempty"`
	Success        *bool          `json:"success,omitempty"`
	Error          string         `json:"error"`
	Required       *wallet.Amount `json:"required,omitempty"`
	CurrentBalance *wallet.Amount `json:"current_balance,omitempty"`
	// CertificateID names the certificate already issued when consent is
	// sent again on a capture session (D35).
	CertificateID string `json:"certificate_id,omitempty"`
}

// writeError answers err in the given shape: an *httpError with its own
// status, a coded error through the table above; a 402 adds the price and
// the balance (D4). Uncoded errors are logged and answered with a generic
// message: driver and SQL text never leak. A request whose client went away
// is logged as cancelled, not as an error.
func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, shape ErrorShape, err error) {
	var he *httpError
	if r.Context().Err() != nil && !errors.As(err, &he) {
		h.log.InfoContext(r.Context(), "consentkit: request cancelled by the client", "method", r.Method, "path", r.URL.Path)
		err = &httpError{status: StatusClientClosedRequest, msg: "request cancelled"}
	}
	if errors.As(err, &he) {
		for k, v := range he.header {
			w.Header()[k] = v
		}
	}
	status, body := h.errorAnswer(r, shape, err)
	writeJSON(w, status, body)
}

// errorAnswer is the status and body that answer err in the given shape:
// an *httpError with its own status, a coded error through the table above;
// a 402 adds the price and the balance (D4). Uncoded errors are logged.
func (h *Handler) errorAnswer(r *http.Request, shape ErrorShape, err error) (int, *ErrorBody) {
	body := &ErrorBody{}
	var status int
	var he *httpError
	if errors.As(err, &he) {
		status, body.Error = he.status, he.msg
	} else {
		code := consent.ErrorCode(err)
		status, body.Error = statuses[code], consent.ErrorMessage(err)
		if code == consent.Internal {
			h.log.ErrorContext(r.Context(), "consentkit: internal error", "method", r.Method, "path", r.URL.Path,
				"request_id", consentkit.RequestIDFrom(r.Context()), "err", err)
		}
	}
	if shape == RetainErrors {
		body.Success = new(bool)
	} else {
		body.Status = status
	}
	var ife *wallet.InsufficientFundsError
	if errors.As(err, &ife) {
		body.Required, body.CurrentBalance = &ife.Required, &ife.Balance
	}
	var closed *capture.ClosedError
	if errors.As(err, &closed) {
		body.CertificateID = closed.CertificateID
	}
	return status, body
}

// limited is the 429 of a rate limit, with Retry-After (D20).
func limited(wait time.Duration) error {
	return &httpError{
		status: http.StatusTooManyRequests, msg: "rate limit exceeded; retry later",
		header: http.Header{"Retry-After": {strconv.Itoa(retryAfter(wait))}},
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	writeBody(w, status, encodeJSON(v))
}

// encodeJSON is the body of a JSON answer: v and a newline.
func encodeJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil { // only our own response types are marshalled
		panic(fmt.Sprintf("httpadapter: marshal %T: %v", v, err))
	}
	return append(b, '\n')
}

// writeBody writes a JSON answer's status and body.
func writeBody(w http.ResponseWriter, status int, body []byte) {
	// Both values in one allocation, each slice capped so that an
	// Add to one cannot overwrite the other.
	v := []string{"application/json", "no-store"}
	h := w.Header()
	h["Content-Type"], h["Cache-Control"] = v[0:1:1], v[1:2:2]
	w.WriteHeader(status)
	_, _ = w.Write(body) // a client gone mid-answer has no one to tell
}

// MaxBodyBytes is the largest request body accepted (D29).
const MaxBodyBytes = 1 << 20

// decode reads a JSON object from r's body into v, a pointer to a request
// struct. Over limit bytes (0: MaxBodyBytes) is TooLarge; malformed JSON, a wrong type,
// anything after the object, or text that is not valid Unicode is Invalid,
// naming the field where it can. Unknown fields are ignored (D29). charge,
// when not nil, is given bytes of the body before they are read, so that
// a refused client's body is not read: a body that declares its length
// spends it (up to limit) before its first byte is read, one that does not
// spends chargeBlock bytes at a time as it is read. Its error refuses the
// request, and the connection is closed rather than the rest read.
func decode(w http.ResponseWriter, r *http.Request, v any, limit int64, charge func(n int) error) error {
	if limit == 0 {
		limit = MaxBodyBytes
	}
	body := io.Reader(r.Body)
	var charged *chargedBody
	switch {
	case charge != nil && r.ContentLength >= 0:
		// A longer body is refused at limit, and one cut short as such:
		// neither reads past what it paid for.
		if err := charge(int(min(r.ContentLength, limit))); err != nil {
			w.Header().Set("Connection", "close")
			return err
		}
	case charge != nil:
		charged = &chargedBody{r: r.Body, limit: limit, charge: charge}
		body = charged
	}
	// http.MaxBytesReader holds the body to the limit, and has the server
	// close the connection rather than read on.
	data, err := readAll(http.MaxBytesReader(w, io.NopCloser(body), limit), r.ContentLength)
	if charged != nil && charged.refused != nil {
		w.Header().Set("Connection", "close")
		return charged.refused
	}
	if err != nil {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			return consent.Errorf(consent.TooLarge, "request body over %d bytes", limit)
		}
		return consent.Errorf(consent.Invalid, "request body could not be read")
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return consent.Errorf(consent.Invalid, "request body must be a JSON object")
	}
	if d, ok := v.(plainDecoder); ok && d.decodePlain(data) {
		return nil
	}
	if err := jsonv2.Unmarshal(data, v, decodeOptions); err != nil {
		return decodeError(reflect.TypeOf(v).Elem(), data, err)
	}
	return nil
}

// decodeOptions are json/v2's defaults but one. Member names match exactly,
// as the OpenAPI document spells them: encoding/json took
// "Certificate_ID" for certificate_id, and a later "CONSENT" overwrote
// consent (D29). Text that is not valid UTF-8, or escapes a lone
// surrogate, is refused (encoding/json made it U+FFFD without a word: a
// consent text so changed would be matched and charged). A name given
// twice counts as its last value, as encoding/json and JSON.parse take it
// (a recording's events repeat names, and are kept as sent) — but for an
// object given twice, whose members json/v2 takes from both, as
// encoding/json does (JSON.parse keeps the later object alone).
var decodeOptions = jsontext.AllowDuplicateNames(true)

// decodeError says what in the request body data, decoded into a value of
// the request struct type t, err refused.
func decodeError(t reflect.Type, data []byte, err error) error {
	if ce, ok := errors.AsType[*consent.Error](err); ok { // a request type's own refusal
		return ce
	}
	var se *jsonv2.SemanticError
	if errors.As(err, &se) {
		if len(se.JSONPointer) == 0 {
			return consent.Errorf(consent.Invalid, "request body must be a JSON object")
		}
		field, ft, ok := pointerField(t, se.JSONPointer)
		switch {
		case !ok: // a path this walk does not know: the type at fault
			return consent.Errorf(consent.Invalid, "%s must be %s", se.JSONPointer, kindOf(se.GoType))
		case deref(ft) == amountType:
			// wallet.Amount's own decoder refused it (D1).
			return consent.Errorf(consent.Invalid, "%s must be a number of dollars with at most 6 decimal places", field)
		}
		return consent.Errorf(consent.Invalid, "%s must be %s", field, kindOf(ft))
	}
	if field, ok := utf8text.CheckMembers(data); !ok {
		if field == "" {
			return consent.Errorf(consent.Invalid, "request body must be valid UTF-8")
		}
		return consent.Errorf(consent.Invalid, "%s must be valid UTF-8", field)
	}
	return consent.Errorf(consent.Invalid, "request body is not valid JSON")
}

// chargeBlock is how many bytes of a body of undeclared length are
// charged at a time, before they are read.
const chargeBlock = 8 << 10

// chargedBody reads a body of undeclared length, charging for each block
// of it before reading it, up to limit in all: the byte past the limit,
// which only shows that the body is over it, is not charged.
type chargedBody struct {
	r       io.Reader
	limit   int64
	charge  func(n int) error
	paid    int64 // bytes charged
	left    int64 // of them, not read yet
	refused error // the charge's refusal, which ended the reading
}

func (b *chargedBody) Read(p []byte) (int, error) {
	if b.left == 0 && b.paid < b.limit {
		n := min(chargeBlock, b.limit-b.paid)
		if err := b.charge(int(n)); err != nil {
			b.refused = err
			return 0, err
		}
		b.paid += n
		b.left = n
	}
	if b.left > 0 && int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left = max(b.left-int64(n), 0)
	return n, err
}

// presize is the most readAll sets aside before a body's bytes arrive: a
// client's Content-Length is only a claim.
const presize = 64 << 10

// readAll is io.ReadAll with a first buffer sized by the body's declared
// length (up to presize, and one byte more, so that the end is read without
// growing it). io.ReadAll starts at 512 bytes and doubles: for a 16 KiB
// chunk of events, five allocations whose zeroing and copying were a fifth
// of the server's CPU per chunk (BENCHMARKS.md, issue 36).
func readAll(r io.Reader, declared int64) ([]byte, error) {
	b := make([]byte, 0, min(max(declared, 0), presize)+512)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if errors.Is(err, io.EOF) {
				return b, nil
			}
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // let append choose the growth
		}
	}
}

// A plainDecoder is a request that reads the plain form of its body in
// one pass, for a route whose bodies are large and many (a chunk of
// events): decodePlain reports whether it did. A body in any other form
// takes the general path, which reads the same values from a plain body
// and gives every refusal, so the two paths cannot answer differently.
type plainDecoder interface {
	decodePlain(data []byte) bool
}

// pointerField names the field at p, a JSON Pointer into a body decoded
// into the request struct type t, as the services name fields
// (visibility.font_size_px, consents[].text), and returns its type: the
// field's own, not that of the item of an array at fault, so that [1] for
// an array of strings is told it must be an array of strings. ok is false
// for a path that names no field of t.
func pointerField(t reflect.Type, p jsontext.Pointer) (field string, ft reflect.Type, ok bool) {
	var name strings.Builder
	items := false
	ft = t
	for tok := range p.Tokens() {
		t = deref(t)
		if k := t.Kind(); k == reflect.Slice || k == reflect.Array || k == reflect.Map {
			t, items = t.Elem(), true // tok is an index or a key
			continue
		}
		f, found := jsonField(t, tok)
		if !found {
			return "", nil, false
		}
		t, ft = f.Type, f.Type
		if items {
			name.WriteString("[]")
			items = false
		}
		if name.Len() > 0 {
			name.WriteByte('.')
		}
		name.WriteString(tok)
	}
	return name.String(), ft, name.Len() > 0
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// jsonField is the field of struct type t that encoding/json decodes the
// member name into, by the name that it gives the field in te.Field (its
// tag's name, else its own), a field of an embedded struct included.
func jsonField(t reflect.Type, name string) (reflect.StructField, bool) {
	if t.Kind() != reflect.Struct {
		return reflect.StructField{}, false
	}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		n, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && n == "" {
			if ef, ok := jsonField(deref(f.Type), name); ok {
				return ef, true
			}
		}
		if n == "" {
			n = f.Name
		}
		if n == name && f.IsExported() {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// kindOf says what kind of JSON value encoding/json decodes into a value
// of type t: "an integer", "an array of strings", "an object".
func kindOf(t reflect.Type) string {
	noun, _ := kindNouns(t)
	if strings.ContainsRune("aeiou", rune(noun[0])) {
		return "an " + noun
	}
	return "a " + noun
}

// kindNouns is the singular and plural of what kindOf says.
func kindNouns(t reflect.Type) (one, many string) {
	t = deref(t)
	p := reflect.PointerTo(t)
	if t == amountType {
		return "number of dollars", "numbers of dollars"
	}
	if p.Implements(reflect.TypeFor[encoding.TextUnmarshaler]()) && !p.Implements(reflect.TypeFor[json.Unmarshaler]()) {
		return "string", "strings"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "boolean", "booleans"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "integer", "integers"
	case reflect.Float32, reflect.Float64:
		return "number", "numbers"
	case reflect.String:
		return "string", "strings"
	case reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 && t != rawType {
			return "base64 string", "base64 strings" // encoding/json's []byte
		}
		_, items := kindNouns(t.Elem())
		return "array of " + items, "arrays of " + items
	case reflect.Map, reflect.Struct:
		return "object", "objects"
	}
	return "JSON value", "JSON values"
}

// RFC3339 is a time as RFC 3339 text in UTC: a JSON string that the
// OpenAPI document describes with format date-time.
type RFC3339 string

// timestamp renders t as RFC 3339 in UTC, or null for the zero time.
func timestamp(t time.Time) *RFC3339 {
	if t.IsZero() {
		return nil
	}
	s := RFC3339(t.UTC().Format(time.RFC3339Nano))
	return &s
}
