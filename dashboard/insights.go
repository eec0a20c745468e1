package dashboard

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/insights"
	"github.com/consentkit/consentkit/signed"
)

// insightsView is a certificate's insights (D50) as its page shows them:
// the status of the row; once computed, the signed statement's signals
// with whether its signature holds; and what is computed now, never
// signed (lead age, velocity, the verdict with the reasons found now).
type insightsView struct {
	Status string
	// Statement is nil while pending, when failed, or when the stored
	// statement cannot be read (Check then says so).
	Statement  *signed.InsightsStatement
	MeasuredAt string // the statement's time as the page shows times
	Signed     bool
	KeyID      string
	// Check is "" when the insights hold
	// (consentkit.Service.CheckInsights), else why they cannot be
	// trusted.
	Check string
	// Asked are the facts computed now (insights.Ask); nil when the
	// stored statement cannot be read.
	Asked *insights.Asked
	// Verdict is the verdict now, "" while there is none; Reasons are its
	// reasons, each marked signed or found when asked.
	Verdict string
	Reasons []reasonView
	// SignedVerdict is the statement's verdict, the one at issue.
	SignedVerdict string
}

// reasonView is one reason of a verdict.
type reasonView struct {
	Code    string
	Verdict string // what the reason alone makes the verdict
	Meaning string
	Asked   bool // found when asked, not in the signed statement
}

// reasonMeanings say in a line what each reason code means (package
// insights documents them).
var reasonMeanings = map[insights.Reason]string{
	insights.ReasonNoRecording:            "the recording holds no events",
	insights.ReasonNoSnapshot:             "the recording holds no full snapshot: no page was recorded",
	insights.ReasonNotABrowser:            "the user agent is empty, not a browser's, or a crawler's",
	insights.ReasonHeadlessUserAgent:      "the user agent is a headless browser's",
	insights.ReasonWebdriver:              "navigator.webdriver was true at submit: the browser was driven by automation",
	insights.ReasonSubmittedTooFast:       "the consent came sooner after the page loaded than the company's minimum seconds on page",
	insights.ReasonTypingTooFast:          "keys were pressed faster than the company's maximum keys per minute",
	insights.ReasonNoSignals:              "the recording holds no signals event from the snippet",
	insights.ReasonNoPointerOrTouch:       "no pointer move and no touch in the whole session",
	insights.ReasonScriptedInput:          "a field's value was set by a script, not by the person",
	insights.ReasonConsentAfterRevocation: "the consumer had opted out of the company before this consent",
	insights.ReasonAttestationMismatch:    "the attestation's replay measured otherwise than the browser claimed",
	insights.ReasonHighVelocity:           "more of the company's certificates from this address, email or mobile than its hourly or daily maximum",
}

// meaning returns the line that explains a reason code.
func meaning(r insights.Reason) string {
	if m, ok := reasonMeanings[r]; ok {
		return m
	}
	return "a reason this dashboard does not know"
}

// velocityCount shows a count of Tx.Velocity, which stops counting at
// consent.MaxVelocity: a count there may be more.
func velocityCount(n int) string {
	if n >= consent.MaxVelocity {
		return strconv.Itoa(consent.MaxVelocity) + " or more"
	}
	return strconv.Itoa(n)
}

// readInsights reads, inside tx at now, the insights of cert, what
// svc.CheckInsights found of them (the Reason of its
// consentkit.StatementIntegrityError; "" when they hold) and, when they
// hold, what is computed of them when asked; nil, "", nil when the
// certificate has none (it was issued before insights). Insights that do
// not hold are a finding the view shows, not an error.
func readInsights(ctx context.Context, svc *consentkit.Service, tx consent.Tx, cert *consent.Certificate, now time.Time) (*consent.Insights, string, *insights.Asked, error) {
	in, err := tx.Insights(ctx, cert.ID)
	if consent.ErrorCode(err) == consent.NotFound {
		return nil, "", nil, nil
	}
	if err != nil {
		return nil, "", nil, err
	}
	var bad *consentkit.StatementIntegrityError
	switch err := svc.CheckInsights(ctx, tx, cert, in); {
	case errors.As(err, &bad):
		return in, bad.Reason, nil, nil
	case err != nil:
		return nil, "", nil, err
	}
	asked, err := insights.Ask(ctx, svc, tx, cert, in, now, cert.CompanyID) // the operator sees the owner's rules
	return in, "", asked, err
}

// insightsView returns what the page shows of in, the insights of cert,
// with asked computed from them and check what
// consentkit.Service.CheckInsights found (its
// consentkit.StatementIntegrityError's Reason, "" when they hold, the
// one rule verifications and insights.Ask go by); nil when cert has none.
// Insights that do not hold are a finding to show, not an error.
func (h *Handler) insightsView(in *consent.Insights, asked *insights.Asked, check string) *insightsView {
	if in == nil {
		return nil
	}
	v := &insightsView{Status: in.Status, Signed: len(in.Signature) > 0, KeyID: in.KeyID, Asked: asked, Check: check}
	if asked != nil && asked.Bot != nil {
		v.Verdict = string(asked.Bot.Verdict)
		for _, r := range asked.Bot.Reasons {
			v.Reasons = append(v.Reasons, reasonView{Code: string(r), Verdict: string(r.Verdict()), Meaning: meaning(r),
				Asked: slices.Contains(asked.AskedReasons, r)})
		}
	}
	proof, err := in.Proof()
	if err != nil || proof == nil {
		return v
	}
	st := proof.Statement
	v.Statement, v.MeasuredAt, v.SignedVerdict = st, st.MeasuredAt, st.Bot.Verdict
	if t, err := time.Parse(time.RFC3339Nano, st.MeasuredAt); err == nil {
		v.MeasuredAt = t.UTC().Format("2006-01-02 15:04:05 UTC")
	}
	return v
}

// ruleView is one threshold of a company's verdict rules as its page
// shows it.
type ruleView struct {
	Key, Label, Help string
	Effective        string // the threshold the verdict applies, or "off"
	Default          bool   // the company set none: Effective is the default
	Value            string // the form's value: what the company set, "" for the default
	Placeholder      string // the default
}

// ruleField is one threshold of consent.InsightsRules: a float or an int.
type ruleField struct {
	key, label, help string
	float            func(*consent.InsightsRules) *float64
	integer          func(*consent.InsightsRules) *int
}

// ruleFields are the thresholds of the verdict, in the form's order; the
// keys are those of consent.InsightsRules' JSON.
var ruleFields = []ruleField{
	{key: "min_seconds_on_page", label: "Minimum seconds on page", help: "a consent sooner after the page loaded is submitted_too_fast (bot)",
		float: func(r *consent.InsightsRules) *float64 { return &r.MinSecondsOnPage }},
	{key: "max_keys_per_minute", label: "Maximum keys per minute", help: "typing faster is typing_too_fast (bot)",
		float: func(r *consent.InsightsRules) *float64 { return &r.MaxKeysPerMinute }},
	{key: "min_keystrokes", label: "Minimum keystrokes", help: "the fewest key presses whose pace is judged",
		integer: func(r *consent.InsightsRules) *int { return &r.MinKeystrokes }},
	{key: "suspects_for_bot", label: "Suspect reasons for bot", help: "how many suspect reasons together make the verdict bot",
		integer: func(r *consent.InsightsRules) *int { return &r.SuspectsForBot }},
	{key: "max_per_hour", label: "Maximum per hour", help: "more certificates from one address, email or mobile in the hour before is high_velocity (suspect)",
		integer: func(r *consent.InsightsRules) *int { return &r.MaxPerHour }},
	{key: "max_per_day", label: "Maximum per day", help: "more in the day before is high_velocity (suspect)",
		integer: func(r *consent.InsightsRules) *int { return &r.MaxPerDay }},
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// get returns the field of r as text, and whether it is zero.
func (f ruleField) get(r *consent.InsightsRules) (string, bool) {
	if f.float != nil {
		v := *f.float(r)
		return formatFloat(v), v == 0
	}
	v := *f.integer(r)
	return strconv.Itoa(v), v == 0
}

// rulesView returns the company's rules as its page shows them; form,
// when not nil, is what the operator sent, shown again in the form.
func rulesView(rules consent.InsightsRules, form map[string]string) []ruleView {
	eff := consent.InsightsRules(insights.Rules(rules).WithDefaults())
	defs := consent.InsightsRules(insights.Rules{}.WithDefaults())
	var out []ruleView
	for _, f := range ruleFields {
		set, zero := f.get(&rules)
		e, _ := f.get(&eff)
		def, _ := f.get(&defs)
		v := ruleView{Key: f.key, Label: f.label, Help: f.help, Effective: e, Default: set != e, Placeholder: def}
		if !zero {
			v.Value = set
		}
		if strings.HasPrefix(e, "-") {
			v.Effective = "off"
		}
		if form != nil {
			v.Value = form[f.key]
		}
		out = append(out, v)
	}
	return out
}

// parseRules reads the rules form: an empty field is the default (zero).
func parseRules(r *http.Request) (consent.InsightsRules, map[string]string, error) {
	var rules consent.InsightsRules
	form := map[string]string{}
	for _, f := range ruleFields {
		s := strings.TrimSpace(r.PostFormValue(f.key))
		form[f.key] = s
		if s == "" {
			continue
		}
		if f.float != nil {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return rules, form, consent.Errorf(consent.Invalid, "%s must be a number such as 1.5, or empty for the default", f.key)
			}
			*f.float(&rules) = v
			continue
		}
		v, err := strconv.Atoi(s)
		if err != nil {
			return rules, form, consent.Errorf(consent.Invalid, "%s must be a whole number, or empty for the default", f.key)
		}
		*f.integer(&rules) = v
	}
	return rules, form, nil
}

// refuse answers a form whose change err refused as Invalid: the page again,
// as reload loads it, with the error, answered 400, nothing changed; it
// reports whether it did. Any other error is returned as it is.
func (h *Handler) refuse(w http.ResponseWriter, p *page, err error, reload func() error) (bool, error) {
	if consent.ErrorCode(err) != consent.Invalid {
		return false, err
	}
	if err := reload(); err != nil {
		return false, err
	}
	p.Error = messageOf(err)
	h.render(w, p, http.StatusBadRequest)
	p.done = true
	return true, nil
}

// setInsightsRules sets the company's verdict rules from the form
// (Service.SetInsightsRules, audited). Invalid input shows the company's
// page again with the error, answered 400, and changes nothing.
func (h *Handler) setInsightsRules(w http.ResponseWriter, r *http.Request, p *page) error {
	if err := h.companyPage(r, p, "overview", "overview", "Overview"); err != nil {
		return err
	}
	rules, form, err := parseRules(r)
	if err == nil {
		_, err = h.svc.SetInsightsRules(r.Context(), p.Company.ID, rules)
	}
	if refused, err := h.refuse(w, p, err, func() error { return h.loadOverview(r, p, form) }); refused || err != nil {
		return err
	}
	h.redirectTo(p, "/companies/"+p.Company.ID, "Verdict rules saved.")
	return nil
}
