// Package retain will hold the Retain API, single and batch (§4.8, §4.9,
// D22, D23), the conversion of retained recordings to MP4 and the purge of
// expired data (D26).
//
// Not built yet: this package holds only its documentation.
package retain
