package httpadapter_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/store/memstore"
	"github.com/consentkit/consentkit/wallet"
)

// Mount the handler under /consent/ on a mux that serves the host's own
// routes too.
func Example() {
	ctx := context.Background()
	st := memstore.New()
	svc, err := consentkit.NewService(st, consentkit.Config{})
	if err != nil {
		panic(err)
	}
	svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme Insurance"})
	svc.AddProperty(ctx, consentkit.PropertyParams{ID: "acme-web", CompanyID: "acme", Name: "Quote form"})
	svc.TopUp(ctx, "acme", 10*wallet.Dollar, "invoice-1")
	_, secret, _ := svc.IssueToken(ctx, consentkit.TokenParams{CompanyID: "acme"})
	svc.StartSession(ctx, consentkit.SessionParams{ID: "s1", CompanyID: "acme", PropertyID: "acme-web"})
	svc.IssueCertificate(ctx, consentkit.CertificateParams{
		ID: "cert-1", CompanyID: "acme", PropertyID: "acme-web", SessionID: "s1",
		Records: []consent.Record{{Text: "I agree to be contacted."}},
	})

	h, err := httpadapter.New(httpadapter.Config{Service: svc})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "host ok\n") })
	mux.Handle("/consent/", http.StripPrefix("/consent", h))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	req, _ := http.NewRequest("POST", srv.URL+"/consent/verify/match", strings.NewReader(
		`{"certificate_id":"cert-1","company_id":"acme","consent":"I agree to be contacted."}`))
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Print(resp.Status, " ", strings.Contains(string(body), `"valid":true`), "\n")

	balance, _ := svc.Balance(ctx, "acme")
	fmt.Println("balance", balance)

	resp, _ = http.Get(srv.URL + "/status")
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Print(string(body))
	// Output:
	// 200 OK true
	// balance 9.985
	// host ok
}
