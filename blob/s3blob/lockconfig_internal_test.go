package s3blob

import (
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// lockConfiguration refuses a default retention rule, whatever its mode
// and period, and accepts Object Lock without one, or none (the decision
// New makes; TestDefaultRetentionRefused asks a real server).
func TestLockConfiguration(t *testing.T) {
	enabled := types.ObjectLockEnabledEnabled
	rule := func(d types.DefaultRetention) *types.ObjectLockConfiguration {
		return &types.ObjectLockConfiguration{ObjectLockEnabled: enabled, Rule: &types.ObjectLockRule{DefaultRetention: &d}}
	}
	for _, c := range []struct {
		name    string
		cfg     *types.ObjectLockConfiguration
		locking bool
		refused bool
	}{
		{"none", nil, false, false},
		{"not enabled", &types.ObjectLockConfiguration{}, false, false},
		{"enabled", &types.ObjectLockConfiguration{ObjectLockEnabled: enabled}, true, false},
		{"enabled, empty rule", &types.ObjectLockConfiguration{ObjectLockEnabled: enabled, Rule: &types.ObjectLockRule{}}, true, false},
		{"compliance, days", rule(types.DefaultRetention{Mode: types.ObjectLockRetentionModeCompliance, Days: aws.Int32(30)}), true, true},
		{"governance, years", rule(types.DefaultRetention{Mode: types.ObjectLockRetentionModeGovernance, Years: aws.Int32(5)}), true, true},
	} {
		locking, err := lockConfiguration("b", c.cfg)
		if locking != c.locking || errors.Is(err, ErrDefaultRetention) != c.refused || (err != nil) != c.refused {
			t.Errorf("%s: %v, %v; want locking %v, refused %v", c.name, locking, err, c.locking, c.refused)
		}
	}
}
