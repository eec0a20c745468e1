package httpadapter_test

import (
	"context"
	"fmt"
	"io"
	"log"
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

// The operator API is a handler of its own, mounted where only operators
// reach it. A top-up requires an Idempotency-Key: sent again with the key,
// after a timeout or a lost answer, it is answered with the first answer
// and credits nothing (D40). Every paid route takes a key the same way.
func ExampleHandler_Operator() {
	ctx := context.Background()
	svc, err := consentkit.NewService(memstore.New(), consentkit.Config{})
	if err != nil {
		panic(err)
	}
	const operatorSecret = "an-operator-secret-of-32-bytes-at-least" // from the environment in a real service
	h, err := httpadapter.New(httpadapter.Config{Service: svc, OperatorSecret: operatorSecret})
	if err != nil {
		panic(err)
	}
	admin := http.NewServeMux() // e.g. on an address only your network reaches
	admin.Handle("/operator/", h.Operator())
	srv := httptest.NewServer(admin)
	defer srv.Close()

	call := func(path, key, body string) {
		req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+operatorSecret)
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		fmt.Println(path, resp.StatusCode, "replayed:", resp.Header.Get("Idempotent-Replayed") == "true")
	}
	call("/operator/companies", "", `{"id":"acme","name":"Acme Insurance"}`)
	topUp := `{"amount":25,"reference":"inv-7"}`
	call("/operator/companies/acme/wallet/top-ups", "", topUp) // refused: no key
	call("/operator/companies/acme/wallet/top-ups", "5f0c8a9e-7d1b-4c39-9d7e-2b1f0e6a4c11", topUp)
	call("/operator/companies/acme/wallet/top-ups", "5f0c8a9e-7d1b-4c39-9d7e-2b1f0e6a4c11", topUp) // the retry

	balance, _ := svc.Balance(ctx, "acme")
	fmt.Println("balance", balance)
	// Output:
	// /operator/companies 201 replayed: false
	// /operator/companies/acme/wallet/top-ups 400 replayed: false
	// /operator/companies/acme/wallet/top-ups 201 replayed: false
	// /operator/companies/acme/wallet/top-ups 201 replayed: true
	// balance 25
}

// The capture routes may be served alone, on a host of their own, for
// pages of the properties' allowed origins; the rest of the API is not
// there.
func ExampleHandler_Only() {
	ctx := context.Background()
	svc, err := consentkit.NewService(memstore.New(), consentkit.Config{})
	if err != nil {
		panic(err)
	}
	svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme Insurance"})
	svc.AddProperty(ctx, consentkit.PropertyParams{ID: "acme-web", CompanyID: "acme", Name: "Quote form"})
	svc.SetAllowedOrigins(ctx, "acme", "acme-web", []string{"https://forms.acme.example"})

	h, err := httpadapter.New(httpadapter.Config{
		Service: svc,
		// RRWebDir: "/srv/consentkit/node_modules/rrweb/dist", // rrweb's bundle, from npm: rrweb 2.2.2
	})
	if err != nil {
		panic(err)
	}
	capture := http.NewServeMux() // e.g. the mux of capture.example.com
	capture.Handle("/capture/", h.Only(httpadapter.CaptureGroup))
	srv := httptest.NewServer(capture)
	defer srv.Close()

	start := func(origin string) {
		req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/capture/sessions", strings.NewReader(
			`{"property_id":"acme-web","url":"`+origin+`/quote"}`))
		req.Header.Set("Origin", origin)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		fmt.Println(origin, resp.StatusCode)
	}
	start("https://forms.acme.example")
	start("https://evil.example")

	resp, _ := http.Post(srv.URL+"/verify/match", "application/json", strings.NewReader(`{}`))
	resp.Body.Close()
	fmt.Println("/verify/match", resp.StatusCode)
	// Output:
	// https://forms.acme.example 201
	// https://evil.example 403
	// /verify/match 404
}

// A server for the mounted handler, with timeouts that a slow client
// cannot outwait. It listens on a port, so this example is compiled but
// not run.
func ExampleNewServer() {
	svc, err := consentkit.NewService(memstore.New(), consentkit.Config{}) // sqlitestore or pgstore in production
	if err != nil {
		log.Fatal(err)
	}
	h, err := httpadapter.New(httpadapter.Config{Service: svc})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux() // your application's mux, with its own routes
	mux.Handle("/consent/", http.StripPrefix("/consent", h))
	// POST /consent/verify/match, /consent/opt-out, /consent/api/integrations/acme/retain/s1, …
	srv := httpadapter.NewServer(mux, nil)
	srv.Addr = "127.0.0.1:8080"
	log.Fatal(srv.ListenAndServe())
}
