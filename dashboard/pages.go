package dashboard

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/audit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/insights"
	"github.com/consentkit/consentkit/internal/byterange"
	"github.com/consentkit/consentkit/verify"
	"github.com/consentkit/consentkit/wallet"
	"github.com/consentkit/consentkit/webhook"
)

// page is what a template renders: the layout's fields and the page's Data.
type page struct {
	Template string
	Title    string
	Prefix   string
	Nonce    string // of the page's inline style and script (CSP)
	CSRF     string // of the page's forms
	LoggedIn bool
	Company  *consent.Company // the company the page is about; nil: none
	Tab      string           // the company tab shown
	Error    string           // an error to show
	Notice   string           // a confirmation to show
	Next     string           // login: where to go after
	Data     any

	session  string // the session secret of the login; "" when none
	redirect string // answer with a redirect here instead of the page
	done     bool   // the handler answered itself
}

// Redirects carry a short confirmation to the page they lead to, signed
// for the session (noticeOf): a page shows only a confirmation the
// dashboard made for this login, never a text a link carries.
func (h *Handler) redirectTo(p *page, path, notice string) {
	p.redirect = h.cfg.Prefix + path
	if notice != "" {
		p.redirect += "?" + url.Values{"notice": {notice}, "ns": {h.noticeMAC(p.session, notice)}}.Encode()
	}
}

func (h *Handler) noticeMAC(session, notice string) string {
	return h.sign("notice|" + session + "|" + notice)
}

// noticeOf returns the confirmation that the request's query carries when
// redirectTo made it for the session of p; "" when it did not.
func (h *Handler) noticeOf(r *http.Request, p *page) string {
	q := r.URL.Query()
	n := q.Get("notice")
	if n == "" || p.session == "" || !hmac.Equal([]byte(q.Get("ns")), []byte(h.noticeMAC(p.session, n))) {
		return ""
	}
	return n
}

func urlQueryEscape(s string) string { return url.QueryEscape(s) }

// companyPage loads the request's company into p, for a tab of it.
func (h *Handler) companyPage(r *http.Request, p *page, tab, template, title string) error {
	c, err := h.companyOf(r.Context(), r)
	if err != nil {
		return err
	}
	p.Company, p.Tab, p.Template, p.Title = c, tab, template, title+" · "+c.ID
	p.Notice = h.noticeOf(r, p)
	return nil
}

const companiesPage = 50

// companyRow is a company as the list shows it.
type companyRow struct {
	*consent.Company
	Balance wallet.Amount
}

func (h *Handler) companies(w http.ResponseWriter, r *http.Request, p *page) error {
	ctx := r.Context()
	after := r.URL.Query().Get("after")
	var rows []companyRow
	next := ""
	err := h.svc.Store().View(ctx, func(tx consent.Tx) error {
		rows, next = rows[:0], ""
		ids, err := tx.CompanyIDs(ctx, after, companiesPage+1)
		if err != nil {
			return err
		}
		if len(ids) > companiesPage {
			ids, next = ids[:companiesPage], ids[companiesPage-1]
		}
		for _, id := range ids {
			c, err := tx.Company(ctx, id)
			if err != nil {
				return err
			}
			bal, err := tx.Balance(ctx, id)
			if err != nil {
				return err
			}
			rows = append(rows, companyRow{Company: c, Balance: bal})
		}
		return nil
	})
	if err != nil {
		return err
	}
	p.Template, p.Title, p.Notice = "companies", "Companies", h.noticeOf(r, p)
	p.Data = struct {
		Companies []companyRow
		Next      string
	}{rows, next}
	return nil
}

func (h *Handler) createCompany(w http.ResponseWriter, r *http.Request, p *page) error {
	c, err := h.svc.CreateCompany(r.Context(), consentkit.CompanyParams{ID: strings.TrimSpace(r.PostFormValue("id")), Name: strings.TrimSpace(r.PostFormValue("name"))})
	if err != nil {
		return err
	}
	h.redirectTo(p, "/companies/"+c.ID, "Company "+c.ID+" created.")
	return nil
}

// recentLedger is how many ledger entries the overview shows.
const recentLedger = 20

func (h *Handler) overview(w http.ResponseWriter, r *http.Request, p *page) error {
	if err := h.companyPage(r, p, "overview", "overview", "Overview"); err != nil {
		return err
	}
	return h.loadOverview(r, p, nil)
}

// overviewData is what a company's overview shows.
type overviewData struct {
	Balance    wallet.Amount
	Ledger     []*wallet.Entry
	Properties []*consent.Property
	TopUpKey   string
	// Rules are the thresholds of the bot verdict (D50), each with its
	// value in effect.
	Rules []ruleView
}

// loadOverview loads the overview of p.Company; rulesForm, when not nil,
// is a rules form sent and refused, shown again as the operator wrote it.
func (h *Handler) loadOverview(r *http.Request, p *page, rulesForm map[string]string) error {
	ctx := r.Context()
	d := overviewData{TopUpKey: nonce()}
	err := h.svc.Store().View(ctx, func(tx consent.Tx) error {
		var err error
		if d.Balance, err = tx.Balance(ctx, p.Company.ID); err != nil {
			return err
		}
		if d.Ledger, err = tx.LedgerPage(ctx, consent.Page{CompanyID: p.Company.ID, Limit: recentLedger}); err != nil {
			return err
		}
		d.Properties, err = tx.Properties(ctx, p.Company.ID)
		return err
	})
	if err != nil {
		return err
	}
	d.Rules = rulesView(p.Company.InsightsRules, rulesForm)
	p.Data = d
	return nil
}

// pageOf reads the page of a list that the request's query names: its
// since and until dates (YYYY-MM-DD, UTC; until inclusive) and its cursor
// (before), pageSize items.
func pageOf(r *http.Request, companyID string) (consent.Page, listQuery, error) {
	q := r.URL.Query()
	lq := listQuery{Since: q.Get("since"), Until: q.Get("until")}
	pg := consent.Page{CompanyID: companyID, Limit: pageSize}
	var err error
	if lq.Since != "" {
		if pg.Since, err = time.Parse(time.DateOnly, lq.Since); err != nil {
			return pg, lq, consent.Errorf(consent.Invalid, "since must be a date such as 2026-11-24")
		}
	}
	if lq.Until != "" {
		until, err := time.Parse(time.DateOnly, lq.Until)
		if err != nil {
			return pg, lq, consent.Errorf(consent.Invalid, "until must be a date such as 2026-11-24")
		}
		// The end of the day; none after the last day a store keeps
		// (9999-12-31), as everything comes before it.
		if end := until.AddDate(0, 0, 1); end.Year() <= 9999 {
			pg.Until = end
		}
	}
	pg.Before, err = consent.ParseCursor("before", q.Get("before"))
	return pg, lq, err
}

// pageSize is how many items a page of a list shows.
const pageSize = 50

// listQuery is a list's filter as the page shows it, and the link to its
// next page.
type listQuery struct {
	Since, Until string
	Next         template.URL // query of the next page, encoded; "" when this is the last
}

// next sets the link to the page after one of n items whose last item is
// at last.
func (lq *listQuery) next(n int, last consent.Cursor) {
	if n < pageSize {
		return
	}
	v := url.Values{"before": {last.String()}}
	if lq.Since != "" {
		v.Set("since", lq.Since)
	}
	if lq.Until != "" {
		v.Set("until", lq.Until)
	}
	lq.Next = template.URL(v.Encode()) // encoded: not escaped again as one query value
}

func (h *Handler) ledger(w http.ResponseWriter, r *http.Request, p *page) error {
	if err := h.companyPage(r, p, "overview", "ledger", "Ledger"); err != nil {
		return err
	}
	pg, lq, err := pageOf(r, p.Company.ID)
	if err != nil {
		return err
	}
	es, err := h.svc.LedgerPage(r.Context(), pg)
	if err != nil {
		return err
	}
	if len(es) > 0 {
		last := es[len(es)-1]
		lq.next(len(es), consent.CursorOf(last.CreatedAt, last.ID))
	}
	p.Data = struct {
		Entries []*wallet.Entry
		Query   listQuery
	}{es, lq}
	return nil
}

// topUp credits the wallet. The form carries a key made when it was
// shown, sent as an idempotency key (D40): a form sent twice — a double
// click, a reload of the answer — credits once.
func (h *Handler) topUp(w http.ResponseWriter, r *http.Request, p *page) error {
	c, err := h.companyOf(r.Context(), r)
	if err != nil {
		return err
	}
	amount, err := wallet.ParseAmount(strings.TrimSpace(r.PostFormValue("amount")))
	if err != nil || amount <= 0 {
		return consent.Errorf(consent.Invalid, "amount must be a positive amount such as 25 or 12.50")
	}
	ref := strings.TrimSpace(r.PostFormValue("reference"))
	if ref == "" {
		ref = "dashboard"
	}
	k := &consentkit.Idempotency{Scope: consentkit.OperatorIdempotencyScope(c.ID), Key: r.PostFormValue("key"),
		Fingerprint: sha256.Sum256([]byte("dashboard top-up\n" + amount.String() + "\n" + ref)),
		Answer: func(result any, err error) (int, []byte, bool) {
			if err != nil {
				return 0, nil, false
			}
			return http.StatusOK, []byte(result.(wallet.Amount).String()), true
		}}
	_, err = h.svc.TopUp(consentkit.WithIdempotency(r.Context(), k), c.ID, amount, ref)
	switch {
	case errors.Is(err, consent.ErrReplayed):
		h.redirectTo(p, "/companies/"+c.ID, "That top-up was already made (the form was sent twice); the wallet was credited once.")
		return nil
	case err != nil:
		return err
	}
	h.redirectTo(p, "/companies/"+c.ID, "Wallet topped up by "+money(amount)+".")
	return nil
}

type tokensData struct {
	Tokens []*consent.Token
	Now    time.Time
	// Issued and Secret are set once, on the page that answers the
	// issue: the secret is never shown again.
	Issued *consent.Token
	Secret string
}

func (h *Handler) tokens(w http.ResponseWriter, r *http.Request, p *page) error {
	if err := h.companyPage(r, p, "tokens", "tokens", "Tokens"); err != nil {
		return err
	}
	return h.loadTokens(r, p, nil, "")
}

func (h *Handler) loadTokens(r *http.Request, p *page, issued *consent.Token, secret string) error {
	ctx := r.Context()
	ts, err := h.svc.Tokens(ctx, p.Company.ID)
	p.Data = tokensData{Tokens: ts, Now: h.svc.Now(), Issued: issued, Secret: secret}
	return err
}

func (h *Handler) issueToken(w http.ResponseWriter, r *http.Request, p *page) error {
	if err := h.companyPage(r, p, "tokens", "tokens", "Tokens"); err != nil {
		return err
	}
	params := consentkit.TokenParams{CompanyID: p.Company.ID}
	if r.PostFormValue("retention") != "" {
		params.Permissions = append(params.Permissions, consent.PermissionRetention)
	}
	if d := strings.TrimSpace(r.PostFormValue("days")); d != "" {
		n, err := strconv.Atoi(d)
		if err != nil || n < 1 || n > 3650 {
			return consent.Errorf(consent.Invalid, "days must be a whole number from 1 to 3650, or empty for a token that does not expire")
		}
		params.ExpiresAt = h.svc.Now().AddDate(0, 0, n)
	}
	t, secret, err := h.svc.IssueToken(r.Context(), params)
	if err != nil {
		return err
	}
	p.Notice = "Token " + t.ID + " issued. Copy its secret now: it is not shown again."
	return h.loadTokens(r, p, t, secret)
}

func (h *Handler) revokeToken(w http.ResponseWriter, r *http.Request, p *page) error {
	c, err := h.companyOf(r.Context(), r)
	if err != nil {
		return err
	}
	id := r.PathValue("token")
	if err := h.svc.RevokeToken(r.Context(), c.ID, id); err != nil {
		return err
	}
	h.redirectTo(p, "/companies/"+c.ID+"/tokens", "Token "+id+" revoked.")
	return nil
}

type propertiesData struct {
	Properties []propertyView
}

type propertyView struct {
	*consent.Property
	Snippet string // the script tag to paste into the property's pages
}

// SnippetTag returns the tag that a page of the property embeds to
// capture consent, base being the service's URL.
func SnippetTag(base, propertyID string) string {
	return `<script src="` + strings.TrimSuffix(base, "/") + `/capture/capture.js" data-property-id="` + propertyID + `" async></script>`
}

func (h *Handler) publicURL(r *http.Request) string {
	if h.cfg.PublicURL != "" {
		return h.cfg.PublicURL
	}
	scheme := "http"
	if h.cfg.TrustedProxies.HTTPS(r) {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

func (h *Handler) properties(w http.ResponseWriter, r *http.Request, p *page) error {
	if err := h.companyPage(r, p, "properties", "properties", "Properties"); err != nil {
		return err
	}
	props, err := h.svc.Properties(r.Context(), p.Company.ID)
	base := h.publicURL(r)
	var d propertiesData
	for _, prop := range props {
		d.Properties = append(d.Properties, propertyView{Property: prop, Snippet: SnippetTag(base, prop.ID)})
	}
	p.Data = d
	return err
}

// origins splits a textarea of origins, one a line or separated by commas
// or spaces.
func origins(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\r' || r == '\t' })
}

func (h *Handler) addProperty(w http.ResponseWriter, r *http.Request, p *page) error {
	c, err := h.companyOf(r.Context(), r)
	if err != nil {
		return err
	}
	prop, err := h.svc.AddProperty(r.Context(), consentkit.PropertyParams{
		ID: strings.TrimSpace(r.PostFormValue("id")), CompanyID: c.ID, Name: strings.TrimSpace(r.PostFormValue("name")),
		AllowedOrigins: origins(r.PostFormValue("origins")),
	})
	if err != nil {
		return err
	}
	h.redirectTo(p, "/companies/"+c.ID+"/properties", "Property "+prop.ID+" added.")
	return nil
}

func (h *Handler) setOrigins(w http.ResponseWriter, r *http.Request, p *page) error {
	c, err := h.companyOf(r.Context(), r)
	if err != nil {
		return err
	}
	prop, err := h.svc.SetAllowedOrigins(r.Context(), c.ID, r.PathValue("property"), origins(r.PostFormValue("origins")))
	if err != nil {
		return err
	}
	h.redirectTo(p, "/companies/"+c.ID+"/properties", "Allowed origins of "+prop.ID+" saved.")
	return nil
}

type certificatesData struct {
	By, Q    string // the search: by "email", "mobile" or "id", and its term
	Results  []*consent.Certificate
	Searched bool
	// Without a search: the newest certificates, within the query's dates.
	Recent []*consent.Certificate
	Query  listQuery
}

func (h *Handler) certificates(w http.ResponseWriter, r *http.Request, p *page) error {
	if err := h.companyPage(r, p, "certificates", "certificates", "Certificates"); err != nil {
		return err
	}
	ctx := r.Context()
	q := r.URL.Query()
	d := certificatesData{By: q.Get("by"), Q: strings.TrimSpace(q.Get("q"))}
	if d.By == "" {
		d.By = "email"
	}
	p.Data = &d
	if d.Q == "" {
		pg, lq, err := pageOf(r, p.Company.ID)
		if err != nil {
			return err
		}
		if d.Recent, err = h.svc.CertificatePage(ctx, pg); err != nil {
			return err
		}
		if n := len(d.Recent); n > 0 {
			lq.next(n, consent.CursorOf(d.Recent[n-1].CreatedAt, d.Recent[n-1].ID))
		}
		d.Query = lq
		return nil
	}
	d.Searched = true
	var err error
	switch d.By {
	case "email":
		d.Results, err = h.svc.FindCertificates(ctx, p.Company.ID, d.Q, "")
	case "mobile":
		d.Results, err = h.svc.FindCertificates(ctx, p.Company.ID, "", d.Q)
	case "id":
		var c *consent.Certificate
		c, err = h.svc.CompanyCertificate(ctx, p.Company.ID, d.Q)
		if consent.ErrorCode(err) == consent.NotFound {
			return nil // no result; never another company's
		}
		if c != nil {
			d.Results = []*consent.Certificate{c}
		}
	default:
		return consent.Errorf(consent.Invalid, "search by email, mobile or id")
	}
	return err
}

type certificateData struct {
	Cert      *consent.Certificate
	Records   []recordView
	Session   *consent.Session
	Term      string
	Integrity string // "" when it holds, else why not
	Signed    bool
	Video     bool // a converted video can be played
	// Attestation is the certificate's attestation (D49); nil when none
	// was asked for.
	Attestation *attestationView
	// Insights are the certificate's insights (D50); nil when it has none
	// (issued before insights).
	Insights *insightsView
	// Grade is the certificate's grade by the audit profile asked for
	// (?company= and ?profile=, D51: any company's, as a verification by
	// it would grade), with that company's profiles to choose from.
	Grade *gradeView
}

type recordView struct {
	consent.Record
	Parts []textPart // the text, with the term's occurrences marked
}

type textPart struct {
	Text string
	Mark bool
}

// mark splits text around the case-insensitive occurrences of term. It
// finds them in text lowered rune by rune, and maps each back to the runes
// of text it lowers from: a letter whose lower case is of another length
// in UTF-8 (Ⱥ, the Kelvin sign) moves no mark, and a mark never splits a
// rune.
func mark(text, term string) []textPart {
	if term == "" {
		return []textPart{{Text: text}}
	}
	t := strings.ToLower(term)
	// lower[k] lowers the rune of text at at[k]; at[len(lower)] is len(text).
	var b strings.Builder
	b.Grow(len(text))
	at := make([]int, 0, len(text)+1)
	for i, r := range text {
		n := b.Len()
		b.WriteRune(unicode.ToLower(r))
		for range b.Len() - n {
			at = append(at, i)
		}
	}
	at = append(at, len(text))
	lower := b.String()
	boundary := func(k int) bool { return k == 0 || k == len(lower) || at[k] != at[k-1] }
	var parts []textPart
	from, done := 0, 0 // from: where the search goes on in lower; done: text before it is in parts
	for {
		k := strings.Index(lower[from:], t)
		if k < 0 {
			break
		}
		k += from
		end := k + len(t)
		if !boundary(k) || !boundary(end) {
			from = k + 1
			continue
		}
		if at[k] > done {
			parts = append(parts, textPart{Text: text[done:at[k]]})
		}
		parts = append(parts, textPart{Text: text[at[k]:at[end]], Mark: true})
		from, done = end, at[end]
	}
	if done < len(text) {
		parts = append(parts, textPart{Text: text[done:]})
	}
	return parts
}

func (h *Handler) certificate(w http.ResponseWriter, r *http.Request, p *page) error {
	if err := h.companyPage(r, p, "certificates", "certificate", "Certificate"); err != nil {
		return err
	}
	ctx := r.Context()
	id := r.PathValue("certificate")
	d := certificateData{Term: strings.TrimSpace(r.URL.Query().Get("term"))}
	var recording *consent.Digest
	var attestation *consent.Attestation
	var attestationFinding string // why attestation does not hold; "" when it does
	var in *consent.Insights
	var insightsFinding string // why in does not hold; "" when it does
	var asked *insights.Asked
	err := h.svc.Store().View(ctx, func(tx consent.Tx) error {
		c, err := tx.Certificate(ctx, id)
		if err != nil {
			return err
		}
		if c.CompanyID != p.Company.ID {
			return consent.Errorf(consent.NotFound, "certificate not found")
		}
		d.Cert = c
		attestation, err = tx.Attestation(ctx, c.ID)
		if consent.ErrorCode(err) == consent.NotFound {
			attestation, err = nil, nil
		}
		if err != nil {
			return err
		}
		// A status no signed statement holds is shown as a finding; every
		// verification refuses its certificate (409), so none is graded.
		graded := attestation
		if attestation != nil {
			var bad *consentkit.StatementIntegrityError
			switch err := h.svc.CheckAttestation(ctx, tx, c, attestation); {
			case errors.As(err, &bad):
				attestationFinding, graded = bad.Reason, nil
			case err != nil:
				return err
			}
		}
		// The facts computed when asked are of this transaction's view,
		// as certificate-info's are.
		if in, insightsFinding, asked, err = readInsights(ctx, h.svc, tx, c, h.svc.Now()); err != nil {
			return err
		}
		if c.SessionID != "" {
			ses, err := tx.Session(ctx, c.SessionID)
			switch {
			case consent.ErrorCode(err) == consent.NotFound:
			case err != nil:
				return err
			default:
				d.Session = ses
				// As a verification reads it: a purge committing meanwhile
				// is not taken for tampering.
				if recording, err = verify.RecordingOf(ctx, tx, c); err != nil {
					return err
				}
			}
		}
		// A verification refuses a certificate that fails its integrity
		// check (409), then one revoked (403), before it grades: the page
		// grades neither, and says what a verification would answer.
		var refused string
		if err := h.svc.CheckIntegrity(ctx, tx, c, recording); errors.Is(err, consent.ErrIntegrity) {
			d.Integrity = err.Error()
			refused = strconv.Itoa(http.StatusConflict) + " " + consent.ErrorMessage(consent.ErrIntegrity)
		} else if err != nil {
			return err
		} else if c.Revoked() {
			refused = strconv.Itoa(http.StatusForbidden) + " This session has opted out"
		} else if attestationFinding != "" {
			refused = strconv.Itoa(http.StatusConflict) + " " + consent.ErrorMessage(consent.ErrIntegrity)
		}
		q := r.URL.Query()
		d.Grade, err = readGrade(ctx, h.svc, tx, p.Company, c, graded, in, insightsFinding, asked, h.svc.Now(), strings.TrimSpace(q.Get("company")), q.Get("profile"), refused)
		return err
	})
	if consent.ErrorCode(err) == consent.NotFound {
		return consent.Errorf(consent.NotFound, "certificate %s not found", id)
	}
	if err != nil {
		return err
	}
	d.Attestation = h.attestationView(attestation, attestationFinding)
	d.Insights = h.insightsView(in, asked, insightsFinding)
	d.Signed = len(d.Cert.Signature) > 0
	d.Video = h.cfg.Videos != nil && d.Session != nil && d.Session.VideoStatus == consent.VideoConverted
	for _, rec := range d.Cert.Records {
		d.Records = append(d.Records, recordView{Record: rec, Parts: mark(rec.Text, d.Term)})
	}
	p.Title = "Certificate " + id
	p.Data = d
	return nil
}

// video streams a session's converted MP4, Range requests included.
func (h *Handler) video(w http.ResponseWriter, r *http.Request, p *page) error {
	c, err := h.companyOf(r.Context(), r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	var ses *consent.Session
	err = h.svc.Store().View(ctx, func(tx consent.Tx) error {
		var err error
		ses, err = tx.Session(ctx, r.PathValue("session"))
		return err
	})
	if err != nil {
		return err
	}
	if ses.CompanyID != c.ID || ses.VideoStatus != consent.VideoConverted || h.cfg.Videos == nil {
		return consent.Errorf(consent.NotFound, "no video for this session")
	}
	f, err := h.cfg.Videos.Open(ctx, ses.Video)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // read only: its Close loses nothing
	w.Header().Set("Content-Type", "video/mp4")
	w.Header().Set("Content-Security-Policy", "default-src 'none'")
	byterange.ServeContent(w, r, "", ses.CreatedAt, f)
	p.done = true
	return nil
}

func (h *Handler) revocations(w http.ResponseWriter, r *http.Request, p *page) error {
	if err := h.companyPage(r, p, "revocations", "revocations", "Revocations"); err != nil {
		return err
	}
	pg, lq, err := pageOf(r, p.Company.ID)
	if err != nil {
		return err
	}
	rs, err := h.svc.RevocationPage(r.Context(), pg)
	if err != nil {
		return err
	}
	if n := len(rs); n > 0 {
		lq.next(n, consent.CursorOf(rs[n-1].CreatedAt, rs[n-1].ID))
	}
	p.Data = struct {
		Revocations []*consent.Revocation
		Query       listQuery
	}{rs, lq}
	return nil
}

type webhooksData struct {
	Endpoints []*consent.WebhookEndpoint
	Events    []string // every event type, for the form
	// Added is set once, on the page that answers the addition: its
	// secret is not shown again.
	Added *consent.WebhookEndpoint
}

func (h *Handler) webhooks(w http.ResponseWriter, r *http.Request, p *page) error {
	if err := h.companyPage(r, p, "webhooks", "webhooks", "Webhooks"); err != nil {
		return err
	}
	return h.loadWebhooks(r, p, nil)
}

func (h *Handler) loadWebhooks(r *http.Request, p *page, added *consent.WebhookEndpoint) error {
	eps, err := h.endpoints.List(r.Context(), p.Company.ID)
	p.Data = webhooksData{Endpoints: eps, Events: consent.EventTypes, Added: added}
	return err
}

func (h *Handler) addWebhook(w http.ResponseWriter, r *http.Request, p *page) error {
	if err := h.companyPage(r, p, "webhooks", "webhooks", "Webhooks"); err != nil {
		return err
	}
	if err := r.ParseForm(); err != nil {
		return consent.Errorf(consent.Invalid, "the form cannot be read: %v", err)
	}
	ep, err := h.endpoints.Add(r.Context(), webhook.Params{
		CompanyID: p.Company.ID, URL: strings.TrimSpace(r.PostFormValue("url")), Events: r.PostForm["events"],
	})
	if err != nil {
		return err
	}
	p.Notice = "Endpoint " + ep.ID + " added. Copy its signing secret now: it is not shown again."
	return h.loadWebhooks(r, p, ep)
}

// setWebhook disables, enables or deletes an endpoint, as the form's
// action says.
func (h *Handler) setWebhook(w http.ResponseWriter, r *http.Request, p *page) error {
	c, err := h.companyOf(r.Context(), r)
	if err != nil {
		return err
	}
	id := r.PathValue("endpoint")
	var done string
	switch action := r.PostFormValue("action"); action {
	case "disable", "enable":
		err, done = h.endpoints.SetDisabled(r.Context(), c.ID, id, action == "disable"), action+"d"
	case "delete":
		err, done = h.endpoints.Delete(r.Context(), c.ID, id), "deleted"
	default:
		return consent.Errorf(consent.Invalid, "action must be disable, enable or delete")
	}
	if err != nil {
		return err
	}
	h.redirectTo(p, "/companies/"+c.ID+"/webhooks", "Endpoint "+id+" "+done+".")
	return nil
}

// deliveriesPage is how many delivery attempts a page shows.
const deliveriesPage = 50

func (h *Handler) deliveries(w http.ResponseWriter, r *http.Request, p *page) error {
	if err := h.companyPage(r, p, "webhooks", "deliveries", "Deliveries"); err != nil {
		return err
	}
	before, _ := strconv.ParseInt(r.URL.Query().Get("before"), 10, 64)
	id := r.PathValue("endpoint")
	ds, err := h.endpoints.Deliveries(r.Context(), p.Company.ID, id, max(before, 0), deliveriesPage)
	if err != nil {
		return err
	}
	var next int64
	if len(ds) == deliveriesPage {
		next = ds[len(ds)-1].Seq
	}
	p.Data = struct {
		EndpointID string
		Deliveries []*consent.WebhookDelivery
		Next       int64
	}{id, ds, next}
	return nil
}

// auditPage is how many audit entries a page shows.
const auditPage = 50

// auditRun is the most entries one view checks when asked to check the
// chain from an entry (?check=): the page stays cheap, and a longer
// chain is checked run after run, each page linking to the next.
const auditRun = 1000

// chainView is what a page says of a company's audit chain: what was
// checked and what was found, never more.
type chainView struct {
	// Run is true when the operator asked for a run from an entry
	// (?check=); false when the entries shown were checked.
	Run        bool
	From, Last int64 // the entries checked: From to Last (Last < From: none)
	Head       int64 // the number of entries the chain's head recorded
	Next       int64 // the entry a further run starts at; 0: none
	// End is true when the check reached the end of the chain and the
	// last entry matched the head.
	End    bool
	Broken *audit.ChainError // nil: nothing checked was broken
}

func (h *Handler) audit(w http.ResponseWriter, r *http.Request, p *page) error {
	if err := h.companyPage(r, p, "audit", "audit", "Audit log"); err != nil {
		return err
	}
	ctx := r.Context()
	q := r.URL.Query()
	before, _ := strconv.ParseInt(q.Get("before"), 10, 64)
	es, err := h.svc.AuditLog(ctx, consent.AuditQuery{CompanyID: p.Company.ID, Newest: true, BeforeSeq: max(before, 0), Limit: auditPage})
	if err != nil {
		return err
	}
	var next int64
	if len(es) == auditPage {
		next = es[len(es)-1].Seq
	}
	// Check the entries shown (from the oldest to the newest of them, and
	// the head when the newest is the last), or a run the operator asked
	// for; both are bounded.
	var chain *chainView
	switch from, _ := strconv.ParseInt(q.Get("check"), 10, 64); {
	case q.Has("check"):
		chain, err = h.checkChain(ctx, p.Company.ID, max(from, 1), auditRun)
		chain.Run = true
	case len(es) > 0:
		lo, hi := es[len(es)-1].Seq, es[0].Seq
		chain, err = h.checkChain(ctx, p.Company.ID, lo, int(min(max(hi-lo+1, 1), auditRun)))
	}
	if err != nil {
		return err
	}
	rows := make([]auditRow, len(es))
	for i, e := range es {
		rows[i] = auditRow{AuditEntry: e, Broken: chain != nil && chain.Broken != nil && chain.Broken.Seq == e.Seq}
		rows[i].Fields, rows[i].Parsed = detailFields(e.Detail)
	}
	p.Data = struct {
		Entries []auditRow
		Next    int64
		Chain   *chainView
		RunSize int
	}{rows, next, chain, auditRun}
	return nil
}

// auditRow is an entry as the audit page shows it.
type auditRow struct {
	*consent.AuditEntry
	Broken bool // the chain was found broken at this entry
	// Fields are the detail's facts when Parsed, a JSON object; else the
	// page shows the detail as it is.
	Fields []detailField
	Parsed bool
}

// checkChain checks up to limit entries of the company's audit chain from
// entry from (audit.CheckChain); a broken chain is a
// finding to show, not an error.
func (h *Handler) checkChain(ctx context.Context, companyID string, from int64, limit int) (*chainView, error) {
	c, err := audit.CheckChain(ctx, h.svc.Store(), companyID, from, limit)
	v := &chainView{From: c.From, Last: c.Last, Head: c.Head, Next: c.Next}
	if ce, ok := errors.AsType[*audit.ChainError](err); ok {
		v.Broken = ce
		return v, nil
	}
	v.End = err == nil && c.Next == 0
	return v, err
}
