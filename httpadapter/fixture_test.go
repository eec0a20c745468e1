package httpadapter_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/wallet"
)

var ctx = context.Background()

// Times of the fixture: everything is created at created, requests are
// served at now.
var (
	created = time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	now     = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
)

// Token secrets of the fixture.
const (
	acmeToken    = "acme-token-secret-0001"  // acme, with vzew_retention
	acmeNoPerm   = "acme-noperm-secret-0001" // acme, without it
	acmeExpired  = "acme-expired-secret-001"
	acmeRevoked  = "acme-revoked-secret-001"
	buyerToken   = "buyer-token-secret-0001" // authorized by acme
	otherToken   = "other-token-secret-0001" // not authorized by anyone
	poorToken    = "poor-token-secret-00001" // wallet of 0.01
	closedToken  = "closed-token-secret-001"
	consentText  = "I agree to be contacted by Acme Insurance."
	privacyText  = "I accept the privacy policy."
	startBalance = "1"
)

// companies of the fixture, whose balances every HTTP test checks.
var companies = []string{"acme", "buyer", "other", "closed", "poor"}

type env struct {
	store consent.Store
	svc   *consentkit.Service
	clock *clock
}

type clock struct{ t time.Time }

func (c *clock) Now() time.Time { return c.t }

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// setup fills store with the fixture described in httpadapter_test.go.
func setup(t testing.TB, store consent.Store) *env {
	t.Helper()
	clk := &clock{t: created}
	svc, err := consentkit.NewService(store, consentkit.Config{Now: clk.Now})
	must(t, err)
	e := &env{store: store, svc: svc, clock: clk}
	one := wallet.Dollar
	for _, c := range []consentkit.CompanyParams{
		{ID: "acme", Name: "Acme Insurance", ThirdPartyVerificationEnabled: true, AuthorizedThirdParties: []string{"buyer"}},
		{ID: "buyer", Name: "Lead Buyer"},
		{ID: "other", Name: "Other Co"},
		{ID: "closed", Name: "Closed Co", ThirdPartyVerificationEnabled: false, AuthorizedThirdParties: []string{"buyer"}},
		{ID: "poor", Name: "Poor Co"},
	} {
		_, err := svc.CreateCompany(ctx, c)
		must(t, err)
		amount := one
		if c.ID == "poor" {
			amount = wallet.Cent
		}
		_, err = svc.TopUp(ctx, c.ID, amount, "initial")
		must(t, err)
		_, err = svc.AddProperty(ctx, consentkit.PropertyParams{ID: c.ID + "-web", CompanyID: c.ID, Name: "Form"})
		must(t, err)
	}
	retention := []consent.Permission{consent.PermissionRetention}
	for _, tok := range []consentkit.TokenParams{
		{CompanyID: "acme", Secret: acmeToken, Permissions: retention},
		{CompanyID: "acme", Secret: acmeNoPerm},
		{CompanyID: "acme", Secret: acmeExpired, Permissions: retention, ExpiresAt: created.Add(time.Hour)},
		{CompanyID: "acme", Secret: acmeRevoked, Permissions: retention},
		{CompanyID: "buyer", Secret: buyerToken, Permissions: retention},
		{CompanyID: "other", Secret: otherToken, Permissions: retention},
		{CompanyID: "poor", Secret: poorToken, Permissions: retention},
		{CompanyID: "closed", Secret: closedToken, Permissions: retention},
	} {
		issued, _, err := svc.IssueToken(ctx, tok)
		must(t, err)
		if tok.Secret == acmeRevoked {
			must(t, svc.RevokeToken(ctx, "acme", issued.ID))
		}
	}
	for _, s := range []struct{ id, company string }{
		{"s1", "acme"}, {"s2", "acme"}, {"s-retained", "acme"}, {"s-kept", "acme"},
		{"s-other", "other"}, {"s-poor", "poor"}, {"s-closed", "closed"},
	} {
		_, err := svc.StartSession(ctx, consentkit.SessionParams{ID: s.id, CompanyID: s.company, PropertyID: s.company + "-web"})
		must(t, err)
		_, err = svc.AppendEvents(ctx, s.id, json.RawMessage(`[{"type":4,"data":{"width":1024,"height":625},"timestamp":1}]`))
		must(t, err)
	}
	record := consent.Record{Text: consentText, Types: []string{"tcpa", "marketing"}, OptInAt: created.Add(5 * time.Second)}
	privacy := consent.Record{Text: privacyText, Types: []string{"privacy", "tcpa"}, OptInAt: created.Add(3 * time.Second)}
	for _, c := range []consentkit.CertificateParams{
		{ID: "cert-1", CompanyID: "acme", SessionID: "s1", Email: "Jane@Example.com", Mobile: "(555) 010-2000",
			Records: []consent.Record{record, privacy}, EventsCombined: json.RawMessage(`{"fields":2,"submitted":true}`)},
		{ID: "cert-2", CompanyID: "acme", SessionID: "s1", Email: "jane@example.com", Records: []consent.Record{record}},
		{ID: "cert-revoked", CompanyID: "acme", SessionID: "s1", Records: []consent.Record{record}},
		{ID: "cert-kept", CompanyID: "acme", SessionID: "s-kept", Records: []consent.Record{record}},
		{ID: "cert-empty", CompanyID: "acme", SessionID: "s1"},
		{ID: "cert-other", CompanyID: "other", SessionID: "s-other", Mobile: "+1 555 010 2000", Records: []consent.Record{record}},
		{ID: "cert-poor", CompanyID: "poor", SessionID: "s-poor", Records: []consent.Record{record}},
		{ID: "cert-closed", CompanyID: "closed", SessionID: "s-closed", Records: []consent.Record{record}},
	} {
		c.PropertyID = c.CompanyID + "-web"
		c.Origin = "https://" + c.CompanyID + ".example/quote"
		_, err := svc.IssueCertificate(ctx, c)
		must(t, err)
	}
	// Already retained: s-retained, and s-kept with its certificate.
	must(t, store.Update(ctx, func(tx consent.Tx) error {
		if err := tx.RevokeCertificate(ctx, "cert-revoked", created.Add(time.Hour)); err != nil {
			return err
		}
		for _, id := range []string{"s-retained", "s-kept"} {
			ses, err := tx.Session(ctx, id)
			if err != nil {
				return err
			}
			ses.RetentionStatus = consent.RetentionRetained
			if err := tx.UpdateSession(ctx, ses); err != nil {
				return err
			}
		}
		cert, err := tx.Certificate(ctx, "cert-kept")
		if err != nil {
			return err
		}
		cert.RetentionStatus = consent.RetentionRetained
		return tx.UpdateCertificate(ctx, cert)
	}))
	clk.t = now
	return e
}

// handler returns the adapter over e's service, with e's store and clock.
func (e *env) handler(t testing.TB, cfg httpadapter.Config) http.Handler {
	t.Helper()
	cfg.Service = e.svc
	if cfg.RefusalHold == 0 {
		// The limits run on the fixture's clock, which a hold on the
		// wall clock would not follow: tests of the hold set their own.
		cfg.RefusalHold = -1
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	h, err := httpadapter.New(cfg)
	must(t, err)
	return h
}

func (e *env) balance(t testing.TB, company string) wallet.Amount {
	t.Helper()
	bal, err := e.svc.Balance(ctx, company)
	must(t, err)
	return bal
}

// request is one HTTP call.
type request struct {
	path   string
	token  string // a Bearer secret; "" sends no Authorization header
	auth   string // a raw Authorization header, instead of token
	body   string
	remote string // peer address; default 192.0.2.1:1234
	header http.Header
}

// setHeaders sets req's Authorization header and r.header.
func (r request) setHeaders(req *http.Request) {
	switch {
	case r.auth != "":
		req.Header.Set("Authorization", r.auth)
	case r.token != "":
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	for k, v := range r.header {
		req.Header[k] = v
	}
}

func serve(h http.Handler, r request) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, r.path, strings.NewReader(r.body))
	req.Header.Set("Content-Type", "application/json")
	r.setHeaders(req)
	req.RemoteAddr = "192.0.2.1:1234"
	if r.remote != "" {
		req.RemoteAddr = r.remote
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// decodeJSON decodes b keeping numbers as their text, so that money is
// compared exactly as written (D1).
func decodeJSON(t testing.TB, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("response is not JSON: %v: %s", err, b)
	}
	return v
}

// checkBody fails t unless the response body equals want as JSON.
func checkBody(t testing.TB, got []byte, want string) {
	t.Helper()
	if d := cmp.Diff(decodeJSON(t, []byte(want)), decodeJSON(t, got)); d != "" {
		t.Errorf("body (-want +got):\n%s", d)
	}
}
