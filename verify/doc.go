// Package verify will hold the Verification API's rules: exact match (D10),
// partial match (D11), certificate info (D15), third-party verification
// (§4.7, D9), the revocation check (D13), charging (D2–D4), and the
// /verify/session and /verify/certificate retention calls (D24, D25).
//
// Not built yet: this package holds only its documentation.
package verify
