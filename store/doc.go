// Package store is the home of consentkit's storage backends, each an
// implementation of consent.Store: memstore (in memory), sqlitestore
// (SQLite, the embedded default) and pgstore (PostgreSQL). The conformance
// suite in storetest is what makes them interchangeable.
//
// A store does storage only: exact round trips, NotFound and Conflict,
// transactions. The Service checks every value and argument of a call
// before a store sees it (consentkit.Checked), so a store written for another
// database implements consent.Store, runs storetest, and is given only
// values that every store can keep.
package store
