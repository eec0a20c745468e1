package profile

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
)

// Profiles manages the audit profiles of a Service's companies (D51): at
// most consent.MaxProfiles a company, each named (consent.ValidProfileName)
// and holding at least one rule. Each change is audited, as the Service's
// own changes are.
type Profiles struct {
	Service *consentkit.Service
}

// maxAuditedRules is the most bytes of rules an audit entry holds; larger
// rules are recorded by their SHA-256 alone (consent.MaxAuditDetail bounds
// an entry's detail).
const maxAuditedRules = 8 << 10

// putDetail is the Detail of a profile.put entry: the profile's name,
// whether it was created, its rules' SHA-256 and, when they are short
// enough, the rules themselves.
type putDetail struct {
	Created     bool            `json:"created"`
	Name        string          `json:"name"`
	Rules       json.RawMessage `json:"rules,omitempty"`
	RulesSHA256 string          `json:"rules_sha256"`
}

// Profile is a company's audit profile with its rules.
type Profile struct {
	Name      string
	Rules     Rules
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Decode returns the profile that a store keeps as p.
func Decode(p *consent.Profile) (*Profile, error) {
	out := &Profile{Name: p.Name, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
	if err := json.Unmarshal(p.Rules, &out.Rules); err != nil {
		return nil, fmt.Errorf("profile: the rules of %s of %s: %w", p.Name, p.CompanyID, err)
	}
	return out, nil
}

// Put creates or replaces the company's profile of that name and returns
// it. Invalid when the name or the rules are not acceptable
// (consent.ValidProfileName, Rules.Check) or when it would be the
// company's profile past consent.MaxProfiles; NotFound when the company
// does not exist.
func (m Profiles) Put(ctx context.Context, companyID, name string, rules Rules) (*Profile, error) {
	p, detail, err := m.prepare(companyID, name, rules)
	if err != nil {
		return nil, err
	}
	audit := &consentkit.AuditParams{CompanyID: companyID, Action: consent.AuditProfilePut, Target: name, Detail: detail}
	if err := m.Service.UpdateAudited(ctx, audit, func(tx consent.Tx) error { return store(ctx, tx, p, detail) }); err != nil {
		return nil, err
	}
	return &Profile{Name: name, Rules: rules, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}, nil
}

// PutTx is Put inside tx, its audit entry appended in tx; a refusal
// appends none (the caller's transaction is to be rolled back).
func (m Profiles) PutTx(ctx context.Context, tx consent.Tx, companyID, name string, rules Rules) (*Profile, error) {
	p, detail, err := m.prepare(companyID, name, rules)
	if err != nil {
		return nil, err
	}
	if err := store(ctx, tx, p, detail); err != nil {
		return nil, err
	}
	err = m.Service.Audit(ctx, tx, consentkit.AuditParams{CompanyID: companyID, Action: consent.AuditProfilePut, Target: name, Detail: detail})
	if err != nil {
		return nil, err
	}
	return &Profile{Name: name, Rules: rules, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}, nil
}

// prepare checks a profile to put and returns it as a store keeps it,
// with the detail of its audit entry.
func (m Profiles) prepare(companyID, name string, rules Rules) (*consent.Profile, *putDetail, error) {
	if err := consent.CheckID("company_id", companyID); err != nil {
		return nil, nil, err
	}
	if err := consent.CheckProfileName("name", name); err != nil {
		return nil, nil, err
	}
	if err := rules.Check(); err != nil {
		return nil, nil, err
	}
	enc, err := json.Marshal(rules)
	if err != nil {
		return nil, nil, err
	}
	if len(enc) > consent.MaxProfileRules { // texts within Check's bounds, escaped past the store's
		return nil, nil, consent.Errorf(consent.Invalid, "the rules take %d bytes as JSON, more than the %d a profile may hold", len(enc), consent.MaxProfileRules)
	}
	sum := sha256.Sum256(enc)
	detail := &putDetail{Name: name, RulesSHA256: hex.EncodeToString(sum[:])}
	if len(enc) <= maxAuditedRules {
		detail.Rules = enc
	}
	now := m.Service.Now()
	return &consent.Profile{CompanyID: companyID, Name: name, Rules: enc, CreatedAt: now, UpdatedAt: now}, detail, nil
}

// store puts p in tx: it keeps the creation time of the profile it
// replaces, and refuses a new profile past consent.MaxProfiles. It locks
// the company first, so that concurrent puts count its profiles in turn.
func store(ctx context.Context, tx consent.Tx, p *consent.Profile, detail *putDetail) error {
	// A store may run this again after rolling back a run (consent.Store):
	// each run starts from what prepare made.
	p.CreatedAt, detail.Created = p.UpdatedAt, false
	if err := tx.LockCompany(ctx, p.CompanyID); err != nil {
		return err
	}
	old, err := tx.Profile(ctx, p.CompanyID, p.Name)
	switch {
	case err == nil:
		p.CreatedAt = old.CreatedAt
	case consent.ErrorCode(err) != consent.NotFound:
		return err
	default:
		list, err := tx.Profiles(ctx, p.CompanyID)
		if err != nil {
			return err
		}
		if len(list) >= consent.MaxProfiles {
			return consent.Errorf(consent.Invalid, "a company holds at most %d profiles", consent.MaxProfiles)
		}
		detail.Created = true
	}
	return tx.PutProfile(ctx, p)
}

// Get returns the company's profile of that name. NotFound when there is
// none.
func (m Profiles) Get(ctx context.Context, companyID, name string) (*Profile, error) {
	var p *consent.Profile
	err := m.Service.Store().View(ctx, func(tx consent.Tx) error {
		var err error
		p, err = tx.Profile(ctx, companyID, name)
		return err
	})
	if err != nil {
		return nil, err
	}
	return Decode(p)
}

// List returns the company's profiles ordered by name. NotFound when the
// company does not exist.
func (m Profiles) List(ctx context.Context, companyID string) ([]*Profile, error) {
	var list []*consent.Profile
	err := m.Service.Store().View(ctx, func(tx consent.Tx) error {
		if _, err := tx.Company(ctx, companyID); err != nil {
			return err
		}
		var err error
		list, err = tx.Profiles(ctx, companyID)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]*Profile, 0, len(list))
	for _, p := range list {
		d, err := Decode(p)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// Delete deletes the company's profile of that name. NotFound when there
// is none.
func (m Profiles) Delete(ctx context.Context, companyID, name string) error {
	audit := &consentkit.AuditParams{CompanyID: companyID, Action: consent.AuditProfileDelete, Target: name}
	return m.Service.UpdateAudited(ctx, audit, func(tx consent.Tx) error { return tx.DeleteProfile(ctx, companyID, name) })
}
