package main

import (
	"context"
	"encoding/json"
	"errors"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/capture"
	"github.com/consentkit/consentkit/consent"
)

// The demo form: a page of this server, of its own property acme-demo whose
// allowed origin is the server itself, so that a newcomer sees the whole
// loop in a browser — fill the form, get a certificate id, verify it with
// the printed curl, retain it, watch it become an MP4, opt out, and see
// verification refused.

const (
	demoCompany  = "acme"
	demoProperty = "acme-demo"
	demoConsent  = "By ticking this box I agree that Acme Insurance may call and text me about my quote at the number above."
)

// demoOrigins are the origins a browser may use for this server: its own
// (ownOrigin), and localhost for a loopback or unspecified address.
func demoOrigins(addr net.Addr) []string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return nil
	}
	own := ownOrigin(addr)
	if tcp.IP.IsLoopback() || tcp.IP.IsUnspecified() {
		return []string{own, "http://" + net.JoinHostPort("localhost", strconv.Itoa(tcp.Port))}
	}
	return []string{own}
}

// ownOrigin is the origin of this server that the guide prints and the
// demo's pages load the snippet from: the address it listens on, or
// 127.0.0.1 for an unspecified one (-addr :8080 or 0.0.0.0:8080), whose
// http://[::]:8080 is no origin the demo allows (demoOrigins).
func ownOrigin(addr net.Addr) string {
	if tcp, ok := addr.(*net.TCPAddr); ok && tcp.IP.IsUnspecified() {
		return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(tcp.Port))
	}
	return "http://" + addr.String()
}

// setupDemo gives the demo company its demo property, allowed from this
// server's origins besides those it had: a second server on another port,
// sharing the store, adds its own and leaves the first one's form working.
// The origins are read, merged and written in one transaction, so that
// servers starting at once keep each other's. It does nothing when the
// store has no demo company (a custom seed), and changes nothing (and
// audits nothing) when the origins are there already. It reports whether
// the demo is on.
func setupDemo(ctx context.Context, svc *consentkit.Service, addr net.Addr) (bool, error) {
	origins := demoOrigins(addr)
	on, err := addDemoOrigins(ctx, svc, origins)
	if errors.Is(err, consent.ErrConflict) {
		// Another server created the property since this one looked:
		// add to its origins.
		on, err = addDemoOrigins(ctx, svc, origins)
	}
	return on, err
}

// addDemoOrigins is setupDemo's transaction.
func addDemoOrigins(ctx context.Context, svc *consentkit.Service, origins []string) (bool, error) {
	on := false
	err := svc.Store().Update(ctx, func(tx consent.Tx) error {
		on = false // a retried transaction starts again
		_, err := tx.Company(ctx, demoCompany)
		if errors.Is(err, consent.ErrNotFound) { // no demo company
			return nil
		}
		if err != nil {
			return err
		}
		prop, err := tx.Property(ctx, demoProperty)
		switch {
		case errors.Is(err, consent.ErrNotFound):
			_, err = svc.AddPropertyTx(ctx, tx, consentkit.PropertyParams{ID: demoProperty, CompanyID: demoCompany, Name: "Demo form", AllowedOrigins: origins})
			on = err == nil
			return err
		case err != nil:
			return err
		case prop.CompanyID != demoCompany: // the id is another company's
			return nil
		}
		on = true
		merged := slices.Clone(prop.AllowedOrigins)
		for _, o := range origins {
			if !slices.Contains(merged, o) {
				merged = append(merged, o)
			}
		}
		if len(merged) == len(prop.AllowedOrigins) {
			return nil
		}
		// The property keeps at most maxDemoOrigins: the oldest give way.
		merged = merged[max(0, len(merged)-maxDemoOrigins):]
		_, err = svc.SetAllowedOriginsTx(ctx, tx, demoCompany, demoProperty, merged)
		return err
	})
	return on && err == nil, err
}

// maxDemoOrigins bounds the demo property's origins, which grow by a port
// at a time; a property holds at most 100.
const maxDemoOrigins = 50

var demoForm = template.Must(template.New("form").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>consentkit demo: get a quote</title>
<script src="{{.Base}}/capture/capture.js" data-property-id="{{.Property}}" async></script>
<style>
body { font: 16px/1.5 system-ui, sans-serif; max-width: 36rem; margin: 2rem auto; padding: 0 1rem; color: #111; background: #fff; }
label { display: block; margin: .75rem 0; }
input[type=email], input[type=tel] { display: block; width: 100%; padding: .4rem; font: inherit; }
button { font: inherit; padding: .5rem 1.25rem; }
code, pre { background: #f3f3f3; padding: .1rem .3rem; overflow-x: auto; }
.notice { border: 2px solid #b45309; padding: .5rem 1rem; }
</style></head>
<body>
<h1>Get a quote</h1>
{{template "recorder" .}}
<p>A demo form of company <code>{{.Company}}</code>, property <code>{{.Property}}</code>. The page embeds the
consentkit snippet; it records this visit and, when you submit, issues a consent certificate.</p>
<form method="post" action="/demo/submitted">
  <label>Email <input type="email" name="email" required autocomplete="email"></label>
  <label>Mobile <input type="tel" name="mobile" autocomplete="tel"></label>
  <label><input type="checkbox" name="agree" required>
    <span data-consent data-consent-types="tcpa,marketing">{{.Consent}}</span></label>
  <button type="submit">Get my quote</button>
</form>
<p>The snippet tag on this page:</p>
<pre>&lt;script src="{{.Base}}/capture/capture.js" data-property-id="{{.Property}}" async&gt;&lt;/script&gt;</pre>
</body></html>
{{define "recorder"}}{{if eq .Recorder "installing"}}
<p class="notice" id="recorder">The session recorder is being installed (<code>{{.Install}}</code>). Until it is, this form
records nothing and no certificate is issued: reload this page in a moment.</p>
{{else if eq .Recorder "missing"}}
<p class="notice" id="recorder">The session recorder is not installed on this server, so this form records nothing and no
certificate is issued. {{with .Where}}{{if .Checkout}}From the root of your checkout of consentkit, <code>{{.Checkout}}</code>,
run <code>{{$.Install}}</code>{{else}}The server looks for it in <code>{{.Dir}}</code> ({{if .SetBy}}set by
<code>{{.SetBy}}</code>{{else}}under the directory the server runs from, which is not the root of a checkout of
consentkit{{end}}): put rrweb 2.2.2's dist files there, or point <code>-replayer</code> at the
<code>node_modules/rrweb/dist</code> directory of an install (<code>{{$.Install}}</code>, run from the root of a checkout
of consentkit, makes one in <code>{{$.DefaultDir}}</code>){{end}}{{end}}; it is served as soon as it is in place (no
restart), then reload this page. Converting recordings to MP4 also needs <code>{{.VideoTools}}</code>.</p>
{{end}}{{end}}`))

var demoDone = template.Must(template.Must(demoForm.Clone()).New("done").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>consentkit demo: {{if .Issued}}certificate {{.Certificate}}{{else}}no certificate{{end}}</title>
<style>body { font: 16px/1.5 system-ui, sans-serif; max-width: 48rem; margin: 2rem auto; padding: 0 1rem; }
pre { background: #f3f3f3; padding: .5rem; overflow-x: auto; white-space: pre-wrap; }
.notice { border: 2px solid #b45309; padding: .5rem 1rem; }</style></head>
<body>
<h1>Thank you</h1>
{{if .Issued}}
<p>The form's receiver got <code>consent_certificate_id = {{.Certificate}}</code>, issued for the visit recorded in
session <code>{{.Session}}</code>.</p>
<p>With the demo token in <code>$TOKEN</code> (printed when the server started):</p>
<pre>{{range .Commands}}# {{.Title}}
{{.Line}}

{{end}}</pre>
{{else if .Certificate}}
<p id="not-issued">The form's receiver got <code>consent_certificate_id = {{.Certificate}}</code>, but no certificate of this
demo form has that id: consent was not given for it.{{if not .Recorder}} The consent request travels beside the form and
may still be on its way: reload this page.{{end}}</p>
{{template "recorder" .}}
{{else}}
<p id="no-id">The form arrived without a valid <code>consent_certificate_id</code>: the snippet did not load, or could not reach
the service.</p>
{{template "recorder" .}}
{{end}}
<p><a href="/demo">Back to the form</a></p>
</body></html>`))

// A command shown on the demo's pages.
type command struct{ Title, Line string }

// shellQuote quotes s as one word of a POSIX shell: whatever it holds, a
// pasted command passes it as it is and runs nothing of it.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// curl is a curl command with every word quoted: the method, the URL, the
// token (from $TOKEN) when auth, and the JSON body of v when it is not nil.
func curl(method, url string, auth bool, v any) string {
	var b strings.Builder
	b.WriteString("curl -s")
	if method != "GET" {
		b.WriteString(" -X " + shellQuote(method))
	}
	b.WriteString(" " + shellQuote(url))
	if auth {
		b.WriteString(` -H "Authorization: Bearer $TOKEN"`)
	}
	if v != nil {
		body, _ := json.Marshal(v) // maps of strings: never fails
		b.WriteString(" -H 'Content-Type: application/json' -d " + shellQuote(string(body)))
	}
	return b.String()
}

// demoCommands are the commands to try on an issued certificate.
func demoCommands(base, certID, sessionID, email string) []command {
	match := map[string]string{"certificate_id": certID, "company_id": demoCompany, "consent": demoConsent}
	optOut := map[string]string{"company_id": demoCompany, "email": email}
	if email == "" {
		optOut = map[string]string{"company_id": demoCompany, "certificate_id": certID}
	}
	session := base + "/api/integrations/" + demoCompany + "/sessions/" + sessionID
	return []command{
		{"1. verify the consent text you saw (0.015)", curl("POST", base+"/verify/match", true, match)},
		{"2. what the certificate holds: session, origin, visibility of the text (free)",
			curl("POST", base+"/verify/certificate-info", true, map[string]string{"certificate_id": certID, "company_id": demoCompany, "property_id": demoProperty})},
		{"3. retain the recording and convert it to MP4 (0.10), then watch its status",
			curl("POST", base+"/api/integrations/"+demoCompany+"/retain/"+sessionID, true, nil) + "\n" + curl("GET", session, true, nil)},
		{"4. opt out as the consumer (free, no token) ...", curl("POST", base+"/opt-out", false, optOut)},
		{"5. ... and verification is refused (403)", curl("POST", base+"/verify/match", true, match)},
	}
}

// maxEmail bounds the email the landing page repeats.
const maxEmail = 254

// demoHandler serves the demo form and the page its form posts to. The form
// posts to POST /demo/submitted, which answers with a redirect to GET
// /demo/submitted?certificate_id=…, a page that can be reloaded. The page
// shows only certificates of the demo property: any other id, valid or
// not, is a certificate not issued.
func demoHandler(svc *consentkit.Service, base string, rec *recorderSetup, log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	page := func(data map[string]any) map[string]any {
		data["Base"], data["Company"], data["Property"] = base, demoCompany, demoProperty
		data["Recorder"], data["Install"], data["VideoTools"] = rec.state(), strings.Join(npmInstall, " "), videoToolsInstall
		data["Where"], data["DefaultDir"] = rec.where, capture.DefaultRRWebDir
		return data
	}
	render := func(w http.ResponseWriter, t *template.Template, data map[string]any) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if err := t.Execute(w, page(data)); err != nil {
			log.Error("demo page", "err", err)
		}
	}
	mux.HandleFunc("GET /demo", func(w http.ResponseWriter, r *http.Request) {
		render(w, demoForm, map[string]any{"Consent": demoConsent})
	})
	mux.HandleFunc("POST /demo/submitted", func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		if err := r.ParseForm(); err != nil {
			http.Error(w, "bad form", http.StatusBadRequest)
			return
		}
		q := url.Values{}
		if id := r.PostForm.Get("consent_certificate_id"); consent.ValidID(id) {
			q.Set("certificate_id", id)
		}
		if email := r.PostForm.Get("email"); email != "" && len(email) <= maxEmail {
			q.Set("email", email)
		}
		if len(q) == 0 {
			http.Redirect(w, r, "/demo/submitted", http.StatusSeeOther)
			return
		}
		http.Redirect(w, r, "/demo/submitted?"+q.Encode(), http.StatusSeeOther)
	})
	mux.HandleFunc("GET /demo/submitted", func(w http.ResponseWriter, r *http.Request) {
		id, email := r.URL.Query().Get("certificate_id"), r.URL.Query().Get("email")
		if len(email) > maxEmail || !consent.ValidText(email) {
			email = ""
		}
		data := map[string]any{}
		if consent.ValidID(id) {
			data["Certificate"] = id
			// The consent request travels beside the form; give it a moment.
			if ses, ok := demoSession(r.Context(), svc, id); ok {
				data["Issued"], data["Session"], data["Commands"] = true, ses, demoCommands(base, id, ses, email)
			}
		}
		render(w, demoDone, data)
	})
	return mux
}

// demoSession returns the session of the demo property's certificate id,
// waiting up to two seconds for it to be issued. Another property's
// certificate is not found, as an unknown one.
func demoSession(ctx context.Context, svc *consentkit.Service, certID string) (string, bool) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	for {
		var sessionID string
		err := svc.Store().View(ctx, func(tx consent.Tx) error {
			c, err := tx.Certificate(ctx, certID)
			switch {
			case err != nil:
				return err
			case c.CompanyID != demoCompany || c.PropertyID != demoProperty:
				return consent.ErrNotFound
			}
			sessionID = c.SessionID
			return nil
		})
		if err == nil {
			return sessionID, true
		}
		if !errors.Is(err, consent.ErrNotFound) {
			return "", false
		}
		select {
		case <-ctx.Done():
			return "", false
		case <-time.After(100 * time.Millisecond):
		}
	}
}
