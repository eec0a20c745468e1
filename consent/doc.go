// Package consent is the vocabulary of consentkit and its storage contract.
//
// It defines the things the service keeps — companies with their wallets,
// properties, integration tokens, recorded sessions, certificates and
// revocations — the coded errors every layer shares, identifier rules (D29),
// the normalization of emails and mobile numbers (D17), and the Store and Tx
// interfaces that every storage backend implements. The Service checks
// every call of a Tx before the store sees it (Checked: the rules of what
// may be stored live in one place), so a backend does storage only.
//
// Service holds the operations that create things: companies, properties,
// tokens, wallet top-ups, session recordings and certificates. The
// verification, retention and revocation rules live in the packages verify,
// retain and optout, and webhook endpoints in webhook, all written against
// Tx so that each rule exists once and runs the same on every store.
//
// Times are kept in UTC with microsecond precision, the finest that every
// store can hold.
//
// # Audit log
//
// Every verification, retention, revocation, token issue and revocation,
// wallet credit, webhook endpoint change (never its secret) and company or
// property settings change appends an
// AuditEntry to its company's audit log (D42), in the same transaction as
// the change: who (a token id, "property:<id>", "operator", "consumer" or
// "system"), what (a dotted action and its target), when, the outcome ("ok"
// or the code of the refusal) and the request id. Refusals made inside the
// transaction before anything was written (a certificate not found, opted
// out, a short wallet, a session already retained) are recorded and
// committed too; checks of the request itself (a malformed body, a token of
// another company) are refused before any transaction and are not.
// Paid (for paid and state-changing operations: verification, retention,
// opt-out, which also claim their idempotency key there, D40) and
// Service.UpdateAudited (for settings) are the ways the flows do this.
//
// Each company has its own chain: entry Seq n holds in PrevHash the Hash of
// entry n-1 (zero for entry 1), and Hash is AuditHash, the SHA-256 of this
// canonical encoding of every other field, in this order:
//
//	str("consentkit.audit.v1")
//	str(CompanyID)
//	u64(Seq)
//	u64(At in microseconds since the Unix epoch, two's complement)
//	str(Actor) str(Action) str(Target) str(Outcome) str(RequestID) str(Detail)
//	PrevHash (32 bytes)
//
// where str(s) is the length of s in bytes as a big-endian uint32 followed
// by the bytes of s, and u64 is a big-endian uint64. The store keeps the
// chain's head (the last Seq and Hash) in a row of its own, apart from the
// entries, and appends under a lock of that row: appends to one company take
// turns (as its charges already do, on its wallet), appends to different
// companies never wait for each other, and no chain can fork. An edited,
// inserted or deleted entry — the last one included, which only the head
// reveals — breaks the chain, and audit.VerifyChain names the first
// broken entry. Someone able to rewrite both the entries and the head in the
// database can rewrite history consistently; to catch that, record a
// company's head (AuditHead) somewhere else from time to time and compare.
package consent
