package optout_test

import (
	"context"
	"fmt"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/optout"
	"github.com/consentkit/consentkit/store/memstore"
	"github.com/consentkit/consentkit/verify"
	"github.com/consentkit/consentkit/wallet"
)

// A consumer opts out by email (POST /opt-out): every certificate of the
// company whose email normalizes to the same address is revoked, and a
// verification of one of them is refused from then on, uncharged (D13).
func ExampleService_OptOut() {
	ctx := context.Background()
	now := time.Date(2026, 11, 22, 10, 30, 0, 0, time.UTC)
	svc, err := consentkit.NewService(memstore.New(), consentkit.Config{Now: func() time.Time { return now }})
	if err != nil {
		panic(err)
	}
	svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme Insurance"})
	svc.AddProperty(ctx, consentkit.PropertyParams{ID: "acme-web", CompanyID: "acme", Name: "Quote form"})
	svc.TopUp(ctx, "acme", wallet.Dollar, "invoice-1")
	for _, id := range []string{"cert-1", "cert-2"} {
		svc.StartSession(ctx, consentkit.SessionParams{ID: "s-" + id, CompanyID: "acme", PropertyID: "acme-web"})
		svc.IssueCertificate(ctx, consentkit.CertificateParams{
			ID: id, CompanyID: "acme", PropertyID: "acme-web", SessionID: "s-" + id,
			Email:   "jane.doe@example.com",
			Records: []consent.Record{{Text: "I agree to be contacted."}},
		})
	}

	res, err := optout.New(svc).OptOut(ctx, optout.Request{
		CompanyID: "acme",
		Email:     " Jane.Doe@EXAMPLE.com ", // normalized as the certificates' were (D17)
		Reason:    "no more calls",
		ClientIP:  "203.0.113.7",
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("revoked", res.CertificateIDs, "at", res.Timestamp.Format(time.RFC3339))

	_, err = verify.New(svc).Match(ctx, "acme", verify.MatchRequest{
		CertificateID: "cert-1", CompanyID: "acme", Consent: "I agree to be contacted.",
	})
	balance, _ := svc.Balance(ctx, "acme")
	fmt.Println(consent.ErrorCode(err), err, "balance", balance)
	// Output:
	// revoked [cert-1 cert-2] at 2026-11-22T10:30:00Z
	// opted_out This session has opted out balance 1
}
