package httpadapter

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"io"
	"net/http"
	"net/netip"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/ratelimit"
	"github.com/consentkit/consentkit/wallet"
)

// Route describes one endpoint of the Handler: everything the one wrapper
// needs to serve it, and everything a description of the API (such as an
// OpenAPI document) needs to document it.
type Route struct {
	Method  string // "POST" or "GET"
	Pattern string // a net/http pattern, such as /verify/session/{company_id}
	Auth    Auth
	// Limit is the rate limit the route draws on (D28).
	Limit Limit
	// Price is the ledger kind whose price (wallet.Prices.Of) a successful
	// call is charged, per retained session for a batch; "" for a route
	// that never charges.
	Price  wallet.EntryKind
	Errors ErrorShape
	// Status is the status of a successful answer: default 200.
	Status int
	// CORS routes are called by browsers on other origins (capture, D32):
	// their answers carry Access-Control-Allow-Origin for an allowed
	// origin, and an OPTIONS route answers their preflights.
	CORS bool
	// MaxBody is the largest request body accepted: default MaxBodyBytes.
	MaxBody int64
	// Group is the part of the API the route belongs to (Handler.Only).
	Group Group
	// Idempotent routes are paid or state-changing: they take an
	// Idempotency-Key header, and a call sent again with its key is
	// answered with the first call's stored answer, without doing
	// anything again (D40; consentkit.Idempotency has the rules).
	Idempotent bool
	// RequireKey routes refuse a call without an Idempotency-Key (400):
	// those that move money without a charge to fail on, such as a top-up,
	// where a retry without a key would credit twice.
	RequireKey bool
	// ContentType is that of a route answering something other than JSON
	// (a script); "" for JSON.
	ContentType string
	// Request and Response are the struct types of the bodies. Fields of
	// Request tagged `path:"name"` come from the pattern's wildcards, those
	// tagged `query:"name"` (strings and integers) from the query string,
	// the others from the JSON body; a Request without JSON fields takes no
	// body (one sent is ignored).
	Request, Response reflect.Type
}

// Auth is how a route authenticates its caller.
type Auth int

const (
	// AuthNone is a public route: anyone may call it (opt-out).
	AuthNone Auth = iota
	// AuthToken needs a Bearer token of a company (D6, D7). With
	// Config.PropertyCredentials, a request without an Authorization header
	// may give company_id and property_id instead (D8).
	AuthToken
	// AuthRetention needs a Bearer token with the permission vzew_retention
	// (the Retain API, D7).
	AuthRetention
	// AuthUpload needs the Bearer upload token of the session in the path
	// (capture, D33); the capture service checks it.
	AuthUpload
	// AuthOperator needs the Bearer operator secret (Config.OperatorSecret),
	// which is no company's token: the operator API (Handler.Operator).
	AuthOperator
)

// Group is a part of the API that can be mounted alone (Handler.Only).
type Group int

const (
	VerifyGroup  Group = iota // the Verification API, /verify/… and /api/verify/…
	OptOutGroup               // /opt-out
	RetainGroup               // the Retain API, /api/integrations/…
	CaptureGroup              // browser capture, /capture/… (D32–D36)
	// OperatorGroup is the operator API, /operator/…: never served by the
	// Handler itself, only by Handler.Operator.
	OperatorGroup
	// DocGroup is the description of the API: GET /openapi.json.
	DocGroup
)

// Limit names a rate limiter (D20, D28).
type Limit int

const (
	NoLimit     Limit = iota
	VerifyLimit       // per company: the Verification API; Config.VerifyPerMinute
	RetainLimit       // per company: the Retain API, single and batch; Config.RetainPerMinute
	OptOutLimit       // per client address: opt-out; Config.OptOutPerMinute
	// CaptureStartLimit is per client address and, in the route's function,
	// per property: starting capture sessions; Config.CaptureStartsPerMinute
	// and Config.CapturePropertyPerMinute.
	CaptureStartLimit
	CaptureLimit // per client address: capture chunks and consents; Config.CapturePerMinute
	capturePropertyLimit
	captureBytesLimit         // per client address, bytes of capture bodies; Config.CaptureBytesPerMinute
	capturePropertyBytesLimit // per property, bytes of events; Config.CapturePropertyBytesPerMinute
)

// byClient reports whether l is keyed by the client's address, and so taken
// before anything of the request is read.
func (l Limit) byClient() bool {
	return l == OptOutLimit || l == CaptureStartLimit || l == CaptureLimit
}

// Caller is who sent a request, as its route's authentication found.
type Caller struct {
	// CompanyID is the authenticated company; "" on a public route.
	CompanyID string
	// Token is the token that authenticated the request; nil when there
	// was none (a public route, or company-and-property credentials).
	Token *consent.Token
	// ClientIP is the client's address (TrustedProxies.ClientIP); invalid
	// when it cannot be known.
	ClientIP netip.Addr
	// UploadToken is the Bearer token of an AuthUpload route.
	UploadToken string
	// Origin and UserAgent are the request's headers of those names.
	Origin, UserAgent string
}

// route is a Route with what serves it.
type route struct {
	Route
	newReq func() any
	call   func(ctx context.Context, c Caller, req any) (any, error)
	path   []pathField // fields of Request set from the pattern
	query  []pathField // fields of Request set from the query string
	body   bool        // Request has JSON fields
	// raw serves a route that is not JSON in and out (a script, a CORS
	// preflight) instead of the wrapper.
	raw http.HandlerFunc
	// render turns the result of an Idempotent route's operation into its
	// Response, inside the operation's transaction (handlePaid).
	render func(any) any
}

// handleRaw binds a route that the wrapper does not serve: it answers
// something other than JSON.
func handleRaw(rt Route, fn http.HandlerFunc) *route {
	return &route{Route: rt, raw: fn}
}

type pathField struct {
	index int
	name  string
}

// handle binds a typed function to a route: the wrapper decodes a *Req for
// it and writes the *Resp it returns as JSON with status 200.
func handle[Req, Resp any](rt Route, fn func(ctx context.Context, c Caller, req *Req) (*Resp, error)) *route {
	rt.Request, rt.Response = reflect.TypeFor[Req](), reflect.TypeFor[Resp]()
	out := &route{
		Route:  rt,
		newReq: func() any { return new(Req) },
		call:   func(ctx context.Context, c Caller, req any) (any, error) { return fn(ctx, c, req.(*Req)) },
	}
	for i := range rt.Request.NumField() {
		f := rt.Request.Field(i)
		if name, ok := f.Tag.Lookup("path"); ok {
			if !strings.Contains(rt.Pattern, "{"+name+"}") || f.Type.Kind() != reflect.String {
				panic("httpadapter: " + rt.Pattern + ": path field " + f.Name + " names no wildcard")
			}
			out.path = append(out.path, pathField{i, name})
		} else if name, ok := f.Tag.Lookup("query"); ok {
			if k := f.Type.Kind(); k != reflect.String && k != reflect.Int && k != reflect.Int64 {
				panic("httpadapter: " + rt.Pattern + ": query field " + f.Name + " is neither a string nor an integer")
			}
			out.query = append(out.query, pathField{i, name})
		} else if f.IsExported() && f.Tag.Get("json") != "-" {
			out.body = true
		}
	}
	if strings.Count(rt.Pattern, "{") != len(out.path) {
		panic("httpadapter: " + rt.Pattern + ": a wildcard has no path field in the request type")
	}
	return out
}

// handlePaid binds a paid or state-changing route (Route.Idempotent): call
// runs the operation and render turns its result — what the operation's
// consentkit.Paid transaction returns — into the Response. The two are apart
// so that the answer can be rendered inside that transaction and stored
// with the call's idempotency key (D40).
func handlePaid[Req, Res, Resp any](rt Route, call func(ctx context.Context, c Caller, req *Req) (Res, error), render func(Res) *Resp) *route {
	rt.Idempotent = true
	out := handle(rt, func(ctx context.Context, c Caller, req *Req) (*Resp, error) {
		res, err := call(ctx, c, req)
		if err != nil {
			return nil, err
		}
		return render(res), nil
	})
	out.render = func(v any) any { return render(v.(Res)) }
	return out
}

// propertyCredentials is implemented by the requests of routes that accept
// company-and-property credentials (D8): it names the company and property.
type propertyCredentials interface {
	credentials() (companyID, propertyID string)
}

// serve is the one wrapper every route goes through: authenticate (401,
// 403), take a rate-limit token (429), decode the body and path (400, 413),
// call the route's function, and write its answer or its error.
func (h *Handler) serve(rt *route, w http.ResponseWriter, r *http.Request) {
	closeUnread := h.unreadBody(rt, w, r)
	if rt.raw != nil {
		closeUnread() // a raw route reads no body
		// A raw route's client limit (a preflight's) is taken here, as
		// run takes the others': before anything is read.
		if rt.Limit.byClient() {
			c := Caller{ClientIP: h.cfg.TrustedProxies.ClientIP(r)}
			if err := h.take(r, rt.Limit, c); err != nil {
				h.writeError(w, r, rt.Errors, err)
				return
			}
		}
		rt.raw(w, r)
		return
	}
	resp, idem, err := h.run(rt, w, r)
	closeUnread()
	if rt.CORS {
		h.cors(w, r, err)
	}
	if idem != nil {
		if status, body, ok := idem.Stored(); ok {
			if idem.Replayed() {
				w.Header().Set("Idempotent-Replayed", "true")
			}
			writeBody(w, status, body)
			return
		}
	}
	if err != nil {
		h.writeError(w, r, rt.Errors, err)
		return
	}
	if s, ok := resp.(streamer); ok {
		s.stream(w, r)
		return
	}
	status := rt.Status
	if status == 0 {
		status = http.StatusOK
	}
	writeJSON(w, status, resp)
}

// unreadBody watches the body of a capture request (an anonymous route
// whose bodies its client's byte budget pays for, D52) and returns a
// function that, called before the answer is written, ends the reading of
// the connection when the body was not read to its end: a request refused
// before its body is read (401, 429, a spent byte budget), or a
// preflight. net/http reads up to 256 KiB of an unread body once the
// handler returns, to keep the connection, even when the answer says
// Connection: close; those bytes would be charged to no budget. The
// connection is closed and its read deadline passed, so that nothing
// more of it is read. HTTP/2 reads nothing more, and a Connection header
// there would close every stream.
func (h *Handler) unreadBody(rt *route, w http.ResponseWriter, r *http.Request) func() {
	if rt.Group != CaptureGroup || !http1Body(r) {
		return func() {}
	}
	b := &eofBody{ReadCloser: r.Body}
	r.Body = b
	return func() {
		if !b.eof {
			stopReading(w, r)
		}
	}
}

// http1Body reports whether r is an HTTP/1 request with a body: the ones
// net/http drains once their handler returns.
func http1Body(r *http.Request) bool {
	return r.ProtoMajor == 1 && r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody
}

// stopReading has the server read nothing more of r's connection once
// its answer is written: Connection: close, and a read deadline passed,
// since net/http would otherwise read up to 256 KiB of r's unread body
// (unreadBody). Only for HTTP/1 requests that have a body.
func stopReading(w http.ResponseWriter, r *http.Request) {
	if !http1Body(r) {
		return
	}
	w.Header().Set("Connection", "close")
	// Not supported by a ResponseWriter that is no server's (a test's
	// recorder): nothing is read after it anyway.
	_ = http.NewResponseController(w).SetReadDeadline(time.Unix(1, 0))
}

// eofBody records whether its body was read to its end.
type eofBody struct {
	io.ReadCloser
	eof bool
}

func (b *eofBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

// streamer is a response that writes itself instead of being JSON, such as
// a video (Route.ContentType says what it is).
type streamer interface {
	stream(w http.ResponseWriter, r *http.Request)
}

// run authenticates, limits and decodes the request and calls the route's
// function. For an Idempotent route called with an Idempotency-Key it
// returns the key too, which holds the answer to send once the call is
// done (D40).
func (h *Handler) run(rt *route, w http.ResponseWriter, r *http.Request) (any, *consentkit.Idempotency, error) {
	ctx := r.Context()
	c := Caller{ClientIP: h.cfg.TrustedProxies.ClientIP(r), Origin: r.Header.Get("Origin"), UserAgent: r.UserAgent()}
	if rt.Limit.byClient() { // taken before anything is read
		if err := h.take(r, rt.Limit, c); err != nil {
			return nil, nil, err
		}
	}
	if rt.Auth == AuthUpload {
		secret, err := bearer(r)
		if err != nil {
			return nil, nil, err
		}
		c.UploadToken = secret
	} else if rt.Auth == AuthOperator {
		if err := h.authenticateOperator(r, c); err != nil {
			return nil, nil, err
		}
		ctx = consentkit.WithActor(ctx, consent.ActorOperator)
	} else if rt.Auth != AuthNone {
		tok, err := h.authenticate(r, rt.Auth)
		if err != nil {
			return nil, nil, err
		}
		if tok != nil {
			c.Token, c.CompanyID = tok, tok.CompanyID
			ctx = consentkit.WithActor(ctx, tok.ID) // who acted, in the audit log (D42)
			if err := h.take(r, rt.Limit, c); err != nil {
				return nil, nil, err
			}
		}
	}
	req := rt.newReq()
	if rt.body {
		var charge func(int) error
		if rt.Group == CaptureGroup { // session starts too
			charge = func(n int) error { return h.takeBytes(r, c, n) }
		}
		if err := decode(w, r, req, rt.MaxBody, charge); err != nil {
			return nil, nil, err
		}
	}
	v := reflect.ValueOf(req).Elem()
	for _, p := range rt.path {
		v.Field(p.index).SetString(r.PathValue(p.name))
	}
	if err := setQuery(v, rt.query, r); err != nil {
		return nil, nil, err
	}
	if rt.Auth == AuthToken && c.Token == nil { // company-and-property credentials (D8)
		pc, ok := req.(propertyCredentials)
		if !ok {
			return nil, nil, errNoToken
		}
		company, property := pc.credentials()
		if err := h.svc.AuthenticateProperty(ctx, company, property); err != nil {
			return nil, nil, err
		}
		c.CompanyID = company
		ctx = consentkit.WithActor(ctx, "property:"+property)
		if err := h.take(r, rt.Limit, c); err != nil {
			return nil, nil, err
		}
	}
	var idem *consentkit.Idempotency
	key, ok := idempotencyKey(r)
	if rt.RequireKey && !ok {
		return nil, nil, consent.Errorf(consent.Invalid, "the %s header is required: send a key of your choosing, "+
			"such as a UUID, and the same key with any retry, so that the call takes effect once", IdempotencyHeader)
	}
	if ok && rt.render != nil {
		var err error
		if idem, err = h.idempotency(rt, r, c, req, key); err != nil {
			return nil, nil, err
		}
		ctx = consentkit.WithIdempotency(ctx, idem)
	}
	resp, err := rt.call(ctx, c, req)
	return resp, idem, err
}

var errNoToken = consent.Errorf(consent.Unauthorized, "an Authorization: Bearer token is required")

// setQuery sets the query fields of a request from the URL's query string:
// a missing or empty parameter leaves its zero value; an integer that does
// not parse is a 400 naming it.
func setQuery(v reflect.Value, fields []pathField, r *http.Request) error {
	if len(fields) == 0 {
		return nil
	}
	q := r.URL.Query()
	for _, f := range fields {
		s := q.Get(f.name)
		if s == "" {
			continue
		}
		field := v.Field(f.index)
		if field.Kind() == reflect.String {
			field.SetString(s)
			continue
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || field.OverflowInt(n) {
			return consent.Errorf(consent.Invalid, "%s must be an integer", f.name)
		}
		field.SetInt(n)
	}
	return nil
}

// OperatorFailuresPerMinute bounds the wrong operator secrets a client
// address (an IPv6 client's network, D20) may send: a bucket of as many,
// refilled at as many a minute, the attempts the dashboard's login allows
// (its DefaultLoginsPerMinute).
const OperatorFailuresPerMinute = 10

// authenticateOperator checks the Bearer operator secret, in constant time
// against its digest. With no Config.OperatorSecret every request is
// refused. Each wrong secret is logged, never the secret, and spends one
// of the client address's OperatorFailuresPerMinute; a client that has
// none left is refused, 429 with Retry-After, before its secret is looked
// at, the right one too: were the right one let in, the answer would tell
// a right guess from a wrong one and the limit would limit nothing. The
// token is taken before the secret is compared and given back when it is
// right (or absent), so that guesses sent at once on many connections are
// compared no more often than one after the other. Another client address
// is not limited, and right secrets spend nothing. Memory is bounded
// (Config.MaxLimiterKeys): when the limiter holds that many clients that
// have spent wrong secrets, a new client has no bucket and its secret is
// still checked, as the dashboard's login does.
func (h *Handler) authenticateOperator(r *http.Request, c Caller) error {
	key, err := h.clientKey(r, c)
	if err != nil {
		return err
	}
	wait, err := h.operatorFailures.Allow(key)
	if errors.Is(err, ratelimit.ErrEmpty) {
		return limited(wait)
	}
	taken := err == nil // ErrFull: no bucket, and the secret is checked all the same
	secret, err := bearer(r)
	if err == nil {
		got := sha256.Sum256([]byte(secret))
		if h.operatorDigest == nil || subtle.ConstantTimeCompare(got[:], h.operatorDigest) != 1 {
			h.log.WarnContext(r.Context(), "consentkit: an operator API request had a wrong operator secret",
				"client", c.ClientIP.String(), "method", r.Method, "path", r.URL.Path, "request_id", consentkit.RequestIDFrom(r.Context()))
			return consent.Errorf(consent.Unauthorized, "the operator secret is wrong")
		}
	}
	if taken {
		h.operatorFailures.Return(key)
	}
	return err
}

// authenticate checks the Authorization header (D6, D7). It returns no
// token and no error when the header is absent and company-and-property
// credentials may stand in for it (D8).
func (h *Handler) authenticate(r *http.Request, auth Auth) (*consent.Token, error) {
	header := r.Header.Get("Authorization")
	if header == "" {
		if auth == AuthToken && h.cfg.PropertyCredentials {
			return nil, nil
		}
		return nil, errNoToken
	}
	secret, err := bearer(r)
	if err != nil {
		return nil, err
	}
	tok, err := h.svc.Authenticate(r.Context(), secret)
	if err != nil {
		return nil, err
	}
	if auth == AuthRetention && !tok.Has(consent.PermissionRetention) {
		return nil, consent.Errorf(consent.Forbidden, "the token lacks the %s permission", consent.PermissionRetention)
	}
	return tok, nil
}

// bearer returns the secret of the request's "Authorization: Bearer" header.
func bearer(r *http.Request) (string, error) {
	header := r.Header.Get("Authorization")
	if header == "" {
		return "", errNoToken
	}
	// RFC 6750's "Bearer" SP credential, forgiving the optional white
	// space of HTTP (spaces and tabs) around and between the two.
	header = strings.Trim(header, " \t")
	i := strings.IndexAny(header, " \t")
	if i < 0 || !strings.EqualFold(header[:i], "Bearer") {
		return "", consent.Errorf(consent.Unauthorized, "the Authorization header must be Bearer <token>")
	}
	secret := strings.TrimLeft(header[i:], " \t")
	if secret == "" {
		return "", consent.Errorf(consent.Unauthorized, "the Authorization header must be Bearer <token>")
	}
	return secret, nil
}

// take takes a token from the route's rate limiter: per client address for
// opt-out, per company for the others (D20, D28).
func (h *Handler) take(r *http.Request, l Limit, c Caller) error {
	lim := h.limits[l]
	if lim == nil {
		return nil
	}
	key := c.CompanyID
	if l.byClient() {
		var err error
		if key, err = h.clientKey(r, c); err != nil {
			return err
		}
	}
	if wait, err := lim.Allow(key); err != nil {
		if l.byClient() {
			h.hold(r, wait)
		}
		return limited(wait)
	}
	return nil
}

// hold keeps a request that its client address's limit refused for the
// wait it was given, at most Config.RefusalHold, while a slot is free,
// or until the client goes.
func (h *Handler) hold(r *http.Request, wait time.Duration) {
	d := min(wait, h.cfg.RefusalHold)
	if d <= 0 {
		return
	}
	select {
	case h.held <- struct{}{}:
		defer func() { <-h.held }()
	default:
		return // as many held as may be: answered at once
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
	}
}

// clientKey is the key of the client's address in a rate limiter.
func (h *Handler) clientKey(r *http.Request, c Caller) (string, error) {
	// Never one shared bucket for every client of unknown address.
	if err := h.knownClient(r.Context(), c, "method", r.Method, "path", r.URL.Path, "peer", r.RemoteAddr); err != nil {
		return "", err
	}
	return ratelimit.ClientKey(c.ClientIP, h.cfg.IPv6PrefixBits), nil
}

// takeBytes spends n bytes of a capture body from the client's byte
// budget (Config.CaptureBytesPerMinute), before they are read, and
// tells the Observer of them, budget or none.
func (h *Handler) takeBytes(r *http.Request, c Caller, n int) error {
	obs := h.cfg.Observer
	lim := h.limits[captureBytesLimit]
	if lim == nil {
		if obs != nil {
			obs.ObserveCaptureBytes(n, false)
		}
		return nil
	}
	key, err := h.clientKey(r, c)
	if err != nil {
		return err
	}
	// A body larger than a full bucket (a consent carries a chunk and
	// fields of its own; a small budget's eighth may hold less) spends the
	// whole bucket: it passes only once the client has spent nothing for
	// a while, rather than never; the rest of it is owed, so that it is
	// paid for in full.
	cost := kib(n)
	wait, err := lim.AllowN(key, min(cost, lim.Burst()))
	if err == nil {
		lim.Owe(key, cost-lim.Burst())
	}
	if obs != nil {
		obs.ObserveCaptureBytes(n, err != nil)
		if err != nil {
			obs.ObserveBudgetRefusal(BudgetClient)
		}
	}
	if err != nil {
		h.hold(r, wait)
		return limited(wait)
	}
	return nil
}

// spend takes n bytes, in KiB rounded up, from key's budget in lim.
func spend(lim *ratelimit.Limiter, key string, n int) error {
	if wait, err := lim.AllowN(key, kib(n)); err != nil {
		return limited(wait)
	}
	return nil
}

// kib is n bytes in KiB, rounded up: the unit of a byte budget.
func kib(n int) int { return (n + 1023) / 1024 }
