package audit_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/audit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/store/memstore"
	"github.com/consentkit/consentkit/verify"
	"github.com/consentkit/consentkit/wallet"
)

// Every audited operation appends an entry to its company's chain of
// hashes; VerifyChain walks the chain and checks every link and the head
// the store keeps apart. A program with only a store — an operator's tool —
// checks consentkit.Checked(store) the same way.
func ExampleVerifyChain() {
	ctx := context.Background()
	svc, err := consentkit.NewService(memstore.New(), consentkit.Config{})
	if err != nil {
		panic(err)
	}
	svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme Insurance"})
	svc.AddProperty(ctx, consentkit.PropertyParams{ID: "acme-web", CompanyID: "acme", Name: "Quote form"})
	svc.TopUp(ctx, "acme", wallet.Dollar, "invoice-1")
	svc.StartSession(ctx, consentkit.SessionParams{ID: "s1", CompanyID: "acme", PropertyID: "acme-web"})
	svc.IssueCertificate(ctx, consentkit.CertificateParams{
		ID: "cert-1", CompanyID: "acme", PropertyID: "acme-web", SessionID: "s1",
		Records: []consent.Record{{Text: "I agree to be contacted."}},
	})
	v := verify.New(svc)
	v.Match(ctx, "acme", verify.MatchRequest{CertificateID: "cert-1", CompanyID: "acme", Consent: "I agree to be contacted."})
	v.Match(ctx, "acme", verify.MatchRequest{CertificateID: "cert-9", CompanyID: "acme", Consent: "I agree."}) // refused, and audited

	n, err := audit.VerifyChain(ctx, svc.Store(), "acme")
	fmt.Println(n, "entries checked:", err)
	if ce, ok := errors.AsType[*audit.ChainError](err); ok {
		fmt.Printf("entry %d of %s: %s\n", ce.Seq, ce.CompanyID, ce.Reason)
	}

	// A long chain is checked in bounded runs, resuming where the last
	// one stopped.
	run, err := audit.CheckChain(ctx, svc.Store(), "acme", 1, 3)
	fmt.Println("checked", run.Checked, "next run from", run.Next, err)
	// Output:
	// 5 entries checked: <nil>
	// checked 3 next run from 4 <nil>
}
