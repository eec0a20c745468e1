package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/insights"
	"github.com/consentkit/consentkit/profile"
	"github.com/consentkit/consentkit/verify"
)

// profilesData is the profiles tab: the company's audit profiles (D51),
// and the form to put one, holding what the operator sent when it was
// refused.
type profilesData struct {
	Profiles []profileView
	Name     string
	Rules    string
}

// profileView is a profile as the tab shows it: its rules as indented
// JSON.
type profileView struct {
	*profile.Profile
	RulesJSON string
}

func (h *Handler) profiles(w http.ResponseWriter, r *http.Request, p *page) error {
	if err := h.companyPage(r, p, "profiles", "profiles", "Audit profiles"); err != nil {
		return err
	}
	return h.loadProfiles(r, p, profilesData{})
}

func (h *Handler) loadProfiles(r *http.Request, p *page, d profilesData) error {
	list, err := h.auditProfiles.List(r.Context(), p.Company.ID)
	if err != nil {
		return err
	}
	for _, pr := range list {
		b, err := json.MarshalIndent(pr.Rules, "", "  ")
		if err != nil {
			return err
		}
		d.Profiles = append(d.Profiles, profileView{Profile: pr, RulesJSON: string(b)})
	}
	p.Data = d
	return nil
}

// putProfile creates or replaces a profile from the form: its name and its
// rules as JSON, one object with nothing after it, a member that is no
// rule refused (the operator API ignores one, D29; a form is typed by a
// person). A refusal shows the tab again with the error and what was
// sent, answered 400, and changes nothing.
func (h *Handler) putProfile(w http.ResponseWriter, r *http.Request, p *page) error {
	if err := h.companyPage(r, p, "profiles", "profiles", "Audit profiles"); err != nil {
		return err
	}
	name, text := strings.TrimSpace(r.PostFormValue("name")), r.PostFormValue("rules")
	rules, err := profile.ParseRules([]byte(text))
	if err != nil {
		err = consent.Errorf(consent.Invalid, "rules: %v", err)
	} else {
		_, err = h.auditProfiles.Put(r.Context(), p.Company.ID, name, rules)
	}
	if refused, err := h.refuse(w, p, err, func() error {
		return h.loadProfiles(r, p, profilesData{Name: name, Rules: text})
	}); refused || err != nil {
		return err
	}
	h.redirectTo(p, "/companies/"+p.Company.ID+"/profiles", "Profile "+name+" saved.")
	return nil
}

func (h *Handler) deleteProfile(w http.ResponseWriter, r *http.Request, p *page) error {
	if err := h.companyPage(r, p, "profiles", "profiles", "Audit profiles"); err != nil {
		return err
	}
	name := r.PathValue("name")
	if err := h.auditProfiles.Delete(r.Context(), p.Company.ID, name); err != nil {
		return err
	}
	h.redirectTo(p, "/companies/"+p.Company.ID+"/profiles", "Profile "+name+" deleted.")
	return nil
}

// gradeView is a certificate's grade by the audit profile the page was
// asked for (?company= and ?profile=, D51): a profile of any company,
// graded as a verification by that company would grade it. It holds the
// company chosen, the companies to suggest, the names of the company's
// profiles to choose from, and the grade or why there is none.
type gradeView struct {
	// Company is the company whose profile grades: the certificate's
	// when none was asked for. Owner says it is the certificate's.
	Company string
	Owner   bool
	// Authorized says the certificate's company lets Company verify its
	// certificates as a third party (D9); when not, a verification by
	// Company is refused, and the grade shows what it would be.
	Authorized bool
	// Suggest are the companies the chooser offers: the certificate's and
	// those it authorizes; any other may be typed.
	Suggest []string
	Names   []string
	Profile string
	Error   string
	// Refused is what a verification of the certificate answers instead
	// of a grade, "409 certificate integrity check failed" or "403 This
	// session has opted out"; "" when it would grade it. When set,
	// Graded is nil: a certificate is graded only as it would be.
	Refused string
	Graded  *profile.Graded
}

// readGrade reads, inside tx at now, the profile names of the company
// judge (owner's, the certificate's company, when "") and, when name is
// one of them, grades cert by it as a verification by judge would
// (verify.Facts): a, its attestation as it stands, checked (nil: none or
// not holding), and the verdict asked now by judge's rules — asked, the
// one the page computed by owner's, when judge is owner. An unknown or
// malformed company or profile is said in the view, not an error.
// refused, when not "", is what a verification answers instead (the
// certificate fails its integrity check, or is revoked): no grade then.
// inFinding, when not "", is why in does not hold
// (consentkit.Service.CheckInsights): a verification whose profile grades
// verdicts reads the insights and refuses them as it refuses a changed
// certificate, so a profile with verdicts grades nothing then either.
func readGrade(ctx context.Context, svc *consentkit.Service, tx consent.Tx, owner *consent.Company, cert *consent.Certificate,
	a *consent.Attestation, in *consent.Insights, inFinding string, asked *insights.Asked, now time.Time, judge, name, refused string) (*gradeView, error) {
	if judge == "" {
		judge = cert.CompanyID
	}
	g := &gradeView{Company: judge, Owner: judge == cert.CompanyID, Profile: name, Suggest: []string{cert.CompanyID}}
	if owner.ThirdPartyVerificationEnabled {
		g.Suggest = append(g.Suggest, owner.AuthorizedThirdParties...)
	}
	if !g.Owner {
		if err := consent.CheckID("company", judge); err != nil {
			g.Error = consent.ErrorMessage(err) + "."
			return g, nil
		}
		_, err := tx.Company(ctx, judge)
		if consent.ErrorCode(err) == consent.NotFound {
			g.Error = "There is no company " + judge + "."
			return g, nil
		}
		if err != nil {
			return nil, err
		}
		g.Authorized = owner.Authorizes(judge)
	}
	list, err := tx.Profiles(ctx, judge)
	if err != nil {
		return nil, err
	}
	var chosen *consent.Profile
	for _, p := range list {
		g.Names = append(g.Names, p.Name)
		if p.Name == name {
			chosen = p
		}
	}
	switch {
	case name == "":
		return g, nil
	case chosen == nil && g.Owner:
		g.Error = "The company has no profile " + name + "."
		return g, nil
	case chosen == nil:
		g.Error = "Company " + judge + " has no profile " + name + "."
		return g, nil
	case refused != "":
		g.Refused = refused
		return g, nil
	}
	pr, err := profile.Decode(chosen)
	if err != nil {
		return nil, err
	}
	if inFinding != "" && pr.Rules.Verdicts != nil {
		g.Refused = strconv.Itoa(http.StatusConflict) + " " + consent.ErrorMessage(consent.ErrIntegrity)
		return g, nil
	}
	// asked is nil when the insights' statement cannot be read: no
	// verdict, by any company's rules.
	if !g.Owner && asked != nil && pr.Rules.Verdicts != nil {
		if asked, err = insights.Ask(ctx, svc, tx, cert, in, now, judge); err != nil {
			return nil, err
		}
	}
	graded := profile.Grade(&pr.Rules, verify.Facts(cert, now, verify.AttestationOf(a), verify.InsightsOf(in, asked)))
	g.Graded = &graded
	return g, nil
}

// foundText says in a line what a rule found (profile.Found's fields that
// are set), for the grade's table.
func foundText(f profile.Found) string {
	b, err := json.Marshal(f)
	if err != nil {
		return ""
	}
	b = bytes.TrimSuffix(bytes.TrimPrefix(b, []byte("{")), []byte("}"))
	return strings.ReplaceAll(string(b), `,"`, `, "`)
}
