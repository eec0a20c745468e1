package consent

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"

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

// InsightsFailed is the status of insights whose job failed for good: no
// statement was made.
const InsightsFailed = "failed"

// MaxVelocity is where Tx.Velocity stops counting: a count reads at most
// this, so that the work of one count is bounded.
const MaxVelocity = 1000

// Velocity counts the certificates a company issued in the hour and in the
// day before one of its certificates, from the same client address, the
// same email digest and the same mobile digest (D50).
type Velocity = signed.Velocity

// VelocityCounts are the counts of one window.
type VelocityCounts = signed.VelocityCounts

// InsightsRules are a company's thresholds of the bot verdict of its
// certificates (D50; package insights documents each rule and its
// default). A zero threshold is its default; a negative one turns its
// rule off: a negative MinKeystrokes, like a negative MaxKeysPerMinute,
// turns typing_too_fast off.
type InsightsRules struct {
	MinSecondsOnPage float64 `json:"min_seconds_on_page,omitempty"`
	MaxKeysPerMinute float64 `json:"max_keys_per_minute,omitempty"`
	MinKeystrokes    int     `json:"min_keystrokes,omitempty"`
	SuspectsForBot   int     `json:"suspects_for_bot,omitempty"`
	MaxPerHour       int     `json:"max_per_hour,omitempty"`
	MaxPerDay        int     `json:"max_per_day,omitempty"`
}

// maxThreshold bounds every threshold of InsightsRules, either sign.
const maxThreshold = 1e6

// Check refuses rules that are no thresholds: a number that is not finite
// or beyond ±1,000,000 (Invalid, naming it).
func (r InsightsRules) Check() error {
	for _, f := range []struct {
		name string
		v    float64
	}{
		{"min_seconds_on_page", r.MinSecondsOnPage}, {"max_keys_per_minute", r.MaxKeysPerMinute},
		{"min_keystrokes", float64(r.MinKeystrokes)}, {"suspects_for_bot", float64(r.SuspectsForBot)},
		{"max_per_hour", float64(r.MaxPerHour)}, {"max_per_day", float64(r.MaxPerDay)},
	} {
		if !(math.Abs(f.v) <= maxThreshold) { // NaN too
			return Errorf(Invalid, "insights_rules.%s must be a number from -1000000 to 1000000", f.name)
		}
	}
	return nil
}

// Insights is the state of a certificate's insights (D50): enqueued when
// the certificate is issued (pending), then the signed statement of the
// signals its recording and request gave and of the bot verdict. Its
// Status is InsightsPending, InsightsDone or InsightsFailed and its
// Statement a signed.InsightsStatement; Check (Evidence's) checks it
// before a store writes it (CreateInsights, UpdateInsights).
type Insights struct {
	Evidence
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
