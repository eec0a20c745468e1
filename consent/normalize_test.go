package consent_test

import (
	"testing"

	"github.com/consentkit/consentkit/consent"
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
		got, err := consent.NormalizeMobile(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("NormalizeMobile(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestNormalizeMobileInvalid(t *testing.T) {
	for _, in := range []string{"", "   ", "abc", "555-01", "+1", "1-800-FLOWERS", "1234567890123456"} {
		if got, err := consent.NormalizeMobile(in); err == nil || consent.ErrorCode(err) != consent.Invalid {
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
		got, err := consent.NormalizeEmail(tt.in)
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
		if _, err := consent.NormalizeEmail(in); consent.ErrorCode(err) != consent.Invalid {
			t.Errorf("NormalizeEmail(%q): %v, want Invalid", in, err)
		}
	}
}

func TestDigestsMatchAcrossSpellings(t *testing.T) {
	a, err1 := consent.MobileDigest("(555) 010-2000")
	b, err2 := consent.MobileDigest("+1 555 010 2000")
	if err1 != nil || err2 != nil || a != b || a.IsZero() {
		t.Errorf("mobile digests differ: %v %v, %v %v", a, err1, b, err2)
	}
	c, err1 := consent.EmailDigest(" Jane@Example.com")
	d, err2 := consent.EmailDigest("jane@example.com")
	if err1 != nil || err2 != nil || c != d || c != consent.DigestOf("jane@example.com") {
		t.Errorf("email digests differ: %v %v, %v %v", c, err1, d, err2)
	}
}

func FuzzNormalizeMobile(f *testing.F) {
	for _, s := range []string{"(555) 010-2000", "+44 20 7946 0958", "", "+"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := consent.NormalizeMobile(s)
		if err != nil {
			return
		}
		// Normalizing is idempotent.
		if m, err := consent.NormalizeMobile(n); err != nil || m != n {
			t.Fatalf("NormalizeMobile(%q) = %q, but NormalizeMobile(%q) = %q, %v", s, n, n, m, err)
		}
	})
}

func TestValidID(t *testing.T) {
	long := make([]byte, 129)
	for i := range long {
		long[i] = 'a'
	}
	for _, ok := range []string{"a", "acme", "cert_1", "A.b-c:d_e", "0123456789", string(long[:128])} {
		if !consent.ValidID(ok) {
			t.Errorf("ValidID(%q) = false", ok)
		}
	}
	for _, bad := range []string{"", string(long), "a b", "a/b", "ü", "a\n", "cert#1", "a?b", "%41"} {
		if consent.ValidID(bad) {
			t.Errorf("ValidID(%q) = true", bad)
		}
	}
	if err := consent.CheckID("certificate_id", ""); consent.ErrorCode(err) != consent.Invalid ||
		err.Error() != "certificate_id is required" {
		t.Errorf("CheckID(empty) = %v", err)
	}
	if id := consent.NewID("cert"); !consent.ValidID(id) || len(id) != len("cert_")+26 {
		t.Errorf("NewID = %q", id)
	}
}

// go test -run '^$' -fuzz FuzzNormalizeEmail ./consent
func FuzzNormalizeEmail(f *testing.F) {
	for _, s := range []string{"Jane@Example.com", " a@b ", "@b", "a@", "İ@x", "a b@c", "\xff@x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := consent.NormalizeEmail(s)
		if err != nil {
			return
		}
		if m, err := consent.NormalizeEmail(n); err != nil || m != n {
			t.Fatalf("NormalizeEmail(%q) = %q, but NormalizeEmail(%q) = %q, %v", s, n, n, m, err)
		}
		if d, err := consent.EmailDigest(s); err != nil || d != consent.DigestOf(n) {
			t.Fatalf("EmailDigest(%q) = %v, %v; want the digest of %q", s, d, err, n)
		}
	})
}

// An allowed origin that NormalizeOrigin accepts is stored: it must be
// text every store keeps, and normalizing it again changes nothing.
//
// go test -run '^$' -fuzz FuzzNormalizeOrigin ./consent
func FuzzNormalizeOrigin(f *testing.F) {
	for _, s := range []string{"https://Acme.example", "http://a.example:80/", "https://[::1]:8443", "ftp://x", "https://a/b", "https://a\x00", "https://]:0", "https://[1.2.3.4]", "http://[::ffff:1.2.3.4]:80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := consent.NormalizeOrigin(s)
		if err != nil {
			return
		}
		if !consent.ValidText(n) {
			t.Fatalf("NormalizeOrigin(%q) = %q, which is not text a store keeps", s, n)
		}
		if m, err := consent.NormalizeOrigin(n); err != nil || m != n {
			t.Fatalf("NormalizeOrigin(%q) = %q, but NormalizeOrigin(%q) = %q, %v", s, n, n, m, err)
		}
		if o, ok := consent.OriginOf(n); !ok || o != n {
			t.Fatalf("OriginOf(%q) = %q, %v; want it unchanged", n, o, ok)
		}
	})
}

// go test -run '^$' -fuzz FuzzCleanText ./consent
func FuzzCleanText(f *testing.F) {
	for _, s := range []string{"ok", "a\x00b", "\xff\xfe", "tab\tnew\nline\r", "é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c := consent.CleanText(s)
		if !consent.ValidText(c) {
			t.Fatalf("CleanText(%q) = %q, not ValidText", s, c)
		}
		if consent.ValidText(s) && c != s {
			t.Fatalf("CleanText changed valid text %q to %q", s, c)
		}
		if (consent.CheckText("f", s) == nil) != consent.ValidText(s) {
			t.Fatalf("CheckText and ValidText disagree on %q", s)
		}
	})
}
