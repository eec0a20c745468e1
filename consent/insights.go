package consent

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	"github.com/consentkit/consentkit/signed"
)

// JobInsights is the kind of the job that computes a certificate's
// insights right after consent (D50); its key is the certificate's id.
const JobInsights = "insights"

// Statuses of Insights (D50).
const (
	InsightsPending = "pending" // enqueued, not computed yet
	InsightsDone    = "done"    // computed: the statement holds them, signed
)

// Insights is the state of a certificate's insights (D50): enqueued when
// the certificate is issued (pending), then the signed statement of the
// signals its recording and request gave and of the bot verdict.
type Insights struct {
	CertificateID string
	CompanyID     string
	Status        string // one of the Insights… statuses
	// Statement is the signed statement's JSON (signed.InsightsStatement),
	// with its Signature and KeyID; empty while pending.
	Statement []byte
	Signature []byte
	KeyID     string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Check checks in before a store writes it (CreateInsights,
// UpdateInsights): its keys, texts and times.
func (in *Insights) Check() error {
	if err := CheckKeys("certificate_id", in.CertificateID, "company_id", in.CompanyID); err != nil {
		return err
	}
	if err := checkTexts("status", in.Status, "key_id", in.KeyID); err != nil {
		return err
	}
	if !ValidText(string(in.Statement)) {
		return Errorf(Invalid, "statement must be valid UTF-8 text")
	}
	return checkTimes([]string{"created_at", "updated_at"}, in.CreatedAt, in.UpdatedAt)
}

// Proof returns in's signed statement as certificate-info answers it, for
// an offline check (signed.InsightsProof.Verify); nil while in is pending.
func (in *Insights) Proof() (*signed.InsightsProof, error) {
	if len(in.Statement) == 0 {
		return nil, nil
	}
	var st signed.InsightsStatement
	if err := json.Unmarshal(in.Statement, &st); err != nil {
		return nil, fmt.Errorf("consent: the statement of the insights of %s: %w", in.CertificateID, err)
	}
	return &signed.InsightsProof{Statement: &st, KeyID: in.KeyID, Signature: base64.StdEncoding.EncodeToString(in.Signature)}, nil
}
