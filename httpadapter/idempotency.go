package httpadapter

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
)

// IdempotencyHeader is the request header that carries an idempotency key
// (D40); ReplayedHeader, "true", marks an answer replayed from an earlier
// call with the key.
const (
	IdempotencyHeader = "Idempotency-Key"
	ReplayedHeader    = "Idempotent-Replayed"
)

// idempotencyKey returns the request's Idempotency-Key header; ok is false
// when there is none. Several are one too many: the value is then "" and
// refused.
func idempotencyKey(r *http.Request) (key string, ok bool) {
	vs := r.Header.Values(IdempotencyHeader)
	switch len(vs) {
	case 0:
		return "", false
	case 1:
		return vs[0], true
	}
	return "", true
}

// companyNamed is a request that names the company its key is scoped to
// when no token authenticated one (D40): an opt-out's, with the client's
// address, and an operator route's, with the operator.
type companyNamed interface {
	company() string
}

// canonicalPath is the path a request's fingerprint takes: a /verify/
// path's two spellings are one endpoint (D30), so a retry may take either.
func canonicalPath(p string) string {
	if rest, ok := strings.CutPrefix(p, "/api/verify/"); ok {
		return "/verify/" + rest
	}
	return p
}

// idempotency builds the key of an Idempotent route's call: scoped to the
// authenticated company, for an opt-out to the client's address and the
// company, for an operator route to the operator and the company; its fingerprint is the route and the decoded request, so that
// the same request sent with other white space or member order is the same
// request, and another body or route is ErrKeyReused. Its Answer renders an
// outcome as the wrapper would write it; successes, 409s and 422s are kept,
// other refusals are not (a 402 or a 404 may succeed when sent again).
func (h *Handler) idempotency(rt *route, r *http.Request, c Caller, req any, key string) (*consentkit.Idempotency, error) {
	if err := consent.CheckIdempotencyKey(key); err != nil {
		return nil, err
	}
	scope := consentkit.IdempotencyScope(c.CompanyID, "")
	o, named := req.(companyNamed)
	switch {
	case rt.Auth == AuthOperator && !named:
		return nil, fmt.Errorf("httpadapter: %s %s: an idempotent operator route's request must name its company", rt.Method, rt.Pattern)
	case named && c.CompanyID == "":
		if err := consent.CheckID("company_id", o.company()); err != nil {
			return nil, err
		}
		scope = consentkit.IdempotencyScope(o.company(), c.ClientIP.String())
		if rt.Auth == AuthOperator {
			scope = consentkit.OperatorIdempotencyScope(o.company())
		}
	}
	fields, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	fp := sha256.New()
	fp.Write([]byte(rt.Method + " " + canonicalPath(r.URL.Path) + "\n"))
	fp.Write(fields)
	k := &consentkit.Idempotency{Scope: scope, Key: key}
	fp.Sum(k.Fingerprint[:0])
	k.Answer = func(result any, err error) (int, []byte, bool) {
		if err != nil {
			status, body := h.errorAnswer(r, rt.Errors, err)
			return status, encodeJSON(body), status == http.StatusConflict || status == http.StatusUnprocessableEntity
		}
		status := rt.Status
		if status == 0 {
			status = http.StatusOK
		}
		return status, encodeJSON(rt.render(result)), true
	}
	return k, nil
}
