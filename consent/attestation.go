package consent

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/consentkit/consentkit/signed"
)

// JobAttest is the kind of the job that attests a certificate (D49); its
// key is the certificate's id.
const JobAttest = "attest"

// Statuses of an Attestation (D49).
const (
	AttestationPending     = "pending"     // asked for, not measured yet
	AttestationAttested    = "attested"    // the replay measured what the browser claimed
	AttestationMismatch    = "mismatch"    // it measured otherwise: the statement lists each difference
	AttestationUnavailable = "unavailable" // it could not measure: the statement says why
)

// Attestation is the state of a certificate's attestation (D49): asked
// for (pending), then the signed statement of what a replay of its
// recording measured at the consent moment. The screenshot lives in the
// video store, never in the database.
// Its Status is one of the Attestation… statuses and its Statement a
// signed.Statement.
type Attestation struct {
	Evidence
	// Screenshot is the video store's key of the PNG at the consent
	// moment; "" when there is none.
	Screenshot string
}

// Check checks a before a store writes it (CreateAttestation,
// UpdateAttestation): its keys, texts and times.
func (a *Attestation) Check() error { return a.check("screenshot", a.Screenshot) }

// Proof returns a's signed statement as certificate-info answers it, for
// an offline check (signed.StatementProof.Verify); nil while a is pending.
func (a *Attestation) Proof() (*signed.StatementProof, error) {
	if len(a.Statement) == 0 {
		return nil, nil
	}
	var st signed.Statement
	if err := json.Unmarshal(a.Statement, &st); err != nil {
		return nil, fmt.Errorf("consent: the statement of the attestation of %s: %w", a.CertificateID, err)
	}
	return &signed.StatementProof{Statement: &st, KeyID: a.KeyID, Signature: base64.StdEncoding.EncodeToString(a.Signature)}, nil
}

// ScreenshotFile describes a's screenshot for the video store's Open: its
// Path, and the SHA-256 its statement signs, so that a store that checks
// what it reads checks it against that; zero when a has no screenshot.
func (a *Attestation) ScreenshotFile() Video {
	v := Video{Path: a.Screenshot}
	if p, err := a.Proof(); err == nil && p != nil && a.Screenshot != "" {
		if sum, err := hex.DecodeString(p.Statement.ScreenshotSHA256); err == nil && len(sum) == len(v.SHA256) {
			copy(v.SHA256[:], sum)
		}
	}
	return v
}
