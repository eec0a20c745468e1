// Package store is the home of consentkit's storage backends, each an
// implementation of consent.Store: memstore (in memory), sqlitestore
// (SQLite, the embedded default) and pgstore (PostgreSQL). The conformance
// suite in storetest is what makes them interchangeable.
package store
