package consentkit_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
)

// Settings a caller may make are never refused for the size of their audit
// entry (consent.MaxAuditDetail): a company authorizing 400 third parties
// and a property with the most allowed origins, each a long host name, are
// kept, and their entries record a long list by its length and SHA-256; a
// short list is recorded as it is.
func TestLongSettingsAudited(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		svc, err := consentkit.NewService(open(t), consentkit.Config{})
		if err != nil {
			t.Fatal(err)
		}
		var parties []string
		for i := range 400 {
			parties = append(parties, fmt.Sprintf("lead-buyer-company-number-%04d-of-the-network", i))
		}
		if _, err := svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "bignet", Name: "Big Network",
			ThirdPartyVerificationEnabled: true, AuthorizedThirdParties: parties}); err != nil {
			t.Fatalf("a company authorizing %d third parties: %v", len(parties), err)
		}
		if _, err := svc.AddProperty(ctx, consentkit.PropertyParams{ID: "web", CompanyID: "bignet", Name: "Form",
			AllowedOrigins: []string{"https://forms.bignet.example"}}); err != nil {
			t.Fatal(err)
		}
		var origins []string
		label := strings.Repeat("a", 60)
		for i := range 100 { // the most a property may have, each host a DNS name of 250 bytes
			origins = append(origins, fmt.Sprintf("https://%s.%s.%s.%s.s%03d.example", label, label, label, label, i))
		}
		if _, err := svc.SetAllowedOrigins(ctx, "bignet", "web", origins); err != nil {
			t.Fatalf("%d allowed origins of long host names: %v", len(origins), err)
		}
		entries, err := svc.AuditLog(ctx, consent.AuditQuery{CompanyID: "bignet", Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		digest := func(list []string) string {
			enc, _ := json.Marshal(list)
			sum := sha256.Sum256(enc)
			return hex.EncodeToString(sum[:])
		}
		found := map[string]int{}
		for _, e := range entries {
			var d map[string]any
			if err := json.Unmarshal([]byte(e.Detail), &d); err != nil {
				t.Fatal(err)
			}
			switch e.Action {
			case consent.AuditCompanyCreate:
				if _, ok := d["authorized_third_parties"]; ok || d["authorized_third_parties_count"] != float64(400) ||
					d["authorized_third_parties_sha256"] != digest(parties) {
					t.Errorf("%s detail %.300v; want the parties' count and SHA-256 in place of the list", e.Action, d)
				}
			case consent.AuditPropertyCreate:
				if list, ok := d["allowed_origins"].([]any); !ok || len(list) != 1 {
					t.Errorf("%s detail %v; want the one origin listed", e.Action, d)
				}
			case consent.AuditPropertyUpdate:
				if d["allowed_origins_count"] != float64(100) || d["allowed_origins_sha256"] != digest(origins) {
					t.Errorf("%s detail %.300v; want the origins' count and SHA-256", e.Action, d)
				}
			default:
				continue
			}
			found[e.Action]++
		}
		if len(found) != 3 {
			t.Errorf("entries found %v; want one of each", found)
		}
	})
}
