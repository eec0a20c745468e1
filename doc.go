// Package consentkit verifies, retains and revokes consent certificates.
//
// A consumer gives consent on a web form; the capture snippet records the
// session (rrweb events) and the Service issues a signed certificate of
// what was consented to. A business then verifies that consent text
// matches a certificate, retains a session or certificate beyond the
// default window, and honours the consumer's opt-out — paying for each
// action from a prepaid wallet.
//
// The Service is the Go API's root: it works on a consent.Store (memstore
// in tests, sqlitestore embedded, pgstore for production) and creates the
// things the rest of the library works on.
//
//	svc, err := consentkit.NewService(memstore.New(), consentkit.Config{})
//	...
//	svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme"})
//	svc.TopUp(ctx, "acme", 25*wallet.Dollar, "invoice-1")
//	h, err := httpadapter.New(httpadapter.Config{Service: svc})
//	...
//	mux.Handle("/", h)
//
// The rules of the paid flows live in their packages, each written against
// consent.Tx so that it runs the same on every store: verify (exact and
// partial match, certificate info), retain (retention, the conversion of
// recordings to MP4), optout (revocation). capture serves the snippet and
// takes recordings; httpadapter serves all of it over HTTP.
//
// # Checked stores
//
// The Service checks every call of a Tx before the store sees it: Store
// returns a store whose transactions refuse, as consent.Invalid, any value
// no store may keep (consent's Check methods) and any bad argument. So the
// rules of what may be stored live here once, and a store — one of
// store/'s or one written for another database — does storage only.
// Checked gives the same to a program that works on a store without a
// Service, such as a job runner.
//
// # Audit log
//
// Every change and every paid call appends an entry to its company's audit
// log in the transaction of the change (D42), with the actor and request id
// the context carries (WithActor, WithRequestID). Paid (for paid and
// state-changing operations, which also claim their idempotency key there,
// D40) and Service.UpdateAudited (for settings) are the ways the flows do
// this; docs/evidence.md says what is recorded, and package audit checks
// the chains.
//
// Times are kept in UTC with microsecond precision, the finest that every
// store can hold.
package consentkit
