package consent

import (
	"encoding/json"
	"strings"
	"time"
)

// Profile is a buyer's audit profile (D51) as a store keeps it: a
// company's named rules, which a verification names to grade the
// certificate by. Package profile defines the rules and grades by them;
// to the store they are JSON text.
type Profile struct {
	CompanyID string
	Name      string // ValidProfileName
	// Rules are the profile's rules (profile.Rules) as a JSON object of at
	// most MaxProfileRules bytes.
	Rules     json.RawMessage
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Bounds of a company's profiles.
const (
	MaxProfiles     = 20        // profiles of one company
	MaxProfileRules = 1_000_000 // bytes of one profile's rules
)

// ValidProfileName reports whether name may name a profile: 1 to 64 bytes
// of ASCII letters, digits, '-', '_' and '.', not dots alone, so that it
// reads the same in a URL path ("." and ".." are path steps), a JSON body
// and a command line.
func ValidProfileName(name string) bool {
	if len(name) == 0 || len(name) > 64 || strings.Trim(name, ".") == "" {
		return false
	}
	for _, c := range []byte(name) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
		if !ok {
			return false
		}
	}
	return true
}

// CheckProfileName returns an Invalid error naming field when name is not
// ValidProfileName.
func CheckProfileName(field, name string) error {
	if !ValidProfileName(name) {
		return Errorf(Invalid, "%s must be 1 to 64 letters, digits, '-', '_' or '.'", field)
	}
	return nil
}

// Check checks p before a store writes it: its key, its name, its times,
// and that its rules are a JSON object of at most MaxProfileRules bytes
// of ValidText. What the rules say is package profile's to check.
func (p *Profile) Check() error {
	if err := CheckKeys("company_id", p.CompanyID); err != nil {
		return err
	}
	if err := CheckProfileName("name", p.Name); err != nil {
		return err
	}
	if err := checkTimes([]string{"created_at", "updated_at"}, p.CreatedAt, p.UpdatedAt); err != nil {
		return err
	}
	var rules map[string]json.RawMessage
	if len(p.Rules) > MaxProfileRules || !ValidText(string(p.Rules)) || json.Unmarshal(p.Rules, &rules) != nil || rules == nil {
		return Errorf(Invalid, "rules must be a JSON object of at most %d bytes of text", MaxProfileRules)
	}
	return nil
}
