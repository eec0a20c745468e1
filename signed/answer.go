package signed

import (
	"fmt"
	"slices"
)

// The members of a certificate-info answer that stand beside the
// certificate's own signed content (Proof): its attestation (D49) and its
// insights (D50), each with a statement signed apart. The server writes
// them with these types and an offline check reads them with the same.

// AttestationAnswer is a certificate's attestation as certificate-info
// answers it: its status, the statement's main facts and, once measured,
// the signed statement itself (StatementProof), to check offline.
type AttestationAnswer struct {
	Status           string       `json:"status"`
	Reason           string       `json:"reason,omitempty"`
	ScreenshotSHA256 string       `json:"screenshot_sha256,omitempty"`
	Differences      []Difference `json:"differences,omitempty"`
	*StatementProof
}

// InsightsAnswer is a certificate's insights as certificate-info answers
// them: the status and, once computed, the signals as the statement writes
// them and the signed statement itself (InsightsProof), to check offline.
// Computed when asked and never signed (D50): AskedAt, LeadAgeSeconds,
// Velocity and Bot, the verdict at AskedAt (the statement's "bot" is the
// verdict at issue).
type InsightsAnswer struct {
	Status         string    `json:"status"`
	AskedAt        string    `json:"asked_at"`
	LeadAgeSeconds *int64    `json:"lead_age_seconds"`
	Velocity       *Velocity `json:"velocity"`
	Bot            *AskedBot `json:"bot,omitempty"`
	*InsightsSignals
	*InsightsProof
}

// Velocity counts a company's certificates in the hour and the day before
// one, from the same client address, email digest and mobile digest.
type Velocity struct {
	Hour VelocityCounts `json:"hour"`
	Day  VelocityCounts `json:"day"`
}

// VelocityCounts are the counts of one window.
type VelocityCounts struct {
	ClientIP int `json:"client_ip"`
	Email    int `json:"email"`
	Mobile   int `json:"mobile"`
}

// AskedBot is the bot verdict when asked: the signed statement's at issue,
// with the reasons found when asked (AskedReasons, also in Reasons).
type AskedBot struct {
	Verdict      string   `json:"verdict"`
	Reasons      []string `json:"reasons"`
	AskedReasons []string `json:"asked_reasons"`
}

// Severity orders the verdicts: human 0, suspect 1, bot 2; -1 for a word
// that is not a verdict.
func Severity(verdict string) int {
	return slices.Index([]string{"human", "suspect", "bot"}, verdict)
}

// Check says how b is not st, the statement's verdict, with only asked
// reasons added; "" when it is. b may be more severe than st (the added
// reasons, or rules changed since), never milder.
func (b *AskedBot) Check(st InsightsBot) string {
	var signedPart []string
	for _, r := range b.Reasons {
		if !slices.Contains(b.AskedReasons, r) {
			signedPart = append(signedPart, r)
		}
	}
	for _, r := range b.AskedReasons {
		switch {
		case !slices.Contains(b.Reasons, r):
			return fmt.Sprintf("the asked reason %q is not among its reasons", r)
		case slices.Contains(st.Reasons, r):
			return fmt.Sprintf("the reason %q is signed, not asked", r)
		}
	}
	if !slices.Equal(signedPart, st.Reasons) && len(signedPart)+len(st.Reasons) > 0 {
		return fmt.Sprintf("its reasons %v, less those asked %v, are not the signed %v", b.Reasons, b.AskedReasons, st.Reasons)
	}
	if shown, signed := Severity(b.Verdict), Severity(st.Verdict); shown < 0 || shown < signed {
		return fmt.Sprintf("%q is milder than the signed %q", b.Verdict, st.Verdict)
	}
	return ""
}
