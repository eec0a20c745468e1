package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
)

// TestShowChangesNothing: a command that shows when given none of its own
// flags changes nothing and audits nothing, whatever common flags it is
// given (-company, -json, -timeout…), through either backend.
func TestShowChangesNothing(t *testing.T) {
	for _, b := range []*backend{httpBackend(t, teststore.Memory(t)), directBackend(t, "memory")} {
		t.Run(b.name, func(t *testing.T) {
			b.ok(t, "companies", "create", "-id", "acme", "-name", "Acme")
			b.ok(t, "companies", "insights-rules", "-company", "acme", "-max-per-hour", "2")
			b.ok(t, "companies", "attest", "-company", "acme", "-on")
			shows := [][]string{
				{"companies", "insights-rules", "-company", "acme"},
				{"companies", "insights-rules", "-company", "acme", "-json"},
				{"companies", "attest", "-company", "acme", "-json"},
			}
			if b.name == "http" {
				shows = append(shows, []string{"companies", "insights-rules", "-company", "acme", "-timeout", "10s"})
			}
			for _, args := range shows {
				if out := b.ok(t, args...); !strings.Contains(out, `"max_per_hour":2`) {
					t.Errorf("consentkit %s:\n%s", strings.Join(args, " "), out)
				}
			}
			if out := b.ok(t, "companies", "show", "-company", "acme"); !strings.Contains(out, `insights rules            {"max_per_hour":2}`) ||
				!strings.Contains(out, "attest certificates       on\n") {
				t.Errorf("after the shows, the company reads:\n%s", out)
			}
			entries, err := b.svc.AuditLog(context.Background(), consent.AuditQuery{CompanyID: "acme", ActionPrefix: "company."})
			if err != nil {
				t.Fatal(err)
			}
			var actions []string
			for _, e := range entries {
				actions = append(actions, e.Action)
			}
			if got := strings.Join(actions, " "); strings.Count(got, consent.AuditCompanyInsightsRules) != 1 || strings.Count(got, consent.AuditCompanyAttestation) != 1 {
				t.Errorf("audited: %s; want one change of each, the set", got)
			}
		})
	}
}

// acmeSession is an HTTP backend whose company acme, the default, has the
// property web and its session s1.
func acmeSession(t *testing.T) *backend {
	t.Helper()
	b := httpBackend(t, teststore.Memory(t))
	b.env[CompanyEnv] = "acme"
	b.ok(t, "companies", "create", "-id", "acme", "-name", "Acme")
	b.ok(t, "properties", "add", "-id", "web", "-name", "Web")
	if _, err := b.svc.StartSession(context.Background(), consentkit.SessionParams{ID: "s1", CompanyID: "acme", PropertyID: "web"}); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCertificateTextShown: certificates show prints a consent's text a
// line at a time, with what would move the cursor or reorder the line
// escaped: a bare carriage return would have the terminal overwrite the
// start of the line, so that the operator read other words than the
// certificate holds.
func TestCertificateTextShown(t *testing.T) {
	b := acmeSession(t)
	ctx := context.Background()
	const text = "I do NOT agree to calls\rI agree to calls       \r\n" +
		"Windows line\r\nTabs\tkept\n\u202eslla\u0085c\u2028end\r"
	_, err := b.svc.IssueCertificate(ctx, consentkit.CertificateParams{ID: "c1", CompanyID: "acme", PropertyID: "web", SessionID: "s1",
		Records: []consent.Record{{Text: text, OptInAt: start}}})
	if err != nil {
		t.Fatal(err)
	}
	out := b.ok(t, "certificates", "show", "c1")
	_, consents, _ := strings.Cut(out, "\nconsent 1 ")
	want := "    I do NOT agree to calls\\rI agree to calls       \n" +
		"    Windows line\n" +
		"    Tabs\tkept\n" +
		"    \\u202eslla\\u0085c\\u2028end\\r\n"
	if _, lines, _ := strings.Cut(consents, "\n"); lines != want {
		t.Errorf("certificates show printed the text as\n%q\nwant\n%q", lines, want)
	}
	if out, _ := b.json(t, "certificates", "show", "c1"); !strings.Contains(out, `I do NOT agree to calls\rI agree to calls`) {
		t.Errorf("certificates show -json prints the text otherwise than stored: %s", out)
	}
}

// TestExpiresDays: -expires Nd is N days of 24 hours from now, up to the most
// days taken; N*24h would overflow a time.Duration past 106,751 days.
func TestExpiresDays(t *testing.T) {
	now := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	c := &call{cli: &cli{now: func() time.Time { return now }}}
	for in, want := range map[string]string{
		"90d":                  "2027-02-20T09:00:00Z",
		"106752d":              now.AddDate(0, 0, 106752).Format(time.RFC3339),
		"213504d":              now.AddDate(0, 0, 213504).Format(time.RFC3339),
		"1000000d":             now.AddDate(0, 0, 1_000_000).Format(time.RFC3339),
		"720h":                 "2026-12-22T09:00:00Z",
		"2030-01-01T00:00:00Z": "2030-01-01T00:00:00Z",
	} {
		if got, err := c.expiry(in); err != nil || got != want {
			t.Errorf("-expires %s: %s, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"1000001d", "0d", "-1d", "1.5d", "d", "99999999999999999999d", "-5h"} {
		if got, err := c.expiry(in); err == nil {
			t.Errorf("-expires %s: %s; want a usage error", in, got)
		}
	}
}
