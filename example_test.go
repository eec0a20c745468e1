package consentkit_test

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"strings"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/signed"
	"github.com/consentkit/consentkit/store/memstore"
	"github.com/consentkit/consentkit/wallet"
)

// A company with a property and a topped-up wallet, a recorded session and
// the certificate of the consent given in it.
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

// A token is the credential of a company's calls to the Verification and
// Retain APIs. Its secret is returned once; the store keeps only its
// SHA-256 digest.
func ExampleService_IssueToken() {
	ctx := context.Background()
	svc, err := consentkit.NewService(memstore.New(), consentkit.Config{})
	if err != nil {
		panic(err)
	}
	svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme Insurance"})

	tok, secret, err := svc.IssueToken(ctx, consentkit.TokenParams{
		CompanyID:   "acme",
		Permissions: []consent.Permission{consent.PermissionRetention}, // may call the Retain API
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("secret shown once:", strings.HasPrefix(secret, consentkit.TokenPrefix))

	caller, err := svc.Authenticate(ctx, secret)
	fmt.Println("authenticates", caller.CompanyID, caller.Permissions, err)

	svc.RevokeToken(ctx, "acme", tok.ID)
	_, err = svc.Authenticate(ctx, secret)
	fmt.Println("after revocation:", consent.ErrorCode(err))
	// Output:
	// secret shown once: true
	// authenticates acme [vzew_retention] <nil>
	// after revocation: unauthorized
}

// Checked gives a program that works on a store without a Service — a job
// runner, a migration tool — the checks the Service's own transactions
// make: a value that no store may keep is refused before the store sees it.
func ExampleChecked() {
	ctx := context.Background()
	st := consentkit.Checked(memstore.New())

	err := st.Update(ctx, func(tx consent.Tx) error {
		// A NUL byte is text that not every store can keep.
		return tx.CreateCompany(ctx, &consent.Company{ID: "acme", Name: "Acme\x00Insurance"})
	})
	fmt.Println(consent.ErrorCode(err))
	// Output: invalid
}

// A paid or state-changing call that carries an idempotency key (D40) in its
// context happens once: sent again with the key, after a timeout or a lost
// answer, it does nothing and returns consent.ErrReplayed, and the first
// answer is in the Idempotency. Over HTTP the Idempotency-Key header does
// this for every paid route.
func ExampleWithIdempotency() {
	ctx := context.Background()
	svc, err := consentkit.NewService(memstore.New(), consentkit.Config{})
	if err != nil {
		panic(err)
	}
	svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme Insurance"})

	topUp := func() error {
		k := &consentkit.Idempotency{ // one per call
			Scope:       consentkit.OperatorIdempotencyScope("acme"),
			Key:         "topup-inv-7",
			Fingerprint: sha256.Sum256([]byte("top-up 25 inv-7")), // what the request was
			Answer: func(result any, err error) (int, []byte, bool) {
				if err != nil {
					return 0, nil, false // not kept: a retry may succeed
				}
				return 200, []byte(result.(wallet.Amount).String()), true
			},
		}
		_, err := svc.TopUp(consentkit.WithIdempotency(ctx, k), "acme", 25*wallet.Dollar, "inv-7")
		_, body, _ := k.Stored()
		fmt.Printf("replayed=%v answer=%s err=%v\n", k.Replayed(), body, err)
		return err
	}
	topUp()
	topUp() // the retry: nothing more is credited

	balance, _ := svc.Balance(ctx, "acme")
	fmt.Println("balance", balance)
	// Output:
	// replayed=false answer=25 err=<nil>
	// replayed=true answer=25 err=consent: the idempotency key was used before; its stored answer stands
	// balance 25
}

// With a signing key every certificate is signed at issue (D41). The
// public keys are what GET /.well-known/consentkit-keys publishes; anyone
// can check a certificate with them offline (package signed).
func ExampleConfig_signingKeys() {
	ctx := context.Background()
	// A real key comes from signed.NewSigningKey and is kept secret; this
	// one is fixed so that the example prints the same every time.
	key := signed.SigningKey{ID: "key-2026-11", Private: ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))}
	svc, err := consentkit.NewService(memstore.New(), consentkit.Config{
		SigningKeys: []signed.SigningKey{key}, // to rotate: the new key first, the old one after it
	})
	if err != nil {
		panic(err)
	}
	svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme Insurance"})
	svc.AddProperty(ctx, consentkit.PropertyParams{ID: "acme-web", CompanyID: "acme", Name: "Quote form"})
	svc.StartSession(ctx, consentkit.SessionParams{ID: "s1", CompanyID: "acme", PropertyID: "acme-web"})
	cert, err := svc.IssueCertificate(ctx, consentkit.CertificateParams{
		ID: "cert-1", CompanyID: "acme", PropertyID: "acme-web", SessionID: "s1",
		Records: []consent.Record{{Text: "I agree to be contacted."}},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(cert.ID, "signed by", cert.KeyID, len(cert.Signature), "bytes")

	for _, k := range signed.Publish(svc.PublicKeys()).Keys {
		fmt.Println("published:", k.KeyID, k.Algorithm)
	}
	// Output:
	// cert-1 signed by key-2026-11 64 bytes
	// published: key-2026-11 Ed25519
}

// Every change and every paid call appends an entry to its company's audit
// log in its own transaction (D42). A fixed clock makes the times
// repeatable.
func ExampleService_AuditLog() {
	ctx := context.Background()
	now := time.Date(2026, 11, 22, 10, 30, 0, 0, time.UTC)
	svc, err := consentkit.NewService(memstore.New(), consentkit.Config{Now: func() time.Time { return now }})
	if err != nil {
		panic(err)
	}
	svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme Insurance"})
	svc.AddProperty(ctx, consentkit.PropertyParams{ID: "acme-web", CompanyID: "acme", Name: "Quote form"})
	svc.TopUp(consentkit.WithRequestID(ctx, "req-42"), "acme", 10*wallet.Dollar, "invoice-1")

	entries, err := svc.AuditLog(ctx, consent.AuditQuery{CompanyID: "acme", Limit: 50})
	if err != nil {
		panic(err)
	}
	for _, e := range entries {
		fmt.Printf("%d %s %s %s %s request=%q\n", e.Seq, e.At.Format(time.RFC3339), e.Actor, e.Action, e.Outcome, e.RequestID)
	}
	// Output:
	// 1 2026-11-22T10:30:00Z operator company.create ok request=""
	// 2 2026-11-22T10:30:00Z operator property.create ok request=""
	// 3 2026-11-22T10:30:00Z operator wallet.credit ok request="req-42"
}
