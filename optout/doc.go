// Package optout revokes consumers' consent: the rules of POST /opt-out
// (D16–D19), which a consumer calls without a token.
//
//	res, err := optout.New(svc).OptOut(ctx, optout.Request{
//		CompanyID: "acme", Email: "jane@example.com", ClientIP: "203.0.113.7",
//	})
//	// res.CertificateIDs are revoked: verifying one is refused (consent.OptedOut)
//
// A request names a company and at least one of a certificate id, an email
// and a mobile number. Matching is within that company and is the union of
// what each identifier finds; emails and mobiles are normalized (D17) and
// found through their digests. Every matched certificate is revoked (one
// already revoked keeps its first revocation time) and the request is
// recorded, with digests only, in the same transaction. Repeating a request
// gives the same answer, and nothing matched is not an error: 200 with
// revoked 0, which tells a caller no more than that count (D18). A
// revocation is permanent through this package; a certificate issued later
// is new consent.
//
// Each processed request is also recorded in the company's audit log (D42),
// by the actor "consumer", naming the revocation record and which kinds of
// identifier were given — never their values.
package optout
