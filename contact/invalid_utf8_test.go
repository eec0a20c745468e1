package contact_test

import (
	"testing"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/contact"
)

// An email that is not valid UTF-8 is refused, wherever the invalid byte
// is and whatever its case, rather than lower-cased first, which would
// make each invalid byte U+FFFD and distinct addresses one digest.
func TestNormalizeEmailInvalidUTF8(t *testing.T) {
	for _, s := range []string{
		"jane\xff@example.com",
		"jane\xfe@example.com",
		"JANE\xff@EXAMPLE.COM",
		"jane@example.com\xc3",
		" jane@ex\xe2\x82ample.com ",
	} {
		if got, err := contact.NormalizeEmail(s); consent.ErrorCode(err) != consent.Invalid {
			t.Errorf("NormalizeEmail(%q) = %q, %v; want an Invalid error", s, got, err)
		}
		if d, err := contact.EmailDigest(s); err == nil {
			t.Errorf("EmailDigest(%q) = %v, want an error", s, d)
		}
	}
	// Valid UTF-8 beyond ASCII is still an address.
	if got, err := contact.NormalizeEmail(" JOSÉ@Example.com "); err != nil || got != "josé@example.com" {
		t.Errorf("NormalizeEmail of a valid non-ASCII address = %q, %v", got, err)
	}
}
