package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/insights"
	"github.com/consentkit/consentkit/profile"
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
	var rules profile.Rules
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	err := dec.Decode(&rules)
	if err == nil {
		if _, next := dec.Token(); next != io.EOF {
			err = errors.New("more than one JSON value")
		}
	}
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

// gradeView is a certificate's grade by the profile the page was asked
// for (?profile=): the names to choose from, and the grade or why there
// is none.
type gradeView struct {
	Names   []string
	Profile string
	Error   string
	Graded  *profile.Graded
}

// readGrade reads, inside tx at now, the company's profile names and, when
// name is one of them, grades cert by it with the facts the page shows:
// its attestation as it stands and the verdict as computed now.
func readGrade(ctx context.Context, tx consent.Tx, cert *consent.Certificate, a *consent.Attestation, in *consent.Insights,
	asked *insights.Asked, now time.Time, name string) (*gradeView, error) {
	list, err := tx.Profiles(ctx, cert.CompanyID)
	if err != nil {
		return nil, err
	}
	g := &gradeView{Profile: name}
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
	case chosen == nil:
		g.Error = "The company has no profile " + name + "."
		return g, nil
	}
	pr, err := profile.Decode(chosen)
	if err != nil {
		return nil, err
	}
	f := profile.Facts{Records: cert.Records, LeadAgeSeconds: cert.LeadAgeSeconds(now)}
	if a != nil {
		f.Attestation = a.Status
	}
	if in != nil {
		f.Insights = in.Status
	}
	if asked != nil && asked.Bot != nil {
		f.Verdict = string(asked.Bot.Verdict)
		for _, reason := range asked.Bot.Reasons {
			f.Reasons = append(f.Reasons, string(reason))
		}
	}
	graded := profile.Grade(&pr.Rules, f)
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
