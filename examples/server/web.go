package main

import (
	"context"
	"errors"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

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

// demoOrigins are the origins a browser may use for this server: the
// address it listens on, and localhost for a loopback address.
func demoOrigins(addr net.Addr) []string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return nil
	}
	port := strconv.Itoa(tcp.Port)
	own := "http://" + tcp.String()
	if tcp.IP.IsUnspecified() {
		own = "http://" + net.JoinHostPort("127.0.0.1", port)
	}
	if tcp.IP.IsLoopback() || tcp.IP.IsUnspecified() {
		return []string{own, "http://" + net.JoinHostPort("localhost", port)}
	}
	return []string{own}
}

// setupDemo gives the demo company its demo property, allowed from this
// server's origins. It does nothing when the store has no demo company (a
// custom seed); it reports whether the demo is on.
func setupDemo(ctx context.Context, svc *consent.Service, addr net.Addr) (bool, error) {
	origins := demoOrigins(addr)
	_, err := svc.SetAllowedOrigins(ctx, demoCompany, demoProperty, origins)
	if consent.ErrorCode(err) != consent.NotFound {
		return err == nil, err
	}
	_, err = svc.AddProperty(ctx, consent.PropertyParams{ID: demoProperty, CompanyID: demoCompany, Name: "Demo form", AllowedOrigins: origins})
	if consent.ErrorCode(err) == consent.NotFound { // no demo company
		return false, nil
	}
	return err == nil, err
}

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
</style></head>
<body>
<h1>Get a quote</h1>
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
</body></html>`))

var demoDone = template.Must(template.New("done").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>consentkit demo: certificate {{.Certificate}}</title>
<style>body { font: 16px/1.5 system-ui, sans-serif; max-width: 48rem; margin: 2rem auto; padding: 0 1rem; }
pre { background: #f3f3f3; padding: .5rem; overflow-x: auto; white-space: pre-wrap; }</style></head>
<body>
<h1>Thank you</h1>
{{if .Certificate}}
<p>The form's receiver got <code>consent_certificate_id = {{.Certificate}}</code>{{if .Session}}, recorded in session <code>{{.Session}}</code>{{end}}.
{{if not .Issued}}The certificate is not issued yet: the consent request may still be on its way; reload in a moment.{{end}}</p>
<p>With the demo token in <code>$TOKEN</code> (printed when the server started):</p>
<pre># 1. verify the consent text you saw (0.015)
curl -s -X POST {{.Base}}/verify/match -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
  -d '{{.MatchBody}}'

# 2. what the certificate holds: session, origin, visibility of the text (free)
curl -s -X POST {{.Base}}/verify/certificate-info -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
  -d '{"certificate_id":"{{.Certificate}}","company_id":"{{.Company}}","property_id":"{{.Property}}"}'

# 3. retain the recording and convert it to MP4 (0.10), then watch its status
curl -s -X POST {{.Base}}/api/integrations/{{.Company}}/retain/{{.Session}} -H "Authorization: Bearer $TOKEN"
curl -s {{.Base}}/api/integrations/{{.Company}}/sessions/{{.Session}} -H "Authorization: Bearer $TOKEN"

# 4. opt out as the consumer (free, no token) ...
curl -s -X POST {{.Base}}/opt-out -H 'Content-Type: application/json' -d '{"company_id":"{{.Company}}","email":"{{.Email}}"}'

# 5. ... and verification is refused (403)
curl -s -X POST {{.Base}}/verify/match -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
  -d '{{.MatchBody}}'</pre>
{{else}}
<p>The form arrived without <code>consent_certificate_id</code>: the snippet could not reach the service.</p>
{{end}}
<p><a href="/demo">Back to the form</a></p>
</body></html>`))

// demoHandler serves the demo form and the page its form posts to.
func demoHandler(svc *consent.Service, base string, log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /demo", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		err := demoForm.Execute(w, map[string]string{"Base": base, "Company": demoCompany, "Property": demoProperty, "Consent": demoConsent})
		if err != nil {
			log.Error("demo form", "err", err)
		}
	})
	mux.HandleFunc("POST /demo/submitted", func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		if err := r.ParseForm(); err != nil {
			http.Error(w, "bad form", http.StatusBadRequest)
			return
		}
		id := r.PostForm.Get("consent_certificate_id")
		data := map[string]any{
			"Base": base, "Company": demoCompany, "Property": demoProperty, "Certificate": id,
			"Email":     r.PostForm.Get("email"),
			"MatchBody": `{"certificate_id":"` + id + `","company_id":"` + demoCompany + `","consent":"` + demoConsent + `"}`,
		}
		if consent.ValidID(id) {
			// The consent request travels beside the form; give it a moment.
			ses, issued := demoSession(r.Context(), svc, id)
			data["Session"], data["Issued"] = ses, issued
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if err := demoDone.Execute(w, data); err != nil {
			log.Error("demo page", "err", err)
		}
	})
	return mux
}

// demoSession returns the session of the reserved certificate id, waiting
// up to two seconds for the certificate to be issued.
func demoSession(ctx context.Context, svc *consent.Service, certID string) (string, bool) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	for {
		var sessionID string
		err := svc.Store().View(ctx, func(tx consent.Tx) error {
			c, err := tx.Certificate(ctx, certID)
			if err == nil {
				sessionID = c.SessionID
			}
			return err
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
