// Package storetest is the conformance suite of consent.Store. Every store
// runs all of it:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(tb testing.TB) consent.Store { return newStore(tb) })
//	}
//
// newStore must return a new, empty, migrated store for each call and close
// it when the test ends. The suite names each behaviour that the domain
// packages rely on as a subtest. It gives a store only what the Tx
// contract says a store is given (consent.Tx, "What a store is given"):
// what is beyond it is refused by the checked Tx before any store sees it,
// and tried in the Service's tests (checked_*_test.go, at the
// repository's root).
package storetest

import (
	"testing"

	"github.com/consentkit/consentkit/consent"
)

// NewStore returns a new, empty store that is closed when t ends.
type NewStore func(tb testing.TB) consent.Store

// A behaviour is one subtest of an area, run on a new store.
type behaviour struct {
	name string
	fn   func(t *testing.T, s consent.Store)
}

// An area is the behaviours of one noun of the Tx contract, run as the
// subtests Noun/Behaviour.
type area struct {
	name       string
	behaviours []behaviour
}

// areas is the whole suite. Each area's behaviours are in the file named
// after its noun (company.go holds Company, Property and Token;
// certificate.go Certificate and Revocation; page.go Page and List).
var areas = []area{
	{"Company", []behaviour{
		{"CreateReadUpdate", testCompany},
		{"Lock", testLockCompany},
	}},
	{"Property", []behaviour{
		{"CreateRead", testProperty},
		{"List", testProperties},
	}},
	{"Token", []behaviour{
		{"CreateRevoke", testToken},
		{"List", testTokens},
	}},
	{"Session", []behaviour{
		{"Create", testSession},
		{"AppendEvents", testEventsByteIdentical},
		{"EachEventChunk", testEachEventChunk},
		{"EmptyEventChunk", testEmptyEventChunk},
		{"Update", testUpdateSession},
		{"Sessions", testSessions},
		{"UpdateSessions", testUpdateSessions},
		{"SetRecording", testSetRecording},
		{"SessionsToMove", testSessionsToMove},
		{"ReadThenWriteIsAtomic", testReadThenWriteIsAtomic},
	}},
	{"Capture", []behaviour{
		{"PropertyAndSession", testCapture},
	}},
	{"Certificate", []behaviour{
		{"CreateRead", testCertificate},
		{"Update", testUpdateCertificate},
		{"ByDigest", testCertificatesByDigest},
		{"Revoke", testRevokeCertificate},
		{"Velocity", testVelocity},
		{"VelocityStops", testVelocityStops},
	}},
	{"Revocation", []behaviour{
		{"CreateList", testRevocation},
		{"RevokedBefore", testRevokedBefore},
	}},
	{"Job", []behaviour{
		{"Enqueue", testJob},
		{"EnqueueJobs", testEnqueueJobs},
		{"Count", testCountJobs},
		{"CountCompany", testCountCompanyJobs},
		{"DeleteLane", testDeleteLaneJobs},
		{"DeleteFailed", testDeleteFailedJobs},
		{"Lease", testLeaseJob},
		{"ConcurrentLeases", testConcurrentLeases},
		{"FairLease", testFairLease},
		{"ConcurrentLanes", testConcurrentLanes},
		{"RollsBack", testJobRollsBack},
	}},
	{"IdempotencyKey", []behaviour{
		{"ClaimAnswerRelease", testIdempotencyKey},
		{"ConcurrentClaims", testConcurrentClaims},
	}},
	{"OperatorSession", []behaviour{
		{"CreateReadDelete", testOperatorSession},
		{"Prune", testPruneOperatorSessions},
		{"Times", testOperatorSessionTimes},
		{"RollsBack", testOperatorSessionRollsBack},
		{"ViewIsReadOnly", testOperatorSessionViewIsReadOnly},
	}},
	{"Attestation", []behaviour{
		{"CreateReadUpdatePurge", testAttestation},
	}},
	{"Insights", []behaviour{
		{"CreateReadUpdatePurge", testInsights},
	}},
	{"Profile", []behaviour{
		{"PutReadDelete", testProfile},
		{"RollsBack", testProfileRollsBack},
	}},
	{"PublishedKey", []behaviour{
		{"PublishReadList", testPublishedKeys},
	}},
	{"Webhook", []behaviour{
		{"Endpoint", testWebhookEndpoint},
		{"Deliveries", testWebhookDeliveries},
		{"DeleteDeliveries", testDeleteWebhookDeliveries},
		{"RollsBack", testWebhookRollsBack},
	}},
	{"Wallet", []behaviour{
		{"CreditDebit", testWallet},
		{"DebitAll", testDebitAll},
		{"BalanceLimit", testBalanceLimit},
		{"ConcurrentDebits", testConcurrentDebits},
		{"ConcurrentTakenEntryIDs", testConcurrentTakenEntryIDs},
		{"ConcurrentChargesReadBack", testConcurrentChargesReadBack},
	}},
	{"Audit", []behaviour{
		{"Append", testAuditAppend},
		{"Query", testAuditQuery},
		{"ConcurrentAppends", testConcurrentAudit},
		{"RollsBack", testAuditRollback},
		{"AppendAudits", testAppendAudits},
		{"ConcurrentAppendAudits", testConcurrentAppendAudits},
	}},
	{"Purge", []behaviour{
		{"Batches", testPurge},
		{"RollsBack", testPurgeRollsBack},
	}},
	{"Page", []behaviour{
		{"Ledger", testLedgerPage},
		{"Certificates", testCertificatePage},
		{"Sessions", testSessionPage},
		{"Revocations", testRevocationPage},
	}},
	{"List", []behaviour{
		{"Empty", testEmptyLists},
	}},
	{"Tx", []behaviour{
		{"Rollback", testRollback},
		{"ViewIsReadOnly", testViewIsReadOnly},
		{"BulkRollsBack", testBulkRollsBack},
		{"TakenBeforeMissing", testTakenBeforeMissing},
		{"PanicRollsBack", testPanicRollsBack},
		{"ConflictNamesWhat", testConflictNamesWhat},
	}},
	{"GroupCommit", []behaviour{
		{"ConcurrentUpdatesFailAlone", testConcurrentUpdatesFailAlone},
		{"ConcurrentDirectAndBehind", testConcurrentDirectAndBehind},
	}},
	{"Value", []behaviour{
		{"Text", testText},
		{"TimeRange", testTimeRange},
		{"TimeArguments", testTimeArguments},
		{"IntRange", testIntRange},
		{"KeyLength", testKeyLength},
		{"ReadBadText", testReadBadText},
		{"TimesUTC", testTimesUTC},
		{"SubMicrosecond", testSubMicrosecond},
	}},
}

// Run runs the whole suite: each behaviour as the subtest Area/Behaviour
// on a store of its own from newStore. Every behaviour has its own store,
// so they all run in parallel (t.Parallel), as many at once as go test's
// -parallel allows (GOMAXPROCS by default); newStore must be safe to call
// from parallel tests. The behaviours that make concurrent calls make them
// on their own store and check invariants, not timings, so they run in
// parallel too.
func Run(t *testing.T, newStore NewStore) {
	for _, a := range areas {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			for _, b := range a.behaviours {
				t.Run(b.name, func(t *testing.T) {
					t.Parallel()
					b.fn(t, newStore(t))
				})
			}
		})
	}
}

// The Tx methods that read or write many rows in one step:
// each does what its one-row form does for every row, in the order given,
// and a refusal leaves nothing written. A refusal that a SQL store finds
// before it runs a statement (Invalid, NotFound of a row, a short wallet)
// is checked by committing the transaction after it; one that a statement
// finds (Conflict) aborts a PostgreSQL transaction, so it is checked after
// a rollback. Their behaviours are Session/Sessions, Session/UpdateSessions,
// Job/EnqueueJobs, Wallet/DebitAll, Audit/AppendAudits and Tx/BulkRollsBack.
