package contact_test

import (
	"testing"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/contact"
)

// Real-world spellings of the same consumer must normalize alike (D17).
func TestNormalizeMobile(t *testing.T) {
	tests := []struct{ in, want string }{
		{"(555) 010-2000", "+15550102000"},
		{"555-010-2000", "+15550102000"},
		{"555.010.2000", "+15550102000"},
		{"5550102000", "+15550102000"},
		{"555 010 2000", "+15550102000"},
		{"1-555-010-2000", "+15550102000"},
		{"1 (555) 010-2000", "+15550102000"},
		{"15550102000", "+15550102000"},
		{"+1 555 010 2000", "+15550102000"},
		{"+1 (555) 010-2000", "+15550102000"},
		{"+15550102000", "+15550102000"},
		{"  +1-555-010-2000  ", "+15550102000"},
		{"\t(555)010-2000\n", "+15550102000"},
		{"+44 20 7946 0958", "+442079460958"},
		{"+44 (0)20 7946 0958", "+4402079460958"}, // D17 keeps every digit, the trunk 0 too
		{"+49 30 901820", "+4930901820"},
		{"+91 98765 43210", "+919876543210"},
		{"+61 4 1234 5678", "+61412345678"},
		{"020 7946 0958", "02079460958"}, // 11 digits not starting with 1: digits only, no +
		{"25550102000", "25550102000"},
		{"0044 20 7946 0958", "00442079460958"},
		{"555-0102", "5550102"},
		{"＋1 555 010 2000", "+15550102000"}, // a full-width plus is dropped; 1+10 digits is North American
	}
	for _, tt := range tests {
		got, err := contact.NormalizeMobile(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("NormalizeMobile(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestNormalizeMobileInvalid(t *testing.T) {
	for _, in := range []string{"", "   ", "abc", "555-01", "+1", "1-800-FLOWERS", "1234567890123456"} {
		if got, err := contact.NormalizeMobile(in); err == nil || consent.ErrorCode(err) != consent.Invalid {
			t.Errorf("NormalizeMobile(%q) = %q, %v; want an Invalid error", in, got, err)
		}
	}
}

func TestNormalizeEmail(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Jane@Example.com", "jane@example.com"},
		{"  jane@example.com  ", "jane@example.com"},
		{"JANE@EXAMPLE.COM", "jane@example.com"},
		{"\tJane.Doe@Example.COM\n", "jane.doe@example.com"},
		{"jane+quotes@example.com", "jane+quotes@example.com"}, // tags are kept (D17: trim and lower-case only)
		{"j.a.n.e@gmail.com", "j.a.n.e@gmail.com"},             // dots are kept
		{"Ünïcødé@Exämple.de", "ünïcødé@exämple.de"},
		{`"odd local"@example.com`, ""}, // inner space: rejected
	}
	for _, tt := range tests {
		got, err := contact.NormalizeEmail(tt.in)
		if tt.want == "" {
			if err == nil {
				t.Errorf("NormalizeEmail(%q) = %q, want an error", tt.in, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("NormalizeEmail(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, in := range []string{"", "jane", "@example.com", "jane@", "   "} {
		if _, err := contact.NormalizeEmail(in); consent.ErrorCode(err) != consent.Invalid {
			t.Errorf("NormalizeEmail(%q): %v, want Invalid", in, err)
		}
	}
}

func TestDigestsMatchAcrossSpellings(t *testing.T) {
	a, err1 := contact.MobileDigest("(555) 010-2000")
	b, err2 := contact.MobileDigest("+1 555 010 2000")
	if err1 != nil || err2 != nil || a != b || a.IsZero() {
		t.Errorf("mobile digests differ: %v %v, %v %v", a, err1, b, err2)
	}
	c, err1 := contact.EmailDigest(" Jane@Example.com")
	d, err2 := contact.EmailDigest("jane@example.com")
	if err1 != nil || err2 != nil || c != d || c != consent.DigestOf("jane@example.com") {
		t.Errorf("email digests differ: %v %v, %v %v", c, err1, d, err2)
	}
}

func FuzzNormalizeMobile(f *testing.F) {
	for _, s := range []string{"(555) 010-2000", "+44 20 7946 0958", "", "+"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := contact.NormalizeMobile(s)
		if err != nil {
			return
		}
		// Normalizing is idempotent.
		if m, err := contact.NormalizeMobile(n); err != nil || m != n {
			t.Fatalf("NormalizeMobile(%q) = %q, but NormalizeMobile(%q) = %q, %v", s, n, n, m, err)
		}
	})
}

// go test -run '^$' -fuzz FuzzNormalizeEmail ./contact
func FuzzNormalizeEmail(f *testing.F) {
	for _, s := range []string{"Jane@Example.com", " a@b ", "@b", "a@", "İ@x", "a b@c", "\xff@x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := contact.NormalizeEmail(s)
		if err != nil {
			return
		}
		if m, err := contact.NormalizeEmail(n); err != nil || m != n {
			t.Fatalf("NormalizeEmail(%q) = %q, but NormalizeEmail(%q) = %q, %v", s, n, n, m, err)
		}
		if d, err := contact.EmailDigest(s); err != nil || d != consent.DigestOf(n) {
			t.Fatalf("EmailDigest(%q) = %v, %v; want the digest of %q", s, d, err, n)
		}
	})
}
