package consent_test

import (
	"testing"

	"github.com/consentkit/consentkit/consent"
)

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
