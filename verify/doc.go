// Package verify holds the Verification API's rules, written once against
// consent.Tx so they hold on every store: exact match (D10), partial match
// (D11), certificate info (D15), third-party verification (D9), the
// revocation check (D13) and charging (D2–D4). The long-term retention
// calls /verify/session and /verify/certificate share the one retention
// rule of package retain.
//
//	v := verify.New(svc)
//	res, err := v.Match(ctx, caller, verify.MatchRequest{
//		CertificateID: "cert_…", CompanyID: "acme", Consent: text})
//	// res.Valid, res.Charged, res.Balance
//
// Every call takes the caller: the company whose credentials were checked
// (a token's company, or the company of the property named by
// company-and-property credentials). The order of checks is fixed:
//
//  1. the request is well formed (Invalid);
//  2. the caller is the request's company_id (Forbidden);
//  3. a named originator authorizes the caller (Forbidden), before any
//     certificate is looked up, so an unauthorized caller learns nothing
//     about which certificates exist (D9);
//  4. the certificate exists and belongs to the caller, or to the named
//     originator (NotFound otherwise, the same as unknown);
//  5. it is not revoked (OptedOut, D13);
//  6. the match, then the charge (Payment when the wallet is short).
//
// Lookup, revocation check and charge run in one transaction that locks the
// certificate, so a revocation that commits first is always seen, and a
// check is charged exactly when it succeeds (D3).
//
// Each check from step 3 on is recorded in the caller's audit log (D42) in
// that transaction, with its outcome: the answered ones with the charge and
// whether consent was valid, the refused ones (403, 404, opted out, 402)
// with the code they were refused with. Checks refused at steps 1 and 2
// never reach the store and are not recorded.
package verify
