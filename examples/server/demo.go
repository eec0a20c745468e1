package main

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/seed"
)

// exampleSeed is the scenario loaded as demo data into an empty store: the
// same file as seed.example.json, with a real rrweb recording of a form.
//
//go:embed seed.example.json
var exampleSeed []byte

// demoTokens are the secrets of the tokens issued with the demo data: one
// of acme, and one of buyer, the third party acme authorizes (D9). Both
// are "" when none was issued.
type demoTokens struct{ acme, buyer string }

// prepare loads the seed file when one is given, or demo data into an empty
// store. It returns the demo tokens' secrets, or none when it issued none.
func prepare(ctx context.Context, svc *consentkit.Service, seedPath string, log *slog.Logger) (demoTokens, error) {
	if seedPath != "" {
		f, err := os.Open(seedPath)
		if err != nil {
			return demoTokens{}, err
		}
		defer func() { _ = f.Close() }() // read only: its Close loses nothing
		file, err := seed.Parse(f)
		if err != nil {
			return demoTokens{}, fmt.Errorf("%s: %w", seedPath, err)
		}
		sum, err := seed.Load(ctx, svc, file)
		if err != nil {
			return demoTokens{}, fmt.Errorf("%s: %w", seedPath, err)
		}
		log.Info("seed loaded", "file", seedPath, "companies", sum.Companies, "properties", sum.Properties,
			"tokens", sum.Tokens, "sessions", sum.Sessions, "certificates", sum.Certificates)
		return demoTokens{}, nil
	}
	file, err := seed.Parse(bytes.NewReader(exampleSeed))
	if err != nil {
		return demoTokens{}, err
	}
	// The demo's token is made fresh, never the example file's public one.
	for i := range file.Companies {
		file.Companies[i].Tokens = nil
	}
	freshen(file, svc.Now())
	var tokens demoTokens
	err = svc.Store().Update(ctx, func(tx consent.Tx) error {
		// A function run again (consent.Store may) starts again: the
		// tokens of a run rolled back do not exist.
		tokens = demoTokens{}
		empty, err := seed.Empty(ctx, tx)
		if err != nil || !empty {
			return err
		}
		if _, err := seed.LoadTx(ctx, svc, tx, file); err != nil {
			return err
		}
		_, acme, err := svc.IssueTokenTx(ctx, tx, consentkit.TokenParams{
			CompanyID: "acme", Permissions: []consent.Permission{consent.PermissionRetention},
		})
		if err != nil {
			return err
		}
		_, buyer, err := svc.IssueTokenTx(ctx, tx, consentkit.TokenParams{CompanyID: "buyer"})
		if err != nil {
			return err
		}
		tokens = demoTokens{acme: acme, buyer: buyer}
		return nil
	})
	if err != nil {
		return demoTokens{}, fmt.Errorf("demo data: %w", err)
	}
	if tokens.acme != "" {
		log.Info("demo data loaded into the empty store", "company", "acme")
	} else {
		log.Info("the store has data already; no demo data loaded")
	}
	return tokens, nil
}

// guide is what the server prints when it starts.
type guide struct {
	base   string   // the origin of the server that a browser opens (ownOrigin)
	listen net.Addr // the address it listens on
	tokens demoTokens
	// demo says that the demo form is served, seeded that a seed file was
	// loaded, examples that the store holds the example data the commands
	// name (exampleData), operator that the operator API and the dashboard
	// are served.
	demo, seeded, examples, operator bool
}

// printTokens prints the demo tokens, when prepare issued them: they are
// shown this once.
func printTokens(w io.Writer, tokens demoTokens) {
	if tokens.acme == "" {
		return
	}
	_, _ = fmt.Fprintf(w, "Demo company acme has 25.50 in its wallet. Its token is shown this once:\n\n  export TOKEN=%s\n\n"+
		"Company buyer, which acme authorizes to verify its certificates, has 5.00. Its token, also shown once:\n\n  export BUYER_TOKEN=%s\n\n",
		tokens.acme, tokens.buyer) // the terminal: when it is gone, no one reads them
}

// print prints the tokens (once) and, when the store holds the example
// data, a curl command for each main endpoint using its ids.
func (g guide) print(w io.Writer) {
	var b strings.Builder
	base := g.base
	fmt.Fprintf(&b, "\nconsentkit is listening on %s\n\n", base)
	if tcp, ok := g.listen.(*net.TCPAddr); ok && tcp.IP.IsUnspecified() {
		fmt.Fprintf(&b, "(It listens on every interface, %s; the demo form opens from this machine at the address above.)\n\n", tcp)
	}
	if g.demo {
		fmt.Fprintf(&b, "Open %s/demo in a browser: a form that records your visit and issues a consent certificate,\nwith the commands to verify, retain and revoke it.\n\n", base)
	}
	if g.operator {
		fmt.Fprintf(&b, "The dashboard is on %s/dashboard/ and the operator API on %s/operator/.\n\n", base, base)
	} else {
		fmt.Fprintf(&b, "The dashboard and the operator API are off: set %s to a secret of at least %d characters to serve them.\n\n",
			OperatorSecretEnv, httpadapter.MinOperatorSecret)
	}
	switch {
	case g.tokens.acme != "":
		printTokens(&b, g.tokens)
	case !g.examples && g.seeded:
		b.WriteString("Your seed file was loaded. Call the API with a token of one of its companies: -H \"Authorization: Bearer $TOKEN\".\n\n")
	case !g.examples:
		b.WriteString("The store had data already. Call the API with a token of one of its companies: -H \"Authorization: Bearer $TOKEN\".\n\n")
	case g.seeded:
		b.WriteString("Your seed file was loaded. Set TOKEN to a token of its company acme to use these commands:\n\n")
	default:
		b.WriteString("The store had data already. Set TOKEN to a token of company acme (the one printed when the server loaded\n" +
			"the demo data, or the seed file's if one loaded it) to use these commands:\n\n")
	}
	curl := func(title, path, body string, auth bool) {
		fmt.Fprintf(&b, "# %s\ncurl -s -X POST %s%s", title, base, path)
		if auth {
			b.WriteString(` -H "Authorization: Bearer $TOKEN"`)
		}
		if body != "" {
			fmt.Fprintf(&b, ` -H 'Content-Type: application/json' -d '%s'`, body)
		}
		b.WriteString("\n\n")
	}
	if g.examples {
		curl("Exact match (0.015)", "/verify/match", `{"certificate_id":"cert-1","company_id":"acme","consent":"I agree to the terms"}`, true)
		curl("Partial match (0.015)", "/verify/partial-match", `{"certificate_id":"cert-1","company_id":"acme","term":"terms"}`, true)
		curl("Certificate info (free)", "/verify/certificate-info", `{"certificate_id":"cert-1","company_id":"acme","property_id":"acme-web"}`, true)
		curl("Retain API: keep a recording and convert it to MP4 (0.10)", "/api/integrations/acme/retain/s1", "", true)
		curl("Retain API batch (0.10 per retained session)", "/api/integrations/acme/retain/batch", `{"session_ids":["s2"]}`, true)
		curl("Long-term session retention (0.10)", "/verify/session/acme", `{"session_id":"s3"}`, true)
		curl("Long-term certificate retention (0.10)", "/verify/certificate/acme", `{"session_id":"s1"}`, true)
		if g.tokens.buyer != "" {
			fmt.Fprintf(&b, "# Third-party match (0.015, from buyer's wallet): buyer verifies acme's cert-2 with its own token (D9)\n"+
				"curl -s -X POST %s/verify/match -H \"Authorization: Bearer $BUYER_TOKEN\" -H 'Content-Type: application/json' -d '%s'\n\n",
				base, `{"certificate_id":"cert-2","company_id":"buyer","originator_company_id":"acme","consent":"I agree that Acme may email me about my quote"}`)
		}
		curl("Consumer opt-out (free, no token); verifications of cert-1 answer 403 afterwards", "/opt-out", `{"company_id":"acme","email":"jane@example.com"}`, false)
	}
	fmt.Fprintf(&b, "Health: curl -s %s/healthz\n\n", base)
	_, _ = io.WriteString(w, b.String()) // the terminal: when it is gone, no one reads the guide
}

// exampleData reports whether the store holds the ids of the example data
// (seed.example.json, the demo data) that the guide's commands name: its
// property acme-web, certificate cert-1 and sessions s1, s2 and s3, all of
// company acme. A seed file of other data has none of them.
func exampleData(ctx context.Context, svc *consentkit.Service) (bool, error) {
	found := false
	err := svc.Store().View(ctx, func(tx consent.Tx) error {
		found = false
		prop, err := tx.Property(ctx, "acme-web")
		if err != nil || prop.CompanyID != demoCompany {
			return err
		}
		cert, err := tx.Certificate(ctx, "cert-1")
		if err != nil || cert.CompanyID != demoCompany {
			return err
		}
		for _, id := range []string{"s1", "s2", "s3"} {
			ses, err := tx.Session(ctx, id)
			if err != nil || ses.CompanyID != demoCompany {
				return err
			}
		}
		found = true
		return nil
	})
	if errors.Is(err, consent.ErrNotFound) {
		return false, nil
	}
	return found, err
}

// freshen moves the times of the demo's sessions and certificates so that
// the latest is now, keeping their order and spacing: the demo data is as
// new on any day as the example file was when it was written, and no purge
// (D43) takes it before its window ends.
func freshen(f *seed.File, now time.Time) {
	var latest time.Time
	for _, s := range f.Sessions {
		latest = later(latest, s.CreatedAt)
	}
	for _, c := range f.Certificates {
		latest = later(latest, c.CreatedAt)
	}
	if latest.IsZero() {
		return
	}
	shift := now.Sub(latest)
	move := func(t *time.Time) {
		if !t.IsZero() {
			*t = t.Add(shift)
		}
	}
	for i := range f.Sessions {
		move(&f.Sessions[i].CreatedAt)
	}
	for i := range f.Certificates {
		c := &f.Certificates[i]
		move(&c.CreatedAt)
		for j := range c.Consents {
			move(&c.Consents[j].OptInAt)
		}
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
