package verify_test

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/signed"
	"github.com/consentkit/consentkit/store/memstore"
	"github.com/consentkit/consentkit/verify"
	"github.com/consentkit/consentkit/wallet"
)

// newService returns a service, on a fixed clock and with a fixed signing
// key, where company acme has $1, a property acme-web and the certificate
// cert-1 of session s1.
func newService(ctx context.Context) *consentkit.Service {
	now := time.Date(2026, 11, 22, 10, 30, 0, 0, time.UTC)
	key := signed.SigningKey{ID: "key-1", Private: ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))}
	svc, err := consentkit.NewService(memstore.New(), consentkit.Config{
		Now:         func() time.Time { return now },
		SigningKeys: []signed.SigningKey{key},
	})
	if err != nil {
		panic(err)
	}
	svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme Insurance"})
	svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "other", Name: "Another Company"})
	svc.AddProperty(ctx, consentkit.PropertyParams{ID: "acme-web", CompanyID: "acme", Name: "Quote form"})
	svc.TopUp(ctx, "acme", wallet.Dollar, "invoice-1")
	svc.StartSession(ctx, consentkit.SessionParams{ID: "s1", CompanyID: "acme", PropertyID: "acme-web"})
	_, err = svc.IssueCertificate(ctx, consentkit.CertificateParams{
		ID: "cert-1", CompanyID: "acme", PropertyID: "acme-web", SessionID: "s1",
		Origin: "https://acme.example/quote",
		Email:  "jane@example.com",
		Records: []consent.Record{{
			Text:  "I agree that Acme may call me about my quote.",
			Types: []string{"tcpa"},
		}},
	})
	if err != nil {
		panic(err)
	}
	return svc
}

// An exact match (D10): the consent text a lead came with is compared with
// the certificate's, byte for byte after trimming white space. A check that
// answers is charged, valid or not; one that is refused is not.
func ExampleService_Match() {
	ctx := context.Background()
	v := verify.New(newService(ctx))

	res, err := v.Match(ctx, "acme", verify.MatchRequest{
		CertificateID: "cert-1", CompanyID: "acme",
		Consent: "I agree that Acme may call me about my quote.",
		Lead:    verify.Lead{Email: "Jane@Example.com"}, // optional: is it the certificate's?
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Valid, *res.EmailMatched, res.ConsentTypes, res.VerificationType, res.Charged, res.Balance)

	res, _ = v.Match(ctx, "acme", verify.MatchRequest{
		CertificateID: "cert-1", CompanyID: "acme",
		Consent: "I agree that Acme may text me.",
	})
	fmt.Println(res.Valid, res.Charged, res.Balance)

	// Another company's token cannot ask about acme's certificates.
	_, err = v.Match(ctx, "other", verify.MatchRequest{
		CertificateID: "cert-1", CompanyID: "acme", Consent: "I agree.",
	})
	fmt.Println(consent.ErrorCode(err))
	// Output:
	// true true [tcpa] first_party 0.015 0.985
	// false 0.015 0.97
	// forbidden
}

// A partial match (D11): the term is found in a consent text, ignoring case.
func ExampleService_PartialMatch() {
	ctx := context.Background()
	v := verify.New(newService(ctx))

	for _, term := range []string{"MAY CALL ME", "may email me"} {
		res, err := v.PartialMatch(ctx, "acme", verify.PartialMatchRequest{
			CertificateID: "cert-1", CompanyID: "acme", Term: term,
		})
		if err != nil {
			panic(err)
		}
		fmt.Println(term, res.Valid, res.ConsentOptIn.Format(time.RFC3339))
	}
	// Output:
	// MAY CALL ME true 2026-11-22T10:30:00Z
	// may email me false 2026-11-22T10:30:00Z
}

// Certificate info (D15) answers what a certificate holds, with its
// signature (D41) and the signed content, which anyone can check offline
// with the published key.
func ExampleService_CertificateInfo() {
	ctx := context.Background()
	svc := newService(ctx)
	v := verify.New(svc)

	info, err := v.CertificateInfo(ctx, "acme", verify.InfoRequest{
		CertificateID: "cert-1", CompanyID: "acme", PropertyID: "acme-web",
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(info.CertificateID, info.SessionID, info.Origin, info.ConsentCount, info.ConsentTypes)
	fmt.Println(info.CreatedAt.Format(time.RFC3339), "charged", info.Charged)

	key := svc.PublicKeys()[0] // published at GET /.well-known/consentkit-keys
	fmt.Println("signed by", info.KeyID, signed.Verify(&info.Signed, key, info.Signature))
	// Output:
	// cert-1 s1 https://acme.example/quote 1 [tcpa]
	// 2026-11-22T10:30:00Z charged 0
	// signed by key-1 <nil>
}
