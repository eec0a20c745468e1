// Package consent is the vocabulary of consentkit and its storage contract.
//
// It defines the things the service keeps — companies with their wallets,
// properties, integration tokens, recorded sessions, certificates and
// revocations — the coded errors every layer shares, identifier rules (D29),
// the normalization of emails and mobile numbers (D17), and the Store and Tx
// interfaces that every storage backend implements.
//
// Service holds the operations that create things: companies, properties,
// tokens, wallet top-ups, session recordings and certificates. The
// verification, retention and revocation rules live in the packages verify,
// retain and optout, all written against Tx so that each rule exists once and
// runs the same on every store.
//
// Times are kept in UTC with microsecond precision, the finest that every
// store can hold.
package consent
