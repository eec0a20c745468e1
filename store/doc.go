// Package store is the home of consentkit's storage backends, each an
// implementation of consent.Store: memstore (in memory), sqlitestore
// (SQLite, the embedded default) and pgstore (PostgreSQL). The conformance
// suite in storetest is what makes them interchangeable.
//
//	st, err := sqlitestore.Open("consent.db", sqlitestore.Config{}) // or memstore.New(), pgstore.Open(ctx, url)
//	defer st.Close()
//	err = st.Migrate(ctx)
//	svc, err := consentkit.NewService(st, consentkit.Config{})
//
// GroupCommit configures how the SQL stores run concurrent writes together.
//
// A store does storage only: exact round trips, NotFound and Conflict,
// transactions. The Service checks every value and argument of a call
// before a store sees it (consentkit.Checked), so a store written for another
// database implements consent.Store, runs storetest, and is given only
// values that every store can keep.
package store
