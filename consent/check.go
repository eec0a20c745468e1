package consent

import (
	"encoding/json"
	"math"
	"time"
	"unicode/utf8"
)

// ValidText reports whether s may be stored as text: valid UTF-8 holding no
// control character of C0 (U+0000–U+001F) other than tab, line feed and
// carriage return. Every other Unicode character, 4-byte ones included, is
// kept exactly.
//
// The rule exists because the stores differ at the edges: PostgreSQL
// refuses NUL in text and jsonb and refuses invalid UTF-8, while SQLite and
// memory keep both. One rule, checked by the domain (so that a request is
// refused with 400 naming its field) and by the Tx that the Service hands
// out (checked.go, so that a caller of the Tx interface meets the same
// refusal on every store), makes every store accept exactly the same
// values. Text is refused, never cleaned: consent
// text is evidence, and changing it silently would change the evidence.
func ValidText(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\t' && c != '\n' && c != '\r' {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return false
		}
		i += size
	}
	return true
}

// CheckText returns an Invalid error naming field when s is not ValidText.
func CheckText(field, s string) error {
	if !ValidText(s) {
		return Errorf(Invalid, "%s must be valid UTF-8 without control characters other than tab, line feed and carriage return", field)
	}
	return nil
}

// CleanText returns s made valid for storage: invalid bytes become U+FFFD
// and forbidden control characters are dropped. It is for text that the
// library writes itself, such as the error of a failed conversion, never for
// what a caller sends.
func CleanText(s string) string {
	if ValidText(s) {
		return s
	}
	out := make([]rune, 0, len(s))
	for _, r := range s { // ranging over a string yields U+FFFD for invalid bytes
		if r < 0x20 && r != '\t' && r != '\n' && r != '\r' {
			continue
		}
		out = append(out, r)
	}
	return string(out)
}

// checkTexts returns the error of CheckText for the first invalid pair of
// field name and value.
func checkTexts(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if err := CheckText(pairs[i], pairs[i+1]); err != nil {
			return err
		}
	}
	return nil
}

// MaxKeyBytes is the most bytes of text a store keeps in a key: an id, an
// id that refers to another row, a job's kind or key, an idempotency key's
// scope or key. PostgreSQL refuses an index entry of more than 2704 bytes,
// and its widest entries hold two such texts (a company's id with a
// property's, a job's kind with its key); 1024 keeps them well within
// that, and far above any real identifier (the API's are at most
// MaxIDLength).
const MaxKeyBytes = 1024

// CheckKeys checks text kept in keys, given as pairs of a field's name and
// its value: the error of CheckText for the first pair whose value is not
// text, else an Invalid error for the first longer than MaxKeyBytes.
func CheckKeys(pairs ...string) error {
	if err := checkTexts(pairs...); err != nil {
		return err
	}
	for i := 0; i+1 < len(pairs); i += 2 {
		if len(pairs[i+1]) > MaxKeyBytes {
			return Errorf(Invalid, "%s must be at most %d bytes", pairs[i], MaxKeyBytes)
		}
	}
	return nil
}

// MaxClientIP is the most bytes of a certificate's ClientIP, which the
// stores index (PostgreSQL refuses an index entry over 2704 bytes): above
// the longest IP address's text, 45 bytes, with a zone.
const MaxClientIP = 64

// CheckClientIP returns an Invalid error naming field when ip is longer
// than MaxClientIP, else the error of CheckText.
func CheckClientIP(field, ip string) error {
	if len(ip) > MaxClientIP {
		return Errorf(Invalid, "%s must be at most %d bytes", field, MaxClientIP)
	}
	return CheckText(field, ip)
}

func checkList(field string, list []string) error {
	for _, s := range list {
		if err := CheckText(field, s); err != nil {
			return err
		}
	}
	return nil
}

// The check methods below are what the checked Tx runs before a store
// writes a value (see Tx): each returns an Invalid error naming the first
// field that no store may keep — text that is not ValidText, a key
// (CheckKeys) longer than MaxKeyBytes, a time outside the years 1 to
// 9999, a count outside its range — so that all stores are given the same
// values.

// CheckTime returns an Invalid error naming field when t is outside the
// years 1 to 9999: the range RFC 3339 writes, and one every store keeps as
// given (SQLite's microsecond integers wrap round near the year 294,000,
// PostgreSQL's timestamptz ends at 294,276 and begins in 4713 BC). The
// zero time, which means none, passes. The check methods check the times
// of a value with it, and the checked Tx each time a Tx method takes as an
// argument (a revocation's or a lease's time, a purge's bound, now) before
// the store reads or writes anything.
func CheckTime(field string, t time.Time) error {
	if y := t.UTC().Year(); y < 1 || y > 9999 {
		return Errorf(Invalid, "%s must be a time in the years 1 to 9999", field)
	}
	return nil
}

// checkTimes is CheckTime of each pair of a field's name and its time.
func checkTimes(fields []string, times ...time.Time) error {
	for i, t := range times {
		if err := CheckTime(fields[i], t); err != nil {
			return err
		}
	}
	return nil
}

// Check checks c's text fields and (as every Check method) its times.
func (c *Company) Check() error {
	if err := CheckKeys("id", c.ID); err != nil {
		return err
	}
	if err := CheckText("name", c.Name); err != nil {
		return err
	}
	if err := CheckTime("created_at", c.CreatedAt); err != nil {
		return err
	}
	if err := checkList("authorized_third_parties", c.AuthorizedThirdParties); err != nil {
		return err
	}
	return c.InsightsRules.Check()
}

// Check checks p's fields.
func (p *Property) Check() error {
	if err := CheckKeys("id", p.ID, "company_id", p.CompanyID); err != nil {
		return err
	}
	if err := CheckText("name", p.Name); err != nil {
		return err
	}
	if err := CheckTime("created_at", p.CreatedAt); err != nil {
		return err
	}
	return checkList("allowed_origins", p.AllowedOrigins)
}

// Check checks t's fields.
func (t *Token) Check() error {
	if err := CheckKeys("id", t.ID, "company_id", t.CompanyID); err != nil {
		return err
	}
	if err := checkTimes([]string{"expires_at", "revoked_at", "created_at"}, t.ExpiresAt, t.RevokedAt, t.CreatedAt); err != nil {
		return err
	}
	for _, p := range t.Permissions {
		if err := CheckText("permissions", string(p)); err != nil {
			return err
		}
	}
	return nil
}

// Check checks s's fields.
func (s *Session) Check() error {
	if err := checkTimes([]string{"created_at", "expires_at", "closed_at", "last_event_at"}, s.CreatedAt, s.ExpiresAt, s.ClosedAt, s.LastEventAt); err != nil {
		return err
	}
	if err := CheckKeys("id", s.ID, "company_id", s.CompanyID, "property_id", s.PropertyID, "certificate_id", s.CertificateID); err != nil {
		return err
	}
	if err := s.Recording.Check(); err != nil {
		return err
	}
	return checkTexts("retention_status", string(s.RetentionStatus), "video_status", string(s.VideoStatus),
		"video.path", s.Video.Path, "url", s.URL)
}

// Check checks r: a key (CheckKeys) is given before the rest, a size is
// not negative, and a moved recording (At set) has a key, a size and a
// digest.
func (r Recording) Check() error {
	if err := CheckKeys("recording.key", r.Key); err != nil {
		return err
	}
	if err := CheckTime("recording.at", r.At); err != nil {
		return err
	}
	switch {
	case r.Bytes < 0:
		return Errorf(Invalid, "recording.bytes must not be negative")
	case r.Key == "" && (r.Bytes != 0 || !r.SHA256.IsZero() || r.Moved()):
		return Errorf(Invalid, "recording.key is required with its size, digest or time")
	case r.Moved() && (r.Bytes == 0 || r.SHA256.IsZero()):
		return Errorf(Invalid, "a moved recording needs its size and digest")
	}
	return nil
}

// Check checks c's fields, its consent records and its EventsCombined, which must be valid UTF-8 (JSON cannot hold a raw control
// character, and an escaped one such as \u0000 is kept as written).
func (c *Certificate) Check() error {
	if err := CheckKeys("id", c.ID, "company_id", c.CompanyID, "property_id", c.PropertyID, "session_id", c.SessionID); err != nil {
		return err
	}
	if err := checkTexts("origin", c.Origin, "retention_status", string(c.RetentionStatus), "key_id", c.KeyID); err != nil {
		return err
	}
	if err := checkTimes([]string{"created_at", "expires_at", "revoked_at"}, c.CreatedAt, c.ExpiresAt, c.RevokedAt); err != nil {
		return err
	}
	for _, r := range c.Records {
		if err := CheckText("consents.text", r.Text); err != nil {
			return err
		}
		if err := CheckTime("consents.opt_in_at", r.OptInAt); err != nil {
			return err
		}
		if err := checkList("consents.types", r.Types); err != nil {
			return err
		}
		if err := CheckText("consents.opt_in_method", r.OptInMethod); err != nil {
			return err
		}
		if err := checkRange("consents.node_id", r.NodeID, 0, math.MaxInt32); err != nil {
			return err
		}
		if err := r.Visibility.check("consents.visibility"); err != nil {
			return err
		}
	}
	if err := CheckClientIP("client_ip", c.ClientIP); err != nil {
		return err
	}
	if err := CheckText("user_agent", c.UserAgent); err != nil {
		return err
	}
	if err := c.Visibility.check("visibility"); err != nil {
		return err
	}
	if err := CheckTime("revoked_before", c.RevokedBefore); err != nil {
		return err
	}
	if err := checkRange("signature_version", c.SignatureVersion, 0, 2); err != nil {
		return err
	}
	if !utf8.Valid(c.EventsCombined) {
		return Errorf(Invalid, "events_combined must be valid UTF-8")
	}
	// JSON, as PostgreSQL's column type has it (nil is not: the SQL
	// stores' column is NOT NULL).
	if !json.Valid(c.EventsCombined) {
		return Errorf(Invalid, "events_combined must be JSON")
	}
	return nil
}

// Check checks r's fields.
func (r *Revocation) Check() error {
	if err := CheckKeys("id", r.ID, "company_id", r.CompanyID, "certificate_id", r.CertificateID); err != nil {
		return err
	}
	if err := checkTexts("reason", r.Reason, "client_ip", r.ClientIP); err != nil {
		return err
	}
	if err := CheckTime("created_at", r.CreatedAt); err != nil {
		return err
	}
	return checkList("certificate_ids", r.CertificateIDs)
}

// Check checks j's fields, its Attempts among them: -2^31 to
// MaxJobAttempts.
func (j *Job) Check() error {
	if err := checkTimes([]string{"run_after", "lease_until", "failed_at", "created_at"}, j.RunAfter, j.LeaseUntil, j.FailedAt, j.CreatedAt); err != nil {
		return err
	}
	if err := CheckKeys("kind", j.Kind, "key", j.Key, "company_id", j.CompanyID, "lane", j.Lane); err != nil {
		return err
	}
	if err := checkTexts("last_error", j.LastError, "lease_owner", j.LeaseOwner); err != nil {
		return err
	}
	return checkRange("attempts", j.Attempts, math.MinInt32, MaxJobAttempts)
}

// Check checks e's fields.
func (e *WebhookEndpoint) Check() error {
	if err := CheckKeys("id", e.ID, "company_id", e.CompanyID); err != nil {
		return err
	}
	if err := checkTexts("url", e.URL, "secret", e.Secret); err != nil {
		return err
	}
	if err := checkTimes([]string{"created_at", "disabled_at"}, e.CreatedAt, e.DisabledAt); err != nil {
		return err
	}
	return checkList("events", e.Events)
}

// Check checks d's fields, its Attempt and Status among them (checkInt32).
func (d *WebhookDelivery) Check() error {
	if err := CheckKeys("endpoint_id", d.EndpointID); err != nil {
		return err
	}
	if err := checkTexts("message_id", d.MessageID, "event_type", d.EventType, "error", d.Error); err != nil {
		return err
	}
	if err := CheckTime("at", d.At); err != nil {
		return err
	}
	if err := checkInt32("attempt", d.Attempt); err != nil {
		return err
	}
	return checkInt32("status", d.Status)
}

// MaxJobAttempts is the most Attempts a job has: the most it is written
// with (EnqueueJob, EnqueueJobs, EndJob), and where LeaseJob's count of
// leases stops. The SQL stores keep Attempts in a 32-bit column
// (checkInt32); so a job leased at the cap still ends (EndJob) with the
// count it was leased with.
const MaxJobAttempts = 1_000_000_000

// checkInt32 returns an Invalid error naming field when n is outside -2^31
// to 2^31-1: the range of the counts and statuses that the SQL stores keep
// in 32-bit integer columns (PostgreSQL's integer refuses more, where
// SQLite and memory would keep it) — a job's Attempts, a webhook
// delivery's Attempt and Status, an idempotency key's answered status.
func checkInt32(field string, n int) error {
	return checkRange(field, n, math.MinInt32, math.MaxInt32)
}

// checkRange returns an Invalid error naming field when n is outside lo to
// hi.
func checkRange(field string, n, lo, hi int) error {
	if n < lo || n > hi {
		return Errorf(Invalid, "%s must be %d to %d", field, lo, hi)
	}
	return nil
}

// Check checks r before a store records it (ClaimIdempotencyKey) or
// answers it (AnswerIdempotencyKey): its scope and key (CheckKeys), its
// times, and a status that a 32-bit integer holds.
func (r *IdempotencyRecord) Check() error {
	if err := CheckKeys("idempotency scope", r.Scope, "idempotency key", r.Key); err != nil {
		return err
	}
	if err := checkTimes([]string{"created_at", "expires_at"}, r.CreatedAt, r.ExpiresAt); err != nil {
		return err
	}
	return checkInt32("status", r.Status)
}

// check checks what a store keeps of v, nil or not: its text, and numbers
// that are finite (SQL stores keep them in JSON, which has no NaN) and not
// -0 (PostgreSQL's jsonb, which holds the consents, reads it back as +0).
func (v *Visibility) check(field string) error {
	if v == nil {
		return nil
	}
	if err := checkTexts(field+".text_color", v.TextColor, field+".background_color", v.BackgroundColor); err != nil {
		return err
	}
	if math.IsNaN(v.FontSizePx) || math.IsInf(v.FontSizePx, 0) || math.IsNaN(v.ContrastRatio) || math.IsInf(v.ContrastRatio, 0) {
		return Errorf(Invalid, "%s: numbers must be finite", field)
	}
	if v.FontSizePx == 0 && math.Signbit(v.FontSizePx) || v.ContrastRatio == 0 && math.Signbit(v.ContrastRatio) {
		return Errorf(Invalid, "%s: numbers must not be negative zero", field)
	}
	return checkList(field+".hidden_text", v.HiddenText)
}
