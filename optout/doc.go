// Package optout will hold consumer revocation (service.md §4.6): by
// certificate id, email or mobile within a company, in one transaction,
// recorded for good (D16–D19).
//
// Not built yet: this package holds only its documentation.
package optout
