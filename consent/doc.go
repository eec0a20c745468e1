// Package consent is consentkit's vocabulary and its storage contract.
//
// It defines the things the service keeps — companies with their wallets,
// properties, integration tokens, recorded sessions, certificates,
// revocations, jobs, webhook endpoints and the audit log — with the rules
// of what each may hold (their Check methods), the coded errors every layer
// shares (Error, ErrorCode), the identifier rule (D29), and the Store and
// Tx interfaces that every storage backend implements. Emails and mobile
// numbers are normalised and digested in package contact (D17).
//
//	err := svc.Store().View(ctx, func(tx consent.Tx) error {
//		c, err := tx.Certificate(ctx, "cert_…")
//		...
//	})
//	if consent.ErrorCode(err) == consent.NotFound { … }
//
// The operations over these things live above it: the Service in package
// consentkit, and the paid flows in verify, retain and optout. A store
// written for another database implements Store and Tx, runs storetest,
// and is given only values that every store can keep (see Tx).
//
// Times are kept in UTC with microsecond precision, the finest that every
// store can hold.
package consent
