package consentkit_test

import (
	"context"
	"fmt"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/store/memstore"
	"github.com/consentkit/consentkit/wallet"
)

func Example() {
	ctx := context.Background()
	svc, err := consentkit.NewService(memstore.New(), consentkit.Config{})
	if err != nil {
		panic(err)
	}

	svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme Insurance"})
	svc.AddProperty(ctx, consentkit.PropertyParams{ID: "acme-web", CompanyID: "acme", Name: "Quote form"})
	amount, _ := wallet.ParseAmount("25.50")
	balance, _ := svc.TopUp(ctx, "acme", amount, "invoice-1")

	svc.StartSession(ctx, consentkit.SessionParams{ID: "s1", CompanyID: "acme", PropertyID: "acme-web"})
	svc.AppendEvents(ctx, "s1", []byte(`[{"type":4,"data":{"width":1024,"height":625},"timestamp":1}]`))
	cert, err := svc.IssueCertificate(ctx, consentkit.CertificateParams{
		ID: "cert-1", CompanyID: "acme", PropertyID: "acme-web", SessionID: "s1",
		Origin:  "https://acme.example/quote",
		Email:   "Jane@Example.com",
		Records: []consent.Record{{Text: "I agree to be contacted.", Types: []string{"tcpa"}}},
	})
	fmt.Println(balance, cert.ID, len(cert.Records), err)
	// Output: 25.5 cert-1 1 <nil>
}
