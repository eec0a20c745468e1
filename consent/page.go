package consent

import (
	"encoding/base64"
	"strconv"
	"strings"
	"time"
)

// Page selects one page of a company's list of ledger entries,
// certificates, sessions or revocations (Tx.LedgerPage and its siblings),
// for the operator API, the dashboard and the command line.
//
// The order is newest first: by CreatedAt descending, then by ID
// descending (compared byte by byte), a total order that does not depend
// on when the rows were written. Pages are cut by keyset, not by offset:
// the next page starts after the last item of this one (Before), so a page
// costs the same however deep it is, and rows written meanwhile neither
// repeat nor shift items between pages. Times are compared to the
// microsecond, as stored.
type Page struct {
	CompanyID string // required
	// Since and Until keep the items created at or after Since and before
	// Until; zero: no bound.
	Since, Until time.Time
	// Before is the position of the last item of the previous page: only
	// items after it in the order are kept, those with (CreatedAt, ID)
	// below (Before.At, Before.ID). Zero: from the newest.
	Before Cursor
	// Limit is the most items returned: 1 to MaxPage.
	Limit int
}

// Page sizes.
const (
	// MaxPage is the most items one page holds.
	MaxPage = 500
	// DefaultPage is the size of a page when the Service is asked for
	// none (Limit 0).
	DefaultPage = 50
)

// Cursor is a position in a list ordered by creation: the CreatedAt and ID
// of an item. Its String form is opaque text for clients to send back.
type Cursor struct {
	At time.Time
	ID string
}

// CursorOf returns the position of an item.
func CursorOf(at time.Time, id string) Cursor { return Cursor{At: UTC(at), ID: id} }

// IsZero reports whether c is no position (the start of the list).
func (c Cursor) IsZero() bool { return c.At.IsZero() && c.ID == "" }

// String returns c as opaque text (URL-safe base64), "" for the zero
// Cursor; ParseCursor reads it back.
func (c Cursor) String() string {
	if c.IsZero() {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.At.UnixMicro(), 10) + " " + c.ID))
}

// ParseCursor reads the text of Cursor.String; "" is the zero Cursor.
// Invalid, naming field, when s is not such text.
func ParseCursor(field, s string) (Cursor, error) {
	if s == "" {
		return Cursor{}, nil
	}
	bad := Errorf(Invalid, "%s must be a cursor that this API returned", field)
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) > maxCursor {
		return Cursor{}, bad
	}
	// The id is any text: ledger entries made through the Go API may have
	// ids that are not identifiers (ValidID).
	micros, id, ok := strings.Cut(string(b), " ")
	us, err := strconv.ParseInt(micros, 10, 64)
	if !ok || err != nil || id == "" || !ValidText(id) {
		return Cursor{}, bad
	}
	return Cursor{At: time.UnixMicro(us).UTC(), ID: id}, nil
}

// maxCursor bounds the decoded text of a cursor: a time in microseconds,
// a space and an id, which a store keeps to MaxKeyBytes.
const maxCursor = len("-9223372036854775808 ") + MaxKeyBytes

// Check returns Invalid when p is not a page a store can read: no company,
// a limit outside 1 to MaxPage, text that is not ValidText, or a time
// outside the years 1 to 9999 (CheckTime).
func (p *Page) Check() error {
	if p.CompanyID == "" {
		return Errorf(Invalid, "company_id is required")
	}
	if p.Limit < 1 || p.Limit > MaxPage {
		return Errorf(Invalid, "limit must be 1 to %d", MaxPage)
	}
	if err := checkTexts("company_id", p.CompanyID, "before", p.Before.ID); err != nil {
		return err
	}
	return checkTimes([]string{"since", "until", "before"}, p.Since, p.Until, p.Before.At)
}

// Includes reports whether an item of p's company created at at, with the
// given id, passes p's bounds and comes after p.Before. Stores that filter
// in memory use it; the SQL stores filter alike.
func (p *Page) Includes(at time.Time, id string) bool {
	at = UTC(at)
	if !p.Since.IsZero() && at.Before(UTC(p.Since)) || !p.Until.IsZero() && !at.Before(UTC(p.Until)) {
		return false
	}
	if p.Before.IsZero() {
		return true
	}
	b := UTC(p.Before.At)
	return at.Before(b) || at.Equal(b) && id < p.Before.ID
}

// Newer reports whether the item (at, id) comes before (b, bid) in a
// page's order: created later, or at the same time with a greater id.
// Stores that sort in memory use it.
func Newer(at time.Time, id string, b time.Time, bid string) bool {
	return at.After(b) || at.Equal(b) && id > bid
}
