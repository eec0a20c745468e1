package webhook_test

import (
	"strings"
	"testing"

	"github.com/consentkit/consentkit/webhook"
)

// TestCheckURLHintOnlyWhereItHelps: the refusal of an endpoint's address
// points at the setting that allows private addresses only where that
// setting would let the address through. A link-local address (cloud
// metadata) is refused whatever the setting (D44, "never link-local"), so
// its refusal must not tell the operator to set what they have already set
// or what would change nothing; a private one, refused by default, names
// the setting, including the flag an operator of examples/server or of
// consentkit -dsn sets.
func TestCheckURLHintOnlyWhereItHelps(t *testing.T) {
	for _, c := range []struct {
		url          string
		allowPrivate bool
		hint         bool
	}{
		{"http://169.254.169.254/latest", false, false},
		{"http://169.254.169.254/latest", true, false},
		{"http://[fe80::1]/h", true, false},
		{"http://192.0.2.1/h", true, false},
		{"http://10.0.0.1/h", false, true},
		{"http://127.0.0.1:9/h", false, true},
	} {
		err := webhook.CheckURL(c.url, c.allowPrivate)
		if err == nil {
			t.Fatalf("CheckURL(%s, %v) accepted it", c.url, c.allowPrivate)
		}
		msg := err.Error()
		if got := strings.Contains(msg, "WebhookAllowPrivate"); got != c.hint {
			t.Errorf("CheckURL(%s, allowPrivate %v) = %q: hint at WebhookAllowPrivate %v, want %v", c.url, c.allowPrivate, msg, got, c.hint)
		}
		if c.hint && !strings.Contains(msg, "-webhook-allow-private") {
			t.Errorf("CheckURL(%s) = %q: does not name -webhook-allow-private, the flag of examples/server and consentkit -dsn", c.url, msg)
		}
	}
}
