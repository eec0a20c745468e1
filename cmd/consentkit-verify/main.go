// Command consentkit-verify checks a consent certificate's signature
// offline (D41), from the JSON that certificate-info answered and the
// public keys that GET /.well-known/consentkit-keys publishes, both saved
// to files: no database, no network.
//
//	curl -s -X POST https://consent.example/verify/certificate-info -H "Authorization: Bearer $TOKEN" \
//	  -d '{"certificate_id":"cert-1","company_id":"acme","property_id":"acme-web"}' > cert.json
//	curl -s https://consent.example/.well-known/consentkit-keys > keys.json
//	go run ./cmd/consentkit-verify -keys keys.json cert.json
//
// It prints what the signature vouches for and exits 0 when it holds and
// every fact the answer shows beside it is what is signed; 1 when not (the
// certificate carries no signature, not one that a published key verifies
// over its content, or the answer shows a signed fact with another value,
// which it names). An answer in which an object has two members of one
// name, in the same or another letter case ("text" and "Text"), is refused
// before anything else is read: Go reads either into one field and keeps
// the last, other readers the name as written, so it shows each reader
// something else. Every member is read as Go reads it, by its name in
// any letter case: "Origin" is compared with the signed origin, and
// listed as unsigned besides, not being written as the API writes it. A
// member the API leaves out when empty (client_ip, user_agent,
// recording_sha256, consent_visibility, revoked_before) reads as none,
// so one missing while it is signed is refused too; one the API
// always writes, missing, says nothing, and is listed as signed but not
// shown. An attestation (D49) and computed insights (D50) in the answer
// are statements signed apart: each is checked against the published keys
// and the certificate, and what the answer shows beside its statement
// (the attestation's status, reason, screenshot digest and differences;
// the insights' status, signals and verdict) must be what it states;
// without a statement, either may only say that none is made yet
// (pending, or failed insights). It lists the facts the answer shows that
// no certificate signature covers (valid, events_combined, members inside
// it that the API does not write, an attestation or insights without a
// signed statement, and in certificates signed in version 1 the facts
// version 2 added). It exits 2 when the input cannot be read as a
// certificate-info answer: a file that is missing or not JSON; an error
// answer of the API saved in the certificate's place (curl -s writes a
// 401, 403 or 404 body as readily as a 200), which is told with its status
// and message, such as "403 This session has opted out"; or JSON of
// something else; and on a usage error (-h prints the usage and exits 0).
//
// Every string it prints that it took from the answer (or the keys) is
// printed as it is only when it is printable ASCII without space, quote,
// backslash or comma, and quoted as Go quotes strings otherwise; messages
// naming such strings have every unprintable character escaped: an
// edited answer cannot add lines of its own to the report, nor move the
// cursor of a terminal over it. The insights' asked_at must be an RFC 3339
// time and their asked reasons codes of package insights (D50), or the
// answer is refused.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/consentkit/consentkit/signed"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// info is the part of a certificate-info answer that the check reads — its
// signature, as the server writes it (signed.Proof) — and of an error
// answer of the API (D14), which the file may hold instead:
// {"status":403,"error":…} (the Verification API) or
// {"success":false,"error":…} (the Retain API).
type info struct {
	CertificateID string `json:"certificate_id"`
	signed.Proof
	// Attestation and Insights, when the answer has them, are the
	// service's own signed statements of what the consumer could see (D49)
	// and of the behaviour signals and the bot verdict (D50), checked as the
	// certificate is; what the answer shows beside each must be what it
	// states (the insights' verdict may add the reasons found when asked:
	// signed.AskedBot.Check).
	Attestation *signed.AttestationAnswer `json:"attestation"`
	Insights    *signed.InsightsAnswer    `json:"insights"`

	Status int    `json:"status"`
	Error  string `json:"error"`
}

// notCertificate says why an input that is JSON is no certificate-info
// answer; "" when it is one.
func (c *info) notCertificate() string {
	switch {
	case c.Signed != nil || c.CertificateID != "":
		return ""
	case c.Error != "" && c.Status != 0:
		return fmt.Sprintf("an error answer of the API, not a certificate: %d %s", c.Status, escaped(c.Error))
	case c.Error != "":
		return "an error answer of the API, not a certificate: " + escaped(c.Error)
	}
	return "JSON but no certificate-info answer: it has no signed content, no certificate_id and no error"
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("consentkit-verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	keysPath := fs.String("keys", "", "`file` of the public keys, as GET /.well-known/consentkit-keys answers them (required)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: consentkit-verify -keys keys.json [certificate.json]\n\n"+
			"Checks the signature of a certificate-info answer (read from the file, or standard input) offline.\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return 0 // asked for the usage, as the other commands answer -h
	} else if err != nil {
		return 2
	}
	if *keysPath == "" || fs.NArg() > 1 {
		fs.Usage()
		return 2
	}
	in, name := stdin, "the standard input"
	if fs.NArg() == 1 {
		name = fs.Arg(0)
		f, err := os.Open(fs.Arg(0))
		if err != nil {
			fmt.Fprintln(stderr, "consentkit-verify:", err)
			return 2
		}
		defer func() { _ = f.Close() }() // read only: its Close loses nothing
		in = f
	}
	answer, err := io.ReadAll(io.LimitReader(in, 64<<20))
	if err != nil {
		fmt.Fprintln(stderr, "consentkit-verify:", err)
		return 2
	}
	if err := signed.CheckNames(answer); err != nil { // before any reading that ignores case
		return refuse(stdout, "%s", strings.TrimPrefix(err.Error(), "signed: "))
	}
	var cert info
	if err := json.Unmarshal(answer, &cert); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			fmt.Fprintf(stderr, "consentkit-verify: %s holds JSON but no certificate-info answer: %v\n", name, err)
		} else {
			fmt.Fprintln(stderr, "consentkit-verify: the certificate is not JSON:", err)
		}
		return 2
	}
	if why := cert.notCertificate(); why != "" {
		fmt.Fprintf(stderr, "consentkit-verify: %s holds %s\n", name, why)
		return 2
	}
	kb, err := os.ReadFile(*keysPath)
	if err != nil {
		fmt.Fprintln(stderr, "consentkit-verify:", err)
		return 2
	}
	var ks signed.KeySet
	if err := json.Unmarshal(kb, &ks); err != nil {
		fmt.Fprintln(stderr, "consentkit-verify: the keys are not JSON:", err)
		return 2
	}
	if err := cert.Verify(&ks); err != nil {
		return refuse(stdout, "%s", err)
	}
	shown, err := signed.CompareShown(answer) // CheckShown, whose CheckNames ran first of all
	if err != nil {
		return refuse(stdout, "%s", err)
	}
	if shown.Differs != "" {
		return refuse(stdout, "the signature holds, but the answer's %s is not what it covers", shown.Differs)
	}
	// The attestation and the insights are statements signed apart: what
	// the answer shows of either is what its statement states, and
	// without a statement it shows nothing but that none is made yet.
	unsigned := shown.Unsigned
	if a := cert.Attestation; a != nil && (a.StatementProof == nil || a.Statement == nil) {
		switch {
		case a.Status != "pending":
			return refuse(stdout, "the attestation's status %q has no signed statement to vouch for it", a.Status)
		case a.Reason != "" || a.ScreenshotSHA256 != "" || a.Differences != nil || a.StatementProof != nil:
			return refuse(stdout, "the attestation shows what only a signed statement can, and has none")
		}
	}
	if a := cert.Attestation; a != nil && a.StatementProof != nil && a.Statement != nil {
		if err := a.Verify(&ks, cert.Signed); err != nil {
			return refuse(stdout, "the attestation: %s", err)
		}
		st := a.Statement
		for _, f := range []struct {
			name string
			same bool
		}{
			{"status", a.Status == st.Status},
			{"reason", a.Reason == st.Reason},
			{"screenshot_sha256", a.ScreenshotSHA256 == st.ScreenshotSHA256},
			{"differences", slices.Equal(a.Differences, st.Differences)},
		} {
			if !f.same {
				return refuse(stdout, "the attestation's %s is not the signed statement's", f.name)
			}
		}
		unsigned = slices.DeleteFunc(unsigned, func(n string) bool { return n == "attestation" })
	}
	if in := cert.Insights; in != nil && (in.InsightsProof == nil || in.Statement == nil) {
		switch {
		case in.Status != "pending" && in.Status != "failed":
			return refuse(stdout, "the insights' status %q has no signed statement to vouch for it", in.Status)
		case in.Bot != nil || in.InsightsSignals != nil || in.InsightsProof != nil:
			return refuse(stdout, "the insights show what only a signed statement can, and have none")
		}
	}
	if in := cert.Insights; in != nil && in.InsightsProof != nil && in.Statement != nil {
		if in.Status != "done" {
			return refuse(stdout, "the insights' status %q is not \"done\", beside a signed statement", in.Status)
		}
		if err := in.Verify(&ks, cert.Signed); err != nil {
			return refuse(stdout, "the insights: %s", err)
		}
		if in.Bot == nil || in.InsightsSignals == nil || !reflect.DeepEqual(*in.InsightsSignals, in.Statement.Signals) {
			return refuse(stdout, "the insights shown are not those of the signed statement")
		}
		if why := in.Bot.Check(in.Statement.Bot); why != "" {
			return refuse(stdout, "the insights' verdict: %s", why)
		}
		unsigned = slices.DeleteFunc(unsigned, func(n string) bool { return n == "insights" })
	}
	// What the insights computed when asked, unsigned: a time and codes,
	// nothing else.
	if in := cert.Insights; in != nil {
		if _, err := time.Parse(time.RFC3339, in.AskedAt); in.AskedAt != "" && err != nil {
			return refuse(stdout, "the insights' asked_at %q is not an RFC 3339 time", in.AskedAt)
		}
		if in.Bot != nil {
			for _, r := range in.Bot.AskedReasons {
				if !slices.Contains(reasonCodes, r) {
					return refuse(stdout, "the insights' asked reason %q is not a reason code", r)
				}
			}
		}
	}
	s := cert.Signed
	fmt.Fprintf(stdout, "VALID: certificate %s of company %s (property %s, session %s), created %s at %s, key %s, %s\n",
		text(s.ID), text(s.CompanyID), text(s.PropertyID), text(s.SessionID), text(s.CreatedAt), text(s.Origin), text(s.KeyID), text(s.V))
	if s.ClientIP != "" || s.UserAgent != "" {
		fmt.Fprintf(stdout, "  client %s, %q\n", text(s.ClientIP), s.UserAgent)
	}
	if s.RevokedBefore != "" {
		fmt.Fprintf(stdout, "  the consumer had opted out before, last at %s\n", text(s.RevokedBefore))
	}
	for i, c := range s.Consents {
		fmt.Fprintf(stdout, "  consent %d, opted in %s, types %s: %q\n", i+1, text(c.OptInAt), texts(c.Types), c.Text)
		if c.OptInMethod != "" {
			fmt.Fprintf(stdout, "    opt-in: %s\n", text(c.OptInMethod))
		}
		if v := c.Visibility; v != nil {
			fmt.Fprintf(stdout, "    visible %v, in the viewport %v, %s px, contrast %s, hidden text %q\n",
				v.Visible, v.InViewport, text(v.FontSizePx), text(v.ContrastRatio), v.HiddenText)
		}
	}
	if a := cert.Attestation; a != nil && a.StatementProof != nil && a.Statement != nil {
		st := a.Statement
		fmt.Fprintf(stdout, "  attestation %s, measured %s, key %s, screenshot %s\n",
			text(st.Status), text(st.MeasuredAt), text(st.KeyID), text(st.ScreenshotSHA256))
		for _, d := range st.Differences {
			fmt.Fprintf(stdout, "    consent %d %s: claimed %s, measured %s\n", d.Consent+1, text(d.Field), text(d.Claimed), text(d.Measured))
		}
	}
	if in := cert.Insights; in != nil && in.InsightsProof != nil && in.Statement != nil {
		st := in.Statement
		fmt.Fprintf(stdout, "  insights: %s %s, measured %s, key %s\n", text(st.Bot.Verdict), texts(st.Bot.Reasons), text(st.MeasuredAt), text(st.KeyID))
		var asked []string
		if in.AskedAt != "" {
			asked = append(asked, "asked at "+text(in.AskedAt))
		}
		if len(in.Bot.AskedReasons) > 0 || in.Bot.Verdict != st.Bot.Verdict {
			asked = append(asked, fmt.Sprintf("verdict %s, adding %s", text(in.Bot.Verdict), texts(in.Bot.AskedReasons)))
		}
		if in.LeadAgeSeconds != nil {
			asked = append(asked, fmt.Sprintf("lead age %d s", *in.LeadAgeSeconds))
		}
		if v := in.Velocity; v != nil {
			asked = append(asked, fmt.Sprintf("velocity hour address %d email %d mobile %d, day address %d email %d mobile %d",
				v.Hour.ClientIP, v.Hour.Email, v.Hour.Mobile, v.Day.ClientIP, v.Day.Email, v.Day.Mobile))
		}
		if len(asked) > 0 {
			fmt.Fprintf(stdout, "    computed when asked, not signed: %s\n", strings.Join(asked, "; "))
		}
	}
	if len(unsigned) > 0 {
		fmt.Fprintf(stdout, "  not signed, shown by the answer: %s\n", list(unsigned))
	}
	if len(shown.NotShown) > 0 {
		fmt.Fprintf(stdout, "  signed but not shown: %s\n", list(shown.NotShown))
	}
	return 0
}

// reasonCodes are the codes of the reasons of a bot verdict, those of
// package insights (D50), which an offline check does not import.
var reasonCodes = []string{
	"no_recording", "no_snapshot", "not_a_browser", "headless_user_agent", "webdriver",
	"submitted_too_fast", "typing_too_fast", "no_signals", "no_pointer_or_touch", "scripted_input",
	"consent_after_revocation", "attestation_mismatch", "high_velocity",
}

// refuse prints that the certificate is not valid, and why, and returns
// the exit status that says so. The reason may name text of the answer:
// every character of it that is not printable is escaped.
func refuse(stdout io.Writer, format string, args ...any) int {
	fmt.Fprintln(stdout, "NOT VALID:", escaped(fmt.Sprintf(format, args...)))
	return 1
}

// text returns s, taken from the answer, as the report prints it: as it
// is when it is printable ASCII other than space, quote, backslash and
// comma — ids, times, codes, digests, URLs — and quoted as Go quotes
// strings otherwise, so that no line break, terminal escape or list
// separator in the answer reads as the report's own.
func text(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || c == '"' || c == '\\' || c == ',' {
			return strconv.Quote(s)
		}
	}
	if s == "" {
		return `""`
	}
	return s
}

// texts returns ss as %v writes a slice of strings, each as text writes it.
func texts(ss []string) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = text(s)
	}
	return "[" + strings.Join(out, " ") + "]"
}

// list returns ss, names taken from the answer, separated by commas, each
// as text writes it.
func list(ss []string) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = text(s)
	}
	return strings.Join(out, ", ")
}

// escaped returns s with each character that is not printable, or not
// UTF-8, written as Go escapes it in a quoted string (\n, \x1b, \u202e),
// the rest as it is.
func escaped(s string) string {
	var b strings.Builder
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		if (r == utf8.RuneError && n == 1) || !strconv.IsPrint(r) {
			q := strconv.Quote(s[:n])
			b.WriteString(q[1 : len(q)-1])
		} else {
			b.WriteString(s[:n])
		}
		s = s[n:]
	}
	return b.String()
}
