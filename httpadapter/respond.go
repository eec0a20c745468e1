package httpadapter

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/wallet"
)

// statuses is the one table from error codes to HTTP statuses.
var statuses = map[consent.Code]int{
	consent.Invalid:      http.StatusBadRequest,
	consent.Unauthorized: http.StatusUnauthorized,
	consent.Payment:      http.StatusPaymentRequired,
	consent.Forbidden:    http.StatusForbidden,
	consent.OptedOut:     http.StatusForbidden,
	consent.NotFound:     http.StatusNotFound,
	consent.Conflict:     http.StatusConflict,
	consent.TooLarge:     http.StatusRequestEntityTooLarge,
	consent.Internal:     http.StatusInternalServerError,
}

// style selects the error body: the Verification API's {"status":…} or the
// Retain API's {"success":false,…} (D14).
type style int

const (
	verifyStyle style = iota
	retainStyle
)

// errorBody is both styles' error body; the unused fields are omitted.
type errorBody struct {
	Status         int            `json:"status,omitempty"`
	Success        *bool          `json:"success,omitempty"`
	Error          string         `json:"error"`
	Required       *wallet.Amount `json:"required,omitempty"`
	CurrentBalance *wallet.Amount `json:"current_balance,omitempty"`
}

// writeError answers err in the given style. Uncoded errors are logged and
// answered with a generic message: driver and SQL text never leak.
func (a *adapter) writeError(w http.ResponseWriter, r *http.Request, st style, err error) {
	code := consent.ErrorCode(err)
	status := statuses[code]
	if code == consent.Internal {
		a.log.ErrorContext(r.Context(), "consentkit: internal error", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	body := errorBody{Error: consent.ErrorMessage(err)}
	if st == retainStyle {
		body.Success = new(bool)
	} else {
		body.Status = status
	}
	var ife *wallet.InsufficientFundsError
	if errors.As(err, &ife) {
		body.Required, body.CurrentBalance = &ife.Required, &ife.Balance
	}
	writeJSON(w, status, body)
}

// writeLimited answers 429 with Retry-After (D20).
func writeLimited(w http.ResponseWriter, st style, wait time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(retryAfter(wait)))
	body := errorBody{Error: "rate limit exceeded; retry later"}
	if st == retainStyle {
		body.Success = new(bool)
	} else {
		body.Status = http.StatusTooManyRequests
	}
	writeJSON(w, http.StatusTooManyRequests, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil { // only our own response types are marshalled
		panic(fmt.Sprintf("httpadapter: marshal %T: %v", v, err))
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// MaxBodyBytes is the largest request body accepted (D29).
const MaxBodyBytes = 1 << 20

// decode reads a JSON object from r's body into v. Over MaxBodyBytes is
// TooLarge; malformed JSON, a wrong type, or anything after the object is
// Invalid, naming the field where it can. Unknown fields are ignored (D29).
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	body := http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	data, err := io.ReadAll(body)
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return consent.Errorf(consent.TooLarge, "request body over %d bytes", MaxBodyBytes)
	case err != nil:
		return consent.Errorf(consent.Invalid, "request body could not be read")
	case len(strings.TrimSpace(string(data))) == 0:
		return consent.Errorf(consent.Invalid, "request body must be a JSON object")
	}
	if err := json.Unmarshal(data, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			field, _, _ := strings.Cut(te.Field, ".")
			return consent.Errorf(consent.Invalid, "%s must be %s", field, typeName(v, field))
		}
		if errors.As(err, &te) {
			return consent.Errorf(consent.Invalid, "request body must be a JSON object")
		}
		return consent.Errorf(consent.Invalid, "request body is not valid JSON")
	}
	return nil
}

// typeName says what a field of the request types must be.
func typeName(v any, field string) string {
	if _, ok := v.(*batchRequest); ok && field == "session_ids" {
		return "an array of strings"
	}
	return "a string"
}

// timestamp renders t as RFC 3339 in UTC, or null for the zero time.
func timestamp(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format(time.RFC3339Nano)
	return &s
}
