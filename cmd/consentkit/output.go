package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/consentkit/consentkit/wallet"
)

// show prints an answer: with -json its body as the operator API sent it,
// otherwise text written by text from the body decoded into a T.
func show[T any](c *call, a *answer, err error, text func(*T)) error {
	if err != nil {
		return err
	}
	if c.json {
		return c.writeAnswer(a)
	}
	v := new(T)
	if err := json.Unmarshal(a.body, v); err != nil {
		return fmt.Errorf("an answer this command cannot read (is the server another version?): %w", err)
	}
	text(v)
	return nil
}

// writeAnswer prints an answer's body as the operator API sent it, on a
// line of its own.
func (c *call) writeAnswer(a *answer) error {
	b := a.body
	if len(b) == 0 || b[len(b)-1] != '\n' {
		b = append(b[:len(b):len(b)], '\n')
	}
	_, err := c.stdout.Write(b)
	return err
}

// writeJSON prints v as one line of JSON: the answers of commands that are
// not the operator API's.
func (c *call) writeJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.stdout, "%s\n", b)
	return err
}

// pairs prints names and values, aligned: name, value, name, value…
func (c *call) pairs(kv ...string) {
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(tw, "%s\t%s\n", kv[i], oneLine(kv[i+1]))
	}
	tw.Flush()
}

// table is aligned columns under a heading.
type table struct{ tw *tabwriter.Writer }

func (c *call) table(heading ...string) *table {
	t := &table{tw: tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)}
	t.row(heading...)
	return t
}

func (t *table) row(cells ...string) {
	for len(cells) > 0 && cells[len(cells)-1] == "" { // no padding at the end of a line
		cells = cells[:len(cells)-1]
	}
	for i, s := range cells {
		cells[i] = oneLine(s)
	}
	fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
}

func (t *table) flush() { t.tw.Flush() }

// oneLine keeps a cell on its line and in its column: stored text may hold
// tabs and line breaks (a reason, a name).
func oneLine(s string) string {
	return strings.NewReplacer("\t", " ", "\n", " ", "\r", " ").Replace(s)
}

// ts is a time of an answer, RFC 3339 in UTC as the API writes it; "-"
// for none.
func ts(s *string) string {
	if s == nil || *s == "" {
		return "-"
	}
	return *s
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func join(l []string) string {
	if len(l) == 0 {
		return "-"
	}
	return strings.Join(l, ",")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func given(b bool) string {
	if b {
		return "given"
	}
	return "-"
}

// The operator API's answers, as far as the text output reads them; -json
// prints them whole, as sent (httpadapter/operator.go declares them).

type companyBody struct {
	ID         string   `json:"id"`
	Name       string   `json:"name"`
	ThirdParty bool     `json:"third_party_verification_enabled"`
	Authorized []string `json:"authorized_third_parties"`
	CreatedAt  *string  `json:"created_at"`
}

type propertyBody struct {
	ID             string   `json:"id"`
	Name           string   `json:"name"`
	AllowedOrigins []string `json:"allowed_origins"`
	CreatedAt      *string  `json:"created_at"`
}

type tokenBody struct {
	ID          string   `json:"id"`
	Permissions []string `json:"permissions"`
	ExpiresAt   *string  `json:"expires_at"`
	RevokedAt   *string  `json:"revoked_at"`
	CreatedAt   *string  `json:"created_at"`
	Active      bool     `json:"active"`
	Secret      string   `json:"secret"`
}

type successBody struct {
	Success bool `json:"success"`
}

type topUpBody struct {
	CompanyID string        `json:"company_id"`
	Amount    wallet.Amount `json:"amount"`
	Reference string        `json:"reference"`
	Balance   wallet.Amount `json:"balance"`
}

type balanceBody struct {
	CompanyID string        `json:"company_id"`
	Balance   wallet.Amount `json:"balance"`
}

type entryBody struct {
	ID        string        `json:"id"`
	Kind      string        `json:"kind"`
	Amount    wallet.Amount `json:"amount"`
	Credit    bool          `json:"credit"`
	Reference string        `json:"reference"`
	CreatedAt *string       `json:"created_at"`
}

type certificateSummary struct {
	ID              string  `json:"id"`
	PropertyID      string  `json:"property_id"`
	SessionID       string  `json:"session_id"`
	Origin          string  `json:"origin"`
	RetentionStatus string  `json:"retention_status"`
	CreatedAt       *string `json:"created_at"`
	ExpiresAt       *string `json:"expires_at"`
	RevokedAt       *string `json:"revoked_at"`
	EmailGiven      bool    `json:"email_given"`
	MobileGiven     bool    `json:"mobile_given"`
	Signed          bool    `json:"signed"`
}

type certificatesBody struct {
	Certificates []certificateSummary `json:"certificates"`
	NextBefore   *string              `json:"next_before"`
}

type certificateBody struct {
	certificateSummary
	Consents []struct {
		Text    string   `json:"text"`
		Types   []string `json:"types"`
		OptInAt *string  `json:"opt_in_at"`
	} `json:"consents"`
	ClientIP        string `json:"client_ip"`
	UserAgent       string `json:"user_agent"`
	RecordingSHA256 string `json:"recording_sha256"`
	KeyID           string `json:"key_id"`
}

type sessionBody struct {
	ID              string  `json:"id"`
	PropertyID      string  `json:"property_id"`
	RetentionStatus string  `json:"retention_status"`
	VideoStatus     string  `json:"rrweb_to_video_status"`
	EventChunks     int     `json:"event_chunks"`
	EventBytes      int64   `json:"event_bytes"`
	CertificateID   string  `json:"certificate_id"`
	URL             string  `json:"url"`
	CreatedAt       *string `json:"created_at"`
	ExpiresAt       *string `json:"expires_at"`
	ClosedAt        *string `json:"closed_at"`
	VideoBytes      int64   `json:"video_bytes"`
	VideoSHA256     string  `json:"video_sha256"`
	VideoDurationMS int64   `json:"video_duration_ms"`
}

type revocationBody struct {
	ID             string   `json:"id"`
	CertificateID  string   `json:"certificate_id"`
	EmailGiven     bool     `json:"email_given"`
	MobileGiven    bool     `json:"mobile_given"`
	Reason         string   `json:"reason"`
	ClientIP       string   `json:"client_ip"`
	CertificateIDs []string `json:"certificate_ids"`
	CreatedAt      *string  `json:"created_at"`
}

type webhookBody struct {
	ID         string   `json:"id"`
	URL        string   `json:"url"`
	Events     []string `json:"events"`
	Secret     string   `json:"secret"`
	CreatedAt  *string  `json:"created_at"`
	DisabledAt *string  `json:"disabled_at"`
}

type deliveryBody struct {
	Seq        int64   `json:"seq"`
	MessageID  string  `json:"message_id"`
	EventType  string  `json:"event_type"`
	Attempt    int     `json:"attempt"`
	At         *string `json:"at"`
	Status     int     `json:"status"`
	Error      string  `json:"error"`
	DurationMS float64 `json:"duration_ms"`
}

type auditBody struct {
	Seq       int64   `json:"seq"`
	At        *string `json:"at"`
	Actor     string  `json:"actor"`
	Action    string  `json:"action"`
	Target    string  `json:"target"`
	Outcome   string  `json:"outcome"`
	RequestID string  `json:"request_id"`
	Detail    string  `json:"detail"`
}
