package storetest_test

import (
	"testing"

	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/store/storetest"
)

// stores are the library's stores in each of their modes: the suite and
// the benchmark run on every one. PostgreSQL's skip, saying how to run
// them, when teststore.DSNVar is unset.
var stores = append(teststore.Kinds[:len(teststore.Kinds):len(teststore.Kinds)],
	teststore.Kind{Name: "sqlite-without-group-commit", Open: teststore.Open(teststore.SQLiteWithoutGroupCommit)},
	teststore.Kind{Name: "postgres-without-group-commit", Open: teststore.Open(teststore.PostgresWithoutGroupCommit)},
)

// Every store of the library passes the whole conformance suite, as a
// store written for another database must.
func TestConformance(t *testing.T) {
	for _, k := range stores {
		t.Run(k.Name, func(t *testing.T) { storetest.Run(t, k.Open) })
	}
}

// onEveryStore runs bench once per store, named after the store.
func onEveryStore(b *testing.B, bench func(*testing.B, storetest.NewStore)) {
	for _, k := range stores {
		b.Run(k.Name, func(b *testing.B) { bench(b, k.Open) })
	}
}

// go test -run '^$' -bench Debit ./store/storetest compares a wallet
// charge on every store.
func BenchmarkDebit(b *testing.B) { onEveryStore(b, storetest.BenchmarkDebit) }

// go test -run '^$' -bench Lease ./store/storetest measures a job's lease
// in a queue of due jobs on every store (D53).
func BenchmarkLease(b *testing.B) { onEveryStore(b, storetest.BenchmarkLease) }

// go test -run '^$' -bench CountJobs ./store/storetest measures the counts
// that bound the attestation queue (D49) on every store.
func BenchmarkCountJobs(b *testing.B) { onEveryStore(b, storetest.BenchmarkCountJobs) }

// go test -run '^$' -bench AppendEvents ./store/storetest measures the
// store's share of a captured chunk on every store.
func BenchmarkAppendEvents(b *testing.B) { onEveryStore(b, storetest.BenchmarkAppendEvents) }
