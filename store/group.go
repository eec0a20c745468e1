package store

import "time"

// GroupCommit configures group commit in the SQL stores: concurrent Update
// calls run together in one database transaction, each inside a savepoint
// of its own, so that one commit — one fsync — makes all of them durable.
//
//   - A call whose function fails rolls back to its savepoint: its own work
//     is undone and its caller gets its error; the others' work is kept.
//     The error comes at once when no call before it in the batch was
//     kept; otherwise with the batch's outcome, since it may rest on their
//     work (a balance spent, an id taken): the error if the batch commits,
//     else the function runs again in a later batch.
//   - A call whose function succeeds returns only after the shared commit
//     is durable, with the commit's outcome: a 2xx still means durable
//     (D31).
//   - The functions of a batch run one after the other in the goroutine
//     of the call that opened it (a panic is raised again in its own
//     caller's goroutine): a function must not depend on the goroutine it
//     runs in.
//   - A batch whose transaction breaks is rolled back whole and the other
//     calls run their functions again in a later batch (consent.Store
//     allows a function to run more than once).
//   - A batch writes its calls' ledger entries, balances and audit
//     entries behind, in one go before its commit (or before a read of the
//     ledger or the log in the batch): one round trip on PostgreSQL, a few
//     multi-row statements on SQLite. A ledger entry id found taken there
//     fails its own call with a conflict; the batch is rolled back and the
//     other calls run again. A call that runs alone writes directly. On
//     SQLite a call's savepoint is made only before its first statement
//     that writes.
//   - A caller's context ends its wait for a turn, and a cancelled caller's
//     next statement fails with the context's error, so that its function
//     fails and its work is undone; but a statement that has started runs
//     to its end (interrupting it could abort the shared transaction).
//
// A batch forms while earlier batches run: on an idle store a call runs at
// once, alone (and then without a savepoint); under load the batches grow,
// up to MaxBatch.
type GroupCommit struct {
	// Off runs every Update in a transaction of its own.
	Off bool
	// MaxBatch bounds the calls one transaction runs: default 64.
	MaxBatch int
	// Delay holds a batch open that long for more calls even when it could
	// start: default 0, no added latency.
	Delay time.Duration
	// Runners is how many batches are under way at once on PostgreSQL:
	// default one. Batches still take turns on the database (an advisory
	// lock: two batches holding rows the other wants would deadlock), so a
	// second runner only lets the next batch begin and wait for the lock.
	// SQLite has one writer, so one.
	Runners int
}

// DefaultMaxBatch is GroupCommit.MaxBatch's default.
const DefaultMaxBatch = 64
