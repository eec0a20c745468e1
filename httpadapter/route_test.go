package httpadapter

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/store/memstore"
	"github.com/consentkit/consentkit/wallet"
)

func newTestHandler(t *testing.T) (*Handler, *consentkit.Service) {
	t.Helper()
	ctx := context.Background()
	svc, err := consentkit.NewService(memstore.New(), consentkit.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []func() error{
		func() error {
			_, err := svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme"})
			return err
		},
		func() error {
			_, err := svc.AddProperty(ctx, consentkit.PropertyParams{ID: "web", CompanyID: "acme", Name: "Form"})
			return err
		},
		func() error { _, err := svc.TopUp(ctx, "acme", wallet.Dollar, ""); return err },
		func() error {
			_, err := svc.StartSession(ctx, consentkit.SessionParams{ID: "s1", CompanyID: "acme", PropertyID: "web"})
			return err
		},
		func() error {
			_, err := svc.IssueCertificate(ctx, consentkit.CertificateParams{ID: "c1", CompanyID: "acme", PropertyID: "web",
				SessionID: "s1", Records: []consent.Record{{Text: "I agree.", Types: []string{"tcpa"}}}})
			return err
		},
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	h, err := New(Config{Service: svc})
	if err != nil {
		t.Fatal(err)
	}
	return h, svc
}

// The typed functions behind the routes work without HTTP: the caller is
// whatever the wrapper would have authenticated.
func TestTypedFunctionsWithoutHTTP(t *testing.T) {
	h, svc := newTestHandler(t)
	ctx := context.Background()
	acme := Caller{CompanyID: "acme"}
	m, err := h.match(ctx, acme, &matchRequest{CertificateID: "c1", CompanyID: "acme", Consent: " I agree. "})
	if err != nil || !m.Valid || m.VerificationType != "first_party" || strings.Join(m.ConsentTypes, ",") != "tcpa" {
		t.Errorf("match = %+v, %v", m, err)
	}
	if _, err := h.match(ctx, Caller{CompanyID: "other"}, &matchRequest{CertificateID: "c1", CompanyID: "acme", Consent: "x"}); consent.ErrorCode(err) != consent.Forbidden {
		t.Errorf("match by another company: %v, want Forbidden", err)
	}
	r, err := h.retainSession(ctx, acme, &sessionRequest{CompanyID: "acme", SessionID: "s1"})
	if err != nil || r.RetentionStatus != "retained" || r.Charged != 10*wallet.Cent {
		t.Errorf("retainSession = %+v, %v", r, err)
	}
	if _, err := h.retainBatch(ctx, acme, &batchRequest{CompanyID: "acme"}); consent.ErrorCode(err) != consent.Invalid {
		t.Errorf("retainBatch without session_ids: %v, want Invalid", err)
	}
	if bal, _ := svc.Balance(ctx, "acme"); bal != wallet.Dollar-15*wallet.Cent/10-10*wallet.Cent {
		t.Errorf("balance %s after a match and a retention", bal)
	}
}

// The route table is what the package documentation lists, every request
// type binds every wildcard of its pattern, and every route declares how it
// authenticates, limits and answers errors.
func TestRouteTable(t *testing.T) {
	h, _ := newTestHandler(t)
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, rt := range h.Routes() {
		key := rt.Method + " " + rt.Pattern
		if seen[key] {
			t.Errorf("%s twice in the table", key)
		}
		seen[key] = true
		documented := strings.TrimPrefix(rt.Pattern, "/api/verify/")
		if documented != rt.Pattern {
			documented = "/verify/" + documented // the /api spelling is documented once (D30)
		}
		if !strings.Contains(string(doc), "//\t"+rt.Method+" "+documented+" ") &&
			!strings.Contains(string(doc), "//\t"+rt.Method+"  "+documented+" ") {
			t.Errorf("%s is not in the package documentation's list", key)
		}
		json := rt.Method != http.MethodOptions && rt.ContentType == ""
		if json && (rt.Request == nil || rt.Response == nil) || (rt.Request == nil) != (rt.Response == nil) {
			t.Errorf("%s: request %v, response %v; JSON routes have both, and other routes both or neither", key, rt.Request, rt.Response)
		}
		if strings.HasPrefix(rt.Pattern, "/api/integrations/") != (rt.Errors == RetainErrors) ||
			strings.HasPrefix(rt.Pattern, "/api/integrations/") != (rt.Auth == AuthRetention) {
			t.Errorf("%s: errors %v, auth %v; the Retain API's routes, and only they, use its shapes and permission", key, rt.Errors, rt.Auth)
		}
		// Public routes that read the store: posts, and the preflights
		// that read a property's or a session's origins.
		public := (rt.Method == http.MethodPost || rt.Method == http.MethodOptions) && (rt.Auth == AuthNone || rt.Auth == AuthUpload)
		if public != rt.Limit.byClient() {
			t.Errorf("%s: a public POST or preflight must be limited per client, and only it", key)
		}
		if rt.CORS != strings.HasPrefix(rt.Pattern, "/capture/sessions") {
			t.Errorf("%s: CORS %v; the capture session routes, and only they, answer other origins", key, rt.CORS)
		}
		if strings.HasPrefix(rt.Pattern, "/operator/") != (rt.Group == OperatorGroup) ||
			(rt.Group == OperatorGroup) != (rt.Auth == AuthOperator) {
			t.Errorf("%s: group %v, auth %v; the operator routes, and only they, are the operator group with its secret", key, rt.Group, rt.Auth)
		}
	}
	if len(seen) != 59 {
		t.Errorf("%d routes, want 59 (5 verification routes in two spellings, opt-out, five Retain API routes, "+
			"three capture routes with their preflights, two scripts, the keys, the OpenAPI document, 33 operator routes)", len(seen))
	}
}

// A request type that does not bind its pattern's wildcards, or binds one
// the pattern lacks, is a mistake caught when the table is built.
func TestHandleChecksPathFields(t *testing.T) {
	type none struct {
		ID string `json:"id"`
	}
	type extra struct {
		ID string `path:"id" json:"-"`
	}
	fn := func(context.Context, Caller, *none) (*none, error) { return nil, nil }
	fx := func(context.Context, Caller, *extra) (*none, error) { return nil, nil }
	for name, build := range map[string]func(){
		"unbound wildcard": func() { handle(Route{Method: "GET", Pattern: "/x/{id}"}, fn) },
		"no such wildcard": func() { handle(Route{Method: "GET", Pattern: "/x"}, fx) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			build()
		}()
	}
}
